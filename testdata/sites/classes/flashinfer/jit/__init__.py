from .comm import gen_trtllm_comm_module, gen_trtllm_mnnvl_comm_module  # noqa: F401
