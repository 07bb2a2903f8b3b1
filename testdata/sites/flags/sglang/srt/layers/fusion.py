"""Reads of the flags that server_args sets (written for gatefix's flag-flow tests)."""

import os

import flashinfer.comm
from flashinfer.jit.comm import gen_trtllm_mnnvl_comm_module

from sglang.srt.server_args import get_global_server_args
from sglang.srt.utils import is_sm100_supported, is_sm120_supported

_use_mnnvl = is_sm100_supported()


def mnnvl_fusion(x):
    return gen_trtllm_mnnvl_comm_module(), x


def fuse(x):
    if get_global_server_args().enable_fusion:
        return mnnvl_fusion(x)
    return x


def fuse_guarded(x):
    if get_global_server_args().enable_fusion and is_sm100_supported():
        return flashinfer.comm.trtllm_allreduce_fusion(x)
    return x


def fuse_from_env(x):
    if os.environ.get("SGL_FUSION_TRTLLM", "0") == "1":
        return flashinfer.comm.trtllm_allreduce_fusion(x)
    return x


def fuse_cached(x):
    if _use_mnnvl:
        return mnnvl_fusion(x)
    return x


class Runner:
    def run(self, x):
        if is_sm120_supported():
            return self._launch(x)
        return x

    def _launch(self, x):
        return flashinfer.comm.trtllm_allreduce_fusion(x)
