//! The predicate language: what a gate means as a function of the device (major, minor) and
//! the CUDA version, its readable form, and its three-valued evaluation at a target.
//!
//! Conditions that do not depend on the device are *free*: a gate admits a target when some
//! value of its free conditions lets the path run there (docs/design.md, "admits").

use std::collections::BTreeSet;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::ir::CmpOp;
use crate::arch::Arch;

/// Which device quantity an atom compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum DevVar {
    Major,
    Minor,
    /// `major * 10 + minor`
    Sm,
    /// the `(major, minor)` tuple
    Cap,
}

/// The right-hand side of a device comparison.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Rhs {
    Int(i64),
    Pair(i64, i64),
    Ints(Vec<i64>),
    Pairs(Vec<(i64, i64)>),
}

/// The gate forms of docs/gates.md, by where the first arch atom of a gate came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Form {
    HelperCall,
    PlatformAttr,
    CachedFlag,
    FlagUse,
    CapabilityCompare,
    SmCompare,
    CapabilityMembership,
    PlatformMethod,
    BackendCapability,
    MinCapability,
    ValueSelect,
    JitArchList,
    CapabilityDecorator,
    /// A lookup keyed by the device in a dict literal (`SIZES.get(cap.to_int(), {})`): it
    /// admits a target whose key the table has (docs/gates.md F10).
    ArchTable,
}

