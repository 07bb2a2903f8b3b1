from typing import Dict

_PLATFORM_PROBES: Dict[str, str] = {
    "is_cuda": "is_cuda",
    "is_sm90": "is_sm90_supported",
    "is_sm100": "is_sm100_supported",
    "is_sm120": "is_sm120_supported",
    "is_blackwell": "is_blackwell_supported",
}

_PLATFORM_VALUES: Dict[str, str] = {
    "device_sm": "get_device_sm",
}


class PlatformContext:
    def __getattr__(self, name):
        probe = _PLATFORM_PROBES.get(name) or _PLATFORM_VALUES.get(name)
        from sglang.srt.utils import common

        return getattr(common, probe)()


_PLATFORM = PlatformContext()


def get_platform():
    return _PLATFORM
