#!/usr/bin/env python3
"""An independent survey of the architecture decision sites in a site-packages folder.

It is the reference that `tests/survey.rs` measures `gatefix audit` against (issue 13), so it
shares nothing with gatefix: Python's standard library only (`ast`), and it never imports the
scanned packages. It lists each comparison, membership test, platform-method call, helper call,
probe attribute and flag use whose value depends on the device, by its own small dataflow:

- device values start at the calls named in ROOTS (`torch.cuda.get_device_capability()`,
  `get_device_properties(...)`, NVML's capability query) and at the parameters named in
  PARAM_TYPES by annotation (`capability: DeviceCapability`);
- they flow through assignments and unpacking (module level too), arithmetic, subscripts and
  attributes (`cap[0]`, `props.major`, `cap.to_int()`), f-strings, tuples, returns of functions
  in the site (a function is summarised by interpreting its body, and instantiated at each call,
  `functools.partial` and `lru_cache(...)(...)` included), call arguments into parameters, `self.x`
  stores read in the same class, and probe tables (a class whose `__getattr__` maps a name
  through a module dict of function names, as sglang's `get_platform()`);
- names resolve the way Python does: locals, enclosing functions, module, `import` and
  `from ... import` (relative, `as`, star) inside the surveyed site.

Where it falls back on a name alone, the site says `"guess": true`: a parameter named like a
capability (PARAM_GUESSES) with no caller that passes a device value, or a method called on an
object of unknown class whose every definition in the site is a device predicate.

Code that a platform fact rules out on NVIDIA (the arm of `if _is_hip:`, `elif is_musa():`,
the rest of `not _is_hip or cap < (9, 4)`) is interpreted for its bindings but lists no sites:
its comparisons are another vendor's (AMD gfx942 reports major 9, Moore Threads MUSA major 3),
not NVIDIA decision sites.

Each site is evaluated at sm_120 (capability (12, 0) on NVIDIA: PLATFORM_FACTS) where the
survey can tell: "true", "false" or "unknown". Sites are atoms (one comparison, one call), with
1-based lines and character columns, the end exclusive.

Usage: survey.py SITE [--packages sglang,flashinfer] [--out FILE]
Writes one JSON document {"site", "packages", "files_parsed", "sites": [...]} to stdout (or
FILE); progress on stderr. Exit 2 on a usage error.
"""

import argparse
import ast
import json
import os
import re
import sys
import time

TARGET = (12, 0)

# Calls whose result is the device's capability (any receiver: torch.cuda, current_platform,
# a module alias). `get_device_properties` returns an object with .major/.minor.
ROOTS = {
    "get_device_capability": "cap",
    "get_device_properties": "props",
    "nvmlDeviceGetCudaComputeCapability": "cap",
    "cudaDeviceGetAttribute": None,  # listed so the prefilter keeps it; value unknown
}

# vllm's platform methods (vllm/platforms/interface.py): they are decisions on the device.
PLATFORM_METHODS = {
    "has_device_capability",
    "is_device_capability",
    "is_device_capability_family",
}

# The target is an NVIDIA GPU: these platform probes have known values there.
PLATFORM_FACTS = {
    "is_cuda": True,
    "is_cuda_alike": True,
    "is_nvidia": True,
    "is_hip": False,
    "is_rocm": False,
    "is_npu": False,
    "is_xpu": False,
    "is_musa": False,
    "is_mps": False,
    "is_cpu": False,
    "is_tpu": False,
    "is_hpu": False,
}

# Parameter annotations that say the parameter is the device's capability.
PARAM_TYPES = {"DeviceCapability"}

# Parameter names that look like a capability: used only when nothing else says so, and the
# site is then marked as a guess.
PARAM_GUESSES = {
    "major",
    "minor",
    "sm",
    "sm_version",
    "arch",
    "cc",
    "compute_capability",
    "device_capability",
    "capability",
    "sm_major",
    "cuda_arch",
}

# Annotations a guessed parameter may have (a number, a string, a pair); any other type says
# the parameter is something else (`arch: GenExpertArch`).
GUESS_TYPES = {"int", "str", "tuple", "Tuple", "float", "Optional", "Union", "None"}

# Declared arch-list forms (flashinfer's JIT lists and decorators): calls that carry a list of
# architectures as an argument; listed as sites with the list's value at the target.
ARCH_LIST_KEYWORDS = {"supported_major_versions"}
ARCH_DECORATORS = {"supported_compute_capability"}

TOKENS = set(ROOTS) | PLATFORM_METHODS | ARCH_LIST_KEYWORDS | ARCH_DECORATORS | PARAM_TYPES
IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

# ---------------------------------------------------------------------------------------------
# Abstract values


class Unknown:
    __slots__ = ()

    def __repr__(self):
        return "?"


UNK = Unknown()


class Cap(tuple):
    """A (major, minor) capability; also the shape of vllm's DeviceCapability."""

    @property
    def major(self):
        return self[0]

    @property
    def minor(self):
        return self[1]


class Props:
    __slots__ = ()


class FuncRef:
    __slots__ = ("fq", "node", "module", "closure", "cls")

    def __init__(self, fq, node, module, closure, cls=None):
        self.fq, self.node, self.module, self.closure, self.cls = fq, node, module, closure, cls


class Partial:
    __slots__ = ("func", "args", "kwargs")

    def __init__(self, func, args, kwargs):
        self.func, self.args, self.kwargs = func, args, kwargs


class ModRef:
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name


class ClassRef:
    __slots__ = ("fq", "node", "module")

    def __init__(self, fq, node, module):
        self.fq, self.node, self.module = fq, node, module


class Instance:
    __slots__ = ("cls",)

    def __init__(self, cls):
        self.cls = cls


class V:
    """A value: `val` (a Python value, one of the classes above, or UNK), whether it depends on
    the device, whether that rests on a name guess, and its shape ('bool' for decisions)."""

    __slots__ = ("val", "dev", "guess", "kind")

    def __init__(self, val=UNK, dev=False, guess=False, kind=None):
        self.val, self.dev, self.guess, self.kind = val, dev, guess, kind


NONDEV = V()


def same(a, b):
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, (FuncRef, ClassRef)):
        return a.fq == b.fq
    if isinstance(a, ModRef):
        return a.name == b.name
    if isinstance(a, Instance):
        return a.cls.fq == b.cls.fq
    if isinstance(a, (Unknown, Props, Partial)):
        return a is b or isinstance(a, Unknown)
    try:
        return bool(a == b)
    except Exception:
        return False


def join(a, b):
    if a is None:
        return b
    if b is None:
        return a
    val = a.val if same(a.val, b.val) else UNK
    kind = a.kind if a.kind == b.kind else None
    return V(val, a.dev or b.dev, a.guess or b.guess, kind)


def join_env(a, b):
    out = {}
    for k in set(a) | set(b):
        if k == "__star__":
            out[k] = list(dict.fromkeys(a.get(k, []) + b.get(k, [])))
        elif k in a and k in b:
            out[k] = join(a[k], b[k])
        else:
            v = a.get(k) or b.get(k)
            out[k] = V(UNK, v.dev, v.guess, v.kind)
    return out


def truth(v):
    """True / False / None (unknown) for a value's truthiness."""
    x = v.val
    if isinstance(x, (Unknown, FuncRef, ClassRef, ModRef, Instance, Partial)):
        return None if isinstance(x, Unknown) else True
    if isinstance(x, Props):
        return True
    try:
        return bool(x)
    except Exception:
        return None


def is_literal(x):
    return isinstance(x, (int, float, str, bytes, bool, type(None), tuple, list, set, frozenset, dict))


# ---------------------------------------------------------------------------------------------
# The site


