"""Exits where the gate holds (gatefix's flag-flow tests). A check called as a statement guards
the code after its call; a function that raises, then does the work, or a procedure that returns
nothing early guards only its own code, not what its caller runs next."""

import torch

from flashinfer.jit.comm import gen_trtllm_comm_module, gen_trtllm_mnnvl_comm_module


def mnnvl_launch(x):
    return gen_trtllm_mnnvl_comm_module(), x


def require_sm90():
    if torch.cuda.get_device_capability()[0] != 9:
        raise RuntimeError("needs SM90")


def checked_fusion(x):
    require_sm90()
    return mnnvl_launch(x)


def fp8_attention(q):
    if torch.cuda.get_device_capability()[0] == 12:
        raise NotImplementedError("FP8 attention is not supported on SM120")
    return q * 2


def attention_then_fusion(q):
    out = fp8_attention(q)
    return mnnvl_launch(out)


def pin_block(x):
    if torch.cuda.get_device_capability()[0] != 12:
        return
    x.tune()


def tuned_fusion(x):
    pin_block(x)
    return mnnvl_launch(x)


def asserted_fusion(x):
    # The assertion fails where the gate does not hold: the code after it is what it guards.
    assert torch.cuda.get_device_capability()[0] in (9, 10), "needs SM90 or SM100"
    return mnnvl_launch(x)


def require_sm100():
    assert torch.cuda.get_device_capability()[0] == 10


def comm_after_assert_check(x):
    # A check that asserts: its callers go on only where it passes.
    require_sm100()
    return gen_trtllm_comm_module(), x
