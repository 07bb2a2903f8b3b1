from .core import sm100a_nvcc_flags, sm120a_nvcc_flags


def gen_gemm_sm100_module():
    return ["gemm_sm100.cu"], sm100a_nvcc_flags


def gen_gemm_sm120_module():
    return ["gemm_sm120.cu"], sm120a_nvcc_flags
