#!/usr/bin/env bash
# `gatefix audit --format html` in a real headless browser: the page of a fixture venv (with
# two cubins added, so the coverage chart has a library) loads with no console error, its
# script runs (it marks <body data-ready>), the verdict matrix has the expected cells, and a
# screenshot is written. Chromium comes from the distribution's packages, installed here
# when missing (Debian/Ubuntu: apt-get; run as root or with sudo available).
# Usage: ci/check-html.sh [GATEFIX_BINARY] [SCREENSHOT.png]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-target/release/gatefix}
[ -x "$bin" ] || cargo build --release
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
shot=${2:-$work/report.png}

browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -z "$browser" ]; then
  sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || {
      echo "check-html: no Chromium, and installing it needs root or sudo: install the distribution's chromium package" >&2
      exit 1
    }
    sudo=(sudo)
  fi
  install() {
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends chromium >/dev/null
  }
  echo "check-html: installing chromium (apt-get)" >&2
  # The package lists may be current already; refresh them only when the install fails.
  install || { "${sudo[@]}" apt-get update -qq >/dev/null && install; }
  browser=$(command -v chromium)
fi

site="$work/site"
cp -r testdata/venvs/fusion "$site"
packages="$site/lib/python3.11/site-packages"
mkdir -p "$packages/flashinfer/data/cubins"
cp testdata/fatbin-samples/cubin129/k.sm_90.cubin testdata/fatbin-samples/cubin129/k.sm_100.cubin \
  "$packages/flashinfer/data/cubins/"
"$bin" audit "$site" --target sm_120 --target sm_100 --format html >"$work/report.html"

# --enable-logging=stderr prints every console message as `...:CONSOLE(line)] "text"`.
run() {
  timeout 120 "$browser" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
    --no-first-run --user-data-dir="$work/profile" --enable-logging=stderr --v=0 "$@" \
    "file://$work/report.html"
}
run --dump-dom >"$work/dom.html" 2>"$work/console.log"
run --screenshot="$shot" --window-size=1280,1400 >/dev/null 2>>"$work/console.log"

fail() {
  echo "check-html: $*" >&2
  echo "--- console" >&2
  cat "$work/console.log" >&2
  exit 1
}
if grep -E 'CONSOLE\([0-9]+\)\]' "$work/console.log" | grep -qiE 'error|uncaught'; then
  fail "the page logged an error"
fi
grep -q 'data-ready="yes"' "$work/dom.html" || fail "the page's script did not run to its end"
expect() {
  grep -q -- "$1" "$work/dom.html" || fail "missing in the rendered page: $1"
}
# The fixture's verdicts at sm_120 (tests/audit_cli.rs pins the same audit): sglang's fusion
# gate is an opportunity, flashinfer's a wall; nothing is a trap.
expect '<td data-package="sglang 0.5.5" data-target="sm_120"><span class="chip opportunity" data-verdict="opportunity" data-count="1">'
expect '<td data-package="flashinfer-python 0.7.2" data-target="sm_120"><span class="chip wall" data-verdict="wall" data-count="1">'
expect 'data-target="sm_100" data-library="flashinfer-python 0.7.2"'
if grep -q 'data-verdict="trap"' "$work/dom.html"; then
  fail "a trap cell the fixture does not have"
fi
[ "$(grep -c '<tr data-rank=' "$work/dom.html")" -eq 2 ] || fail "expected 2 finding rows"
[ -s "$shot" ] || fail "no screenshot written"
echo "check-html: ok ($(wc -c <"$work/report.html") bytes; screenshot $shot)" >&2
