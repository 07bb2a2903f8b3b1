from utils import get_device_capability


class Base:
    def __init__(self):
        self.major = get_device_capability()[0]


class Child(Base):
    def go(self):
        if self.major >= 10:  # gate: major >= 10
            return 1
        return 0
