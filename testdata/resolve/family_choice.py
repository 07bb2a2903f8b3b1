from utils import get_device_capability


def family():
    major = get_device_capability()[0]
    if major == 10:  # gate: major == 10
        return "blackwell"
    return "other"


def use():
    if family() == "blackwell":  # gate: major == 10
        return 1
    return 0
