//! Gate → kernel links, best first: declared in `[[link]]` rules; followed in the code from the
//! gated branch through calls and imports inside the site (a few hops) to a JIT generator, a
//! `torch.ops.<lib>` op of a native library in the site, or a backend name a `[[backend]]`
//! rule knows; otherwise not linked, saying how far the search got.

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};

use rayon::prelude::*;

use super::code::{
    Code, Condition, Facts, FileCache, FlagKey, Parsed, code_after_branch, decorated_with,
    file_of_module, gated_branch, line_indent, line_of, star_imports, text, undecorated,
};
use super::flow::{Guard, Hop, Reader};
use super::site_text::{Hit, SiteText};
use crate::gate::predicate::Form;
use crate::kernel::dsl::DslIndex;
use crate::kernel::jit::JitIndex;
use crate::kernel::query::glob_match;
use crate::kernel::requirement::Requirement;
use crate::rules::{LinkRule, Rules};
use crate::scan::Gate;
use crate::syntax::Node;
use crate::words::is_word_byte;

/// Calls followed in a row from a gated branch before giving up.
pub const MAX_HOPS: usize = 6;
/// Calls looked at from one branch, over all hops: keeps the search bounded where each hop
/// fans out.
pub const MAX_STEPS: usize = 400;
/// Flags followed in a row (a flag set from a flag's read, and so on).
pub const MAX_FLAG_HOPS: usize = 6;

/// One kernel the gated path needs, and how gatefix knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    pub needs: Requirement,
    pub chain: Vec<String>,
    /// Only at these majors (from the rule); `None`: at every target.
    pub majors: Option<Vec<u32>>,
    /// Other gates the path passes: where one blocks the target, the path is not taken.
    pub guards: Vec<Guard>,
    /// The path reaches the kernel only through a choice on some other condition (an `if`
    /// arm inside a callee): one alternative of the path, not what it always runs.
    pub conditional: bool,
}

impl Link {
    pub fn applies_to(&self, major: u32) -> bool {
        self.majors.as_ref().is_none_or(|m| m.contains(&major))
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkOutcome {
    Linked(Vec<Link>),
    NotLinked(String),
}

/// A gate's link, and whether its branch raises (the path it protects is then the code after
/// the branch, which runs when the gate does *not* hold).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GateLink {
    pub outcome: LinkOutcome,
    pub guards_raise: bool,
    /// The exit is an early `return`, not a `raise`.
    pub returns_early: bool,
    /// Why the search stopped, in a few words (the kinds `--explain-unverified` counts).
    pub stop: Option<String>,
    /// Gates in the conditions of the `if`s the gate itself sits in: where one blocks a
    /// target, the gate is never reached there (`if is_sm100: ... if x == 9:`).
    pub reached_under: Vec<Guard>,
    /// Set where the search found no kernel and left nothing out (`Linker::completeness`):
    /// what was read, in words. The gate then chooses no kernel at all.
    pub complete: Option<String>,
    /// The gate is what its own function returns (a predicate helper, `return major >= 9`):
    /// the helper's calls are followed like a flag's reads.
    pub helper_returns_it: bool,
    /// Set where the search found kernels but left part of the path unread (a call it could
    /// not resolve, a flag read it could not follow): the first such hop, in words. The
    /// kernels found are then not all the path may launch, so they show no gate open.
    pub left_out: Option<String>,
}

pub struct Linker<'a> {
    pub rules: &'a Rules,
    pub code: &'a Code,
    pub jit: &'a JitIndex,
    /// CuTe DSL kernel modules: a call into one needs its ops to admit the target.
    pub dsl: &'a DslIndex,
    /// Top-level folders of the site: `torch.ops.<lib>` links only when `<lib>/` is there.
    pub packages: HashSet<String>,
    pub text: &'a SiteText,
    pub gates: &'a [Gate],
    pub gates_by_file: &'a HashMap<String, Vec<usize>>,
    /// Top-level folder → whether it holds a native library.
    pub native: std::sync::Mutex<HashMap<String, bool>>,
}

struct Search {
    links: Vec<Link>,
    visited: HashSet<String>,
    calls_seen: usize,
    /// Flags the followed code sets, with the chain that reached each.
    stores: Vec<(FlagKey, Vec<String>)>,
    /// Hops the search did not take (see `Unfollowed`).
    unfollowed: Unfollowed,
    /// The first thing in the followed code the search cannot see through (`Facts::opaque`),
    /// with its file.
    opaque: Option<String>,
    /// Calls (as written) whose following reached a kernel: a method of what one returns
    /// (`gen_norm_module().run`) is that kernel module's.
    linked_calls: HashSet<String>,
}

/// How many hops a search did not take, and the first of them (the stop's evidence): only
/// that one is worded, as a search can skip hundreds.
#[derive(Default)]
struct Unfollowed {
    count: usize,
    first: Option<String>,
    /// Of those, the hops that may hide a kernel the target lacks (`hides_kernel`): how
    /// many, and the first.
    risky: usize,
    first_risky: Option<String>,
}

impl Unfollowed {
    /// The hops left out that may hide a kernel, in words, where there are any.
    fn risky_words(&self) -> Option<String> {
        self.first_risky
            .as_ref()
            .map(|first| format!("{} hop(s) not followed, the first: {first}", self.risky))
    }

    fn add(&mut self, why: impl FnOnce() -> String) {
        self.add_as(true, why);
    }

    /// A hop left out; `risky`: it may reach a kernel of its own (site code gatefix could not
    /// pick, a library outside the site), not only torch's or Python's.
    fn add_as(&mut self, risky: bool, why: impl FnOnce() -> String) {
        self.count += 1;
        if self.first.is_none() || (risky && self.first_risky.is_none()) {
            let why = why();
            if risky {
                self.risky += 1;
                self.first_risky.get_or_insert_with(|| why.clone());
            }
            self.first.get_or_insert(why);
        } else if risky {
            self.risky += 1;
        }
    }
}

/// Python's builtins and exceptions, and the logging, warning and `os` calls: code outside
/// the site that never launches a GPU kernel, so not following it leaves nothing out.
fn launches_nothing(call: &str) -> bool {
    const BUILTINS: &[&str] = &[
        "abs",
        "all",
        "any",
        "bool",
        "callable",
        "dict",
        "divmod",
        "enumerate",
        "float",
        "format",
        "frozenset",
        "getattr",
        "hasattr",
        "hash",
        "id",
        "int",
        "isinstance",
        "issubclass",
        "iter",
        "len",
        "list",
        "max",
        "min",
        "next",
        "print",
        "range",
        "repr",
        "reversed",
        "round",
        "set",
        "setattr",
        "sorted",
        "str",
        "sum",
        "tuple",
        "type",
        "zip",
    ];
    const QUIET_RECEIVERS: &[&str] = &["logger", "logging", "log", "warnings", "os"];
    // An exception class the site does not define is Python's (or a library's): building
    // one runs no kernel.
    let exception = |name: &str| {
        name.starts_with(char::is_uppercase)
            && ["Error", "Exception", "Warning"]
                .iter()
                .any(|suffix| name.ends_with(suffix))
    };
    match call.split_once('.') {
        None => BUILTINS.contains(&call) || exception(call),
        Some((receiver, _)) => QUIET_RECEIVERS.contains(&receiver),
    }
}

/// Whether a call's text is a plain dotted name: in `typing.cast(Any, x).run`, `run` is the
/// cast object's, not typing's, so only such a name says whose function is called.
fn is_dotted_name(call: &str) -> bool {
    call.chars()
        .all(|c| c.is_alphanumeric() || c == '_' || c == '.')
}

/// What following a piece of code found (`Linker::follow_code`).
pub(super) struct Followed {
    pub links: Vec<Link>,
    /// Flags the code sets, with the chain that reached each.
    pub stores: Vec<(FlagKey, Vec<String>)>,
    /// The hops the search left out: how many, and the first.
    pub unfollowed: Option<(usize, String)>,
    /// Of those, the ones that may hide a kernel, in words (`Unfollowed::risky_words`).
    pub risky: Option<String>,
}

/// Where a call leads.
enum Callee {
    /// A top-level function (or `Class.method` by name) of a module.
    Named(String, String),
    /// The definition whose `def` is at this offset of a site file (a method, a nested
    /// function), found by name; `how` says why this one.
    At {
        file: usize,
        offset: usize,
        how: String,
    },
}

/// What the reads of one flag lead to, chains relative to the read.
#[derive(Default)]
struct FlagResult {
    links: Vec<Link>,
    next: Vec<(FlagKey, Vec<String>, Vec<Guard>)>,
    stops: Vec<String>,
    /// The first hop left out of code whose search found kernels.
    left_out: Option<String>,
}

/// A flag a gate's path sets (or its value is stored in), with the chain up to the store.
pub type Seed = (FlagKey, Vec<String>, Vec<Guard>);

