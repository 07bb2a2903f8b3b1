import torch


def launch(x, enable_pdl=None):
    # A device test as one value of a conditional expression is a decision of its own.
    enable_pdl = torch.cuda.get_device_capability()[0] >= 9 if enable_pdl is None else enable_pdl  # gate: major >= 9
    return run(x, enable_pdl)


def run(x, enable_pdl):
    return x
