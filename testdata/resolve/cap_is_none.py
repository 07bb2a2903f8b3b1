from forked_platforms import current_platform


def backend():
    cap = current_platform.get_device_capability()
    if cap is None:  # no-gate
        return None
    if cap.major == 10:  # gate: major == 10
        return "trtllm"
    return "fa"
