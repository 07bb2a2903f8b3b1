//! Fixes synthesized from the audit: for a gate whose verdict at the target is `opportunity`
//! (or, closing traps, `trap`), an edit built from the gate's own syntax, checked by running
//! the real gate pipeline again on the edited text before it is offered.
//!
//! Forms:
//! - a membership or equality on majors, SMs or capabilities (`major in (9, 10)`,
//!   `cap == (10, 0)`): the target's member is added (closing: removed);
//! - a helper call, platform attribute, platform method or flag: the arch part of the gate is
//!   `or`-extended (closing: `and not`) with a predicate the package already defines whose
//!   resolved meaning is exactly the target's family or arch, with the import it needs;
//!   candidates are the gate's own spellings with the numbers changed to the target's
//!   (`is_sm100_supported()` -> `is_sm120_supported()`) and the rule-declared methods of the
//!   same object, each resolved in the module that defines it, never invented;
//! - anything else: no fix, and why.
//!
//! Every candidate is applied in memory and the whole site re-resolved (`scan_overlay_with`): the
//! fix is kept only if the edited gate now admits the target (closing: blocks it), its
//! admission at every known target outside the target's family is unchanged, and every other
//! gate of the site keeps its admission at every known target.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::str::FromStr;

use tree_sitter::Node;

use super::edit::{
    EditState, Replacement, apply_replacements, check_reparse, or_extend, plan_edit,
};
use super::model::{Action, Anchor, AnchorTarget, Edit, FixClass, Patch, SynthInfo};
use crate::arch::Arch;
use crate::gate::index::{ModuleIndex, module_name};
use crate::gate::ir::{Import, SharedModule};
use crate::gate::lower::lower_expression;
use crate::gate::predicate::{Admits, CudaVersion, DevVar, Pred, evaluate};
use crate::gate::resolve::{Locals, Resolver, Scope, Val, reset_budget};
use crate::gate::tokens::resolve_tokens;
use crate::rules::Rules;
use crate::scan::{Gate, LoweringMemo, ScanOptions, ScanResult, python_files, scan_overlay_with};
use crate::site::{Site, site_path};
use crate::syntax::ts::parse;

/// The targets gatefix knows: a fix may change admission only inside the target's family.
pub const KNOWN_TARGETS: &[(u32, u32)] = &[
    (7, 5),
    (8, 0),
    (8, 6),
    (8, 9),
    (9, 0),
    (10, 0),
    (10, 3),
    (11, 0),
    (12, 0),
    (12, 1),
];

/// Probes for "exactly the target's family or arch": the known targets and a later one, so
/// `sm >= 120` is not mistaken for the SM12x family.
const PROBES: &[(u32, u32)] = &[
    (7, 5),
    (8, 0),
    (8, 6),
    (8, 9),
    (9, 0),
    (10, 0),
    (10, 3),
    (11, 0),
    (12, 0),
    (12, 1),
    (13, 0),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Open an opportunity: the target becomes admitted.
    Open,
    /// Close a trap: the target becomes blocked.
    Close,
}

impl Mode {
    pub fn word(self) -> &'static str {
        match self {
            Mode::Open => "open",
            Mode::Close => "close",
        }
    }
}

/// One gate asked for, and what synthesis made of it.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub gate: Gate,
    pub mode: Mode,
    /// The patch, or why there is none.
    pub fix: Result<Patch, String>,
}

pub struct Input<'a> {
    pub site: &'a Site,
    pub rules: &'a Rules,
    pub target: Arch,
    pub cuda: Option<&'a CudaVersion>,
    /// The audit the gates come from (scanned with `SCAN_OPTIONS`).
    pub scan: &'a ScanResult,
    /// Lowerings of the unedited files, shared by the audit's scan and every re-resolution.
    pub memo: &'a LoweringMemo,
}

/// The scan options of the baseline and of every re-resolution: they must be the same.
pub const SCAN_OPTIONS: ScanOptions = ScanOptions {
    prefilter: true,
    chunking: true,
    kernel_sources: true,
    max_file_bytes: crate::scan::DEFAULT_MAX_FILE_BYTES,
};

/// Builds and checks a fix for each requested gate, with its verdict evidence.
///
/// Each gate's candidate edits are built first (no resolution). The first candidate of every
/// gate is then applied at once and the whole site re-resolved; what fails is blamed and
/// settled in further rounds (`Ctx::settle`), so the cost is a few re-resolutions rather than
/// one per candidate. Whatever is accepted is known to hold together: when no single clean
/// round saw all of it, a last joint re-resolution checks it and refuses every fix if it fails.
pub fn synthesize(input: &Input, wanted: &[(Gate, Mode, Vec<String>)]) -> Vec<Outcome> {
    let files = python_files(&input.site.root, &mut Vec::new());
    let tokens = resolve_tokens(&input.rules.resolve_names());
    let index = ModuleIndex::new(&input.site.root, &files, tokens.clone());
    let resolver = Resolver::new(&index, input.rules, tokens);
    let ctx = Ctx {
        input,
        index: &index,
        resolver: &resolver,
        baseline: profiles(&input.scan.gates, input.cuda),
    };
    let prepared: Vec<Result<Prepared, String>> = wanted
        .iter()
        .map(|(gate, mode, _)| ctx.prepare(gate, *mode))
        .collect();
    // In the scan's order, so that two edited gates of one function meet their new gates in
    // the order `check_round` matches them.
    let in_order = |picks: &mut Vec<Pick>| {
        picks.sort_by_key(|&(i, _)| {
            let gate = &wanted[i].0;
            (gate.file.clone(), gate.line, gate.column)
        })
    };
    let first: Vec<Pick> = prepared
        .iter()
        .enumerate()
        .filter(|(_, p)| p.as_ref().is_ok_and(|p| !p.candidates.is_empty()))
        .map(|(i, _)| (i, 0))
        .collect();
    let settled = ctx.settle(wanted, &prepared, first, &in_order);
    let mut accepted = settled.accepted;
    let mut refusals = settled.refusals;
    let mut refused_together = None;
    if settled.clean_rounds > 1 && accepted.len() > 1 {
        let mut chosen: Vec<Pick> = accepted.iter().map(|(&i, &(c, _))| (i, c)).collect();
        in_order(&mut chosen);
        match ctx.joint(wanted, &prepared, &chosen) {
            (kept, round) if kept.len() == chosen.len() && round.is_clean() => {
                for ((i, c), after) in kept.into_iter().zip(round.edited) {
                    accepted.insert(i, (c, after.expect("a clean round")));
                }
            }
            (kept, _) if kept.len() < chosen.len() => {
                refused_together =
                    Some("an edit no longer applies after the others of its file".to_string())
            }
            (_, round) => refused_together = Some(round.first_failure()),
        }
    }
    wanted
        .iter()
        .enumerate()
        .map(|(i, (gate, mode, evidence))| {
            let fix = match (&prepared[i], accepted.remove(&i), &refused_together) {
                (Err(why), _, _) => Err(why.clone()),
                (Ok(_), Some(_), Some(why)) => {
                    Err(format!("refused with the other fixes together: {why}"))
                }
                (Ok(p), Some((c, after)), None) => Ok(ctx.patch(
                    gate,
                    *mode,
                    &p.dist,
                    &p.version,
                    p.candidates[c].clone(),
                    after,
                    evidence,
                )),
                (Ok(p), None, _) => {
                    let mut all = p.refusals.clone();
                    all.extend(refusals.remove(&i).unwrap_or_default());
                    Err(format!(
                        "every candidate edit was refused: {}",
                        all.join("; ")
                    ))
                }
            };
            Outcome {
                gate: gate.clone(),
                mode: *mode,
                fix,
            }
        })
        .collect()
}

