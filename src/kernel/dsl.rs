//! L5, DSL admission: CuTe DSL ops declare the architectures they compile for
//! (`admissible_archs`), and raise `OpError` at compile time on any other. A Python module that
//! builds such ops is a DSL kernel: it has a kernel at a target only when the ops it builds
//! admit the DSL's arch for that GPU. The unit is a top-level class or function of a module:
//! one kernel, compiled for the target only if every op it builds admits it.
//!
//! Read from the site's text, never imported:
//! - the op classes: any `class ...Op` in a file under `cute/nvgpu/<namespace>/`
//!   (nvidia-cutlass-dsl, and vendored copies such as flashinfer's `data/cutlass/python/CuTeDSL`)
//!   with an `admissible_archs = [...]` list, `Arch.filter(lambda arch: ...)` or an
//!   `if not <test of arch>:` check (`__post_init__`), else inheriting one (`class
//!   MmaMXF4Op(BlockScaledMmaOp)`), else admitting any arch;
//! - the kernels: top-level classes and functions outside those folders that call
//!   `<namespace>.<Op>(` or an op imported from `...nvgpu.<namespace>`, or a definition that
//!   does (a DSL helper, a kernel class, a definition of the same module; up to four levels).
//!
//! - NVVM intrinsics a kernel calls through MLIR's `nvvm` dialect (`nvvm.tcgen05_mma(...)`),
//!   counted as the op `nvvm.<family>` with the targets the PTX ISA gives the instructions
//!   (`NVVM_INTRINSICS`); a module that calls them itself is a wrapper of instructions, and its
//!   functions are part of the kernels that call them (sglang's `cute_utils/_tcgen05.py`).
//!
//! The DSL's arch for a GPU is `sm_<major><minor>a` from compute capability 9.0 up, plain
//! below (`detect_gpu_arch` in `cutlass/base_dsl/env_manager.py`); `is_family_of(X)` holds
//! for the same major, a minor at least X's, and an `a`/`f` suffix (`cutlass/base_dsl/arch.py`;
//! there sm_101a/f count only as the family of sm_110f).

use std::collections::HashMap;
use std::sync::Arc;

use memchr::memmem;
use rayon::prelude::*;
use rustc_hash::{FxHashMap, FxHashSet};

use crate::arch::Arch;
use crate::gate::predicate::{Admits, Pred, evaluate};
use crate::scan::Gate;

/// One arch of the DSL's `Arch` enum: major, minor, suffix (`""`, `"a"`, `"f"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct DslArch {
    pub major: u32,
    pub minor: u32,
    pub suffix: char,
}

impl DslArch {
    /// The arch the DSL compiles for on a GPU of this compute capability.
    pub fn of_device(target: Arch) -> DslArch {
        DslArch {
            major: target.major,
            minor: target.minor,
            suffix: if target.major >= 9 { 'a' } else { ' ' },
        }
    }

    /// `Arch.sm_100a` → 10.0a; the last digit is the minor.
    fn parse(name: &str) -> Option<DslArch> {
        let rest = name.strip_prefix("sm_")?;
        let (digits, suffix) = match rest.chars().last()? {
            c @ ('a' | 'f') => (&rest[..rest.len() - 1], c),
            _ => (rest, ' '),
        };
        if digits.len() < 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let (major, minor) = digits.split_at(digits.len() - 1);
        Some(DslArch {
            major: major.parse().ok()?,
            minor: minor.parse().ok()?,
            suffix,
        })
    }

    fn is_family_of(self, family: DslArch) -> bool {
        if self.major == 10 && self.minor == 1 && self.suffix != ' ' {
            return family.major == 11 && family.minor == 0;
        }
        self.major == family.major && self.minor >= family.minor && self.suffix != ' '
    }

    pub fn name(self) -> String {
        format!("sm_{}{}{}", self.major, self.minor, self.suffix)
            .trim_end()
            .to_string()
    }
}

/// What an op's `admissible_archs` says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admission {
    /// A literal list.
    List(Vec<DslArch>),
    /// `Arch.filter(lambda arch: <body>)`, the body kept as text.
    Filter(String),
    /// Something gatefix does not evaluate.
    Unknown(String),
    /// The op declares no admission: it compiles for any arch the DSL targets.
    Any,
}

impl Admission {
    /// Whether the arch is admitted; `None` when it cannot be told.
    pub fn admits(&self, arch: DslArch) -> Option<bool> {
        match self {
            Admission::List(archs) => Some(archs.contains(&arch)),
            Admission::Filter(body) => eval_filter(body, arch),
            Admission::Unknown(_) => None,
            Admission::Any => Some(true),
        }
    }

    pub fn words(&self) -> String {
        match self {
            Admission::List(archs) => {
                let names: Vec<String> = archs.iter().map(|a| a.name()).collect();
                format!("[{}]", names.join(", "))
            }
            Admission::Filter(body) => format!("Arch.filter(lambda arch: {body})"),
            Admission::Unknown(text) => text.clone(),
            Admission::Any => "none declared".into(),
        }
    }
}

/// A DSL op class and where its admission is declared.
#[derive(Debug, Clone)]
pub struct Op {
    /// `<namespace>.<Class>`, as kernels name it (`tcgen05.BlockScaledMmaOp`).
    pub key: String,
    /// Where `admissible_archs` is assigned (the class itself or the base it inherits from).
    pub file: String,
    pub line: u32,
    pub admission: Admission,
}

impl Op {
    /// Where its admission is declared: `file:line`, or the document an intrinsic's comes
    /// from.
    fn declared_at(&self) -> String {
        match self.line {
            0 => self.file.clone(),
            line => format!("{}:{line}", self.file),
        }
    }
}

/// An op a kernel module builds, directly or through a helper function.
#[derive(Debug, Clone)]
pub struct OpUse {
    pub op: String,
    /// The line of the call in the kernel module.
    pub line: u32,
    /// The top-level class or function the call is in: the kernel it belongs to.
    pub group: String,
    /// The helper the op is built in, when the call is to one (`blackwell_helpers.make_trivial_tiled_mma`).
    pub via: Option<String>,
    /// The branch tests the call runs under, in its function and in the helpers on the way
    /// (`if const_expr(self.arch // 10 in [8, 12]): ... else: make_trivial_tiled_mma(...)`):
    /// where a gate the scan found is such a test and blocks the target, the op is not built
    /// there.
    pub under: Vec<BranchTest>,
}

/// Gates that are whole branch tests, by file and line: each test's text and its predicate.
type BranchGates = FxHashMap<(Arc<str>, u32), Vec<(String, Pred)>>;

/// A branch an op call or helper call sits under: the single-line `if`/`elif` test at `line`
/// of `path`, which must hold (`holds`) or fail (an `else`, a later `elif`) for the call to
/// run. `test` is the test's text, outer parentheses and `const_expr(...)` taken off.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BranchTest {
    pub path: Arc<str>,
    pub line: u32,
    pub test: Arc<str>,
    pub holds: bool,
}

/// The DSL ops of a site and the modules that build them.
#[derive(Debug, Default)]
pub struct DslIndex {
    pub ops: HashMap<String, Op>,
    /// Module (dotted) → its file and the ops it builds, in order. Only modules building at
    /// least one op with a declared admission.
    pub kernels: HashMap<String, (String, Vec<OpUse>)>,
    /// The gates the scan found that are whole branch tests of op uses (`set_branch_gates`),
    /// by file and line: the test's text and the gate's predicate.
    branch_gates: BranchGates,
}

/// A class read from an op file: its name, bases, and its own admission.
struct ClassDef {
    name: String,
    bases: Vec<String>,
    admission: Option<(u32, Admission)>,
    /// A `if not <arch test>:` in the class (a `__post_init__` check raising OpError).
    check: Option<(u32, Admission)>,
}

/// NVVM intrinsics by name prefix: the op key they are counted under, and the targets whose
/// PTX has their instructions. `tcgen05.*` (the fifth-generation tensor core and its tensor
/// memory): "requires sm_100a, sm_101a, sm_103a" and the `f` family targets of those
/// (PTX ISA 8.8, section 9.7.16, Target ISA notes; sm_101 is renumbered sm_110 in CUDA 13).
/// sm_120 and sm_121 have no tcgen05.
const NVVM_INTRINSICS: &[(&str, &str, &[&str])] = &[(
    "nvvm.tcgen05",
    "tcgen05_",
    &[
        "sm_100a", "sm_100f", "sm_101a", "sm_101f", "sm_103a", "sm_103f", "sm_110a", "sm_110f",
    ],
)];

