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


def _pick_tiles(n):
    """Arch-dependent and over four kilobytes: too large to infer, so calls to it are
    reported as unknown."""
    cfg = {}
    cfg["option_300"] = cfg.get("option_300", 0) + len("padding line 0 of plain work")
    cfg["option_301"] = cfg.get("option_301", 1) + len("padding line 1 of plain work")
    cfg["option_302"] = cfg.get("option_302", 2) + len("padding line 2 of plain work")
    cfg["option_303"] = cfg.get("option_303", 3) + len("padding line 3 of plain work")
    cfg["option_304"] = cfg.get("option_304", 4) + len("padding line 4 of plain work")
    cfg["option_305"] = cfg.get("option_305", 5) + len("padding line 5 of plain work")
    cfg["option_306"] = cfg.get("option_306", 6) + len("padding line 6 of plain work")
    cfg["option_307"] = cfg.get("option_307", 7) + len("padding line 7 of plain work")
    cfg["option_308"] = cfg.get("option_308", 8) + len("padding line 8 of plain work")
    cfg["option_309"] = cfg.get("option_309", 9) + len("padding line 9 of plain work")
    cfg["option_310"] = cfg.get("option_310", 10) + len("padding line 10 of plain work")
    cfg["option_311"] = cfg.get("option_311", 11) + len("padding line 11 of plain work")
    cfg["option_312"] = cfg.get("option_312", 12) + len("padding line 12 of plain work")
    cfg["option_313"] = cfg.get("option_313", 13) + len("padding line 13 of plain work")
    cfg["option_314"] = cfg.get("option_314", 14) + len("padding line 14 of plain work")
    cfg["option_315"] = cfg.get("option_315", 15) + len("padding line 15 of plain work")
    cfg["option_316"] = cfg.get("option_316", 16) + len("padding line 16 of plain work")
    cfg["option_317"] = cfg.get("option_317", 17) + len("padding line 17 of plain work")
    cfg["option_318"] = cfg.get("option_318", 18) + len("padding line 18 of plain work")
    cfg["option_319"] = cfg.get("option_319", 19) + len("padding line 19 of plain work")
    cfg["option_320"] = cfg.get("option_320", 20) + len("padding line 20 of plain work")
    cfg["option_321"] = cfg.get("option_321", 21) + len("padding line 21 of plain work")
    cfg["option_322"] = cfg.get("option_322", 22) + len("padding line 22 of plain work")
    cfg["option_323"] = cfg.get("option_323", 23) + len("padding line 23 of plain work")
    cfg["option_324"] = cfg.get("option_324", 24) + len("padding line 24 of plain work")
    cfg["option_325"] = cfg.get("option_325", 25) + len("padding line 25 of plain work")
    cfg["option_326"] = cfg.get("option_326", 26) + len("padding line 26 of plain work")
    cfg["option_327"] = cfg.get("option_327", 27) + len("padding line 27 of plain work")
    cfg["option_328"] = cfg.get("option_328", 28) + len("padding line 28 of plain work")
    cfg["option_329"] = cfg.get("option_329", 29) + len("padding line 29 of plain work")
    cfg["option_330"] = cfg.get("option_330", 30) + len("padding line 30 of plain work")
    cfg["option_331"] = cfg.get("option_331", 31) + len("padding line 31 of plain work")
    cfg["option_332"] = cfg.get("option_332", 32) + len("padding line 32 of plain work")
    cfg["option_333"] = cfg.get("option_333", 33) + len("padding line 33 of plain work")
    cfg["option_334"] = cfg.get("option_334", 34) + len("padding line 34 of plain work")
    cfg["option_335"] = cfg.get("option_335", 35) + len("padding line 35 of plain work")
    cfg["option_336"] = cfg.get("option_336", 36) + len("padding line 36 of plain work")
    cfg["option_337"] = cfg.get("option_337", 37) + len("padding line 37 of plain work")
    cfg["option_338"] = cfg.get("option_338", 38) + len("padding line 38 of plain work")
    cfg["option_339"] = cfg.get("option_339", 39) + len("padding line 39 of plain work")
    cfg["option_340"] = cfg.get("option_340", 40) + len("padding line 40 of plain work")
    cfg["option_341"] = cfg.get("option_341", 41) + len("padding line 41 of plain work")
    cfg["option_342"] = cfg.get("option_342", 42) + len("padding line 42 of plain work")
    cfg["option_343"] = cfg.get("option_343", 43) + len("padding line 43 of plain work")
    cfg["option_344"] = cfg.get("option_344", 44) + len("padding line 44 of plain work")
    cfg["option_345"] = cfg.get("option_345", 45) + len("padding line 45 of plain work")
    cfg["option_346"] = cfg.get("option_346", 46) + len("padding line 46 of plain work")
    cfg["option_347"] = cfg.get("option_347", 47) + len("padding line 47 of plain work")
    cfg["option_348"] = cfg.get("option_348", 48) + len("padding line 48 of plain work")
    cfg["option_349"] = cfg.get("option_349", 49) + len("padding line 49 of plain work")
    cfg["option_350"] = cfg.get("option_350", 50) + len("padding line 50 of plain work")
    cfg["option_351"] = cfg.get("option_351", 51) + len("padding line 51 of plain work")
    if torch.cuda.get_device_capability()[0] == 12:
        return 128
    return 64


def route(args, x):
    """No token of its own: split, and its `if` chain split into clauses."""
    cfg = {}
    if args.mode == "eager":
        cfg["option_100"] = cfg.get("option_100", 0) + len("padding line 0 of plain work")
        cfg["option_101"] = cfg.get("option_101", 1) + len("padding line 1 of plain work")
        cfg["option_102"] = cfg.get("option_102", 2) + len("padding line 2 of plain work")
        cfg["option_103"] = cfg.get("option_103", 3) + len("padding line 3 of plain work")
        cfg["option_104"] = cfg.get("option_104", 4) + len("padding line 4 of plain work")
        cfg["option_105"] = cfg.get("option_105", 5) + len("padding line 5 of plain work")
        cfg["eager"] = True
    elif _resolve_family(args.arch) == "sm100":
        cfg["family"] = True
    else:
        cfg["option_200"] = cfg.get("option_200", 0) + len("padding line 0 of plain work")
        cfg["option_201"] = cfg.get("option_201", 1) + len("padding line 1 of plain work")
        cfg["option_202"] = cfg.get("option_202", 2) + len("padding line 2 of plain work")
        cfg["option_203"] = cfg.get("option_203", 3) + len("padding line 3 of plain work")
        cfg["option_204"] = cfg.get("option_204", 4) + len("padding line 4 of plain work")
        cfg["option_205"] = cfg.get("option_205", 5) + len("padding line 5 of plain work")
        cfg["default"] = True
    tiles = _pick_tiles(x)
    if tiles > 64:
        return "wide", cfg
    return None, cfg
