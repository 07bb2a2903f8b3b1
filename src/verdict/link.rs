//! Gate → kernel links, best first: declared in `[[link]]` rules; followed in the code from the
//! gated branch through calls and imports inside the site (a few hops) to a JIT generator, a
//! `torch.ops.<lib>` op of a native library in the site, or a backend name a `[[backend]]`
//! rule knows; otherwise not linked, saying how far the search got.

use std::collections::HashSet;

use super::code::{Code, Facts, FileCache, Parsed, gated_branch};
use crate::gate::predicate::Form;
use crate::kernel::jit::JitIndex;
use crate::kernel::query::{Requirement, glob_match};
use crate::rules::{LinkRule, Rules};
use crate::scan::Gate;

/// Calls followed from a gated branch before giving up.
pub const MAX_HOPS: usize = 3;

/// One kernel the gated path needs, and how gatefix knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    pub needs: Requirement,
    pub chain: Vec<String>,
    /// Only at these majors (from the rule); `None`: at every target.
    pub majors: Option<Vec<u32>>,
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
}

pub struct Linker<'a> {
    pub rules: &'a Rules,
    pub code: &'a Code,
    pub jit: &'a JitIndex,
    /// Top-level folders of the site: `torch.ops.<lib>` links only when `<lib>/` is there.
    pub packages: HashSet<String>,
}

struct Search {
    links: Vec<Link>,
    visited: HashSet<String>,
    calls_seen: usize,
}

impl Linker<'_> {
    /// Links one gate; `parsed` is its module and `cache` what its file's gates share, read
    /// once for all of them.
    pub fn link(&self, gate: &Gate, parsed: Option<&Parsed>, cache: &mut FileCache) -> GateLink {
        let branch = parsed
            .filter(|_| gate.guards_branch)
            .and_then(|p| gated_branch(p, gate, cache));
        GateLink {
            guards_raise: branch.as_ref().is_some_and(|b| b.raises),
            outcome: self.outcome(gate, parsed, branch),
        }
    }

    fn outcome(&self, gate: &Gate, parsed: Option<&Parsed>, branch: Option<Facts>) -> LinkOutcome {
        let declared: Vec<Link> = self
            .rules
            .links
            .iter()
            .filter(|rule| rule_matches(rule, gate))
            .map(|rule| Link {
                needs: rule.needs.clone(),
                majors: rule.majors.clone(),
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
            return LinkOutcome::Linked(declared);
        }
        if gate.form == Form::JitArchList
            && let Some(id) = self.own_generator(gate)
        {
            return LinkOutcome::Linked(vec![Link {
                needs: Requirement::Jit(id),
                majors: None,
                chain: vec!["the gate is the JIT generator's own arch list".into()],
            }]);
        }
        self.follow_gate(gate, parsed, branch)
    }

    fn own_generator(&self, gate: &Gate) -> Option<String> {
        self.jit
            .generators
            .iter()
            .find(|g| g.file == gate.file && g.line == gate.line)
            .map(|g| g.id.clone())
    }

    fn follow_gate(
        &self,
        gate: &Gate,
        parsed: Option<&Parsed>,
        branch: Option<Facts>,
    ) -> LinkOutcome {
        let Some(facts) = branch else {
            return LinkOutcome::NotLinked(
                "the gate guards no branch gatefix reads (a flag, a returned value or an assertion); a [[link]] rule can declare its kernel"
                    .into(),
            );
        };
        let Some(parsed) = parsed else {
            return LinkOutcome::NotLinked(format!("{} could not be read back", gate.file));
        };
        let mut search = Search {
            links: Vec::new(),
            visited: HashSet::new(),
            calls_seen: 0,
        };
        let start = if facts.raises {
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
            0,
            &mut search,
        );
        if search.links.is_empty() {
            LinkOutcome::NotLinked(format!(
                "followed {} call(s) up to {MAX_HOPS} hops from the gated branch; reached no JIT generator, native op or known backend",
                search.calls_seen
            ))
        } else {
            LinkOutcome::Linked(search.links)
        }
    }

    fn follow(
        &self,
        parsed: &Parsed,
        facts: &Facts,
        chain: &[String],
        dist: Option<&str>,
        depth: usize,
        search: &mut Search,
    ) {
        for word in &facts.strings {
            for backend in
                self.rules.backends.iter().filter(|b| {
                    b.name == *word && b.dist.as_deref().is_none_or(|d| Some(d) == dist)
                })
            {
                let mut chain = chain.to_vec();
                chain.push(format!(
                    "chooses backend \"{word}\" (a [[backend]] in {})",
                    backend.source.display()
                ));
                push(search, backend.needs.clone(), backend.majors.clone(), chain);
            }
        }
        for call in &facts.calls {
            search.calls_seen += 1;
            if let Some(library) = self.torch_op_library(call) {
                let mut chain = chain.to_vec();
                chain.push(format!("calls native op {call}"));
                push(search, library, None, chain);
                continue;
            }
            let Some((module, function)) = self.resolve(parsed, call) else {
                continue;
            };
            let id = format!("{module}:{function}");
            let mut next_chain = chain.to_vec();
            next_chain.push(format!("calls {id}"));
            let is_generator = !self.jit.generators(&id).is_empty()
                || self.jit.fixed_arch.iter().any(|f| f.id == id);
            if is_generator {
                push(search, Requirement::Jit(id), None, next_chain);
                continue;
            }
            if depth + 1 >= MAX_HOPS || !search.visited.insert(id) {
                continue;
            }
            if let Some((callee, body)) = self.code.callee(&module, &function) {
                self.follow(&callee, &body, &next_chain, dist, depth + 1, search);
            }
        }
    }

    fn torch_op_library(&self, call: &str) -> Option<Requirement> {
        let lib = call.strip_prefix("torch.ops.")?.split('.').next()?;
        self.packages.contains(lib).then(|| Requirement::Library {
            dist: None,
            glob: format!("{lib}/**/*.so"),
        })
    }

    /// Where a call written in a module leads, as (module, function or Class.method).
    fn resolve(&self, parsed: &Parsed, call: &str) -> Option<(String, String)> {
        let parts: Vec<&str> = call.split('.').collect();
        if parsed.defs.contains_key(call) {
            return Some((parsed.module.clone(), call.to_string()));
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
            _ => None,
        }
    }
}

fn push(search: &mut Search, needs: Requirement, majors: Option<Vec<u32>>, chain: Vec<String>) {
    if !search
        .links
        .iter()
        .any(|l| l.needs == needs && l.majors == majors)
    {
        search.links.push(Link {
            needs,
            chain,
            majors,
        });
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