impl Linker<'_> {
    /// Links one gate; `parsed` is its module and `cache` what its file's gates share, read
    /// once for all of them. Also returns the flags the gated path sets, for `flow`.
    pub fn link(
        &self,
        gate: &Gate,
        parsed: Option<&Parsed>,
        cache: &mut FileCache,
    ) -> (GateLink, Vec<Seed>) {
        let branch = parsed
            .filter(|_| gate.guards_branch)
            .and_then(|p| gated_branch(p, gate, cache));
        let guards_raise = branch.as_ref().is_some_and(|b| b.raises);
        let returns_early = branch.as_ref().is_some_and(|b| b.returns_early);
        let mut complete = None;
        let mut left_out = None;
        let (outcome, stop, seeds) =
            self.outcome(gate, parsed, branch, cache, &mut complete, &mut left_out);
        let own_name = gate
            .function
            .as_deref()
            .map(|f| f.rsplit('.').next().unwrap_or(f));
        // A flag seeded with the gate's own function is its return value, except where the
        // gated branch raises: then it is the function passing only where the gate fails.
        let helper_returns_it = !guards_raise
            && own_name.is_some_and(|own| {
                seeds.iter().any(|(key, chain, _)| {
                    chain.len() == 1 && matches!(key, FlagKey::Func { name, .. } if name == own)
                })
            });
        let reached_under = parsed
            .and_then(|p| {
                let (start, end) = p.gate_bytes(gate)?;
                Some(
                    self.reader()
                        .guards_around(p, &gate.file, start, end, cache),
                )
            })
            .unwrap_or_default();
        (
            GateLink {
                guards_raise,
                returns_early,
                outcome,
                stop,
                reached_under,
                complete,
                helper_returns_it,
                left_out,
            },
            seeds,
        )
    }

    fn outcome(
        &self,
        gate: &Gate,
        parsed: Option<&Parsed>,
        branch: Option<Facts>,
        cache: &mut FileCache,
        complete: &mut Option<String>,
        left_out: &mut Option<String>,
    ) -> (LinkOutcome, Option<String>, Vec<Seed>) {
        let declared: Vec<Link> = self
            .rules
            .links
            .iter()
            .filter(|rule| rule_matches(rule, gate))
            .map(|rule| Link {
                needs: rule.needs.clone(),
                majors: rule.majors.clone(),
                guards: Vec::new(),
                conditional: false,
                chain: vec![format!(
                    "declared by a [[link]] in {}{}",
                    rule.source.display(),
                    rule.why
                        .as_ref()
                        .map(|w| format!(": {w}"))
                        .unwrap_or_default()
                )],
            })
            .collect();
        if !declared.is_empty() {
            return (LinkOutcome::Linked(declared), None, Vec::new());
        }
        if gate.form == Form::JitArchList
            && let Some(id) = self.own_generator(gate)
        {
            return (
                LinkOutcome::Linked(vec![Link {
                    needs: Requirement::Jit(id),
                    majors: None,
                    guards: Vec::new(),
                    conditional: false,
                    chain: vec!["the gate is the JIT generator's own arch list".into()],
                }]),
                None,
                Vec::new(),
            );
        }
        self.follow_gate(gate, parsed, branch, cache, complete, left_out)
    }

    fn own_generator(&self, gate: &Gate) -> Option<String> {
        self.jit
            .generators
            .iter()
            .find(|g| g.file == gate.file && g.line == gate.line)
            .map(|g| g.id.clone())
    }

    /// `complete`: set where the search proves the gate chooses no kernel
    /// (`completeness`).
    fn follow_gate(
        &self,
        gate: &Gate,
        parsed: Option<&Parsed>,
        branch: Option<Facts>,
        cache: &mut FileCache,
        complete: &mut Option<String>,
        left_out: &mut Option<String>,
    ) -> (LinkOutcome, Option<String>, Vec<Seed>) {
        let Some(parsed) = parsed else {
            let why = if gate.guards_branch {
                format!("{} could not be read back", gate.file)
            } else {
                "the gate guards no branch gatefix reads (a cached flag, a decorator or an arch list); a [[link]] rule can declare its kernel".into()
            };
            return (
                LinkOutcome::NotLinked(why),
                Some("no-branch".into()),
                Vec::new(),
            );
        };
        let Some(facts) = branch else {
            return self.follow_value(gate, parsed, cache, left_out);
        };
        let mut search = Search {
            links: Vec::new(),
            visited: HashSet::new(),
            calls_seen: 0,
            stores: Vec::new(),
            unfollowed: Unfollowed::default(),
            opaque: None,
            linked_calls: HashSet::new(),
        };
        let start = if facts.returns_early {
            format!(
                "{}:{} returns early; followed the code after it",
                gate.file, gate.line
            )
        } else if facts.raises {
            format!(
                "{}:{} raises; followed the code after it",
                gate.file, gate.line
            )
        } else {
            format!("{}:{} gated branch", gate.file, gate.line)
        };
        self.follow(
            parsed,
            &facts,
            &[start],
            gate.dist.as_deref(),
            &Reach::start(),
            &mut search,
        );
        // A branch that only sets values configures the code after it: that code's kernels
        // are the ones the gate decides.
        let mut followed_after = None;
        if search.links.is_empty()
            && search.stores.is_empty()
            && !facts.raises
            && let Some(after) = code_after_branch(parsed, gate, cache)
        {
            let start = format!(
                "{}:{} gated branch sets values the code after it uses; followed that code",
                gate.file, gate.line
            );
            self.follow(
                parsed,
                &after,
                &[start],
                gate.dist.as_deref(),
                &Reach::start(),
                &mut search,
            );
            followed_after = Some(after);
        }
        let mut seeds: Vec<Seed> = search
            .stores
            .iter()
            .map(|(key, chain)| (key.clone(), chain.clone(), Vec::new()))
            .collect();
        // An exit in a check whose code after reaches nothing: the check's callers go on to
        // the kernels only when it passes. A raise: where a call stands as a statement, the
        // code after it is what the check protects; where its value is used, the function
        // did the work and the search stops (`Reader::after_exit_call`). An early `return
        // False`: the call's value is the flag, followed like a flag's reads. Not a procedure
        // that returns nothing early (`if not _is_sm12x(): return`, then configures): its
        // callers go on either way and its value is no flag, so its own code after the exit
        // is all the gate guards.
        if search.links.is_empty()
            && facts.raises
            && !facts.returns_nothing
            && let Some(function) = gate.function.as_deref()
        {
            let name = function.rsplit('.').next().unwrap_or(function);
            seeds.push((
                if facts.returns_early {
                    FlagKey::Func {
                        name: name.to_string(),
                        path: gate.file.clone(),
                    }
                } else {
                    FlagKey::Exit {
                        name: name.to_string(),
                        path: gate.file.clone(),
                    }
                },
                vec![format!(
                    "{}:{} {name}() passes only where the gate does not hold",
                    gate.file, gate.line
                )],
                Vec::new(),
            ));
        }
        // Why a search that found nothing does not prove the gate chooses no kernel (said
        // where every call was followed, so the reader is not left guessing).
        let mut not_proven = None;
        if search.links.is_empty() {
            let proof = match &followed_after {
                _ if !seeds.is_empty() => Err("it sets a flag, whose reads are followed".into()),
                None if facts.raises => Err(
                    "the gated branch raises or returns early, and what that decides is not read"
                        .into(),
                ),
                None => Err(
                    "the gated branch leaves its block, or the gate is no `if` or conditional-expression test, so what it skips is not read"
                        .into(),
                ),
                Some(after) => self.completeness(gate, parsed, &facts, after, &search, cache),
            };
            match proof {
                Ok(read) => *complete = Some(read),
                Err(why) => not_proven = Some(why),
            }
        }
        if search.links.is_empty() {
            // The first hop the search did not take is where a reviewer (or a `[[link]]`
            // rule) picks up; with none, every call the code makes was read.
            let coverage = match &search.unfollowed.first {
                Some(first) => format!(
                    "; {} hop(s) not followed, the first: {first}",
                    search.unfollowed.count
                ),
                None if search.calls_seen > 0 => format!(
                    "; every call it makes was followed to its definition{}",
                    not_proven
                        .map(|why| format!(", but it is not shown to launch nothing: {why}"))
                        .unwrap_or_default()
                ),
                None => not_proven
                    .map(|why| format!("; it is not shown to launch nothing: {why}"))
                    .unwrap_or_default(),
            };
            let why = format!(
                "followed {} call(s) up to {MAX_HOPS} hops from the gated branch; reached no JIT generator, native op or known backend{coverage}",
                search.calls_seen
            );
            let why = if facts.returns_nothing {
                format!(
                    "{why}; the function returns nothing where the gate fails, so its callers go on either way: its calls are not followed"
                )
            } else {
                why
            };
            let stop = if search.calls_seen >= MAX_STEPS {
                "step-budget"
            } else if search.calls_seen == 0 {
                "branch-calls-nothing"
            } else {
                "no-kernel-reached"
            };
            (LinkOutcome::NotLinked(why), Some(stop.into()), seeds)
        } else {
            *left_out = search.unfollowed.risky_words();
            (LinkOutcome::Linked(search.links), None, seeds)
        }
    }

    /// A gate that guards no branch: where its value goes (stored in a flag, returned by a
    /// predicate) is followed by `flow`.
    fn follow_value(
        &self,
        gate: &Gate,
        parsed: &Parsed,
        cache: &mut FileCache,
        left_out: &mut Option<String>,
    ) -> (LinkOutcome, Option<String>, Vec<Seed>) {
        let not_linked = |why: String, stop: &str, seeds| {
            (LinkOutcome::NotLinked(why), Some(stop.to_string()), seeds)
        };
        if matches!(
            gate.form,
            Form::CapabilityDecorator | Form::MinCapability | Form::JitArchList
        ) {
            return not_linked(
                "the gate guards no branch gatefix reads (a decorator, a declared minimum or an arch list); a [[link]] rule can declare its kernel".into(),
                "no-branch",
                Vec::new(),
            );
        }
        let Some((start, end)) = parsed.gate_bytes(gate) else {
            return not_linked(
                format!("{} could not be read back", gate.file),
                "no-branch",
                Vec::new(),
            );
        };
        let reader = self.reader();
        let hops = reader.gate_value(gate, parsed, start, end, cache);
        let mut seeds = Vec::new();
        let mut links = Vec::new();
        let mut stops = Vec::new();
        let mut followed = 0;
        let mut unread = None;
        for hop in hops {
            match hop {
                Hop::Flag { key, what, guards } => seeds.push((key, vec![what], guards)),
                Hop::Code {
                    module,
                    facts,
                    what,
                    guards,
                } => {
                    followed += 1;
                    let code = self.follow_code(
                        &module,
                        &facts,
                        vec![what],
                        &guards,
                        gate.dist.as_deref(),
                    );
                    if let Some(risky) = code.risky {
                        unread.get_or_insert(risky);
                    }
                    links.extend(code.links)
                }
                Hop::Stop(why) => stops.push(why),
            }
        }
        if !links.is_empty() {
            *left_out = stops.first().cloned().or(unread);
            return (LinkOutcome::Linked(links), None, seeds);
        }
        let why = match stops.first() {
            Some(first) => format!("the gate guards no branch, and its value goes nowhere gatefix follows: {first}"),
            None if followed > 0 => format!("the gate's value reaches {followed} piece(s) of code, and they reach no JIT generator, native op or known backend"),
            None => "the gate guards no branch gatefix reads (a flag, a returned value or an assertion); a [[link]] rule can declare its kernel".into(),
        };
        let kind = match stops.first() {
            None if followed > 0 => "no-kernel-reached",
            None => "no-branch",
            Some(first) => stop_kind(first),
        };
        not_linked(why, kind, seeds)
    }

    /// Whether a search that found no kernel and set no flag read everything the gate
    /// decides, so that the gate chooses no kernel at all: the other arms of its `if` (or
    /// conditional expression) reach none either, every call on the way was followed to its
    /// definition, and nothing the code does hides where it goes (a computed callee, a store
    /// into an object or a global, a value handed out of the function, an early exit that
    /// skips code, a name bound at module level or read on a loop's next pass). What was
    /// read, for the verdict's evidence; else the first reason it is not proven.
    fn completeness(
        &self,
        gate: &Gate,
        parsed: &Parsed,
        branch: &Facts,
        after: &Facts,
        search: &Search,
        cache: &mut FileCache,
    ) -> Result<String, String> {
        if search.calls_seen >= MAX_STEPS {
            return Err(format!(
                "the search met its step budget ({MAX_STEPS} calls)"
            ));
        }
        let Some(others) = super::code::other_arms(parsed, gate, cache) else {
            return Err(
                "the gate is not the test of an `if` or a conditional expression, so what else it decides is not read".into(),
            );
        };
        // An exit skips code, and a value handed to the function's callers goes where
        // gatefix did not follow.
        for facts in [branch, &others] {
            if let Some(line) = facts.returns_value {
                return Err(format!(
                    "line {line} hands a value to the function's callers"
                ));
            }
            if let Some(line) = facts.leaves {
                return Err(format!(
                    "line {line} leaves early, and what it skips is not read"
                ));
            }
        }
        // A name bound by the gated code is read after it (followed), unless it outlives
        // the function: a module's name, a `global`, or a name read again on a loop's next
        // pass, before the gate; or the function returns a value made from it.
        let binds = branch.binds_name.or(others.binds_name).is_some();
        if binds {
            let bound: BTreeSet<String> = branch.bound.union(&others.bound).cloned().collect();
            let names = bound.iter().cloned().collect::<Vec<_>>().join("`, `");
            if super::code::may_flow(&bound, &after.flows, &after.returned_reads) {
                return Err(format!(
                    "the function returns a value made from `{names}`, which the gated code binds"
                ));
            }
            if gate.function.is_none() {
                return Err(format!("it binds `{names}` in module-level code"));
            }
            if super::code::declared_outside(&parsed.src, &bound) {
                return Err(format!(
                    "it binds `{names}`, declared `global` or `nonlocal`"
                ));
            }
            if super::code::in_loop(parsed, gate, cache) {
                return Err(format!(
                    "it binds `{names}` inside a loop, where the next pass may read it first"
                ));
            }
        }
        // The other arms are searched on their own: what they reach is not the gated
        // path's, and must not become its links.
        let mut arms = Search {
            links: Vec::new(),
            visited: search.visited.clone(),
            calls_seen: search.calls_seen,
            stores: Vec::new(),
            unfollowed: Unfollowed::default(),
            opaque: None,
            linked_calls: HashSet::new(),
        };
        let read_arms = !others.calls.is_empty() || others.opaque.is_some();
        if read_arms {
            let start = format!("{}:{} the gate's other arms", gate.file, gate.line);
            self.follow(
                parsed,
                &others,
                &[start],
                gate.dist.as_deref(),
                &Reach::start(),
                &mut arms,
            );
        }
        for (searched, whose) in [(search, "the gated code"), (&arms, "the gate's other arms")] {
            if !searched.links.is_empty() {
                return Err(format!("{whose} reach a kernel"));
            }
            if !searched.stores.is_empty() {
                return Err(format!("{whose} set a flag"));
            }
            if let Some(first) = &searched.unfollowed.first {
                return Err(format!("in {whose}, {first}"));
            }
            if let Some(why) = &searched.opaque {
                return Err(why.clone());
            }
        }
        if arms.calls_seen >= MAX_STEPS {
            return Err(format!(
                "the search met its step budget ({MAX_STEPS} calls)"
            ));
        }
        Ok(format!(
            "the gated code{} was read whole: {} call(s) followed to their definitions, up to {MAX_HOPS} hops; none reaches a JIT generator, native op, DSL or Triton kernel or a known backend, and nothing on the way hides where it goes",
            if read_arms {
                " and the gate's other arms"
            } else {
                ""
            },
            arms.calls_seen
        ))
    }

    fn reader(&self) -> Reader<'_> {
        Reader {
            code: self.code,
            text: self.text,
            gates: self.gates,
            gates_by_file: self.gates_by_file,
        }
    }

    /// Follows code that a flag's read guards: its kernels, and the flags it sets in turn.
    pub(super) fn follow_code(
        &self,
        module: &str,
        facts: &Facts,
        chain: Vec<String>,
        guards: &[Guard],
        dist: Option<&str>,
    ) -> Followed {
        let Some(parsed) = self.code.module(module) else {
            return Followed {
                links: Vec::new(),
                stores: Vec::new(),
                unfollowed: Some((1, format!("module `{module}` could not be read"))),
                risky: Some(format!("module `{module}` could not be read")),
            };
        };
        let mut search = Search {
            links: Vec::new(),
            visited: HashSet::new(),
            calls_seen: 0,
            stores: Vec::new(),
            unfollowed: Unfollowed::default(),
            opaque: None,
            linked_calls: HashSet::new(),
        };
        self.follow(&parsed, facts, &chain, dist, &Reach::start(), &mut search);
        let mut links = search.links;
        for link in &mut links {
            link.guards.extend_from_slice(guards);
            link.guards.sort();
            link.guards.dedup();
        }
        Followed {
            links,
            stores: search.stores,
            risky: search.unfollowed.risky_words(),
            unfollowed: search
                .unfollowed
                .first
                .map(|first| (search.unfollowed.count, first)),
        }
    }

    /// Flag flow for every gate at once: the flags their paths set are searched for in the
    /// site in rounds (one pass over the text per round, for all the flags of that round),
    /// each flag's reads followed once, and each gate given the kernels its flags reach.
    pub fn flow(&self, links: &mut [GateLink], seeds: &[Vec<Seed>], dists: &[Option<String>]) {
        let mut results: HashMap<FlagKey, FlagResult> = HashMap::new();
        let mut pending: BTreeSet<FlagKey> = seeds
            .iter()
            .flatten()
            .map(|(key, _, _)| key.clone())
            .collect();
        let reader = self.reader();
        for _round in 0..MAX_FLAG_HOPS {
            let keys: Vec<FlagKey> = pending
                .iter()
                .filter(|k| !results.contains_key(*k))
                .cloned()
                .collect();
            pending.clear();
            if keys.is_empty() {
                break;
            }
            // Keys of one name (a helper two modules define, an attribute two classes store)
            // share one text search.
            let mut names: Vec<String> = keys.iter().map(|k| k.name().to_string()).collect();
            names.sort_unstable();
            names.dedup();
            let clock = std::time::Instant::now();
            let found = self.text.find_words(&names);
            let hits: Vec<&Vec<Hit>> = keys
                .iter()
                .map(|k| {
                    let at = names
                        .binary_search_by(|n| n.as_str().cmp(k.name()))
                        .expect("a searched name");
                    &found[at]
                })
                .collect();
            if std::env::var_os("GATEFIX_TIMINGS").is_some() {
                eprintln!(
                    "verdicts: flow round {_round}: {} flags, text search {:?}",
                    keys.len(),
                    clock.elapsed()
                );
            }
            // The flags with the most reads first: each flag's reads are followed on one
            // thread, and a common one started last would leave the other core idle.
            let mut order: Vec<usize> = (0..keys.len()).collect();
            order.sort_by_key(|&i| std::cmp::Reverse(hits[i].len()));
            let mut computed: Vec<(usize, FlagKey, FlagResult)> = order
                .par_iter()
                .map(|&i| {
                    let (key, hits) = (&keys[i], hits[i]);
                    let mut result = FlagResult::default();
                    for hop in reader.reads(key, hits) {
                        match hop {
                            Hop::Stop(why) => {
                                // A function no code on the site calls leaves nothing to read.
                                if stop_kind(&why) != "entry-point" {
                                    result.left_out.get_or_insert_with(|| why.clone());
                                }
                                result.stops.push(why)
                            }
                            Hop::Flag { key, what, guards } => {
                                result
                                    .next
                                    .push((key, vec![format!("read at {what}")], guards))
                            }
                            Hop::Code {
                                module,
                                facts,
                                what,
                                guards,
                            } => {
                                let followed = self.follow_code(
                                    &module,
                                    &facts,
                                    vec![format!("read at {what}")],
                                    &guards,
                                    None,
                                );
                                // Code that reaches no kernel and sets no flag: where the
                                // search stopped in it is where a reviewer picks up.
                                if let Some(risky) = &followed.risky {
                                    result
                                        .left_out
                                        .get_or_insert_with(|| format!("{what}: {risky}"));
                                }
                                if followed.links.is_empty() && followed.stores.is_empty() {
                                    result.stops.push(match &followed.unfollowed {
                                        Some((count, first)) => format!(
                                            "{what}: the code it guards reaches no kernel; {count} hop(s) not followed, the first: {first}"
                                        ),
                                        None => format!(
                                            "{what}: the code it guards reaches no kernel, every call followed"
                                        ),
                                    });
                                }
                                result.links.extend(followed.links);
                                for (key, chain) in followed.stores {
                                    result.next.push((key, chain, guards.clone()));
                                }
                            }
                        }
                    }
                    (i, key.clone(), result)
                })
                .collect();
            computed.sort_unstable_by_key(|(i, _, _)| *i);
            let trace = std::env::var("GATEFIX_TRACE_FLOW").ok();
            for (_, key, result) in computed {
                if trace
                    .as_deref()
                    .is_some_and(|t| t == "*" || key.name() == t)
                {
                    eprintln!(
                        "flow {}: {} link(s), next {:?}, stops {:?}",
                        key.words(),
                        result.links.len(),
                        result
                            .next
                            .iter()
                            .map(|(k, c, _)| (k.words(), c.clone()))
                            .collect::<Vec<_>>(),
                        result.stops
                    );
                }
                for (next, _, _) in &result.next {
                    if !results.contains_key(next) {
                        pending.insert(next.clone());
                    }
                }
                results.insert(key, result);
            }
        }
        for (index, gate_seeds) in seeds.iter().enumerate() {
            if gate_seeds.is_empty() {
                continue;
            }
            let mut found: Vec<Link> = Vec::new();
            let mut stops: Vec<String> = Vec::new();
            let mut left_out: Option<String> = None;
            let mut visited: HashSet<&FlagKey> = HashSet::new();
            let mut queue: VecDeque<(&FlagKey, Vec<String>, Vec<Guard>, usize)> = gate_seeds
                .iter()
                .map(|(key, chain, guards)| {
                    let mut chain = chain.clone();
                    chain.push(format!("sets {}", key.words()));
                    (key, chain, guards.clone(), 0)
                })
                .collect();
            while let Some((key, chain, guards, depth)) = queue.pop_front() {
                if !visited.insert(key) {
                    continue;
                }
                let Some(result) = results.get(key) else {
                    let why = format!(
                        "{}: not searched, past {MAX_FLAG_HOPS} flag hops",
                        key.words()
                    );
                    left_out.get_or_insert_with(|| why.clone());
                    stops.push(why);
                    continue;
                };
                for link in &result.links {
                    let mut link = link.clone();
                    link.chain = chain.iter().cloned().chain(link.chain).collect();
                    link.guards.extend_from_slice(&guards);
                    link.guards.sort();
                    link.guards.dedup();
                    add_link(&mut found, link);
                }
                stops.extend(result.stops.iter().take(3).cloned());
                if left_out.is_none() {
                    left_out.clone_from(&result.left_out);
                }
                if depth + 1 >= MAX_FLAG_HOPS {
                    if let Some((next, _, _)) = result.next.first() {
                        left_out.get_or_insert_with(|| {
                            format!("{}: past {MAX_FLAG_HOPS} flag hops", next.words())
                        });
                    }
                    continue;
                }
                for (next, hop, more) in &result.next {
                    let mut next_chain = chain.clone();
                    next_chain.extend(hop.iter().cloned());
                    next_chain.push(format!("sets {}", next.words()));
                    let mut next_guards = guards.clone();
                    next_guards.extend_from_slice(more);
                    queue.push_back((next, next_chain, next_guards, depth + 1));
                }
            }
            let _ = dists;
            let link = &mut links[index];
            match &mut link.outcome {
                LinkOutcome::Linked(existing) => {
                    if !found.is_empty() && link.left_out.is_none() {
                        link.left_out = left_out;
                    }
                    for l in found {
                        add_link(existing, l);
                    }
                }
                LinkOutcome::NotLinked(why) => {
                    if found.is_empty() {
                        let keys: Vec<String> =
                            gate_seeds.iter().map(|(k, _, _)| k.words()).collect();
                        let first = stops
                            .first()
                            .cloned()
                            .unwrap_or_else(|| "its reads guard no code gatefix follows".into());
                        *why = format!(
                            "{why}; the path sets {} and its reads reach no kernel: first stop: {first}",
                            keys.join(", ")
                        );
                        link.stop = Some(stop_kind(&first).into());
                    } else {
                        link.outcome = LinkOutcome::Linked(found);
                        link.stop = None;
                        link.left_out = left_out;
                    }
                }
            }
        }
    }

    fn follow(
        &self,
        parsed: &Parsed,
        facts: &Facts,
        chain: &[String],
        dist: Option<&str>,
        reach: &Reach,
        search: &mut Search,
    ) {
        let Reach {
            depth,
            conditional,
            ref guards,
        } = *reach;
        if search.opaque.is_none()
            && let Some(why) = &facts.opaque
        {
            search.opaque = Some(format!("{}: {why}", file_of_module(parsed)));
        }
        for store in &facts.stores {
            let mut key = store.key.clone();
            match &mut key {
                FlagKey::Global { module, .. } if module.is_empty() => {
                    *module = parsed.module.clone();
                }
                FlagKey::Attr { path, .. } if path.is_empty() => *path = file_of_module(parsed),
                _ => {}
            }
            if !search.stores.iter().any(|(k, _)| *k == key) {
                let mut chain = chain.to_vec();
                chain.push(format!(
                    "{}:{} stores the flag",
                    file_of_module(parsed),
                    store.line
                ));
                search.stores.push((key, chain));
            }
        }
        for word in &facts.strings {
            for backend in self.rules.backends.iter().filter(|b| {
                b.name == *word
                    && b.dist.as_deref().is_none_or(|d| Some(d) == dist)
                    && b.module_imports
                        .as_deref()
                        .is_none_or(|module| imports_module(&parsed.src, module))
            }) {
                let mut chain = chain.to_vec();
                chain.push(format!(
                    "chooses backend \"{word}\" (a [[backend]] in {})",
                    backend.source.display()
                ));
                let conditional = conditional || facts.conditional_strings.contains(word);
                push(
                    search,
                    backend.needs.clone(),
                    backend.majors.clone(),
                    chain,
                    (conditional, guards.clone()),
                );
            }
        }
        // A method of what a call returns (`gen_norm_module().run`) is decided after the loop,
        // by whether that call reached a kernel.
        let mut on_results: Vec<&str> = Vec::new();
        let mut previous: Option<(&str, usize)> = None;
        for call in &facts.calls {
            if let Some((call, before)) = previous.take()
                && search.links.len() > before
            {
                search.linked_calls.insert(call.to_string());
            }
            previous = Some((call.as_str(), search.links.len()));
            if search.calls_seen >= MAX_STEPS {
                search
                    .unfollowed
                    .add(|| format!("step budget ({MAX_STEPS} calls)"));
                return;
            }
            search.calls_seen += 1;
            let conditional = conditional || facts.conditional_calls.contains(call);
            // The tests this call is under that are gates: where one blocks the target, the
            // call is not made there (`elif arch // 10 == 9: FlashAttentionForwardSm90(...)`).
            let mut guards = guards.clone();
            if let Some(conditions) = facts.call_conditions.get(call) {
                guards.extend(self.gates_of_conditions(parsed, conditions));
                guards.sort();
                guards.dedup();
            }
            if let Some(library) = self.torch_op_library(call) {
                let mut chain = chain.to_vec();
                chain.push(format!("calls native op {call}"));
                push(search, library, None, chain, (conditional, guards));
                continue;
            }
            let python_op = call.starts_with("torch.ops.");
            let mut stored_in = None;
            let callee = if python_op {
                // An op no native library of the site can register: registered from Python
                // (`direct_register_custom_op("name", impl)`), by the function of that name.
                self.resolve_by_name(parsed, call)
            } else if self.outside_receiver(parsed, call) {
                // `torch.bincount(...)` is torch's, whatever the site defines by that name.
                self.resolve(parsed, call).map(|(m, f)| Callee::Named(m, f))
            } else {
                self.local_function(parsed, facts, call)
                    .or_else(|| self.resolve(parsed, call).map(|(m, f)| Callee::Named(m, f)))
                    .or_else(|| self.resolve_by_name(parsed, call))
                    .or_else(|| {
                        // `self._extend_fn(...)` after `self._extend_fn = chunk_fwd`: the
                        // function the attribute holds.
                        let (value, line) = stored_callable(&parsed.src, call)?;
                        // A name the module imports (at the top or in a function, as the
                        // deferred loads do), not a parameter that happens to share a
                        // function's name.
                        let callee = self
                            .resolve(parsed, &value)
                            .map(|(m, f)| Callee::Named(m, f))
                            .or_else(|| {
                                imported_in(&parsed.src, &value)
                                    .then(|| self.resolve_by_name(parsed, &value))?
                            })?;
                        stored_in = Some((
                            format!(
                                " (held by {call}, set to {value} at {}:{line})",
                                file_of_module(parsed)
                            ),
                            value,
                        ));
                        Some(callee)
                    })
            };
            let Some(callee) = callee else {
                if launches_nothing(call) || self.is_quiet(parsed, call) {
                } else if returned_by(call).is_some() {
                    on_results.push(call);
                } else {
                    search
                        .unfollowed
                        .add_as(self.hides_kernel(parsed, call), || {
                            format!("`{call}` is no code gatefix finds on the site")
                        });
                }
                continue;
            };
            // The name the callee is defined under: the call's, or the function an attribute
            // holds.
            let named = stored_in.as_ref().map_or(call.as_str(), |(_, value)| value);
            let (id, how) = match &callee {
                Callee::Named(module, function) => (format!("{module}:{function}"), String::new()),
                Callee::At { file, offset, how } => {
                    let f = &self.text.files[*file];
                    let name = named.rsplit('.').next().unwrap_or(named);
                    let top = line_indent(&f.src, *offset) == 0;
                    let id = match (&f.module, top) {
                        (Some(m), true) => format!("{m}:{name}"),
                        _ => format!("{}:{}", f.path, line_of(&f.src, *offset)),
                    };
                    (id, format!(" ({how})"))
                }
            };
            let mut next_chain = chain.to_vec();
            next_chain.push(format!(
                "calls {id}{how}{}",
                stored_in.as_ref().map_or("", |(held, _)| held.as_str())
            ));
            if self.is_triton_kernel(&callee) {
                push(
                    search,
                    Requirement::Triton(id),
                    None,
                    next_chain,
                    (conditional, guards),
                );
                continue;
            }
            let is_generator = !self.jit.generators(&id).is_empty()
                || self.jit.fixed_arch.iter().any(|f| f.id == id);
            if is_generator {
                push(
                    search,
                    Requirement::Jit(id),
                    None,
                    next_chain,
                    (conditional, guards),
                );
                continue;
            }
            // A top-level class or function that builds CuTe DSL ops is a DSL kernel: its
            // ops' admission decides (L5). Other functions of the module are followed on.
            let dsl_kernel = match &callee {
                Callee::Named(module, function) => Some((
                    module.as_str(),
                    function.split('.').next().unwrap_or(function),
                )),
                Callee::At { file, offset, .. } => {
                    let f = &self.text.files[*file];
                    let name = named.rsplit('.').next().unwrap_or(named);
                    f.module
                        .as_deref()
                        .filter(|_| line_indent(&f.src, *offset) == 0)
                        .map(|m| (m, name))
                }
            };
            if let Some((module, kernel)) = dsl_kernel
                && self.dsl.is_kernel(module, kernel)
            {
                push(
                    search,
                    Requirement::Dsl(format!("{module}:{kernel}")),
                    None,
                    next_chain,
                    (conditional, guards),
                );
                continue;
            }
            if depth + 1 >= MAX_HOPS {
                search
                    .unfollowed
                    .add(|| format!("`{id}` is past {MAX_HOPS} hops"));
                continue;
            }
            if !search.visited.insert(id.clone()) {
                continue;
            }
            let body = match callee {
                Callee::Named(module, function) => self.code.callee(&module, &function),
                Callee::At { file, offset, .. } => self.text.files[file]
                    .module
                    .clone()
                    .and_then(|module| self.code.callee_at(&module, offset)),
            };
            let Some((callee, body)) = body else {
                search
                    .unfollowed
                    .add(|| format!("the definition of `{id}` could not be read"));
                continue;
            };
            // A function that builds a JIT spec with no arch list (`gen_jit_spec(name,
            // sources)`) compiles for the device it runs on: a generator whose layers decide.
            if self.builds_jit_spec(&body) && id.contains(':') && !id.contains('/') {
                next_chain
                    .last_mut()
                    .expect("a chain")
                    .push_str(": builds a JIT spec");
                push(
                    search,
                    Requirement::Jit(id),
                    None,
                    next_chain,
                    (conditional, guards),
                );
                continue;
            }
            self.follow(
                &callee,
                &body,
                &next_chain,
                dist,
                &Reach {
                    depth: depth + 1,
                    conditional,
                    guards,
                },
                search,
            );
        }
        if let Some((call, before)) = previous
            && search.links.len() > before
        {
            search.linked_calls.insert(call.to_string());
        }
        // `gen_norm_module().run(x)`: the kernel module that call built, found through it.
        for call in on_results {
            let risky = returned_by(call).is_none_or(|made| !search.linked_calls.contains(made))
                && self.hides_kernel(parsed, call);
            search.unfollowed.add_as(risky, || {
                format!("`{call}` is no code gatefix finds on the site")
            });
        }
    }

    /// The gates of this module that are exactly one of these tests (parentheses aside), as
    /// guards: negated where the code runs when the test fails.
    fn gates_of_conditions(&self, parsed: &Parsed, conditions: &[Condition]) -> Vec<Guard> {
        let file = file_of_module(parsed);
        let Some(indices) = self.gates_by_file.get(&file) else {
            return Vec::new();
        };
        let trim = |(mut start, mut end): (usize, usize)| {
            let src = &parsed.src;
            loop {
                while start < end && src[start].is_ascii_whitespace() {
                    start += 1;
                }
                while end > start && src[end - 1].is_ascii_whitespace() {
                    end -= 1;
                }
                if end > start + 1 && src[start] == b'(' && src[end - 1] == b')' {
                    start += 1;
                    end -= 1;
                } else {
                    return (start, end);
                }
            }
        };
        let mut guards = Vec::new();
        for condition in conditions {
            let test = trim((condition.start, condition.end));
            for &index in indices {
                let gate = &self.gates[index];
                if parsed.gate_bytes(gate).map(trim) == Some(test) {
                    guards.push(Guard {
                        gate: index,
                        negated: condition.negated,
                        holds_read: false,
                    });
                }
            }
        }
        guards
    }

    /// Whether a callee is a Triton kernel: its def carries a decorator the kernel-layer rules
    /// name (`@triton.jit`, `@triton.autotune`).
    fn is_triton_kernel(&self, callee: &Callee) -> bool {
        let decorators = &self.rules.kernel_layers.triton_decorators;
        match callee {
            Callee::Named(module, function) => self.code.module(module).is_some_and(|parsed| {
                parsed
                    .defs
                    .get(function.as_str())
                    .is_some_and(|&(start, _)| decorated_with(&parsed.src, start, decorators))
            }),
            Callee::At { file, offset, .. } => {
                decorated_with(&self.text.files[*file].src, *offset, decorators)
            }
        }
    }

    /// Whether a body calls one of the JIT spec builders the kernel-layer rules name
    /// (`gen_jit_spec(...)`, `JitSpec(...)`), by the call's last name.
    fn builds_jit_spec(&self, body: &Facts) -> bool {
        let spec_calls = &self.rules.kernel_layers.spec_calls;
        body.calls.iter().any(|call| {
            let name = call.rsplit('.').next().unwrap_or(call);
            spec_calls.iter().any(|s| s == name)
        })
    }

    /// Whether a dotted call's receiver is a module imported from outside the site
    /// (`torch.bincount`, `np.cumsum`, `nn.functional.pad` after `from torch import nn`):
    /// its function is that module's, so a def of the same name in the site is not it.
    fn outside_receiver(&self, parsed: &Parsed, call: &str) -> bool {
        let Some((receiver, _)) = call.split_once('.').filter(|_| is_dotted_name(call)) else {
            return false;
        };
        let Some((base, member)) = parsed.imports().get(receiver) else {
            return false;
        };
        let root = base.split('.').next().unwrap_or(base);
        let on_site = self.code.has_module(base)
            || self.code.has_module(root)
            || member
                .as_ref()
                .is_some_and(|m| self.code.has_module(&format!("{base}.{m}")));
        !on_site
    }

    /// Whether a call the search could not follow may launch a kernel the target lacks: not
    /// a function of a package outside the site whose kernels are its own
    /// (`[[own_kernels]]`: torch other than `torch.ops`, Python's standard library), not a
    /// method of Python's containers or torch's tensors on an object gatefix cannot type
    /// (`args.append`, `x.to`), nor one that no definition on the site has. Site code the
    /// search could not pick (a name defined twice, a computed callee) and other libraries
    /// outside the site (`deep_gemm.*`, a CuTe DSL helper) may.
    fn hides_kernel(&self, parsed: &Parsed, call: &str) -> bool {
        let (head, rest) = match call.split_once('.') {
            Some((head, rest)) => (head, Some(rest)),
            None => (call, None),
        };
        if !is_dotted_name(call) {
            // A method of a computed value (`w.float().abs().max`): by its name alone.
            let name = call.rsplit('.').next().unwrap_or(call);
            let method = rest.is_some() && !name.is_empty() && is_dotted_name(name);
            return !(method
                && (self.rules.quiet.method(name) || self.rules.own_kernels.method(name)));
        }
        let name = call.rsplit('.').next().unwrap_or(call);
        let library_method = self.rules.quiet.method(name) || self.rules.own_kernels.method(name);
        if let Some((base, _)) = parsed.imports().get(head) {
            // Whether or not the package is installed in the site (a venv holds torch), its
            // functions launch its own kernels only.
            let root = base.split('.').next().unwrap_or(base);
            let registered_op = root == "torch" && call.contains(".ops.");
            if registered_op {
                return true;
            }
            if self.rules.own_kernels.package(root) {
                return false;
            }
            // `envs.SGLANG_X.get()`: a library method of an object a site module holds.
            return !(library_method && call.matches('.').count() >= 2);
        }
        if head == "builtins" || head == "object" {
            return false;
        }
        rest.is_none() || !library_method && !self.text.defs(name).is_empty()
    }

    /// A call outside the site that `rules/quiet.toml` says launches nothing: a function,
    /// named as the module's imports qualify it (`SimpleNamespace` from `types`), or a method
    /// on an object that is no import, where no definition on the site has the method's name.
    fn is_quiet(&self, parsed: &Parsed, call: &str) -> bool {
        if !is_dotted_name(call) {
            return false;
        }
        let (head, rest) = match call.split_once('.') {
            Some((head, rest)) => (head, Some(rest)),
            None => (call, None),
        };
        if let Some((base, member)) = parsed.imports().get(head) {
            let qualified = [Some(base.as_str()), member.as_deref(), rest]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join(".");
            return self.rules.quiet.function(&qualified);
        }
        let name = call.rsplit('.').next().unwrap_or(call);
        rest.is_some() && self.rules.quiet.method(name) && self.text.defs(name).is_empty()
    }

    /// A call that imports do not resolve (`self.m()`, `obj.m()`, `super().m()`, a module
    /// kept in a variable), by the definitions of its last name in the site: the one in this
    /// file for `self.`/`cls.`/`super().`, or the only one in the site (or in one file).
    fn resolve_by_name(&self, parsed: &Parsed, call: &str) -> Option<Callee> {
        let name = call.rsplit('.').next()?;
        if name.is_empty() || name.starts_with("__") {
            return None;
        }
        let defs = self.text.defs(name);
        if defs.is_empty() {
            return None;
        }
        // A name the caller imports from a module outside the site (`from functools import
        // partial`) is that module's, whatever the site defines under the name.
        let head = call.split('.').next().unwrap_or(call);
        if let Some((from, _)) = parsed.imports().get(head)
            && !self.code.has_module(from)
        {
            return None;
        }
        // A method of the caller's own class: the one def of that name in the caller's module.
        let own =
            call.starts_with("self.") || call.starts_with("cls.") || call.starts_with("super().");
        if own {
            let mut here = defs.iter().filter(|(f, _)| {
                self.text.files[*f].module.as_deref() == Some(parsed.module.as_str())
            });
            if let (Some(&(file, offset)), None) = (here.next(), here.next()) {
                return Some(Callee::At {
                    file,
                    offset,
                    how: format!("the {name} of this module"),
                });
            }
        }
        if defs.len() == 1 {
            let (file, offset) = defs[0];
            return Some(Callee::At {
                file,
                offset,
                how: format!("the only def {name} in the site"),
            });
        }
        // The defs at the top level of their files, read only where they decide (a name
        // such as `forward` has thousands of defs, and most calls of it end at the first
        // test below).
        let top = || -> Vec<(usize, usize)> {
            defs.iter()
                .filter(|(f, o)| line_indent(&self.text.files[*f].src, *o) == 0)
                .copied()
                .collect()
        };
        // All in one file (a public function and the registered op it wraps): the top-level one.
        let one_file = defs.iter().all(|(f, _)| *f == defs[0].0);
        if one_file && let [(file, offset)] = top()[..] {
            return Some(Callee::At {
                file,
                offset,
                how: format!("the top-level def {name}, the only file defining it"),
            });
        }
        // A plain call (no receiver) of a top-level function that a vendored copy defines
        // again elsewhere (`sglang.srt.distributed.parallel_state` and
        // `sglang.multimodal_gen.runtime.distributed.parallel_state`): the one in the package
        // closest to the caller, where one is closer than every other and shares more than
        // the top-level package with it.
        if call.contains('.') {
            return None;
        }
        let top = top();
        let shared = |(f, _): &(usize, usize)| -> usize {
            let module = self.text.files[*f].module.as_deref().unwrap_or("");
            module
                .split('.')
                .zip(parsed.module.split('.'))
                .take_while(|(a, b)| a == b)
                .count()
        };
        let best = top.iter().map(shared).max()?;
        let closest: Vec<&(usize, usize)> = top.iter().filter(|d| shared(d) == best).collect();
        if best < 2 || closest.len() != 1 {
            return None;
        }
        let (file, offset) = *closest[0];
        Some(Callee::At {
            file,
            offset,
            how: format!("the top-level def {name} in the package closest to the caller"),
        })
    }

    fn torch_op_library(&self, call: &str) -> Option<Requirement> {
        let (lib, op) = call.strip_prefix("torch.ops.")?.split_once('.')?;
        let op = op.split('.').next().unwrap_or(op);
        let native = self.packages.contains(lib) && self.has_native_library(lib);
        native.then(|| Requirement::TorchOp {
            namespace: lib.to_string(),
            op: op.to_string(),
        })
    }

    /// Whether a top-level folder of the site holds a native library (`.so`), asked once per
    /// folder.
    fn has_native_library(&self, lib: &str) -> bool {
        if let Some(&known) = self.native.lock().expect("native").get(lib) {
            return known;
        }
        let mut stack = vec![self.code.root().join(lib)];
        let mut found = false;
        let mut seen = 0usize;
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                seen += 1;
                let Ok(kind) = entry.file_type() else {
                    continue;
                };
                let name = entry.file_name();
                let name = name.to_string_lossy();
                if kind.is_dir() {
                    stack.push(entry.path());
                } else if kind.is_file() && (name.ends_with(".so") || name.contains(".so.")) {
                    found = true;
                }
            }
            if found || seen > 200_000 {
                break;
            }
        }
        self.native
            .lock()
            .expect("native")
            .insert(lib.to_string(), found);
        found
    }

    /// Where a call written in a module leads, as (module, function or Class.method).
    fn resolve(&self, parsed: &Parsed, call: &str) -> Option<(String, String)> {
        let parts: Vec<&str> = call.split('.').collect();
        if parsed.defs.contains_key(call) {
            return Some((parsed.module.clone(), call.to_string()));
        }
        // `Sm100ChunkUWKernel.compile(...)`: a method of a class the module defines, or
        // imports by name (a CuTe DSL kernel class is judged by the ops it builds).
        if let [class, method] = parts.as_slice()
            && class.starts_with(|c: char| c.is_ascii_uppercase())
        {
            if parsed.defs.contains_key(*class) {
                return Some((parsed.module.clone(), format!("{class}.{method}")));
            }
            if let Some((base, Some(member))) = parsed.imports().get(*class)
                && !self.code.has_module(&format!("{base}.{member}"))
                && let Some((module, name)) = self.lookup(base, member, 0)
            {
                return Some((module, format!("{name}.{method}")));
            }
        }
        let (base, member) = parsed.imports().get(parts[0])?;
        let mut module = base.clone();
        let mut rest: Vec<&str> = parts[1..].to_vec();
        if let Some(member) = member {
            let submodule = format!("{base}.{member}");
            if self.code.has_module(&submodule) {
                module = submodule;
            } else if rest.is_empty() {
                return self.lookup(base, member, 0);
            } else {
                return None; // an attribute of an object
            }
        }
        while rest.len() > 1 {
            let submodule = format!("{module}.{}", rest[0]);
            if !self.code.has_module(&submodule) {
                break;
            }
            module = submodule;
            rest.remove(0);
        }
        match rest.as_slice() {
            [name] => self.lookup(&module, name, 0),
            // `mk.FusedMoEExperts.is_supported_config(...)`: a method of a class the module
            // defines or re-exports.
            [class, method] if class.starts_with(|c: char| c.is_ascii_uppercase()) => self
                .lookup(&module, class, 0)
                .map(|(module, class)| (module, format!("{class}.{method}"))),
            _ => None,
        }
    }

    /// A definition in a module, through re-exports (`from .x import f` in a package).
    fn lookup(&self, module: &str, name: &str, depth: usize) -> Option<(String, String)> {
        let parsed = self.code.module(module)?;
        if parsed.defs.contains_key(name) {
            return Some((module.to_string(), name.to_string()));
        }
        match parsed.imports().get(name) {
            Some((next, Some(member))) if depth < 4 => self.lookup(next, member, depth + 1),
            Some(_) => None,
            // A global bound to a lazy import of another module's function
            // (`f = _lazy_import_wrapper("flashinfer.fused_moe", "cutlass_fused_moe")`):
            // calling it calls that function.
            None if depth < 4
                && let Some((target, member)) = self.lazy_import(&parsed, name) =>
            {
                self.lookup(&target, &member, depth + 1)
            }
            // A package that re-exports its modules whole (`from .parallel_state import *`
            // in `sglang/srt/distributed/__init__.py`): the first of them that has the name.
            None if depth < 4 => {
                let mut from: Vec<&str> = star_imports(parsed.imports()).collect();
                from.sort_unstable();
                from.into_iter()
                    .find_map(|next| self.lookup(next, name, depth + 1))
            }
            None => None,
        }
    }

    /// A function the followed code defines inside itself (`def _per_expert(...)` in an
    /// `__init__`), called by its name: the last definition of it there, as at the call.
    fn local_function(&self, parsed: &Parsed, facts: &Facts, call: &str) -> Option<Callee> {
        let &(_, at) = facts
            .local_functions
            .iter()
            .rev()
            .find(|(n, _)| n == call)?;
        // The site's index of definitions points at `def`, past an `async `.
        let (file, offset) = self.text.defs(call).iter().copied().find(|&(f, o)| {
            self.text.files[f].module.as_deref() == Some(parsed.module.as_str())
                && (o == at || o == at + "async ".len())
        })?;
        Some(Callee::At {
            file,
            offset,
            how: format!("the local function {call}"),
        })
    }

    /// The module and member a global of `parsed` imports lazily: a top-level
    /// `name = factory("module.path", "member", ...)` whose factory (defined in the module or
    /// imported into it) is read to be a lazy import: its body returns an attribute named by
    /// its second parameter (`getattr(mod, attr_name)`) of a module imported by its first,
    /// with `importlib.import_module` or `__import__`, directly or through a function of the
    /// factory's module that calls one of them.
    fn lazy_import(&self, parsed: &Parsed, name: &str) -> Option<(String, String)> {
        let src = &parsed.src[..];
        let &statement = parsed.statements.iter().find(|&&(start, end)| {
            let text = &src[start..end];
            text.starts_with(name.as_bytes()) && {
                let rest = text[name.len()..].trim_ascii_start();
                rest.starts_with(b"=") && !rest.starts_with(b"==")
            }
        })?;
        let tree = parsed.parse(&[statement]);
        let assignment = tree
            .root_node()
            .named_child(0)
            .filter(|n| n.kind() == "expression_statement")?
            .named_child(0)
            .filter(|n| n.kind() == "assignment")?;
        let call = assignment
            .child_by_field_name("right")
            .filter(|n| n.kind() == "call")?;
        let factory = call
            .child_by_field_name("function")
            .filter(|n| n.kind() == "identifier")?;
        let arguments = call.child_by_field_name("arguments")?;
        let mut cursor = arguments.walk();
        let strings: Vec<String> = arguments
            .named_children(&mut cursor)
            .take(2)
            .map_while(|a| string_content(a, src))
            .collect();
        let [target, member] = strings.as_slice() else {
            return None;
        };
        let factory = text(factory, src);
        let (module, function) = if parsed.defs.contains_key(factory) {
            (parsed.module.clone(), factory.to_string())
        } else {
            let (from, Some(member)) = parsed.imports().get(factory)? else {
                return None;
            };
            self.lookup(from, member, 3)?
        };
        let defining = self.code.module(&module)?;
        is_lazy_import_factory(&defining, &function).then(|| (target.clone(), member.clone()))
    }
}

