from helper_of_big_helper import build_module


# A small wrapper that returns what the big device function gives: its calls stay free
# conditions, since inference cannot say how the device decides its value.
def wrapper(n):
    return build_module(n)  # gate: unknown(*)


def use(n):
    if wrapper(n):  # no-gate
        return 1
    return 0
