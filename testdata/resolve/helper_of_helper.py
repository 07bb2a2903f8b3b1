from return_helper import is_fast


def should_fast(n):
    return is_fast() and n % 128 == 0  # gate: major >= 9 and `n % 128 == 0`


def fast_local():
    return is_fast()  # gate: major >= 9


def via_local(n):
    ok = is_fast() and n > 0  # gate: major >= 9 and `n > 0`
    return ok  # gate: major >= 9 and `n > 0`


def consults_only(n):
    seen = is_fast()  # gate: major >= 9
    print(seen)
    return n
