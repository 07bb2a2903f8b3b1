from utils import get_device_sm


class Kernels:
    sm = 0

    @classmethod
    def init(cls):
        cls.sm = get_device_sm()

    def fast(self):
        return self.sm >= 90  # gate: sm >= 90