/// At most this many bytes of a file are read (generated tables are not DSL code).
const MAX_FILE_BYTES: usize = 2 << 20;

/// A file that builds ops: its module and, per top-level class or function, the calls.
struct Builder<'a> {
    path: &'a str,
    module: &'a str,
    /// Its op calls.
    uses: Vec<OpUse>,
    /// Calls of functions of other modules or of its own, not yet expanded: (line, group,
    /// module, function).
    helper_calls: Vec<HelperCall>,
}

impl DslIndex {
    /// From the site's Python files: `(relative path, dotted module, bytes)`.
    pub fn from_files<'a>(
        files: impl IntoIterator<Item = (&'a str, Option<&'a str>, &'a [u8])>,
    ) -> DslIndex {
        let files: Vec<(&str, Option<&str>, &[u8])> = files
            .into_iter()
            .filter(|(_, _, src)| src.len() <= MAX_FILE_BYTES)
            .collect();
        let mut index = DslIndex::default();
        // Op files first: every class of a namespace, then inheritance within it.
        let mut by_namespace: HashMap<String, Vec<(String, ClassDef)>> = HashMap::new();
        for (path, _, src) in &files {
            let Some(namespace) = op_namespace(path) else {
                continue;
            };
            if memmem::find(src, b"Op").is_none() {
                continue;
            }
            let text = text_of(src);
            for class in classes(&text) {
                by_namespace
                    .entry(namespace.to_string())
                    .or_default()
                    .push((path.to_string(), class));
            }
        }
        for (namespace, classes) in &by_namespace {
            for (path, class) in classes {
                if let Some(op) = op_of(namespace, path, class, classes) {
                    index.ops.insert(op.key.clone(), op);
                }
            }
        }
        // The NVVM intrinsics a kernel may call directly, through MLIR's `nvvm` dialect
        // (`nvvm.tcgen05_mma(...)`, sglang's `cute_utils/_tcgen05.py`), with the targets the
        // PTX ISA gives their instructions.
        for (key, prefix, archs) in NVVM_INTRINSICS {
            index.ops.insert(
                key.to_string(),
                Op {
                    key: key.to_string(),
                    file: format!("the PTX ISA (`{prefix}*` intrinsics of the `nvvm` dialect)"),
                    line: 0,
                    admission: Admission::List(
                        archs.iter().filter_map(|a| DslArch::parse(a)).collect(),
                    ),
                },
            );
        }
        let namespaces: Vec<String> = by_namespace.keys().cloned().collect();
        let op_names: FxHashSet<&str> = index
            .ops
            .keys()
            .filter_map(|k| k.split_once('.').map(|(_, name)| name))
            .collect();
        // Every other module's op calls and helper calls, per top-level definition.
        let builders: Vec<Builder> = files
            .par_iter()
            .filter(|(path, module, src)| {
                module.is_some()
                    && op_namespace(path).is_none()
                    && (memmem::find(src, b"nvgpu").is_some()
                        || memmem::find(src, b"cutlass").is_some())
            })
            .filter_map(|(path, module, src)| {
                let module = module.expect("filtered");
                let text = text_of(src);
                let (uses, helper_calls) =
                    calls(&text, path, module, &index.ops, &op_names, &namespaces);
                (!uses.is_empty() || !helper_calls.is_empty()).then_some(Builder {
                    path,
                    module,
                    uses,
                    helper_calls,
                })
            })
            .collect();
        // What each (module, top-level definition) builds: its own op calls, then, over a few
        // rounds, the ops of the definitions it calls that are part of one kernel (helpers of
        // the DSL such as `blackwell_helpers.make_trivial_tiled_mma`, kernel classes of other
        // modules, definitions of its own module), so `run -> compile -> Kernel` is one kernel.
        // A vendored copy (`flashinfer.data.cutlass.python.CuTeDSL.cutlass.utils.x`) is
        // imported as `cutlass.utils.x`: it is known by both names.
        // Module -> top-level definition -> the ops it builds, borrowing the builders' names
        // (the rounds look up every helper call each round: no key is cloned to look up).
        let mut built: FxHashMap<&str, FxHashMap<&str, Built>> = FxHashMap::default();
        // Modules that call NVVM intrinsics themselves: thin wrappers of instructions
        // (`_tcgen05.alloc`), part of whatever kernel calls them.
        let intrinsic_wrappers: FxHashSet<&str> = builders
            .iter()
            .filter(|b| b.uses.iter().any(|u| u.op.starts_with("nvvm.")))
            .map(|b| b.module)
            .collect();
        let mut aliases: FxHashMap<String, String> = FxHashMap::default();
        for builder in &builders {
            if let Some(at) = builder.module.rfind(".cutlass.") {
                aliases.insert(
                    builder.module[at + 1..].to_string(),
                    builder.module.to_string(),
                );
            }
            for op_use in &builder.uses {
                built
                    .entry(builder.module)
                    .or_default()
                    .entry(op_use.group.as_str())
                    .or_default()
                    .push(op_use.clone());
            }
        }
        const ROUNDS: usize = 4;
        for _ in 0..ROUNDS {
            let mut added: Vec<(&str, &str, OpUse)> = Vec::new();
            // (module, definition, op, branch tests) of what `added` holds.
            let mut adding: FxHashMap<(&str, &str, &str), Vec<Vec<BranchTest>>> =
                FxHashMap::default();
            for builder in &builders {
                for (line, group, called, function, call_under) in &builder.helper_calls {
                    let module = aliases.get(called).unwrap_or(called).as_str();
                    // A function of another library module may dispatch (a DSL path for one
                    // arch, a JIT or native one for others): the linker follows it instead.
                    // What a kernel is made of: the DSL's own helpers, kernel classes, and
                    // definitions of its own module.
                    let part_of_kernel = module == builder.module
                        || module.split('.').any(|segment| segment == "cutlass")
                        || function.starts_with(|c: char| c.is_ascii_uppercase())
                        || intrinsic_wrappers.contains(module);
                    if !part_of_kernel {
                        continue;
                    }
                    let Some(callee) = built.get(module).and_then(|m| m.get(function.as_str()))
                    else {
                        continue;
                    };
                    let have = built
                        .get(builder.module)
                        .and_then(|m| m.get(group.as_str()));
                    for op_use in &callee.uses {
                        let under = if op_use.under.is_empty() {
                            call_under.clone()
                        } else {
                            let mut under = call_under.clone();
                            under.extend(op_use.under.iter().cloned());
                            under.sort();
                            under.dedup();
                            under
                        };
                        let key = (builder.module, group.as_str(), op_use.op.as_str());
                        let dominated =
                            |kept: &Vec<BranchTest>| kept.iter().all(|b| under.contains(b));
                        let known = have.is_some_and(|h| h.dominates(&op_use.op, &under))
                            || adding
                                .get(&key)
                                .is_some_and(|kept| kept.iter().any(dominated));
                        if known {
                            continue;
                        }
                        let via = if module == builder.module {
                            function.clone()
                        } else {
                            format!("{called}.{function}")
                        };
                        let via = match &op_use.via {
                            Some(deeper) => format!("{via} > {deeper}"),
                            None => via,
                        };
                        adding.entry(key).or_default().push(under.clone());
                        added.push((
                            builder.module,
                            group.as_str(),
                            OpUse {
                                op: op_use.op.clone(),
                                line: *line,
                                group: group.clone(),
                                via: Some(via),
                                under,
                            },
                        ));
                    }
                }
            }
            // It borrows `built`'s op names, and `built` grows below.
            drop(adding);
            if added.is_empty() {
                break;
            }
            for (module, group, op_use) in added {
                built
                    .entry(module)
                    .or_default()
                    .entry(group)
                    .or_default()
                    .push(op_use);
            }
        }
        for builder in &builders {
            let Some(groups) = built.remove(builder.module) else {
                continue;
            };
            let mut uses: Vec<OpUse> = groups.into_values().flat_map(|g| g.uses).collect();
            let declared = uses.iter().any(|u| {
                index
                    .ops
                    .get(&u.op)
                    .is_some_and(|op| op.admission != Admission::Any)
            });
            if declared {
                uses.sort_by(|a, b| {
                    a.line
                        .cmp(&b.line)
                        .then_with(|| a.group.cmp(&b.group))
                        .then_with(|| a.op.cmp(&b.op))
                        .then_with(|| a.under.cmp(&b.under))
                });
                uses.dedup_by(|a, b| {
                    a.line == b.line && a.op == b.op && a.group == b.group && a.under == b.under
                });
                index
                    .kernels
                    .insert(builder.module.to_string(), (builder.path.to_string(), uses));
            }
        }
        index
    }