struct Ctx<'a> {
    input: &'a Input<'a>,
    index: &'a ModuleIndex,
    resolver: &'a Resolver<'a>,
    /// Admission of every baseline gate at every known target, by id.
    baseline: HashMap<String, Vec<Admits>>,
}

/// A gate's fix before any re-resolution: its file's text and the candidates that apply to it.
struct Prepared {
    dist: String,
    version: String,
    src: Vec<u8>,
    candidates: Vec<Candidate>,
    /// Why candidates were dropped (they did not apply to the text).
    refusals: Vec<String>,
}

/// A gate (its index in the request) and one of its candidates (index).
type Pick = (usize, usize);

/// Re-resolutions one `apply` may spend settling its fixes; past them the rest is refused.
const MAX_ROUNDS: usize = 200;

/// Picks re-resolved together in one round of `Ctx::settle`.
struct Group {
    picks: Vec<Pick>,
    /// Whether independent queued picks may join it. Not for a pick checked alone because it
    /// was doubtful twice, nor for the halves of a group whose failure no file explained:
    /// merged, they would make the same round again.
    mergeable: bool,
}

impl Group {
    fn mergeable(picks: Vec<Pick>) -> Group {
        Group {
            picks,
            mergeable: true,
        }
    }

    fn alone(picks: Vec<Pick>) -> Group {
        Group {
            picks,
            mergeable: false,
        }
    }
}

/// What `Ctx::settle` decided.
struct Settled {
    /// Gate index -> (accepted candidate, the edited gate's new predicate).
    accepted: HashMap<usize, (usize, Pred)>,
    /// Gate index -> why each refused candidate was.
    refusals: HashMap<usize, Vec<String>>,
    /// Rounds that accepted their group: past one, the accepted fixes were never re-resolved
    /// all together.
    clean_rounds: usize,
}

/// `from MODULE import NAME`.
type FromImport = (String, String);

/// How a candidate predicate matches the target, best first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Exactness {
    Family,
    Arch,
}

/// An edit worth checking: the edits of one file and words for the plan.
#[derive(Clone)]
struct Candidate {
    edits: Vec<Edit>,
    how: String,
}

