from utils import get_device_sm


def check():
    sm_version = get_device_sm()
    if sm_version < 90:  # gate: sm < 90
        raise RuntimeError("needs sm90")