    /// Keeps the scan's gates that are whole branch tests of op uses: at a target where such
    /// a gate blocks the branch, the ops under it are not built (`admitted`). Read from the
    /// gates, not from the test's words, so only tests the resolver decided count.
    pub fn set_branch_gates(&mut self, gates: &[Gate]) {
        let wanted: FxHashSet<(&str, u32)> = self
            .kernels
            .values()
            .flat_map(|(_, uses)| uses.iter().flat_map(|u| &u.under))
            .map(|b| (&*b.path, b.line))
            .collect();
        let mut kept = BranchGates::default();
        for gate in gates {
            if wanted.contains(&(gate.file.as_str(), gate.line)) {
                kept.entry((Arc::from(gate.file.as_str()), gate.line))
                    .or_default()
                    .push((branch_test_text(&gate.text), gate.predicate.clone()));
            }
        }
        self.branch_gates = kept;
    }

    /// Whether the target never takes this branch: its test is a gate whose predicate says
    /// the opposite of what the branch needs there.
    fn blocks(&self, branch: &BranchTest, target: Arch) -> bool {
        let Some(gates) = self.branch_gates.get(&(branch.path.clone(), branch.line)) else {
            return false;
        };
        gates.iter().filter(|(test, _)| **test == *branch.test).any(
            |(_, predicate)| match evaluate(predicate, target.plain(), None) {
                Admits::Yes => !branch.holds,
                Admits::No => branch.holds,
                Admits::Unknown(_) => false,
            },
        )
    }

    /// Whether a top-level class or function of a module builds DSL ops, one of them with a
    /// declared admission (a kernel needs its ops to admit the target).
    pub fn is_kernel(&self, module: &str, kernel: &str) -> bool {
        self.kernels.get(module).is_some_and(|(_, uses)| {
            uses.iter().any(|u| {
                u.group == kernel
                    && self
                        .ops
                        .get(&u.op)
                        .is_some_and(|op| op.admission != Admission::Any)
            })
        })
    }
}

/// An op class's admission: its own `admissible_archs`, else its own arch check, else the
/// first base of the namespace that has one (bounded), else none declared. Only classes
/// named `...Op` are ops.
fn op_of(
    namespace: &str,
    path: &str,
    class: &ClassDef,
    classes: &[(String, ClassDef)],
) -> Option<Op> {
    if !class.name.ends_with("Op") {
        return None;
    }
    let mut current = (path, class);
    for _ in 0..16 {
        if let Some((line, admission)) = current.1.admission.as_ref().or(current.1.check.as_ref()) {
            return Some(Op {
                key: format!("{namespace}.{}", class.name),
                file: current.0.to_string(),
                line: *line,
                admission: admission.clone(),
            });
        }
        // A qualified base (`atom.MmaOp`) is another module's class.
        let base = current.1.bases.iter().find_map(|b| {
            classes
                .iter()
                .find(|(_, c)| c.name == *b && c.name != current.1.name)
        });
        match base {
            Some((p, c)) => current = (p.as_str(), c),
            None => break,
        }
    }
    Some(Op {
        key: format!("{namespace}.{}", class.name),
        file: path.to_string(),
        line: 0,
        admission: Admission::Any,
    })
}

/// `.../cute/nvgpu/<namespace>/<file>.py` → the namespace.
fn op_namespace(path: &str) -> Option<&str> {
    let at = path.find("cute/nvgpu/").map(|i| i + "cute/nvgpu/".len())?;
    let rest = &path[at..];
    let (namespace, file) = rest.split_once('/')?;
    (!file.contains('/') && file.ends_with(".py") && !namespace.is_empty()).then_some(namespace)
}

/// The classes of a file with their bases and their own admission, read by lines: a `class`
/// at the start of a line opens one; `admissible_archs =` indented under it (with its
/// brackets balanced over the following lines) is its declaration, and `if not <test of
/// arch>:` in it its check.
fn classes(text: &str) -> Vec<ClassDef> {
    let mut out: Vec<ClassDef> = Vec::new();
    let lines: Vec<&str> = text.split('\n').collect();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let trimmed = line.trim_start();
        if let Some(rest) = line.strip_prefix("class ") {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            let bases = rest[name.len()..]
                .strip_prefix('(')
                .and_then(|r| r.split_once(')'))
                .map(|(inside, _)| {
                    inside
                        .split(',')
                        .map(|b| b.trim().to_string())
                        .filter(|b| !b.is_empty() && !b.contains('='))
                        .collect()
                })
                .unwrap_or_default();
            if !name.is_empty() {
                out.push(ClassDef {
                    name,
                    bases,
                    admission: None,
                    check: None,
                });
            }
        } else if !line.starts_with(char::is_whitespace)
            && !trimmed.is_empty()
            && !trimmed.starts_with('#')
        {
            // A top-level statement ends the class.
            if !trimmed.starts_with('@') && !trimmed.starts_with(')') {
                out.push(ClassDef {
                    name: String::new(),
                    bases: Vec::new(),
                    admission: None,
                    check: None,
                });
            }
        } else if let Some(class) = out.last_mut()
            && !class.name.is_empty()
            && line.starts_with(char::is_whitespace)
        {
            if class.admission.is_none()
                && let Some(value) = trimmed.strip_prefix("admissible_archs")
                && let Some(value) = value.trim_start().strip_prefix('=')
                && !value.starts_with('=')
            {
                // The value, over as many lines as its brackets need (bounded).
                let mut expr = value.to_string();
                let mut j = i;
                while depth(&expr) > 0 && j + 1 < lines.len() && j < i + 64 {
                    j += 1;
                    expr.push(' ');
                    expr.push_str(lines[j].trim());
                }
                class.admission = Some((i as u32 + 1, admission(expr.trim())));
                i = j;
            } else if class.check.is_none()
                && let Some(test) = trimmed.strip_prefix("if not ")
                && let Some(test) = test.trim_end().strip_suffix(':')
                && test.contains("arch")
                && test.contains("Arch.")
                && !test.contains("self.")
            {
                let test = test.trim();
                let test = test
                    .strip_prefix('(')
                    .and_then(|t| t.strip_suffix(')'))
                    .unwrap_or(test);
                class.check = Some((i as u32 + 1, Admission::Filter(test.to_string())));
            }
        }
        i += 1;
    }
    out.retain(|c| !c.name.is_empty());
    out
}

fn depth(text: &str) -> i32 {
    text.bytes().fold(0, |d, b| match b {
        b'(' | b'[' | b'{' => d + 1,
        b')' | b']' | b'}' => d - 1,
        _ => d,
    })
}

fn admission(expr: &str) -> Admission {
    let expr = expr.split(" #").next().unwrap_or(expr).trim();
    if let Some(inner) = expr
        .strip_prefix('[')
        .and_then(|e| e.strip_suffix(']'))
        .or_else(|| expr.strip_prefix('(').and_then(|e| e.strip_suffix(')')))
    {
        let mut archs = Vec::new();
        for item in inner.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            match item.strip_prefix("Arch.").and_then(DslArch::parse) {
                Some(arch) => archs.push(arch),
                None => return Admission::Unknown(expr.to_string()),
            }
        }
        return Admission::List(archs);
    }
    if let Some(body) = expr
        .strip_prefix("Arch.filter(")
        .and_then(|e| e.strip_suffix(')'))
        .and_then(|e| e.trim().strip_prefix("lambda arch:"))
    {
        return Admission::Filter(body.trim().trim_end_matches(',').trim().to_string());
    }
    Admission::Unknown(expr.to_string())
}

