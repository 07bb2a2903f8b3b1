//! The model asked as ruff's semantic tests ask theirs: a snippet, a read at the word
//! `CURSOR`, and the bindings (with the guards) that reach it, each written as the first line
//! of its statement and `if` the ways it is the live one.

use super::*;
use crate::syntax::parse;

fn model(src: &str) -> SemanticModel {
    let tree = parse(src.as_bytes());
    bind(src.as_bytes(), &tree)
}

/// The bindings of `name` reaching the word `CURSOR`, in words.
fn reach(src: &str, name: &str) -> Vec<String> {
    let cursor = src.find("CURSOR").expect("a CURSOR in the snippet");
    let model = model(src);
    let mut found: Vec<String> = model
        .reaching(name, cursor)
        .iter()
        .map(|r| describe(&model, src, r))
        .collect();
    found.sort();
    found
}

fn describe(model: &SemanticModel, src: &str, reach: &Reach) -> String {
    let what = match reach.binding {
        None => "unbound".to_string(),
        Some(id) => {
            let b = model.binding(id);
            src[b.statement.0..b.statement.1]
                .lines()
                .next()
                .unwrap_or_default()
                .trim()
                .to_string()
        }
    };
    if reach.always() {
        return what;
    }
    let ways: Vec<String> = reach
        .ways
        .iter()
        .map(|way| {
            way.iter()
                .map(|g| g.describe(src.as_bytes()))
                .collect::<Vec<_>>()
                .join(" and ")
        })
        .collect();
    format!("{what} if {}", ways.join(" or "))
}

#[test]
fn if_elif_else_join_with_the_tests_of_each_arm() {
    let src = "\
x = 0
if a:
    x = 1
elif b:
    x = 2
else:
    x = 3
CURSOR
";
    assert_eq!(
        reach(src, "x"),
        [
            "x = 1 if a",
            "x = 2 if not a and b",
            "x = 3 if not a and not b"
        ]
    );
}

#[test]
fn an_if_without_else_lets_the_earlier_binding_through_under_the_negated_test() {
    let src = "x = 0\nif a:\n    x = 1\nCURSOR\n";
    assert_eq!(reach(src, "x"), ["x = 0 if not a", "x = 1 if a"]);
    // A binding both paths keep the same stays unguarded.
    let src = "x = 0\nif a:\n    y = 1\nCURSOR\n";
    assert_eq!(reach(src, "x"), ["x = 0"]);
    // Unbound on one path.
    let src = "if a:\n    y = 1\nCURSOR\n";
    assert_eq!(reach(src, "y"), ["unbound if not a", "y = 1 if a"]);
}

#[test]
fn a_read_inside_an_arm_sees_the_bindings_before_it_in_that_arm() {
    let src = "x = 0\nif a:\n    x = 1\n    f(CURSOR)\nelse:\n    x = 2\n";
    assert_eq!(reach(src, "x"), ["x = 1"]);
    let src = "x = 0\nif a:\n    x = 1\nelse:\n    f(CURSOR)\n    x = 2\n";
    assert_eq!(reach(src, "x"), ["x = 0"]);
    // The test of an `elif` reads before its arm runs.
    let src = "x = 0\nif a:\n    x = 1\nelif x > CURSOR:\n    x = 2\n";
    assert_eq!(reach(src, "x"), ["x = 0"]);
}

#[test]
fn an_early_return_leaves_one_live_path_and_adds_no_guard() {
    let src = "\
def f():
    fast = False
    if is_hip():
        return fast
    if major >= 9:
        fast = True
    return CURSOR
";
    assert_eq!(
        reach(src, "fast"),
        [
            "fast = False if not major >= 9",
            "fast = True if major >= 9"
        ]
    );
    // Inside the returning arm, only what it saw.
    let src = "\
def f(cap):
    x = 1
    if cap is None:
        x = 2
        return CURSOR
    x = 3
";
    assert_eq!(reach(src, "x"), ["x = 2"]);
    // A raise ends its path as a return does.
    let src = "\
def f():
    if a:
        x = 1
    else:
        raise ValueError()
    return CURSOR
";
    assert_eq!(reach(src, "x"), ["x = 1"]);
}

