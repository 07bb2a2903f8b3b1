def __getattr__(name):
    if name == "current_platform":
        from vllm.platforms.cuda import CudaPlatform

        return CudaPlatform()
    raise AttributeError(name)