impl Ctx<'_> {
    /// The gate's candidate edits, or why it has none worth checking.
    fn prepare(&self, gate: &Gate, mode: Mode) -> Result<Prepared, String> {
        let (Some(dist), Some(version)) = (&gate.dist, &gate.dist_version) else {
            return Err("the gate's file belongs to no installed distribution".into());
        };
        // A table's new row is data gatefix cannot invent; a curated patch states it.
        if gate.form == crate::gate::predicate::Form::ArchTable {
            return Err(no_fix_reason(gate));
        }
        let path = site_path(&self.input.site.root, &gate.file)?;
        let src = std::fs::read(&path).map_err(|e| format!("{}: {e}", gate.file))?;
        let tree = parse(&src).ok_or("the parser gave up")?;
        let node = gate_node(tree.root_node(), &src, gate).ok_or_else(|| {
            format!(
                "the gate's text is not found at {}:{}",
                gate.file, gate.line
            )
        })?;
        let scope = self.scope(gate);
        let all = self.candidates(node, &src, gate, mode, scope.as_ref())?;
        if all.is_empty() {
            return Err(no_fix_reason(gate));
        }
        let mut candidates = Vec::new();
        let mut refusals = Vec::new();
        for candidate in all {
            match edited_text(&src, &candidate.edits) {
                Ok(_) => candidates.push(candidate),
                Err(why) => refusals.push(format!("{}: {why}", candidate.how)),
            }
        }
        Ok(Prepared {
            dist: dist.clone(),
            version: version.clone(),
            src,
            candidates,
            refusals,
        })
    }

    /// Re-resolves groups of picks (gate index, candidate index) together until every gate has
    /// an accepted candidate or none is left. A clean round accepts its whole group. A failure
    /// is blamed on the fixes of the file where it shows (an edited gate, a gate that moved),
    /// else on the fixes of the files it imports from or that import it; a pick blamed beyond
    /// doubt (alone in its group, or nothing else of the group in its file or beside it) gives
    /// way to its gate's next candidate; the rest of the group and those next candidates make
    /// the next group. Doubtful picks are checked again in batches of picks that share no file
    /// and are no neighbours (`independent_batches`), where whatever shows in a file has one
    /// suspect; a pick doubtful a second time is checked alone. A failure no file explains
    /// splits its group in halves.
    fn settle(
        &self,
        wanted: &[(Gate, Mode, Vec<String>)],
        prepared: &[Result<Prepared, String>],
        first: Vec<Pick>,
        in_order: &dyn Fn(&mut Vec<Pick>),
    ) -> Settled {
        let mut settled = Settled {
            accepted: HashMap::new(),
            refusals: HashMap::new(),
            clean_rounds: 0,
        };
        let timings = std::env::var_os("GATEFIX_TIMINGS").is_some();
        let candidates = |i: usize| prepared[i].as_ref().map_or(0, |p| p.candidates.len());
        let mut groups: std::collections::VecDeque<Group> = Default::default();
        groups.push_back(Group::mergeable(first));
        // Picks that were doubtful once and went to a batch: doubtful again, they go alone, so
        // every pick gets a definite answer.
        let mut batched: HashSet<Pick> = HashSet::new();
        let mut rounds = 0;
        while let Some(popped) = groups.pop_front() {
            let mut group = popped.picks;
            if group.is_empty() {
                continue;
            }
            if rounds == MAX_ROUNDS {
                // A bound, so that no site can keep `apply` re-resolving for hours: what is
                // left unsettled is refused, never accepted unchecked.
                for (i, c) in group
                    .into_iter()
                    .chain(groups.drain(..).flat_map(|g| g.picks))
                {
                    let how = &prepared[i].as_ref().expect("prepared").candidates[c].how;
                    settled.refusals.entry(i).or_default().push(format!(
                        "{how}: not settled within {MAX_ROUNDS} re-resolutions"
                    ));
                }
                break;
            }
            rounds += 1;
            // Queued picks that edit no file of this group's and none beside one ride along:
            // what shows in their files is theirs alone, so one re-resolution answers for
            // them too.
            if popped.mergeable {
                let mut rest = std::collections::VecDeque::new();
                for other in groups.drain(..) {
                    if other.mergeable && self.independent(wanted, &group, &other.picks) {
                        group.extend(other.picks);
                    } else {
                        rest.push_back(other);
                    }
                }
                groups = rest;
            }
            in_order(&mut group);
            let (kept, round) = self.joint(wanted, prepared, &group);
            if timings {
                eprintln!(
                    "synth: round of {} ({} combined): {} edited refused, {} other gates moved",
                    group.len(),
                    kept.len(),
                    round.edited.iter().filter(|r| r.is_err()).count(),
                    round.moved.len()
                );
            }
            // A pick that does not combine with those before it in its file goes alone.
            for pick in group.iter().filter(|pick| !kept.contains(pick)) {
                groups.push_back(Group::mergeable(vec![*pick]));
            }
            if kept.is_empty() {
                continue;
            }
            if round.is_clean() {
                settled.clean_rounds += 1;
                for ((i, c), after) in kept.into_iter().zip(round.edited) {
                    settled
                        .accepted
                        .insert(i, (c, after.expect("a clean round")));
                }
                continue;
            }
            // Blame: (pick, why, beyond doubt).
            let mut blamed: Vec<(Pick, String, bool)> = Vec::new();
            let beside = |pick: Pick, file: &str| {
                kept.iter().any(|&other| {
                    other != pick
                        && (wanted[other.0].0.file == file
                            || self.neighbours(&wanted[other.0].0.file, file))
                })
            };
            for (&pick, after) in kept.iter().zip(&round.edited) {
                if let Err(why) = after {
                    let sure = kept.len() == 1 || !beside(pick, &wanted[pick.0].0.file);
                    blamed.push((pick, why.clone(), sure));
                }
            }
            let mut unexplained = false;
            for (file, why) in round.moved.iter().zip(&round.failures) {
                let mut suspects: Vec<Pick> = kept
                    .iter()
                    .copied()
                    .filter(|&(i, _)| wanted[i].0.file == *file)
                    .collect();
                if suspects.is_empty() {
                    suspects = kept
                        .iter()
                        .copied()
                        .filter(|&(i, _)| self.neighbours(&wanted[i].0.file, file))
                        .collect();
                }
                // A pick re-resolved alone is the cause of whatever moves (else a group of one
                // would split into itself forever).
                if kept.len() == 1 {
                    suspects = kept.clone();
                }
                unexplained |= suspects.is_empty();
                let sure = suspects.len() == 1 && (kept.len() == 1 || !beside(suspects[0], file));
                for pick in suspects {
                    if !blamed.iter().any(|(p, _, _)| *p == pick) {
                        blamed.push((pick, why.clone(), sure));
                    }
                }
            }
            if blamed.is_empty() {
                debug_assert!(unexplained);
                let (left, right) = kept.split_at(kept.len() / 2);
                // Halves are never merged again: together they are the group that failed.
                groups.push_back(Group::alone(left.to_vec()));
                groups.push_back(Group::alone(right.to_vec()));
                continue;
            }
            // The next group: the rest and the next candidates of the picks refused; a doubtful
            // pick is checked alone (kept with the others, the same doubt would come back).
            let mut again: Vec<Pick> = kept
                .iter()
                .copied()
                .filter(|pick| !blamed.iter().any(|(p, _, _)| p == pick))
                .collect();
            let mut doubtful: Vec<Pick> = Vec::new();
            for (pick @ (i, c), why, sure) in &blamed {
                if *sure {
                    let how = &prepared[*i].as_ref().expect("prepared").candidates[*c].how;
                    settled
                        .refusals
                        .entry(*i)
                        .or_default()
                        .push(format!("{how}: {why}"));
                    if c + 1 < candidates(*i) {
                        again.push((*i, c + 1));
                    }
                } else if batched.contains(pick) {
                    groups.push_back(Group::alone(vec![*pick]));
                } else {
                    doubtful.push(*pick);
                }
            }
            for batch in self.independent_batches(wanted, &doubtful) {
                batched.extend(batch.iter().copied());
                groups.push_back(Group::mergeable(batch));
            }
            if !again.is_empty() {
                groups.push_back(Group::mergeable(again));
            }
        }
        settled
    }

    /// Whether no pick of `b` edits a file of `a`'s picks or a neighbour of one.
    fn independent(&self, wanted: &[(Gate, Mode, Vec<String>)], a: &[Pick], b: &[Pick]) -> bool {
        a.iter().all(|&(x, _)| {
            let x = &wanted[x].0.file;
            b.iter().all(|&(y, _)| {
                let y = &wanted[y].0.file;
                x != y && !self.neighbours(x, y)
            })
        })
    }

    /// Splits `picks` into batches (greedily, in order) in which no two picks edit the same
    /// file or files that are neighbours: re-resolved together, an edited gate that fails or a
    /// gate that moves in an edited file has a single suspect, as if each pick were alone,
    /// and one re-resolution answers for the whole batch.
    fn independent_batches(
        &self,
        wanted: &[(Gate, Mode, Vec<String>)],
        picks: &[Pick],
    ) -> Vec<Vec<Pick>> {
        let mut batches: Vec<Vec<Pick>> = Vec::new();
        for &pick in picks {
            match batches
                .iter_mut()
                .find(|batch| self.independent(wanted, batch, &[pick]))
            {
                Some(batch) => batch.push(pick),
                None => batches.push(vec![pick]),
            }
        }
        batches
    }

    /// Whether one of the two files imports from the other at module level.
    fn neighbours(&self, a: &str, b: &str) -> bool {
        let module = |file: &str| module_name(Path::new(file)).map(|(m, _)| m);
        let (Some(a), Some(b)) = (module(a), module(b)) else {
            return false;
        };
        let imports_from = |importer: &str, imported: &str| {
            self.index.get(importer).is_some_and(|ir| {
                ir.imports.values().any(|import| {
                    let from = match import {
                        Import::Module(m) | Import::Member(m, _) => m,
                    };
                    from == imported
                        || matches!(import, Import::Member(m, name)
                            if format!("{m}.{name}") == imported)
                })
            })
        };
        imports_from(&a, &b) || imports_from(&b, &a)
    }

    /// Applies the chosen candidates (gate index, candidate index) in memory, file by file
    /// in order, and re-resolves the whole site once. Returns the picks that combined (a later
    /// edit of a file may no longer apply after an earlier one) with the round's findings.
    fn joint(
        &self,
        wanted: &[(Gate, Mode, Vec<String>)],
        prepared: &[Result<Prepared, String>],
        chosen: &[Pick],
    ) -> (Vec<Pick>, Round) {
        let mut texts: HashMap<String, Vec<u8>> = HashMap::new();
        let mut kept = Vec::new();
        for &(i, c) in chosen {
            let file = &wanted[i].0.file;
            let p = prepared[i]
                .as_ref()
                .expect("only prepared gates are picked");
            let current = texts.get(file).unwrap_or(&p.src);
            if let Ok(new) = edited_text(current, &p.candidates[c].edits) {
                texts.insert(file.clone(), new);
                kept.push((i, c));
            }
        }
        let edited: Vec<(&Gate, Mode)> = kept
            .iter()
            .map(|&(i, _)| (&wanted[i].0, wanted[i].1))
            .collect();
        let scan = scan_overlay_with(
            self.input.site,
            self.input.rules,
            SCAN_OPTIONS,
            &texts,
            Some(self.input.memo),
        );
        let round = check_round(&self.baseline, &scan, &edited, self.input);
        (kept, round)
    }

    #[allow(clippy::too_many_arguments)]
    fn patch(
        &self,
        gate: &Gate,
        mode: Mode,
        dist: &str,
        version: &str,
        candidate: Candidate,
        after: Pred,
        evidence: &[String],
    ) -> Patch {
        let target = self.input.target;
        let short = &gate.id[..gate.id.len().min(12)];
        let verb = match mode {
            Mode::Open => "Open",
            Mode::Close => "Close",
        };
        let versions_text = format!("=={version}");
        Patch {
            id: format!("gate-{short}-{}-{target}", mode.word()),
            summary: format!(
                "{verb} the {} gate at {}:{} for {target} ({})",
                gate.form.name(),
                gate.file,
                gate.line,
                candidate.how
            ),
            dist: dist.to_string(),
            versions: pep440_rs::VersionSpecifiers::from_str(&versions_text)
                .unwrap_or_else(|_| pep440_rs::VersionSpecifiers::empty()),
            versions_text,
            targets: vec![target.plain()],
            edits: candidate.edits,
            requires: Vec::new(),
            source: PathBuf::from("<synthesized>"),
            class: FixClass::Unsafe,
            synth: Some(SynthInfo {
                gate_id: gate.id.clone(),
                mode: mode.word().to_string(),
                before: gate.predicate.to_string(),
                after: after.to_string(),
                evidence: evidence.to_vec(),
            }),
        }
    }

    /// Where the gate's names are looked up: its function's locals before it, or the module.
    fn scope(&self, gate: &Gate) -> Option<(SharedModule, Locals<'static>)> {
        let (module, _) = module_name(Path::new(&gate.file))?;
        let shared = self.index.get(&module)?;
        let locals = shared
            .sites
            .iter()
            .find(|s| s.start == (gate.line, gate.column))
            .and_then(|s| {
                s.function.map(|function| Locals::Site {
                    function,
                    byte: s.byte,
                })
            })
            .unwrap_or(Locals::None);
        Some((shared, locals))
    }

    fn resolve_in(&self, text: &str, module: &SharedModule, locals: Locals) -> Option<Pred> {
        let expr = lower_expression(text).ok()?;
        reset_budget();
        let scope = Scope { module, locals };
        Some(self.resolver.condition(&expr, scope, 0))
    }

    fn value_in(&self, text: &str, module: &SharedModule, locals: Locals) -> Option<Val> {
        let expr = lower_expression(text).ok()?;
        reset_budget();
        Some(self.resolver.eval(&expr, Scope { module, locals }, 0))
    }

    /// Every edit worth a re-resolution, best first.
    fn candidates(
        &self,
        node: Node,
        src: &[u8],
        gate: &Gate,
        mode: Mode,
        scope: Option<&(SharedModule, Locals<'static>)>,
    ) -> Result<Vec<Candidate>, String> {
        let Some((module, locals)) = scope else {
            return Err(format!("{} is not a module of the site", gate.file));
        };
        let mut out = Vec::new();
        let mut leaves = Vec::new();
        self.arch_parts(node, src, module, *locals, &mut leaves);
        for part in leaves {
            if part.kind() == "comparison_operator" {
                if let Some(c) = self.membership(part, src, gate, mode, module, *locals) {
                    out.push(c);
                }
                continue;
            }
            let group = or_group(part, node);
            let group_text = node_text(group, src);
            for (alternative, import) in self.alternatives(part, src, module, *locals) {
                let (group_action, replacements) = match mode {
                    Mode::Open => (
                        Action::OrExtend(alternative.clone()),
                        or_extend(group, &alternative),
                    ),
                    Mode::Close => {
                        let text = format!("({group_text} and not {alternative})");
                        (
                            Action::Replace(text.clone()),
                            vec![Replacement {
                                start: group.start_byte(),
                                end: group.end_byte(),
                                text,
                            }],
                        )
                    }
                };
                // Anchored on the arch part itself; where that text occurs more than once in
                // the function, on the whole gate, rewritten.
                let mut anchors = vec![(group_text.clone(), group_action)];
                if group.id() != node.id()
                    && let Some(rewritten) = rewrite_within(node, src, &replacements)
                {
                    anchors.push((node_text(node, src), Action::Replace(rewritten)));
                }
                for (anchor_text, action) in anchors {
                    let mut edits = vec![Edit {
                        file: gate.file.clone(),
                        anchor: Some(Anchor {
                            function: gate.function.clone(),
                            target: AnchorTarget::Gate(anchor_text),
                        }),
                        action,
                    }];
                    if let Some((module, name)) = &import {
                        edits.push(Edit {
                            file: gate.file.clone(),
                            anchor: None,
                            action: Action::EnsureImport {
                                module: module.clone(),
                                name: name.clone(),
                            },
                        });
                    }
                    let how = match mode {
                        Mode::Open => format!("`{group_text}` or-extended with `{alternative}`"),
                        Mode::Close => {
                            format!("`{group_text}` narrowed with `and not {alternative}`")
                        }
                    };
                    if !out.iter().any(|c: &Candidate| c.edits == edits) {
                        out.push(Candidate { edits, how });
                    }
                }
            }
        }
        Ok(out)
    }

    /// The arch-dependent parts of the gate: comparisons, and calls, attributes or names that
    /// are not split further (boolean operators, `not` and parentheses are looked into).
    fn arch_parts<'t>(
        &self,
        node: Node<'t>,
        src: &[u8],
        module: &SharedModule,
        locals: Locals,
        out: &mut Vec<Node<'t>>,
    ) {
        let arch = |n: Node| {
            self.resolve_in(&node_text(n, src), module, locals)
                .is_some_and(|p| p.is_arch_dependent())
        };
        match node.kind() {
            "boolean_operator" | "not_operator" | "parenthesized_expression" => {
                let mut cursor = node.walk();
                let children: Vec<Node> = node.named_children(&mut cursor).collect();
                for child in children {
                    self.arch_parts(child, src, module, locals, out);
                }
            }
            "comparison_operator" | "call" | "attribute" | "identifier" if arch(node) => {
                out.push(node)
            }
            _ => {}
        }
    }

    /// `x in (9, 10)` / `x == 10`: the target's member added (or removed, closing).
    fn membership(
        &self,
        node: Node,
        src: &[u8],
        gate: &Gate,
        mode: Mode,
        module: &SharedModule,
        locals: Locals,
    ) -> Option<Candidate> {
        let mut cursor = node.walk();
        let operands: Vec<Node> = node.named_children(&mut cursor).collect();
        let [left, right] = operands.as_slice() else {
            return None;
        };
        let operator: String = {
            let mut cursor = node.walk();
            node.children(&mut cursor)
                .filter(|c| !c.is_named())
                .map(|c| node_text(c, src))
                .collect::<Vec<_>>()
                .join(" ")
        };
        let target = self.input.target;
        let var = match self.value_in(&node_text(*left, src), module, locals)? {
            Val::Dev(var) => var,
            Val::DevObj => DevVar::Cap,
            _ => return None,
        };
        let member = match var {
            DevVar::Major => target.major.to_string(),
            DevVar::Sm => target.sm().to_string(),
            DevVar::Cap => format!("({}, {})", target.major, target.minor),
            DevVar::Minor => return None,
        };
        let left_text = node_text(*left, src);
        let right_text = node_text(*right, src);
        let replaced = match (mode, operator.as_str(), right.kind()) {
            (Mode::Open, "in", "tuple" | "list" | "set") => {
                let members = literal_members(*right, src);
                let close = &right_text[right_text.len() - 1..];
                let open = &right_text[..1];
                let mut all = members.clone();
                all.push(member.clone());
                format!(
                    "{left_text} in {open}{}{close}",
                    join_literal(&all, right.kind())
                )
            }
            (Mode::Open, "==", "integer" | "tuple") => {
                format!("{left_text} in ({right_text}, {member})")
            }
            (Mode::Close, "in", "tuple" | "list" | "set") => {
                let members = literal_members(*right, src);
                let want = collapse(&member);
                let kept: Vec<String> = members
                    .iter()
                    .filter(|m| collapse(m) != want)
                    .cloned()
                    .collect();
                if kept.len() == members.len() {
                    return None;
                }
                let close = &right_text[right_text.len() - 1..];
                let open = &right_text[..1];
                format!(
                    "{left_text} in {open}{}{close}",
                    join_literal(&kept, right.kind())
                )
            }
            _ => return None,
        };
        let how = match mode {
            Mode::Open => format!("member {member} added"),
            Mode::Close => format!("member {member} removed"),
        };
        Some(Candidate {
            edits: vec![Edit {
                file: gate.file.clone(),
                anchor: Some(Anchor {
                    function: gate.function.clone(),
                    target: AnchorTarget::Gate(node_text(node, src)),
                }),
                action: Action::Replace(replaced),
            }],
            how,
        })
    }

    /// Predicates the package defines whose meaning is exactly the target's family or arch,
    /// spelled like the gate's part, with the import each needs: (text, from-import).
    fn alternatives(
        &self,
        part: Node,
        src: &[u8],
        module: &SharedModule,
        locals: Locals,
    ) -> Vec<(String, Option<(String, String)>)> {
        let mut texts = Vec::new();
        let text = node_text(part, src);
        texts.extend(renumbered(&text, self.input.target));
        // A method call on an object: the rule-declared methods of that object.
        if part.kind() == "call"
            && let Some(function) = part.child_by_field_name("function")
            && function.kind() == "attribute"
            && let Some(object) = function.child_by_field_name("object")
        {
            let object = node_text(object, src);
            let mut names: Vec<&String> = self.input.rules.methods.keys().map(|(_, n)| n).collect();
            names.sort();
            names.dedup();
            for name in names {
                texts.push(format!("{object}.{name}({})", self.input.target.sm()));
            }
        }
        // A helper call: the other `is_*`/`has_*` helpers of the module it is imported from.
        if part.kind() == "call"
            && let Some(function) = part.child_by_field_name("function")
            && function.kind() == "identifier"
            && let Some(Import::Member(from, _)) = module.imports.get(&node_text(function, src))
            && let Some(defining) = self.index.get(from)
        {
            let mut names: Vec<&str> = defining
                .functions
                .iter()
                .map(|f| f.qualname.as_str())
                .filter(|n| !n.contains('.') && (n.starts_with("is_") || n.starts_with("has_")))
                .collect();
            names.sort();
            for name in names {
                texts.push(format!("{name}()"));
            }
        }
        // A flag: the spellings of its definition's parts.
        if part.kind() == "identifier"
            && let Some(definition) = module_assignment(part, src, &text)
        {
            let mut inner = Vec::new();
            let tree_root = definition;
            self.arch_parts(tree_root, src, module, Locals::None, &mut inner);
            for leaf in inner {
                texts.extend(renumbered(&node_text(leaf, src), self.input.target));
            }
        }
        let mut out = Vec::new();
        let mut seen = Vec::new();
        for candidate in texts {
            if seen.contains(&candidate) || candidate == text {
                continue;
            }
            seen.push(candidate.clone());
            if let Some(found) = self.defined(&candidate, &text, module, locals) {
                out.push(found);
            }
        }
        // The family first: JIT lists and cubin tables go by major, so a kernel for the target
        // is one for its family, and a missing one is missing for all of it.
        out.sort_by_key(|(_, _, exactness)| *exactness);
        out.into_iter()
            .map(|(text, import, _)| (text, import))
            .collect()
    }

    /// Whether `candidate` resolves, where it would be written or where its name comes from,
    /// to exactly the target's family or arch; and the import it needs.
    fn defined(
        &self,
        candidate: &str,
        original: &str,
        module: &SharedModule,
        locals: Locals,
    ) -> Option<(String, Option<FromImport>, Exactness)> {
        let root = leading_name(candidate)?;
        let bound = module.imports.contains_key(root)
            || module.assigns.contains_key(root)
            || module.function_index.contains_key(root)
            || module.classes.contains_key(root);
        if bound {
            let pred = self.resolve_in(candidate, module, locals)?;
            return self
                .exact(&pred)
                .map(|exactness| (candidate.to_string(), None, exactness));
        }
        // Not bound here: look in the module the original spelling's name is imported from,
        // or (a module-level flag) the module its definition's names come from.
        let original_root = leading_name(original)?;
        let from = match module.imports.get(original_root) {
            Some(Import::Member(from, _)) => from.clone(),
            _ => module.imports.values().find_map(|import| match import {
                Import::Member(from, name)
                    if self
                        .resolver
                        .global(from, root, 0)
                        .is_some_and(|v| !matches!(v, Val::Unknown(_)))
                        && name != root =>
                {
                    Some(from.clone())
                }
                _ => None,
            })?,
        };
        let defining = self.index.get(&from)?;
        self.resolver.global(&from, root, 0)?;
        let pred = self.resolve_in(candidate, &defining, Locals::None)?;
        self.exact(&pred).map(|exactness| {
            (
                candidate.to_string(),
                Some((from, root.to_string())),
                exactness,
            )
        })
    }

    /// Exactly the target's family (same major) or exactly the target, at every probe.
    fn exact(&self, pred: &Pred) -> Option<Exactness> {
        let target = self.input.target;
        let answers: Vec<Admits> = PROBES
            .iter()
            .map(|&(major, minor)| evaluate(pred, Arch::new(major, minor), self.input.cuda))
            .collect();
        let family = PROBES.iter().zip(&answers).all(|(&(major, _), a)| {
            *a == if major == target.major {
                Admits::Yes
            } else {
                Admits::No
            }
        });
        let arch = PROBES.iter().zip(&answers).all(|(&(major, minor), a)| {
            *a == if (major, minor) == (target.major, target.minor) {
                Admits::Yes
            } else {
                Admits::No
            }
        });
        if family {
            Some(Exactness::Family)
        } else if arch {
            Some(Exactness::Arch)
        } else {
            None
        }
    }
}