#[test]
fn try_except_joins_the_completed_body_with_each_handler() {
    let src = "\
try:
    import fast_kernels
    HAVE = True
except ImportError:
    HAVE = False
CURSOR
";
    assert_eq!(
        reach(src, "HAVE"),
        [
            "HAVE = False if except ImportError",
            "HAVE = True if no exception"
        ]
    );
    // A handler may see the state before the body and anything the body bound.
    let src = "\
x = 0
try:
    x = 1
    risky()
except Exception:
    f(CURSOR)
";
    assert_eq!(reach(src, "x"), ["x = 0", "x = 1"]);
    // `else` runs after the body completed; `finally` after everything, an exception that
    // left the body or a handler included (before or after the body's own binding).
    let src = "\
try:
    x = 1
except E:
    x = 2
else:
    x = 3
finally:
    f(CURSOR)
";
    assert_eq!(
        reach(src, "x"),
        [
            "unbound",
            "x = 1",
            "x = 2 if except E",
            "x = 3 if no exception"
        ]
    );
    let src = "\
try:
    x = 1
except E:
    return_value = 2
else:
    x = 3
CURSOR
";
    assert_eq!(
        reach(src, "x"),
        [
            "unbound if except E",
            "x = 1 if except E",
            "x = 3 if no exception"
        ]
    );
}

#[test]
fn a_loop_may_run_zero_times_and_its_body_sees_the_last_pass() {
    let src = "\
x = 0
for i in range(3):
    x = i
CURSOR
";
    assert_eq!(
        reach(src, "x"),
        [
            "x = 0 if never looped over range(3)",
            "x = i if looped over range(3)"
        ]
    );
    // Inside the body, before its own binding: the entry or the previous pass.
    let src = "\
x = 0
while cond():
    f(CURSOR)
    x = 1
";
    assert_eq!(
        reach(src, "x"),
        ["x = 0 if first over cond()", "x = 1 if again over cond()"]
    );
    // The loop variable.
    let src = "for major in (9, 10):\n    f(CURSOR)\n";
    assert_eq!(reach(src, "major"), ["for major in (9, 10)"]);
}

#[test]
fn break_skips_the_loop_else() {
    let src = "\
found = None
for arch in archs:
    if arch == 90:
        found = arch
        break
else:
    found = 0
CURSOR
";
    assert_eq!(reach(src, "found"), ["found = 0", "found = arch"]);
}

#[test]
fn a_closure_sees_every_binding_of_the_enclosing_function() {
    let src = "\
def outer():
    x = 1
    def inner():
        return CURSOR
    x = 2
    return inner
";
    assert_eq!(reach(src, "x"), ["x = 1", "x = 2"]);
    // A class body between them is skipped.
    let src = "\
x = 'module'
class K:
    x = 'class'
    def m(self):
        return CURSOR
";
    assert_eq!(reach(src, "x"), ["x = 'module'"]);
}

#[test]
fn a_function_reads_a_module_if_as_a_guarded_choice() {
    let src = "\
if is_hip():
    FAST = False
else:
    FAST = SM in (90, 100)

def f():
    return CURSOR
";
    assert_eq!(
        reach(src, "FAST"),
        [
            "FAST = False if is_hip()",
            "FAST = SM in (90, 100) if not is_hip()"
        ]
    );
}

#[test]
fn module_globals_stored_by_functions_reach_every_reader() {
    let src = "\
_ARCH = None
def init():
    global _ARCH
    _ARCH = major * 10 + minor
def get():
    return CURSOR
";
    assert_eq!(
        reach(src, "_ARCH"),
        ["_ARCH = None", "_ARCH = major * 10 + minor"]
    );
    // Inside the storing function, its own store wins once made.
    let src = "\
_ARCH = None
def init():
    global _ARCH
    if _ARCH is None:
        _ARCH = probe()
    return CURSOR
";
    assert_eq!(
        reach(src, "_ARCH"),
        // An earlier call may have stored it too.
        ["_ARCH = None if not _ARCH is None", "_ARCH = probe()"]
    );
}

