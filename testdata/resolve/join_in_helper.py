import torch


def mode():
    cap = torch.cuda.get_device_capability()
    result = "slow"
    if cap[0] >= 10:  # gate: major >= 10
        result = "fast"
    return result == "fast"  # gate: major >= 10
