"""Backend choices behind arch gates, one per verdict (written for gatefix's verdict tests)."""

import flashinfer.comm

from sglang.srt.utils import (
    is_blackwell_supported,
    is_sm90_supported,
    is_sm100_supported,
    is_sm120_supported,
)


def fused_allreduce(x):
    # Two hops to the kernel: flashinfer.comm -> flashinfer.jit.gen_trtllm_comm_module.
    return flashinfer.comm.trtllm_allreduce_fusion(x)


def resolve_backend(x):
    if is_sm100_supported():
        return "mnnvl"
    if is_sm90_supported():
        return "trtllm"
    if is_blackwell_supported():
        return "mnnvl"
    if is_sm120_supported():
        return "trtllm"
    return None


def run(x):
    if is_sm120_supported():
        return fused_allreduce(x)
    if is_sm100_supported():
        return something_else(x)
    return x


def something_else(x):
    return x


def checked_allreduce(x):
    if not (is_sm90_supported() or is_sm100_supported()):
        raise ValueError("needs SM90 or SM10X")
    return fused_allreduce(x)
