import torch


def fast():
    return torch.cuda.get_device_capability() >= (9, 0)  # gate: (major, minor) >= (9, 0)
