# The CUDA platforms of the fork (vllm's platforms/cuda.py): one reads NVML, one torch.
import pynvml
import torch
from forked_platform_interface import DeviceCapability, Platform


class CudaPlatformBase(Platform):
    @classmethod
    def has_device_capability(cls, capability, device_id: int = 0) -> bool:
        try:
            return super().has_device_capability(capability, device_id)  # gate: `isinstance(capability, tuple)` and unknown(*) or not `isinstance(capability, tuple)` and unknown(*)
        except RuntimeError:
            return False


class NvmlCudaPlatform(CudaPlatformBase):
    @classmethod
    def get_device_capability(cls, device_id: int = 0):
        try:
            handle = pynvml.nvmlDeviceGetHandleByIndex(device_id)
            major, minor = pynvml.nvmlDeviceGetCudaComputeCapability(handle)
            return DeviceCapability(major=major, minor=minor)
        except RuntimeError:
            return None


class NonNvmlCudaPlatform(CudaPlatformBase):
    @classmethod
    def get_device_capability(cls, device_id: int = 0):
        major, minor = torch.cuda.get_device_capability(device_id)
        return DeviceCapability(major=major, minor=minor)
