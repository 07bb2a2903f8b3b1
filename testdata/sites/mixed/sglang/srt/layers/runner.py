import torch


class Runner:
    def is_hopper(self):
        return torch.cuda.get_device_capability()[0] == 9

    def choose(self):
        if self.is_hopper():
            return "fa3"
        return "fa2"


class SubRunner(Runner):
    def pick(self):
        return "wgmma" if self.is_hopper() else "mma"
