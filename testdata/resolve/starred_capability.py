import torch


# A capability spread into a helper's parameters (flashinfer's green_ctx:
# `get_sm_count_constraint(*get_compute_capability(dev))`).
def sm_count_constraint(hi: int, lo: int):
    if hi == 6:  # gate: major == 6
        return (1, 1)
    if hi >= 9:  # gate: major >= 9
        return (8, 8)
    raise ValueError(f"{hi}.{lo}")


def constraint(device):
    return sm_count_constraint(*torch.cuda.get_device_capability(device))


def _uses_sm100_layout(hi, lo):
    return hi == 10 and lo in (0, 3)  # gate: major == 10 and minor in {0, 3}


def compute(a):
    if _uses_sm100_layout(*torch.cuda.get_device_capability(a.device)):  # gate: major == 10 and minor in {0, 3}
        return 1
    return 0


def spread_local(device):
    cap = torch.cuda.get_device_capability(device)
    return _uses_sm100_layout(*cap)  # gate: major == 10 and minor in {0, 3}


def _minor_zero(hi, lo):
    return lo == 0  # gate: minor == 0


def minor_zero(device):
    return _minor_zero(*torch.cuda.get_device_capability(device))  # gate: minor == 0


# Another value spread is not the device's.
def pad(rows, cols):
    return rows == 6  # no-gate


def padded(shape):
    return pad(*shape)
