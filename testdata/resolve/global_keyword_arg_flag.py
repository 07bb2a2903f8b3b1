from kernels import launch
from utils import get_device_sm

_SM = get_device_sm()


def run(x):
    return launch(x, use_pdl=_SM >= 90, block=128)  # gate: sm >= 90
