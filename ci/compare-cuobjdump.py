#!/usr/bin/env python3
"""Compare `gatefix kernels --format json` with `cuobjdump --list-elf --list-ptx`, per file.

Usage: compare-cuobjdump.py GATEFIX_JSON ROOT CUOBJDUMP [--timeout SECONDS]

For every file gatefix lists (paths relative to ROOT), cuobjdump's SASS and PTX arch counts
must equal gatefix's, with the documented differences (docs/fatbin.md, tests/kernel_samples.rs):
- cuobjdump prints `f` SASS as plain (`sm_100f` cubins show as `sm_100`): compared as plain;
- plain-data containers (outside `.nv_fatbin`) are invisible to cuobjdump: left out;
- cuobjdump lists the executable fatbin, or the relocatable one when there is none;
- LTO-IR is not listed by either `--list-elf` or `--list-ptx`.
Exits 1 on any other difference. Standard library only: it runs on bare machines.
"""

import collections
import json
import re
import subprocess
import sys

NAME = re.compile(r"\.(sm_\d+[af]?)\.(cubin|ptx)$")


def cuobjdump_counts(tool, path, timeout):
    sass, ptx = collections.Counter(), collections.Counter()
    for flag, counter in (("--list-elf", sass), ("--list-ptx", ptx)):
        run = subprocess.run([tool, flag, path], capture_output=True, text=True, timeout=timeout)
        for line in run.stdout.splitlines():
            match = NAME.search(line.strip())
            if match:
                counter[match.group(1)] += 1
    return sass, ptx


def leaves(entries):
    for entry in entries:
        if entry.get("sub_entries"):
            yield from leaves(entry["sub_entries"])
        else:
            yield entry


def gatefix_counts(record):
    walked = [c for c in record["containers"] if c["section"] != "plain-data"]
    shown = [c for c in walked if not c["relocatable"]] or walked
    sass, ptx = collections.Counter(), collections.Counter()
    for container in shown:
        for entry in leaves(container["entries"]):
            arch = "sm_%d" % entry["arch"]
            if entry["kind"] == "sass":
                sass[arch + ("a" if entry["variant"] == "a" else "")] += 1
            elif entry["kind"] == "ptx":
                ptx[arch + entry["variant"]] += 1
    return sass, ptx


def main():
    args = sys.argv[1:]
    timeout = 600
    if "--timeout" in args:
        at = args.index("--timeout")
        timeout = int(args[at + 1])
        del args[at : at + 2]
    report, root, tool = args
    doc = json.load(open(report))
    differences = 0
    print("%-70s %10s %10s %s" % ("file", "sass", "ptx", "result"))
    for record in doc["files"]:
        path = record["path"] if record["path"].startswith("/") else "%s/%s" % (root, record["path"])
        ours_sass, ours_ptx = gatefix_counts(record)
        try:
            theirs_sass, theirs_ptx = cuobjdump_counts(tool, path, timeout)
        except subprocess.TimeoutExpired:
            print("%-70s %10s %10s cuobjdump timed out" % (record["path"][-70:], "-", "-"))
            continue
        same = ours_sass == theirs_sass and ours_ptx == theirs_ptx
        differences += not same
        print("%-70s %10d %10d %s" % (record["path"][-70:], sum(ours_sass.values()), sum(ours_ptx.values()), "same" if same else "DIFFERENT"))
        if not same:
            print("    gatefix   sass %s ptx %s" % (dict(sorted(ours_sass.items())), dict(sorted(ours_ptx.items()))))
            print("    cuobjdump sass %s ptx %s" % (dict(sorted(theirs_sass.items())), dict(sorted(theirs_ptx.items()))))
    print("%d files compared, %d different" % (len(doc["files"]), differences))
    sys.exit(1 if differences else 0)


if __name__ == "__main__":
    main()
