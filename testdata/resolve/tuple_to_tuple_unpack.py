import torch


def pick():
    cap = torch.cuda.get_device_capability()
    # A tuple of subscripts unpacked into names (sglang sana_wm_gdn_chunkwise_triton.py).
    major, minor = cap[0], cap[1]
    if major == 8 and minor == 0:  # gate: major == 8 and minor == 0
        return 1
    if major >= 10:  # gate: major >= 10
        return 2
    return 3
