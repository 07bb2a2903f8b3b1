"""Device helpers in the shape of sglang's (written for gatefix's verdict tests)."""

from functools import lru_cache

import torch


def is_cuda():
    return torch.cuda.is_available() and torch.version.cuda is not None


@lru_cache(maxsize=1)
def is_sm90_supported(device=None) -> bool:
    return torch.cuda.get_device_capability(device)[0] == 9 and torch.version.cuda >= "12.3"


@lru_cache(maxsize=1)
def is_sm100_supported(device=None) -> bool:
    return torch.cuda.get_device_capability(device)[0] == 10 and torch.version.cuda >= "12.8"


@lru_cache(maxsize=1)
def is_sm120_supported(device=None) -> bool:
    return torch.cuda.get_device_capability(device)[0] == 12 and torch.version.cuda >= "12.8"


@lru_cache(maxsize=1)
def is_blackwell_supported(device=None) -> bool:
    return torch.cuda.get_device_capability(device)[0] in [10, 12] and torch.version.cuda >= "12.8"


def is_flashinfer_available():
    return True
