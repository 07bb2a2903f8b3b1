class CompilationContext:
    def get_nvcc_flags_list(self, supported_major_versions=None):
        return []


current_compilation_context = CompilationContext()

common_nvcc_flags = ["-DFLASHINFER_ENABLE_FP8"]
sm100a_nvcc_flags = ["-gencode=arch=compute_100a,code=sm_100a"] + common_nvcc_flags
sm120a_nvcc_flags = ["-gencode=arch=compute_120a,code=sm_120a"] + common_nvcc_flags


def gen_jit_spec(name, sources, extra_cuda_cflags=None):
    return (name, sources, extra_cuda_cflags)


class jit_env:  # flashinfer/jit/env.py's folder constants, as a namespace
    FLASHINFER_CSRC_DIR = None
