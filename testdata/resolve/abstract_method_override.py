import torch


class Platform:
    @classmethod
    def device_capability(cls):
        """The device's (major, minor)."""
        raise NotImplementedError

    @classmethod
    def is_blackwell(cls):
        # `cls` is the interface; the method answers through the subclass that overrides it.
        return cls.device_capability()[0] == 10  # gate: major == 10


class CudaPlatform(Platform):
    @classmethod
    def device_capability(cls):
        return torch.cuda.get_device_capability()


class Lonely:
    @classmethod
    def device_capability(cls):
        raise NotImplementedError

    @classmethod
    def is_hopper(cls):
        # No subclass overrides it: the value is unknown, and says why.
        return cls.device_capability()[0] == 9  # gate: unknown(`Lonely.device_capability` is abstract*)
