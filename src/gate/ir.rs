//! A small, owned Python IR: just enough of each module to resolve gates after the
//! tree-sitter trees are dropped. Holding trees for thousands of files would cost gigabytes;
//! this keeps the expressions and simple statements that resolution reads.

use std::sync::Arc;

/// The IR's tables are looked up by name and offset millions of times per audit (every name
/// the resolver reads): FxHash, as the resolver's memo tables, for short keys no attacker
/// chooses; nothing iterates them in an order that reaches the output.
pub type HashMap<K, V> = rustc_hash::FxHashMap<K, V>;

use super::semantic::{BindingId, Range, ScopeId, SemanticModel};

/// A Python expression, lowered. Anything gatefix does not model is `Other` with its source.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Name(String),
    Attr(Box<Expr>, String),
    Call {
        func: Box<Expr>,
        args: Vec<Expr>,
        kwargs: Vec<(String, Expr)>,
    },
    Subscript(Box<Expr>, Box<Expr>),
    Slice,
    Int(i64),
    Str(String),
    Bool(bool),
    NoneLit,
    Tuple(Vec<Expr>),
    List(Vec<Expr>),
    Set(Vec<Expr>),
    Dict(Vec<(Expr, Expr)>),
    And(Vec<Expr>),
    Or(Vec<Expr>),
    Not(Box<Expr>),
    Compare(Box<Expr>, Vec<(CmpOp, Expr)>),
    BinOp(BinOp, Box<Expr>, Box<Expr>),
    IfExp {
        test: Box<Expr>,
        body: Box<Expr>,
        orelse: Box<Expr>,
    },
    /// An f-string of plain interpolations (`f"sm{major}{minor}"`), with its source text.
    FString {
        text: String,
        parts: Vec<FPart>,
    },
    /// `*value` among a call's arguments: the value's items are the arguments from there on.
    Starred(Box<Expr>),
    /// Source text of something not modelled (lambda, comprehension ...).
    Other(String),
}

/// A piece of an f-string: literal text, or an interpolated expression (no conversion or
/// format spec).
#[derive(Debug, Clone, PartialEq)]
pub enum FPart {
    Lit(String),
    Value(Expr),
}

impl Expr {
    /// Whether the expression reads `name` (nested scopes are `Other` text: not looked into).
    pub fn reads(&self, name: &str) -> bool {
        let any = |items: &[Expr]| items.iter().any(|e| e.reads(name));
        match self {
            Expr::Name(n) => n == name,
            Expr::Attr(obj, _) | Expr::Not(obj) | Expr::Starred(obj) => obj.reads(name),
            Expr::Call { func, args, kwargs } => {
                func.reads(name) || any(args) || kwargs.iter().any(|(_, v)| v.reads(name))
            }
            Expr::Subscript(a, b) | Expr::BinOp(_, a, b) => a.reads(name) || b.reads(name),
            Expr::Tuple(items)
            | Expr::List(items)
            | Expr::Set(items)
            | Expr::And(items)
            | Expr::Or(items) => any(items),
            Expr::Dict(pairs) => pairs.iter().any(|(k, v)| k.reads(name) || v.reads(name)),
            Expr::Compare(first, rest) => {
                first.reads(name) || rest.iter().any(|(_, e)| e.reads(name))
            }
            Expr::IfExp { test, body, orelse } => {
                test.reads(name) || body.reads(name) || orelse.reads(name)
            }
            Expr::FString { parts, .. } => parts
                .iter()
                .any(|p| matches!(p, FPart::Value(e) if e.reads(name))),
            Expr::Slice
            | Expr::Int(_)
            | Expr::Str(_)
            | Expr::Bool(_)
            | Expr::NoneLit
            | Expr::Other(_) => false,
        }
    }

