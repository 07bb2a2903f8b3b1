"""JIT specs of the communication kernels (written for gatefix's verdict tests)."""

from .core import current_compilation_context, gen_jit_spec, jit_env


def gen_trtllm_comm_module():
    return gen_jit_spec("trtllm_comm", [jit_env.FLASHINFER_CSRC_DIR / "trtllm_allreduce.cu"], extra_cuda_cflags=current_compilation_context.get_nvcc_flags_list(
        supported_major_versions=[9, 10, 12]
    ))


def gen_trtllm_mnnvl_comm_module():
    return gen_jit_spec("trtllm_mnnvl_comm", [jit_env.FLASHINFER_CSRC_DIR / "trtllm_allreduce.cu"], extra_cuda_cflags=current_compilation_context.get_nvcc_flags_list(
        supported_major_versions=[9, 10]
    ))
