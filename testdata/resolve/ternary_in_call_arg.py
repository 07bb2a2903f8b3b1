from kernels import launch
from utils import get_device_sm


def run(x):
    launch(x, 256 if get_device_sm() >= 100 else 128)  # gate: sm >= 100
