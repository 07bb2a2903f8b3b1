import torch
import flashinfer.comm  # noqa: F401  (the allreduce fusion that runs the backends below)
from sglang.srt.runtime_context import get_platform
from sglang.srt.utils import is_cuda, is_blackwell, is_sm120

_is_cuda = is_cuda()
_is_sm90_supported = _is_cuda and get_platform().is_sm90
_is_sm100_supported = _is_cuda and get_platform().is_sm100


def fusion_applies(batch_size):
    return (_is_sm90_supported or _is_sm100_supported) and batch_size <= 2048


def pick_backend(backend):
    if not (get_platform().is_sm90 or get_platform().is_sm100):
        raise ValueError("needs SM90 or SM10X")
    if backend == "auto" and (get_platform().is_sm120 or is_sm120()):
        return "trtllm"
    num_sms = 32 if is_blackwell() else 3
    return num_sms


def exact_capability():
    major, minor = torch.cuda.get_device_capability()
    if major == 12 and minor == 1:
        return "spark"
    if get_platform().device_sm in (100, 103):
        return "b200"
    return None
