import torch

# café in Latin-1, not UTF-8
LABEL = "été"


def hopper_only():
    return torch.cuda.get_device_capability()[0] == 9
