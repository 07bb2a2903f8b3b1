//! The data of a module's semantic model: scopes, bindings, branch arms and each scope's
//! flow, in arenas addressed by id.

// FxHash, as the IR's maps: short keys (names, ids) that no attacker chooses.
use rustc_hash::FxHashMap as HashMap;

/// A byte range of the module's text.
pub type Range = (usize, usize);

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ScopeId(pub(super) u32);

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BindingId(pub(super) u32);

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BranchId(pub(super) u32);

impl ScopeId {
    pub fn index(self) -> usize {
        self.0 as usize
    }

    pub fn from_index(index: usize) -> ScopeId {
        ScopeId(index as u32)
    }
}

impl BindingId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl BranchId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScopeKind {
    Module,
    Class,
    Function,
    Lambda,
    /// A list, set or dict comprehension or a generator expression: its `for` targets are
    /// its own (an assignment expression inside binds in the enclosing function).
    Comprehension,
}

#[derive(Debug)]
pub struct Scope {
    pub kind: ScopeKind,
    /// The class's or function's name.
    pub name: Option<String>,
    pub parent: Option<ScopeId>,
    /// The text whose reads belong to this scope: a function's or class's body, a lambda's
    /// body, a whole comprehension, the whole module.
    pub range: Range,
    /// Where the class or function statement starts (a class body runs there).
    pub defined_at: usize,
    /// Every binding of each name in this scope, in source order.
    pub bindings: HashMap<String, Vec<BindingId>>,
    /// Names a `global` statement of this scope declares.
    pub globals: Vec<String>,
    /// Names a `nonlocal` statement of this scope declares.
    pub nonlocals: Vec<String>,
    /// On a class: the stores `self.x = ...` / `cls.x = ...` its methods make, by attribute.
    pub attributes: HashMap<String, Vec<BindingId>>,
    /// On a class: the last name of each base (`Base` for `Base` and `mod.Base`), keywords
    /// (`metaclass=...`) left out: what a class of this module is found by.
    pub bases: Vec<String>,
    /// On the module: stores to module names made inside functions under `global`.
    pub global_stores: HashMap<String, Vec<BindingId>>,
    /// On a function: stores made by nested functions under `nonlocal`.
    pub nonlocal_stores: HashMap<String, Vec<BindingId>>,
    /// The scope's statements as flow (`flow::Flow`).
    pub(crate) flow: Vec<Flow>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BindingKind {
    /// `x = v`, `x: T = v`, one target of `a = b = v`.
    Assignment,
    /// `x: T` with no value: declared, not bound (reading it raises at run time).
    Annotation,
    /// One name of an unpacking target, `path` the indexes down to it (`a, (b, c) = v`
    /// binds `c` at `[1, 1]`). Also used for `for` and `with` targets that unpack.
    Unpacking {
        path: Vec<usize>,
    },
    /// `x += v`: a new binding that reads the old one.
    Augmented,
    /// `(x := v)`.
    Walrus,
    /// The target of a `for` statement or a comprehension's `for` clause (`path` as for an
    /// unpacking, empty for a plain name).
    For {
        path: Vec<usize>,
    },
    /// `with v as x` (`path` as for an unpacking).
    With {
        path: Vec<usize>,
    },
    /// `except E as x`.
    Except,
    /// `import a.b as c` (`module` "a.b", no member) or `from a import b as c` (member "b").
    Import {
        module: String,
        member: Option<String>,
    },
    FunctionDef,
    ClassDef,
    /// A parameter: its position among the parameters, its default and its annotation.
    Parameter {
        index: usize,
        default: Option<Range>,
        annotation: Option<Range>,
    },
    /// `self.x = v` in a method (bound on the method's class, `Scope::attributes`).
    Attribute,
    /// `del x`: the name is unbound after it.
    Deletion,
    /// A name a `case` pattern captures.
    MatchCapture,
}

#[derive(Debug)]
pub struct Binding {
    pub name: String,
    pub kind: BindingKind,
    /// The scope the binding is made in (for `Attribute`, the method's).
    pub scope: ScopeId,
    /// The innermost branch arm the binding sits in, within its scope.
    pub branch: Option<BranchId>,
    /// The statement (or clause, parameter, comprehension clause) that binds.
    pub statement: Range,
    /// The value's expression: the right-hand side, the iterable, the context manager, the
    /// parameter's default; `None` where there is none (a `def`, an annotation).
    pub value: Option<Range>,
    /// Reads at or after this offset may see the binding.
    pub visible_from: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BranchKind {
    /// The `arm`-th test of an `if`/`elif` chain (0 for the `if`).
    If {
        arm: usize,
    },
    /// The `else` of an `if` chain.
    Else,
    /// A `for` or `while` body.
    Loop,
    /// A loop's `else` (runs when no `break` left the loop).
    LoopElse,
    Try,
    Except,
    TryElse,
    Finally,
    /// A `case` of a `match`.
    Case,
}

#[derive(Debug)]
pub struct Branch {
    pub kind: BranchKind,
    /// The enclosing branch arm in the same scope.
    pub parent: Option<BranchId>,
    /// The test that selects the arm (`if`/`elif`/`while` condition, the `for` iterable,
    /// the `except` clause's types, the `case` pattern).
    pub test: Option<Range>,
    pub range: Range,
}

/// A binding that reaches a read (`None`: no binding of the scope; see `flow`'s module doc), under
/// any one of `ways` (each a conjunction of guards; `[[]]` is always).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Reach {
    pub binding: Option<BindingId>,
    pub ways: Vec<Vec<Guard>>,
}

impl Reach {
    /// Whether it reaches on every path to the read.
    pub fn always(&self) -> bool {
        self.ways.iter().any(Vec::is_empty)
    }
}

/// `reaching`'s answers, by the name read and where.
type ReachedByRead = rustc_hash::FxHashMap<(Box<str>, usize), Vec<Reach>>;

/// What the flow walk knows of a name at a point: per binding (`None`: unbound), the ways it
/// is the live one; sorted by binding.
pub(super) type WalkState = Vec<(Option<BindingId>, Vec<Vec<Guard>>)>;

/// A loop walked whole for a name from an entry state (`flow::Walker`): the state after it,
/// and what its `else` clause handed the loop around it (`break`, `continue`).
#[derive(Debug, Clone)]
pub(super) struct LoopWalk {
    pub(super) after: Option<WalkState>,
    pub(super) outer_breaks: Vec<WalkState>,
    pub(super) outer_continues: Vec<WalkState>,
}

/// Loops walked whole, by the name, the loop's start and the entry state: every read of a
/// name walks its function from the top, through the same loops from the same states.
type LoopWalks = rustc_hash::FxHashMap<(Box<str>, usize, Option<WalkState>), LoopWalk>;

/// The semantic model of one module.
#[derive(Debug, Default)]
pub struct SemanticModel {
    pub scopes: Vec<Scope>,
    pub bindings: Vec<Binding>,
    pub branches: Vec<Branch>,
    /// Whether nesting deeper than the binder follows was cut (the model then misses the
    /// bindings inside; a consumer says so rather than trusting it).
    pub too_deep: bool,
    /// Every scope by where its range starts, sorted (`scope_at`).
    pub(super) by_start: Vec<(usize, ScopeId)>,
    /// `reaching`'s answers by name and offset. The query reads the model alone, so one
    /// answer serves every resolver that asks it (each caller's, each round's); a module's
    /// model lives as long as its lowering.
    pub(super) reached: std::sync::Mutex<ReachedByRead>,
    /// Loops the flow walk went through whole (`flow::Walker`), kept for the next read.
    pub(super) loop_walks: std::sync::Mutex<LoopWalks>,
}

/// The module scope is always the first.
pub const MODULE_SCOPE: ScopeId = ScopeId(0);

impl SemanticModel {
    pub fn scope(&self, id: ScopeId) -> &Scope {
        &self.scopes[id.index()]
    }

