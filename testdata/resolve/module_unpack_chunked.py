import torch

major, minor = torch.cuda.get_device_capability()  # no-gate


def unrelated_0(x):
    """Filler: the file is over 512 bytes, so it is chunked."""
    return [x, 0, "padding"]


def unrelated_1(x):
    """Filler: the file is over 512 bytes, so it is chunked."""
    return [x, 1, "padding"]


def unrelated_2(x):
    """Filler: the file is over 512 bytes, so it is chunked."""
    return [x, 2, "padding"]


def unrelated_3(x):
    """Filler: the file is over 512 bytes, so it is chunked."""
    return [x, 3, "padding"]


def unrelated_4(x):
    """Filler: the file is over 512 bytes, so it is chunked."""
    return [x, 4, "padding"]


def fast():
    return (major, minor) >= (9, 0)  # gate: (major, minor) >= (9, 0)
