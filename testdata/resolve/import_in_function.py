def choose():
    from torch.cuda import get_device_capability as gdc

    if gdc()[0] >= 9:  # gate: major >= 9
        return 1
    return 0
