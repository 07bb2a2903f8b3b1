import cutlass.cute as cute
from cutlass.cute.nvgpu import warp


class Sm80GemmKernel:
    def __call__(self, a, b):
        return cute.gemm(warp.MmaF16BF16Op(a.dtype), a, b)


def run_sm80(a, b):
    return Sm80GemmKernel()(a, b)