    pub fn binding(&self, id: BindingId) -> &Binding {
        &self.bindings[id.index()]
    }

    pub fn branch(&self, id: BranchId) -> &Branch {
        &self.branches[id.index()]
    }

    /// The innermost scope whose reads include `offset`. Scope ranges nest, so it is the
    /// scope that starts last at or before `offset`, or the first of that one's ancestors
    /// whose range holds `offset`: a binary search and a climb, not a scan.
    pub fn scope_at(&self, offset: usize) -> ScopeId {
        let after = self.by_start.partition_point(|&(start, _)| start <= offset);
        let mut current = after.checked_sub(1).map(|i| self.by_start[i].1);
        while let Some(id) = current {
            let (start, end) = self.scope(id).range;
            if start <= offset && offset < end {
                return id;
            }
            current = self.scope(id).parent;
        }
        MODULE_SCOPE
    }

    /// `scope_at` by scanning every scope, for checking it.
    #[cfg(test)]
    pub(super) fn scope_at_by_scan(&self, offset: usize) -> ScopeId {
        let mut best = MODULE_SCOPE;
        let mut best_len = usize::MAX;
        for (i, scope) in self.scopes.iter().enumerate() {
            let (start, end) = scope.range;
            if start <= offset && offset < end && end - start < best_len {
                best = ScopeId(i as u32);
                best_len = end - start;
            }
        }
        best
    }

