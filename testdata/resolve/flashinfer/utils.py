# flashinfer's utils.py as 0.7.2 has it: `version_at_least` is a `[[helper]]` rule
# (rules/flashinfer.toml) whose parameter is named like the rule's `version` conversion.
import torch


def get_compute_capability(device):
    return torch.cuda.get_device_capability(device)


def version_at_least(version: str, base_version: str) -> bool:
    from packaging import version as pkg_version

    return pkg_version.parse(version) >= pkg_version.parse(base_version)


def is_sm12x_supported(device: torch.device) -> bool:
    major, minor = get_compute_capability(device)
    if major != 12:
        return False
    min_cuda = "12.9" if minor >= 1 else "12.8"
    return version_at_least(torch.version.cuda, min_cuda)
