"""Gates whose code launches no kernel, and gates that look alike but decide more (written
for gatefix's verdict tests: tests/verdicts_cli.rs says which is which)."""

import logging

import torch

from .jit.kernels import gen_norm_module

logger = logging.getLogger(__name__)


def _note(x):
    return len(x)


def log_only(x):
    if torch.cuda.get_device_capability()[0] >= 9:
        logger.info("fast path")
        _note(x)
    return x


def message_only():
    major, _ = torch.cuda.get_device_capability()
    hint = " (Hopper)" if major == 9 else ""
    raise RuntimeError(f"unsupported{hint}")


def local_setting(x):
    tile = 64
    if torch.cuda.get_device_capability()[0] >= 9:
        tile = 128
    logger.info("tile %d for %s", tile, x)


def else_builds(x):
    if torch.cuda.get_device_capability()[0] >= 9:
        logger.info("fast path")
    else:
        gen_norm_module()
    return x


def returns_choice():
    return "fast" if torch.cuda.get_device_capability()[0] >= 9 else "slow"


_MAJOR = torch.cuda.get_device_capability()[0]
MODE = "fast" if _MAJOR >= 10 else "slow"

_ENABLED = False


def enable():
    global _ENABLED
    if torch.cuda.get_device_capability()[0] >= 9:
        _ENABLED = True


_OPS = {"note": _note}


def dispatch(x, name):
    if torch.cuda.get_device_capability()[0] >= 9:
        _OPS[name](x)
    return x


def in_loop(xs):
    scale = 1
    for x in xs:
        logger.info("%s at %d", x, scale)
        if torch.cuda.get_device_capability()[0] >= 9:
            scale = 2


def asserts(x):
    if torch.cuda.get_device_capability()[0] >= 9:
        assert len(x) > 0
    return x


def stores(config):
    if torch.cuda.get_device_capability()[0] >= 9:
        config.tile = 128
    return config


def returns_setting():
    tile = 64
    if torch.cuda.get_device_capability()[0] >= 9:
        tile = 128
    return tile


def returns_other(x):
    tile = 64
    if torch.cuda.get_device_capability()[0] >= 9:
        tile = 128
    logger.info("tile %d", tile)
    return x


def returns_derived():
    tile = 64
    if torch.cuda.get_device_capability()[0] >= 9:
        tile = 128
    blocks = tile * 2
    return blocks
