"""An API whose backends each have a checker with a capability decorator (written for
gatefix's verdict tests)."""

from .jit.kernels import gen_norm_module, gen_sm100_module
from .utils import backend_requirement, supported_compute_capability


@supported_compute_capability([100, 103])
def _sm100_requirement(x, backend):
    return True


@supported_compute_capability([90, 100, 120])
def _generic_requirement(x, backend):
    return True


@supported_compute_capability([100, 120])
def _common_check(x, backend):
    return True


@backend_requirement(
    {"sm100": _sm100_requirement, "generic": _generic_requirement},
    common_check=_common_check,
)
def mm(x, backend="generic"):
    if backend == "sm100":
        return gen_sm100_module().run(x)
    return gen_norm_module().run(x)
