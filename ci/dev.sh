#!/usr/bin/env bash
# The checks, by what they cost, for people (CI runs them all in .ci/run):
#   ci/dev.sh check   fmt, clippy -D warnings, `cargo test` (unit and fixture tests): run
#                     before every commit; about 3 minutes warm on 2 cores.
#   ci/dev.sh real    the real-wheel suites (`--release`, the pinned wheels of
#                     ci/fetch-wheels.sh): when scanning, resolution, verdicts, kernels or
#                     apply changed. Extra arguments pick suites: `ci/dev.sh real real_apply`.
#   ci/dev.sh fresh   ci/check-fresh.sh: a second cargo command compiles nothing.
#   ci/dev.sh wheel   the maturin wheel (`dist` profile) checked as a user installs it.
#   ci/dev.sh html    ci/check-html.sh: the HTML report in headless Chromium (installs it).
#   ci/dev.sh bench   bench/audit.sh (large downloads; see its header).
#   ci/dev.sh all     .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."
export GATEFIX_WHEELS="${GATEFIX_WHEELS:-$HOME/.cache/gatefix/wheels}"
real_suites=(real_wheels real_apply real_kernels real_verdicts ship_cli survey syntax_tree)

case "${1:-}" in
check)
  cargo fmt --all -- --check
  cargo clippy --all-targets -- -D warnings
  cargo test
  ;;
real)
  shift
  suites=("$@")
  [ ${#suites[@]} -gt 0 ] || suites=("${real_suites[@]}")
  ci/fetch-wheels.sh >/dev/null
  args=()
  for suite in "${suites[@]}"; do
    args+=(--test "$suite")
  done
  cargo test --release "${args[@]}" -- --ignored
  ;;
fresh) ci/check-fresh.sh ;;
html) ci/check-html.sh ;;
wheel)
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  python3 -m venv "$work/maturin"
  "$work/maturin/bin/pip" install -q 'maturin>=1.5,<2'
  "$work/maturin/bin/maturin" build --profile dist --out "$work/dist"
  ci/check-wheel.sh "$work"/dist/gatefix-*.whl
  ;;
bench)
  shift
  bench/audit.sh "$@"
  ;;
all) exec .ci/run ;;
*)
  sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
  ;;
esac
