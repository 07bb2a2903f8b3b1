#!/usr/bin/env bash
# A second cargo command with nothing changed compiles nothing, whatever the refs look like:
# in a throwaway clone of this checkout, with the branch ref loose and no .git/packed-refs,
# then with every ref packed and no loose branch ref, `cargo check` runs twice and the second
# run must find the gatefix crate fresh (build.rs watches only paths that exist). Uses
# `cargo check` (the build script runs there as in a build) and this checkout's target
# folder, so after clippy only gatefix itself is compiled.
#   usage: ci/check-fresh.sh
set -euo pipefail
cd "$(dirname "$0")/.."
target=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# update-ref writes a reflog entry, which wants an identity a fresh machine may not have.
export GIT_COMMITTER_NAME=gatefix-check-fresh GIT_COMMITTER_EMAIL=check-fresh@localhost
git clone -q --no-local . "$work/clone"
cd "$work/clone"

# Prints the gatefix units that were not fresh in one `cargo check`.
stale_units() {
  CARGO_TARGET_DIR="$target" cargo check --quiet --message-format=json 2>/dev/null |
    python3 -c '
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("reason") in ("compiler-artifact", "build-script-executed") and "gatefix" in msg.get("package_id", ""):
        if msg.get("reason") == "compiler-artifact" and not msg.get("fresh"):
            print(msg["target"]["name"], msg["target"]["kind"])
'
}

check_twice() {
  stale_units >/dev/null
  local stale
  stale=$(stale_units)
  if [ -n "$stale" ]; then
    echo "check-fresh: $1: the second cargo check rebuilt: $stale" >&2
    exit 1
  fi
  echo "check-fresh: $1: the second cargo check compiled nothing" >&2
}

git update-ref "refs/heads/$(git symbolic-ref --short HEAD)" HEAD # a loose branch ref
rm -f .git/packed-refs
check_twice "loose branch ref, no packed-refs"
git pack-refs --all --prune
test ! -e ".git/$(git symbolic-ref HEAD)"
check_twice "packed refs, no loose branch ref"
