"""A big function (split by the chunking) whose parameter a rule declares the device's arch
(rules/parameters.toml: `arch`), and a class that keeps it (vllm/vllm_flash_attn/cute:
`_get_fwd_config(*, arch: int, ...)`, `FlashAttentionBackwardPostprocess(..., arch, ...)`).
"""


def get_fwd_config(*, arch: int, head_dim: int, tile=None):
    t0 = head_dim * 0 + tile  # filler: the function must be split (over 4 KB)
    t1 = head_dim * 1 + tile  # filler: the function must be split (over 4 KB)
    t2 = head_dim * 2 + tile  # filler: the function must be split (over 4 KB)
    t3 = head_dim * 3 + tile  # filler: the function must be split (over 4 KB)
    t4 = head_dim * 4 + tile  # filler: the function must be split (over 4 KB)
    t5 = head_dim * 5 + tile  # filler: the function must be split (over 4 KB)
    t6 = head_dim * 6 + tile  # filler: the function must be split (over 4 KB)
    t7 = head_dim * 7 + tile  # filler: the function must be split (over 4 KB)
    t8 = head_dim * 8 + tile  # filler: the function must be split (over 4 KB)
    t9 = head_dim * 9 + tile  # filler: the function must be split (over 4 KB)
    t10 = head_dim * 10 + tile  # filler: the function must be split (over 4 KB)
    t11 = head_dim * 11 + tile  # filler: the function must be split (over 4 KB)
    t12 = head_dim * 12 + tile  # filler: the function must be split (over 4 KB)
    t13 = head_dim * 13 + tile  # filler: the function must be split (over 4 KB)
    t14 = head_dim * 14 + tile  # filler: the function must be split (over 4 KB)
    t15 = head_dim * 15 + tile  # filler: the function must be split (over 4 KB)
    t16 = head_dim * 16 + tile  # filler: the function must be split (over 4 KB)
    t17 = head_dim * 17 + tile  # filler: the function must be split (over 4 KB)
    t18 = head_dim * 18 + tile  # filler: the function must be split (over 4 KB)
    t19 = head_dim * 19 + tile  # filler: the function must be split (over 4 KB)
    t20 = head_dim * 20 + tile  # filler: the function must be split (over 4 KB)
    t21 = head_dim * 21 + tile  # filler: the function must be split (over 4 KB)
    t22 = head_dim * 22 + tile  # filler: the function must be split (over 4 KB)
    t23 = head_dim * 23 + tile  # filler: the function must be split (over 4 KB)
    t24 = head_dim * 24 + tile  # filler: the function must be split (over 4 KB)
    t25 = head_dim * 25 + tile  # filler: the function must be split (over 4 KB)
    t26 = head_dim * 26 + tile  # filler: the function must be split (over 4 KB)
    t27 = head_dim * 27 + tile  # filler: the function must be split (over 4 KB)
    t28 = head_dim * 28 + tile  # filler: the function must be split (over 4 KB)
    t29 = head_dim * 29 + tile  # filler: the function must be split (over 4 KB)
    t30 = head_dim * 30 + tile  # filler: the function must be split (over 4 KB)
    t31 = head_dim * 31 + tile  # filler: the function must be split (over 4 KB)
    t32 = head_dim * 32 + tile  # filler: the function must be split (over 4 KB)
    t33 = head_dim * 33 + tile  # filler: the function must be split (over 4 KB)
    t34 = head_dim * 34 + tile  # filler: the function must be split (over 4 KB)
    t35 = head_dim * 35 + tile  # filler: the function must be split (over 4 KB)
    t36 = head_dim * 36 + tile  # filler: the function must be split (over 4 KB)
    t37 = head_dim * 37 + tile  # filler: the function must be split (over 4 KB)
    t38 = head_dim * 38 + tile  # filler: the function must be split (over 4 KB)
    t39 = head_dim * 39 + tile  # filler: the function must be split (over 4 KB)
    t40 = head_dim * 40 + tile  # filler: the function must be split (over 4 KB)
    t41 = head_dim * 41 + tile  # filler: the function must be split (over 4 KB)
    t42 = head_dim * 42 + tile  # filler: the function must be split (over 4 KB)
    t43 = head_dim * 43 + tile  # filler: the function must be split (over 4 KB)
    t44 = head_dim * 44 + tile  # filler: the function must be split (over 4 KB)
    t45 = head_dim * 45 + tile  # filler: the function must be split (over 4 KB)
    t46 = head_dim * 46 + tile  # filler: the function must be split (over 4 KB)
    t47 = head_dim * 47 + tile  # filler: the function must be split (over 4 KB)
    t48 = head_dim * 48 + tile  # filler: the function must be split (over 4 KB)
    t49 = head_dim * 49 + tile  # filler: the function must be split (over 4 KB)
    t50 = head_dim * 50 + tile  # filler: the function must be split (over 4 KB)
    t51 = head_dim * 51 + tile  # filler: the function must be split (over 4 KB)
    t52 = head_dim * 52 + tile  # filler: the function must be split (over 4 KB)
    t53 = head_dim * 53 + tile  # filler: the function must be split (over 4 KB)
    t54 = head_dim * 54 + tile  # filler: the function must be split (over 4 KB)
    t55 = head_dim * 55 + tile  # filler: the function must be split (over 4 KB)
    t56 = head_dim * 56 + tile  # filler: the function must be split (over 4 KB)
    t57 = head_dim * 57 + tile  # filler: the function must be split (over 4 KB)
    t58 = head_dim * 58 + tile  # filler: the function must be split (over 4 KB)
    t59 = head_dim * 59 + tile  # filler: the function must be split (over 4 KB)
    t60 = head_dim * 60 + tile  # filler: the function must be split (over 4 KB)
    t61 = head_dim * 61 + tile  # filler: the function must be split (over 4 KB)
    t62 = head_dim * 62 + tile  # filler: the function must be split (over 4 KB)
    t63 = head_dim * 63 + tile  # filler: the function must be split (over 4 KB)
    t64 = head_dim * 64 + tile  # filler: the function must be split (over 4 KB)
    t65 = head_dim * 65 + tile  # filler: the function must be split (over 4 KB)
    t66 = head_dim * 66 + tile  # filler: the function must be split (over 4 KB)
    t67 = head_dim * 67 + tile  # filler: the function must be split (over 4 KB)
    t68 = head_dim * 68 + tile  # filler: the function must be split (over 4 KB)
    t69 = head_dim * 69 + tile  # filler: the function must be split (over 4 KB)
    if tile is None:
        if arch // 10 == 12:  # gate(assumes arch is the device's): major == 12
            tile = (128, 64)
        elif arch // 10 in [10, 11]:  # gate(assumes arch is the device's): major in {10, 11}
            tile = (128, 128)
    if head_dim == 256:  # no-gate
        tile = (64, 64)
    return tile


class Postprocess:
    def __init__(self, head_dim: int, arch: int):
        self.head_dim = head_dim
        self.arch = arch

    def tiled_mma(self):
        if self.arch // 10 in [8, 12]:  # gate(assumes arch is the device's): major in {8, 12}
            return "sm80"
        return "sm90"
