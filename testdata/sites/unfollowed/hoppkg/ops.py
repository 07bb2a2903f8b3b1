import logging

import torch

logger = logging.getLogger(__name__)


def _scale(x):
    return x * 2


def _pick(x):
    return _scale(x)


def plain(x):
    # Every call the branch makes is site code (or Python's own) that reaches no kernel.
    if torch.cuda.get_device_capability()[0] >= 9:
        logger.info("fast path")
        return _pick(x)
    return x


def through_torch(x):
    # The branch calls into torch, which is not code on the site: the hop is not followed.
    if torch.cuda.get_device_capability()[0] >= 9:
        logger.info("fast path")
        if len(x) > 2:
            raise ValueError("too long")
        return torch.matmul(_pick(x), x)
    return x


def require_hopper():
    # A check that raises: the code after each of its calls is what the gate guards.
    if torch.cuda.get_device_capability()[0] != 9:
        raise RuntimeError("needs SM90")


def checked(x):
    require_hopper()
    return torch.matmul(x, x)
