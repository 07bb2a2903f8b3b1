# The fork's platforms package (vllm's platforms/__init__.py): the current platform is made
# lazily by a module `__getattr__`; only its declaration says what it is.
from typing import TYPE_CHECKING

from forked_platform_interface import Platform

_current_platform = None

if TYPE_CHECKING:
    current_platform: Platform


def __getattr__(name: str):
    if name == "current_platform":
        global _current_platform
        if _current_platform is None:
            _current_platform = _resolve_platform_class()()
        return _current_platform
    raise AttributeError(name)


def _resolve_platform_class():
    import importlib

    return importlib.import_module("forked_platform_cuda").NvmlCudaPlatform
