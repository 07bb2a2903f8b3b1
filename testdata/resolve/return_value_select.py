from utils import get_device_sm


def pick():
    return "fa3" if get_device_sm() >= 90 else "fa2"  # gate: sm >= 90
