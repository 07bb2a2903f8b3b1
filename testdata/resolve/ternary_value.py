import torch


def pick():
    impl = "cutlass" if torch.cuda.get_device_capability()[0] >= 9 else "triton"  # gate: major >= 9
    return impl
