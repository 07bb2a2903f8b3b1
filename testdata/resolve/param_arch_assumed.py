from utils import get_device_sm


def routed(arch):
    return arch in (90, 100)  # gate(assumes arch): sm in {90, 100}


def sm():
    return get_device_sm()  # no-gate