/// Evaluates a filter body (`arch.is_family_of(Arch.sm_100f) or ...`) at an arch: `or`,
/// `and`, `not`, parentheses, `arch.is_family_of(Arch.X)`, `arch == Arch.X`, `arch != Arch.X`,
/// `arch >= Arch.X` (and `>`, `<=`, `<`, on major and minor), `arch in [Arch.X, ...]`.
/// Anything else is unknown.
fn eval_filter(body: &str, arch: DslArch) -> Option<bool> {
    let tokens = filter_tokens(body)?;
    let mut parser = FilterParser {
        tokens: &tokens,
        at: 0,
        arch,
    };
    let value = parser.or()?;
    (parser.at == tokens.len()).then_some(value)
}

fn filter_tokens(body: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    let bytes = body.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b.is_ascii_whitespace() {
            i += 1;
        } else if b"()[],".contains(&b) {
            out.push((b as char).to_string());
            i += 1;
        } else if ["==", "!=", ">=", "<="]
            .iter()
            .any(|op| body[i..].starts_with(op))
        {
            out.push(body[i..i + 2].to_string());
            i += 2;
        } else if b == b'>' || b == b'<' {
            out.push((b as char).to_string());
            i += 1;
        } else if b.is_ascii_alphanumeric() || b == b'_' || b == b'.' {
            let start = i;
            while i < bytes.len()
                && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_' || bytes[i] == b'.')
            {
                i += 1;
            }
            out.push(body[start..i].to_string());
        } else {
            return None;
        }
        if out.len() > 256 {
            return None;
        }
    }
    Some(out)
}

struct FilterParser<'a> {
    tokens: &'a [String],
    at: usize,
    arch: DslArch,
}

impl FilterParser<'_> {
    fn peek(&self) -> Option<&str> {
        self.tokens.get(self.at).map(String::as_str)
    }

    fn eat(&mut self, token: &str) -> bool {
        let hit = self.peek() == Some(token);
        if hit {
            self.at += 1;
        }
        hit
    }

    fn or(&mut self) -> Option<bool> {
        let mut value = self.and()?;
        while self.eat("or") {
            value |= self.and()?;
        }
        Some(value)
    }

    fn and(&mut self) -> Option<bool> {
        let mut value = self.not()?;
        while self.eat("and") {
            value &= self.not()?;
        }
        Some(value)
    }

    fn not(&mut self) -> Option<bool> {
        if self.eat("not") {
            return self.not().map(|v| !v);
        }
        self.atom()
    }

    fn arch_const(&mut self) -> Option<DslArch> {
        let token = self.peek()?.strip_prefix("Arch.")?;
        let arch = DslArch::parse(token)?;
        self.at += 1;
        Some(arch)
    }

    fn atom(&mut self) -> Option<bool> {
        if self.eat("(") {
            let value = self.or()?;
            return self.eat(")").then_some(value);
        }
        if self.eat("arch.is_family_of") {
            if !self.eat("(") {
                return None;
            }
            let family = self.arch_const()?;
            return self.eat(")").then_some(self.arch.is_family_of(family));
        }
        if self.eat("arch") {
            if self.eat("==") {
                return Some(self.arch_const()? == self.arch);
            }
            if self.eat("!=") {
                return Some(self.arch_const()? != self.arch);
            }
            // `Arch.__ge__` and friends compare (major, minor) only.
            let mine = (self.arch.major, self.arch.minor);
            for (op, test) in [
                (">=", (|a, b| a >= b) as fn((u32, u32), (u32, u32)) -> bool),
                (">", |a, b| a > b),
                ("<=", |a, b| a <= b),
                ("<", |a, b| a < b),
            ] {
                if self.eat(op) {
                    let other = self.arch_const()?;
                    return Some(test(mine, (other.major, other.minor)));
                }
            }
            if self.eat("in") {
                let close = if self.eat("[") {
                    "]"
                } else if self.eat("(") {
                    ")"
                } else {
                    return None;
                };
                let mut found = false;
                loop {
                    if self.eat(close) {
                        return Some(found);
                    }
                    found |= self.arch_const()? == self.arch;
                    if !self.eat(",") && self.peek() != Some(close) {
                        return None;
                    }
                }
            }
        }
        None
    }
}

/// The op calls and helper calls of a module, each with its line and top-level definition:
/// every `name(` whose dotted name is `<namespace>.<Op>` (also inside
/// `cute.nvgpu.tcgen05.X(`), an op imported by name from `...nvgpu.<namespace>`, or a
/// function of an imported module (`sm100_utils.make_trivial_tiled_mma(` after `import
/// cutlass.utils.blackwell_helpers as sm100_utils`) or imported by name.
type HelperCall = (u32, String, String, String, Vec<BranchTest>);

/// The ops one top-level definition builds, in the order found, and the set of them (the
/// rounds ask of every helper call whether its definition already builds an op).
#[derive(Default)]
struct Built {
    uses: Vec<OpUse>,
    /// Each op with the branch tests of each of its uses.
    ops: FxHashMap<String, Vec<Vec<BranchTest>>>,
}

impl Built {
    fn push(&mut self, op_use: OpUse) {
        self.ops
            .entry(op_use.op.clone())
            .or_default()
            .push(op_use.under.clone());
        self.uses.push(op_use);
    }

    /// Whether a use of `op` under `under` adds nothing: one under fewer of those tests
    /// (none: built wherever the definition runs) is already there.
    fn dominates(&self, op: &str, under: &[BranchTest]) -> bool {
        self.ops
            .get(op)
            .is_some_and(|kept| kept.iter().any(|k| k.iter().all(|b| under.contains(b))))
    }
}

fn calls(
    text: &str,
    path: &str,
    module: &str,
    ops: &HashMap<String, Op>,
    op_names: &FxHashSet<&str>,
    namespaces: &[String],
) -> (Vec<OpUse>, Vec<HelperCall>) {
    let imports = Imports::read(text, module, ops, namespaces);
    let bytes = text.as_bytes();
    let groups = Groups::new(text);
    let mut uses = Vec::new();
    let mut helper_calls = Vec::new();
    // Lines are counted forward from the last hit, not from the start of the file. The
    // calls' branch tests are read in one pass over the lines at the end.
    let (mut counted_to, mut line) = (0usize, 1u32);
    for at in memchr::memchr_iter(b'(', bytes) {
        let mut start = at;
        while start > 0 {
            let b = bytes[start - 1];
            if b.is_ascii_alphanumeric() || b == b'_' || b == b'.' {
                start -= 1;
            } else {
                break;
            }
        }
        let name = &text[start..at];
        if name.is_empty() || name.starts_with('.') {
            continue;
        }
        let (qualifier, last) = match name.rsplit_once('.') {
            Some((q, l)) => (Some(q), l),
            None => (None, name),
        };
        let op = match qualifier {
            Some(q) if q == "nvvm" || q.ends_with(".nvvm") => NVVM_INTRINSICS
                .iter()
                .find(|(_, prefix, _)| last.starts_with(prefix))
                .map(|(key, _, _)| key.to_string()),
            Some(q) if op_names.contains(last) => {
                let ns = q.rsplit('.').next().unwrap_or(q);
                Some(format!("{ns}.{last}")).filter(|k| ops.contains_key(k))
            }
            Some(_) => None,
            None => imports.ops.get(last).cloned(),
        };
        let helper = match (&op, qualifier) {
            (Some(_), _) => None,
            (None, Some(q)) => imports
                .modules
                .get(q)
                .map(|m| (m.clone(), last.to_string())),
            (None, None) => imports.functions.get(last).cloned().or_else(|| {
                // A definition of this module (not the one the call is in).
                (groups.defines(last) && groups.at(start) != last)
                    .then(|| (module.to_string(), last.to_string()))
            }),
        };
        if (op.is_none() && helper.is_none()) || in_comment(bytes, start) {
            continue;
        }
        line += memchr::memchr_iter(b'\n', &bytes[counted_to..start]).count() as u32;
        counted_to = start;
        let group = groups.at(start).to_string();
        let under = Vec::new();
        match (op, helper) {
            (Some(op), _) => uses.push(OpUse {
                op,
                line,
                group,
                via: None,
                under,
            }),
            (None, Some((module, function))) => {
                helper_calls.push((line, group, module, function, under))
            }
            (None, None) => {}
        }
    }
    if !uses.is_empty() || !helper_calls.is_empty() {
        let mut wanted: Vec<u32> = uses
            .iter()
            .map(|u| u.line)
            .chain(helper_calls.iter().map(|h| h.0))
            .collect();
        wanted.sort_unstable();
        wanted.dedup();
        let tests = branch_tests(text, &wanted, path);
        if !tests.is_empty() {
            for u in &mut uses {
                u.under = tests.get(&u.line).cloned().unwrap_or_default();
            }
            for h in &mut helper_calls {
                h.4 = tests.get(&h.0).cloned().unwrap_or_default();
            }
        }
    }
    (uses, helper_calls)
}

