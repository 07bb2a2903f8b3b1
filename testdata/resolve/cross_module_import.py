from return_helper import is_fast


def use():
    if not is_fast():  # gate: major < 9
        return "slow"
    return "fast"
