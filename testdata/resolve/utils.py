# Stand-ins for the helpers real packages define; rules/python.toml declares what each means.


def is_hip():
    return False


def is_cuda():
    return True


def get_device_sm():
    return 0


def get_device_capability():
    return (0, 0)
