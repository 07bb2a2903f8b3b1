import torch

major, minor = torch.cuda.get_device_capability()
_SM = major * 10 + minor


class Layer:
    def __init__(self, dtype):
        self._fast = _SM >= 90 and dtype == torch.bfloat16  # gate: sm >= 90 and `dtype == torch.bfloat16`
