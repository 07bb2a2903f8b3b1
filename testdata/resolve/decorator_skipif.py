import pytest
import torch


@pytest.mark.skipif(torch.cuda.get_device_capability()[0] < 9, reason="hopper")  # gate: major < 9
def test_fast():
    pass