#[test]
fn a_class_body_falls_back_to_where_the_class_statement_runs() {
    let src = "\
SM = 90
class K:
    FAST = CURSOR
SM = 100
";
    assert_eq!(reach(src, "SM"), ["SM = 90"]);
}

#[test]
fn parameters_bind_at_the_start_of_the_body_with_default_and_annotation() {
    let src = "def f(arch: int, sm=90, *rest, **options):\n    return CURSOR\n";
    let model = model(src);
    let cursor = src.find("CURSOR").unwrap();
    let sm = model.reaching("sm", cursor);
    assert_eq!(sm.len(), 1);
    let binding = model.binding(sm[0].binding.unwrap());
    let BindingKind::Parameter {
        index,
        default,
        annotation,
    } = &binding.kind
    else {
        panic!("{binding:?}");
    };
    assert_eq!(*index, 1);
    assert_eq!(&src[default.unwrap().0..default.unwrap().1], "90");
    assert!(annotation.is_none());
    let arch = model.binding(model.reaching("arch", cursor)[0].binding.unwrap());
    let BindingKind::Parameter { annotation, .. } = &arch.kind else {
        panic!("{arch:?}");
    };
    assert_eq!(&src[annotation.unwrap().0..annotation.unwrap().1], "int");
    assert_eq!(reach(src, "rest"), ["*rest"]);
    assert_eq!(reach(src, "options"), ["**options"]);
    // A name the function does not bind is the module's.
    assert_eq!(reach(src, "arch"), ["arch: int"]);
    assert_eq!(reach(src, "other"), ["unbound"]);
    // Typed `*args` and `**kwargs`.
    let src = "def f(*archs: int, **flags: bool):\n    return CURSOR\n";
    assert_eq!(reach(src, "archs"), ["*archs: int"]);
    assert_eq!(reach(src, "flags"), ["**flags: bool"]);
}

#[test]
fn unpacking_walrus_with_and_imports_bind_with_their_kind() {
    let src = "\
import torch.cuda
from .utils import get_arch as arch_of, is_sm90
major, (minor, _) = torch.cuda.get_device_capability()
with open(path) as handle:
    if (cap := arch_of()) >= 90:
        pass
CURSOR
";
    let model = model(src);
    let cursor = src.find("CURSOR").unwrap();
    let kind = |name: &str| {
        let reach = model.reaching(name, cursor);
        assert_eq!(reach.len(), 1, "{name}: {reach:?}");
        model.binding(reach[0].binding.unwrap()).kind.clone()
    };
    assert_eq!(
        kind("torch"),
        BindingKind::Import {
            module: "torch".into(),
            member: None
        }
    );
    assert_eq!(
        kind("arch_of"),
        BindingKind::Import {
            module: ".utils".into(),
            member: Some("get_arch".into())
        }
    );
    assert_eq!(kind("major"), BindingKind::Unpacking { path: vec![0] });
    assert_eq!(kind("minor"), BindingKind::Unpacking { path: vec![1, 0] });
    assert_eq!(kind("handle"), BindingKind::With { path: vec![] });
    assert_eq!(kind("cap"), BindingKind::Walrus);
    // An assignment expression in a comprehension binds in the enclosing scope.
    let src = "def f(xs):\n    ok = any((hit := x) > 9 for x in xs)\n    return CURSOR\n";
    assert_eq!(reach(src, "hit"), ["hit := x"]);
    assert_eq!(reach(src, "x"), ["unbound"]);
}

