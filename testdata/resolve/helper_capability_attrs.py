from utils import get_device_capability


def uses_attrs():
    # A helper declared to return the capability may return a named tuple: `.major` reads it.
    capability = get_device_capability()
    return capability.major >= 10  # gate: major >= 10
