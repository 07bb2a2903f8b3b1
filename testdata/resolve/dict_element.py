from utils import get_device_capability

CFG = {"fast": get_device_capability()[0] >= 9, "name": "x"}  # gate: major >= 9
