# A platform whose capability is not CUDA's (vllm's platforms/xpu.py).
from forked_platform_interface import Platform


class XpuPlatform(Platform):
    @classmethod
    def get_device_capability(cls, device_id: int = 0):
        return None
