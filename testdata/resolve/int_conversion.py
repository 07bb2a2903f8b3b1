import torch


def device_arch():
    major, minor = torch.cuda.get_device_capability()
    return major * 10 + int(minor)  # no-gate


def is_sm120_family():
    return device_arch() // 10 == 12  # gate: major == 12


def minor_is_zero():
    major, minor = torch.cuda.get_device_capability()
    return int(minor) == 0  # gate: minor == 0


def unrelated(x):
    return int(x) == 0  # no-gate
