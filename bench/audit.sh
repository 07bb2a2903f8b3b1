#!/usr/bin/env bash
# bench/audit.sh — how fast is `gatefix audit` on a large, real site-packages tree?
#
# A benchmark, not a CI test: it downloads ~1.5 GB of wheels the first time and needs
# hyperfine, ripgrep and ast-grep. It compares three commands over the same tree:
#   rg        the I/O floor: a plain scan for the very tokens gatefix prefilters on
#             (src/gate/tokens.rs FORM_TOKENS). gatefix cannot beat this; it should stay close.
#   gatefix   `gatefix audit SITE --format json --no-verdicts`, the gate audit being measured;
#   gatefix-verdicts  the same with gate -> kernel links and verdicts (the default audit).
#   ast-grep  a generic structural search with rules for roughly the same gate forms: what a
#             user would reach for instead. gatefix should be far faster than that.
# and fails (exit 1) when
#   gatefix > 4x rg, ast-grep < 20x gatefix, verdicts > 1.5x the plain audit, or gatefix's
#   peak RSS (with verdicts) > 1 GiB.
#
# Environment:
#   GATEFIX_CACHE  where wheels, the site and the tool venv live (default ~/.cache/gatefix);
#                  kept outside the repo so the 1.5 GB site is built once and never committed.
#   BENCH_QUICK=1  one run, no warm-up: a smoke test of the script, not a measurement.
#   BENCH_OUT      where hyperfine's JSON and the rule files go (default: a fresh temp dir).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${GATEFIX_CACHE:-$HOME/.cache/gatefix}
WHEELS=$CACHE/wheels
SITE=$CACHE/bench-site
TOOLS=$CACHE/tools
OUT=${BENCH_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/gatefix-bench.XXXXXX")}
mkdir -p "$WHEELS" "$TOOLS" "$OUT"

if [[ ${BENCH_QUICK:-0} == 1 ]]; then
    WARMUP=0 RUNS=1
else
    WARMUP=2 RUNS=5
fi

# Limits the run is judged by (see the header).
MAX_GATEFIX_OVER_RG=4
MIN_ASTGREP_OVER_GATEFIX=20
MAX_RSS_KB=$((1024 * 1024)) # 1 GiB, as /usr/bin/time reports kilobytes
MAX_VERDICTS_OVER_PLAIN=1.5

log() { printf '\n== %s\n' "$*" >&2; }

# ---------------------------------------------------------------------------------------------
# 1. The site: pinned wheels of a real inference stack, unpacked as pip would lay them out.
# ---------------------------------------------------------------------------------------------

# Exact pins, so every run measures the same ~15k files. All exist on PyPI with a wheel for
# CPython 3.11 on x86_64 Linux. sglang 0.5.23 is the release whose `get_platform()` probe tables
# rules/sglang.toml follows; its 3.11 wheel is tagged manylinux_2_34, hence that platform below.
PINS=(
    torch==2.9.1
    vllm==0.11.0
    sglang==0.5.23
    flashinfer-python==0.7.2
    transformers==4.57.1
    triton==3.5.1
)

# Download for a fixed target rather than for this host, so the same wheels (and so the same
# files) come down on any machine. pip 23 does not widen `manylinux_2_34` to older glibc tags by
# itself, so each tag the pinned wheels carry is named; manylinux2014 also admits 2010 and 1.
PIP_TARGET=(
    --python-version 3.11 --implementation cp --abi cp311
    --platform manylinux_2_34_x86_64 --platform manylinux_2_28_x86_64
    --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64
    --platform manylinux2014_x86_64
    --only-binary=:all:
)

# The wheel file of a pin already in $WHEELS, if any. Wheel names spell `-` and `.` in the
# project name as `_` (flashinfer-python -> flashinfer_python-0.7.2-py3-none-any.whl).
wheel_of() {
    local name=${1%%==*} version=${1##*==}
    name=${name//[-.]/_}
    compgen -G "$WHEELS/${name}-${version}-*.whl" | head -n 1 || true
}

build_site() {
    # The stamp records the pins the site was built from: same pins, nothing to do; other
    # pins, start over, so no file of an older version lingers in the measured tree.
    local stamp=$SITE/.gatefix-bench-complete
    local want
    want=$(printf '%s\n' "${PINS[@]}")
    if [[ -f $stamp && $(cat "$stamp") == "$want" ]]; then
        log "site ready: $SITE"
        return
    fi
    rm -rf "$SITE"
    mkdir -p "$SITE"

    local pin whl
    for pin in "${PINS[@]}"; do
        whl=$(wheel_of "$pin")
        if [[ -z $whl ]]; then
            log "downloading $pin"
            # --no-deps: the pins are the whole site; their dependencies would only add noise
            # and download time, and pip could not resolve them for a foreign target anyway.
            python3 -m pip download --no-deps "${PIP_TARGET[@]}" -d "$WHEELS" "$pin" >&2
            whl=$(wheel_of "$pin")
            [[ -n $whl ]] || { echo "error: pip fetched no wheel for $pin" >&2; exit 2; }
        fi
        log "unpacking $(basename "$whl")"
        # A wheel is a zip laid out as site-packages; unzipping it is an install without
        # pip's byte-compiling, entry-point scripts or dependency checks, none of which the
        # scan looks at. Everything is kept (.so files included) because a real site has them
        # and the walk has to step over them.
        unzip -q -o "$whl" -d "$SITE"
    done
    # `*.data/{purelib,platlib}` would be moved into the site by pip; do the same.
    local data sub
    for data in "$SITE"/*.data; do
        [[ -d $data ]] || continue
        for sub in purelib platlib; do
            [[ -d $data/$sub ]] && cp -a "$data/$sub/." "$SITE/"
        done
        rm -rf "$data"
    done
    printf '%s\n' "$want" >"$stamp"
}

# ---------------------------------------------------------------------------------------------
# 2. Tools: installed only when missing, by the cheapest route that works here.
# ---------------------------------------------------------------------------------------------

APT_UPDATED=0
apt_install() {
    # Only as root (or with sudo) and only where apt exists; `apt-get update` once, since a
    # fresh machine's package lists are empty.
    command -v apt-get >/dev/null || return 1
    local sudo=
    if [[ $(id -u) != 0 ]]; then
        command -v sudo >/dev/null || return 1
        sudo="sudo -n"
    fi
    if [[ $APT_UPDATED == 0 ]]; then
        $sudo apt-get update -qq >&2 || return 1
        APT_UPDATED=1
    fi
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@" >&2
}

ensure_tools() {
    if ! command -v hyperfine >/dev/null; then
        log "installing hyperfine"
        apt_install hyperfine || cargo install hyperfine --locked >&2
    fi
    if ! command -v rg >/dev/null; then
        log "installing ripgrep"
        apt_install ripgrep || cargo install ripgrep --locked >&2
    fi
    if [[ ! -x /usr/bin/time ]]; then
        # GNU time, for the peak RSS; bash's `time` keyword cannot report memory.
        log "installing GNU time"
        apt_install time || { echo "error: /usr/bin/time (GNU time) is needed" >&2; exit 2; }
    fi
    # `cargo install` puts tools here; make them visible to this script and to hyperfine.
    export PATH=$HOME/.cargo/bin:$PATH

    # ast-grep in its own venv under the cache: pinned, and not touching the user's Python.
    # The binary is called as `ast-grep`, not `sg`: on Debian `sg` is shadow's switch-group.
    ASTGREP=$TOOLS/ast-grep-venv/bin/ast-grep
    if [[ ! -x $ASTGREP ]]; then
        log "installing ast-grep"
        python3 -m venv "$TOOLS/ast-grep-venv"
        "$TOOLS/ast-grep-venv/bin/pip" install -q ast-grep-cli==0.51.1 >&2
    fi
}

# ---------------------------------------------------------------------------------------------
# 3. ast-grep rules: gatefix's gate forms (src/gate/predicate.rs Form) as structural patterns.
# ---------------------------------------------------------------------------------------------

# An honest rival should look for about what gatefix looks for: conditions, flags, decorators
# and JIT arch lists that involve the device's architecture. ast-grep cannot resolve names
# across modules as gatefix does, so this set is cheaper to evaluate than gatefix's work, if
# anything; that makes the >=20x requirement conservative.
write_rules() {
    local dir=$1
    mkdir -p "$dir/rules" "$dir/utils"
    cat >"$dir/sgconfig.yml" <<'EOF'
ruleDirs: [rules]
utilDirs: [utils]
EOF
    # One shared util, "an expression that depends on the GPU architecture", so every rule
    # below asks the same question in a different place.
    cat >"$dir/utils/arch-expr.yml" <<'EOF'
id: arch-expr
language: python
rule:
  any:
    # Calls: helpers (is_sm90_supported(), _is_sm120a_supported(), is_blackwell(),
    # is_hopper_with_cuda_12_3(), get_device_sm(), get_sm_version(), is_arch_support_pdl()) and
    # capability queries (torch.cuda.get_device_capability(), $X.has_device_capability(90),
    # $X.is_device_capability(100), get_compute_capability(dev), supported_compute_capability([90])
    # as a decorator, torch.cuda.get_device_properties(0)). ast-grep metavariables cannot stand
    # for part of a name (`is_sm$$$()`), so the callee's text is matched by a regex. Comparisons
    # such as `get_device_capability()[0] >= 9` or `get_device_capability() in [(9, 0)]`
    # contain such a call, so the rules that use this util find them too.
    - kind: call
      has:
        field: function
        regex: '(^|\.)_?(is_sm\w*|is_blackwell\w*|is_hopper\w*|is_ampere\w*|get_device_sm|get_sm_version|is_arch_support\w*|\w*capabilit\w*|get_device_properties)$'
    # Cached flags and platform attributes: IS_SM90, _is_sm100_supported, sm_version,
    # get_platform().is_sm100, get_platform().is_blackwell, props.compute_capability (attribute
    # names are identifiers too).
    - kind: identifier
      regex: '^(?i:_?is_sm\d\w*|is_blackwell|is_hopper|_?sm_version|_?device_sm|compute_capability)$'
EOF
    cat >"$dir/rules/gate-condition.yml" <<'EOF'
# helper-call, platform-method, capability-compare, sm-compare, capability-membership, flag-use
id: gate-condition
language: python
severity: info
message: branch on the GPU architecture
rule:
  any:
    - kind: if_statement
    - kind: elif_clause
    - kind: while_statement
  has:
    field: condition
    stopBy: end
    matches: arch-expr
EOF
    cat >"$dir/rules/gate-value-select.yml" <<'EOF'
# value-select: `x = A if is_sm100() else B`
id: gate-value-select
language: python
severity: info
message: value chosen by the GPU architecture
rule:
  kind: conditional_expression
  has:
    stopBy: end
    matches: arch-expr
EOF
    cat >"$dir/rules/gate-cached-flag.yml" <<'EOF'
# cached-flag: `_is_sm90 = is_sm90_supported()`, `major, _ = torch.cuda.get_device_capability()`
id: gate-cached-flag
language: python
severity: info
message: architecture test stored in a name
rule:
  kind: assignment
  has:
    field: right
    stopBy: end
    matches: arch-expr
EOF
    cat >"$dir/rules/gate-decorator.yml" <<'EOF'
# capability-decorator: `@pytest.mark.skipif(not is_sm90_supported(), ...)`
id: gate-decorator
language: python
severity: info
message: decorator gated on the GPU architecture
rule:
  kind: decorator
  has:
    stopBy: end
    matches: arch-expr
EOF
    cat >"$dir/rules/gate-jit-arch-list.yml" <<'EOF'
# jit-arch-list: `get_nvcc_flags_list(supported_major_versions=[9, 10])`
id: gate-jit-arch-list
language: python
severity: info
message: JIT build limited to some architectures
rule:
  any:
    - pattern: get_nvcc_flags_list($$$)
    - pattern: $M.get_nvcc_flags_list($$$)
    - kind: keyword_argument
      has:
        field: name
        regex: '^supported_major_versions$'
EOF
    cat >"$dir/rules/gate-min-capability.yml" <<'EOF'
# min-capability: `def get_min_capability(cls) -> int: return 80` (vllm quantization methods)
id: gate-min-capability
language: python
severity: info
message: minimum compute capability declared
rule:
  kind: function_definition
  has:
    field: name
    regex: '^get_min_capability$'
EOF
}

# ---------------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------------

build_site
PY_FILES=$(find "$SITE" -name __pycache__ -prune -o -type f -name '*.py' -print | wc -l)
log "site: $SITE, $PY_FILES Python files"

ensure_tools

log "building gatefix (release)"
cargo build --release --quiet --manifest-path "$REPO/Cargo.toml" >&2
GATEFIX=${CARGO_TARGET_DIR:-$REPO/target}/release/gatefix

RULES=$OUT/ast-grep
write_rules "$RULES"

# Each command once outside the timer: it proves the command works (a rule file ast-grep
# rejects would otherwise only show up as a hyperfine failure) and shows what each finds.
RG_CMD=(rg -c -i -e capabilit -e is_sm -e sm_version -e device_sm -e is_blackwell -e is_hopper
    -e is_ampere -e major_versions -e get_nvcc_flags_list -e get_device_properties
    -e arch_support --type py "$SITE")
# The gate audit the issue measures against rg and ast-grep (predicates and admissions), and the
# same audit with gate -> kernel links and verdicts, which must cost at most 1.5x the plain one.
GATEFIX_CMD=("$GATEFIX" audit "$SITE" --format json --no-verdicts)
VERDICTS_CMD=("$GATEFIX" audit "$SITE" --format json --fail-on none)
ASTGREP_CMD=("$ASTGREP" scan --config "$RULES/sgconfig.yml" --json=stream "$SITE")

log "checking each command once"
RG_FILES=$("${RG_CMD[@]}" | wc -l)
echo "rg: $RG_FILES Python files contain a token" >&2
/usr/bin/time -v -o "$OUT/gatefix.time" "${VERDICTS_CMD[@]}" >"$OUT/gatefix.json" 2>"$OUT/gatefix.stderr"
tail -n 1 "$OUT/gatefix.stderr" >&2
GATES=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["gates"]))' "$OUT/gatefix.json")
echo "gatefix: $GATES gates" >&2
# A rule error makes ast-grep exit non-zero, which stops the script here under `set -e`.
ASTGREP_MATCHES=$("${ASTGREP_CMD[@]}" | wc -l)
echo "ast-grep: $ASTGREP_MATCHES matches" >&2

# Peak memory from the run above: GNU time's "Maximum resident set size (kbytes)".
RSS_KB=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$OUT/gatefix.time")

log "timing (warmup $WARMUP, runs $RUNS)"
# One hyperfine invocation, so the four share one warm page cache and one set of conditions.
# Commands are strings for hyperfine's shell; printf %q keeps paths with spaces intact.
hyperfine --warmup "$WARMUP" --runs "$RUNS" --export-json "$OUT/hyperfine.json" \
    --command-name rg "$(printf '%q ' "${RG_CMD[@]}")" \
    --command-name gatefix "$(printf '%q ' "${GATEFIX_CMD[@]}")" \
    --command-name gatefix-verdicts "$(printf '%q ' "${VERDICTS_CMD[@]}")" \
    --command-name ast-grep "$(printf '%q ' "${ASTGREP_CMD[@]}")" >&2

# ---------------------------------------------------------------------------------------------
# 4. Verdict.
# ---------------------------------------------------------------------------------------------

python3 - "$OUT/hyperfine.json" "$RSS_KB" "$PY_FILES" \
    "$MAX_GATEFIX_OVER_RG" "$MIN_ASTGREP_OVER_GATEFIX" "$MAX_RSS_KB" "$MAX_VERDICTS_OVER_PLAIN" <<'EOF'
import json, sys

path, rss_kb, py_files, max_rg, min_sg, max_rss, max_verdicts = sys.argv[1:]
max_verdicts = float(max_verdicts)
rss_kb, max_rss = int(rss_kb), int(max_rss)
max_rg, min_sg = float(max_rg), float(min_sg)
mean = {r["command"]: r["mean"] for r in json.load(open(path))["results"]}
rg, gf, sg, gv = mean["rg"], mean["gatefix"], mean["ast-grep"], mean["gatefix-verdicts"]

print(f"site:       {py_files} Python files")
for name in ("rg", "gatefix", "gatefix-verdicts", "ast-grep"):
    print(f"{name + ':':17} {mean[name] * 1000:9.1f} ms mean")
print(f"gatefix/rg:       {gf / rg:6.2f}x   (limit <= {max_rg:g}x)")
print(f"ast-grep/gatefix: {sg / gf:6.2f}x   (limit >= {min_sg:g}x)")
print(f"verdicts/plain:   {gv / gf:6.2f}x   (limit <= {max_verdicts:g}x)")
print(f"gatefix peak RSS: {rss_kb / 1024:6.1f} MiB (limit <= {max_rss // 1024} MiB)")

failed = []
if gf > max_rg * rg:
    failed.append(f"gatefix is {gf / rg:.2f}x rg (more than {max_rg:g}x)")
if sg < min_sg * gf:
    failed.append(f"ast-grep is only {sg / gf:.2f}x gatefix (less than {min_sg:g}x)")
if gv > max_verdicts * gf:
    failed.append(f"verdicts cost {gv / gf:.2f}x the plain audit (more than {max_verdicts:g}x)")
if rss_kb > max_rss:
    failed.append(f"gatefix peak RSS {rss_kb / 1024:.0f} MiB is over {max_rss // 1024} MiB")
for line in failed:
    print(f"FAIL: {line}")
if not failed:
    print("OK")
sys.exit(1 if failed else 0)
EOF
