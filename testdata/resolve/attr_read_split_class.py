import torch


class Runner:
    """An arch read through an instance attribute in a method without a token of its own."""

    def __init__(self, device):
        major, minor = torch.cuda.get_device_capability(device)
        self._device_arch = major * 10 + minor

    def helper_0(self, x):
        """Filler so that the class is split into its methods by chunking (over 1 KiB)."""
        y = x + 0
        return [y, y * 2, y * 3, "padding text to make this method longer than it needs to be"]

    def helper_1(self, x):
        """Filler so that the class is split into its methods by chunking (over 1 KiB)."""
        y = x + 1
        return [y, y * 2, y * 3, "padding text to make this method longer than it needs to be"]

    def helper_2(self, x):
        """Filler so that the class is split into its methods by chunking (over 1 KiB)."""
        y = x + 2
        return [y, y * 2, y * 3, "padding text to make this method longer than it needs to be"]

    def helper_3(self, x):
        """Filler so that the class is split into its methods by chunking (over 1 KiB)."""
        y = x + 3
        return [y, y * 2, y * 3, "padding text to make this method longer than it needs to be"]

    def helper_4(self, x):
        """Filler so that the class is split into its methods by chunking (over 1 KiB)."""
        y = x + 4
        return [y, y * 2, y * 3, "padding text to make this method longer than it needs to be"]

    def helper_5(self, x):
        """Filler so that the class is split into its methods by chunking (over 1 KiB)."""
        y = x + 5
        return [y, y * 2, y * 3, "padding text to make this method longer than it needs to be"]

    def pick(self):
        if self._device_arch == 100:  # gate: sm == 100
            return "trtllm"
        return "cutlass"
