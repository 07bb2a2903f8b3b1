from helper_of_helper import consults_only, fast_local, should_fast, via_local


def pick(n):
    if should_fast(n):  # gate: major >= 9 and `n % 128 == 0`
        return "fast"
    if fast_local():  # gate: major >= 9
        return "local"
    if via_local(n):  # gate: major >= 9 and `n > 0`
        return "via"
    if consults_only(n):  # no-gate
        return "no"
    return "slow"
