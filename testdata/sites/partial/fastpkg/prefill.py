"""A kernel loaded on first use behind a check that raises, in sglang 0.5.22's CuTe DSL GDN
shape (`gdn_cutedsl.py`; written for gatefix's tests)."""

import torch


def _is_hopper_or_newer():
    major, _ = torch.cuda.get_device_capability()
    return major >= 9


class Prefill:
    def __init__(self):
        self.supported = _is_hopper_or_newer()
        self._fn = None

    def _ensure_loaded(self):
        if not self.supported:
            major = torch.cuda.get_device_capability()[0]
            raise RuntimeError(f"prefill needs SM90 or newer, got SM{major}")
        from flashinfer.comm import trtllm_allreduce_fusion

        self._fn = trtllm_allreduce_fusion

    def run(self, x):
        self._ensure_loaded()
        return self._fn(x)
