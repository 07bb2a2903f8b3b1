from utils import get_device_capability


def check():
    assert get_device_capability()[0] >= 9, "needs sm90"  # gate: major >= 9
