import torch

major, minor = torch.cuda.get_device_capability()  # no-gate
_SM = major * 10 + minor  # no-gate
FAST = _SM >= 90  # gate: sm >= 90
