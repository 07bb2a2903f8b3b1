import torch


def choose():
    if (major := torch.cuda.get_device_capability()[0]) >= 9:  # gate: major >= 9
        return major
    return 0
