import torch

_MAJOR, _MINOR = torch.cuda.get_device_capability()


def fast():
    return _MAJOR >= 9  # gate: major >= 9
