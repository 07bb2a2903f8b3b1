from utils import get_device_capability


# A method calls module-level helpers defined further down the file: Python looks them up
# when the call runs.
class Backend:
    @classmethod
    def supports(cls):
        return _fast_path() or _other()  # gate: major >= 10 or major == 9


def _fast_path():
    return get_device_capability()[0] >= 10  # gate: major >= 10


def _other():
    return get_device_capability()[0] == 9  # gate: major == 9
