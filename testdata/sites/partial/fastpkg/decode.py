"""A second module with helpers of the same names as `prefill.py` (written for gatefix's
tests): a call in each module reads its own."""

import torch


def _is_hopper_or_newer():
    major, _ = torch.cuda.get_device_capability()
    return major >= 9


class Decode:
    def __init__(self):
        self.supported = _is_hopper_or_newer()

    def _ensure_loaded(self):
        if not self.supported:
            raise RuntimeError("decode needs SM90 or newer")

    def run(self, x):
        self._ensure_loaded()
        return torch.matmul(x, x)
