# A platform interface as an engine's renamed fork ships it (the shape of vllm's
# platforms/interface.py): the capability methods are plain code over
# `get_device_capability`, which the interface leaves to its subclasses (it answers None
# here) and the CUDA platforms of another module override. Inside the interface the
# capability compared is a parameter: the admitted set is the caller's (unknown here).
from typing import NamedTuple


class DeviceCapability(NamedTuple):
    major: int
    minor: int

    def to_int(self) -> int:
        return self.major * 10 + self.minor


class Platform:
    @classmethod
    def get_device_capability(cls, device_id: int = 0) -> "DeviceCapability | None":
        return None

    @classmethod
    def has_device_capability(cls, capability, device_id: int = 0) -> bool:
        current_capability = cls.get_device_capability(device_id=device_id)
        if current_capability is None:
            return False
        if isinstance(capability, tuple):
            return current_capability >= capability  # gate: unknown(*compares the device with a value gatefix cannot resolve)
        return current_capability.to_int() >= capability  # gate: unknown(*compares the device with a value gatefix cannot resolve)

    @classmethod
    def is_device_capability(cls, capability, device_id: int = 0) -> bool:
        current_capability = cls.get_device_capability(device_id=device_id)
        if current_capability is None:
            return False
        if isinstance(capability, tuple):
            return current_capability == capability  # gate: unknown(*compares the device with a value gatefix cannot resolve)
        return current_capability.to_int() == capability  # gate: unknown(*compares the device with a value gatefix cannot resolve)

    @classmethod
    def is_device_capability_family(cls, capability: int, device_id: int = 0) -> bool:
        current_capability = cls.get_device_capability(device_id=device_id)
        if current_capability is None:
            return False
        return (current_capability.to_int() // 10) == (capability // 10)  # gate: unknown(*compares the device with a value gatefix cannot resolve)
