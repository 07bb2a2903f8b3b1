from utils import get_device_sm


def hopper():
    return 90 <= get_device_sm() < 100  # gate: sm >= 90 and sm < 100
