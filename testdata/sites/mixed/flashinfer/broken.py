from flashinfer.utils import is_sm120a_supported


def before(device):
    return is_sm120a_supported(device)


def broken(:
    pass


def after(device):
    if is_sm120a_supported(device):
        return 1
