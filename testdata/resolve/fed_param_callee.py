# Parameters without an arch token that a caller in another module feeds a device flag
# (fed_param_caller.py; vllm vllm_flash_attn/cute/interface.py `_flash_attn_fwd`, called by
# flash_attn_interface.py with `fp8_kv_dequant=fa4_fp8_kv_dequant`). The caller's flag
# reaches the class too, through `__init__` (flash_fwd_sm90.py `self.fp8_kv_dequant`).
import torch


class ForwardKernel:
    def __init__(self, head_dim, dequant=False):
        self.head_dim = head_dim
        self.dequant = dequant  # gate: `k.dtype == torch.float8_e4m3fn` and major == 9

    def run(self, q):
        if self.dequant:  # gate: `k.dtype == torch.float8_e4m3fn` and major == 9
            return q * 2
        return q


def attn_fwd(q, k, v, fp8_kv_dequant: bool = False, softcap=0.0):
    arch = torch.cuda.get_device_capability()[0] * 10
    if fp8_kv_dequant:  # gate: `k.dtype == torch.float8_e4m3fn` and major == 9
        assert arch // 10 == 9  # gate: major == 9
    is_fp8 = v.dtype == torch.float8_e4m3fn and not fp8_kv_dequant  # gate: `v.dtype == torch.float8_e4m3fn` and not (`k.dtype == torch.float8_e4m3fn` and major == 9)
    # Nobody passes a device value for `softcap`: no gate.
    if softcap > 0:  # no-gate
        q = q / softcap
    kernel = ForwardKernel(128, dequant=fp8_kv_dequant)
    return kernel.run(q) if is_fp8 else q  # gate: `v.dtype == torch.float8_e4m3fn` and not (`k.dtype == torch.float8_e4m3fn` and major == 9)
