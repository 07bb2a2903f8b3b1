import torch


def pick():
    if torch.version.hip:
        if torch.cuda.get_device_capability()[0] == 9:  # no-gate
            return "gfx9"
    return "cuda"