/// For each of `wanted` (1-based lines, ascending), the branch tests a statement there runs
/// under: each enclosing single-line `if X:`/`elif X:` arm (X holds; the tests of the arms
/// before an `elif` fail) and `else:` arm (every test of its chain fails), and each `if X:`
/// before it in a block it is in whose body returns at its own level and that has no other
/// arm (X fails); out to the module, as a nested definition runs only where
/// its `def` ran. One pass over the lines, by indentation; other blocks (`for`, `with`,
/// `try`) and tests written over several lines add nothing.
fn branch_tests(text: &str, wanted: &[u32], path: &str) -> FxHashMap<u32, Vec<BranchTest>> {
    /// An open block: its header's indentation, the tests its body runs under because of
    /// its header, and those of the early exits met so far among its body's statements.
    struct Frame {
        indent: usize,
        adds: Vec<BranchTest>,
        exits: Vec<BranchTest>,
        /// The indentation of its body (its first line), and whether the last statement at
        /// that level leaves.
        body: Option<usize>,
        leaves: bool,
        /// For an `if` arm: its test (as failing), offered as an early exit when the arm
        /// closes with no other arm after it.
        exit_test: Option<BranchTest>,
    }
    let indent = |l: &str| l.bytes().take_while(|b| matches!(b, b' ' | b'\t')).count();
    let test_of = |head: &str, keyword: &str| {
        head.strip_prefix(keyword)
            .and_then(|rest| rest.strip_suffix(':'))
            .map(branch_test_text)
    };
    // Only a `return` leaves for another path: after `if X: raise`, the target where X holds
    // builds no kernel at all, which leaving the ops after it out would hide.
    let leaves = |t: &str| t == "return" || t.starts_with("return ");
    // The compound statement a line opens, by its first word, whether or not its header ends
    // on that line (`def f(\n    x,\n):` opens its body all the same).
    let keyword = |t: &str| -> Option<&'static str> {
        let word = t
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .next()
            .unwrap_or("");
        [
            "if", "elif", "else", "for", "while", "with", "try", "except", "finally", "def",
            "async", "class", "match", "case",
        ]
        .into_iter()
        .find(|k| *k == word)
    };
    let path: Arc<str> = Arc::from(path);
    let test = |line: usize, test: String, holds: bool| BranchTest {
        path: path.clone(),
        line: line as u32 + 1,
        test: Arc::from(test),
        holds,
    };
    let mut out = FxHashMap::default();
    let mut next_wanted = wanted.iter().peekable();
    // The module is the bottom frame; `chains`: by indentation, the tests of the `if`/`elif`
    // headers of the chain open at that level (as failing), for the arms after them.
    let mut stack: Vec<Frame> = vec![Frame {
        indent: 0,
        adds: Vec::new(),
        exits: Vec::new(),
        body: Some(0),
        leaves: false,
        exit_test: None,
    }];
    let mut chains: FxHashMap<usize, Vec<BranchTest>> = FxHashMap::default();
    for (i, (_, l)) in lines_of(text).enumerate() {
        if next_wanted.peek().is_none() {
            break;
        }
        let ind = indent(l);
        let t = l[ind..].trim_end();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        // The closing line of a header or an expression over several lines (`) -> Tensor:`
        // at the `def`'s own indentation) continues the statement above: it closes nothing.
        let continues = t.starts_with([')', ']', '}']);
        let mut closed: Option<Frame> = None;
        while !continues && stack.len() > 1 && stack.last().is_some_and(|f| f.indent >= ind) {
            closed = stack.pop();
            chains.retain(|level, _| *level <= ind);
        }
        let arm = test_of(t, "elif ")
            .map(Some)
            .or_else(|| (t == "else:").then_some(None));
        // An `if` arm that closed with no other arm after it, its body returning: the rest of
        // the block runs only where its test fails. Only into the block whose body the `if`
        // stands in: where lines of a string at the margin closed its function, the exit must
        // not reach the module.
        if let Some(frame) = closed
            && arm.is_none()
            && frame.leaves
            && let Some(exit) = frame.exit_test
            && let Some(top) = stack.last_mut()
            && top.body == Some(frame.indent)
        {
            top.exits.push(exit);
        }
        if !continues {
            let top = stack.last_mut().expect("the module");
            match top.body {
                None => {
                    top.body = Some(ind);
                    top.leaves = leaves(t);
                }
                Some(body) if body == ind => top.leaves = leaves(t),
                _ => {}
            }
        }
        while next_wanted.peek().is_some_and(|&&w| w as usize <= i + 1) {
            let w = *next_wanted.next().expect("peeked");
            // Most calls run under no test: nothing is kept for them.
            let under_any = stack
                .iter()
                .any(|f| !f.adds.is_empty() || !f.exits.is_empty());
            if w as usize == i + 1 && under_any {
                let mut tests: Vec<BranchTest> = stack
                    .iter()
                    .flat_map(|f| f.adds.iter().chain(&f.exits))
                    .cloned()
                    .collect();
                tests.sort();
                tests.dedup();
                out.insert(w, tests);
            }
        }
        if continues {
            continue;
        }
        let frame = |adds: Vec<BranchTest>, exit_test: Option<BranchTest>| Frame {
            indent: ind,
            adds,
            exits: Vec::new(),
            body: None,
            leaves: false,
            exit_test,
        };
        if let Some(x) = test_of(t, "if ") {
            chains.insert(ind, vec![test(i, x.clone(), false)]);
            stack.push(frame(
                vec![test(i, x.clone(), true)],
                Some(test(i, x, false)),
            ));
        } else if let Some(arm) = arm {
            // The arms before it fail (those of the chain that were read).
            let before = chains.remove(&ind).unwrap_or_default();
            let mut adds = before.clone();
            if let Some(x) = &arm {
                adds.push(test(i, x.clone(), true));
                let mut chain = before;
                chain.push(test(i, x.clone(), false));
                chains.insert(ind, chain);
            }
            stack.push(frame(adds, None));
        } else {
            match keyword(t) {
                // A test over several lines: its body is a block, under a test not read.
                Some("if") => {
                    chains.insert(ind, Vec::new());
                    stack.push(frame(Vec::new(), None));
                }
                Some("elif") => {
                    let before = chains.get(&ind).cloned().unwrap_or_default();
                    stack.push(frame(before, None));
                }
                Some(_) => {
                    chains.remove(&ind);
                    stack.push(frame(Vec::new(), None));
                }
                None => {
                    chains.remove(&ind);
                }
            }
        }
    }
    out
}

/// A branch test as the scan reports a gate: outer parentheses and a `const_expr(...)`
/// wrapper (the DSL's compile-time test) taken off, a trailing comment dropped.
fn branch_test_text(test: &str) -> String {
    let mut t = test.trim();
    loop {
        let inner = t
            .strip_suffix(')')
            .and_then(|rest| {
                rest.strip_prefix('(').or_else(|| {
                    let open = rest.find('(')?;
                    let callee = &rest[..open];
                    (callee == "const_expr" || callee.ends_with(".const_expr"))
                        .then(|| &rest[open + 1..])
                })
            })
            .filter(|inner| balanced(inner));
        match inner {
            Some(inner) => t = inner.trim(),
            None => return t.to_string(),
        }
    }
}

/// Whether the brackets of `text` pair up (so `(a) and (b)` is not taken for one group).
fn balanced(text: &str) -> bool {
    let mut depth = 0i32;
    for b in text.bytes() {
        match b {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => {
                depth -= 1;
                if depth < 0 {
                    return false;
                }
            }
            _ => {}
        }
    }
    depth == 0
}

