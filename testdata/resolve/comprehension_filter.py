import torch


def kernels(names):
    return [n for n in names if torch.cuda.get_device_capability()[0] >= 9]  # gate: major >= 9