impl Form {
    /// When two sites share a span (`flags = get_nvcc_flags_list(...)` is an assignment and an
    /// arch list), the more specific form describes it; lower is more specific.
    pub fn specificity(self) -> u8 {
        match self {
            Form::JitArchList | Form::CapabilityDecorator | Form::MinCapability => 0,
            Form::BackendCapability | Form::ValueSelect => 1,
            _ => 2,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Form::HelperCall => "helper-call",
            Form::PlatformAttr => "platform-attr",
            Form::CachedFlag => "cached-flag",
            Form::FlagUse => "flag-use",
            Form::CapabilityCompare => "capability-compare",
            Form::SmCompare => "sm-compare",
            Form::CapabilityMembership => "capability-membership",
            Form::PlatformMethod => "platform-method",
            Form::BackendCapability => "backend-capability",
            Form::MinCapability => "min-capability",
            Form::ValueSelect => "value-select",
            Form::JitArchList => "jit-arch-list",
            Form::CapabilityDecorator => "capability-decorator",
            Form::ArchTable => "arch-table",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Atom {
    Dev {
        var: DevVar,
        op: CmpOp,
        rhs: Rhs,
    },
    /// `cuda OP major.minor`; `string` keeps Python's string comparison when the code compares
    /// `torch.version.cuda` as text (`"12.10" >= "12.8"` is False there).
    Cuda {
        op: CmpOp,
        version: (u32, u32),
        string: Option<String>,
    },
    /// A device-independent condition, by its source text.
    Free(String),
    /// An arch-dependent condition gatefix could not resolve, with the reason.
    Unknown(String),
}

/// `and` / `or` drop repeats and spot contradictions among this many parts at most.
const MAX_SIMPLIFIED_PARTS: usize = 16;

/// Whether `a` is the negation of `b` as `negate` writes it (`not x` and `x`, or `major ==
/// 10` and `major != 10`), without building either.
fn negates(a: &Pred, b: &Pred) -> bool {
    match (a, b) {
        (Pred::Not(x), y) | (y, Pred::Not(x)) => x.as_ref() == y,
        (
            Pred::Atom(Atom::Dev { var, op, rhs }, _),
            Pred::Atom(
                Atom::Dev {
                    var: var2,
                    op: op2,
                    rhs: rhs2,
                },
                _,
            ),
        ) => var == var2 && rhs == rhs2 && negated_op(*op) == Some(*op2),
        _ => false,
    }
}

/// The parts of a conjunction (`conjunction`) or disjunction, flattened, repeats dropped;
/// `None` when a part decides the whole: its absorbing constant (`false` in an `and`, `true`
/// in an `or`) or a part beside its negation.
fn joined(parts: Vec<Pred>, conjunction: bool) -> Option<Vec<Pred>> {
    let mut out: Vec<Pred> = Vec::new();
    for part in parts {
        let inner = match part {
            Pred::Const(b) if b == conjunction => continue,
            Pred::Const(_) => return None,
            Pred::And(inner) if conjunction => inner,
            Pred::Or(inner) if !conjunction => inner,
            other => vec![other],
        };
        for part in inner {
            // Quadratic in the parts: only where a predicate is still small enough to read
            // (past that it is bounded elsewhere, `MAX_PRED_NODES`).
            if out.len() <= MAX_SIMPLIFIED_PARTS {
                if out.contains(&part) {
                    continue;
                }
                if out.iter().any(|other| negates(other, &part)) {
                    return None;
                }
            }
            out.push(part);
        }
    }
    // A compound part beside its own negation: `x and not y` was flattened into `x`, `not y`
    // above, so `not (x and not y)` next to them is only seen whole (a record's fields split
    // into choices meet the same compound guard both ways).
    if out.len() <= MAX_SIMPLIFIED_PARTS {
        let decided = out.iter().any(|part| match part {
            Pred::Not(inner) => match inner.as_ref() {
                Pred::And(all) if conjunction => all.iter().all(|p| out.contains(p)),
                Pred::Or(all) if !conjunction => all.iter().all(|p| out.contains(p)),
                _ => false,
            },
            _ => false,
        });
        if decided {
            return None;
        }
    }
    Some(out)
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Pred {
    Const(bool),
    Atom(Atom, Form),
    Not(Box<Pred>),
    And(Vec<Pred>),
    Or(Vec<Pred>),
}

impl Pred {
    pub fn atom(atom: Atom, form: Form) -> Pred {
        Pred::Atom(atom, form)
    }

    pub fn free(text: impl Into<String>) -> Pred {
        Pred::Atom(Atom::Free(text.into()), Form::CapabilityCompare)
    }

    pub fn unknown(reason: impl Into<String>, form: Form) -> Pred {
        Pred::Atom(Atom::Unknown(reason.into()), form)
    }

    /// Conjunction, flattened; a repeated part is kept once and a part beside its negation
    /// makes it false (choices split field by field meet the same guard twice).
    pub fn and(parts: Vec<Pred>) -> Pred {
        match joined(parts, true) {
            None => Pred::Const(false),
            Some(mut out) => match out.len() {
                0 => Pred::Const(true),
                1 => out.pop().expect("one part"),
                _ => Pred::And(out),
            },
        }
    }

    /// Disjunction, flattened; a repeated part is kept once and a part beside its negation
    /// makes it true.
    pub fn or(parts: Vec<Pred>) -> Pred {
        match joined(parts, false) {
            None => Pred::Const(true),
            Some(mut out) => match out.len() {
                0 => Pred::Const(false),
                1 => out.pop().expect("one part"),
                _ => Pred::Or(out),
            },
        }
    }

    /// Negation, pushed into comparisons so `not major == 10` reads `major != 10`.
    pub fn negate(self) -> Pred {
        match self {
            Pred::Const(b) => Pred::Const(!b),
            Pred::Not(inner) => *inner,
            Pred::Atom(Atom::Dev { var, op, rhs }, form) => match negated_op(op) {
                Some(op) => Pred::Atom(Atom::Dev { var, op, rhs }, form),
                None => Pred::Not(Box::new(Pred::Atom(Atom::Dev { var, op, rhs }, form))),
            },
            other => Pred::Not(Box::new(other)),
        }
    }

    /// Relabels every atom: a helper's body atoms become the helper call's form at the caller.
    pub fn with_form(self, form: Form) -> Pred {
        match self {
            Pred::Atom(atom, _) => Pred::Atom(atom, form),
            Pred::Not(inner) => Pred::Not(Box::new(inner.with_form(form))),
            Pred::And(parts) => Pred::And(parts.into_iter().map(|p| p.with_form(form)).collect()),
            Pred::Or(parts) => Pred::Or(parts.into_iter().map(|p| p.with_form(form)).collect()),
            other => other,
        }
    }

    /// Number of nodes, to bound work on pathological code.
    pub fn size(&self) -> usize {
        match self {
            Pred::Const(_) | Pred::Atom(..) => 1,
            Pred::Not(inner) => 1 + inner.size(),
            Pred::And(parts) | Pred::Or(parts) => 1 + parts.iter().map(Pred::size).sum::<usize>(),
        }
    }

    /// Whether the predicate depends on the device at all (or might: unknown atoms count).
    pub fn is_arch_dependent(&self) -> bool {
        self.any_atom(&|atom| matches!(atom, Atom::Dev { .. } | Atom::Unknown(_)))
    }

    /// Whether the predicate compares the device itself, or is unknown for a reason that
    /// names a parameter: what makes a comparison on a parameter a gate.
    pub fn reads_device_or_parameter(&self) -> bool {
        self.any_atom(&|atom| match atom {
            Atom::Dev { .. } => true,
            Atom::Unknown(reason) => reason.starts_with("parameter `"),
            _ => false,
        })
    }

    /// Whether every arch-dependent atom is unknown only because resolution hit one of its
    /// limits (depth, step budget, size, a cycle): nothing says the device is involved.
    pub fn only_limit_unknowns(&self) -> bool {
        const LIMITS: &[&str] = &[
            "goes deeper than",
            "too deep to resolve",
            "exceeds the step budget",
            "too many values depend on the device",
            "too complex to summarise",
            "depends on itself",
        ];
        !self.any_atom(&|atom| match atom {
            Atom::Dev { .. } | Atom::Cuda { .. } => true,
            Atom::Unknown(reason) => !LIMITS.iter().any(|l| reason.contains(l)),
            Atom::Free(_) => false,
        })
    }

    pub fn any_atom(&self, test: &dyn Fn(&Atom) -> bool) -> bool {
        match self {
            Pred::Const(_) => false,
            Pred::Atom(atom, _) => test(atom),
            Pred::Not(inner) => inner.any_atom(test),
            Pred::And(parts) | Pred::Or(parts) => parts.iter().any(|p| p.any_atom(test)),
        }
    }

    /// The form of the first arch atom in source order.
    pub fn first_arch_form(&self) -> Option<Form> {
        match self {
            Pred::Const(_) => None,
            Pred::Atom(Atom::Dev { .. } | Atom::Unknown(_), form) => Some(*form),
            Pred::Atom(..) => None,
            Pred::Not(inner) => inner.first_arch_form(),
            Pred::And(parts) | Pred::Or(parts) => parts.iter().find_map(Pred::first_arch_form),
        }
    }

    fn collect_unknowns(&self, cuda_known: bool, out: &mut BTreeSet<String>) {
        match self {
            Pred::Atom(Atom::Unknown(reason), _) => {
                out.insert(reason.clone());
            }
            Pred::Atom(Atom::Cuda { .. }, _) if !cuda_known => {
                out.insert(CUDA_UNKNOWN.to_string());
            }
            Pred::Not(inner) => inner.collect_unknowns(cuda_known, out),
            Pred::And(parts) | Pred::Or(parts) => parts
                .iter()
                .for_each(|p| p.collect_unknowns(cuda_known, out)),
            _ => {}
        }
    }
}

pub const CUDA_UNKNOWN: &str =
    "the CUDA version is unknown (pass --cuda, or install torch in the site)";

/// At most this many distinct unknown atoms are enumerated; beyond, the answer is unknown.
const MAX_ENUMERATED_UNKNOWNS: usize = 10;

fn negated_op(op: CmpOp) -> Option<CmpOp> {
    Some(match op {
        CmpOp::Eq => CmpOp::Ne,
        CmpOp::Ne => CmpOp::Eq,
        CmpOp::Lt => CmpOp::Ge,
        CmpOp::Ge => CmpOp::Lt,
        CmpOp::Le => CmpOp::Gt,
        CmpOp::Gt => CmpOp::Le,
        CmpOp::In => CmpOp::NotIn,
        CmpOp::NotIn => CmpOp::In,
        CmpOp::Is | CmpOp::IsNot => return None,
    })
}

/// The CUDA toolkit version the site's torch was built with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CudaVersion {
    pub text: String,
    pub major: u32,
    pub minor: u32,
}

impl CudaVersion {
    pub fn parse(text: &str) -> Option<CudaVersion> {
        let text = text.trim();
        let mut parts = text.split('.');
        let major = parts.next()?.parse().ok()?;
        let minor = parts.next().unwrap_or("0").parse().ok()?;
        Some(CudaVersion {
            text: text.to_string(),
            major,
            minor,
        })
    }
}

/// What a gate says about one target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admits {
    Yes,
    No,
    Unknown(Vec<String>),
}

impl Admits {
    pub fn word(&self) -> &'static str {
        match self {
            Admits::Yes => "yes",
            Admits::No => "no",
            Admits::Unknown(_) => "unknown",
        }
    }
}

/// Evaluates a predicate at a target: yes when some choice of free conditions lets the path
/// run for every value of the unknown atoms, no when none does for any, unknown otherwise.
pub fn evaluate(pred: &Pred, target: Arch, cuda: Option<&CudaVersion>) -> Admits {
    let mut unknowns = BTreeSet::new();
    pred.collect_unknowns(cuda.is_some(), &mut unknowns);
    let unknowns: Vec<String> = unknowns.into_iter().collect();
    if unknowns.len() > MAX_ENUMERATED_UNKNOWNS {
        return Admits::Unknown(unknowns);
    }
    let mut always = true;
    let mut never = true;
    for mask in 0u32..(1 << unknowns.len()) {
        let env = Env {
            target,
            cuda,
            unknowns: &unknowns,
            mask,
        };
        let (can_true, _) = env.possible(pred);
        always &= can_true;
        never &= !can_true;
        if !always && !never {
            return Admits::Unknown(unknowns);
        }
    }
    if always { Admits::Yes } else { Admits::No }
}

struct Env<'a> {
    target: Arch,
    cuda: Option<&'a CudaVersion>,
    unknowns: &'a [String],
    mask: u32,
}

