from dataclasses import dataclass
from typing import ClassVar

import torch


@dataclass
class EngineConfig:
    # Fields: the constructor stores what it is given; the default is only one value.
    model: object = None
    enable_fusion: bool = False
    # Constants of the class, whatever the constructor is given.
    FUSION_MAJORS: ClassVar[tuple] = (9, 10)
    legacy = None

    def warn_turing(self):
        if self.model is not None and torch.cuda.get_device_capability() == (7, 5):  # gate: `self.model is not None` and (major, minor) == (7, 5)
            return "ieee"
        return None

    def fusion(self):
        if self.enable_fusion and torch.cuda.get_device_capability()[0] >= 9:  # gate: `EngineConfig.enable_fusion` and major >= 9
            return True
        return False

    def fusion_arch(self):
        if torch.cuda.get_device_capability()[0] in self.FUSION_MAJORS:  # gate: major in {9, 10}
            return True
        return False

    def legacy_path(self):
        # A plain class attribute no method stores: its value holds, the test is never true.
        if self.legacy is not None and torch.cuda.get_device_capability()[0] == 8:  # no-gate
            return True
        return False
