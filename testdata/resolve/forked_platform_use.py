# Capability tests on the fork's current platform: read from the platform classes on the
# site, with no rule naming the fork.
from forked_platforms import current_platform


def pick():
    if current_platform.is_device_capability(90):  # gate: sm == 90
        return "hopper"
    if current_platform.has_device_capability(100):  # gate: sm >= 100
        return "blackwell+"
    if current_platform.is_device_capability_family(120):  # gate: major == 12
        return "rtx"
    if current_platform.get_device_capability() == (12, 1):  # gate: (major, minor) == (12, 1)
        return "spark"
    return None
