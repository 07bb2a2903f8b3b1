import cutlass.cute as cute
import cutlass.utils.blackwell_helpers as sm100_utils


class Sm100BlockScaledGemmKernel:
    def __call__(self, a, b):
        tiled_mma = sm100_utils.make_blockscaled_trivial_tiled_mma(a.dtype, b.dtype)
        return cute.gemm(tiled_mma, a, b)


def run_sm100(a, b):
    return Sm100BlockScaledGemmKernel()(a, b)
