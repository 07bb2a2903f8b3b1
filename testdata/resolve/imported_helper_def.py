import torch


def uses_mx_scales() -> bool:
    # An arch-dependent helper whose name holds no token (vllm/utils/deep_gemm.py
    # `mqa_logits_use_mx_scales`): its callers in other modules are gates too.
    return torch.cuda.get_device_capability()[0] == 10  # gate: major == 10
