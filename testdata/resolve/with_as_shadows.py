import torch

from ctx import opened


def read(path):
    cap = torch.cuda.get_device_capability()
    with opened(path) as cap:
        if cap[0] >= 9:  # no-gate
            return 1
    return 0
