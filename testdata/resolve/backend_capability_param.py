from vllm.platforms.interface import DeviceCapability


class Backend:
    @classmethod
    def supports_compute_capability(cls, capability: DeviceCapability) -> bool:
        return capability.major in [9, 10]  # gate(assumes capability is the device's): major in {9, 10}
