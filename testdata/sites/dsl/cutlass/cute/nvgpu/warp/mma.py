from cutlass.base_dsl.arch import Arch


class MmaF16BF16Op(MmaOp):
    pass


class MmaSM120BlockScaledOp(MmaOp):
    def __post_init__(self) -> None:
        arch = BaseDSL._get_dsl().get_arch_enum()
        if not arch == Arch.sm_120a:
            raise OpError(self, "expects arch to be sm_120a")


class MmaMXF4NVF4Op(MmaSM120BlockScaledOp):
    pass
