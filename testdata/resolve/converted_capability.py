import torch


# A capability converted element by element is still the capability: a generator or a
# comprehension that only applies `int`, or `map(int, ...)` (flashinfer's JIT targets).
def target(device):
    capability = tuple(int(value) for value in torch.cuda.get_device_capability(device))
    if capability == (10, 0):  # gate: (major, minor) == (10, 0)
        return "sm100a"
    if capability == (10, 3):  # gate: (major, minor) == (10, 3)
        return "sm103a"
    raise RuntimeError("unsupported")


def mapped(device):
    cap = tuple(map(int, torch.cuda.get_device_capability(device)))
    return cap == (12, 0)  # gate: (major, minor) == (12, 0)


def listed():
    values = [int(v) for v in torch.cuda.get_device_capability()]
    return values[0] >= 9  # gate: major >= 9


def unconverted():
    cap = torch.cuda.get_device_capability()
    return tuple(v for v in cap) in {(10, 0), (10, 3)}  # gate: (major, minor) in {(10, 0), (10, 3)}


# Another loop body is no conversion of the capability.
def scaled(sizes):
    doubled = tuple(2 * v for v in sizes)
    return doubled == (10, 0)  # no-gate


def filtered():
    majors = [v for v in torch.cuda.get_device_capability() if v > 0]
    return majors == [9]  # no-gate
