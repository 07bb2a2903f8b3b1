import torch

fast = lambda: torch.cuda.get_device_capability()[0] >= 9  # gate: major >= 9