/// Whether the top-level function `name` of `parsed` returns (or calls) an attribute named by
/// its second parameter of the module its first parameter names: a `getattr(_, second)` call
/// and a call taking `first` that imports (`import_module`, `__import__`, or a top-level
/// function of the module whose body calls one of them).
fn is_lazy_import_factory(parsed: &Parsed, name: &str) -> bool {
    let Some(&range) = parsed.defs.get(name) else {
        return false;
    };
    let src = &parsed.src[..];
    let imports = |text: &[u8]| {
        memchr::memmem::find(text, b"import_module(").is_some()
            || memchr::memmem::find(text, b"__import__(").is_some()
    };
    if memchr::memmem::find(&src[range.0..range.1], b"getattr(").is_none() {
        return false;
    }
    let tree = parsed.parse(&[range]);
    let Some(function) = tree.root_node().named_child(0).and_then(undecorated) else {
        return false;
    };
    let Some(parameters) = function.child_by_field_name("parameters") else {
        return false;
    };
    let mut cursor = parameters.walk();
    let names: Vec<&str> = parameters
        .named_children(&mut cursor)
        .take(2)
        .filter_map(|p| match p.kind() {
            "identifier" => Some(text(p, src)),
            _ => p
                .child_by_field_name("name")
                .or_else(|| p.named_child(0))
                .filter(|n| n.kind() == "identifier")
                .map(|n| text(n, src)),
        })
        .collect();
    let [first, second] = names.as_slice() else {
        return false;
    };
    let (mut attribute, mut imported) = (false, false);
    let mut stack = vec![function];
    while let Some(node) = stack.pop() {
        if node.kind() == "call"
            && let (Some(callee), Some(arguments)) = (
                node.child_by_field_name("function"),
                node.child_by_field_name("arguments"),
            )
        {
            let mut cursor = arguments.walk();
            let arguments: Vec<&str> = arguments
                .named_children(&mut cursor)
                .map(|a| text(a, src))
                .collect();
            let callee_text = text(callee, src);
            if callee_text == "getattr" && arguments.get(1) == Some(second) {
                attribute = true;
            }
            if arguments.first() == Some(first) {
                imported |= callee_text.ends_with("import_module")
                    || callee_text == "__import__"
                    || parsed
                        .defs
                        .get(callee_text)
                        .is_some_and(|&(start, end)| imports(&src[start..end]));
            }
        }
        let mut cursor = node.walk();
        stack.extend(node.named_children(&mut cursor));
    }
    attribute && imported
}

