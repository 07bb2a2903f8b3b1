#!/usr/bin/env bash
# Downloads the pinned real wheels the real-package tests read, into a cache outside the repo
# (default ~/.cache/gatefix/wheels; override with GATEFIX_WHEELS). Idempotent: pip skips
# wheels that are already there. Nothing is installed; the tests unzip them into temp sites.
set -euo pipefail
dest="${GATEFIX_WHEELS:-$HOME/.cache/gatefix/wheels}"
mkdir -p "$dest"
pins=(
  # The original failure's shape: sglang 0.5.5 with the flashinfer it pinned.
  "sglang==0.5.5"
  "flashinfer-python==0.5.0"
  # The latest sglang with the flashinfer it pins.
  "sglang==0.5.23"
  "flashinfer-python==0.7.2"
  # A release between them, with the flashinfer it pins.
  "sglang==0.5.10"
  "flashinfer-python==0.6.7.post2"
  # Releases the shipped sglang patches span (tests/real_apply.rs checks their anchors on
  # each): 0.5.5.post1/post3 and 0.5.7 (communicator, auto-enable-deepseek), 0.5.8 and
  # 0.5.13.post1 (communicator-0510), 0.5.21 and 0.5.22 (add-norm). sglang only.
  "sglang==0.5.5.post1"
  "sglang==0.5.5.post3"
  "sglang==0.5.7"
  "sglang==0.5.8"
  "sglang==0.5.13.post1"
  "sglang==0.5.21"
  "sglang==0.5.22"
  # vllm with the flashinfer it pins.
  "vllm==0.33.0"
  "flashinfer-python==0.7.2.post1"
  # A triton with a CUDA 12.8 ptxas: Triton kernels' verdicts read its bundled ptxas.
  "triton==3.5.1"
)
for pin in "${pins[@]}"; do
  name="${pin%%==*}"; version="${pin##*==}"
  file_prefix="$(echo "$name" | tr - _)-${version}-"
  if ls "$dest/$file_prefix"*.whl >/dev/null 2>&1; then
    continue
  fi
  echo "fetching $pin" >&2
  python3 -m pip download --quiet --no-deps --only-binary=:all: \
    --python-version 3.11 --platform manylinux_2_34_x86_64 --platform manylinux_2_28_x86_64 --platform any \
    -d "$dest" "$pin"
done
ls "$dest"
