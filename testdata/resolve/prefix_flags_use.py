"""Nothing here names the device: the flag is found through its import, although the name
of another device flag of that module starts its name. (The expectation below is a glob,
so that it names no such flag either.)"""

from prefix_flags import fast_path

BLOCK = 128 if fast_path else 64  # gate: ma* >= 10
