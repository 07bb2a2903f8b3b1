import torch


def count():
    major = torch.cuda.get_device_capability()[0]
    total = 0
    for major in range(3):
        if major >= 9:  # no-gate
            total += 1
    return total
