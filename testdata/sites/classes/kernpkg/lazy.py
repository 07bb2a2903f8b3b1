"""Library functions imported when first called (after vllm.utils.flashinfer)."""

import importlib


def _get_submodule(module_name):
    try:
        return importlib.import_module(module_name)
    except ImportError:
        return None


def _lazy_import_wrapper(module_name, attr_name):
    def wrapper(*args, **kwargs):
        impl = getattr(_get_submodule(module_name), attr_name, None)
        return impl(*args, **kwargs)

    return wrapper


allreduce_fusion = _lazy_import_wrapper("flashinfer.comm", "trtllm_allreduce_fusion")
mnnvl_allreduce = _lazy_import_wrapper("flashinfer.comm", "trtllm_mnnvl_allreduce")
