#!/usr/bin/env bash
# ci/kernels-crosscheck.sh — `gatefix kernels` checked against NVIDIA's cuobjdump on real wheels.
#
# Run on demand, NOT in CI: it downloads ~0.8 GB of wheels the first time (more with EXTRA) and
# cuobjdump from PyPI. For every native library of the pinned wheels it compares, per file, the
# multiset of SASS archs and of PTX archs (count per arch) that gatefix reports with what
# `cuobjdump --list-elf --list-ptx` (and `cuobjdump -all ...`) lists, and exits non-zero on any
# difference that /work/shared/docs/fatbin.md (and tests/kernel_samples.rs) do not document.
#
# Documented differences, applied before comparing:
#   * SASS 'f' (sm_100f, sm_120f): the cubin does not record it, so cuobjdump lists it as plain
#     sm_100 / sm_120. gatefix's SASS 'f' is compared as plain. PTX keeps 'f' on both sides.
#   * plain-data containers (torch's `.lrodata` blobs, CUPTI's `.rodata` ones): cuobjdump does
#     not see them; they are left out of the per-file comparison, and each is instead cut out
#     of its file into a raw .fatbin that cuobjdump lists and compared on its own.
#   * relocatable code (`__nv_relfatbin`, `-rdc`): cuobjdump lists it by default only when the
#     file has no executable fatbin, and always with `-all`. The default listing is compared with
#     gatefix's default view, the `-all` listing with all of gatefix's walked containers, and
#     relocatable counts are reported apart.
#   * LTO-IR and unknown entry kinds: cuobjdump's --list-elf/--list-ptx never list them;
#     concat groups (kind 0x100) are listed by cuobjdump as their members, so members are used.
#
# Also a difference: a native library where cuobjdump lists ELF/PTX but gatefix lists nothing,
# a file gatefix reports with a parse error, or a file cuobjdump fails on (nothing to compare).
#
# Environment:
#   GATEFIX_CACHE      wheels, tool venv (default ~/.cache/gatefix); wheels go to
#                      $GATEFIX_CACHE/kernels-wheels, except vllm, reused from $GATEFIX_CACHE/wheels
#                      when bench/audit.sh already fetched it there.
#   CROSSCHECK_EXTRA=1 also check torch==2.9.1 and triton==3.5.1 (bench/audit.sh's pins, reused
#                      from $GATEFIX_CACHE/wheels; 1.1 GB more otherwise): relocatable code
#                      (libtorch_nvshmem) and plain-data containers (triton's CUPTI copies).
#                      cuobjdump needs ~6 GB of memory on libtorch_cuda.so.
#   CROSSCHECK_KEEP=1  keep the unpacked site and the listings (path printed at the end).
#   GATEFIX            a gatefix binary to use instead of building target/release/gatefix.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${GATEFIX_CACHE:-$HOME/.cache/gatefix}
WHEELS=$CACHE/kernels-wheels
BENCH_WHEELS=$CACHE/wheels
TOOLS=$CACHE/tools
CUOBJDUMP_VENV=$TOOLS/cuobjdump-venv
mkdir -p "$WHEELS" "$TOOLS"

# Exact pins. sglang-kernel 0.4.10 (import name sgl_kernel) ships one wheel for x86_64 Linux,
# sglang_kernel-0.4.10-cp310-abi3-manylinux2014_x86_64.whl, which a cp311 target accepts
# through abi3. vllm 0.11.0 is vllm-0.11.0-cp38-abi3-manylinux1_x86_64.whl (also bench/audit.sh's).
PINS=(
    sglang-kernel==0.4.10
    vllm==0.11.0
)
if [[ ${CROSSCHECK_EXTRA:-0} == 1 ]]; then
    PINS+=(torch==2.9.1 triton==3.5.1)
fi
CUOBJDUMP_PIN=nvidia-cuda-cuobjdump==13.5.37

