from utils import get_device_sm


def routed(arch):
    return arch in (90, 100)  # gate(assumes arch is the device's): sm in {90, 100}


def sm():
    return get_device_sm()  # no-gate
