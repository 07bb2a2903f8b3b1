#!/usr/bin/env bash
# bench/kernels.sh — how fast is `gatefix kernels` on the native libraries of a large, real site?
#
# A benchmark, not a CI test. It reuses the site bench/audit.sh builds (torch, vllm, sglang,
# flashinfer, transformers, triton: ~3.3 GB of *.so files) and needs hyperfine and cuobjdump
# (installed from PyPI into a venv under the cache). Over the same files it times, in ONE
# hyperfine invocation (one warm page cache, one set of conditions):
#   gatefix   `gatefix kernels LIBS --format json`, where LIBS holds exactly the site's native
#             libraries (`*.so*`), hard-linked (same inodes, same page cache), so every command
#             reads the same files;
#   cuobjdump `cuobjdump --list-elf --list-ptx` on each library (xargs, one per file, as many
#             in parallel as there are cores, since gatefix uses all cores too): what a user
#             would run instead;
#   cat       `cat` of every library to /dev/null: reading all the bytes from the warm cache.
#             gatefix reads headers only, so it must beat this;
#   gatefix-site (full runs only, for information) `gatefix kernels SITE --format json` on the
#             whole site: it also analyses the site's Python sources (JIT generators,
#             fixed-arch builds), work the other commands do not do, so it is not judged
#             unless BENCH_JUDGE=site.
#   gatefix-site-list (full runs only) the same with `--layers list` (arch lists only): the
#             kernel layers (device guards, host checks, toolchain) may cost at most 25% more
#             than it (gatefix-site/gatefix-site-list <= 1.25, enforced).
# and fails (exit 1) unless gatefix is >= 20x faster than cuobjdump and faster than cat.
#
# Environment:
#   GATEFIX_CACHE  where the site and tool venvs live (default ~/.cache/gatefix)
#   BENCH_QUICK=1  only the libraries under 64 MiB, 2 runs, no gatefix-site: a smoke test of
#                  the script whose limits are reported but not enforced
#   BENCH_RUNS     timed runs per command (default 3; cuobjdump takes tens of seconds a run)
#   BENCH_JUDGE    "libs" (default) or "site": which gatefix command the limits apply to
#   BENCH_OUT      where hyperfine's JSON and the file list go (default: a fresh temp dir)
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${GATEFIX_CACHE:-$HOME/.cache/gatefix}
SITE=$CACHE/bench-site
TOOLS=$CACHE/tools
CUOBJDUMP_VENV=$TOOLS/cuobjdump-venv
CUOBJDUMP_PIN=nvidia-cuda-cuobjdump==13.5.37
OUT=${BENCH_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/gatefix-bench-kernels.XXXXXX")}
mkdir -p "$TOOLS" "$OUT"

QUICK=${BENCH_QUICK:-0}
WARMUP=1
if [[ $QUICK == 1 ]]; then
    RUNS=${BENCH_RUNS:-2}
    MAX_SIZE=64M # find -size: libraries under 64 MiB only
    LIBS=$CACHE/bench-kernels-libs-quick
else
    RUNS=${BENCH_RUNS:-3}
    MAX_SIZE=
    LIBS=$CACHE/bench-kernels-libs
fi
JUDGE=${BENCH_JUDGE:-libs}
[[ $JUDGE == libs || $JUDGE == site ]] || { echo "error: BENCH_JUDGE is libs or site" >&2; exit 2; }
if [[ $JUDGE == site && $QUICK == 1 ]]; then
    echo "error: BENCH_JUDGE=site needs a full run (not BENCH_QUICK=1)" >&2
    exit 2
fi

# Limits the run is judged by (see the header).
MIN_CUOBJDUMP_OVER_GATEFIX=20
MIN_CAT_OVER_GATEFIX=1
MAX_LAYERS_OVER_LIST=1.25

log() { printf '\n== %s\n' "$*" >&2; }

# ---------------------------------------------------------------------------------------------
# 1. The site (bench/audit.sh's) and the library view of it.
# ---------------------------------------------------------------------------------------------

# bench/audit.sh has no build-only mode; its stamp is written once the site is complete.
if [[ ! -f $SITE/.gatefix-bench-complete ]]; then
    echo "error: no benchmark site at $SITE; run bench/audit.sh first (it builds the site" \
        "from pinned wheels; BENCH_QUICK=1 bench/audit.sh is enough)" >&2
    exit 2
fi
log "site: $SITE ($(tr '\n' ' ' <"$SITE/.gatefix-bench-complete"))"

# Every native library: regular files named *.so or *.so.* (symlinks are skipped, as gatefix
# skips them). NUL-separated, sorted, relative to the site.
size_filter=()
[[ -n $MAX_SIZE ]] && size_filter=(-size "-$MAX_SIZE")
(cd "$SITE" && find . -name __pycache__ -prune -o -type f \( -name '*.so' -o -name '*.so.*' \) \
    "${size_filter[@]}" -print0) | sort -z >"$OUT/libs.rel0"
[[ -s $OUT/libs.rel0 ]] || { echo "error: no *.so* files under $SITE" >&2; exit 2; }

# LIBS mirrors the site's layout with hard links to the libraries only, so `gatefix kernels`
# reads exactly the files the other commands read (and the same cached pages). Rebuilt on every
# run so it follows the site; a copy where hard links are impossible (other file system).
rm -rf "$LIBS"
mkdir -p "$LIBS"
while IFS= read -r -d '' rel; do
    mkdir -p "$LIBS/$(dirname "$rel")"
    ln "$SITE/$rel" "$LIBS/$rel" 2>/dev/null || cp "$SITE/$rel" "$LIBS/$rel"
done <"$OUT/libs.rel0"
find "$LIBS" -type f -print0 | sort -z >"$OUT/libs0"

read -r N_LIBS LIBS_BYTES < <(xargs -0 stat -c %s <"$OUT/libs0" | awk '{s += $1; n++} END {printf "%d %.0f\n", n, s}')
log "$N_LIBS libraries, $(awk -v b="$LIBS_BYTES" 'BEGIN {printf "%.2f GiB", b / 2^30}') (view: $LIBS)"

# ---------------------------------------------------------------------------------------------
# 2. Tools.
# ---------------------------------------------------------------------------------------------

if ! command -v hyperfine >/dev/null; then
    log "installing hyperfine"
    if command -v apt-get >/dev/null && [[ $(id -u) == 0 ]]; then
        apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq hyperfine >&2
    else
        cargo install hyperfine --locked >&2
        export PATH=$HOME/.cargo/bin:$PATH
    fi
fi

CUOBJDUMP=$(find "$CUOBJDUMP_VENV" -type f -name cuobjdump -perm -u+x 2>/dev/null | head -n 1 || true)
if [[ -z $CUOBJDUMP ]]; then
    log "installing $CUOBJDUMP_PIN into $CUOBJDUMP_VENV"
    python3 -m venv "$CUOBJDUMP_VENV"
    "$CUOBJDUMP_VENV/bin/pip" install --quiet "$CUOBJDUMP_PIN" >&2
    # The wheel puts it under site-packages/nvidia/cu13/bin/.
    CUOBJDUMP=$(find "$CUOBJDUMP_VENV" -type f -name cuobjdump -perm -u+x | head -n 1 || true)
    [[ -n $CUOBJDUMP ]] || { echo "error: no cuobjdump in $CUOBJDUMP_PIN" >&2; exit 2; }
fi
"$CUOBJDUMP" --version | tail -n 2 >&2

log "building gatefix (release)"
cargo build --release --quiet --manifest-path "$REPO/Cargo.toml" >&2
# A private copy, so a rebuild of target/ during the run cannot change what is measured.
cp "${CARGO_TARGET_DIR:-$REPO/target}/release/gatefix" "$OUT/gatefix"
GATEFIX=$OUT/gatefix

# ---------------------------------------------------------------------------------------------
# 3. The commands, each checked once outside the timer, then timed together.
# ---------------------------------------------------------------------------------------------

JOBS=$(nproc)
q() { printf '%q' "$1"; }
GATEFIX_CMD="$(q "$GATEFIX") kernels $(q "$LIBS") --format json > /dev/null"
GATEFIX_SITE_CMD="$(q "$GATEFIX") kernels $(q "$SITE") --format json > /dev/null"
# The same with the arch lists only (L2): the other layers (device guards, host checks, DSL
# admission, toolchain) must cost at most MAX_LAYERS_OVER_LIST more.
GATEFIX_SITE_LIST_CMD="$(q "$GATEFIX") kernels $(q "$SITE") --layers list --format json > /dev/null"
# cuobjdump takes one file per call. It exits 255 on a library without device code, which
# would make xargs stop, so each call is wrapped to succeed; a real failure ("fatal") is caught
# by the check run below, not by hyperfine.
CUOBJDUMP_CMD="xargs -0 -n 1 -P $JOBS sh -c '\"\$0\" --list-elf --list-ptx \"\$1\" > /dev/null 2>&1; exit 0' $(q "$CUOBJDUMP") < $(q "$OUT/libs0")"
CAT_CMD="xargs -0 cat < $(q "$OUT/libs0") > /dev/null"

log "checking each command once"
"$GATEFIX" kernels "$LIBS" --format json >"$OUT/gatefix.json"
read -r WITH_CODE CONTAINERS PLAIN_ONLY < <(python3 -c '
import json, sys
files = json.load(open(sys.argv[1]))["files"]
plain_only = sum(all(c["section"] == "plain-data" for c in f["containers"]) for f in files)
print(len(files), sum(len(f["containers"]) for f in files), plain_only)' "$OUT/gatefix.json")
echo "gatefix: $WITH_CODE of $N_LIBS libraries carry device code, $CONTAINERS containers" \
    "($PLAIN_ONLY only as plain data, which cuobjdump does not see)" >&2
CU_WITH_CODE=0
while IFS= read -r -d '' lib; do
    rc=0
    listing=$("$CUOBJDUMP" --list-elf --list-ptx "$lib" 2>&1) || rc=$?
    if grep -q fatal <<<"$listing" || [[ $rc != 0 && $rc != 255 ]]; then
        echo "error: cuobjdump failed on $lib (exit $rc): $listing" >&2
        exit 2
    fi
    grep -qE '^(ELF|PTX) file' <<<"$listing" && CU_WITH_CODE=$((CU_WITH_CODE + 1))
done <"$OUT/libs0"
echo "cuobjdump: $CU_WITH_CODE of $N_LIBS libraries list ELF or PTX" >&2

COMMANDS=(
    --command-name gatefix "$GATEFIX_CMD"
    --command-name cuobjdump "$CUOBJDUMP_CMD"
    --command-name cat "$CAT_CMD"
)
if [[ $QUICK != 1 ]]; then
    PY_FILES=$(find "$SITE" -name __pycache__ -prune -o -type f -name '*.py' -print | wc -l)
    COMMANDS+=(--command-name gatefix-site "$GATEFIX_SITE_CMD")
    COMMANDS+=(--command-name gatefix-site-list "$GATEFIX_SITE_LIST_CMD")
else
    PY_FILES=0
fi

log "timing (warmup $WARMUP, runs $RUNS, $JOBS cores)"
hyperfine --warmup "$WARMUP" --runs "$RUNS" --export-json "$OUT/hyperfine.json" \
    "${COMMANDS[@]}" >&2

# ---------------------------------------------------------------------------------------------
# 4. Verdict.
# ---------------------------------------------------------------------------------------------

python3 - "$OUT/hyperfine.json" "$N_LIBS" "$LIBS_BYTES" "$WITH_CODE" "$PY_FILES" "$JUDGE" \
    "$MIN_CUOBJDUMP_OVER_GATEFIX" "$MIN_CAT_OVER_GATEFIX" "$QUICK" "$MAX_LAYERS_OVER_LIST" <<'EOF'
import json, sys

path, n_libs, size, with_code, py_files, judge, min_cu, min_cat, quick, max_layers = sys.argv[1:]
min_cu, min_cat, max_layers = float(min_cu), float(min_cat), float(max_layers)
res = {r["command"]: r for r in json.load(open(path))["results"]}
mean = {k: r["mean"] for k, r in res.items()}

print(f"libraries:  {n_libs} *.so* files, {int(size) / 2**30:.2f} GiB, {with_code} with device code")
for name in ("gatefix", "cuobjdump", "cat", "gatefix-site", "gatefix-site-list"):
    if name in res:
        r = res[name]
        print(f"{name + ':':14} {r['mean'] * 1000:10.1f} ms mean  (± {r['stddev'] * 1000 if r['stddev'] else 0:.1f}, "
              f"min {r['min'] * 1000:.1f}, {len(r['times'])} runs)")
gf = mean["gatefix-site"] if judge == "site" else mean["gatefix"]
who = "gatefix-site" if judge == "site" else "gatefix"
print(f"cuobjdump/{who}: {mean['cuobjdump'] / gf:8.2f}x  (limit >= {min_cu:g}x)")
print(f"cat/{who}:       {mean['cat'] / gf:8.2f}x  (limit >  {min_cat:g}x)")
if "gatefix-site" in mean and judge != "site":
    print(f"info: gatefix-site (whole site, incl. Python analysis of {py_files} .py files): "
          f"cuobjdump/gatefix-site {mean['cuobjdump'] / mean['gatefix-site']:.2f}x, "
          f"cat/gatefix-site {mean['cat'] / mean['gatefix-site']:.2f}x (not judged)")

failed = []
if "gatefix-site-list" in mean:
    layers = mean["gatefix-site"] / mean["gatefix-site-list"]
    print(f"gatefix-site/gatefix-site-list (all kernel layers / L2 arch lists only): {layers:.2f}x "
          f"(limit <= {max_layers:g}x)")
    if layers > max_layers:
        failed.append(f"the kernel layers cost {layers:.2f}x the L2-only run (more than {max_layers:g}x)")
if mean["cuobjdump"] < min_cu * gf:
    failed.append(f"{who} is only {mean['cuobjdump'] / gf:.2f}x faster than cuobjdump (less than {min_cu:g}x)")
if not mean["cat"] > min_cat * gf:
    failed.append(f"{who} is not faster than cat ({gf * 1000:.1f} ms vs {mean['cat'] * 1000:.1f} ms)")
if quick == "1":
    # Small libraries only: process start-up dominates every command, so the limits say little.
    for line in failed:
        print(f"(quick run, not enforced) {line}")
    print("OK (BENCH_QUICK=1: a smoke test of the script; limits reported, not enforced)")
    sys.exit(0)
for line in failed:
    print(f"FAIL: {line}")
if not failed:
    print("OK")
sys.exit(1 if failed else 0)
EOF
