import torch


def stats(cap, n, dtype, version):
    x = len(cap)  # no-gate
    if n >= 9:  # no-gate
        x += 1
    if dtype == torch.bfloat16:  # no-gate
        x += 1
    if version >= 9:  # no-gate
        x += 1
    return x
