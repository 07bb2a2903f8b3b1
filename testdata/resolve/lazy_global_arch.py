# A device description made lazily by an init function that stores a module global
# (`global _ARCH`; sglang's kernels/jit/utils/arch.py): no module-level value, a dataclass
# with major and minor, read back through a getter.
from dataclasses import dataclass

import torch


@dataclass
class ArchInfo:
    major: int
    minor: int
    suffix: str


def _init_arch_once():
    global _ARCH
    try:
        major, minor = torch.cuda.get_device_capability()
    except Exception:
        major, minor = 0, 0
    suffix = "a" if major >= 9 else ""  # gate: major >= 9
    if (major, minor) == (10, 7) and not _toolchain_knows_sm107():  # gate: (major, minor) == (10, 7) and not `_toolchain_knows_sm107()`
        # The record's fields differ from the device's on one path: a choice per field.
        major, minor = 10, 0
    _ARCH = ArchInfo(major, minor, suffix)


def _toolchain_knows_sm107():
    return False


def get_arch() -> ArchInfo:
    _init_arch_once()
    return _ARCH


def use_fast_math():
    arch = get_arch()
    return (arch.major, arch.minor) == (9, 0)  # gate(assumes `_ARCH` is what `_init_arch_once` stores): not ((major, minor) == (10, 7) and not `_toolchain_knows_sm107()`) and (major, minor) == (9, 0)


def at_least_blackwell():
    return get_arch().major * 10 + get_arch().minor >= 100  # gate(assumes `_ARCH` is what `_init_arch_once` stores): (major, minor) == (10, 7) and not `_toolchain_knows_sm107()` or *sm >= 100*
