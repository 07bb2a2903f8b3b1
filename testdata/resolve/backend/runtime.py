# A backend's runtime module, imported by its package path from the fixtures
# `submodule_helper*.py` (flashinfer's cuDNN Frost backends: `from .. import runtime as
# common`, then `common._arch_for(device)`).
import torch


def _arch_for(device):
    major, minor = torch.cuda.get_device_capability(device)
    return f"sm_{major}{minor}a"


def _generation(device):
    return torch.cuda.get_device_capability(device)[0]


def describe(device):
    return str(device)
