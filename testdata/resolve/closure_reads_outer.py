import torch


def outer():
    major = torch.cuda.get_device_capability()[0]

    def inner():
        return major >= 9  # gate: major >= 9

    return inner
