import torch


def fast(dev):
    return torch.cuda.get_device_capability(device=dev)[0] >= 9  # gate: major >= 9
