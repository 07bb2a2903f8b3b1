import torch


# Same name as sglang.srt.utils.is_blackwell, different meaning: excludes SM120.
def is_blackwell():
    return torch.cuda.get_device_capability()[0] == 10


def use_fast_path():
    if is_blackwell():
        return True
    return False