#[test]
fn comprehension_and_lambda_targets_are_their_own() {
    let src = "major = 1\nvalues = [CURSOR for major in archs if major >= 9]\n";
    assert_eq!(reach(src, "major"), ["for major in archs"]);
    let src = "pick = lambda sm=90: CURSOR\n";
    assert_eq!(reach(src, "sm"), ["sm=90"]);
    // Outside them, the module's binding.
    let src = "major = 1\nvalues = [m for m in archs]\nCURSOR\n";
    assert_eq!(reach(src, "major"), ["major = 1"]);
    assert_eq!(reach(src, "m"), ["unbound"]);
}

#[test]
fn match_cases_are_arms_with_captures() {
    let src = "\
match cap:
    case (10, minor):
        kind = 'blackwell'
    case (major, _) if major >= 12:
        kind = 'consumer'
    case _:
        kind = None
CURSOR
";
    assert_eq!(
        reach(src, "kind"),
        [
            "kind = 'blackwell' if case (10, minor)",
            "kind = 'consumer' if not case (10, minor) and case (major, _) and major >= 12",
            "kind = None if not case (10, minor)"
        ]
    );
    // A literal or dotted value pattern can fail: the match is not exhaustive, a capture is.
    for (case, exhaustive) in [
        ("1", false),
        ("None", false),
        ("Arch.SM90", false),
        ("other", true),
    ] {
        let src = format!("x = 0\nmatch cap:\n    case {case}:\n        x = 1\nCURSOR\n");
        let expected: &[&str] = if exhaustive {
            &["x = 1"]
        } else {
            &["x = 0 if not case {case}", "x = 1 if case {case}"]
        };
        let expected: Vec<String> = expected.iter().map(|e| e.replace("{case}", case)).collect();
        assert_eq!(reach(&src, "x"), expected, "case {case}");
    }
    assert_eq!(
        reach(src, "minor"),
        [
            "case (10, minor): if case (10, minor)",
            "unbound if not case (10, minor)"
        ]
    );
}

#[test]
fn self_attributes_are_stored_on_the_class_and_seen_across_methods_and_subclasses() {
    let src = "\
class Base:
    fast = None
    def __init__(self):
        self.fast = False
    def run(self):
        return self.fast
    @staticmethod
    def helper(other):
        other.fast = 'not a store on Base'
class Sm100(Base):
    def __init__(self):
        super().__init__()
        self.fast = major == 10
class Unrelated:
    def __init__(self):
        self.fast = 'elsewhere'
";
    let model = model(src);
    let class = |name: &str| model.classes_named(name).next().unwrap();
    let stores = |class_id| -> Vec<String> {
        model
            .attribute_bindings(class_id, "fast")
            .into_iter()
            .map(|id| {
                let b = model.binding(id);
                src[b.statement.0..b.statement.1].trim().to_string()
            })
            .collect()
    };
    assert_eq!(
        stores(class("Base")),
        [
            "fast = None",
            "self.fast = False",
            "self.fast = major == 10"
        ]
    );
    assert_eq!(
        stores(class("Sm100")),
        [
            "self.fast = major == 10",
            "fast = None",
            "self.fast = False"
        ]
    );
    assert_eq!(stores(class("Unrelated")), ["self.fast = 'elsewhere'"]);
}

#[test]
fn every_binding_knows_its_branch() {
    let src = "\
if a:
    x = 1
elif b:
    for i in r:
        x = 2
else:
    try:
        x = 3
    except E:
        x = 4
";
    let model = model(src);
    let branch_of = |text: &str| {
        let b = model
            .bindings
            .iter()
            .find(|b| &src[b.statement.0..b.statement.1] == text)
            .unwrap();
        let branch = model.branch(b.branch.unwrap());
        let parent = branch.parent.map(|p| model.branch(p).kind);
        let test = branch.test.map(|t| src[t.0..t.1].to_string());
        (branch.kind, test, parent)
    };
    assert_eq!(
        branch_of("x = 1"),
        (BranchKind::If { arm: 0 }, Some("a".into()), None)
    );
    assert_eq!(
        branch_of("x = 2"),
        (
            BranchKind::Loop,
            Some("r".into()),
            Some(BranchKind::If { arm: 1 })
        )
    );
    assert_eq!(
        branch_of("x = 3"),
        (BranchKind::Try, None, Some(BranchKind::Else))
    );
    assert_eq!(
        branch_of("x = 4"),
        (BranchKind::Except, Some("E".into()), Some(BranchKind::Else))
    );
}