/// What a module's `import` lines bind.
#[derive(Default)]
struct Imports {
    /// Local name → op key (`from cutlass.cute.nvgpu.tcgen05 import MmaF16BF16Op as Mma`).
    ops: FxHashMap<String, String>,
    /// Local dotted name → module (`import cutlass.utils.blackwell_helpers as sm100_utils`;
    /// `from cutlass.utils import blackwell_helpers`).
    modules: FxHashMap<String, String>,
    /// Local name → (module, function) (`from cutlass.utils.blackwell_helpers import make_smem_layout_a`).
    functions: FxHashMap<String, (String, String)>,
}

impl Imports {
    fn read(text: &str, module: &str, ops: &HashMap<String, Op>, namespaces: &[String]) -> Imports {
        let mut imports = Imports::default();
        let mut lines = lines_of(text);
        while let Some((_, line)) = lines.next() {
            // Most lines start with neither `import` nor `from`: not trimmed.
            let first = line.bytes().find(|b| !matches!(b, b'\t'..=b'\r' | b' '));
            if !matches!(first, Some(b'i' | b'f' | 0x80..)) {
                continue;
            }
            let line = line.trim();
            if let Some(rest) = line.strip_prefix("import ") {
                for item in rest.split(',') {
                    let mut parts = item.trim().split(" as ");
                    let (Some(target), alias) = (parts.next(), parts.next()) else {
                        continue;
                    };
                    let target = target.trim();
                    imports.modules.insert(
                        alias.unwrap_or(target).trim().to_string(),
                        target.to_string(),
                    );
                }
                continue;
            }
            let Some(rest) = line.strip_prefix("from ") else {
                continue;
            };
            let Some((from, names)) = rest.split_once(" import ") else {
                continue;
            };
            let from = absolute(from.trim(), module);
            // A parenthesised list may go on over lines.
            let mut names = names.to_string();
            if names.trim_start().starts_with('(') {
                while !names.contains(')') {
                    let Some((_, next)) = lines.next() else {
                        break;
                    };
                    names.push(',');
                    names.push_str(next.trim());
                }
            }
            let namespace = from.rsplit('.').next().unwrap_or(&from).to_string();
            let op_namespace = from.contains("nvgpu") && namespaces.contains(&namespace);
            for item in names
                .trim()
                .trim_matches(|c| c == '(' || c == ')')
                .split(',')
            {
                let item = item.split('#').next().unwrap_or("").trim();
                let mut parts = item.split(" as ");
                let (Some(original), alias) = (parts.next(), parts.next()) else {
                    continue;
                };
                let original = original.trim();
                if original.is_empty() || original == "*" {
                    continue;
                }
                let local = alias.unwrap_or(original).trim().to_string();
                let key = format!("{namespace}.{original}");
                if op_namespace && ops.contains_key(&key) {
                    imports.ops.insert(local, key);
                    continue;
                }
                imports
                    .modules
                    .insert(local.clone(), format!("{from}.{original}"));
                imports
                    .functions
                    .insert(local, (from.clone(), original.to_string()));
            }
        }
        imports
    }
}

/// `from .x import y` inside `a.b.c` names `a.b.x`.
fn absolute(from: &str, module: &str) -> String {
    let dots = from.bytes().take_while(|b| *b == b'.').count();
    if dots == 0 {
        return from.to_string();
    }
    let mut parts: Vec<&str> = module.split('.').collect();
    for _ in 0..dots {
        parts.pop();
    }
    let rest = &from[dots..];
    if !rest.is_empty() {
        parts.push(rest);
    }
    parts.join(".")
}

/// The top-level `def`/`class` each byte offset is in (`<module>` outside them).
struct Groups {
    /// (offset of the line, name), in order.
    starts: Vec<(usize, String)>,
    /// The names of `starts` that a definition gives: asked about every call of a file, so
    /// a set, not a walk of every top-level line (thousands in a big kernel file).
    defined: FxHashSet<String>,
}

impl Groups {
    fn new(text: &str) -> Groups {
        let mut starts = Vec::new();
        for (offset, line) in lines_of(text) {
            let first = line.as_bytes().first().copied();
            if first
                .is_some_and(|b| !b.is_ascii_whitespace() && b != b'#' && b != b')' && b != b'@')
            {
                let rest = line
                    .strip_prefix("async def ")
                    .or_else(|| line.strip_prefix("def "))
                    .or_else(|| line.strip_prefix("class "));
                let name = rest
                    .map(|r| {
                        r.chars()
                            .take_while(|c| c.is_alphanumeric() || *c == '_')
                            .collect::<String>()
                    })
                    .filter(|n| !n.is_empty())
                    .unwrap_or_else(|| "<module>".to_string());
                starts.push((offset, name));
            }
        }
        let defined = starts
            .iter()
            .filter(|(_, name)| name != "<module>")
            .map(|(_, name)| name.clone())
            .collect();
        Groups { starts, defined }
    }

    fn defines(&self, name: &str) -> bool {
        self.defined.contains(name)
    }

    fn at(&self, offset: usize) -> &str {
        let i = self.starts.partition_point(|(start, _)| *start <= offset);
        if i == 0 {
            "<module>"
        } else {
            &self.starts[i - 1].1
        }
    }
}

/// A file's text: borrowed when it is UTF-8, as nearly every file is (`from_utf8` checks
/// ASCII runs a word at a time; the lossy conversion walks every character).
fn text_of(src: &[u8]) -> std::borrow::Cow<'_, str> {
    match std::str::from_utf8(src) {
        Ok(text) => std::borrow::Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(src),
    }
}

/// The lines of `text` with their offsets, without their `\n` (a `\r` before it stays): what
/// `str::lines` gives, found with memchr's vectorised search.
fn lines_of(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut start = 0;
    let mut newlines = memchr::memchr_iter(b'\n', text.as_bytes());
    std::iter::from_fn(move || {
        let end = match newlines.next() {
            Some(newline) => newline,
            None if start < text.len() => text.len(),
            None => return None,
        };
        let line = (start, &text[start..end]);
        start = end + 1;
        Some(line)
    })
}

fn in_comment(bytes: &[u8], at: usize) -> bool {
    let start = memchr::memrchr(b'\n', &bytes[..at]).map_or(0, |i| i + 1);
    bytes[start..at].contains(&b'#')
}

/// The L5 answer for a DSL kernel module at a target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admitted {
    /// Every op it builds admits the target.
    All,
    /// Some of its kernels (top-level classes or functions) compile for the target: the ones
    /// that do not.
    Some(Vec<String>),
    /// None does.
    None,
    /// An op's admission could not be evaluated.
    Unknown(String),
}

