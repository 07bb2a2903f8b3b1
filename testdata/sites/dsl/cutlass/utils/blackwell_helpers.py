from cutlass.cute.nvgpu.tcgen05 import (
    MmaF16BF16Op,
    MmaMXF4NVF4Op,
)


def make_blockscaled_trivial_tiled_mma(dtype, sf_dtype):
    return MmaMXF4NVF4Op(dtype, sf_dtype)


def make_trivial_tiled_mma(dtype):
    return MmaF16BF16Op(dtype)