impl Env<'_> {
    fn assigned(&self, reason: &str) -> bool {
        let index = self.unknowns.iter().position(|u| u == reason).unwrap_or(0);
        self.mask & (1 << index) != 0
    }

    /// (can be true, can be false) over the free atoms, which range independently.
    fn possible(&self, pred: &Pred) -> (bool, bool) {
        match pred {
            Pred::Const(b) => (*b, !*b),
            Pred::Atom(atom, _) => match self.atom(atom) {
                Some(b) => (b, !b),
                None => (true, true),
            },
            Pred::Not(inner) => {
                let (t, f) = self.possible(inner);
                (f, t)
            }
            Pred::And(parts) => parts.iter().fold((true, false), |(t, f), p| {
                let (pt, pf) = self.possible(p);
                (t && pt, f || pf)
            }),
            Pred::Or(parts) => parts.iter().fold((false, true), |(t, f), p| {
                let (pt, pf) = self.possible(p);
                (t || pt, f && pf)
            }),
        }
    }

    /// `None` for free atoms.
    fn atom(&self, atom: &Atom) -> Option<bool> {
        match atom {
            Atom::Free(_) => None,
            Atom::Unknown(reason) => Some(self.assigned(reason)),
            Atom::Dev { var, op, rhs } => Some(dev_holds(self.target, *var, *op, rhs)),
            Atom::Cuda {
                op,
                version,
                string,
            } => Some(match self.cuda {
                None => self.assigned(CUDA_UNKNOWN),
                Some(cuda) => match string {
                    Some(text) => op.holds(&cuda.text.as_str(), &text.as_str()),
                    None => op.holds(&(cuda.major, cuda.minor), version),
                },
            }),
        }
    }
}

