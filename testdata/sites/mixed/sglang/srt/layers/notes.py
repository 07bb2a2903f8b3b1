"""Helpers whose docstrings and comments talk about architectures: only code counts.

Nothing in this docstring (is_sm100_supported, compute capability) is a gate either.
"""
from sglang.srt.utils import is_sm100_supported


def wide_tiles(n):
    """Whether to use wide tiles. On Blackwell (is_sm100_supported()) callers pass 256;
    the compute capability is checked upstream."""
    # is_sm90_supported() callers pass 128.
    for size in (256, 128):
        if n % size == 0:
            return True
    return False


def running_total(values):
    total = 0
    for v in values:
        total += v
    return total


def run():
    return is_sm100_supported()


def schedule(n):
    if wide_tiles(n):  # not a gate: wide_tiles mentions architectures in prose only
        return "wide"
    if run():  # a gate: run() is is_sm100_supported()
        return "fast"
    return running_total([n])  # not a gate: `running_total` is not `run`
