import torch

from utils import is_hip


def pick():
    if is_hip():
        if torch.cuda.get_device_capability()[0] == 12:  # no-gate
            return "gfx12"
    return "cuda"
