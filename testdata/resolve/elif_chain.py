import torch


def pick():
    cap = torch.cuda.get_device_capability()
    if cap[0] == 9:  # gate: major == 9
        return "hopper"
    elif cap[0] == 10:  # gate: major == 10
        return "blackwell"
    return "other"
