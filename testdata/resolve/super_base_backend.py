# A backend's capability test that a subclass in another module extends with `super()`
# (vllm's v1/attention/backends/flash_attn.py and triton_flash_attn.py).
from forked_platform_interface import DeviceCapability


class FlashBackend:
    @classmethod
    def supports_compute_capability(cls, capability: DeviceCapability) -> bool:
        return capability >= DeviceCapability(8, 0)  # gate(assumes capability is the device's): (major, minor) >= (8, 0)
