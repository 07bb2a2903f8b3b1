import torch


def ok(cc):
    return cc >= (9, 0)  # gate(assumes cc is the device's): (major, minor) >= (9, 0)


def probe():
    return torch.cuda.get_device_capability()  # no-gate
