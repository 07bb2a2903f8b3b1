import torch


def fast():
    major, minor = torch.cuda.get_device_capability()
    sm = major * 10 + minor
    if sm >= 100:  # gate: sm >= 100
        return True
    return False
