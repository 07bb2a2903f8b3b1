import torch

_SUPPORTED = {(9, 0), (10, 0)}


def supported():
    return torch.cuda.get_device_capability() in _SUPPORTED  # gate: (major, minor) in {(9, 0), (10, 0)}