/// The content of a plain string literal (no prefix, escape or interpolation).
fn string_content(node: Node, src: &[u8]) -> Option<String> {
    if node.kind() != "string" {
        return None;
    }
    let raw = text(node, src);
    let inner = raw
        .strip_prefix('"')
        .and_then(|r| r.strip_suffix('"'))
        .or_else(|| raw.strip_prefix('\'').and_then(|r| r.strip_suffix('\'')))?;
    (!inner.is_empty() && !inner.contains(['\\', '{', '"', '\''])).then(|| inner.to_string())
}

/// The one function an attribute of `self` (or `cls`) holds, where `call` is that attribute
/// and the module sets it only to plain names (`self._extend_fn = chunk_fwd`; `None` aside,
/// the value before it is loaded): the name and the line of the first such store. Two
/// different names, or any other value, and the callee is not known.
fn stored_callable(src: &[u8], call: &str) -> Option<(String, u32)> {
    let attribute = call
        .strip_prefix("self.")
        .or_else(|| call.strip_prefix("cls."))?;
    if attribute.is_empty() || !attribute.bytes().all(is_word_byte) {
        return None;
    }
    let needle = format!(".{attribute}");
    let mut found: Option<(String, u32)> = None;
    for at in memchr::memmem::find_iter(src, needle.as_bytes()) {
        let end = at + needle.len();
        if src.get(end).is_some_and(|b| is_word_byte(*b)) {
            continue;
        }
        let receiver = &src[..at];
        if !(receiver.ends_with(b"self") || receiver.ends_with(b"cls")) {
            continue;
        }
        let rest = &src[end..];
        let line_end = memchr::memchr(b'\n', rest).unwrap_or(rest.len());
        let line = rest[..line_end].trim_ascii();
        let Some(value) = line.strip_prefix(b"=") else {
            continue;
        };
        if value.starts_with(b"=") {
            continue;
        }
        let value = value.trim_ascii();
        let value = std::str::from_utf8(value).ok()?;
        if value == "None" {
            continue;
        }
        let dotted = !value.is_empty()
            && value
                .split('.')
                .all(|part| !part.is_empty() && part.bytes().all(is_word_byte))
            && !value.as_bytes()[0].is_ascii_digit();
        if !dotted {
            return None;
        }
        match &found {
            Some((seen, _)) if seen != value => return None,
            Some(_) => {}
            None => {
                let line = src[..at].iter().filter(|b| **b == b'\n').count() as u32 + 1;
                found = Some((value.to_string(), line));
            }
        }
    }
    found
}

