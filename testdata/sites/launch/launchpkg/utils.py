import torch


def device_support_pdl(device):
    major, _ = torch.cuda.get_device_capability(device)
    return major >= 9


def pdl_on_hopper_only(device):
    major, _ = torch.cuda.get_device_capability(device)
    return major == 9
