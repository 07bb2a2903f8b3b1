from utils import get_device_sm

_ROUTED_ARCHS = (90, 100)


def supported(arch: int) -> bool:
    return arch in _ROUTED_ARCHS  # gate: sm in {90, 100}


def pick():
    if supported(get_device_sm()):  # gate: sm in {90, 100}
        return "routed"
    return "plain"
