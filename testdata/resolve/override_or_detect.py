import os

import numpy
from functools import lru_cache

import torch


def _parse_arch_str(text):
    return int(text)


@lru_cache(maxsize=None)
def _get_device_arch():
    # An environment override first, then the device: without the override the arch is the
    # device's (flash_attn/cute/interface.py in vllm and sglang).
    arch_override = os.environ.get("FLASH_ATTENTION_ARCH", None)
    if arch_override is not None:
        return _parse_arch_str(arch_override)
    major, minor = torch.cuda.get_device_capability()
    return major * 10 + int(minor)


def fwd(q, _arch=None):
    arch = _get_device_arch() if _arch is None else _arch
    assert arch // 10 in [8, 9, 10, 11, 12], "unsupported"  # gate(assumes _arch is None, so the device's value is used; `_get_device_arch` is not overridden (`arch_override is not None`)): major in {8, 9, 10, 11, 12}
    if arch // 10 == 9:  # gate(assumes _arch is None, so the device's value is used; `_get_device_arch` is not overridden (`arch_override is not None`)): major == 9
        return "sm90"
    return "other"


def given(q, _arch=None):
    arch = _arch if _arch is not None else _get_device_arch()
    return arch >= 100  # gate(assumes _arch is None, so the device's value is used; `_get_device_arch` is not overridden (`arch_override is not None`)): sm >= 100


def not_an_override(q, other=None):
    # The other arm is not the tested name: no override idiom, a choice over a free test.
    arch = _get_device_arch() if other is None else 80
    return arch >= 90  # gate(assumes `_get_device_arch` is not overridden (`arch_override is not None`)): `other is None` and sm >= 90


def read_twice(q, _arch=None):
    # The first site calls `_get_device_arch()` itself before it reads `arch`: what computing
    # `arch` assumed is kept whole, so the second site, which finds `arch` already computed,
    # assumes both too.
    arch = _get_device_arch() if _arch is None else _arch
    if _get_device_arch() >= 90 and arch >= 100:  # gate(assumes _arch is None, so the device's value is used; `_get_device_arch` is not overridden (`arch_override is not None`)): sm >= 90 and sm >= 100
        return "a"
    if arch >= 120:  # gate(assumes _arch is None, so the device's value is used; `_get_device_arch` is not overridden (`arch_override is not None`)): sm >= 120
        return "b"
    return "c"


def passed_to_a_library(q, other_arch=None):
    # `numpy.any(...)` is no function of the site: its value is free whatever it is given, so
    # the override its argument reads is not assumed by the gate beside it.
    arch = _get_device_arch() if other_arch is None else other_arch
    if torch.cuda.get_device_capability()[0] >= 9 and numpy.any(arch):  # gate: major >= 9 and `numpy.any(arch)`
        return "a"
    return "b"
