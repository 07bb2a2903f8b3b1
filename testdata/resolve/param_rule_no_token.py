

class TrtllmConfig:
    """A parametric gate on a parameter a rule names (`arch`), in a file with no form token."""

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

    @classmethod
    def supported(cls, arch: int) -> bool:
        return arch in (100, 103)  # gate(assumes arch is the device's): sm in {100, 103}
