"""Gates whose code calls only what rules/quiet.toml says launches nothing, and look-alikes
(written for gatefix's verdict tests: tests/verdicts_cli.rs says which is which)."""

import logging
from types import SimpleNamespace

import torch

logger = logging.getLogger(__name__)


class Cache:
    def update(self, x):
        return x


class Table:
    def update(self, x):
        return x


def quiet_calls(x, sizes):
    if torch.cuda.get_device_capability()[0] >= 9:
        options = SimpleNamespace(tile=128, rows=x.size(0))
        sizes.append(options.tile)
        scratch = torch.empty(4, device="cuda")
        logger.info("fast path %s %s", options, scratch.numel())
    return x


def fills(x):
    if torch.cuda.get_device_capability()[0] >= 9:
        logger.info("fast path %s", torch.zeros(4, device="cuda"))
    return x


def site_method(x, state):
    if torch.cuda.get_device_capability()[0] >= 9:
        state.update(x)
    return x
