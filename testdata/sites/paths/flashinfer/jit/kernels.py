"""JIT specs (written for gatefix's verdict tests): one built for the device it runs on, one
with an arch list that leaves SM12x out."""

from .core import current_compilation_context, gen_jit_spec, jit_env


def gen_norm_module():
    # No arch list: nvcc builds it for the device's own arch.
    return gen_jit_spec("norm", [jit_env.FLASHINFER_CSRC_DIR / "norm.cu"])


def gen_sm100_module():
    return gen_jit_spec(
        "gemm_sm100",
        [jit_env.FLASHINFER_CSRC_DIR / "norm.cu"],
        extra_cuda_cflags=current_compilation_context.get_nvcc_flags_list(
            supported_major_versions=[10]
        ),
    )


def gen_bigtile_module():
    # No arch list; its launcher asks for a fixed amount of shared memory (bigtile.cu).
    return gen_jit_spec("bigtile", [jit_env.FLASHINFER_CSRC_DIR / "bigtile.cu"])