/// The new text of a file after a candidate's edits (which all concern that file).
pub fn edited_text(src: &[u8], edits: &[Edit]) -> Result<Vec<u8>, String> {
    let tree = parse(src).ok_or("the parser gave up")?;
    let mut replacements = Vec::new();
    for edit in edits {
        match plan_edit(src, &tree, edit) {
            EditState::Ready {
                replacements: r, ..
            } => replacements.extend(r),
            EditState::Applied { .. } => {}
            EditState::NoMatch(why) => return Err(why),
        }
    }
    let new = apply_replacements(src, &replacements)?;
    check_reparse(&tree, &new)?;
    Ok(new)
}

/// Admission at every known target of every gate, by id.
pub fn profiles(gates: &[Gate], cuda: Option<&CudaVersion>) -> HashMap<String, Vec<Admits>> {
    gates
        .iter()
        .map(|g| (g.id.clone(), profile(&g.predicate, cuda)))
        .collect()
}

fn profile(pred: &Pred, cuda: Option<&CudaVersion>) -> Vec<Admits> {
    KNOWN_TARGETS
        .iter()
        .map(|&(major, minor)| evaluate(pred, Arch::new(major, minor), cuda))
        .collect()
}

/// What one re-resolution found: per edited gate its new predicate or why it is refused, and
/// the other gates that moved (by file, with why).
struct Round {
    edited: Vec<Result<Pred, String>>,
    /// Files holding a gate that changed, vanished or appeared.
    moved: Vec<String>,
    /// Why, for each of `moved`.
    failures: Vec<String>,
}

