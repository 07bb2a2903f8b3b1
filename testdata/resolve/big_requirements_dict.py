import torch


def unmet(config):
    """Every requirement of a fast path this deployment misses (a table past 2,000 bytes)."""
    requirements = {
        "a GB300 (SM103) GPU": torch.cuda.get_device_capability() == (10, 3),  # gate: (major, minor) == (10, 3)
        "requirement number 0 of the deployment, spelled out at length": config.option_0 == 0,
        "requirement number 1 of the deployment, spelled out at length": config.option_1 == 1,
        "requirement number 2 of the deployment, spelled out at length": config.option_2 == 2,
        "requirement number 3 of the deployment, spelled out at length": config.option_3 == 3,
        "requirement number 4 of the deployment, spelled out at length": config.option_4 == 4,
        "requirement number 5 of the deployment, spelled out at length": config.option_5 == 5,
        "requirement number 6 of the deployment, spelled out at length": config.option_6 == 6,
        "requirement number 7 of the deployment, spelled out at length": config.option_7 == 7,
        "requirement number 8 of the deployment, spelled out at length": config.option_8 == 8,
        "requirement number 9 of the deployment, spelled out at length": config.option_9 == 9,
        "requirement number 10 of the deployment, spelled out at length": config.option_10 == 10,
        "requirement number 11 of the deployment, spelled out at length": config.option_11 == 11,
        "requirement number 12 of the deployment, spelled out at length": config.option_12 == 12,
        "requirement number 13 of the deployment, spelled out at length": config.option_13 == 13,
        "requirement number 14 of the deployment, spelled out at length": config.option_14 == 14,
        "requirement number 15 of the deployment, spelled out at length": config.option_15 == 15,
        "requirement number 16 of the deployment, spelled out at length": config.option_16 == 16,
        "requirement number 17 of the deployment, spelled out at length": config.option_17 == 17,
        "requirement number 18 of the deployment, spelled out at length": config.option_18 == 18,
        "requirement number 19 of the deployment, spelled out at length": config.option_19 == 19,
        "requirement number 20 of the deployment, spelled out at length": config.option_20 == 20,
        "requirement number 21 of the deployment, spelled out at length": config.option_21 == 21,
        "requirement number 22 of the deployment, spelled out at length": config.option_22 == 22,
        "a Blackwell GPU with the fused path": (
            torch.cuda.get_device_capability()[0] == 10 and config.fused  # gate: major == 10 and `config.fused`
        ),
        "a Hopper GPU for the fallback": torch.cuda.get_device_capability()[0] == 9,  # gate: major == 9
    }
    return [need for need, ok in requirements.items() if not ok]
