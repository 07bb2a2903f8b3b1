"""Dispatch helpers of several sizes: the chunker splits big and plain definitions and
keeps only what can matter, and every gate here must survive that (tests/prefilter.rs)."""
import torch

from sglang.srt.utils import is_sm100_supported


def register(**kwargs):
    return lambda f: f


def _resolve_family(arch):
    if arch != "auto":
        return arch
    if torch.cuda.get_device_capability() == (10, 0):
        return "sm100"
    return "sm90"


def choose_backend(args):
    """A function with no token of its own, over a kilobyte: split into its statements."""
    cfg = {}
    cfg["option_0"] = cfg.get("option_0", 0) + len("padding line 0 of plain work")
    cfg["option_1"] = cfg.get("option_1", 1) + len("padding line 1 of plain work")
    cfg["option_2"] = cfg.get("option_2", 2) + len("padding line 2 of plain work")
    cfg["option_3"] = cfg.get("option_3", 3) + len("padding line 3 of plain work")
    cfg["option_4"] = cfg.get("option_4", 4) + len("padding line 4 of plain work")
    cfg["option_5"] = cfg.get("option_5", 5) + len("padding line 5 of plain work")
    cfg["option_6"] = cfg.get("option_6", 6) + len("padding line 6 of plain work")
    cfg["option_7"] = cfg.get("option_7", 7) + len("padding line 7 of plain work")
    if args.legacy:
        family = "sm80"
    else:
        family = _resolve_family(args.arch)
    cfg["option_0"] = cfg.get("option_0", 0) + len("padding line 0 of plain work")
    cfg["option_1"] = cfg.get("option_1", 1) + len("padding line 1 of plain work")
    cfg["option_2"] = cfg.get("option_2", 2) + len("padding line 2 of plain work")
    cfg["option_3"] = cfg.get("option_3", 3) + len("padding line 3 of plain work")
    cfg["option_4"] = cfg.get("option_4", 4) + len("padding line 4 of plain work")
    cfg["option_5"] = cfg.get("option_5", 5) + len("padding line 5 of plain work")
    if family == "sm100":
        return "fast", cfg
    return "slow", cfg


class TileConfig:
    """A class over a kilobyte: split into its methods, of which one has a token."""

    def __init__(self):
        cfg = {}
        cfg["option_0"] = cfg.get("option_0", 0) + len("padding line 0 of plain work")
        cfg["option_1"] = cfg.get("option_1", 1) + len("padding line 1 of plain work")
        cfg["option_2"] = cfg.get("option_2", 2) + len("padding line 2 of plain work")
        cfg["option_3"] = cfg.get("option_3", 3) + len("padding line 3 of plain work")
        cfg["option_4"] = cfg.get("option_4", 4) + len("padding line 4 of plain work")
        cfg["option_5"] = cfg.get("option_5", 5) + len("padding line 5 of plain work")
        self.cfg = cfg

    def wide(self):
        return is_sm100_supported() and self.cfg.get("wide", True)

    def describe(self):
        cfg = self.cfg
        cfg["option_0"] = cfg.get("option_0", 0) + len("padding line 0 of plain work")
        cfg["option_1"] = cfg.get("option_1", 1) + len("padding line 1 of plain work")
        cfg["option_2"] = cfg.get("option_2", 2) + len("padding line 2 of plain work")
        cfg["option_3"] = cfg.get("option_3", 3) + len("padding line 3 of plain work")
        cfg["option_4"] = cfg.get("option_4", 4) + len("padding line 4 of plain work")
        cfg["option_5"] = cfg.get("option_5", 5) + len("padding line 5 of plain work")
        return cfg


