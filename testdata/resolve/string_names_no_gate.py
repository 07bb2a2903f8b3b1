def is_sm90_name(name):
    if "is_sm90" in name:  # no-gate
        return True
    return False