fn dev_holds(target: Arch, var: DevVar, op: CmpOp, rhs: &Rhs) -> bool {
    let (major, minor) = (target.major as i64, target.minor as i64);
    let scalar = match var {
        DevVar::Major => major,
        DevVar::Minor => minor,
        DevVar::Sm => major * 10 + minor,
        DevVar::Cap => -1,
    };
    match (var, rhs) {
        (DevVar::Cap, Rhs::Pair(a, b)) => op.holds(&(major, minor), &(*a, *b)),
        (DevVar::Cap, Rhs::Pairs(set)) => membership(op, set.contains(&(major, minor))),
        (_, Rhs::Int(n)) => op.holds(&scalar, n),
        (_, Rhs::Ints(set)) => membership(op, set.contains(&scalar)),
        _ => false,
    }
}

fn membership(op: CmpOp, contained: bool) -> bool {
    match op {
        CmpOp::NotIn => !contained,
        _ => contained,
    }
}

impl fmt::Display for Pred {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Pred::Const(true) => f.write_str("always"),
            Pred::Const(false) => f.write_str("never"),
            Pred::Atom(atom, _) => write!(f, "{atom}"),
            Pred::Not(inner) => match **inner {
                Pred::Atom(..) | Pred::Not(_) => write!(f, "not {inner}"),
                _ => write!(f, "not ({inner})"),
            },
            Pred::And(parts) => join(f, parts, " and ", |p| matches!(p, Pred::Or(_))),
            Pred::Or(parts) => join(f, parts, " or ", |_| false),
        }
    }
}