#[test]
fn deep_nesting_is_cut_without_overflowing_the_stack() {
    let mut src = String::new();
    for depth in 0..1_000 {
        src.push_str(&" ".repeat(depth));
        src.push_str("if a:\n");
    }
    src.push_str(&" ".repeat(1_000));
    src.push_str("x = 1\n");
    let deep = format!("y = {}1{}\n", "(".repeat(2_000), ")".repeat(2_000));
    for text in [src, deep] {
        let tree = parse(text.as_bytes());
        let model = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || bind(text.as_bytes(), &tree).too_deep)
            .unwrap()
            .join()
            .unwrap();
        assert!(model);
    }
}

#[test]
fn every_resolver_fixture_binds_within_its_text() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/resolve");
    let mut files = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "py") {
            continue;
        }
        let src = std::fs::read(&path).unwrap();
        let tree = parse(&src);
        let model = bind(&src, &tree);
        for binding in &model.bindings {
            assert!(binding.statement.1 <= src.len(), "{path:?}: {binding:?}");
            assert!(binding.visible_from <= src.len(), "{path:?}: {binding:?}");
            // Every binding is found by a read at the end of its scope, or is overwritten
            // there: the query must answer without panicking wherever it is asked.
            let _ = model.reaching(&binding.name, binding.visible_from);
        }
        assert!(!model.too_deep, "{path:?}");
        files += 1;
    }
    assert!(files > 100, "{files}");
}

/// What binding costs beside parsing, on real files: `GATEFIX_BIND_DIR=<folder> cargo test
/// --release --lib bind_cost -- --ignored --nocapture` parses every `.py` file under the
/// folder whole and binds it, one thread, and prints both totals.
/// Wherever the short cut answers (one unconditional last binding), the walk says the same:
/// checked at every offset of a function with branches, loops, `try`, closures and rebinding.
#[test]
fn the_straight_line_short_cut_agrees_with_the_walk_everywhere() {
    let src = "\
def f(a, b, c=1, *args, **kw):
    x = a
    if b:
        y = 1
        return x
    for i in args:
        x = i
        if i:
            break
    else:
        z = 3
    try:
        w = g(x)
    except E as e:
        w = e
    finally:
        v = w
    q = [t for t in args if t]
    def inner():
        return x + q
    x = x + 1
    x += 1
    while c:
        c -= 1
        u = c
    r = (s := x) + s
    return x, y, z, w, v, u, r, kw, inner
";
    let model = model(src);
    let names = [
        "a", "b", "c", "args", "kw", "x", "y", "z", "i", "w", "e", "v", "q", "t", "u", "s", "r",
        "inner",
    ];
    let mut checked = 0;
    for offset in 0..src.len() {
        for name in names {
            if let Some(walked) = model.reaching_by_walk(name, offset) {
                assert_eq!(model.reaching(name, offset), walked, "{name} at {offset}");
                checked += 1;
            }
        }
    }
    // Most reads of `a`, `kw`, `q`, `r`, ... take the short cut; a test that checked nothing
    // would prove nothing.
    assert!(checked > 2_000, "{checked}");
}

/// The binary search finds the scope a scan finds, at every offset of nested functions,
/// classes, lambdas (one in a default) and comprehensions.
#[test]
fn scope_at_agrees_with_a_scan_everywhere() {
    let src = "\
class A:
    x = [i for i in range(3)]

    def m(self, f=lambda v: v + 1):
        def inner(y):
            return {k: (lambda: k)() for k in y}
        return inner

    class B:
        def n(self):
            pass


def g(a, key=lambda t: t[0]):
    return sorted(a, key=key)
";
    let model = model(src);
    assert!(model.scopes.len() >= 10, "{}", model.scopes.len());
    for offset in 0..=src.len() {
        assert_eq!(
            model.scope_at(offset),
            model.scope_at_by_scan(offset),
            "at {offset}"
        );
    }
}

