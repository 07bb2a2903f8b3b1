import torch


def fast():
    try:
        cap = torch.cuda.get_device_capability()
    except RuntimeError:
        cap = (0, 0)
    if cap[0] >= 9:  # gate: major >= 9
        return True
    return False
