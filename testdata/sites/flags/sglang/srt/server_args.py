"""Server arguments in the shape of sglang's (written for gatefix's flag-flow tests)."""

import os
from dataclasses import dataclass

from sglang.srt.utils import is_blackwell_supported, is_sm120_supported


@dataclass
class ServerArgs:
    enable_fusion: bool = False

    def adjust(self):
        if is_blackwell_supported():
            self.enable_fusion = True
        if is_sm120_supported():
            os.environ["SGL_FUSION_TRTLLM"] = "1"


_global_server_args = None


def get_global_server_args():
    return _global_server_args