fn join(
    f: &mut fmt::Formatter<'_>,
    parts: &[Pred],
    sep: &str,
    needs_parens: impl Fn(&Pred) -> bool,
) -> fmt::Result {
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            f.write_str(sep)?;
        }
        if needs_parens(part) {
            write!(f, "({part})")?;
        } else {
            write!(f, "{part}")?;
        }
    }
    Ok(())
}

impl fmt::Display for Atom {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Atom::Dev { var, op, rhs } => {
                let name = match var {
                    DevVar::Major => "major",
                    DevVar::Minor => "minor",
                    DevVar::Sm => "sm",
                    DevVar::Cap => "(major, minor)",
                };
                write!(f, "{name} {} {rhs}", op.symbol())
            }
            Atom::Cuda {
                op,
                string: Some(text),
                ..
            } => write!(f, "cuda {} {text:?}", op.symbol()),
            Atom::Cuda {
                op,
                version: (major, minor),
                string: None,
            } => write!(f, "cuda {} {major}.{minor}", op.symbol()),
            Atom::Free(text) => write!(f, "`{}`", collapse_whitespace(text)),
            Atom::Unknown(reason) => write!(f, "unknown({reason})"),
        }
    }
}

impl fmt::Display for Rhs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rhs::Int(n) => write!(f, "{n}"),
            Rhs::Pair(a, b) => write!(f, "({a}, {b})"),
            Rhs::Ints(set) => {
                let items: Vec<String> = set.iter().map(i64::to_string).collect();
                write!(f, "{{{}}}", items.join(", "))
            }
            Rhs::Pairs(set) => {
                let items: Vec<String> = set.iter().map(|(a, b)| format!("({a}, {b})")).collect();
                write!(f, "{{{}}}", items.join(", "))
            }
        }
    }
}