    /// Positional argument `index` of a call's `args`, through a `*value` before it (`f(*cap)`
    /// passes `cap[0]`, `cap[1]`, ...): the argument itself (borrowed), or `value[k]` built
    /// for it (owned: callers tell a splat's item by that).
    pub fn positional(args: &[Expr], index: usize) -> Option<std::borrow::Cow<'_, Expr>> {
        use std::borrow::Cow;
        for (at, arg) in args.iter().enumerate() {
            if let Expr::Starred(value) = arg {
                // Only a splat that ends the positional arguments says where each item goes;
                // a name spread on (`f(backend, *args)`, the caller's own `*args`) is not read
                // item by item: following it parameter by parameter through every caller
                // multiplies work (flashinfer's prefill modules) for no device value.
                let named = matches!(value.as_ref(), Expr::Name(_));
                return (at + 1 == args.len() && index >= at && !named).then(|| {
                    Cow::Owned(Expr::Subscript(
                        value.clone(),
                        Box::new(Expr::Int((index - at) as i64)),
                    ))
                });
            }
            if at == index {
                return Some(Cow::Borrowed(arg));
            }
        }
        None
    }

    /// The expression with every read of `name` replaced by `value` (an unrolled loop's
    /// element). Nested scopes are `Other` text here, so nothing inside them is touched.
    pub fn substitute(&self, name: &str, value: &Expr) -> Expr {
        let sub = |e: &Expr| Box::new(e.substitute(name, value));
        let all = |items: &[Expr]| items.iter().map(|e| e.substitute(name, value)).collect();
        match self {
            Expr::Name(n) if n == name => value.clone(),
            Expr::Attr(obj, attr) => Expr::Attr(sub(obj), attr.clone()),
            Expr::Call { func, args, kwargs } => Expr::Call {
                func: sub(func),
                args: all(args),
                kwargs: kwargs
                    .iter()
                    .map(|(k, v)| (k.clone(), v.substitute(name, value)))
                    .collect(),
            },
            Expr::Subscript(v, i) => Expr::Subscript(sub(v), sub(i)),
            Expr::Tuple(items) => Expr::Tuple(all(items)),
            Expr::List(items) => Expr::List(all(items)),
            Expr::Set(items) => Expr::Set(all(items)),
            Expr::Dict(pairs) => Expr::Dict(
                pairs
                    .iter()
                    .map(|(k, v)| (k.substitute(name, value), v.substitute(name, value)))
                    .collect(),
            ),
            Expr::And(parts) => Expr::And(all(parts)),
            Expr::Or(parts) => Expr::Or(all(parts)),
            Expr::Not(inner) => Expr::Not(sub(inner)),
            Expr::Starred(inner) => Expr::Starred(sub(inner)),
            Expr::Compare(first, rest) => Expr::Compare(
                sub(first),
                rest.iter()
                    .map(|(op, e)| (*op, e.substitute(name, value)))
                    .collect(),
            ),
            Expr::BinOp(op, l, r) => Expr::BinOp(*op, sub(l), sub(r)),
            Expr::IfExp { test, body, orelse } => Expr::IfExp {
                test: sub(test),
                body: sub(body),
                orelse: sub(orelse),
            },
            Expr::FString { text, parts } => Expr::FString {
                text: text.clone(),
                parts: parts
                    .iter()
                    .map(|p| match p {
                        FPart::Lit(l) => FPart::Lit(l.clone()),
                        FPart::Value(e) => FPart::Value(e.substitute(name, value)),
                    })
                    .collect(),
            },
            other => other.clone(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    In,
    NotIn,
    Is,
    IsNot,
}

impl CmpOp {
    pub fn symbol(self) -> &'static str {
        match self {
            CmpOp::Eq => "==",
            CmpOp::Ne => "!=",
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
            CmpOp::In => "in",
            CmpOp::NotIn => "not in",
            CmpOp::Is => "is",
            CmpOp::IsNot => "is not",
        }
    }

    /// The operator with its operands swapped (`3 < x` is `x > 3`); `None` for membership.
    pub fn flipped(self) -> Option<CmpOp> {
        Some(match self {
            CmpOp::Lt => CmpOp::Gt,
            CmpOp::Le => CmpOp::Ge,
            CmpOp::Gt => CmpOp::Lt,
            CmpOp::Ge => CmpOp::Le,
            CmpOp::Eq | CmpOp::Ne | CmpOp::Is | CmpOp::IsNot => self,
            CmpOp::In | CmpOp::NotIn => return None,
        })
    }

    pub fn holds<T: PartialOrd>(self, lhs: &T, rhs: &T) -> bool {
        match self {
            CmpOp::Eq | CmpOp::Is => lhs == rhs,
            CmpOp::Ne | CmpOp::IsNot => lhs != rhs,
            CmpOp::Lt => lhs < rhs,
            CmpOp::Le => lhs <= rhs,
            CmpOp::Gt => lhs > rhs,
            CmpOp::Ge => lhs >= rhs,
            CmpOp::In | CmpOp::NotIn => false,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    FloorDiv,
    Mod,
    Other,
}

/// A simple statement inside a function body, in source order.
#[derive(Debug, Clone, PartialEq)]
pub enum Stmt {
    Return(Option<Expr>),
    If {
        test: Expr,
        body: Vec<Stmt>,
        orelse: Vec<Stmt>,
    },
    Assign {
        targets: Vec<Target>,
        value: Expr,
    },
    /// A statement gatefix does not model; `returns` says whether a `return` hides inside,
    /// which makes the function's value unknowable.
    Opaque {
        returns: bool,
    },
}

impl Stmt {
    /// Whether the statement (or one nested in it) reads `name`.
    pub fn reads(&self, name: &str) -> bool {
        match self {
            Stmt::Return(value) => value.as_ref().is_some_and(|e| e.reads(name)),
            Stmt::If { test, body, orelse } => {
                test.reads(name)
                    || body.iter().any(|s| s.reads(name))
                    || orelse.iter().any(|s| s.reads(name))
            }
            Stmt::Assign { value, .. } => value.reads(name),
            Stmt::Opaque { .. } => false,
        }
    }
}

/// An assignment target: a name, or a tuple of names (`major, minor = ...`).
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    Name(String),
    Tuple(Vec<Option<String>>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Param {
    pub name: String,
    pub default: Option<Expr>,
    pub annotation: Option<String>,
}

/// A function or method. `body` is `None` when the function was too large to keep
/// (it is then opaque to inference, which is said in the unknown reason).
#[derive(Debug, Clone)]
pub struct FunctionIr {
    pub qualname: String,
    /// The enclosing function (a closure reads its locals), not counting classes.
    pub parent: Option<usize>,
    /// The class a method is defined in (its qualname), for `self.x` / `cls.x`.
    pub class: Option<String>,
    pub line: u32,
    pub params: Vec<Param>,
    pub decorators: Vec<Expr>,
    pub body: Option<Vec<Stmt>>,
    /// Whether the body mentions any architecture token at all, reads a global a function
    /// stored a device value in, or returns what a device name of the module gives.
    pub archy: bool,
    /// `archy` only because it returns what a device name of the module gives, without a
    /// token of its own: a call is a device value only where its inference says how.
    pub archy_by_return: bool,
    /// Fixed-arch nvcc flag constants the body names (`sm100a_nvcc_flags`): JIT code built
    /// for that arch whatever the device is.
    pub fixed_arch_flags: Vec<String>,
    /// False when the scan parsed only some of its statements: inference must then read the
    /// whole module.
    pub complete: bool,
    /// Source size of the whole definition.
    pub bytes: usize,
    /// For an incomplete function, a lower bound on the size of the whole definition
    /// (`bytes` covers only its parsed statements); `bytes` otherwise.
    pub full_bytes: usize,
    /// For an incomplete function, whether the whole definition holds an arch token, where
    /// the text around it tells (`None`: only a whole parse does); `archy` otherwise.
    pub full_archy: Option<bool>,
    /// The body only raises `NotImplementedError` (or is `pass` / `...` under
    /// `@abstractmethod`): the method is an interface, and an instance of its class answers
    /// through a subclass's override.
    pub abstract_body: bool,
}

/// Where an imported local name points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Import {
    /// `import a.b as c` binds `c` to module `a.b`; `import a.b` binds `a` to module `a`.
    Module(String),
    /// `from a.b import c as d` binds `d` to member `c` of module `a.b`.
    Member(String, String),
}

/// What kind of decision site a gate was found at; it decides the gate's form when the
/// syntax says more than the atoms do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SiteKind {
    Test,
    Assert,
    ModuleFlag,
    LocalFlag,
    Return,
    ValueSelect,
    JitArchList,
    Decorator,
    MinCapability,
    /// A call argument (positional or keyword), a container element or a lambda body: a
    /// boolean decided by the device, passed on rather than tested here.
    Argument,
    /// A store to an attribute or a subscript (`self._fast = ...`, `opts["pdl"] = ...`).
    AttrStore,
    /// A lookup keyed by the device in a table (`SIZES.get(cap.to_int(), {})`); `expr` is
    /// `Subscript(table, key)` for both spellings.
    TableLookup,
}

/// A candidate decision site; resolution decides whether it is a gate.
#[derive(Debug, Clone)]
pub struct Site {
    pub kind: SiteKind,
    pub start: (u32, u32),
    pub end: (u32, u32),
    pub byte: usize,
    pub function: Option<usize>,
    pub text: String,
    pub expr: Expr,
    /// The enclosing `if`/`elif`/`else` tests that name a rule fact, innermost last, with
    /// whether the site is in the arm where the test holds: a site under `if is_hip():` is
    /// unreachable on NVIDIA and is not a gate.
    pub guards: Vec<(Expr, bool)>,
    /// Whether the site was recorded only because it compares a parameter (a parametric
    /// candidate): it is a gate only when the parameter resolves to a device value.
    pub parametric: bool,
    /// Whether the site's own code holds a token (not only names derived from one).
    pub own_token: bool,
}

/// A store to `self.x` / `cls.x` (or an assignment in the class body), visible to every method
/// of the class and of its subclasses.
#[derive(Debug, Clone)]
pub struct AttrAssign {
    pub value: Expr,
    /// The method it is in (`None`: the class body), and where, for its locals.
    pub function: Option<usize>,
    pub byte: usize,
    /// An annotated name in the class body (`model_config: ModelConfig = None`): a field's
    /// default, which a dataclass, pydantic model or named tuple replaces with what the
    /// constructor is given, not the value every instance holds.
    pub field_default: bool,
}

/// A call whose arguments may depend on the device, recorded so that a function's parameters
/// can be read through its callers (`supported(get_device_sm())`).
#[derive(Debug, Clone)]
pub struct CallSite {
    pub function: Option<usize>,
    pub byte: usize,
    /// The callee as written (`f`, `self.m`, `mod.f`), for finding its definition.
    pub callee: String,
    pub args: Vec<Expr>,
    pub kwargs: Vec<(String, Expr)>,
    /// The positional arguments (by index) and keywords whose value depends on the device:
    /// the parameters they feed (`feed`).
    pub device_args: Vec<usize>,
    pub device_kwargs: Vec<String>,
}

/// An assignment inside a function, lowered: the value of the semantic model's binding at
/// the same place (`ModuleIr::binding_locals`), evaluated with the locals reaching `byte`.
#[derive(Debug, Clone)]
pub struct LocalAssign {
    pub byte: usize,
    pub target: Target,
    pub value: Expr,
}

/// A store to a module global from inside a function.
#[derive(Debug, Clone, PartialEq)]
pub struct GlobalStore {
    /// The storing function (index into `ModuleIr::functions`).
    pub function: usize,
    pub byte: usize,
    pub value: Expr,
    /// Whether the stored value depends on the device as the lowering sees it.
    pub archy: bool,
}

/// Everything resolution needs from one Python file.
#[derive(Debug, Clone, Default)]
pub struct ModuleIr {
    pub module: String,
    pub is_package: bool,
    pub imports: HashMap<String, Import>,
    pub star_imports: Vec<String>,
    /// Module-level assignments: the last unconditional value of each name.
    pub assigns: HashMap<String, Expr>,
    /// Module globals stored inside functions (`global _ARCH`, then `_ARCH = ...`), by name,
    /// in source order.
    pub global_stores: HashMap<String, Vec<GlobalStore>>,
    /// The fields of record classes (`@dataclass`, `NamedTuple`), by class qualname, in
    /// declaration order: what positional arguments of a construction bind.
    pub record_fields: HashMap<String, Vec<String>>,
    /// Module-level names declared with a type and no value (`current_platform: Platform`,
    /// often under `if TYPE_CHECKING:` when a module `__getattr__` makes the object): the
    /// annotation, read when nothing else binds the name.
    pub declared: HashMap<String, Expr>,
    pub functions: Vec<FunctionIr>,
    pub function_index: HashMap<String, usize>,
    /// Classes whose bases include `NamedTuple`: calling them builds a tuple.
    pub named_tuples: Vec<String>,
    /// Classes by qualname, with their base-class expressions (for method lookup).
    pub classes: HashMap<String, Vec<Expr>>,
    /// Attributes stored on each class (by class qualname, then attribute name), last first
    /// wins as Python's last store does.
    pub class_attrs: HashMap<String, HashMap<String, Vec<AttrAssign>>>,
    /// Calls with device-dependent arguments, by the callee's last name.
    pub calls: HashMap<String, Vec<CallSite>>,
    /// Assignments inside each function (by index in `functions`), in source order.
    pub locals: HashMap<usize, Vec<LocalAssign>>,
    /// The module's semantic model, bound from the same tree: which bindings of a name reach
    /// a read inside a function, and under which guards (`resolve` reads locals through it).
    pub semantic: Arc<SemanticModel>,
    /// The function of `functions` each function scope of the model is.
    pub scope_functions: HashMap<ScopeId, usize>,
    /// The local assignment each binding of the model was lowered to: its function and its
    /// index in `locals`.
    pub binding_locals: HashMap<BindingId, (usize, usize)>,
    /// The tests of the model's `if`/`elif` arms, lowered, by their range: the guards under
    /// which a binding reaches a read.
    pub tests: HashMap<Range, Expr>,
    pub sites: Vec<Site>,
    pub parse_errors: Vec<(u32, u32)>,
    /// Expressions nested too deep to analyse (line, column): reported as warnings.
    pub too_deep: Vec<(u32, u32)>,
    /// Only some statements were parsed (`chunks`): a lookup that misses may need the rest.
    pub partial: bool,
    /// Names bound at module level from the device (flags, top-level helpers, imports of
    /// such names), sorted: other modules that import one hold a device value without a
    /// token of their own (`gate::exports`).
    pub device_exports: Vec<String>,
}

impl ModuleIr {
    pub fn function(&self, qualname: &str) -> Option<&FunctionIr> {
        self.function_index
            .get(qualname)
            .map(|&index| &self.functions[index])
    }
}

pub type SharedModule = Arc<ModuleIr>;

impl std::fmt::Display for Expr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.render(f)
    }
}

