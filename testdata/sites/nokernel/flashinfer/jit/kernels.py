"""A JIT spec built for the device it runs on (written for gatefix's verdict tests)."""

from .core import gen_jit_spec, jit_env


def gen_norm_module():
    return gen_jit_spec("norm", [jit_env.FLASHINFER_CSRC_DIR / "norm.cu"])
