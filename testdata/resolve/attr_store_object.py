from utils import get_device_capability


def configure(cfg):
    cfg.use_fp8 = get_device_capability()[0] >= 9  # gate: major >= 9