class Module:
    def __init__(self, name, path, rel, tree, is_pkg):
        self.name, self.path, self.rel, self.tree, self.is_pkg = name, path, rel, tree, is_pkg
        self.lines = None


def area_of(rel):
    parts = rel.split("/")
    if rel.startswith("flashinfer/data/") or "third_party" in parts or "_vendor" in parts:
        return "vendored"
    if "experimental" in parts:
        return "experimental"
    base = parts[-1]
    if any(p in ("test", "tests", "testing") for p in parts[:-1]) or base.startswith("test_") or base == "conftest.py":
        return "test"
    return "runtime"


class Survey:
    def __init__(self, site, packages, all_areas=False):
        self.site = site
        self.all_areas = all_areas
        self.files = {}  # module name -> (path, rel, is_pkg)
        self.idents = {}  # module name -> set of identifiers in its text
        self.modules = {}  # module name -> Module (parsed)
        self.failed = []
        for top in sorted(os.listdir(site)):
            if packages and top.split(".")[0] not in packages:
                continue
            full = os.path.join(site, top)
            if top.endswith(".py") and os.path.isfile(full):
                self.add_file(top[:-3], full, top, False)
            elif os.path.isdir(full) and not top.endswith((".dist-info", ".data", ".egg-info")) and top != "__pycache__":
                for root, dirs, names in os.walk(full):
                    dirs[:] = sorted(d for d in dirs if d != "__pycache__")
                    for n in sorted(names):
                        if not n.endswith(".py"):
                            continue
                        p = os.path.join(root, n)
                        rel = os.path.relpath(p, site).replace(os.sep, "/")
                        parts = rel[:-3].split("/")
                        is_pkg = parts[-1] == "__init__"
                        if is_pkg:
                            parts = parts[:-1]
                        self.add_file(".".join(parts), p, rel, is_pkg)
        self.func_idents = {}
        self.probe_classes = set()
        self.interesting = set()
        # per-round facts
        self.param_dev = {}  # function fq -> {param name: V}
        self.attr_dev = {}  # class fq -> {attr: V}
        self.changed = False
        self.reset_round()

    def add_file(self, name, path, rel, is_pkg):
        # vendored trees (flashinfer's CUTLASS/CCCL Python, third_party) are not the package's
        # own decisions and are never counted: they are not read at all, unless asked for
        if area_of(rel) == "vendored" and not self.all_areas:
            return
        self.files[name] = (path, rel, is_pkg)

    def reset_round(self):
        self.mod_env = {}  # module name -> env (dict) or None while in progress
        self.summaries = {}
        self.in_progress = set()
        self.exported = set()  # identifiers that carry device dependence across files

    # -- loading -------------------------------------------------------------------------------

    def scan_idents(self):
        for name, (path, rel, is_pkg) in self.files.items():
            try:
                with open(path, "rb") as f:
                    text = f.read().decode("utf-8", "replace")
            except OSError as e:
                self.failed.append((rel, str(e)))
                continue
            self.idents[name] = set(IDENT.findall(text))

    def load(self, name):
        if name in self.modules:
            return self.modules[name]
        if name not in self.files:
            return None
        path, rel, is_pkg = self.files[name]
        try:
            with open(path, "rb") as f:
                src = f.read()
            tree = ast.parse(src, filename=rel)
        except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
            self.failed.append((rel, str(e).splitlines()[0] if str(e) else type(e).__name__))
            self.modules[name] = None
            return None
        m = Module(name, path, rel, tree, is_pkg)
        m.src = src
        self.modules[name] = m
        return m

    # -- modules and names --------------------------------------------------------------------

    def resolve_relative(self, module, level, target):
        if level == 0:
            return target or ""
        base = module.name.split(".")
        if not module.is_pkg:
            base = base[:-1]
        if level > 1:
            base = base[: len(base) - (level - 1)]
        if target:
            base = base + target.split(".")
        return ".".join(base)

    def module_env(self, name):
        if name in self.mod_env:
            env = self.mod_env[name]
            return env if env is not None else {}
        m = self.load(name)
        if m is None:
            self.mod_env[name] = {}
            return {}
        self.mod_env[name] = None
        ctx = Ctx(self, m, None, record=False)
        env = {}
        ctx.globals = env
        try:
            ctx.exec_block(m.tree.body, env)
        except RecursionError:
            pass
        self.mod_env[name] = env
        return env

    def export(self, modname, attr, depth=0):
        """The value of `modname.attr` (a name in the module, or a submodule)."""
        if depth > 8:
            return NONDEV
        if modname in self.files:
            env = self.module_env(modname)
            if attr in env:
                return env[attr]
            star = env.get("__star__")
            if star:
                for other in star:
                    v = self.export(other, attr, depth + 1)
                    if v is not NONDEV:
                        return v
        sub = modname + "." + attr if modname else attr
        if sub in self.files:
            return V(ModRef(sub))
        return NONDEV

    # -- facts ---------------------------------------------------------------------------------

    def note_param(self, fq, pname, v):
        d = self.param_dev.setdefault(fq, {})
        old = d.get(pname)
        if old is None or (v.dev and not old.dev):
            d[pname] = V(UNK, True, v.guess, v.kind)
            self.changed = True

    def note_attr(self, clsfq, attr, v):
        d = self.attr_dev.setdefault(clsfq, {})
        if attr not in d:
            d[attr] = V(UNK, True, v.guess, v.kind)
            self.changed = True

    # -- function summaries ---------------------------------------------------------------------

    def idents_of(self, node):
        """Identifiers a function mentions (names, attributes, parameters, keywords)."""
        key = id(node)
        got = self.func_idents.get(key)
        if got is None:
            got = set()
            for n in ast.walk(node):
                t = type(n)
                if t is ast.Name:
                    got.add(n.id)
                elif t is ast.Attribute:
                    got.add(n.attr)
                elif t is ast.arg:
                    got.add(n.arg)
                elif t is ast.keyword and n.arg:
                    got.add(n.arg)
            self.func_idents[key] = got
        return got

    def relevant(self, node):
        """Whether a function can touch a device value: it mentions a name that carries one."""
        return not self.idents_of(node).isdisjoint(self.interesting)

    def call(self, fref, args, kwargs, depth):
        """The value a call of a site function returns (its body interpreted with the args)."""
        node = fref.node
        if not self.relevant(node) and not any(a.dev for a in args) and not any(v.dev for v in kwargs.values()):
            return V(UNK)
        key_parts = [fref.fq]
        for a in args:
            key_parts.append(vkey(a))
        for k in sorted(kwargs):
            key_parts.append(k + "=" + vkey(kwargs[k]))
        key = "|".join(key_parts)
        if key in self.summaries:
            return self.summaries[key]
        if key in self.in_progress or depth > 6 or len(self.in_progress) > 40:
            return V(UNK)
        self.in_progress.add(key)
        m = fref.module
        ctx = Ctx(self, m, fref, record=False, depth=depth + 1)
        ctx.globals = self.module_env(m.name)
        env = ctx.bind_params(node, args, kwargs, from_call=True)
        try:
            if isinstance(node, ast.Lambda):
                ret = ctx.eval(node.body, env)
            else:
                term = ctx.exec_block(node.body, env)
                ret = ctx.returns
                if not term:
                    ret = join(ret, V(None))
                if ret is None:
                    ret = V(None)
                if isinstance(node, ast.AsyncFunctionDef) or any(
                    isinstance(n, (ast.Yield, ast.YieldFrom)) for n in walk_shallow(node.body)
                ):
                    ret = V(UNK, ret.dev, ret.guess)
        except RecursionError:
            ret = V(UNK)
        self.in_progress.discard(key)
        self.summaries[key] = ret
        return ret


