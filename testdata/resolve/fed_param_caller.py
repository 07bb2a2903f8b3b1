import torch


def varlen(q, k, v, fa_version=4):
    if fa_version == 4:
        # Imported where it is used, as vllm's flash_attn_interface.py does.
        from fed_param_callee import attn_fwd

        # A comment after the `(` is not the expression.
        fp8_kv = (  # gate: `k.dtype == torch.float8_e4m3fn` and major == 9
            k.dtype == torch.float8_e4m3fn
            and torch.cuda.get_device_capability()[0] == 9
        )
        return attn_fwd(q, k, v, fp8_kv_dequant=fp8_kv, softcap=1.0)
    return q
