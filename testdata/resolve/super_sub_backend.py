from forked_platform_interface import DeviceCapability
from super_base_backend import FlashBackend


class HopperOnlyBackend(FlashBackend):
    @classmethod
    def supports_compute_capability(cls, capability: DeviceCapability) -> bool:
        return capability.major == 9 and super().supports_compute_capability(capability)  # gate(assumes capability is the device's): major == 9 and (major, minor) >= (8, 0)
