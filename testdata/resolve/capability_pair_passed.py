import functools

import torch

_TAIL_CAPABILITIES = frozenset({(9, 0), (10, 0), (10, 3)})


# A helper returns the capability written out as its two numbers; the functions it is passed
# to test their parameter, which is the device's capability (flashinfer's cake_sampling).
@functools.cache
def _device_capability(index):
    cc = torch.cuda.get_device_capability(index)
    return int(cc[0]), int(cc[1])


def _tail_for_capability(capability):
    return (int(capability[0]), int(capability[1])) in _TAIL_CAPABILITIES  # gate: (major, minor) in {(9, 0), (10, 0), (10, 3)}


def _wide(capability):
    if capability is None:
        return False
    return capability >= (12, 0)  # gate: (major, minor) >= (12, 0)


def tail_enabled(index):
    return _tail_for_capability(_device_capability(index))  # gate: (major, minor) in {(9, 0), (10, 0), (10, 3)}


def wide(index):
    return _wide(_device_capability(index))  # gate: (major, minor) >= (12, 0)


# A pair of other numbers is no capability.
def _sized(shape):
    return shape >= (12, 0)  # no-gate


def sized(rows, cols):
    return _sized((int(rows), int(cols)))
