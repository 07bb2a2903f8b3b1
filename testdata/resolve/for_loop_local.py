import torch


def count(devices):
    n = 0
    for d in devices:
        cap = torch.cuda.get_device_capability(d)
        if cap[0] >= 9:  # gate: major >= 9
            n += 1
    return n
