import torch

try:
    import torch.distributed._symmetric_memory as symm_mem
except ImportError:
    # The failure path: the `try` body's binding is the one that holds.
    symm_mem = None


def _multicast(device):
    if symm_mem is None:
        return False
    return symm_mem.has_multicast_support(device)


def can_use_mnnvl(device):
    # Behind a helper that tests the optional import first (vllm custom_all_reduce.py).
    ok = torch.cuda.get_device_capability()[0] >= 10 and _multicast(device)  # gate: major >= 10 and `*`
    return ok  # gate: major >= 10 and `*`
