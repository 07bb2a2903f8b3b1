import torch


def is_sm100_supported():
    major, _ = torch.cuda.get_device_capability()
    return major == 10


def pick_backend():
    # Admits only Blackwell datacenter parts (compute capability 10.x).
    if is_sm100_supported():
        return "trtllm"
    if torch.cuda.get_device_capability()[0] == 12:
        return "cutlass"
    return "torch"
