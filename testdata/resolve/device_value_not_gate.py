import torch


def info():
    cap = torch.cuda.get_device_capability()  # no-gate
    major, minor = cap  # no-gate
    print(torch.cuda.get_device_capability())  # no-gate
    return major