@register(
    name="launcher",
    tags=("gemm", "moe"),
)
def big_launcher(x):
    """Over four kilobytes under a decorator that spans lines: split like any big block."""
    cfg = {}
    cfg["option_0"] = cfg.get("option_0", 0) + len("padding line 0 of plain work")
    cfg["option_1"] = cfg.get("option_1", 1) + len("padding line 1 of plain work")
    cfg["option_2"] = cfg.get("option_2", 2) + len("padding line 2 of plain work")
    cfg["option_3"] = cfg.get("option_3", 3) + len("padding line 3 of plain work")
    cfg["option_4"] = cfg.get("option_4", 4) + len("padding line 4 of plain work")
    cfg["option_5"] = cfg.get("option_5", 5) + len("padding line 5 of plain work")
    cfg["option_6"] = cfg.get("option_6", 6) + len("padding line 6 of plain work")
    cfg["option_7"] = cfg.get("option_7", 7) + len("padding line 7 of plain work")
    cfg["option_8"] = cfg.get("option_8", 8) + len("padding line 8 of plain work")
    cfg["option_9"] = cfg.get("option_9", 9) + len("padding line 9 of plain work")
    cfg["option_10"] = cfg.get("option_10", 10) + len("padding line 10 of plain work")
    cfg["option_11"] = cfg.get("option_11", 11) + len("padding line 11 of plain work")
    cfg["option_12"] = cfg.get("option_12", 12) + len("padding line 12 of plain work")
    cfg["option_13"] = cfg.get("option_13", 13) + len("padding line 13 of plain work")
    cfg["option_14"] = cfg.get("option_14", 14) + len("padding line 14 of plain work")
    cfg["option_15"] = cfg.get("option_15", 15) + len("padding line 15 of plain work")
    cfg["option_16"] = cfg.get("option_16", 16) + len("padding line 16 of plain work")
    cfg["option_17"] = cfg.get("option_17", 17) + len("padding line 17 of plain work")
    cfg["option_18"] = cfg.get("option_18", 18) + len("padding line 18 of plain work")
    cfg["option_19"] = cfg.get("option_19", 19) + len("padding line 19 of plain work")
    cfg["option_20"] = cfg.get("option_20", 20) + len("padding line 20 of plain work")
    cfg["option_21"] = cfg.get("option_21", 21) + len("padding line 21 of plain work")
    cfg["option_22"] = cfg.get("option_22", 22) + len("padding line 22 of plain work")
    cfg["option_23"] = cfg.get("option_23", 23) + len("padding line 23 of plain work")
    cfg["option_24"] = cfg.get("option_24", 24) + len("padding line 24 of plain work")
    cfg["option_25"] = cfg.get("option_25", 25) + len("padding line 25 of plain work")
    cfg["option_26"] = cfg.get("option_26", 26) + len("padding line 26 of plain work")
    cfg["option_27"] = cfg.get("option_27", 27) + len("padding line 27 of plain work")
    cfg["option_28"] = cfg.get("option_28", 28) + len("padding line 28 of plain work")
    cfg["option_29"] = cfg.get("option_29", 29) + len("padding line 29 of plain work")
    cfg["option_30"] = cfg.get("option_30", 30) + len("padding line 30 of plain work")
    cfg["option_31"] = cfg.get("option_31", 31) + len("padding line 31 of plain work")
    cfg["option_32"] = cfg.get("option_32", 32) + len("padding line 32 of plain work")
    cfg["option_33"] = cfg.get("option_33", 33) + len("padding line 33 of plain work")
    cfg["option_34"] = cfg.get("option_34", 34) + len("padding line 34 of plain work")
    cfg["option_35"] = cfg.get("option_35", 35) + len("padding line 35 of plain work")
    cfg["option_36"] = cfg.get("option_36", 36) + len("padding line 36 of plain work")
    cfg["option_37"] = cfg.get("option_37", 37) + len("padding line 37 of plain work")
    cfg["option_38"] = cfg.get("option_38", 38) + len("padding line 38 of plain work")
    cfg["option_39"] = cfg.get("option_39", 39) + len("padding line 39 of plain work")
    cfg["option_40"] = cfg.get("option_40", 40) + len("padding line 40 of plain work")
    cfg["option_41"] = cfg.get("option_41", 41) + len("padding line 41 of plain work")
    cfg["option_42"] = cfg.get("option_42", 42) + len("padding line 42 of plain work")
    cfg["option_43"] = cfg.get("option_43", 43) + len("padding line 43 of plain work")
    cfg["option_44"] = cfg.get("option_44", 44) + len("padding line 44 of plain work")
    cfg["option_45"] = cfg.get("option_45", 45) + len("padding line 45 of plain work")
    cfg["option_46"] = cfg.get("option_46", 46) + len("padding line 46 of plain work")
    cfg["option_47"] = cfg.get("option_47", 47) + len("padding line 47 of plain work")
    cfg["option_48"] = cfg.get("option_48", 48) + len("padding line 48 of plain work")
    cfg["option_49"] = cfg.get("option_49", 49) + len("padding line 49 of plain work")
    cfg["option_50"] = cfg.get("option_50", 50) + len("padding line 50 of plain work")
    cfg["option_51"] = cfg.get("option_51", 51) + len("padding line 51 of plain work")
    cfg["option_52"] = cfg.get("option_52", 52) + len("padding line 52 of plain work")
    cfg["option_53"] = cfg.get("option_53", 53) + len("padding line 53 of plain work")
    cfg["option_54"] = cfg.get("option_54", 54) + len("padding line 54 of plain work")
    cfg["option_55"] = cfg.get("option_55", 55) + len("padding line 55 of plain work")
    cfg["option_56"] = cfg.get("option_56", 56) + len("padding line 56 of plain work")
    cfg["option_57"] = cfg.get("option_57", 57) + len("padding line 57 of plain work")
    cfg["option_58"] = cfg.get("option_58", 58) + len("padding line 58 of plain work")
    cfg["option_59"] = cfg.get("option_59", 59) + len("padding line 59 of plain work")
    if is_sm100_supported():
        return x * 2, cfg
    return x, cfg
