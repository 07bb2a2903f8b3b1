import functools

import torch


@functools.cache
def get_compute_capability(device):
    props = torch.cuda.get_device_properties(device)
    return props.major, props.minor


def supported_compute_capability(ccs):
    def wrap(fn):
        fn._supported_ccs = set(ccs)
        return fn

    return wrap


def is_sm120a_supported(device):
    major, minor = get_compute_capability(device)
    return major == 12 and minor == 0


_SUPPORTED_COMPUTE_CAPABILITIES = {(10, 0), (10, 3)}


def check_sm100(device):
    if get_compute_capability(device) not in _SUPPORTED_COMPUTE_CAPABILITIES:
        raise RuntimeError("SM100 only")


@supported_compute_capability([90, 100])
def _mixed_comm_check(x):
    return True
