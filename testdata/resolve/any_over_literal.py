import torch


def on_fa2():
    # A generator over a literal tuple unrolls into one test per element.
    return any(torch.cuda.get_device_capability()[0] == f for f in (8, 9, 12))  # gate: major == 8 or major == 9 or major == 12


def every():
    return all(torch.cuda.get_device_capability() >= c for c in ((8, 0), (9, 0)))  # gate: (major, minor) >= (8, 0) and (major, minor) >= (9, 0)


def not_literal(families):
    # A loop over a value gatefix cannot enumerate stays unknown, and says so.
    return any(torch.cuda.get_device_capability()[0] == f for f in families)  # gate: unknown(*)
