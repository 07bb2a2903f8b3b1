# `get_min_capability` answered by another class (vllm's quark and inc schemes return
# `Fp8Config.get_min_capability()`): the minimum is read through that class's method.


class Fp8Config:
    @classmethod
    def get_min_capability(cls) -> int:
        return 89  # gate: sm >= 89


class Fp8Scheme:
    @classmethod
    def get_min_capability(cls) -> int:
        return Fp8Config.get_min_capability()  # gate: sm >= 89


class OpaqueScheme:
    @classmethod
    def get_min_capability(cls) -> int:
        return cls.minimum()  # no-gate

    @classmethod
    def minimum(cls):
        return 75
