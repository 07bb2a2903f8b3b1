from .core import current_compilation_context, gen_jit_spec, jit_env

_SUPPORTED_MAJOR_VERSIONS = [9, 10, 12]


def gen_trtllm_comm_module():
    nvcc_flags = current_compilation_context.get_nvcc_flags_list(
        supported_major_versions=[9, 10]
    )
    return gen_jit_spec("trtllm_comm", [jit_env.FLASHINFER_CSRC_DIR / "trtllm_allreduce.cu"], extra_cuda_cflags=nvcc_flags)


def gen_named_module():
    return current_compilation_context.get_nvcc_flags_list(
        supported_major_versions=_SUPPORTED_MAJOR_VERSIONS
    )


def gen_any_module():
    return current_compilation_context.get_nvcc_flags_list()
