import torch

from .kernels.gemm_any import run_any
from .kernels.gemm_sm80 import run_sm80
from .kernels.gemm_sm100 import run_sm100
from .kernels.gemm_sm120 import run_sm120


def blockscaled_gemm(a, b):
    major, minor = torch.cuda.get_device_capability()
    if major == 12:
        return run_sm120(a, b)
    if major == 10:
        return run_sm100(a, b)
    raise ValueError("needs SM100 or SM120")


def blockscaled_gemm_newer(a, b):
    major, minor = torch.cuda.get_device_capability()
    if major >= 10:
        return run_sm100(a, b)
    return run_sm80(a, b)


def any_arch_gemm(a, b):
    major, minor = torch.cuda.get_device_capability()
    if major >= 9:
        return run_any(a, b)
    raise ValueError("needs SM90 or newer")
