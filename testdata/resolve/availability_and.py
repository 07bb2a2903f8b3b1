import torch


def fast():
    if torch.cuda.is_available() and torch.cuda.get_device_capability()[0] >= 9:  # gate: major >= 9
        return True
    return False
