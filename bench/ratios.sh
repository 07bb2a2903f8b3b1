#!/usr/bin/env bash
# bench/ratios.sh SITE [RUNS] — issue 37's speed figures on any unpacked site, without the
# bench site's downloads or hyperfine: the plain and the default audit against rg's literal
# floor (the tokens bench/audit.sh searches) and ruff's full semantic pass (the peer), in
# alternating runs under one set of conditions, with min / median / max, the ratios at the
# median, and gatefix's peak RSS.
#
#   rg      rg -c -i over the gate tokens (bench/audit.sh RG_CMD): reading every file, the floor;
#   ruff    ruff check --no-cache --isolated --select F401,F841 --exit-zero: parses every
#           Python file and builds a semantic model of each (scopes, bindings, references);
#   plain   gatefix audit SITE --format json --no-verdicts --no-cache;
#   default gatefix audit SITE --format json --fail-on none --no-cache (links and verdicts);
#   cached  the default audit again, its result in gatefix's cache (a fresh cache folder,
#           filled by the warm-up round): a second audit of an unchanged site;
#   touched the same after `touch` on the site's largest Python file before each run (new
#           times, same bytes: that one file is read and hashed again);
#   apply   gatefix apply sm_120 --site SITE --dry-run --unsafe-fixes --all-opportunities
#           --close-traps (the curated patches, every synthesized fix, each checked by
#           re-resolving the site; writes nothing).
#
# Needs rg and ruff on PATH (`pip install ripgrep ruff` in a venv will do) and a release build
# (GATEFIX=path overrides target/release/gatefix). One warm-up round is not timed. Issue 37's
# limits: plain at most 15x rg, default at most 1.5x plain, peak RSS under 1 GiB; issue 39's:
# cached at most 2x rg, touched at most 3x rg, apply at most 3x the default audit. The script prints them and exits 1 when one
# fails.
set -euo pipefail

SITE=${1:?usage: bench/ratios.sh SITE [RUNS]}
RUNS=${2:-5}
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
GATEFIX=${GATEFIX:-$REPO/target/release/gatefix}
for tool in rg ruff "$GATEFIX"; do
    command -v "$tool" >/dev/null || {
        echo "bench/ratios.sh: $tool not found (rg and ruff: pip install ripgrep ruff; gatefix: cargo build --release)" >&2
        exit 2
    }
done

python3 - "$SITE" "$RUNS" "$GATEFIX" <<'PY'
import os, pathlib, resource, statistics, subprocess, sys, tempfile, time

site, runs, gatefix = sys.argv[1], int(sys.argv[2]), sys.argv[3]
cache = tempfile.mkdtemp(prefix="gatefix-bench-cache-")
largest = max(pathlib.Path(site).rglob("*.py"), key=lambda p: p.stat().st_size if p.is_file() else 0)
commands = {
    "rg": ["rg", "-c", "-i", "-e", "capabilit", "-e", "is_sm", "-e", "sm_version", "-e", "device_sm",
           "-e", "is_blackwell", "-e", "is_hopper", "-e", "is_ampere", "-e", "major_versions",
           "-e", "get_nvcc_flags_list", "-e", "get_device_properties", "-e", "arch_support",
           "--type", "py", site],
    "ruff": ["ruff", "check", "--no-cache", "--isolated", "--select", "F401,F841", "--exit-zero",
             "--quiet", site],
    "plain": [gatefix, "audit", site, "--format", "json", "--no-verdicts", "--no-cache"],
    "default": [gatefix, "audit", site, "--format", "json", "--fail-on", "none", "--no-cache"],
    "cached": [gatefix, "audit", site, "--format", "json", "--fail-on", "none", "--cache-dir", cache],
    "touched": [gatefix, "audit", site, "--format", "json", "--fail-on", "none", "--cache-dir", cache],
    "apply": [gatefix, "apply", "sm_120", "--site", site, "--dry-run", "--unsafe-fixes",
              "--all-opportunities", "--close-traps"],
}

def run(argv, name=None):
    """Wall seconds and the child's peak RSS in KiB (wait4 rusage of this child alone)."""
    if name == "touched":
        largest.touch()
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1, 3):  # 3: apply refused a patch (a dry run writes nothing anyway)
        sys.exit(f"bench/ratios.sh: {' '.join(argv)} exited {code}")
    return wall, usage.ru_maxrss

for name, argv in commands.items():  # warm-up: the page cache, the cache, proof each runs
    run(argv, name)
times = {name: [] for name in commands}
rss = {name: 0 for name in commands}
for _ in range(runs):
    for name, argv in commands.items():
        wall, peak = run(argv, name)
        times[name].append(wall)
        rss[name] = max(rss[name], peak)

median = {name: statistics.median(t) for name, t in times.items()}
print(f"site {site}, {runs} alternating runs, {os.cpu_count()} cores; seconds min / median / max")
for name, t in times.items():
    print(f"  {name:8} {min(t):7.2f} {median[name]:7.2f} {max(t):7.2f}   peak RSS {rss[name] / 1024:6.0f} MiB")
plain_rg = median["plain"] / median["rg"]
default_plain = median["default"] / median["plain"]
print(f"  plain / rg      {plain_rg:6.1f}x  (issue 37: at most 15x)")
print(f"  ruff / rg       {median['ruff'] / median['rg']:6.1f}x  (the peer: plain should beat it)")
print(f"  plain / ruff    {median['plain'] / median['ruff']:6.2f}x")
print(f"  default / plain {default_plain:6.2f}x  (at most 1.5x)")
cached_rg = median["cached"] / median["rg"]
touched_rg = median["touched"] / median["rg"]
print(f"  cached / rg     {cached_rg:6.2f}x  (issue 39: at most 2x)")
print(f"  touched / rg    {touched_rg:6.2f}x  (issue 39: at most 3x)")
print(f"  default / cached {median['default'] / median['cached']:5.0f}x")
apply_default = median["apply"] / median["default"]
print(f"  apply / default {apply_default:6.2f}x  (issue 39: at most 3x)")
subprocess.run(["rm", "-rf", cache])
gib = 1024 * 1024
failed = []
if plain_rg > 15:
    failed.append("plain audit over 15x rg")
if default_plain > 1.5:
    failed.append("default audit over 1.5x the plain one")
if max(rss["plain"], rss["default"]) > gib:
    failed.append("peak RSS over 1 GiB")
if cached_rg > 2:
    failed.append("cached audit over 2x rg")
if touched_rg > 3:
    failed.append("touched audit over 3x rg")
if apply_default > 3:
    failed.append("apply dry run over 3x the default audit")
if failed:
    print("FAILED: " + "; ".join(failed))
    sys.exit(1)
PY