impl Expr {
    /// The expression as Python source, as `Display` writes it, made without `write!`'s
    /// argument parsing at every level: resolution makes the text of nearly every
    /// expression it meets (its pruning test reads it).
    pub fn text(&self) -> String {
        let mut out = String::with_capacity(32);
        self.render(&mut out)
            .expect("writing to a String cannot fail");
        out
    }

    fn render<W: std::fmt::Write>(&self, f: &mut W) -> std::fmt::Result {
        fn list<W: std::fmt::Write>(f: &mut W, items: &[Expr]) -> std::fmt::Result {
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                item.render(f)?;
            }
            Ok(())
        }
        fn parenthesized<W: std::fmt::Write>(f: &mut W, e: &Expr) -> std::fmt::Result {
            f.write_str("(")?;
            e.render(f)?;
            f.write_str(")")
        }
        match self {
            Expr::Name(n) => f.write_str(n),
            Expr::Attr(obj, attr) => {
                obj.render(f)?;
                f.write_str(".")?;
                f.write_str(attr)
            }
            Expr::Call { func, args, kwargs } => {
                func.render(f)?;
                f.write_str("(")?;
                list(f, args)?;
                for (i, (k, v)) in kwargs.iter().enumerate() {
                    if i > 0 || !args.is_empty() {
                        f.write_str(", ")?;
                    }
                    f.write_str(k)?;
                    f.write_str("=")?;
                    v.render(f)?;
                }
                f.write_str(")")
            }
            Expr::Subscript(value, index) => {
                value.render(f)?;
                f.write_str("[")?;
                index.render(f)?;
                f.write_str("]")
            }
            Expr::Slice => f.write_str(":"),
            Expr::Starred(inner) => {
                f.write_str("*")?;
                inner.render(f)
            }
            Expr::Int(n) => write!(f, "{n}"),
            Expr::Str(s) => write!(f, "{s:?}"),
            Expr::Bool(true) => f.write_str("True"),
            Expr::Bool(false) => f.write_str("False"),
            Expr::NoneLit => f.write_str("None"),
            Expr::Tuple(items) => {
                f.write_str("(")?;
                list(f, items)?;
                f.write_str(if items.len() == 1 { ",)" } else { ")" })
            }
            Expr::List(items) => {
                f.write_str("[")?;
                list(f, items)?;
                f.write_str("]")
            }
            Expr::Set(items) => {
                f.write_str("{")?;
                list(f, items)?;
                f.write_str("}")
            }
            Expr::Dict(_) => f.write_str("{...}"),
            Expr::And(parts) | Expr::Or(parts) => {
                let sep = if matches!(self, Expr::And(_)) {
                    " and "
                } else {
                    " or "
                };
                for (i, part) in parts.iter().enumerate() {
                    if i > 0 {
                        f.write_str(sep)?;
                    }
                    match part {
                        Expr::And(_) | Expr::Or(_) | Expr::IfExp { .. } => parenthesized(f, part)?,
                        _ => part.render(f)?,
                    }
                }
                Ok(())
            }
            Expr::Not(inner) => {
                f.write_str("not ")?;
                match inner.as_ref() {
                    Expr::And(_) | Expr::Or(_) | Expr::IfExp { .. } => parenthesized(f, inner),
                    _ => inner.render(f),
                }
            }
            Expr::Compare(first, rest) => {
                let operand = |f: &mut W, e: &Expr| match e {
                    Expr::Compare(..)
                    | Expr::And(_)
                    | Expr::Or(_)
                    | Expr::Not(_)
                    | Expr::IfExp { .. } => parenthesized(f, e),
                    _ => e.render(f),
                };
                operand(f, first)?;
                for (op, rhs) in rest {
                    f.write_str(" ")?;
                    f.write_str(op.symbol())?;
                    f.write_str(" ")?;
                    operand(f, rhs)?;
                }
                Ok(())
            }
            Expr::BinOp(op, l, r) => {
                let sym = match op {
                    BinOp::Add => "+",
                    BinOp::Sub => "-",
                    BinOp::Mul => "*",
                    BinOp::FloorDiv => "//",
                    BinOp::Mod => "%",
                    BinOp::Other => "?",
                };
                // Parentheses where Python's precedence needs them: `(a + b) // 10`,
                // `a - (b - c)`.
                let binds = |e: &Expr| match e {
                    Expr::BinOp(BinOp::Add | BinOp::Sub, ..) => Some(1),
                    Expr::BinOp(BinOp::Other, ..) => Some(0),
                    Expr::BinOp(..) => Some(2),
                    Expr::Compare(..)
                    | Expr::And(_)
                    | Expr::Or(_)
                    | Expr::Not(_)
                    | Expr::IfExp { .. } => Some(-1),
                    _ => None,
                };
                let own = binds(self).unwrap_or(2);
                match binds(l) {
                    Some(p) if p < own => parenthesized(f, l)?,
                    _ => l.render(f)?,
                }
                f.write_str(" ")?;
                f.write_str(sym)?;
                f.write_str(" ")?;
                match binds(r) {
                    Some(p) if p <= own => parenthesized(f, r),
                    _ => r.render(f),
                }
            }
            Expr::IfExp { test, body, orelse } => {
                body.render(f)?;
                f.write_str(" if ")?;
                test.render(f)?;
                f.write_str(" else ")?;
                orelse.render(f)
            }
            Expr::Other(text) | Expr::FString { text, .. } => f.write_str(text),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(n: &str) -> Box<Expr> {
        Box::new(Expr::Name(n.into()))
    }

    #[test]
    fn printed_expressions_keep_the_parentheses_python_needs() {
        let sum = Expr::BinOp(BinOp::Add, name("a"), name("b"));
        let floor = Expr::BinOp(
            BinOp::FloorDiv,
            Box::new(sum.clone()),
            Box::new(Expr::Int(10)),
        );
        assert_eq!(floor.to_string(), "(a + b) // 10");
        let plain = Expr::BinOp(
            BinOp::Add,
            Box::new(Expr::BinOp(BinOp::Mul, name("a"), name("b"))),
            name("c"),
        );
        assert_eq!(plain.to_string(), "a * b + c");
        let right = Expr::BinOp(
            BinOp::Sub,
            name("a"),
            Box::new(Expr::BinOp(BinOp::Sub, name("b"), name("c"))),
        );
        assert_eq!(right.to_string(), "a - (b - c)");
        let not_and = Expr::Not(Box::new(Expr::And(vec![
            Expr::Name("x".into()),
            Expr::Name("y".into()),
        ])));
        assert_eq!(not_and.to_string(), "not (x and y)");
    }
}
