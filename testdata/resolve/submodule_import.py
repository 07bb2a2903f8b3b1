import backend.runtime
import backend.runtime as rt


# A submodule imported by its dotted path, its device helpers read through the alias or the
# path (no arch token in the file: found by the importers' rounds).
def pick(device):
    if rt._generation(device) >= 10:  # gate: major >= 10
        return "wide"
    if backend.runtime._generation(device) == 9:  # gate: major == 9
        return "narrow"
    return rt.describe(device) == "cuda:0"  # no-gate
