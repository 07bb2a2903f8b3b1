from backend import runtime as common


# The same without an arch token in the file: found by the importers' rounds.
def pick(device):
    if common._generation(device) >= 10:  # gate: major >= 10
        return "wide"
    generation = common._generation(device)
    if generation == 9:  # gate: major == 9
        return "narrow"
    return common.describe(device) == "cuda:0"  # no-gate
