import torch


def fast():
    p = torch.cuda.get_device_properties(0)
    sm = p.major * 10 + p.minor
    return sm >= 90  # gate: sm >= 90
