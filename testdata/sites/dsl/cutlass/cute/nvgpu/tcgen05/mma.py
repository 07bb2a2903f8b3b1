from cutlass.base_dsl.arch import Arch


class Tcgen05MmaOp(atom.MmaOp):
    pass


class MmaOp(Tcgen05MmaOp):
    admissible_archs = Arch.filter(
        lambda arch: arch.is_family_of(Arch.sm_100f) or arch.is_family_of(Arch.sm_110f)
    )

    def __post_init__(self) -> None:
        arch = BaseDSL._get_dsl().get_arch_enum()
        if arch not in self.admissible_archs:
            raise OpError(self, f"expects arch to be one of {self.admissible_archs}")


class BlockScaledMmaOp(Tcgen05MmaOp):
    admissible_archs = [
        Arch.sm_100a,
        Arch.sm_103a,
    ]


class MmaF16BF16Op(MmaOp):
    pass


class MmaMXF4NVF4Op(BlockScaledMmaOp):
    pass
