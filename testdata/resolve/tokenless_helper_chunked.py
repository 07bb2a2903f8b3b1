"""A file big enough to be parsed statement by statement (over 512 bytes): the token-less
helper below has no token of its own, and the only thing that ties it to the device is the
call in `init`, which hands it the device's major and minor. The chunking must keep it.

(sglang/kernels/jit/utils/arch.py: `_cuda_arch_suffix(major, minor)`.)
"""

import torch


def _arch_suffix(major: int, minor: int) -> str:
    if major == 9:  # gate: major == 9
        return "a"
    if major == 12:  # gate: major == 12
        if minor == 0:  # gate: minor == 0
            return "f"
        return "a"
    return ""


def unrelated(width: int) -> int:
    if width == 9:  # no-gate
        return 1
    return 0


def init():
    try:
        major, minor = torch.cuda.get_device_capability()
    except Exception:
        major, minor = 0, 0
    suffix = _arch_suffix(major, minor)
    if (major, minor) == (10, 7):  # gate: (major, minor) == (10, 7)
        major, minor, suffix = 10, 0, "f"
    return suffix, unrelated(3)
