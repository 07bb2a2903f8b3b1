import torch


def pick(backend):
    if backend == "auto" and torch.cuda.get_device_capability()[0] >= 9:  # gate: `backend == "auto"` and major >= 9
        return "fa3"
    return backend