/// The call whose result `call` is a method of (`gen_norm_module` for
/// `gen_norm_module().run`), where it is one.
fn returned_by(call: &str) -> Option<&str> {
    let (receiver, _) = call.rsplit_once('.')?;
    if !receiver.ends_with(')') {
        return None;
    }
    let callee = receiver.split('(').next()?;
    is_dotted_name(callee)
        .then_some(callee)
        .filter(|c| !c.is_empty())
}

/// Whether an `import` statement anywhere in the file (a function's deferred import too)
/// binds `name`: the name follows `import` with only names, commas, `as`, parentheses and
/// whitespace between.
fn imported_in(src: &[u8], name: &str) -> bool {
    if name.is_empty() || !name.bytes().all(is_word_byte) {
        return false;
    }
    memchr::memmem::find_iter(src, name.as_bytes()).any(|at| {
        let end = at + name.len();
        if at > 0 && is_word_byte(src[at - 1]) || src.get(end).is_some_and(|b| is_word_byte(*b)) {
            return false;
        }
        let before = &src[at.saturating_sub(2_000)..at];
        let Some(import) = memchr::memmem::rfind(before, b"import") else {
            return false;
        };
        // Past a line end only inside the import's parentheses or after a backslash.
        let mut open = false;
        let mut continued = false;
        before[import + b"import".len()..].iter().all(|&b| {
            let ok = match b {
                b'(' => !std::mem::replace(&mut open, true),
                b'\n' => open || continued,
                b')' => false,
                _ => is_word_byte(b) || b" \t\r,\\".contains(&b),
            };
            if !b.is_ascii_whitespace() {
                continued = b == b'\\';
            }
            ok
        })
    })
}