# A fixed download target, so the same wheel comes down on any host (see bench/audit.sh).
PIP_TARGET=(
    --python-version 3.11 --implementation cp --abi cp311 --abi abi3
    --platform manylinux_2_34_x86_64 --platform manylinux_2_28_x86_64
    --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64
    --platform manylinux2014_x86_64 --platform manylinux1_x86_64
    --only-binary=:all:
)

log() { printf '\n== %s\n' "$*" >&2; }

# The cached wheel of a pin in a folder, if any (`-` and `.` in names are `_` in wheel files).
wheel_in() {
    local dir=$1 name=${2%%==*} version=${2##*==}
    name=${name//[-.]/_}
    compgen -G "$dir/${name}-${version}-*.whl" | head -n 1 || true
}

fetch_wheel() {
    local pin=$1 whl
    whl=$(wheel_in "$WHEELS" "$pin")
    [[ -n $whl ]] || whl=$(wheel_in "$BENCH_WHEELS" "$pin")
    if [[ -z $whl ]]; then
        log "downloading $pin"
        python3 -m pip download --quiet --no-deps "${PIP_TARGET[@]}" -d "$WHEELS" "$pin" >&2
        whl=$(wheel_in "$WHEELS" "$pin")
        [[ -n $whl ]] || { echo "error: pip fetched no wheel for $pin" >&2; exit 2; }
    fi
    printf '%s\n' "$whl"
}

ensure_cuobjdump() {
    if [[ -n ${CUOBJDUMP:-} ]]; then
        return
    fi
    CUOBJDUMP=$(find "$CUOBJDUMP_VENV" -type f -name cuobjdump -perm -u+x 2>/dev/null | head -n 1 || true)
    if [[ -z $CUOBJDUMP ]]; then
        log "installing $CUOBJDUMP_PIN into $CUOBJDUMP_VENV"
        python3 -m venv "$CUOBJDUMP_VENV"
        "$CUOBJDUMP_VENV/bin/pip" install --quiet "$CUOBJDUMP_PIN" >&2
        # The wheel puts it under site-packages/nvidia/cu13/bin/ (cu12 for older releases).
        CUOBJDUMP=$(find "$CUOBJDUMP_VENV" -type f -name cuobjdump -perm -u+x | head -n 1 || true)
        [[ -n $CUOBJDUMP ]] || { echo "error: no cuobjdump in $CUOBJDUMP_PIN" >&2; exit 2; }
    fi
}

# ---------------------------------------------------------------------------------------------

WHLS=()
for pin in "${PINS[@]}"; do
    WHLS+=("$(fetch_wheel "$pin")")
done
ensure_cuobjdump
"$CUOBJDUMP" --version | tail -n 2 >&2

if [[ -z ${GATEFIX:-} ]]; then
    log "building gatefix (release)"
    cargo build --release --quiet --manifest-path "$REPO/Cargo.toml" >&2
    GATEFIX=${CARGO_TARGET_DIR:-$REPO/target}/release/gatefix
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/gatefix-kernels-crosscheck.XXXXXX")
if [[ ${CROSSCHECK_KEEP:-0} != 1 ]]; then
    trap 'rm -rf "$WORK"' EXIT
fi
SITE=$WORK/site
mkdir -p "$SITE" "$WORK/listings"

for whl in "${WHLS[@]}"; do
    log "unpacking $(basename "$whl")"
    unzip -q -o "$whl" -d "$SITE"
done
# `*.data/{purelib,platlib}` would be moved into the site by pip; do the same.
for data in "$SITE"/*.data; do
    [[ -d $data ]] || continue
    for sub in purelib platlib; do
        [[ -d $data/$sub ]] && cp -a "$data/$sub/." "$SITE/"
    done
    rm -rf "$data"
done

log "gatefix kernels"
"$GATEFIX" kernels "$SITE" --format json >"$WORK/gatefix.json"

log "cuobjdump over every native library, and comparison"
status=0
python3 - "$SITE" "$WORK/gatefix.json" "$CUOBJDUMP" "$WORK/listings" "$(nproc)" <<'EOF' || status=$?
import collections
import concurrent.futures
import json
import os
import re
import struct
import subprocess
import sys

site, gatefix_json, cuobjdump, listings_dir, jobs = sys.argv[1:]
jobs = max(1, min(int(jobs), 4))  # cuobjdump holds whole files in memory (6 GB on torch)
Counter = collections.Counter
FATBIN_MAGIC = 0xBA55ED50

doc = json.load(open(gatefix_json))
gf_files = {f["path"]: f for f in doc["files"]}

# Every native library (*.so, *.so.*), plus any other file gatefix lists that cuobjdump reads
# (host objects, cubins, fatbins). PTX text files are not cuobjdump input.
native = set()
for root, dirs, names in os.walk(site):
    dirs[:] = [d for d in dirs if d != "__pycache__"]
    for n in names:
        p = os.path.join(root, n)
        if (n.endswith(".so") or ".so." in n) and os.path.isfile(p) and not os.path.islink(p):
            native.add(os.path.relpath(p, site))
for path, f in gf_files.items():
    if f["kind"] != "ptx":
        native.add(path)
native = sorted(native)

LINE = re.compile(r"^(ELF|PTX) file\s+\d+:\s+(\S+)\s*$")


class CuobjdumpFailed(Exception):
    pass


def listing(path, with_all, log):
    """(SASS Counter, PTX Counter) as `cuobjdump [-all] --list-elf --list-ptx` lists them."""
    cmd = [cuobjdump] + (["-all"] if with_all else []) + ["--list-elf", "--list-ptx", path]
    p = subprocess.run(cmd, capture_output=True, text=True, errors="replace")
    log.append(f"$ {' '.join(cmd)}\n{p.stdout}{p.stderr}")
    elf, ptx = Counter(), Counter()
    for line in p.stdout.splitlines():
        m = LINE.match(line)
        if m:
            # `<stem>.<n>.<arch>.cubin|ptx`: the arch is the second-to-last dot field.
            arch = m.group(2).rsplit(".", 2)[-2]
            (elf if m.group(1) == "ELF" else ptx)[arch] += 1
    # A host ELF without device code: "File ... does not contain device code", exit 255.
    # ELF but no PTX (or the reverse): "No PTX file found ...", exit 0.
    # A file it cannot read: "cuobjdump fatal : ...", exit 1.
    no_code = p.returncode == 255 and "does not contain device code" in p.stderr
    if "fatal" in p.stderr or (p.returncode != 0 and not no_code):
        raise CuobjdumpFailed(f"cuobjdump exit {p.returncode}: {p.stderr.strip()[:300]}")
    return elf, ptx


def carve(rel, container, dest):
    """Cut a plain-data container out of its file into a raw .fatbin cuobjdump can read."""
    with open(os.path.join(site, rel), "rb") as fh:
        fh.seek(container["offset"])
        head = fh.read(16)
        if len(head) < 16:
            return f"container @{container['offset']:#x} is past the end of the file"
        magic, version, hsize, fsize = struct.unpack("<IHHQ", head)
        if magic != FATBIN_MAGIC:
            return f"no fatbin magic at @{container['offset']:#x}"
        with open(dest, "wb") as out:
            out.write(head + fh.read(hsize - 16 + fsize))
    return None


def check(rel):
    """cuobjdump's view of one file: default and -all listings, and each plain-data container
    carved out into a fatbin of its own. Returns (rel, result or error string, log)."""
    log = []
    out = {}
    try:
        for with_all in (False, True):
            out[with_all] = listing(os.path.join(site, rel), with_all, log)
        carved = []
        f = gf_files.get(rel)
        for i, c in enumerate(f["containers"] if f else []):
            if c["section"] != "plain-data":
                continue
            dest = os.path.join(listings_dir, f"{rel.replace('/', '__')}.{c['offset']:#x}.fatbin")
            err = carve(rel, c, dest)
            if err:
                raise CuobjdumpFailed(f"plain-data {err}")
            try:
                carved.append((c, listing(dest, False, log)))
            finally:
                os.unlink(dest)
        out["carved"] = carved
    except CuobjdumpFailed as e:
        return rel, str(e), log
    return rel, out, log


def target(e):
    v = e["variant"]
    if e["kind"] == "sass" and v == "f":
        v = ""  # cuobjdump cannot see SASS 'f': the cubin does not record it (fatbin.md §4)
    return f"sm_{e['arch']}{v}"


def leaves(entries):
    for e in entries:
        if e.get("sub_entries"):
            yield from leaves(e["sub_entries"])  # concat groups: cuobjdump lists the members
        else:
            yield e


def view(containers, kind):
    return Counter(target(e) for c in containers for e in leaves(c["entries"]) if e["kind"] == kind)


def size_of(counters):
    return sum(sum(c.values()) for c in counters)


def fmt(counter):
    return " ".join(f"{a}:{n}" if n > 1 else a for a, n in sorted(counter.items())) or "-"


def delta(got, want):
    """What gatefix has beyond cuobjdump (+) and what it lacks (-)."""
    plus, minus = got - want, want - got
    parts = [f"+{a}:{n}" for a, n in sorted(plus.items())]
    return " ".join(parts + [f"-{a}:{n}" for a, n in sorted(minus.items())])


with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
    results = list(pool.map(check, native))

rows, problems = [], []
tot = Counter()
no_code = 0
for rel, cu, log in results:
    with open(os.path.join(listings_dir, rel.replace("/", "__") + ".txt"), "w") as fh:
        fh.write("\n".join(log))
    f = gf_files.get(rel)
    size = os.path.getsize(os.path.join(site, rel))
    if isinstance(cu, str):
        problems.append(f"{rel}: {cu}")
        rows.append((rel, size, len(f["containers"]) if f else 0, "-", "-", "-", "-", "-", "CUOBJDUMP-FAILED"))
        continue
    if f is None:
        if size_of(cu[True]):
            problems.append(f"{rel}: gatefix lists nothing; cuobjdump -all lists "
                            f"SASS {fmt(cu[True][0])} PTX {fmt(cu[True][1])}")
            rows.append((rel, size, 0, f"0/{sum(cu[False][0].values())}",
                         f"0/{sum(cu[False][1].values())}", "-", "-", "-", "MISSED"))
        else:
            no_code += 1
        continue
    cont = f["containers"]
    walked = [c for c in cont if c["section"] != "plain-data"]
    executable = [c for c in walked if not c["relocatable"]]
    relocatable = [c for c in walked if c["relocatable"]]
    # cuobjdump lists the executable fatbin, or the relocatable one when there is none;
    # -all lists both (tests/kernel_samples.rs cuobjdump_views).
    default = executable or walked
    status = []
    if f.get("error"):
        problems.append(f"{rel}: gatefix error: {f['error']}")
        status.append("GATEFIX-ERROR")
    for k, kind in enumerate(("sass", "ptx")):
        seen = set()
        for with_all, cs in ((False, default), (True, walked)):
            got, want = view(cs, kind), cu[with_all][k]
            # -all repeats the default listing: report it only for a new delta (relocatable).
            if got != want and delta(got, want) not in seen:
                seen.add(delta(got, want))
                problems.append(f"{rel}: {'-all ' if with_all else ''}{kind.upper()} differs: "
                                f"gatefix {fmt(got)} | cuobjdump {fmt(want)} | delta {delta(got, want)}")
                status.append(f"{'ALL-' if with_all else ''}{kind.upper()}-DIFF")
    plain_gf = plain_cu = 0
    for c, (elf, ptx) in cu["carved"]:
        got_sass, got_ptx = view([c], "sass"), view([c], "ptx")
        plain_gf += size_of([got_sass, got_ptx])
        plain_cu += size_of([elf, ptx])
        if (got_sass, got_ptx) != (elf, ptx):
            problems.append(f"{rel}: plain-data container @{c['offset']:#x} ({c.get('in_section')}), "
                            f"carved out: gatefix SASS {fmt(got_sass)} PTX {fmt(got_ptx)} | "
                            f"cuobjdump SASS {fmt(elf)} PTX {fmt(ptx)} | "
                            f"delta {delta(got_sass + got_ptx, elf + ptx)}")
            status.append("PLAIN-DATA-DIFF")
    sass_gf, ptx_gf = size_of([view(default, "sass")]), size_of([view(default, "ptx")])
    sass_cu, ptx_cu = size_of([cu[False][0]]), size_of([cu[False][1]])
    f_sass = sum(1 for c in cont for e in leaves(c["entries"]) if e["kind"] == "sass" and e["variant"] == "f")
    reloc = size_of([view(relocatable, "sass"), view(relocatable, "ptx")])
    other = sum(1 for c in cont for e in leaves(c["entries"]) if e["kind"] not in ("sass", "ptx"))
    n_plain = len(cu["carved"])
    tot.update(files=1, containers=len(cont), sass_gf=sass_gf, sass_cu=sass_cu, ptx_gf=ptx_gf,
               ptx_cu=ptx_cu, f_sass=f_sass, reloc=reloc, plain_c=n_plain, plain_gf=plain_gf,
               plain_cu=plain_cu, other=other, size=size)
    rows.append((rel, size, len(cont), f"{sass_gf}/{sass_cu}", f"{ptx_gf}/{ptx_cu}", f_sass, reloc,
                 f"{plain_gf}/{plain_cu} in {n_plain}" if n_plain else "-",
                 " ".join(status) + (f" ({other} lto/other)" if other else "") or "ok"))

head = ("file", "MiB", "cont", "SASS gf/cu", "PTX gf/cu", "f->plain", "reloc", "plain-data gf/cu",
        "status")
table = [head] + [(r[0], f"{r[1] / 2**20:.1f}") + tuple(str(x) for x in r[2:]) for r in rows]
widths = [max(len(r[i]) for r in table) for i in range(len(head))]
print()
for i, r in enumerate(table):
    print("  ".join(c.ljust(w) if j in (0, 8) else c.rjust(w)
                    for j, (c, w) in enumerate(zip(r, widths))).rstrip())
    if i == 0:
        print("  ".join("-" * w for w in widths))
print()
print("SASS/PTX gf/cu: images gatefix / cuobjdump list by default (executable fatbin, else the")
print("relocatable one); f->plain: SASS 'f' images compared as plain; reloc: images in")
print("__nv_relfatbin (checked against cuobjdump -all); plain-data: images in containers outside")
print("the fatbin sections, which cuobjdump does not see, checked by carving each one out.")
print()
print(f"libraries read by both tools:  {len(native)} ({no_code} without device code in either)")
print(f"libraries with device code:    {tot['files']} ({tot['size'] / 2**30:.2f} GiB), "
      f"{tot['containers']} containers")
print(f"SASS images (default view):    gatefix {tot['sass_gf']}, cuobjdump {tot['sass_cu']}")
print(f"PTX images (default view):     gatefix {tot['ptx_gf']}, cuobjdump {tot['ptx_cu']}")
print(f"documented differences:        {tot['f_sass']} SASS 'f' images compared as plain; "
      f"{tot['reloc']} relocatable images (checked with -all); "
      f"{tot['plain_c']} plain-data containers not seen by cuobjdump "
      f"({tot['plain_gf']} images, {tot['plain_cu']} listed by cuobjdump once carved out); "
      f"{tot['other']} LTO-IR/other entries (never listed)")
print()
if problems:
    print(f"FAIL: {len(problems)} undocumented difference(s):")
    for p in problems:
        print(f"  {p}")
    sys.exit(1)
print("OK: gatefix and cuobjdump agree on every library (after the documented differences)")
EOF
if [[ ${CROSSCHECK_KEEP:-0} == 1 ]]; then
    echo "kept: $WORK (site/, gatefix.json, listings/)" >&2
fi
exit $status
