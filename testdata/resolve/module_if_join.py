import torch

if torch.cuda.get_device_capability()[0] >= 10:  # gate: major >= 10
    MODE = "fast"
else:
    MODE = "slow"


def choose():
    if MODE == "fast":  # gate: major >= 10
        return 1
    return 0
