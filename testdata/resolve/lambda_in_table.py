from utils import get_device_sm

CHECKS = {"pdl": lambda: get_device_sm() >= 90}  # gate: sm >= 90
