"""A device flag read first by a check that raises for one backend only, then by the branch
that runs the kernel (written for gatefix's flag-flow tests). The check exits early only where
`backend == "mnnvl"`: for the other backends the code after it runs on every GPU, so that code
is not what the gate decides; the branch that reads the flag again is."""

import torch

import flashinfer.comm
from flashinfer.jit.comm import gen_trtllm_mnnvl_comm_module


def mnnvl_launch(x):
    return gen_trtllm_mnnvl_comm_module(), x


def dispatch(x, backend):
    eligible = torch.cuda.get_device_capability()[0] == 10
    if backend == "mnnvl" and not eligible:
        raise ValueError("backend='mnnvl' needs SM100")
    if eligible and backend != "trtllm":
        return mnnvl_launch(x)
    return flashinfer.comm.trtllm_allreduce_fusion(x)


def validate(x, backend):
    supported = torch.cuda.get_device_capability()[0] == 9
    if backend == "fa3" and not supported:
        raise ValueError("backend='fa3' needs SM90")
    return flashinfer.comm.trtllm_allreduce_fusion(x)
