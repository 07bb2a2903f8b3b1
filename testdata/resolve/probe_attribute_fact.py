import torch
from sglang.srt.runtime_context import get_platform


# `get_platform()` is a probe object (rules/sglang.toml): its `__getattr__` calls the function
# an attribute names, so `.is_hip` is `is_hip()`, false on NVIDIA, and `not` of it holds.
def glm_fp8(view):
    major, _ = torch.cuda.get_device_capability()
    return view.arch == "Glm" and major == 12 and not get_platform().is_hip  # gate: `view.arch == "Glm"` and major == 12


def cuda_only(view):
    if torch.cuda.get_device_capability()[0] >= 10 and get_platform().is_cuda:  # gate: major >= 10
        return 1
    return 0


def hip_only(view):
    if get_platform().is_hip and torch.cuda.get_device_capability()[0] == 9:  # no-gate
        return 1
    return 0