def vkey(v):
    x = v.val
    if isinstance(x, (FuncRef, ClassRef)):
        s = x.fq
    elif isinstance(x, ModRef):
        s = "mod:" + x.name
    elif isinstance(x, Instance):
        s = "inst:" + x.cls.fq
    elif isinstance(x, (Unknown, Props, Partial)):
        s = type(x).__name__
    else:
        try:
            s = repr(x)
        except Exception:
            s = "?"
        if len(s) > 80:
            s = s[:80]
    return ("D" if v.dev else "") + s


def walk_shallow(stmts):
    """Nodes of a function body, not descending into nested functions, classes, lambdas."""
    stack = list(stmts)
    while stack:
        n = stack.pop()
        yield n
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)) and n not in stmts:
            continue
        stack.extend(ast.iter_child_nodes(n))


_ASSIGNED = {}


def assigned_names(stmts):
    """Names a function body binds (Python's local scope rule), minus global/nonlocal ones."""
    key = id(stmts)
    got = _ASSIGNED.get(key)
    if got is None:
        got = _ASSIGNED[key] = (_assigned_names(stmts), stmts)
    return got[0]


def _assigned_names(stmts):
    out, declared = set(), set()
    for n in walk_shallow(stmts):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            out.add(n.id)
        elif isinstance(n, (ast.Global, ast.Nonlocal)):
            declared.update(n.names)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            for a in n.names:
                out.add((a.asname or a.name).split(".")[0])
        elif isinstance(n, ast.ExceptHandler) and n.name:
            out.add(n.name)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(n.name)
    # nested defs and classes bind their names too
    for c in stmts:
        if isinstance(c, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(c.name)
    return out - declared


def last_name(func):
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def ann_name(ann):
    if ann is None:
        return None
    if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
        return ann.value.split(".")[-1].strip().strip("'\"")
    if isinstance(ann, ast.Subscript):  # Optional[DeviceCapability]
        return ann_name(ann.slice)
    if isinstance(ann, ast.BinOp):  # DeviceCapability | None
        return ann_name(ann.left) or ann_name(ann.right)
    return last_name(ann)


# ---------------------------------------------------------------------------------------------
# The interpreter


class Ctx:
    def __init__(self, survey, module, fref, record, depth=0):
        self.s, self.m, self.fref, self.record, self.depth = survey, module, fref, record, depth
        self.returns = None
        self.globals = {}
        self.locals = set()
        self.closure = fref.closure if fref else []
        self.cls = fref.cls if fref else None
        self.sites = []
        self.nested = []  # (FuncRef, closure envs) to list after this scope
        self.qual = fref.fq.split(":", 1)[1] if fref else "<module>"
        self.in_test = False

    # -- parameters ----------------------------------------------------------------------------

    def bind_params(self, node, args=None, kwargs=None, from_call=False):
        a = node.args
        params = list(a.posonlyargs) + list(a.args)
        defaults = [None] * (len(params) - len(a.defaults)) + list(a.defaults)
        env = {}
        fq = self.fref.fq
        facts = self.s.param_dev.get(fq, {})
        is_method = self.cls is not None and not isinstance(node, ast.Lambda)
        decos = {last_name(d) for d in getattr(node, "decorator_list", [])}
        for i, p in enumerate(params):
            v = None
            if from_call:
                if i < len(args):
                    v = args[i]
                elif kwargs and p.arg in kwargs:
                    v = kwargs[p.arg]
                elif defaults[i] is not None:
                    v = self.eval(defaults[i], {})
            else:
                if defaults[i] is not None:
                    self.eval(defaults[i], {})
            if v is None:
                v = self.param_value(p, i, is_method, decos, facts)
            env[p.arg] = v
        for i, p in enumerate(a.kwonlyargs):
            v = kwargs.get(p.arg) if (from_call and kwargs) else None
            if v is None and a.kw_defaults[i] is not None:
                v = self.eval(a.kw_defaults[i], {}) if from_call else None
            if v is None:
                v = self.param_value(p, None, is_method, decos, facts)
            env[p.arg] = v
        if a.vararg:
            env[a.vararg.arg] = V(UNK)
        if a.kwarg:
            env[a.kwarg.arg] = V(UNK)
        self.locals = set(env) | (assigned_names(node.body) if not isinstance(node, ast.Lambda) else set())
        return env

    def param_value(self, p, i, is_method, decos, facts):
        if is_method and i == 0 and "staticmethod" not in decos:
            if "classmethod" in decos:
                return V(self.cls)
            return V(Instance(self.cls))
        if p.arg in facts:
            f = facts[p.arg]
            return V(UNK, True, f.guess, f.kind)
        if ann_name(p.annotation) in PARAM_TYPES:
            return V(UNK, True, False, "cap")
        if p.arg in PARAM_GUESSES and (p.annotation is None or ann_name(p.annotation) in GUESS_TYPES):
            return V(UNK, True, True, None)
        return V(UNK)

    # -- names ---------------------------------------------------------------------------------

    def lookup(self, name, env):
        if name in env:
            return env[name]
        if self.fref is not None and name in self.locals:
            return V(UNK)
        for outer in reversed(self.closure):
            if name in outer:
                return outer[name]
        g = self.globals
        if name in g:
            return g[name]
        star = g.get("__star__")
        if star:
            for other in star:
                v = self.s.export(other, name)
                if v is not NONDEV:
                    return v
        if name in PLATFORM_FACTS:
            return V(("fact", name))
        return V(UNK)

    # -- statements ----------------------------------------------------------------------------

    def exec_block(self, stmts, env):
        """Interprets statements, updating env; True when every path ends (return/raise)."""
        for st in stmts:
            if self.exec_stmt(st, env):
                return True
        return False

    def branch(self, stmts, env):
        e = dict(env)
        return e, self.exec_block(stmts, e)

    def exec_stmt(self, st, env):
        t = type(st)
        if t is ast.Expr:
            self.eval(st.value, env)
        elif t is ast.Assign:
            tg = st.targets[0]
            if (
                len(st.targets) == 1
                and isinstance(tg, (ast.Tuple, ast.List))
                and isinstance(st.value, (ast.Tuple, ast.List))
                and len(tg.elts) == len(st.value.elts)
                and not any(isinstance(e, ast.Starred) for e in tg.elts + st.value.elts)
            ):
                # `a, b = x, y`: each name gets its own value
                vals = [self.eval(e, env) for e in st.value.elts]
                for e, v in zip(tg.elts, vals):
                    self.bind(e, v, env)
                return False
            v = self.eval(st.value, env)
            for target in st.targets:
                self.bind(target, v, env)
        elif t is ast.AnnAssign:
            if st.value is not None:
                v = self.eval(st.value, env)
                self.bind(st.target, v, env)
        elif t is ast.AugAssign:
            v = self.eval(st.value, env)
            old = self.eval(st.target, env) if isinstance(st.target, ast.Name) else NONDEV
            self.bind(st.target, V(UNK, v.dev or old.dev, v.guess or old.guess), env)
        elif t is ast.Return:
            v = self.eval(st.value, env) if st.value is not None else V(None)
            self.returns = join(self.returns, v)
            return True
        elif t is ast.Raise:
            if st.exc is not None:
                self.eval(st.exc, env)
            return True
        elif t is ast.If:
            c = self.test(st.test, env)
            tc = truth(c)
            # an arm that a platform fact rules out runs on no NVIDIA GPU: its comparisons are
            # ROCm's, MUSA's, ... (gfx942 reports major 9 too), not NVIDIA decision sites
            platform = c.kind == "platform" and not c.dev
            if platform and tc is False:
                b_env, b_term = self.unrecorded(lambda: self.branch(st.body, env))
            else:
                b_env, b_term = self.branch(st.body, env)
            if platform and tc is True:
                o_env, o_term = self.unrecorded(lambda: self.branch(st.orelse, env))
            else:
                o_env, o_term = self.branch(st.orelse, env)
            if tc is True:
                arms = [(b_env, b_term)]
            elif tc is False:
                arms = [(o_env, o_term)]
            else:
                arms = [(b_env, b_term), (o_env, o_term)]
            live = [e for e, term in arms if not term]
            if not live:
                return True
            new = live[0]
            for e in live[1:]:
                new = join_env(new, e)
            env.clear()
            env.update(new)
        elif t in (ast.While,):
            self.test(st.test, env)
            b_env, _ = self.branch(st.body, env)
            new = join_env(env, b_env)
            env.clear()
            env.update(new)
            self.exec_block(st.orelse, env)
        elif t in (ast.For, ast.AsyncFor):
            it = self.eval(st.iter, env)
            e = dict(env)
            self.bind(st.target, V(UNK, it.dev, it.guess), e)
            self.exec_block(st.body, e)
            new = join_env(env, e)
            env.clear()
            env.update(new)
            self.exec_block(st.orelse, env)
        elif t in (ast.With, ast.AsyncWith):
            for item in st.items:
                v = self.eval(item.context_expr, env)
                if item.optional_vars is not None:
                    self.bind(item.optional_vars, V(UNK, v.dev, v.guess), env)
            return self.exec_block(st.body, env)
        elif t in (ast.Try, getattr(ast, "TryStar", ast.Try)):
            b_env, b_term = self.branch(st.body, env)
            if not b_term:
                self.exec_block(st.orelse, b_env)
            live = [] if b_term else [b_env]
            for h in st.handlers:
                if h.type is not None:
                    self.eval(h.type, env)
                h_env = join_env(env, b_env)
                if h.name:
                    h_env[h.name] = V(UNK)
                if not self.exec_block(h.body, h_env):
                    live.append(h_env)
            if live:
                new = live[0]
                for e in live[1:]:
                    new = join_env(new, e)
            else:
                new = dict(env)
            env.clear()
            env.update(new)
            fin_term = self.exec_block(st.finalbody, env)
            return fin_term or not live
        elif t in (ast.FunctionDef, ast.AsyncFunctionDef):
            for d in st.decorator_list:
                self.eval(d, env)
            fq = self.m.name + ":" + (self.qual + "." if self.fref else "") + st.name
            closure = (self.closure + [env]) if self.fref else []
            fref = FuncRef(fq, st, self.m, closure)
            v = V(fref)
            for d in st.decorator_list:
                dn = last_name(d.func if isinstance(d, ast.Call) else d)
                if dn not in ("lru_cache", "cache", "cached", "wraps", "staticmethod", "classmethod", "cache_once", "functools.cache", "torch_compile_guard", "property", "cached_property"):
                    pass
            env[st.name] = v
            self.nested.append(fref)
        elif t is ast.ClassDef:
            for b in st.bases:
                self.eval(b, env)
            for k in st.keywords:
                self.eval(k.value, env)
            for d in st.decorator_list:
                self.eval(d, env)
            fq = self.m.name + ":" + (self.qual + "." if self.fref else "") + st.name
            cref = ClassRef(fq, st, self.m)
            env[st.name] = V(cref)
            self.exec_class(cref, env)
        elif t is ast.Import:
            for a in st.names:
                if a.asname:
                    env[a.asname] = V(ModRef(a.name))
                else:
                    top = a.name.split(".")[0]
                    env[top] = V(ModRef(top))
        elif t is ast.ImportFrom:
            base = self.s.resolve_relative(self.m, st.level, st.module)
            for a in st.names:
                if a.name == "*":
                    env.setdefault("__star__", [])
                    if base not in env["__star__"]:
                        env["__star__"] = env["__star__"] + [base]
                    continue
                env[a.asname or a.name] = LazyExport(base, a.name)
        elif t is ast.Match:
            self.eval(st.subject, env)
            live = []
            for case in st.cases:
                e = dict(env)
                if case.guard is not None:
                    self.test(case.guard, e)
                if not self.exec_block(case.body, e):
                    live.append(e)
            new = env
            for e in live:
                new = join_env(new, e)
            env.clear()
            env.update(new)
        elif t is ast.Assert:
            self.test(st.test, env)
            if st.msg is not None:
                self.eval(st.msg, env)
        elif t is ast.Delete:
            for tg in st.targets:
                if isinstance(tg, ast.Name):
                    env.pop(tg.id, None)
        else:
            for c in ast.iter_child_nodes(st):
                if isinstance(c, ast.expr):
                    self.eval(c, env)
        return False

    def exec_class(self, cref, env):
        """A class body: its namespace holds its methods (FuncRef with cls set)."""
        ns = {}
        body_ctx_fref = None
        for st in cref.node.body:
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for d in st.decorator_list:
                    self.eval(d, env)
                fq = cref.fq + "." + st.name
                closure = (self.closure + [env]) if self.fref else []
                fref = FuncRef(fq, st, self.m, closure, cref)
                ns[st.name] = V(fref)
                self.nested.append(fref)
            elif isinstance(st, ast.ClassDef):
                sub_fq = cref.fq + "." + st.name
                sub = ClassRef(sub_fq, st, self.m)
                ns[st.name] = V(sub)
                self.exec_class(sub, env)
            else:
                e = dict(env)
                e.update(ns)
                self.exec_stmt(st, e)
                for k, v in e.items():
                    if k not in env or e[k] is not env.get(k):
                        ns[k] = v
        del body_ctx_fref
        self.s.class_ns[cref.fq] = (cref, ns, env)

    def bind(self, target, v, env):
        t = type(target)
        if t is ast.Name:
            env[target.id] = v
        elif t in (ast.Tuple, ast.List):
            elts = target.elts
            vals = v.val
            if isinstance(vals, (tuple, list)) and len(vals) == len(elts) and not any(isinstance(e, ast.Starred) for e in elts):
                for e, x in zip(elts, vals):
                    self.bind(e, V(x if not isinstance(x, V) else x.val, v.dev, v.guess, "int" if isinstance(vals, Cap) else None), env)
            else:
                for e in elts:
                    if isinstance(e, ast.Starred):
                        e = e.value
                    self.bind(e, V(UNK, v.dev, v.guess, "int" if v.kind in ("cap", "props") else None), env)
        elif t is ast.Starred:
            self.bind(target.value, V(UNK, v.dev, v.guess), env)
        elif t is ast.Attribute:
            obj = self.eval(target.value, env)
            if isinstance(obj.val, Instance) and v.dev:
                self.s.note_attr(obj.val.cls.fq, target.attr, v)
            if isinstance(target.value, ast.Name):
                env[target.value.id + "." + target.attr] = v
        elif t is ast.Subscript:
            self.eval(target.value, env)
            self.eval(target.slice, env)

    # -- expressions -----------------------------------------------------------------------------

    def test(self, node, env):
        old = self.in_test
        self.in_test = True
        try:
            return self.eval(node, env)
        finally:
            self.in_test = old

    def unrecorded(self, run):
        """Runs `run` (code no NVIDIA GPU reaches) keeping its bindings but not its sites."""
        old = self.record
        self.record = False
        try:
            return run()
        finally:
            self.record = old

    def site(self, node, kind, v, extra=None):
        if not self.record:
            return
        self.sites.append((node, kind, v, extra))

    def eval(self, node, env):
        try:
            v = self._eval(node, env)
        except RecursionError:
            raise
        except Exception:
            v = V(UNK)
        if isinstance(v, LazyExport):
            v = v.get(self.s)
        return v

    def eval_plain(self, node, env):
        old = self.in_test
        self.in_test = False
        try:
            return self.eval(node, env)
        finally:
            self.in_test = old

    def _eval(self, node, env):
        t = type(node)
        if t is ast.Constant:
            return V(node.value)
        if t is ast.Name:
            v = self.lookup(node.id, env)
            if isinstance(v, LazyExport):
                v = v.get(self.s)
            if self.in_test and v.dev and v.kind == "bool":
                self.site(node, "flag-use", v)
            return v
        if t is ast.Attribute:
            return self.attribute(node, env)
        if t is ast.Subscript:
            base = self.eval_plain(node.value, env)
            idx = self.eval_plain(node.slice, env)
            # a table read by a device key (`ROUTES[arch]`) selects a value; the read is not
            # itself the architecture (as for a ternary), so only a device base carries over
            dev = base.dev
            guess = base.guess
            val = UNK
            kind = None
            try:
                if not isinstance(base.val, (Unknown, Props, Instance)) and not isinstance(idx.val, Unknown):
                    val = base.val[idx.val]
                    if isinstance(base.val, Cap):
                        kind = "int"
            except Exception:
                val = UNK
            if base.kind == "cap" and kind is None and base.dev:
                kind = "int"
            if base.dev and isinstance(val, Unknown) and base.kind == "cap":
                kind = "int"
            return V(val, dev, guess, kind)
        if t is ast.Call:
            return self.call(node, env)
        if t is ast.Compare:
            return self.compare(node, env)
        if t is ast.BoolOp:
            vals = []
            dead = False
            for x in node.values:
                if dead:
                    # past a platform fact that decides the operator: never run on NVIDIA
                    self.unrecorded(lambda: self.eval(x, env))
                    continue
                v = self.eval(x, env) if self.in_test else self.eval_bool_operand(x, env)
                vals.append(v)
                tv = truth(v)
                if v.kind == "platform" and not v.dev and tv is (not isinstance(node.op, ast.And)):
                    dead = True
            if dead:
                return V(vals[-1].val, False, False, "platform")
            dev = any(v.dev for v in vals)
            guess = any(v.guess for v in vals)
            result = UNK
            if isinstance(node.op, ast.And):
                ts = [truth(v) for v in vals]
                if False in ts and all(x is not None for x in ts[: ts.index(False)]):
                    result = vals[ts.index(False)].val
                elif all(x is True for x in ts):
                    result = vals[-1].val
            else:
                ts = [truth(v) for v in vals]
                if True in ts and all(x is not None for x in ts[: ts.index(True)]):
                    result = vals[ts.index(True)].val
                elif all(x is False for x in ts):
                    result = vals[-1].val
            kind = "bool" if any(v.kind == "bool" and v.dev for v in vals) else None
            return V(result, dev, guess, kind)
        if t is ast.UnaryOp:
            if isinstance(node.op, ast.Not):
                v = self.eval(node.operand, env) if self.in_test else self.eval_bool_operand(node.operand, env)
                tv = truth(v)
                kind = "bool" if v.dev else "platform" if v.kind == "platform" else None
                return V(UNK if tv is None else (not tv), v.dev, v.guess, kind)
            v = self.eval(node.operand, env)
            try:
                val = {ast.USub: lambda x: -x, ast.UAdd: lambda x: +x, ast.Invert: lambda x: ~x}[type(node.op)](v.val) if not isinstance(v.val, Unknown) else UNK
            except Exception:
                val = UNK
            return V(val, v.dev, v.guess, v.kind if v.kind == "int" else None)
        if t is ast.BinOp:
            a = self.eval_plain(node.left, env)
            b = self.eval_plain(node.right, env)
            val = UNK
            if not isinstance(a.val, (Unknown, Props, Instance, FuncRef, ClassRef, ModRef, Partial)) and not isinstance(b.val, (Unknown, Props, Instance, FuncRef, ClassRef, ModRef, Partial)):
                try:
                    val = binop(node.op, a.val, b.val)
                except Exception:
                    val = UNK
            kind = "int" if (a.dev or b.dev) and isinstance(val, int) else ("int" if a.kind == "int" or b.kind == "int" else None)
            return V(val, a.dev or b.dev, a.guess or b.guess, kind)
        if t is ast.IfExp:
            c = self.test(node.test, env)
            tc = truth(c)
            platform = c.kind == "platform" and not c.dev
            a = self.unrecorded(lambda: self.eval(node.body, env)) if platform and tc is False else self.eval(node.body, env)
            b = self.unrecorded(lambda: self.eval(node.orelse, env)) if platform and tc is True else self.eval(node.orelse, env)
            # the value is the device's only when an arm is (a value chosen by a device test
            # is not itself a device value: the test is the site)
            r = a if tc is True else b if tc is False else join(a, b)
            return V(r.val, r.dev, r.guess, r.kind)
        if t in (ast.Tuple, ast.List, ast.Set):
            vals = [self.eval_plain(e.value if isinstance(e, ast.Starred) else e, env) for e in node.elts]
            # `(major, minor)` is a capability; a key that mixes the arch with other things
            # (`(B, arch, dtype)` for a kernel cache) is not
            dev = bool(vals) and all(v.dev for v in vals)
            guess = any(v.guess for v in vals)
            if any(isinstance(e, ast.Starred) for e in node.elts) or any(isinstance(v.val, Unknown) or not is_literal(v.val) and not isinstance(v.val, Cap) for v in vals):
                return V(UNK, dev, guess, "cap" if dev and t is ast.Tuple and len(vals) == 2 else None)
            raw = [v.val for v in vals]
            try:
                val = tuple(raw) if t is ast.Tuple else list(raw) if t is ast.List else frozenset(raw)
            except Exception:
                val = UNK
            return V(val, dev, guess, "cap" if dev and t is ast.Tuple and len(vals) == 2 else None)
        if t is ast.Dict:
            vals = [self.eval_plain(k, env) for k in node.keys if k is not None] + [self.eval_plain(x, env) for x in node.values]
            try:
                if all(not isinstance(v.val, Unknown) and is_literal(v.val) for v in vals) and None not in node.keys:
                    val = {self.eval_plain(k, env).val: self.eval_plain(x, env).val for k, x in zip(node.keys, node.values)}
                    return V(val)
            except Exception:
                pass
            return V(UNK, any(v.dev for v in vals), any(v.guess for v in vals))
        if t is ast.JoinedStr:
            vals = [self.eval_plain(x, env) for x in node.values]
            return V(UNK, any(v.dev for v in vals), any(v.guess for v in vals), "str")
        if t is ast.FormattedValue:
            v = self.eval_plain(node.value, env)
            if node.format_spec is not None:
                self.eval_plain(node.format_spec, env)
            return V(UNK, v.dev, v.guess)
        if t is ast.NamedExpr:
            v = self.eval(node.value, env)
            self.bind(node.target, v, env)
            return v
        if t is ast.Lambda:
            fq = self.m.name + ":" + self.qual + ".<lambda:%d>" % node.lineno
            fref = FuncRef(fq, node, self.m, (self.closure + [env]) if self.fref else [], None)
            if self.record:
                self.nested.append(fref)
            for d in node.args.defaults:
                self.eval_plain(d, env)
            return V(fref)
        if t in (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp):
            e = dict(env)
            dev = False
            guess = False
            for gen in node.generators:
                it = self.eval_plain(gen.iter, e)
                self.bind(gen.target, V(UNK, it.dev, it.guess), e)
                dev |= it.dev
                guess |= it.guess
                for cond in gen.ifs:
                    self.test(cond, e)
            if t is ast.DictComp:
                a = self.eval_plain(node.key, e)
                b = self.eval_plain(node.value, e)
                dev |= a.dev or b.dev
            else:
                a = self.eval_plain(node.elt, e)
                dev |= a.dev
            return V(UNK, dev, guess)
        if t is ast.Starred:
            return self.eval_plain(node.value, env)
        if t is ast.Slice:
            vals = [self.eval_plain(x, env) for x in (node.lower, node.upper, node.step) if x is not None]
            try:
                val = slice(*[self.eval_plain(x, env).val if x is not None else None for x in (node.lower, node.upper, node.step)])
                if any(isinstance(v.val, Unknown) for v in vals):
                    val = UNK
            except Exception:
                val = UNK
            return V(val, any(v.dev for v in vals))
        if t in (ast.Await, ast.Yield, ast.YieldFrom):
            if node.value is not None:
                v = self.eval_plain(node.value, env)
                return V(UNK, v.dev if t is ast.Await else False)
            return V(UNK)
        # anything else: walk the children for sites
        for c in ast.iter_child_nodes(node):
            if isinstance(c, ast.expr):
                self.eval_plain(c, env)
        return V(UNK)

    def eval_bool_operand(self, node, env):
        """Operands of and/or/not outside a test still hold flag uses (`x = _is_sm90 or y`)."""
        return self.test(node, env)

    def attribute(self, node, env):
        obj = self.eval_plain(node.value, env)
        attr = node.attr
        o = obj.val
        if isinstance(node.value, ast.Name):
            key = node.value.id + "." + attr
            if key in env:
                return env[key]
        if isinstance(o, ModRef):
            v = self.s.export(o.name, attr)
            if isinstance(v, LazyExport):
                v = v.get(self.s)
            if self.in_test and v.dev and v.kind == "bool":
                self.site(node, "flag-use", v)
            return v
        if isinstance(o, Cap):
            if attr in ("major", "minor"):
                return V(getattr(o, attr), obj.dev, obj.guess, "int")
            if attr == "to_int":
                return V(("method", "to_int", obj), obj.dev, obj.guess)
        if isinstance(o, Props):
            if attr in ("major", "minor"):
                return V(TARGET[0] if attr == "major" else TARGET[1], obj.dev, obj.guess, "int")
            # other properties (SM count, memory, name) are not the architecture
            return V(UNK)
        if isinstance(o, (Instance, ClassRef)):
            cref = o.cls if isinstance(o, Instance) else o
            v = self.class_attr(cref, attr, o if isinstance(o, Instance) else None, node)
            if v is not None:
                if self.in_test and v.dev and v.kind == "bool" and not isinstance(v.val, (FuncRef, Partial)):
                    self.site(node, "flag-use", v)
                return v
        if obj.dev:
            if attr in ("major", "minor"):
                return V(UNK, True, obj.guess, "int")
            if attr == "to_int":
                return V(("method", "to_int", obj), True, obj.guess)
            if attr in ("startswith", "endswith", "split", "strip", "lower", "upper", "replace"):
                return V(UNK, True, obj.guess, "str")
            # any other attribute of a device value (`props.multi_processor_count`,
            # `arch.head_dim` of a guessed parameter) is not the architecture
            return V(UNK)
        return V(UNK)

    def class_attr(self, cref, attr, inst, node):
        """An attribute of a class or instance: a method, a class variable, a `self.x` store,
        or a probe through `__getattr__`."""
        seen = set()
        stack = [cref]
        while stack:
            c = stack.pop(0)
            if c.fq in seen:
                continue
            seen.add(c.fq)
            entry = self.s.class_ns.get(c.fq)
            if entry is None:
                self.s.module_env(c.module.name)
                entry = self.s.class_ns.get(c.fq)
            if entry is None:
                continue
            _, ns, outer = entry
            if attr in ns:
                v = ns[attr]
                if isinstance(v, LazyExport):
                    v = v.get(self.s)
                if isinstance(v.val, FuncRef) and inst is not None:
                    fn = v.val
                    decos = {last_name(d) for d in fn.node.decorator_list}
                    if "property" in decos or "cached_property" in decos:
                        return self.s.call(fn, [V(inst)], {}, self.depth)
                    return V(BoundMethod(fn, V(inst)), v.dev, v.guess)
                return v
            facts = self.s.attr_dev.get(c.fq, {})
            if attr in facts:
                return facts[attr]
            if "__getattr__" in ns and inst is not None:
                probe = self.probe(c, ns["__getattr__"], attr)
                if probe is not None and probe.dev:
                    self.s.probe_classes.add(c.node.name)
                if probe is not None:
                    if probe.dev and probe.kind == "bool":
                        self.site(node, "platform-attr", probe)
                    return probe
            for b in c.node.bases:
                bv = ctx_eval_in(self, b, outer)
                if isinstance(bv.val, ClassRef):
                    stack.append(bv.val)
        return None

    def probe(self, cref, getattr_v, attr):
        """`__getattr__` that looks the name up in module dicts of function names."""
        fn = getattr_v.val
        if not isinstance(fn, FuncRef):
            return None
        genv = self.s.module_env(fn.module.name)
        for n in walk_shallow(fn.node.body):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                table = genv.get(n.id)
                if isinstance(table, LazyExport):
                    table = table.get(self.s)
                if table is not None and isinstance(table.val, dict) and attr in table.val and isinstance(table.val[attr], str):
                    target = table.val[attr]
                    # the modules the method imports are where the names live
                    for imp in walk_shallow(fn.node.body):
                        if isinstance(imp, ast.ImportFrom):
                            base = self.s.resolve_relative(fn.module, imp.level, imp.module)
                            for a in imp.names:
                                mod = base + "." + a.name
                                v = self.s.export(mod, target) if mod in self.s.files else NONDEV
                                if v is NONDEV:
                                    v = self.s.export(base, target)
                                if isinstance(v, LazyExport):
                                    v = v.get(self.s)
                                if v is not NONDEV:
                                    return self.apply(v, [], {}, None)
                    return V(UNK)
        return None

    def call(self, node, env):
        fv = self.eval_plain(node.func, env)
        args = [self.eval_plain(a.value if isinstance(a, ast.Starred) else a, env) for a in node.args]
        kwargs = {}
        for k in node.keywords:
            kv = self.eval_plain(k.value, env)
            if k.arg is not None:
                kwargs[k.arg] = kv
                if k.arg in ARCH_LIST_KEYWORDS:
                    self.site(k, "jit-arch-list", arch_list_value(kv, major=True))
        name = last_name(node.func)
        if isinstance(node.func, ast.Attribute) and name in PLATFORM_METHODS:
            return self.platform_method(node, name, args)
        if name in ROOTS and not isinstance(fv.val, (FuncRef, Partial)):
            kind = ROOTS[name]
            if kind == "cap":
                return V(Cap(TARGET), True, False, "cap")
            if kind == "props":
                return V(Props(), True, False, "props")
            return V(UNK, True, False, None)
        if name in ROOTS and isinstance(fv.val, FuncRef):
            r = self.apply(fv, args, kwargs, node)
            if not r.dev:
                # a wrapper the survey cannot see through still answers the device's value
                kind = ROOTS[name]
                return V(Cap(TARGET) if kind == "cap" else Props() if kind == "props" else UNK, True, False, kind)
            return r
        f = fv.val
        if isinstance(f, tuple) and len(f) == 2 and f[0] == "fact":
            return V(PLATFORM_FACTS[f[1]], kind="platform")
        if isinstance(f, tuple) and len(f) == 3 and f[0] == "method" and f[1] == "to_int":
            cap = f[2]
            if isinstance(cap.val, Cap):
                return V(cap.val[0] * 10 + cap.val[1], True, cap.guess, "int")
            return V(UNK, True, cap.guess, "int")
        # A probe named for its platform is that platform's probe wherever it is defined
        # (sglang's `def is_hip(): return torch.version.hip is not None`), with no arguments.
        probe = isinstance(f, (Unknown, FuncRef)) and not node.args and not node.keywords
        if isinstance(node.func, ast.Name) and node.func.id in PLATFORM_FACTS and probe:
            return V(PLATFORM_FACTS[node.func.id], kind="platform")
        if isinstance(node.func, ast.Attribute) and name in PLATFORM_FACTS and probe:
            return V(PLATFORM_FACTS[name], kind="platform")
        if name in ("lru_cache", "cache", "wraps", "cached") and isinstance(f, Unknown):
            if args and isinstance(args[0].val, (FuncRef, Partial)):
                return args[0]
            return V(("identity",))
        if isinstance(f, tuple) and f == ("identity",):
            return args[0] if args else V(UNK)
        if name == "partial" and args and isinstance(args[0].val, (FuncRef, Partial)):
            return V(Partial(args[0], args[1:], kwargs))
        if isinstance(f, ClassRef):
            if f.node.name == "DeviceCapability" and len(args) >= 1:
                try:
                    return V(Cap((args[0].val, args[1].val if len(args) > 1 else 0)), any(a.dev for a in args), any(a.guess for a in args), "cap")
                except Exception:
                    pass
            init = self.class_attr(f, "__init__", Instance(f), node)
            if init is not None and isinstance(init.val, BoundMethod):
                self.apply(init, args, kwargs, node)
            return V(Instance(f))
        if isinstance(f, (FuncRef, Partial, BoundMethod)):
            r = self.apply(fv, args, kwargs, node)
            if r.dev and r.kind == "bool":
                self.site(node, "helper-call", r)
            return r
        if isinstance(node.func, ast.Attribute) and isinstance(f, Unknown):
            # a method of an object the survey cannot type: by name, when every definition of
            # that name in the site is a device predicate
            r = self.by_name(name, node)
            if r is not None:
                return r
        if name in ("int", "str", "float", "tuple", "list", "min", "max", "sum", "abs", "round", "bool", "sorted", "set", "frozenset", "any", "all", "len", "map") and isinstance(node.func, ast.Name) and isinstance(f, Unknown):
            dev = any(a.dev for a in args)
            guess = any(a.guess for a in args)
            val = UNK
            if all(not isinstance(a.val, (Unknown, Props, Instance, FuncRef, ClassRef, ModRef, Partial)) for a in args) and name not in ("map",):
                try:
                    val = __builtins__[name](*[a.val for a in args]) if isinstance(__builtins__, dict) else getattr(__builtins__, name)(*[a.val for a in args])
                except Exception:
                    val = UNK
            if name == "tuple" and args and args[0].kind == "cap":
                return V(val, dev, guess, "cap")
            return V(val, dev, guess, "int" if dev and isinstance(val, int) else None)
        if isinstance(node.func, ast.Attribute):
            recv = self.eval_plain(node.func.value, env)
            if recv.dev and recv.kind == "str" and name in ("startswith", "endswith", "split", "strip", "lower", "upper", "replace", "rstrip", "lstrip"):
                return V(UNK, True, recv.guess, "bool" if name in ("startswith", "endswith") else "str")
        return V(UNK)

    def by_name(self, name, node):
        defs = self.s.method_index.get(name)
        if not defs:
            return None
        vals = []
        for fref in defs[:6]:
            params = fref.node.args.posonlyargs + fref.node.args.args
            args = [V(Instance(fref.cls))] if fref.cls is not None and params else []
            vals.append(self.s.call(fref, args, {}, self.depth))
        if vals and all(v.dev and v.kind == "bool" for v in vals):
            r = vals[0]
            for v in vals[1:]:
                r = join(r, v)
            r = V(r.val, True, True, "bool")
            self.site(node, "helper-call", r)
            return r
        return None

    def apply(self, fv, args, kwargs, node):
        f = fv.val
        if isinstance(f, Partial):
            return self.apply(f.func, list(f.args) + list(args), dict(f.kwargs, **kwargs), node)
        if isinstance(f, BoundMethod):
            return self.apply(V(f.func), [f.self_v] + list(args), kwargs, node)
        if not isinstance(f, FuncRef):
            return V(UNK)
        fn = f.node
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            a = fn.args
            params = list(a.posonlyargs) + list(a.args)
            for i, v in enumerate(args):
                if i < len(params) and v.dev:
                    self.s.note_param(f.fq, params[i].arg, v)
            for k, v in kwargs.items():
                if v.dev:
                    self.s.note_param(f.fq, k, v)
        return self.s.call(f, args, kwargs, self.depth)

    def platform_method(self, node, name, args):
        arg = args[0] if args else V(UNK)
        cur = TARGET
        val = UNK
        a = arg.val
        try:
            if isinstance(a, tuple) and len(a) == 2:
                if name == "has_device_capability":
                    val = cur >= tuple(a)
                elif name == "is_device_capability":
                    val = cur == tuple(a)
            elif isinstance(a, int) and not isinstance(a, bool):
                sm = cur[0] * 10 + cur[1]
                if name == "has_device_capability":
                    val = sm >= a
                elif name == "is_device_capability":
                    val = sm == a
                else:
                    val = sm // 10 == a // 10
        except Exception:
            val = UNK
        v = V(val, True, False, "bool")
        self.site(node, "platform-method", v)
        return v

    def compare(self, node, env):
        ops = node.ops
        left = self.eval_plain(node.left, env)
        rights = [self.eval_plain(c, env) for c in node.comparators]
        vals = [left] + rights
        dev = any(v.dev for v in vals)
        guess = any(v.guess for v in vals)
        if all(isinstance(op, (ast.Is, ast.IsNot)) for op in ops) and any(isinstance(c, ast.Constant) and c.value is None for c in [node.left] + node.comparators):
            # `cap is None`: an availability test, not a decision on the architecture
            return V(UNK)
        result = UNK
        if not any(isinstance(v.val, (Unknown, Props, Instance, FuncRef, ClassRef, ModRef, Partial)) for v in vals):
            try:
                result = True
                prev = left.val
                for op, r in zip(ops, rights):
                    if not cmpop(op, prev, r.val):
                        result = False
                        break
                    prev = r.val
            except Exception:
                result = UNK
        v = V(result, dev, guess, "bool" if dev else None)
        if dev:
            kind = "membership" if any(isinstance(op, (ast.In, ast.NotIn)) for op in ops) else "compare"
            self.site(node, kind, v)
        return v


class BoundMethod:
    __slots__ = ("func", "self_v")

    def __init__(self, func, self_v):
        self.func, self.self_v = func, self_v


class LazyExport(V):
    """`from X import y`: resolved when read (modules may import each other)."""

    __slots__ = ("base", "name", "cached")

    def __init__(self, base, name):
        V.__init__(self)
        self.base, self.name, self.cached = base, name, None

    def get(self, survey):
        if self.cached is None:
            self.cached = NONDEV  # guards cycles
            v = survey.export(self.base, self.name)
            while isinstance(v, LazyExport):
                v = v.get(survey)
            self.cached = v
        return self.cached


def ctx_eval_in(ctx, node, env):
    old = ctx.record
    ctx.record = False
    try:
        return ctx.eval(node, env)
    finally:
        ctx.record = old


def binop(op, a, b):
    t = type(op)
    if t is ast.Add:
        return a + b
    if t is ast.Sub:
        return a - b
    if t is ast.Mult:
        return a * b
    if t is ast.FloorDiv:
        return a // b
    if t is ast.Div:
        return a / b
    if t is ast.Mod:
        if isinstance(a, str):
            raise ValueError
        return a % b
    if t is ast.BitOr:
        return a | b
    if t is ast.BitAnd:
        return a & b
    if t is ast.Pow and abs(b) < 64:
        return a**b
    raise ValueError


def cmpop(op, a, b):
    t = type(op)
    if t is ast.Eq:
        return a == b
    if t is ast.NotEq:
        return a != b
    if t is ast.Lt:
        return a < b
    if t is ast.LtE:
        return a <= b
    if t is ast.Gt:
        return a > b
    if t is ast.GtE:
        return a >= b
    if t is ast.In:
        return a in b
    if t is ast.NotIn:
        return a not in b
    if t is ast.Is:
        return a is b
    if t is ast.IsNot:
        return a is not b
    raise ValueError


def arch_list_value(v, major):
    x = v.val
    if isinstance(x, (list, tuple, set, frozenset)):
        want = TARGET[0] if major else TARGET[0] * 10 + TARGET[1]
        return V(want in x, True, False, "bool")
    if x is None:
        return V(True, True, False, "bool")
    return V(UNK, True, False, "bool")


# ---------------------------------------------------------------------------------------------
# Driver


def segment(lines, line, col, end_line, end_col):
    """The source text of a node (byte offsets of ast, decoded afterwards)."""
    try:
        if line == end_line:
            raw = lines[line - 1][col:end_col]
        else:
            raw = b"\n".join([lines[line - 1][col:]] + lines[line : end_line - 1] + [lines[end_line - 1][:end_col]])
        return raw.decode("utf-8", "replace")
    except IndexError:
        return ""


def char_col(src_lines, line, byte_col):
    try:
        raw = src_lines[line - 1]
        return len(raw[:byte_col].decode("utf-8", "replace")) + 1
    except IndexError:
        return byte_col + 1


def run(site, packages, verbose=True, all_areas=False):
    t0 = time.time()
    s = Survey(site, packages, all_areas)
    s.class_ns = {}
    s.method_index = {}
    s.scan_idents()
    if verbose:
        print(f"survey: {len(s.files)} files, identifiers read in {time.time() - t0:.1f}s", file=sys.stderr)
    interesting = set(TOKENS)
    parsed = set()
    rounds = 0
    extra = set()
    while True:
        rounds += 1
        want = [n for n, ids in s.idents.items() if n not in parsed and ids & interesting]
        want += [n for n in extra if n not in parsed]
        for n in want:
            parsed.add(n)
            s.load(n)
        s.changed = False
        s.interesting = interesting | PARAM_GUESSES
        s.reset_round()
        s.class_ns = {}
        sites = list_sites(s, sorted(parsed))
        # names that now carry device dependence: functions, module variables, methods, attrs
        new = set()
        for name in sorted(parsed):
            env = s.mod_env.get(name) or {}
            for k, v in env.items():
                if isinstance(v, V) and not isinstance(v, LazyExport) and v.dev and v.kind in ("bool", "cap", "int", "props") and "." not in k:
                    new.add(k)
        for key, v in s.summaries.items():
            # only functions that answer a decision or a capability value carry the device
            # to other files (a kernel chosen for the arch, an arch string, do not)
            if v.dev and v.kind in ("bool", "cap", "int", "props"):
                fq = key.split("|", 1)[0]
                new.add(fq.rsplit(".", 1)[-1].split(":")[-1])
        for cls, attrs in s.attr_dev.items():
            new.update(attrs)
        # a function that receives a device value is listed where it is defined
        extra = {fq.split(":", 1)[0] for fq in s.param_dev} - parsed
        extra = {n for n in extra if n in s.files}
        new |= s.probe_classes
        new = {n for n in new if not n.startswith("__") and len(n) > 2}
        before = set(interesting)
        interesting |= new
        more = [n for n, ids in s.idents.items() if n not in parsed and ids & interesting]
        more = sorted(set(more) | extra)
        if verbose:
            print(f"survey: round {rounds}: {len(parsed)} files parsed, {len(sites)} sites, {len(more)} more files ({time.time() - t0:.1f}s)", file=sys.stderr)
            if os.environ.get("SURVEY_DEBUG"):
                print("  new names:", sorted(new - before), file=sys.stderr)
        if (not more and not s.changed) or rounds >= 8:
            break
    return s, sites, parsed, time.time() - t0


def is_dev_func(s, v):
    return False


def list_sites(s, names):
    out = {}
    # method index for by-name fallback: built from every parsed class
    s.method_index = {}
    for name in names:
        m = s.modules.get(name)
        if m is None:
            continue
        s.module_env(name)
    for fq, (cref, ns, _) in list(s.class_ns.items()):
        for k, v in ns.items():
            if isinstance(v.val, FuncRef) and v.val.cls is not None:
                s.method_index.setdefault(k, []).append(v.val)
    for name in names:
        m = s.modules.get(name)
        if m is None:
            continue
        lines = m.src.split(b"\n")
        ctx = Ctx(s, m, None, record=True)
        ctx.globals = {}
        env = ctx.globals
        try:
            ctx.exec_block(m.tree.body, env)
        except RecursionError:
            pass
        collect(s, m, ctx, lines, out, "<module>")
        queue = list(ctx.nested)
        seen = set()
        while queue:
            fref = queue.pop(0)
            if id(fref.node) in seen:
                continue
            seen.add(id(fref.node))
            if not fref.closure and not s.relevant(fref.node) and fref.fq not in s.param_dev:
                continue
            fctx = Ctx(s, m, fref, record=True)
            fctx.globals = env
            try:
                fenv = fctx.bind_params(fref.node)
                if isinstance(fref.node, ast.Lambda):
                    fctx.eval(fref.node.body, fenv)
                else:
                    fctx.exec_block(fref.node.body, fenv)
            except RecursionError:
                pass
            collect(s, m, fctx, lines, out, fctx.qual)
            queue.extend(fctx.nested)
    return [out[k] for k in sorted(out)]


def collect(s, m, ctx, lines, out, function):
    for node, kind, v, extra in ctx.sites:
        line, col = node.lineno, node.col_offset
        end_line, end_col = node.end_lineno, node.end_col_offset
        key = (m.rel, line, col, end_line, end_col)
        c1 = char_col(lines, line, col)
        c2 = char_col(lines, end_line, end_col)
        text = segment(lines, line, col, end_line, end_col)
        if isinstance(node, ast.keyword):
            text = text or ("%s=..." % node.arg)
        val = v.val
        at = "true" if val is True else "false" if val is False else "unknown"
        rec = {
            "file": m.rel,
            "line": line,
            "col": c1,
            "end_line": end_line,
            "end_col": c2,
            "kind": kind,
            "text": " ".join(text.split()),
            "function": function,
            "area": area_of(m.rel),
            "runtime": area_of(m.rel) == "runtime",
            "sm_120": at,
            "guess": bool(v.guess),
        }
        old = out.get(key)
        if old is None:
            out[key] = rec
        else:
            # listed twice (a nested scope walked again): keep one, unknown unless they agree
            if old["sm_120"] != at:
                old["sm_120"] = "unknown"
            old["guess"] = old["guess"] and rec["guess"]


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("site")
    ap.add_argument("--packages", default="", help="comma-separated top-level packages (default: all)")
    ap.add_argument("--out", default=None)
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--all-areas", action="store_true", help="also read vendored trees")
    a = ap.parse_args(argv)
    if not os.path.isdir(a.site):
        print(f"survey.py: {a.site}: not a folder (give a site-packages folder)", file=sys.stderr)
        return 2
    packages = {p.strip() for p in a.packages.split(",") if p.strip()}
    sys.setrecursionlimit(20000)
    s, sites, parsed, secs = run(a.site, packages, verbose=not a.quiet, all_areas=a.all_areas)
    doc = {
        "site": os.path.abspath(a.site),
        "packages": sorted(packages),
        "files": len(s.files),
        "files_parsed": len(parsed),
        "parse_failures": [{"file": f, "error": e} for f, e in sorted(set(s.failed))],
        "seconds": round(secs, 1),
        "sites": sites,
    }
    text = json.dumps(doc, indent=1)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text + "\n")
    if not a.quiet:
        n = len(sites)
        rt = sum(1 for x in sites if x["runtime"])
        print(f"survey: {n} sites ({rt} runtime) in {secs:.1f}s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
