"""JIT generators, one per guard shape or check macro (written for gatefix's tests)."""

from .core import current_compilation_context, gen_jit_spec, jit_env


def gen_range_module():
    nvcc_flags = current_compilation_context.get_nvcc_flags_list(
        supported_major_versions=[9, 10, 11, 12]
    )
    return gen_jit_spec("range", [jit_env.FLASHINFER_CSRC_DIR / "range.cu"], extra_cuda_cflags=nvcc_flags)


def gen_feat_module():
    nvcc_flags = current_compilation_context.get_nvcc_flags_list(
        supported_major_versions=[9, 10, 11, 12]
    )
    return gen_jit_spec("feat", [jit_env.FLASHINFER_CSRC_DIR / "feat.cu"], extra_cuda_cflags=nvcc_flags)


def gen_chain_module():
    nvcc_flags = current_compilation_context.get_nvcc_flags_list(
        supported_major_versions=[9, 10, 11, 12]
    )
    return gen_jit_spec("chain", [jit_env.FLASHINFER_CSRC_DIR / "chain.cu"], extra_cuda_cflags=nvcc_flags)


def gen_nested_module():
    nvcc_flags = current_compilation_context.get_nvcc_flags_list(
        supported_major_versions=[9, 10, 11, 12]
    )
    return gen_jit_spec("nested", [jit_env.FLASHINFER_CSRC_DIR / "nested.cu"], extra_cuda_cflags=nvcc_flags)


def gen_trap_module():
    nvcc_flags = current_compilation_context.get_nvcc_flags_list(
        supported_major_versions=[9, 10, 11, 12]
    )
    return gen_jit_spec("trap", [jit_env.FLASHINFER_CSRC_DIR / "trap.cu"], extra_cuda_cflags=nvcc_flags)


def gen_unknown_module():
    nvcc_flags = current_compilation_context.get_nvcc_flags_list(
        supported_major_versions=[9, 10, 11, 12]
    )
    return gen_jit_spec("unknown", [jit_env.FLASHINFER_CSRC_DIR / "unknown.cu"], extra_cuda_cflags=nvcc_flags)


def gen_defined_module():
    nvcc_flags = current_compilation_context.get_nvcc_flags_list(
        supported_major_versions=[9, 10, 11, 12]
    )
    return gen_jit_spec("defined", [jit_env.FLASHINFER_CSRC_DIR / "unknown.cu"], extra_cuda_cflags=nvcc_flags + ["-DENABLE_FANCY"])


def gen_parts_module():
    nvcc_flags = current_compilation_context.get_nvcc_flags_list(
        supported_major_versions=[9, 10, 11, 12]
    )
    return gen_jit_spec("parts", [jit_env.FLASHINFER_CSRC_DIR / "parts.cu"], extra_cuda_cflags=nvcc_flags)


def gen_icheck_module():
    nvcc_flags = current_compilation_context.get_nvcc_flags_list(
        supported_major_versions=[9, 10, 11, 12]
    )
    return gen_jit_spec("icheck", [jit_env.FLASHINFER_CSRC_DIR / "icheck.cu"], extra_cuda_cflags=nvcc_flags)


def gen_icheck_eq_module():
    nvcc_flags = current_compilation_context.get_nvcc_flags_list(
        supported_major_versions=[9, 10, 11, 12]
    )
    return gen_jit_spec("icheck_eq", [jit_env.FLASHINFER_CSRC_DIR / "icheck_eq.cu"], extra_cuda_cflags=nvcc_flags)


def gen_icheck_cmp_module():
    nvcc_flags = current_compilation_context.get_nvcc_flags_list(
        supported_major_versions=[9, 10, 11, 12]
    )
    return gen_jit_spec("icheck_cmp", [jit_env.FLASHINFER_CSRC_DIR / "icheck_cmp.cu"], extra_cuda_cflags=nvcc_flags)


def gen_flashinfer_check_module():
    nvcc_flags = current_compilation_context.get_nvcc_flags_list(
        supported_major_versions=[9, 10, 11, 12]
    )
    return gen_jit_spec("flashinfer_check", [jit_env.FLASHINFER_CSRC_DIR / "flashinfer_check.cu"], extra_cuda_cflags=nvcc_flags)


def gen_tllm_check_module():
    nvcc_flags = current_compilation_context.get_nvcc_flags_list(
        supported_major_versions=[9, 10, 11, 12]
    )
    return gen_jit_spec("tllm_check", [jit_env.FLASHINFER_CSRC_DIR / "tllm_check.cu"], extra_cuda_cflags=nvcc_flags)


def gen_if_throw_module():
    nvcc_flags = current_compilation_context.get_nvcc_flags_list(
        supported_major_versions=[9, 10, 11, 12]
    )
    return gen_jit_spec("if_throw", [jit_env.FLASHINFER_CSRC_DIR / "if_throw.cu"], extra_cuda_cflags=nvcc_flags)


def gen_missing_sources_module():
    nvcc_flags = current_compilation_context.get_nvcc_flags_list(
        supported_major_versions=[9, 10, 11, 12]
    )
    return gen_jit_spec("missing_sources", [jit_env.FLASHINFER_CSRC_DIR / "not_there.cu"], extra_cuda_cflags=nvcc_flags)


def gen_named_list_module():
    nvcc_flags = current_compilation_context.get_nvcc_flags_list(
        supported_major_versions=[9, 10, 11, 12]
    )
    sources = [jit_env.FLASHINFER_CSRC_DIR / "range.cu"]
    sources.append(jit_env.FLASHINFER_CSRC_DIR / "parts.cu")
    return gen_jit_spec("named_list", sources, extra_cuda_cflags=nvcc_flags)


def gen_smem_module():
    nvcc_flags = current_compilation_context.get_nvcc_flags_list(
        supported_major_versions=[9, 10, 11, 12]
    )
    return gen_jit_spec("smem", [jit_env.FLASHINFER_CSRC_DIR / "smem.cu"], extra_cuda_cflags=nvcc_flags)


def gen_ptx_module():
    nvcc_flags = current_compilation_context.get_nvcc_flags_list(
        supported_major_versions=[9, 10, 11, 12]
    )
    return gen_jit_spec("ptx", [jit_env.FLASHINFER_CSRC_DIR / "ptx.cu"], extra_cuda_cflags=nvcc_flags)
