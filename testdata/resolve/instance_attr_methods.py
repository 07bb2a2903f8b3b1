import torch


class Runner:
    def __init__(self):
        self.cap = torch.cuda.get_device_capability()

    def run(self):
        if self.cap[0] >= 9:  # gate: major >= 9
            return "fast"
        return "slow"