impl Round {
    fn is_clean(&self) -> bool {
        self.moved.is_empty() && self.edited.iter().all(Result::is_ok)
    }

    fn first_failure(&self) -> String {
        self.failures
            .first()
            .cloned()
            .or_else(|| self.edited.iter().find_map(|r| r.clone().err()))
            .unwrap_or_default()
    }
}

/// Checks a re-resolved site against the baseline: each edited gate (matched in its file and
/// function among the gates whose id is new) admits the target (closing: blocks it) and keeps
/// its admission outside the target's family; every other gate is unchanged at every known
/// target. Returns the edited gates' new predicates, in the order given.
pub fn verify(
    baseline: &HashMap<String, Vec<Admits>>,
    scan: &ScanResult,
    edited: &[(&Gate, Mode)],
    input: &Input,
) -> Result<Vec<Pred>, String> {
    let round = check_round(baseline, scan, edited, input);
    if let Some(why) = round.failures.into_iter().next() {
        return Err(why);
    }
    round.edited.into_iter().collect()
}

/// `verify`, with every finding kept so that a failure can be blamed on the fixes that cause it.
fn check_round(
    baseline: &HashMap<String, Vec<Admits>>,
    scan: &ScanResult,
    edited: &[(&Gate, Mode)],
    input: &Input,
) -> Round {
    let mut round = Round {
        edited: Vec::new(),
        moved: Vec::new(),
        failures: Vec::new(),
    };
    let edited_ids: Vec<&str> = edited.iter().map(|(g, _)| g.id.as_str()).collect();
    let new_by_id: HashMap<&str, &Gate> = scan.gates.iter().map(|g| (g.id.as_str(), g)).collect();
    for old in &input.scan.gates {
        if edited_ids.contains(&old.id.as_str()) {
            continue;
        }
        let why = match new_by_id.get(old.id.as_str()) {
            None => format!(
                "the gate at {}:{} (`{}`) would no longer be found",
                old.file,
                old.line,
                short_text(&old.text)
            ),
            Some(new) if profile(&new.predicate, input.cuda) != baseline[&old.id] => format!(
                "the gate at {}:{} (`{}`) would change: {} -> {}",
                old.file,
                old.line,
                short_text(&old.text),
                old.predicate,
                new.predicate
            ),
            Some(_) => continue,
        };
        round.moved.push(old.file.clone());
        round.failures.push(why);
    }
    let mut fresh: Vec<&Gate> = scan
        .gates
        .iter()
        .filter(|g| !baseline.contains_key(&g.id))
        .collect();
    for (old, mode) in edited {
        round
            .edited
            .push(edited_gate(baseline, &mut fresh, old, *mode, input));
    }
    for extra in fresh {
        round.moved.push(extra.file.clone());
        round.failures.push(format!(
            "the edit would add a gate at {}:{} (`{}`)",
            extra.file,
            extra.line,
            short_text(&extra.text)
        ));
    }
    round
}

