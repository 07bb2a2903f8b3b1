import torch


def _get_cuda_arch(device_index: int) -> str:
    major, minor = torch.cuda.get_device_capability(device_index)
    return f"sm{major}{minor}"


def blocks(q):
    # A device string compared with literals (sglang multimodal_gen sparse_linear_attn.py).
    arch = _get_cuda_arch(q.device.index)
    if arch == "sm90":  # gate: major == 9 and minor == 0
        return 64
    if arch in ("sm80", "sm86", "sm120"):  # gate: major == 8 and minor == 0 or major == 8 and minor == 6 or major == 12 and minor == 0
        return 128
    return 32


def arch_list():
    capability = torch.cuda.get_device_capability()
    arch = f"{capability[0]}.{capability[1]}"
    return f"{arch}{'+PTX' if arch == '9.0' else ''}"  # gate: major == 9 and minor == 0


def formatted():
    capability = torch.cuda.get_device_capability()
    # A format spec is not modelled: the string is a free value, and no gate.
    arch = f"sm{capability[0]:02d}"
    return arch == "sm09"  # no-gate
