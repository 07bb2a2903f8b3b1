import torch

from utils import is_cuda


def pick():
    if is_cuda():
        return "cuda"
    else:
        if torch.cuda.get_device_capability()[0] == 9:  # no-gate
            return "mi300"
    return "other"
