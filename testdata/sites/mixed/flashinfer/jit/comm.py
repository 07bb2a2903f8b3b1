from .core import current_compilation_context

_SUPPORTED_MAJOR_VERSIONS = [9, 10, 12]


def gen_trtllm_comm_module():
    nvcc_flags = current_compilation_context.get_nvcc_flags_list(
        supported_major_versions=[9, 10]
    )
    return nvcc_flags


def gen_named_module():
    return current_compilation_context.get_nvcc_flags_list(
        supported_major_versions=_SUPPORTED_MAJOR_VERSIONS
    )


def gen_any_module():
    return current_compilation_context.get_nvcc_flags_list()
