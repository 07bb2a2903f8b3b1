import torch


class CudaPlatform:
    """vllm's CUDA platform in miniature: the capability methods as
    vllm/platforms/interface.py writes them, read by gatefix from this code."""

    @classmethod
    def get_device_capability(cls, device_id: int = 0):
        return torch.cuda.get_device_capability(device_id)

    @classmethod
    def has_device_capability(cls, capability, device_id: int = 0) -> bool:
        current = cls.get_device_capability(device_id=device_id)
        if current is None:
            return False
        if isinstance(capability, tuple):
            return current >= capability
        return current[0] * 10 + current[1] >= capability

    @classmethod
    def is_device_capability(cls, capability, device_id: int = 0) -> bool:
        current = cls.get_device_capability(device_id=device_id)
        if current is None:
            return False
        if isinstance(capability, tuple):
            return current == capability
        return current[0] * 10 + current[1] == capability

    @classmethod
    def is_device_capability_family(cls, capability: int, device_id: int = 0) -> bool:
        current = cls.get_device_capability(device_id=device_id)
        if current is None:
            return False
        return (current[0] * 10 + current[1]) // 10 == capability // 10
