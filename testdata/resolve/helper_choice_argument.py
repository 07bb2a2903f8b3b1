# A helper without a token of its own, handed a value the device chooses: it is read with
# each value under the test that chose it (vllm's `is_fa_version_supported(fa_version)`).
import torch


def _fa_supported(version):
    if version == 3:  # gate: major == 9
        return True
    return False


def pick():
    cap = torch.cuda.get_device_capability()
    version = 3 if cap[0] == 9 else 2  # gate: major == 9
    return _fa_supported(version)  # gate: major == 9
