class CompilationContext:
    def get_nvcc_flags_list(self, supported_major_versions=None):
        return []


current_compilation_context = CompilationContext()


def gen_jit_spec(name, sources, extra_cuda_cflags=None):
    return (name, sources, extra_cuda_cflags)


class jit_env:  # flashinfer/jit/env.py's folder constants, as a namespace
    FLASHINFER_CSRC_DIR = None