/// The short kind of a stop, from its words (what `--explain-unverified` counts).
pub fn stop_kind(why: &str) -> &'static str {
    // First: the read's own words (`is passed to f()`) come before it.
    if why.contains("the code it guards reaches no kernel") {
        "no-kernel-reached"
    } else if why.contains("over the budget") {
        "read-budget"
    } else if why.contains("never read back") {
        "flag-never-read"
    } else if why.contains("an entry point, whose callers") {
        "entry-point"
    } else if why.contains("passed as an argument") || why.contains("passed to") {
        "flag-passed-as-argument"
    } else if why.contains("together with conditions that are no gate") {
        "not-decided"
    } else if why.contains("negation") {
        "flag-negated"
    } else if why.contains("compared") {
        "flag-compared"
    } else if why.contains("past") {
        "hop-limit"
    } else {
        "flag-used-otherwise"
    }
}

fn add_link(links: &mut Vec<Link>, link: Link) {
    if !links
        .iter()
        .any(|l| l.needs == link.needs && l.majors == link.majors && l.guards == link.guards)
    {
        links.push(link);
    }
}

/// Whether the source imports `module` or a module under it, by its import lines
/// (`import flashinfer.comm as comm`, `from flashinfer.comm.mnnvl import ...`,
/// `from flashinfer import comm`), at any indentation. Not `Parsed::imports`: that map holds
/// the module-level imports only, and the allreduce code imports flashinfer.comm inside the
/// function that uses it (sglang flashinfer_comm_fusion.py).
fn imports_module(src: &[u8], module: &str) -> bool {
    let under = |name: &str| {
        name == module
            || name
                .strip_prefix(module)
                .is_some_and(|rest| rest.starts_with('.'))
    };
    let (parent, last) = module.rsplit_once('.').unwrap_or(("", module));
    src.split(|&b| b == b'\n').any(|line| {
        let Ok(line) = std::str::from_utf8(line) else {
            return false;
        };
        let words: Vec<&str> = line
            .split(|c: char| c.is_whitespace() || c == ',' || c == '(' || c == ')')
            .filter(|w| !w.is_empty())
            .collect();
        match words.as_slice() {
            ["import", names @ ..] => names.iter().any(|n| under(n)),
            ["from", from, "import", names @ ..] => {
                under(from) || (*from == parent && names.contains(&last))
            }
            _ => false,
        }
    })
}

