from utils import get_device_sm


def configure(opts):
    opts["pdl"] = get_device_sm() >= 90  # gate: sm >= 90
