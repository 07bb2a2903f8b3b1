import torch


def pick(dev):
    props = torch.cuda.get_device_properties(dev)
    if props.major == 9:  # gate: major == 9
        return "hopper"
    return "other"
