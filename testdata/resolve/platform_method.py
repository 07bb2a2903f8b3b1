from forked_platforms import current_platform


def fast():
    if current_platform.has_device_capability(90):  # gate: sm >= 90
        return 1
    return 0