/// The edited gate's new predicate, taken from `fresh` (the gates with new ids), if it does
/// what the fix should at every known target.
fn edited_gate(
    baseline: &HashMap<String, Vec<Admits>>,
    fresh: &mut Vec<&Gate>,
    old: &Gate,
    mode: Mode,
    input: &Input,
) -> Result<Pred, String> {
    let target = input.target;
    // A gate whose branch raises protects the code after it: its verdict reads the gate
    // inverted, and so must the check. The verdict says the target is blocked (to open) or
    // admitted (to close); a raw predicate saying the opposite is such a gate.
    let raw = evaluate(&old.predicate, target, input.cuda);
    let inverted = match mode {
        Mode::Open => raw == Admits::Yes,
        Mode::Close => raw == Admits::No,
    };
    let position = fresh
        .iter()
        .position(|g| g.file == old.file && g.function == old.function)
        .ok_or_else(|| {
            format!(
                "the edited gate at {}:{} is no longer a gate",
                old.file, old.line
            )
        })?;
    let new = fresh.remove(position);
    let before = &baseline[&old.id];
    let after = profile(&new.predicate, input.cuda);
    for (i, &(major, minor)) in KNOWN_TARGETS.iter().enumerate() {
        let arch = Arch::new(major, minor);
        let want = if (major, minor) == (target.major, target.minor) {
            Some(match (mode, inverted) {
                (Mode::Open, false) | (Mode::Close, true) => Admits::Yes,
                (Mode::Open, true) | (Mode::Close, false) => Admits::No,
            })
        } else if major == target.major {
            None // the target's family may move with it
        } else {
            Some(before[i].clone())
        };
        if let Some(want) = want
            && after[i] != want
        {
            return Err(format!(
                "the edited gate would hold at {arch}: {} (wanted {}); new predicate {}",
                after[i].word(),
                want.word(),
                new.predicate
            ));
        }
    }
    Ok(new.predicate.clone())
}

