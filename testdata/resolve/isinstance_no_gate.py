import torch


def norm(cap):
    if isinstance(cap, tuple):  # no-gate
        return cap
    return torch.cuda.get_device_capability()  # no-gate
