"""Two device flags, one name the start of the other: `fast` and `fast_path`."""

import torch

fast = torch.cuda.get_device_capability()[0] >= 9  # gate: major >= 9
fast_path = torch.cuda.get_device_capability()[0] >= 10  # gate: major >= 10