impl DslIndex {
    /// How the ops a kernel module builds admit the target, with evidence. Each top-level
    /// class or function of the module is one kernel: it compiles for the target only if
    /// every op it builds admits it. The module is covered when all its kernels are, partly
    /// when some are (it holds kernels for several architectures and picks one at run time).
    ///
    /// `id` is a module, or `module:Kernel` for one top-level class or function of it.
    pub fn admitted(&self, id: &str, target: Arch) -> Option<(Admitted, Vec<String>)> {
        let (module, only) = match id.split_once(':') {
            Some((module, kernel)) => (module, Some(kernel)),
            None => (id, None),
        };
        let (file, uses) = self.kernels.get(module)?;
        let arch = DslArch::of_device(target);
        let mut groups: Vec<&str> = Vec::new();
        for u in uses.iter().filter(|u| only.is_none_or(|k| u.group == k)) {
            if !groups.contains(&u.group.as_str()) {
                groups.push(&u.group);
            }
        }
        let mut evidence = Vec::new();
        let (mut admitting, mut refusing) = (Vec::new(), Vec::new());
        for group in groups {
            let mut refused: Option<(&OpUse, &Op)> = None;
            let mut unknown: Option<&Op> = None;
            let mut declared: Option<(&OpUse, &Op)> = None;
            // The first op use left out: under a branch the target does not take.
            let mut skipped: Option<(&OpUse, &BranchTest)> = None;
            for u in uses.iter().filter(|u| u.group == group) {
                let Some(op) = self.ops.get(&u.op) else {
                    continue;
                };
                if let Some(branch) = u.under.iter().find(|b| self.blocks(b, target)) {
                    skipped.get_or_insert((u, branch));
                    continue;
                }
                match op.admission.admits(arch) {
                    Some(false) if refused.is_none() => refused = Some((u, op)),
                    None if unknown.is_none() => unknown = Some(op),
                    Some(true) if declared.is_none() && op.admission != Admission::Any => {
                        declared = Some((u, op))
                    }
                    _ => {}
                }
            }
            let cite = |u: &OpUse, op: &Op, word: &str| {
                let via = u
                    .via
                    .as_ref()
                    .map(|v| format!(" through {v}"))
                    .unwrap_or_default();
                format!(
                    "{file}:{} {group} builds {}{via} ({} admits {}): {word} {}",
                    u.line,
                    op.key,
                    op.declared_at(),
                    op.admission.words(),
                    arch.name()
                )
            };
            if let Some((u, branch)) = skipped {
                let via = u
                    .via
                    .as_ref()
                    .map(|v| format!(" through {v}"))
                    .unwrap_or_default();
                evidence.push(format!(
                    "{file}:{} {group} builds {}{via} only where {}:{} `{}` {}: not at {}",
                    u.line,
                    u.op,
                    branch.path,
                    branch.line,
                    branch.test,
                    if branch.holds { "holds" } else { "fails" },
                    arch.name()
                ));
            }
            match (refused, unknown, declared) {
                (Some((u, op)), _, _) => {
                    evidence.push(cite(u, op, "does not admit"));
                    refusing.push(group.to_string());
                }
                (None, Some(op), _) => {
                    return Some((
                        Admitted::Unknown(format!(
                            "{}:{} admits {} is not read",
                            op.file,
                            op.line,
                            op.admission.words()
                        )),
                        evidence,
                    ));
                }
                (None, None, Some((u, op))) => {
                    evidence.push(cite(u, op, "admits"));
                    admitting.push(group.to_string());
                }
                // Only ops with no declared admission: it compiles anywhere.
                (None, None, None) => admitting.push(group.to_string()),
            }
        }
        let answer = match (admitting.is_empty(), refusing.is_empty()) {
            (_, true) => Admitted::All,
            (true, false) => Admitted::None,
            (false, false) => Admitted::Some(refusing),
        };
        Some((answer, evidence))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arch(sm: u32) -> DslArch {
        DslArch::of_device(Arch::new(sm / 10, sm % 10))
    }

    #[test]
    fn dsl_arch_names_and_families() {
        assert_eq!(arch(120).name(), "sm_120a");
        assert_eq!(arch(80).name(), "sm_80");
        let fam = DslArch::parse("sm_100f").unwrap();
        assert!(arch(100).is_family_of(fam));
        assert!(arch(103).is_family_of(fam));
        assert!(!arch(110).is_family_of(fam));
        assert!(!arch(120).is_family_of(fam));
        // sm_101 was renamed sm_110: it is only the family of sm_110f.
        let renamed = DslArch::parse("sm_101a").unwrap();
        assert!(!renamed.is_family_of(fam));
        assert!(renamed.is_family_of(DslArch::parse("sm_110f").unwrap()));
        assert!(!arch(80).is_family_of(DslArch::parse("sm_80").unwrap()));
    }

    #[test]
    fn filters_evaluate_per_target() {
        let body = "arch.is_family_of(Arch.sm_100f) or arch.is_family_of(Arch.sm_110f)";
        let admitted: Vec<u32> = [90, 100, 103, 110, 120, 121]
            .into_iter()
            .filter(|&sm| eval_filter(body, arch(sm)) == Some(true))
            .collect();
        assert_eq!(admitted, vec![100, 103, 110]);
        assert_eq!(
            eval_filter("arch in [Arch.sm_120a, Arch.sm_121a]", arch(121)),
            Some(true)
        );
        assert_eq!(
            eval_filter("not (arch == Arch.sm_90a)", arch(90)),
            Some(false)
        );
        assert_eq!(eval_filter("arch.major >= 10", arch(100)), None);
        assert_eq!(
            eval_filter("arch.is_family_of(Arch.sm_100f) or", arch(100)),
            None
        );
    }

    const OPS: &str = "\
class Tcgen05MmaOp(atom.MmaOp):
    pass


class MmaOp(Tcgen05MmaOp):
    admissible_archs = Arch.filter(
        lambda arch: arch.is_family_of(Arch.sm_100f) or arch.is_family_of(Arch.sm_110f)
    )


class BlockScaledMmaOp(Tcgen05MmaOp):
    admissible_archs = [
        Arch.sm_100a,
        Arch.sm_103a,
    ]


class MmaF16BF16Op(MmaOp):
    def __post_init__(self):
        if arch not in self.admissible_archs:
            raise OpError()


class MmaMXF4Op(BlockScaledMmaOp):
    pass
";

    const WARP: &str = "\
class MmaSM120BlockScaledOp(MmaOp):
    admissible_archs = [Arch.sm_120a, Arch.sm_121a]


class MmaMXF4Op(MmaSM120BlockScaledOp):
    pass
";

    fn index(kernels: &[(&str, &str, &str)]) -> DslIndex {
        let mut files: Vec<(&str, Option<&str>, &[u8])> = vec![
            (
                "cutlass/cute/nvgpu/tcgen05/mma.py",
                Some("cutlass.cute.nvgpu.tcgen05.mma"),
                OPS.as_bytes(),
            ),
            (
                "cutlass/cute/nvgpu/warp/mma.py",
                Some("cutlass.cute.nvgpu.warp.mma"),
                WARP.as_bytes(),
            ),
            (
                "cutlass/cute/nvgpu/common.py",
                Some("cutlass.cute.nvgpu.common"),
                b"class CopyOp:\n    pass\n",
            ),
        ];
        files.extend(kernels.iter().map(|(p, m, s)| (*p, Some(*m), s.as_bytes())));
        DslIndex::from_files(files)
    }

    /// The branch tests a line runs under, read from indentation: `if`/`elif` arms (the arms
    /// before an `elif` fail), `else` arms (every test of the chain fails), `if X: return`
    /// before it (X fails), out to the module (a definition runs only where its `def` ran);
    /// loops' `else` and tests over several lines add nothing.
    #[test]
    fn branch_tests_are_read_from_the_arms_around_a_line() {
        let text = "\
if module_level:
    def kernel(self):
        if const_expr(self.arch // 10 in [8, 12]):
            a()
        elif (self.arch // 10 == 9):
            for x in y:
                b()
        else:
            if inner:  # a comment
                c()
            d()
        while w:
            pass
        else:
            e()
        if (
            multi
        ):
            f()
        g()

    def dispatch(self):
        if self.arch // 10 == 12:
            return sm120()
        if small:
            x = 1
        if self.arch == 90:
            if deep:
                return None
        if self.arch == 80:
            raise ValueError()
        else:
            pass
        h()
        if self.arch == 100:
            for y in z:
                k()
            return None
        m()


def multi(
    a,
) -> int:
    if a == 1:
        return 0
    n()


def after():
    \"\"\"A docstring
with a line at the margin.\"\"\"
    if a == 2:
        return 0
    p()


def last():
    q()


def raising():
    if a == 3:
        raise ValueError()
    r()
";
        let lines: Vec<&str> = text.lines().collect();
        let at = |needle: &str| {
            let line = lines.iter().position(|l| l.trim() == needle).unwrap() as u32 + 1;
            let tests: Vec<String> = branch_tests(text, &[line], "k.py")
                .remove(&line)
                .unwrap_or_default()
                .into_iter()
                .map(|b| {
                    let how = if b.holds { "holds" } else { "fails" };
                    format!("{}:{} {how}", b.line, b.test)
                })
                .collect();
            // Everything below is defined under `if module_level:`.
            assert_eq!(
                tests.first().map(String::as_str),
                Some("1:module_level holds")
            );
            tests[1..].to_vec()
        };
        assert_eq!(at("a()"), ["3:self.arch // 10 in [8, 12] holds"]);
        assert_eq!(
            at("b()"),
            [
                "3:self.arch // 10 in [8, 12] fails",
                "5:self.arch // 10 == 9 holds"
            ]
        );
        // A test with a comment after its colon is not read: `c()` runs under the `else`.
        assert_eq!(
            at("c()"),
            [
                "3:self.arch // 10 in [8, 12] fails",
                "5:self.arch // 10 == 9 fails"
            ]
        );
        assert_eq!(at("d()"), at("c()"));
        assert!(at("e()").is_empty(), "a loop's else");
        assert!(at("f()").is_empty(), "a test over several lines");
        assert!(at("g()").is_empty());
        // After `if X: return ...`: X fails. Not after a body that may fall through, nor
        // after one with another arm.
        assert_eq!(at("h()"), ["23:self.arch // 10 == 12 fails"]);
        assert_eq!(
            at("m()"),
            [
                "23:self.arch // 10 == 12 fails",
                "35:self.arch == 100 fails"
            ]
        );
        // A header over several lines keeps its body; an exit whose function a line at the
        // margin seemed to close does not reach the module.
        let top = |needle: &str| {
            let line = lines.iter().position(|l| l.trim() == needle).unwrap() as u32 + 1;
            branch_tests(text, &[line], "k.py")
                .remove(&line)
                .unwrap_or_default()
                .into_iter()
                .map(|b| format!("{}:{} {}", b.line, b.test, b.holds))
                .collect::<Vec<_>>()
        };
        assert_eq!(top("n()"), ["45:a == 1 false"]);
        assert!(top("q()").is_empty(), "{:?}", top("q()"));
        // After `if X: raise`, where X holds no kernel is built at all: not a branch to leave
        // ops out by.
        assert!(top("r()").is_empty(), "{:?}", top("r()"));
        assert_eq!(
            at("k()"),
            [
                "23:self.arch // 10 == 12 fails",
                "35:self.arch == 100 holds"
            ]
        );
        assert_eq!(branch_test_text(" cutlass.const_expr((x >= 9)) "), "x >= 9");
        assert_eq!(branch_test_text("(a) and (b)"), "(a) and (b)");
        assert_eq!(branch_test_text("f(x)"), "f(x)");
    }

    #[test]
    fn ops_inherit_their_bases_admission_per_namespace() {
        let index = index(&[]);
        let mut keys: Vec<&str> = index.ops.keys().map(String::as_str).collect();
        keys.sort();
        assert_eq!(
            keys,
            vec![
                // Not a class: the NVVM intrinsics the PTX ISA admits, on every site.
                "nvvm.tcgen05",
                "tcgen05.BlockScaledMmaOp",
                "tcgen05.MmaF16BF16Op",
                "tcgen05.MmaMXF4Op",
                "tcgen05.MmaOp",
                "tcgen05.Tcgen05MmaOp",
                "warp.MmaMXF4Op",
                "warp.MmaSM120BlockScaledOp",
            ]
        );
        // MmaMXF4Op exists in both namespaces, with different admissions.
        let tc = &index.ops["tcgen05.MmaMXF4Op"];
        assert_eq!(
            (tc.line, tc.admission.words().as_str()),
            (12, "[sm_100a, sm_103a]")
        );
        // The base declares nothing: any arch.
        assert_eq!(index.ops["tcgen05.Tcgen05MmaOp"].admission, Admission::Any);
        let warp = &index.ops["warp.MmaMXF4Op"];
        assert_eq!(warp.line, 2);
        assert!(
            index.ops["tcgen05.MmaF16BF16Op"]
                .admission
                .words()
                .starts_with("Arch.filter")
        );
    }

    #[test]
    fn kernel_modules_are_judged_by_the_ops_they_build() {
        let sm100 = "\
import cutlass.cute as cute
from cutlass.cute.nvgpu import tcgen05

def make():
    # tcgen05.MmaF16BF16Op( in a comment is not a use
    return tcgen05.MmaMXF4Op(cute.Float4E2M1FN)
";
        let sm120 = "\
from cutlass.cute.nvgpu.warp import MmaMXF4Op as WarpMxf4

def make():
    return WarpMxf4(1)
";
        let both = "\
import cutlass.cute as cute


class KernelSm120:
    def make(self):
        return cute.nvgpu.warp.MmaMXF4Op(1)


class KernelSm100:
    def make(self):
        return cute.nvgpu.tcgen05.MmaF16BF16Op(1)
";
        // A helper module of the DSL building ops, and a kernel reaching them through it.
        let helpers = "\
from cutlass.cute.nvgpu.tcgen05 import (
    MmaOp,
    BlockScaledMmaOp,
    MmaMXF4Op,
)


def make_blockscaled_trivial_tiled_mma(dtype):
    return MmaMXF4Op(dtype)
";
        let through_helper = "\
import cutlass.utils.blackwell_helpers as sm100_utils


class Gemm:
    def mma(self):
        return sm100_utils.make_blockscaled_trivial_tiled_mma(1)
";
        // One kernel mixing an op of any arch (TMA-like, no admission) with an sm_100 one.
        let mixed = "\
from cutlass.cute.nvgpu import tcgen05, common


def kernel():
    common.CopyOp()
    return tcgen05.MmaF16BF16Op(1)
";
        let index = index(&[
            ("k/sm100.py", "k.sm100", sm100),
            ("k/sm120.py", "k.sm120", sm120),
            ("k/both.py", "k.both", both),
            (
                "flashinfer/data/cutlass/python/CuTeDSL/cutlass/utils/blackwell_helpers.py",
                "flashinfer.data.cutlass.python.CuTeDSL.cutlass.utils.blackwell_helpers",
                helpers,
            ),
            ("k/through.py", "k.through", through_helper),
            ("k/mixed.py", "k.mixed", mixed),
            ("k/plain.py", "k.plain", "def f():\n    return 1\n"),
        ]);
        assert!(!index.is_kernel("k.plain", "f"));
        assert!(index.is_kernel("k.both", "KernelSm100"));
        assert!(index.is_kernel("k.both", "KernelSm120"));
        assert!(!index.is_kernel("k.both", "make"));
        // One kernel of a module, by its top-level name.
        assert_eq!(
            index
                .admitted("k.both:KernelSm120", Arch::new(12, 0))
                .map(|a| a.0),
            Some(Admitted::All)
        );
        assert_eq!(
            index
                .admitted("k.both:KernelSm100", Arch::new(12, 0))
                .map(|a| a.0),
            Some(Admitted::None)
        );
        let at = |module: &str, sm: u32| {
            index
                .admitted(module, Arch::new(sm / 10, sm % 10))
                .map(|(a, _)| a)
        };
        assert_eq!(at("k.sm100", 100), Some(Admitted::All));
        assert_eq!(at("k.sm100", 120), Some(Admitted::None));
        assert_eq!(at("k.sm100", 110), Some(Admitted::None));
        assert_eq!(at("k.sm120", 120), Some(Admitted::All));
        assert_eq!(at("k.sm120", 121), Some(Admitted::All));
        assert_eq!(at("k.sm120", 100), Some(Admitted::None));
        assert_eq!(
            at("k.both", 120),
            Some(Admitted::Some(vec!["KernelSm100".into()]))
        );
        assert_eq!(at("k.both", 90), Some(Admitted::None));
        assert_eq!(at("k.through", 100), Some(Admitted::All));
        assert_eq!(at("k.through", 120), Some(Admitted::None));
        assert_eq!(at("k.mixed", 120), Some(Admitted::None));
        assert_eq!(at("k.mixed", 103), Some(Admitted::All));
        let (_, evidence) = index.admitted("k.through", Arch::new(12, 0)).unwrap();
        assert_eq!(
            evidence,
            vec![
                "k/through.py:6 Gemm builds tcgen05.MmaMXF4Op through \
                 cutlass.utils.blackwell_helpers.make_blockscaled_trivial_tiled_mma \
                 (cutlass/cute/nvgpu/tcgen05/mma.py:12 admits [sm_100a, sm_103a]): \
                 does not admit sm_120a"
            ]
        );
        let (_, evidence) = index.admitted("k.sm100", Arch::new(12, 0)).unwrap();
        assert_eq!(
            evidence,
            vec![
                "k/sm100.py:6 make builds tcgen05.MmaMXF4Op (cutlass/cute/nvgpu/tcgen05/mma.py:12 \
                 admits [sm_100a, sm_103a]): does not admit sm_120a"
            ]
        );
    }
}
