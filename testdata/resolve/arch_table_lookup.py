import torch

from arch_table_defs import ONE_SHOT_SIZES

# Max size per device capability (the comment above the table must not hide it).
MAX_SIZES: dict[int, dict[int, float]] = {
    90: {2: 64, 4: 2},
    100: {2: 64, 4: 32},
    103: {2: 64, 4: 64},
}

WORLD_SIZES = {2: "two", 4: "four"}
NAMES = {"sm90": 90, "sm100": 100}


def max_size(world_size):
    cap = torch.cuda.get_device_capability()
    sm = cap[0] * 10 + cap[1]
    return MAX_SIZES.get(sm, {}).get(world_size)  # gate: sm in {90, 100, 103}


def one_shot(world_size):
    major, minor = torch.cuda.get_device_capability()
    return ONE_SHOT_SIZES[(major, minor)][world_size]  # gate: (major, minor) in {(9, 0), (10, 0)}


def optional_capability():
    cap = torch.cuda.get_device_capability()
    key = cap[0] * 10 + cap[1] if cap is not None else None
    return MAX_SIZES.get(key, {})  # gate: sm in {90, 100, 103}


def keyed_by_a_parameter(device_capability, world_size):
    return MAX_SIZES.get(device_capability, {}).get(world_size)  # gate(assumes device_capability is the device's): sm in {90, 100, 103}


def not_keyed_by_the_device(world_size):
    cap = torch.cuda.get_device_capability()
    return WORLD_SIZES.get(world_size), cap  # no-gate


def string_keys():
    cap = torch.cuda.get_device_capability()
    return NAMES.get(f"sm{cap[0]}{cap[1]}")  # no-gate


def indexes_the_device():
    cap = torch.cuda.get_device_capability()
    return cap[0]  # no-gate
