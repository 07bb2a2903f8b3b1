from forked_platforms import current_platform


def fast():
    cap = current_platform.get_device_capability()
    return cap is not None and cap.major >= 9  # gate: major >= 9