    /// The classes of the module (at any depth) named `name`.
    pub fn classes_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = ScopeId> + 'a {
        self.scopes
            .iter()
            .enumerate()
            .filter(move |(_, s)| s.kind == ScopeKind::Class && s.name.as_deref() == Some(name))
            .map(|(i, _)| ScopeId(i as u32))
    }

    /// What may set attribute `attr` of an instance whose method is defined in `class`: the
    /// class body's own bindings of the name and its methods' `self.attr` stores, then those
    /// of its bases, then those of its subclasses (an instance may be of any of them), as far
    /// as this module defines them. Each class is read once.
    pub fn attribute_bindings(&self, class: ScopeId, attr: &str) -> Vec<BindingId> {
        let mut order = self.related(class, |scope, _| {
            scope
                .bases
                .iter()
                .flat_map(|base| self.classes_named(base))
                .collect()
        });
        for derived in self.related(class, |_, id| self.derived_from(id)) {
            if !order.contains(&derived) {
                order.push(derived);
            }
        }
        let mut out = Vec::new();
        for class in order {
            let scope = self.scope(class);
            out.extend(scope.bindings.get(attr).into_iter().flatten().copied());
            out.extend(scope.attributes.get(attr).into_iter().flatten().copied());
        }
        out
    }

    /// `class` and the classes reached from it by `step`, transitively, each once, in the
    /// order found.
    fn related(
        &self,
        class: ScopeId,
        step: impl Fn(&Scope, ScopeId) -> Vec<ScopeId>,
    ) -> Vec<ScopeId> {
        let mut order = vec![class];
        let mut i = 0;
        while i < order.len() {
            for next in step(self.scope(order[i]), order[i]) {
                if !order.contains(&next) {
                    order.push(next);
                }
            }
            i += 1;
        }
        order
    }

    /// The classes of the module that name `class` among their bases.
    fn derived_from(&self, class: ScopeId) -> Vec<ScopeId> {
        let Some(name) = self.scope(class).name.as_deref() else {
            return Vec::new();
        };
        (0..self.scopes.len())
            .map(|i| ScopeId(i as u32))
            .filter(|&id| {
                let scope = self.scope(id);
                scope.kind == ScopeKind::Class && scope.bases.iter().any(|b| b == name)
            })
            .collect()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GuardKind {
    /// An `if`/`elif`/`while` test or a `case` guard (`range` the expression).
    Test,
    /// A `case` pattern matched the subject (`range` the patterns).
    Case,
    /// A loop's body ran at least once (`range` the iterable or the `while` test).
    Iterated,
    /// An earlier pass of a loop's body ran before this one (`range` as for `Iterated`).
    Repeated,
    /// A `try` body ran to its end without raising (`range` the body).
    Completed,
    /// This `except` clause caught an exception of the try body (`range` the types, or the
    /// clause for a bare `except:`).
    Handled,
}

/// One condition on a path: `kind` over the text at `range`, holding or not.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Guard {
    pub kind: GuardKind,
    pub range: Range,
    pub holds: bool,
}

impl Guard {
    pub fn negated(self) -> Guard {
        Guard {
            holds: !self.holds,
            ..self
        }
    }

