# Locals read through the module's semantic model (`gate::semantic`): which bindings reach a
# read, under which guards. Each function is one shape of control flow.
import torch

_FAST = None


def exclusive_arms(out_dtype=None, backend="auto"):
    """A binding in one arm of an `if` chain never reaches a read in a sibling arm."""
    major = torch.cuda.get_device_capability()[0]
    if backend == "xqa":
        if out_dtype is None:
            out_dtype = "fp8" if major >= 10 else "bf16"  # gate: major >= 10
        return out_dtype
    elif backend == "trtllm":
        # No gate: the device-dependent `out_dtype` of the `xqa` arm never reaches here.
        if out_dtype == "nvfp4":
            return 1
    return 0


def early_return(x):
    """After `if c: return`, the binding made under `c` cannot reach."""
    major = torch.cuda.get_device_capability()[0]
    kind = "generic"
    if major == 9:  # gate: major == 9
        kind = "hopper"
        return x
    # No gate: `kind = "hopper"` returned before it could reach this read.
    return kind == "hopper"


def global_store_read_back():
    """A store under `global` is what the same function reads next."""
    global _FAST
    _FAST = torch.cuda.get_device_capability()[0] >= 10  # gate: major >= 10
    if _FAST:  # gate: major >= 10
        return 1
    return 0


def try_body_wins(x):
    """The `try` body's binding is read after the statement; the handler's is the failure
    path."""
    try:
        cap = torch.cuda.get_device_capability()
    except RuntimeError:
        cap = (0, 0)
    return cap[0] >= 9  # gate: major >= 9


def loop_target_shadows(archs):
    """A loop target is not the device value a global of the same name might be."""
    for major in archs:
        # No gate: `major` is each element of `archs`, not a device value.
        if major >= 9:
            return True
    return False
