# A helper whose parameter gets the device's major from another module's call
# (param_from_other_module_caller.py; sglang srt/lora/utils.py `architecture_for_capability`).


def plan_for(major: int) -> str:
    if major == 9:  # gate: major == 9
        return "sm90"
    if major >= 10:  # gate: major >= 10
        return "sm100"
    return "default"


def width_for(width: int) -> int:
    # Nobody passes a device value: no gate.
    if width == 9:  # no-gate
        return 1
    return 0
