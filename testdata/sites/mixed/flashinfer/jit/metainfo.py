from typing import Tuple

# Cubins that can be downloaded exist only for these archs.
BLACKWELL_CUBIN_ARCHS: Tuple[str, ...] = ("Sm100a", "Sm100f", "Sm103a")
