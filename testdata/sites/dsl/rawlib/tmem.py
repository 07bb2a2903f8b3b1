"""Thin wrappers of tcgen05 instructions through MLIR's nvvm dialect, in the shape of sglang
0.5.22's `kernels/ops/attention/cute_utils/_tcgen05.py` (written for gatefix's tests)."""

from cutlass._mlir.dialects import nvvm


def alloc(dst, num_columns):
    nvvm.tcgen05_alloc(dst, num_columns)


def mma(d_tmem, a_desc, b_desc, idesc):
    nvvm.tcgen05_mma(nvvm.Tcgen05MMAKind.F16, d_tmem, a_desc, b_desc, idesc)