fn short_text(text: &str) -> String {
    let flat = crate::gate::predicate::collapse_whitespace(text);
    if flat.chars().count() > 80 {
        format!("{}...", flat.chars().take(77).collect::<String>())
    } else {
        flat
    }
}

fn no_fix_reason(gate: &Gate) -> String {
    use crate::gate::predicate::Form;
    match gate.form {
        Form::JitArchList | Form::CapabilityDecorator => format!(
            "no synthesizable edit for a {}: what is compiled changes, which needs every kernel layer's answer",
            gate.form.name()
        ),
        Form::ArchTable => "no synthesizable edit for an arch-table: the target's key needs a row of values, which a curated patch states (`add_key`)".to_string(),
        Form::SmCompare | Form::CapabilityCompare => format!(
            "no synthesizable edit for a {} that is not an equality or membership on a literal (a range compare)",
            gate.form.name()
        ),
        _ => format!(
            "no synthesizable edit for this {}: no predicate of the package means exactly the target's family or arch here",
            gate.form.name()
        ),
    }
}

fn node_text(node: Node, src: &[u8]) -> String {
    String::from_utf8_lossy(&src[node.byte_range()]).into_owned()
}

/// The syntax node of a gate: the outermost node spanning its recorded region.
fn gate_node<'t>(root: Node<'t>, src: &[u8], gate: &Gate) -> Option<Node<'t>> {
    let start = byte_of(src, gate.line, gate.column)?;
    let end = byte_of(src, gate.end_line, gate.end_column)?;
    let mut node = root.descendant_for_byte_range(start, end)?;
    while let Some(parent) = node.parent() {
        if parent.byte_range() != node.byte_range() {
            break;
        }
        node = parent;
    }
    (node.byte_range() == (start..end)).then_some(node)
}

/// Byte offset of a 1-based line and 1-based character column.
fn byte_of(src: &[u8], line: u32, column: u32) -> Option<usize> {
    let mut at = 0;
    for _ in 1..line {
        at += memchr::memchr(b'\n', &src[at..])? + 1;
    }
    let rest = std::str::from_utf8(&src[at..]).ok()?;
    let offset: usize = rest
        .chars()
        .take(column.saturating_sub(1) as usize)
        .map(char::len_utf8)
        .sum();
    Some(at + offset)
}

/// The gate's text with replacements (inside it) applied.
fn rewrite_within(gate: Node, src: &[u8], replacements: &[Replacement]) -> Option<String> {
    let base = gate.start_byte();
    let shifted: Vec<Replacement> = replacements
        .iter()
        .filter(|r| r.start >= base && r.end <= gate.end_byte())
        .map(|r| Replacement {
            start: r.start - base,
            end: r.end - base,
            text: r.text.clone(),
        })
        .collect();
    let new = apply_replacements(&src[gate.byte_range()], &shifted).ok()?;
    String::from_utf8(new).ok()
}

/// From an arch part up through `or` chains and parentheses, inside the gate.
fn or_group<'t>(part: Node<'t>, gate: Node<'t>) -> Node<'t> {
    let mut node = part;
    while node.id() != gate.id() {
        let Some(parent) = node.parent() else { break };
        let is_or = parent.kind() == "boolean_operator"
            && parent
                .child_by_field_name("operator")
                .is_some_and(|op| op.kind() == "or");
        if !(is_or || parent.kind() == "parenthesized_expression") {
            break;
        }
        node = parent;
    }
    node
}

