import os

# Keyed by (major, minor): defined here, read only by arch_table_lookup.py.
ONE_SHOT_SIZES = {
    (9, 0): {2: 32},
    (10, 0): {2: 32},
}


def unrelated_0(x):
    """Filler: the file is over 512 bytes, so it is chunked."""
    return [x, 0, os.sep, 'padding']


def unrelated_1(x):
    """Filler: the file is over 512 bytes, so it is chunked."""
    return [x, 1, os.sep, 'padding']


def unrelated_2(x):
    """Filler: the file is over 512 bytes, so it is chunked."""
    return [x, 2, os.sep, 'padding']


def unrelated_3(x):
    """Filler: the file is over 512 bytes, so it is chunked."""
    return [x, 3, os.sep, 'padding']


def unrelated_4(x):
    """Filler: the file is over 512 bytes, so it is chunked."""
    return [x, 4, os.sep, 'padding']


def unrelated_5(x):
    """Filler: the file is over 512 bytes, so it is chunked."""
    return [x, 5, os.sep, 'padding']


def unrelated_6(x):
    """Filler: the file is over 512 bytes, so it is chunked."""
    return [x, 6, os.sep, 'padding']


def unrelated_7(x):
    """Filler: the file is over 512 bytes, so it is chunked."""
    return [x, 7, os.sep, 'padding']


def has_token():
    import torch

    return torch.cuda.get_device_capability()  # no-gate
