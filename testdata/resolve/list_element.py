from utils import get_device_sm

FLAGS = [get_device_sm() >= 90, False]  # gate: sm >= 90
