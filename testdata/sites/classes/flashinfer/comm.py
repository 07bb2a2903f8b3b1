"""The allreduce entry points: each builds its JIT module first."""

from flashinfer.jit import gen_trtllm_comm_module, gen_trtllm_mnnvl_comm_module


def trtllm_allreduce_fusion(x):
    module = gen_trtllm_comm_module()
    return module, x


def trtllm_mnnvl_allreduce(x):
    module = gen_trtllm_mnnvl_comm_module()
    return module, x
