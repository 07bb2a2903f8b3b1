import torch


def pick():
    match torch.cuda.get_device_capability()[0]:
        case 9:  # gate: major == 9
            return "hopper"
        case 10:  # gate: major == 10
            return "blackwell"
        case _:
            return "other"