fn push(
    search: &mut Search,
    needs: Requirement,
    majors: Option<Vec<u32>>,
    chain: Vec<String>,
    (conditional, guards): (bool, Vec<Guard>),
) {
    match search
        .links
        .iter_mut()
        .find(|l| l.needs == needs && l.majors == majors)
    {
        Some(link) => {
            // Reached on two paths: only the gates both pass stay guards.
            link.guards.retain(|g| guards.contains(g));
            // Reached again without a choice on the way: the path always runs it.
            if link.conditional && !conditional {
                link.chain = chain;
                link.conditional = false;
            }
        }
        None => search.links.push(Link {
            needs,
            chain,
            majors,
            guards,
            conditional,
        }),
    }
}

/// How a call was reached: hops from the gated branch, whether through a choice on another
/// condition, and the gates on the way.
struct Reach {
    depth: usize,
    conditional: bool,
    guards: Vec<Guard>,
}

impl Reach {
    fn start() -> Reach {
        Reach {
            depth: 0,
            conditional: false,
            guards: Vec::new(),
        }
    }
}

fn rule_matches(rule: &LinkRule, gate: &Gate) -> bool {
    let dist_ok = rule
        .dist
        .as_deref()
        .is_none_or(|d| gate.dist.as_deref() == Some(d));
    let file_ok = rule
        .file
        .as_deref()
        .is_none_or(|pattern| glob_match(pattern, &gate.file));
    let function_ok = rule.function.as_deref().is_none_or(|f| {
        gate.function
            .as_deref()
            .is_some_and(|g| g == f || g.rsplit('.').next() == Some(f))
    });
    let text_ok = rule
        .gate_contains
        .as_deref()
        .is_none_or(|needle| gate.text.contains(needle));
    dist_ok && file_ok && function_ok && text_ok
}

#[cfg(test)]
mod tests {
    use super::imports_module;

    #[test]
    fn a_module_is_imported_by_any_of_the_import_forms() {
        let imports = |src: &str| imports_module(src.as_bytes(), "flashinfer.comm");
        assert!(imports("import flashinfer.comm as comm\n"));
        assert!(imports("def f():\n    import flashinfer.comm\n"));
        assert!(imports(
            "from flashinfer.comm.mnnvl import TorchDistBackend\n"
        ));
        assert!(imports(
            "from flashinfer.comm import (\n    allreduce_fusion,\n)\n"
        ));
        assert!(imports("from flashinfer import comm\n"));
        assert!(imports("from flashinfer import jit, comm\n"));
        // Another module, a longer name, a comment, the name in code: not an import of it.
        assert!(!imports("from flashinfer import jit\n"));
        assert!(!imports("import flashinfer.communicator\n"));
        assert!(!imports("# import flashinfer.comm\n"));
        assert!(!imports("layout = \"trtllm\"  # flashinfer.comm\n"));
        assert!(!imports("import flashinfer\n"));
    }
}
