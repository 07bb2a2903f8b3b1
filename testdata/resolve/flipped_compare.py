import torch


def fast():
    return 9 <= torch.cuda.get_device_capability()[0]  # gate: major >= 9
