import torch

from .utils import device_support_pdl, pdl_on_hopper_only


def _launch(x, enable_pdl):
    return x


def run(x, enable_pdl=None):
    # The gate only turns programmatic dependent launch on: the hardware decides.
    if enable_pdl is None:
        enable_pdl = device_support_pdl(x.device)
    return _launch(x, enable_pdl)


def checked(x):
    # An early exit protects the code after it: more than a launch attribute.
    if not device_support_pdl(x.device):
        return None
    return _launch(x, True)


def mixed(x):
    # A compound test decides more than the feature.
    if device_support_pdl(x.device) and torch.cuda.get_device_capability()[0] == 10:
        return _launch(x, True)
    return x


def hopper(x):
    # Kept off where the hardware has the feature: for reasons the code does not say.
    return _launch(x, pdl_on_hopper_only(x.device))


def blackwell_only(x):
    # Under a gate that blocks sm_120: never reached there, so never called open.
    if torch.cuda.get_device_capability()[0] == 10:
        if device_support_pdl(x.device):
            return _launch(x, True)
    return x
