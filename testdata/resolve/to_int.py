from forked_platforms import current_platform


def fast():
    cap = current_platform.get_device_capability()
    return cap.to_int() >= 90  # gate: sm >= 90