#[test]
#[ignore = "a measurement: needs GATEFIX_BIND_DIR"]
fn bind_cost_beside_parsing() {
    let Some(dir) = std::env::var_os("GATEFIX_BIND_DIR") else {
        return;
    };
    let mut stack = vec![std::path::PathBuf::from(dir)];
    let (mut files, mut bytes, mut bindings) = (0usize, 0usize, 0usize);
    let (mut parsing, mut binding) = (std::time::Duration::ZERO, std::time::Duration::ZERO);
    while let Some(path) = stack.pop() {
        if path.is_dir() {
            for entry in std::fs::read_dir(&path).unwrap().flatten() {
                stack.push(entry.path());
            }
            continue;
        }
        if path.extension().is_none_or(|e| e != "py") {
            continue;
        }
        let src = std::fs::read(&path).unwrap();
        let started = std::time::Instant::now();
        let tree = parse(&src);
        parsing += started.elapsed();
        let started = std::time::Instant::now();
        let model = bind(&src, &tree);
        binding += started.elapsed();
        files += 1;
        bytes += src.len();
        bindings += model.bindings.len();
    }
    eprintln!(
        "{files} files, {} MB: parse {parsing:?}, bind {binding:?} ({bindings} bindings)",
        bytes >> 20
    );
}

/// Passing over statements that do not bind the asked name (by their shape: can they end,
/// do they `break` or `continue` out) answers what walking them answers, at every offset and
/// for every name of functions whose exits sit at every depth of ifs, loops with `else`,
/// `try` with every clause, and `match`.
#[test]
fn passing_over_unbinding_statements_changes_no_answer() {
    let src = "\
def f(a, b, items):
    x = 0
    y = 1
    if a:
        p = 1
    elif b:
        return y
    else:
        raise E
    for i in items:
        if i > 3:
            continue
        if i < 0:
            break
        x = i
    else:
        q = 2
    while a:
        if b:
            break
        try:
            g(a)
        except E:
            continue
        finally:
            h()
    else:
        y = 2
    try:
        if a:
            return x
        r = 1
    except E as e:
        if b:
            raise
        r = 2
    else:
        if a:
            pass
    finally:
        s = 3
    match b:
        case 1:
            return r
        case [u, v] if u:
            t = u
        case _:
            pass
    while True:
        if a:
            break
        while b:
            if a:
                continue
            break
        else:
            x = 9
    for j in items:
        try:
            if j:
                break
        finally:
            if a:
                continue
        y = j
    try:
        pass
    except E:
        return 1
    try:
        return 2
    except E:
        pass
    for k in items:
        if k:
            break
    else:
        return 0
    try:
        pass
    except E:
        pass
    else:
        return 3
    for m in items:
        for n in m:
            if n:
                w = 1
                break
        else:
            w = 2
            if b:
                continue
            break
        w = w + 3
    z = x + y
    return x, y, z, p, q, r, s, t, w


def dead_else(a):
    for k in a:
        try:
            return 4
        except E:
            return 5
        else:
            break
        z = k
    else:
        z = 0
    return z


def only_exits(a):
    if a:
        return 1
    else:
        return 2
    x = 1
    return x
";
    let model = model(src);
    let names = [
        "a", "b", "items", "x", "y", "p", "i", "q", "r", "e", "s", "u", "v", "t", "j", "k", "z",
        "m", "n", "w",
    ];
    let mut differs_from_start = 0;
    for offset in 0..src.len() {
        for name in names {
            let (skipped, walked) = model.walks_with_and_without_skips(name, offset);
            assert_eq!(skipped, walked, "{name} at {offset}");
            if walked.len() > 1 || walked.iter().any(|r| !r.always()) {
                differs_from_start += 1;
            }
        }
    }
    // Guarded and multiple answers are where a wrong pass-over would show.
    assert!(differs_from_start > 3_000, "{differs_from_start}");
}