    /// The guard in words, quoting the module's text.
    pub fn describe(&self, src: &[u8]) -> String {
        let text = String::from_utf8_lossy(&src[self.range.0..self.range.1.min(src.len())]);
        let text = text.lines().next().unwrap_or_default().trim().to_string();
        match (self.kind, self.holds) {
            (GuardKind::Test, true) => text,
            (GuardKind::Test, false) => format!("not {text}"),
            (GuardKind::Case, true) => format!("case {text}"),
            (GuardKind::Case, false) => format!("not case {text}"),
            (GuardKind::Iterated, true) => format!("looped over {text}"),
            (GuardKind::Iterated, false) => format!("never looped over {text}"),
            (GuardKind::Repeated, true) => format!("again over {text}"),
            (GuardKind::Repeated, false) => format!("first over {text}"),
            (GuardKind::Completed, true) => "no exception".to_string(),
            (GuardKind::Completed, false) => "an exception".to_string(),
            (GuardKind::Handled, true) => format!("except {text}"),
            (GuardKind::Handled, false) => format!("not except {text}"),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ExitKind {
    Return,
    Raise,
    Break,
    Continue,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LoopKind {
    For,
    While,
}

/// One arm of an `if` chain, a `match` or a `try`'s handlers.
#[derive(Debug)]
pub(crate) struct Arm {
    /// What selects the arm (`None`: an `else`, a bare `except:`, an irrefutable `case`).
    pub test: Option<Range>,
    pub kind: GuardKind,
    /// A `case` clause's `if` guard, which must hold too.
    pub also: Option<Range>,
    pub range: Range,
    pub body: Vec<Flow>,
}

#[derive(Debug)]
pub(crate) enum Flow {
    /// A binding takes effect at `at`.
    Bind {
        binding: BindingId,
        at: usize,
    },
    /// An `if` chain or a `match`: at most one arm runs; with no `else` (or irrefutable
    /// case), none may.
    If {
        range: Range,
        arms: Vec<Arm>,
        exhaustive: bool,
    },
    /// Boxed, as `Try` is: most steps are bindings, and the enum is as large as its
    /// largest variant.
    Loop(Box<LoopFlow>),
    Try(Box<TryFlow>),
    /// Control leaves at `at` (the statement's end: what it reads is read before).
    Exit {
        kind: ExitKind,
        at: usize,
    },
}

/// A `for` or `while` loop (`Flow::Loop`).
#[derive(Debug)]
pub(crate) struct LoopFlow {
    pub range: Range,
    pub kind: LoopKind,
    /// The iterable (read once) or the `while` test (read before every pass).
    pub header: Range,
    pub body_end: usize,
    pub body: Vec<Flow>,
    pub orelse: Vec<Flow>,
    pub orelse_range: Option<Range>,
}

/// A `try` statement (`Flow::Try`).
#[derive(Debug)]
pub(crate) struct TryFlow {
    pub range: Range,
    pub body_range: Range,
    pub body: Vec<Flow>,
    pub handlers: Vec<Arm>,
    pub orelse: Vec<Flow>,
    pub orelse_range: Option<Range>,
    pub finally: Vec<Flow>,
    pub finally_range: Option<Range>,
}

impl Flow {
    /// The statement's range, for an `if`, a loop or a `try`.
    pub(super) fn compound_range(&self) -> Option<Range> {
        match self {
            Flow::Bind { .. } | Flow::Exit { .. } => None,
            Flow::If { range, .. } => Some(*range),
            Flow::Loop(inner) => Some(inner.range),
            Flow::Try(inner) => Some(inner.range),
        }
    }

    pub(super) fn start(&self) -> usize {
        match self {
            Flow::Bind { at, .. } | Flow::Exit { at, .. } => *at,
            Flow::If { range, .. } => range.0,
            Flow::Loop(inner) => inner.range.0,
            Flow::Try(inner) => inner.range.0,
        }
    }
}
