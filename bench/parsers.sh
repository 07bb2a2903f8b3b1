#!/usr/bin/env bash
# bench/parsers.sh SITE [ROUNDS] — the parse of every Python file of a site by
# tree-sitter-python and by gatefix::syntax (ruff's parser laid out in tree-sitter's shape),
# in alternating rounds in one process, files read into memory first: min / median / max of
# each and the ratio at the median. The figure behind `src/syntax`'s "about four times".
set -euo pipefail
SITE=${1:?usage: bench/parsers.sh SITE [ROUNDS]}
ROUNDS=${2:-5}
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"
cargo build --release --quiet --example parse_speed
exec "$REPO/target/release/examples/parse_speed" "$SITE" "$ROUNDS"
