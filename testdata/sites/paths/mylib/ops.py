"""Gated paths that end at kernels of every kind but a native library (written for gatefix's
verdict tests; see tests/verdicts_cli.rs `paths_to_triton_and_generic_jit_kernels`)."""

import torch
import triton
import triton.language as tl

from flashinfer.jit.kernels import gen_bigtile_module, gen_norm_module, gen_sm100_module


@triton.jit
def _scale_kernel(x_ptr, n, BLOCK: tl.constexpr):
    pass


@triton.autotune(
    configs=[triton.Config({"BLOCK": 128})],
    key=["n"],
)
@triton.jit
def _tuned_kernel(x_ptr, n, BLOCK: tl.constexpr):
    pass


def scale(x):
    if torch.cuda.get_device_capability()[0] >= 9:
        _scale_kernel[(1,)](x, x.numel(), BLOCK=128)
    return x


def tuned(x):
    block = 64
    if torch.cuda.get_device_capability()[0] == 9:
        block = 128
    _tuned_kernel[(1,)](x, x.numel())
    return block


def run_norm(x, backend):
    if backend == "sm100":
        return gen_sm100_module().run(x)
    return gen_norm_module().run(x)


def norm(x, backend):
    if torch.cuda.get_device_capability()[0] >= 10:
        return run_norm(x, backend)
    return x


def gemm(x):
    if torch.cuda.get_device_capability()[0] >= 10:
        return gen_sm100_module().run(x)
    return x


def tiles(x):
    arch = torch.cuda.get_device_capability()[0]
    tile = 64
    if arch >= 9:
        tile = 128
    if arch == 10:
        return gen_sm100_module().run(x, tile)
    return gen_norm_module().run(x, tile)


def check_supported(x):
    if torch.cuda.get_device_capability()[0] not in (10, 12):
        return False
    return True


def checked(x):
    if not check_supported(x):
        raise RuntimeError("unsupported")
    return _scale_kernel[(1,)](x, 1, BLOCK=1)


def nested(x):
    major = torch.cuda.get_device_capability()[0]
    if major == 10:
        if major >= 9:
            return _scale_kernel[(1,)](x, 1, BLOCK=1)
        if major != 12:
            return gen_sm100_module().run(x)
    return x


def big_tiles(x):
    # The module's launcher asks for 200 KiB of shared memory per block: sm_90 has it,
    # sm_120 (99 KiB) does not, so opening the gate there is not advised.
    if torch.cuda.get_device_capability()[0] == 10:
        return gen_bigtile_module().run(x)
    return x


def tiles_by_class(x, small):
    # A tile size, then the module a local names, called under `elif arch == 10`: the module
    # runs only where that gate holds, so it is off the path at sm_90 and sm_120.
    arch = torch.cuda.get_device_capability()[0]
    tile = 64
    if arch >= 9:
        tile = 128
    if x.dense:
        return x
    elif arch == 10:
        build = gen_sm100_module
        return build().run(x, tile)
    return gen_norm_module().run(x, tile)