/// The right-hand side of the module-level `name = ...` in the part's file.
fn module_assignment<'t>(part: Node<'t>, src: &[u8], name: &str) -> Option<Node<'t>> {
    let mut root = part;
    while let Some(parent) = root.parent() {
        root = parent;
    }
    let mut cursor = root.walk();
    let mut found = None;
    for statement in root.named_children(&mut cursor) {
        if statement.kind() != "expression_statement" {
            continue;
        }
        let Some(assignment) = statement
            .named_child(0)
            .filter(|a| a.kind() == "assignment")
        else {
            continue;
        };
        let left = assignment.child_by_field_name("left")?;
        if left.kind() == "identifier" && node_text(left, src) == name {
            found = assignment.child_by_field_name("right");
        }
    }
    found
}

/// The gate's spelling with its numbers changed to the target's: runs of two or more digits
/// become the target's SM, single digits its major (`is_sm90` -> `is_sm120`).
fn renumbered(text: &str, target: Arch) -> Vec<String> {
    let mut out = String::new();
    let mut changed = false;
    let mut chars = text.char_indices().peekable();
    while let Some((_, c)) = chars.next() {
        if c.is_ascii_digit() {
            let mut run = c.to_string();
            while let Some(&(_, d)) = chars.peek() {
                if !d.is_ascii_digit() {
                    break;
                }
                run.push(d);
                chars.next();
            }
            let value: u32 = run.parse().unwrap_or(0);
            let new = if value >= 20 {
                target.sm()
            } else {
                target.major
            };
            changed |= new != value;
            out.push_str(&new.to_string());
        } else {
            out.push(c);
        }
    }
    if changed { vec![out] } else { Vec::new() }
}

fn leading_name(text: &str) -> Option<&str> {
    let end = text
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(text.len());
    (end > 0).then(|| &text[..end])
}

fn literal_members(literal: Node, src: &[u8]) -> Vec<String> {
    let mut cursor = literal.walk();
    literal
        .named_children(&mut cursor)
        .filter(|c| c.kind() != "comment")
        .map(|c| node_text(c, src))
        .collect()
}

fn join_literal(members: &[String], kind: &str) -> String {
    let joined = members.join(", ");
    if kind == "tuple" && members.len() == 1 {
        format!("{joined},")
    } else {
        joined
    }
}

fn collapse(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renumbering_spellings() {
        let t = Arch::new(12, 0);
        assert_eq!(
            renumbered("is_sm100_supported()", t),
            vec!["is_sm120_supported()"]
        );
        assert_eq!(
            renumbered("get_platform().is_sm90", t),
            vec!["get_platform().is_sm120"]
        );
        assert_eq!(
            renumbered("current_platform.is_device_capability_family(100)", t),
            vec!["current_platform.is_device_capability_family(120)"]
        );
        assert!(renumbered("is_blackwell()", t).is_empty());
        assert!(renumbered("is_sm120_supported()", t).is_empty());
    }

    fn gate(id: &str, line: u32, function: &str, majors: &[i64]) -> Gate {
        use crate::gate::ir::CmpOp;
        use crate::gate::predicate::{Atom, Form, Rhs};
        Gate {
            id: id.into(),
            dist: Some("pkg".into()),
            dist_version: Some("1.0".into()),
            file: "pkg/m.py".into(),
            line,
            column: 8,
            end_line: line,
            end_column: 20,
            function: Some(function.into()),
            form: Form::CapabilityMembership,
            text: format!("major in {majors:?}"),
            predicate: Pred::atom(
                Atom::Dev {
                    var: DevVar::Major,
                    op: CmpOp::In,
                    rhs: Rhs::Ints(majors.to_vec()),
                },
                Form::CapabilityMembership,
            ),
            guards_branch: true,
            assumes: None,
        }
    }

    fn scan(gates: Vec<Gate>) -> ScanResult {
        ScanResult {
            gates,
            modules: Vec::new(),
            warnings: Vec::new(),
            stats: Default::default(),
        }
    }

    /// The re-resolution check refuses an edit that changes another gate, or the edited gate
    /// at a target outside the family; it accepts the target's family moving together.
    #[test]
    fn verify_refuses_other_gates_and_other_targets() {
        let dir = tempfile::tempdir().unwrap();
        let site = Site::open(dir.path()).unwrap();
        let rules = Rules::load(None).unwrap();
        let edited = gate("e1", 3, "f", &[9, 10]);
        let other = gate("o1", 9, "g", &[10]);
        let base = scan(vec![edited.clone(), other.clone()]);
        let input = Input {
            site: &site,
            rules: &rules,
            target: Arch::new(12, 0),
            cuda: None,
            scan: &base,
            memo: &LoweringMemo::default(),
        };
        let baseline = profiles(&base.gates, None);
        let check =
            |after: Vec<Gate>| verify(&baseline, &scan(after), &[(&edited, Mode::Open)], &input);

        // Right: the edited gate (a new id) admits 12.x, nothing else moves.
        assert!(check(vec![gate("e2", 3, "f", &[9, 10, 12]), other.clone()]).is_ok());
        // Another gate changes with it.
        let why = check(vec![
            gate("e2", 3, "f", &[9, 10, 12]),
            gate("o1", 9, "g", &[10, 12]),
        ])
        .unwrap_err();
        assert!(
            why.contains("pkg/m.py:9") && why.contains("would change"),
            "{why}"
        );
        // The edited gate also opens sm_110, outside the target's family.
        let why = check(vec![gate("e2", 3, "f", &[9, 10, 11, 12]), other.clone()]).unwrap_err();
        assert!(why.contains("sm_110"), "{why}");
        // It does not open the target at all.
        let why = check(vec![gate("e2", 3, "f", &[9, 10, 13]), other.clone()]).unwrap_err();
        assert!(why.contains("sm_120"), "{why}");
        // Another gate disappears, or one appears.
        assert!(check(vec![gate("e2", 3, "f", &[9, 10, 12])]).is_err());
        let why = check(vec![
            gate("e2", 3, "f", &[9, 10, 12]),
            other.clone(),
            gate("n1", 20, "h", &[9]),
        ])
        .unwrap_err();
        assert!(why.contains("add a gate"), "{why}");
    }

    #[test]
    fn byte_offsets_of_characters() {
        let src = "a\nxé = 1\n".as_bytes();
        assert_eq!(byte_of(src, 2, 1), Some(2));
        assert_eq!(byte_of(src, 2, 3), Some(5));
    }
}
