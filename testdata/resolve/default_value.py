import torch


def run(x, fast=torch.cuda.get_device_capability()[0] >= 9):  # gate: major >= 9
    return x if fast else None
