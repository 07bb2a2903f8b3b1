from functools import lru_cache, partial

import torch


def is_cuda():
    return torch.cuda.is_available() and torch.version.cuda


def is_hip():
    return torch.version.hip is not None


def get_device_sm():
    # Reads NVML in the real thing; a rule declares it.
    return 0


def _check_cuda_device_version(device_capability_majors, cuda_version):
    if not is_cuda():
        return False
    return (
        get_device_sm() // 10 in device_capability_majors
        and tuple(map(int, torch.version.cuda.split(".")[:2])) >= cuda_version
    )


is_blackwell_supported = is_blackwell = lru_cache(maxsize=1)(
    partial(_check_cuda_device_version, device_capability_majors=[10, 12], cuda_version=(12, 8))
)
is_sm100_supported = lru_cache(maxsize=1)(
    partial(_check_cuda_device_version, device_capability_majors=[10], cuda_version=(12, 8))
)
is_sm90_supported = lru_cache(maxsize=1)(
    partial(_check_cuda_device_version, device_capability_majors=[9], cuda_version=(12, 3))
)
is_sm120_supported = lru_cache(maxsize=1)(
    partial(_check_cuda_device_version, device_capability_majors=[12], cuda_version=(12, 8))
)


@lru_cache(maxsize=1)
def is_sm120():
    return is_cuda() and torch.cuda.get_device_capability() == (12, 0)
