from utils import get_device_sm


def family():
    sm = get_device_sm()
    major = sm // 10
    if major == 12:  # gate: major == 12
        return "consumer"
    return "dc"
