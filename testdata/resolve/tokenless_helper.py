import torch


def fast(cap):
    return cap[0] >= 9  # gate: major >= 9


def choose():
    if fast(torch.cuda.get_device_capability()):  # gate: major >= 9
        return "fast"
    return "slow"
