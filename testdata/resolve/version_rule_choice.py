from flashinfer.utils import is_sm12x_supported


def xqa_mla(query):
    # The rule's `version(arg1)` converts each arm of the floor the minor picks, and the
    # helper's `version` parameter does not hide the rule's conversion (flashinfer mla/_core.py).
    if not is_sm12x_supported(query.device):  # gate: not (major == 12 and (minor >= 1 and cuda >= 12.9 or minor < 1 and cuda >= 12.8))
        raise ValueError("XQA MLA requires SM120a (CUDA >= 12.8) or SM121a (CUDA >= 12.9)")
    return query