/// Multi-line source in a one-line predicate reads better with whitespace collapsed.
pub fn collapse_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dev(var: DevVar, op: CmpOp, rhs: Rhs) -> Pred {
        Pred::atom(Atom::Dev { var, op, rhs }, Form::CapabilityCompare)
    }

    const SM120: Arch = Arch::new(12, 0);
    const SM121: Arch = Arch::new(12, 1);
    const SM90: Arch = Arch::new(9, 0);

    #[test]
    fn a_compound_beside_its_negation_decides_the_whole() {
        let x = Pred::free("x");
        let y = Pred::free("y");
        let a = Pred::and(vec![x.clone(), y.clone().negate()]);
        assert_eq!(
            Pred::and(vec![a.clone(), a.clone().negate()]),
            Pred::Const(false)
        );
        assert_eq!(
            Pred::and(vec![a.clone().negate(), a.clone()]),
            Pred::Const(false)
        );
        let o = Pred::or(vec![x.clone(), y.clone()]);
        assert_eq!(
            Pred::or(vec![o.clone(), o.clone().negate()]),
            Pred::Const(true)
        );
        // Only the whole compound is its negation: `x and not (x and y)` stays.
        let b = Pred::and(vec![x.clone(), y.clone()]);
        assert_eq!(
            Pred::and(vec![x.clone(), b.clone().negate()]),
            Pred::And(vec![x, b.negate()])
        );
    }

    #[test]
    fn free_conditions_do_not_make_a_gate_unknown() {
        // backend == "auto" and (is_sm120 or is_sm110)
        let gate = Pred::and(vec![
            Pred::free("backend == \"auto\""),
            dev(DevVar::Major, CmpOp::In, Rhs::Ints(vec![11, 12])),
        ]);
        assert_eq!(evaluate(&gate, SM120, None), Admits::Yes);
        assert_eq!(evaluate(&gate, SM90, None), Admits::No);
        // not is_blackwell() or not fp4 is yes everywhere
        let open = Pred::or(vec![
            dev(DevVar::Major, CmpOp::Eq, Rhs::Int(10)).negate(),
            Pred::free("fp4").negate(),
        ]);
        assert_eq!(evaluate(&open, SM90, None), Admits::Yes);
        assert_eq!(evaluate(&open, Arch::new(10, 0), None), Admits::Yes);
    }

    #[test]
    fn unknown_atoms_stay_unknown_unless_irrelevant() {
        let gate = Pred::or(vec![
            dev(DevVar::Major, CmpOp::Eq, Rhs::Int(10)),
            Pred::unknown("`foo` not found", Form::HelperCall),
        ]);
        assert!(matches!(evaluate(&gate, SM120, None), Admits::Unknown(r) if r[0].contains("foo")));
        assert_eq!(evaluate(&gate, Arch::new(10, 0), None), Admits::Yes);
        let blocked = Pred::and(vec![
            dev(DevVar::Major, CmpOp::Eq, Rhs::Int(10)),
            Pred::unknown("x", Form::HelperCall),
        ]);
        assert_eq!(evaluate(&blocked, SM120, None), Admits::No);
    }

    #[test]
    fn cuda_atoms_need_a_version_and_respect_string_comparison() {
        let gate = Pred::and(vec![
            dev(DevVar::Major, CmpOp::Eq, Rhs::Int(12)),
            Pred::atom(
                Atom::Cuda {
                    op: CmpOp::Ge,
                    version: (12, 8),
                    string: Some("12.8".into()),
                },
                Form::HelperCall,
            ),
        ]);
        assert!(matches!(evaluate(&gate, SM120, None), Admits::Unknown(_)));
        let cuda = |t: &str| CudaVersion::parse(t).unwrap();
        assert_eq!(evaluate(&gate, SM120, Some(&cuda("12.8"))), Admits::Yes);
        // Python compares these as strings: "12.10" < "12.8".
        assert_eq!(evaluate(&gate, SM120, Some(&cuda("12.10"))), Admits::No);
        assert_eq!(evaluate(&gate, SM90, None), Admits::No);
    }

    #[test]
    fn capability_tuples_and_sets() {
        let exact = dev(DevVar::Cap, CmpOp::Eq, Rhs::Pair(12, 0));
        assert_eq!(evaluate(&exact, SM120, None), Admits::Yes);
        assert_eq!(evaluate(&exact, SM121, None), Admits::No);
        let fam = dev(DevVar::Sm, CmpOp::In, Rhs::Ints(vec![120, 121]));
        assert_eq!(evaluate(&fam, SM121, None), Admits::Yes);
        let pairs = dev(
            DevVar::Cap,
            CmpOp::NotIn,
            Rhs::Pairs(vec![(10, 0), (10, 3)]),
        );
        assert_eq!(evaluate(&pairs, SM120, None), Admits::Yes);
    }

    #[test]
    fn displays_readably() {
        let gate = Pred::and(vec![
            dev(DevVar::Major, CmpOp::In, Rhs::Ints(vec![9, 10])),
            Pred::atom(
                Atom::Cuda {
                    op: CmpOp::Ge,
                    version: (12, 3),
                    string: None,
                },
                Form::HelperCall,
            ),
        ]);
        assert_eq!(gate.to_string(), "major in {9, 10} and cuda >= 12.3");
        let negated = dev(DevVar::Major, CmpOp::Eq, Rhs::Int(10)).negate();
        assert_eq!(negated.to_string(), "major != 10");
        let mixed = Pred::and(vec![
            Pred::or(vec![
                dev(DevVar::Major, CmpOp::Eq, Rhs::Int(9)),
                dev(DevVar::Major, CmpOp::Eq, Rhs::Int(10)),
            ]),
            Pred::free("x"),
        ]);
        assert_eq!(mixed.to_string(), "(major == 9 or major == 10) and `x`");
    }
}
