# A backend name reassigned on many device paths, most of them to the same few names: the
# arms that give one name join under the `or` of their guards, so the value stays known past
# the arm limit (sglang 0.5.23 model_overrides/qwen4_exp.py `get_default_attn_backend`).
import torch


def default_backend():
    major, minor = torch.cuda.get_device_capability()
    backend = "triton"
    if major == 7:  # gate: major == 7
        backend = "torch"
    elif major == 8 and minor == 0:  # gate: major == 8 and minor == 0
        backend = "fa2"
    elif major == 8:  # gate: major == 8
        backend = "torch"
    elif major == 9 and minor == 0:  # gate: major == 9 and minor == 0
        backend = "fa3"
    elif major == 9:  # gate: major == 9
        backend = "fa2"
    elif major == 10 and minor == 0:  # gate: major == 10 and minor == 0
        backend = "trtllm"
    elif major == 10:  # gate: major == 10
        backend = "fa2"
    elif major == 11:  # gate: major == 11
        backend = "trtllm"
    elif major == 12:  # gate: major == 12
        backend = "fa2"
    return backend


def uses_trtllm():
    return default_backend() == "trtllm"  # gate: major != 7 and not (major == 8 and minor == 0) and major != 8 and not (major == 9 and minor == 0) and major != 9 and (major == 10 and minor == 0 or not (major == 10 and minor == 0) and major != 10 and major == 11)
