"""A CuTe DSL kernel that drives the tensor memory through the wrappers of `tmem.py`
(written for gatefix's tests)."""

import cutlass.cute as cute

from rawlib import tmem


class ChunkPrefillKernel:
    @cute.kernel
    def kernel(self, a, b):
        tmem.alloc(a, 128)
        tmem.mma(a, a, b, 0)

    @staticmethod
    def compile(x):
        return cute.compile(ChunkPrefillKernel().kernel, x, x)


def chunk_prefill(x):
    return ChunkPrefillKernel.compile(x)(x, x)
