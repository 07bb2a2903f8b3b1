"""Gated paths whose kernels gatefix reads whole or in part (written for gatefix's tests)."""

import torch

from flashinfer.comm import trtllm_allreduce_fusion


def whole(x):
    # Every call is followed: the JIT kernel builds for sm_120, and the tensor method is
    # torch's own.
    if torch.cuda.get_device_capability()[0] >= 9:
        x = x.contiguous()
        return trtllm_allreduce_fusion(x)
    return x


def partial(x, runner):
    # `runner.launch` is a method two classes of the site define: the search cannot tell
    # which runs, and either may launch a kernel sm_120 lacks.
    if torch.cuda.get_device_capability()[0] >= 9:
        y = trtllm_allreduce_fusion(x)
        return runner.launch(y)
    return x
