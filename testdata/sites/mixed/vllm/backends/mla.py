from typing import NamedTuple

from vllm.platforms import current_platform


class DeviceCapability(NamedTuple):
    major: int
    minor: int


class CutlassMLABackend:
    @classmethod
    def supports_compute_capability(cls, capability: DeviceCapability) -> bool:
        return capability.major == 10

    @classmethod
    def get_min_capability(cls) -> int:
        return 80


def enable_fusion():
    return current_platform.is_device_capability_family(100) or current_platform.is_device_capability(90)


def has_fp4():
    if current_platform.has_device_capability(100):
        return True
    return current_platform.is_device_capability_family(120)
