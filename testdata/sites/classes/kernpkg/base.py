"""A base class that picks among kernel classes by asking each for itself (written for
gatefix's tests, after vllm's modular MoE experts)."""


class Experts:
    def __init__(self, config):
        self.config = config

    @classmethod
    def is_supported_config(cls, config):
        # `cls` is the subclass asked: its own check answers.
        if not cls._supports_current_device():
            return False
        return config is not None

    @staticmethod
    def _supports_current_device():
        raise NotImplementedError

    def finalize(self, x):
        return x
