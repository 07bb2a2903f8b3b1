from utils import get_device_sm


def run():
    fast = get_device_sm() >= 90  # gate: sm >= 90
    if fast:  # gate: sm >= 90
        return 1
    return 0
