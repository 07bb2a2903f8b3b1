from backend import runtime
from backend import runtime as common


# Device helpers of a submodule the file imports from its package, called through the
# module's local name.
def build(device):
    arch = common._arch_for(device)
    if arch != "sm_107a":  # gate: not (major == 10 and minor == 7)
        raise ValueError("unsupported")
    return runtime._arch_for(device) == "sm_100a"  # gate: major == 10 and minor == 0
