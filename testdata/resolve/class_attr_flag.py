from utils import get_device_sm


class K:
    FAST = get_device_sm() >= 90  # gate: sm >= 90

    def run(self):
        if self.FAST:  # gate: sm >= 90
            return 1
