"""A class with a check of the same name that derives from no base asking it, and a class
that asks its own check through self: neither makes the other's code the gated path."""

import torch

from kernpkg.lazy import mnnvl_allreduce


class Probe:
    @staticmethod
    def _supports_current_device():
        return torch.cuda.get_device_capability()[0] >= 9

    def apply(self, x):
        return mnnvl_allreduce(x)
