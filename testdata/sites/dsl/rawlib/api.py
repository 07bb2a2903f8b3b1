"""The gate in front of the raw tcgen05 kernel, admitting every major from 10 as sglang
0.5.22's `_is_blackwell` did (written for gatefix's tests)."""

import torch

from rawlib.prefill import chunk_prefill


def prefill(x):
    major, _ = torch.cuda.get_device_capability()
    if major >= 10:
        return chunk_prefill(x)
    return x
