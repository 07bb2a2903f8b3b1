import torch


def fast():
    name, (major, minor) = "dev", torch.cuda.get_device_capability()
    return major >= 10  # gate: major >= 10
