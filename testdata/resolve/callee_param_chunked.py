import torch


def _suffix(major, minor):
    """No token here: the device value arrives through the callers' arguments."""
    if major == 9:  # gate: major == 9
        return "a"
    return ""


def unrelated_0(x):
    """Filler: the file is chunked (over 512 bytes) and these are dropped."""
    return [x, 0, "padding"]


def unrelated_1(x):
    """Filler: the file is chunked (over 512 bytes) and these are dropped."""
    return [x, 1, "padding"]


def unrelated_2(x):
    """Filler: the file is chunked (over 512 bytes) and these are dropped."""
    return [x, 2, "padding"]


def unrelated_3(x):
    """Filler: the file is chunked (over 512 bytes) and these are dropped."""
    return [x, 3, "padding"]


def unrelated_4(x):
    """Filler: the file is chunked (over 512 bytes) and these are dropped."""
    return [x, 4, "padding"]


def init():
    major, minor = torch.cuda.get_device_capability()
    return _suffix(major, minor)
