# No arch token anywhere in this module: only the import of an arch-dependent helper from a
# module that defines it makes its uses gates (the scan's second pass).
from imported_helper_def import uses_mx_scales
from imported_helper_def import uses_mx_scales as mx


def index_dtype():
    if uses_mx_scales():  # gate: major == 10
        return "bf16"
    return "fp32"


def scale_layout(cache):
    packed = cache and mx()  # gate: `cache` and major == 10
    return packed  # gate: `cache` and major == 10


def unrelated():
    # A name that no module defines as an arch-dependent helper.
    return len("uses_mx_scales")  # no-gate
