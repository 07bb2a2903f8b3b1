from typing import NamedTuple

import torch


class DeviceCapability(NamedTuple):
    major: int
    minor: int


def get_capability():
    major, minor = torch.cuda.get_device_capability()
    return DeviceCapability(major=major, minor=minor)


def blackwell():
    capability = get_capability()
    return capability.major == 10  # gate: major == 10


def b300():
    capability = get_capability()
    return (capability.major, capability.minor) == (10, 3)  # gate: (major, minor) == (10, 3)


def fused(quant_config):
    capability = get_capability()
    return quant_config and capability is not None and capability.major >= 10  # gate: `quant_config` and major >= 10
