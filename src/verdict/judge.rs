//! Judging: a gate's admission at a target, crossed with the coverage of the kernels its path
//! needs, gives the verdict; the evidence says each step.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use rayon::prelude::*;

use super::code::{Code, FileCache};
use super::flow::Guard;
use super::link::{GateLink, LinkOutcome, Linker, Seed};
use super::model::{KernelInfo, KernelState, Verdict, VerdictKind, Verdicts};
use super::site_text::{SiteFiles, SiteText};
use crate::arch::Arch;
use crate::gate::predicate::{Admits, CudaVersion, Form, Pred, evaluate};
use crate::kernel::dsl::DslIndex;
use crate::kernel::query::{Answer, KernelIndex};
use crate::kernel::requirement::Requirement;
use crate::process::{Beside, stage};
use crate::rules::{LaunchFeature, Rules};
use crate::scan::{Gate, ScanResult};
use crate::site::Site;

/// What the verdicts read from the site's Python text alone, before any gate is known: it can
/// be read while the scan runs (`audit` does, on the cores the scan's long files leave idle).
pub struct Prepared {
    text: SiteText,
    dsl: DslIndex,
}

/// Reads the site's Python text and its CuTe DSL index.
pub fn prepare(root: &Path, beside: Option<&Beside>) -> Prepared {
    let timings = std::env::var_os("GATEFIX_TIMINGS").is_some();
    let clock = std::time::Instant::now();
    let files = stage(beside, || SiteFiles::read(root));
    // The DSL index first: its rounds run on one thread, which beside the scan costs nothing,
    // while the words are indexed in parallel, which is what is left once the scan is done.
    let dsl = stage(beside, || files.dsl_index());
    if timings {
        eprintln!(
            "verdicts: CuTe DSL index ({} ops, {} kernel modules) {:?}",
            dsl.ops.len(),
            dsl.kernels.len(),
            clock.elapsed()
        );
    }
    let text = stage(beside, || SiteText::index(files));
    if timings {
        eprintln!("verdicts: site text {:?}", clock.elapsed());
    }
    Prepared { text, dsl }
}

/// Verdicts for every gate of a scan, at every target.
pub fn judge(
    site: &Site,
    scan: &ScanResult,
    rules: &Rules,
    targets: &[Arch],
    cuda: Option<&CudaVersion>,
) -> Verdicts {
    judge_prepared(site, scan, rules, targets, cuda, prepare(&site.root, None))
}

/// [`judge`] with the site's text already read.
pub fn judge_prepared(
    site: &Site,
    scan: &ScanResult,
    rules: &Rules,
    targets: &[Arch],
    cuda: Option<&CudaVersion>,
    prepared: Prepared,
) -> Verdicts {
    let Prepared { text, dsl } = prepared;
    let code = Code::with_text(&site.root, &text);
    let packages = top_level_folders(site);
    let jit_only = KernelIndex::build_jit_only(site, scan);
    let timings = std::env::var_os("GATEFIX_TIMINGS").is_some();
    let clock = std::time::Instant::now();
    let mut gates_by_file: HashMap<String, Vec<usize>> = HashMap::new();
    for (index, gate) in scan.gates.iter().enumerate() {
        gates_by_file
            .entry(gate.file.clone())
            .or_default()
            .push(index);
    }
    let linker = Linker {
        rules,
        code: &code,
        jit: &jit_only.jit,
        dsl: &dsl,
        packages,
        text: &text,
        gates: &scan.gates,
        gates_by_file: &gates_by_file,
        native: Default::default(),
    };
    let (mut links, seeds) = link_by_file(&linker, &code, &scan.gates);
    if timings {
        eprintln!("verdicts: links {:?}", clock.elapsed());
    }
    super::registry::link_checkers(&linker, &mut links);
    let dists: Vec<Option<String>> = scan.gates.iter().map(|g| g.dist.clone()).collect();
    linker.flow(&mut links, &seeds, &dists);
    if timings {
        eprintln!("verdicts: flow {:?}", clock.elapsed());
    }
    drop(text);
    let globs = library_globs(&links);
    let mut index = if globs.is_empty() {
        jit_only
    } else {
        KernelIndex::build_for_globs(site, scan, &globs)
    };
    index.dsl = dsl;
    index.dsl.set_branch_gates(&scan.gates);
    index.read_generators(
        requirements(&links).filter_map(|needs| match needs {
            Requirement::Jit(id) => Some(id.as_str()),
            _ => None,
        }),
        site,
    );
    if timings {
        eprintln!("verdicts: kernel index {:?}", clock.elapsed());
    }
    let verdicts = scan
        .gates
        .par_iter()
        .zip(&links)
        .map(|(gate, link)| {
            // Asked once per gate; it decides only where the kernel search did not.
            let feature = launch_feature_of(gate, link, &rules.launch_features);
            targets
                .iter()
                .map(|&target| {
                    let verdict = verdict(gate, link, target, cuda, &index, site, &scan.gates);
                    // A gate that sets a launch attribute is decided by the hardware's
                    // features, also where the code it decides launches nothing itself. A
                    // helper named for the feature (`device_support_pdl`) returns whether the
                    // target has it: its callers hand that on as a launch attribute, so the
                    // kernels they launch are theirs whatever it returns.
                    let feature_decides = link.helper_returns_it
                        || matches!(
                            verdict.kind,
                            VerdictKind::Unverified | VerdictKind::NoKernel
                        );
                    match &feature {
                        Some(feature) if feature_decides => {
                            launch_feature_verdict(gate, link, feature, target, cuda, &scan.gates)
                                .unwrap_or(verdict)
                        }
                        _ => verdict,
                    }
                })
                .collect()
        })
        .collect();
    if timings {
        eprintln!("verdicts: judged {:?}", clock.elapsed());
    }
    verdicts
}

/// Links every gate, reading each gate file once (and not keeping it: only callees' modules
/// stay cached, so memory does not grow with the number of gate files).
fn link_by_file(linker: &Linker, code: &Code, gates: &[Gate]) -> (Vec<GateLink>, Vec<Vec<Seed>>) {
    let mut by_file: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (index, gate) in gates.iter().enumerate() {
        by_file.entry(gate.file.as_str()).or_default().push(index);
    }
    // The files with the most gates first: a file's gates are linked on one thread, and a
    // big one started last would leave the other core idle.
    let mut groups: Vec<(&str, Vec<usize>)> = by_file.into_iter().collect();
    groups.sort_by_key(|(_, indices)| std::cmp::Reverse(indices.len()));
    let mut linked: Vec<(usize, (GateLink, Vec<Seed>))> = groups
        .par_iter()
        .flat_map_iter(|(file, indices)| {
            // Decorators and JIT lists guard no branch: their files need not be read.
            let needs_code = indices.iter().any(|&i| {
                !matches!(
                    gates[i].form,
                    Form::CapabilityDecorator | Form::MinCapability | Form::JitArchList
                )
            });
            let parsed = needs_code
                .then(|| Code::module_of_file(file).and_then(|m| code.load(&m)))
                .flatten();
            let mut cache = FileCache::default();
            indices
                .iter()
                .map(|&i| (i, linker.link(&gates[i], parsed.as_ref(), &mut cache)))
                .collect::<Vec<_>>()
        })
        .collect();
    linked.sort_by_key(|(i, _)| *i);
    linked.into_iter().map(|(_, link)| link).unzip()
}

fn top_level_folders(site: &Site) -> HashSet<String> {
    std::fs::read_dir(&site.root)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// What every kernel the gates are linked to needs.
fn requirements(links: &[GateLink]) -> impl Iterator<Item = &Requirement> {
    links
        .iter()
        .filter_map(|l| match &l.outcome {
            LinkOutcome::Linked(links) => Some(links),
            LinkOutcome::NotLinked(_) => None,
        })
        .flatten()
        .map(|l| &l.needs)
}

fn library_globs(links: &[GateLink]) -> Vec<String> {
    let mut globs: Vec<String> = requirements(links)
        .filter_map(|needs| match needs {
            Requirement::Library { glob, .. } => Some(glob.clone()),
            Requirement::TorchOp { namespace, .. } => Some(format!("{namespace}/**/*.so")),
            _ => None,
        })
        .collect();
    globs.sort();
    globs.dedup();
    globs
}

/// A gate inside an `if` whose gate blocks the target is never evaluated there: what it
/// admits runs nothing at this target, and opening it would open nothing. An `open`, `trap`
/// or `opportunity` there is `unverified` (`unreachable-at-target`), saying which gate; a wall
/// stays one, the target being blocked either way.
fn reached_or_unverified(
    kind: VerdictKind,
    link: &GateLink,
    target: Arch,
    cuda: Option<&CudaVersion>,
    gates: &[Gate],
    evidence: &mut Vec<String>,
) -> VerdictKind {
    if !matches!(
        kind,
        VerdictKind::Open | VerdictKind::Trap | VerdictKind::Opportunity
    ) {
        return kind;
    }
    let Some((outer, negated)) = first_blocking(&link.reached_under, true, target, cuda, gates)
    else {
        return kind;
    };
    evidence.push(format!(
        "not reached at {target}: the gate sits under {}:{} `{}`{}, which blocks {target}; it would be {} otherwise",
        outer.file,
        outer.line,
        outer.text,
        if negated { " (negated)" } else { "" },
        kind.name()
    ));
    evidence.push("stop: unreachable-at-target".into());
    VerdictKind::Unverified
}

/// Positive evidence or no verdict: kernels present on the part of the path the search read
/// show nothing of the part it left unread, where a kernel missing at the target makes the
/// gate a trap (sglang 0.5.22's CuTe DSL GDN prefill: the Triton helpers it calls build for
/// sm_120, its tcgen05 kernel, reached through a call gatefix does not resolve, does not). An
/// `open` or `opportunity` from such a search is `unverified` (`path-left-out`); a missing
/// kernel on the path is evidence enough for a trap or a wall.
fn whole_path_or_unverified(
    kind: VerdictKind,
    link: &GateLink,
    evidence: &mut Vec<String>,
) -> VerdictKind {
    let Some(left_out) = &link.left_out else {
        return kind;
    };
    if !matches!(kind, VerdictKind::Open | VerdictKind::Opportunity) {
        return kind;
    }
    evidence.push(format!(
        "not {}: the kernels above are those of the part of the path gatefix read; it left out {left_out}",
        match kind {
            VerdictKind::Open => "open",
            _ => "an opportunity",
        }
    ));
    evidence.push("stop: path-left-out".into());
    VerdictKind::Unverified
}

/// The first guard that blocks the target, and the gate it is. `path_runs`: the judged gate
/// lets the path run at the target; where it does not, a guard around the flag's own read
/// blocks because the flag does, and says nothing of its own.
fn first_blocking<'g>(
    guards: &[Guard],
    path_runs: bool,
    target: Arch,
    cuda: Option<&CudaVersion>,
    gates: &'g [Gate],
) -> Option<(&'g Gate, bool)> {
    guards
        .iter()
        .filter(|g| path_runs || !g.holds_read)
        .find_map(|guard| {
            let gate = &gates[guard.gate];
            let blocks = match evaluate(&gate.predicate, target.plain(), cuda) {
                Admits::Yes => guard.negated,
                Admits::No => !guard.negated,
                Admits::Unknown(_) => false,
            };
            blocks.then_some((gate, guard.negated))
        })
}

/// The first other gate on a link's path that blocks the target, in words.
fn blocking_guard(
    link: &super::link::Link,
    path_runs: bool,
    target: Arch,
    cuda: Option<&CudaVersion>,
    gates: &[Gate],
) -> Option<String> {
    first_blocking(&link.guards, path_runs, target, cuda, gates).map(|(gate, negated)| {
        format!(
            "{}:{} `{}` {} it on the way to {}",
            gate.file,
            gate.line,
            gate.text,
            if negated {
                "(negated) blocks"
            } else {
                "blocks"
            },
            link.needs.words()
        )
    })
}

/// What the kernels of a path add up to at a target: all present, one missing, or unknown
/// (`None` before any is seen).
#[derive(Clone, Copy)]
enum Kernel {
    None,
    Present,
    Missing,
    Unknown,
}

/// The kernels of the alternatives a path picks among on other conditions.
#[derive(Default)]
struct Alternatives {
    present: usize,
    missing: usize,
    unknown: usize,
}

impl Alternatives {
    /// One present alternative keeps the path runnable; only every one missing leaves none.
    fn any(&self) -> Kernel {
        if self.present > 0 {
            Kernel::Present
        } else if self.unknown > 0 {
            Kernel::Unknown
        } else if self.missing > 0 {
            Kernel::Missing
        } else {
            Kernel::None
        }
    }
}

impl Kernel {
    /// Joins one more kernel in: missing beats unknown beats present.
    fn add(&mut self, next: Kernel) {
        *self = match (*self, next) {
            (Kernel::Missing, _) | (_, Kernel::Missing) => Kernel::Missing,
            (Kernel::Unknown, _) | (_, Kernel::Unknown) => Kernel::Unknown,
            _ => Kernel::Present,
        };
    }
}

/// The feature of `rules/launch.toml` a gate turns on or off, if that is all it does: the
/// gate reads or calls a name with the feature's word (`use_pdl`, `device_support_pdl(dev)`),
/// or it is what a helper with the word in its name returns (`return major >= 9` in
/// `device_support_pdl`). Negated or compound gates decide more than the feature.
pub fn launch_feature_of<'r>(
    gate: &Gate,
    link: &GateLink,
    features: &'r [LaunchFeature],
) -> Option<(&'r LaunchFeature, String)> {
    if link.guards_raise {
        return None;
    }
    let text = gate.text.trim();
    let head = text.split('(').next().unwrap_or(text).trim();
    let plain_name = !head.is_empty()
        && head
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        && (head.len() == text.len() || text.ends_with(')'));
    let helper = link
        .helper_returns_it
        .then_some(gate.function.as_deref())
        .flatten()
        .map(|f| f.rsplit('.').next().unwrap_or(f));
    let has_word = |name: &str, word: &str| {
        name.split(|c: char| !c.is_ascii_alphanumeric())
            .any(|part| part.eq_ignore_ascii_case(word))
    };
    features.iter().find_map(|feature| {
        feature.words.iter().find_map(|word| {
            if plain_name && has_word(head, word) {
                Some((feature, format!("`{text}` names {}", feature.name)))
            } else if let Some(helper) = helper.filter(|h| has_word(h, word)) {
                Some((
                    feature,
                    format!(
                        "the gate is what {helper}() returns, which names {}",
                        feature.name
                    ),
                ))
            } else {
                None
            }
        })
    })
}

/// A gate that only turns a launch feature on or off, judged by whether the target has the
/// feature (`None`: not such a gate, or its admission is unknown). Turned off where the
/// target has it, the gate keeps something off for reasons the code does not say: no verdict.
/// Like a kernel's verdict, it is never `open` or a `trap` where a gate around it blocks the
/// target (`unreachable-at-target`).
fn launch_feature_verdict(
    gate: &Gate,
    link: &GateLink,
    (feature, names): &(&LaunchFeature, String),
    target: Arch,
    cuda: Option<&CudaVersion>,
    gates: &[Gate],
) -> Option<Verdict> {
    let admits = evaluate(&gate.predicate, target.plain(), cuda);
    let has = target.major >= feature.min_major;
    let mut evidence = vec![
        format!("admits {target}: {} ({})", admits.word(), gate.predicate),
        format!(
            "launch feature: {names}; it needs compute capability {}.0 or higher ({}: {})",
            feature.min_major,
            feature.file.display(),
            feature.source
        ),
        format!(
            "{target} {} it (major {} {} {})",
            if has { "has" } else { "lacks" },
            target.major,
            if has { ">=" } else { "<" },
            feature.min_major
        ),
    ];
    let kind = match (admits, has) {
        (Admits::Yes, true) => VerdictKind::Open,
        (Admits::Yes, false) => VerdictKind::Trap,
        (Admits::No, false) => VerdictKind::Wall,
        (Admits::No, true) => {
            evidence.push(
                "the gate keeps the feature off where the hardware has it, for reasons the code does not say"
                    .into(),
            );
            evidence.push("stop: launch-feature-off".into());
            VerdictKind::Unverified
        }
        (Admits::Unknown(_), _) => return None,
    };
    let kind = reached_or_unverified(kind, link, target, cuda, gates, &mut evidence);
    let kernels = vec![KernelInfo {
        kernel: format!("launch feature {}", feature.name),
        at_target: if has {
            KernelState::Present
        } else {
            KernelState::Missing
        },
        how: if has {
            format!(
                "compute capability {}.{} >= {}.0",
                target.major, target.minor, feature.min_major
            )
        } else {
            String::new()
        },
        alternative: false,
        found: Vec::new(),
    }];
    Some(Verdict {
        kind,
        evidence,
        kernels,
    })
}

fn verdict(
    gate: &Gate,
    link: &GateLink,
    target: Arch,
    cuda: Option<&CudaVersion>,
    index: &KernelIndex,
    site: &Site,
    gates: &[Gate],
) -> Verdict {
    let (admits, mut evidence) = if link.guards_raise {
        let guarded = match &gate.predicate {
            Pred::Not(inner) => inner.as_ref().clone(),
            other => Pred::Not(Box::new(other.clone())),
        };
        let admits = evaluate(&guarded, target.plain(), cuda);
        let line = format!(
            "the gated branch {}, so the path it protects runs when the gate does not hold: at {target} {} ({guarded})",
            if link.returns_early {
                "returns early"
            } else {
                "raises"
            },
            admits.word()
        );
        (admits, vec![line])
    } else {
        let admits = evaluate(&gate.predicate, target.plain(), cuda);
        let line = format!("admits {target}: {} ({})", admits.word(), gate.predicate);
        (admits, vec![line])
    };
    let links = match &link.outcome {
        LinkOutcome::NotLinked(_) if let Some(read) = &link.complete => {
            evidence.push(format!("chooses no kernel: {read}"));
            return Verdict {
                kind: VerdictKind::NoKernel,
                evidence,
                kernels: Vec::new(),
            };
        }
        LinkOutcome::NotLinked(why) => {
            evidence.push(format!("no kernel link: {why}"));
            // The kind of the first stop, in one word a script can count.
            evidence.push(format!(
                "stop: {}",
                link.stop.as_deref().unwrap_or("not-followed")
            ));
            return Verdict {
                kind: VerdictKind::Unverified,
                evidence,
                kernels: Vec::new(),
            };
        }
        LinkOutcome::Linked(links) => links,
    };
    let path_runs = matches!(admits, Admits::Yes);
    let mut blocked = Vec::new();
    let links: Vec<_> = links
        .iter()
        .filter(|l| l.applies_to(target.major))
        .filter(
            |l| match blocking_guard(l, path_runs, target, cuda, gates) {
                Some(why) => {
                    blocked.push(why);
                    false
                }
                None => true,
            },
        )
        .collect();
    blocked.sort();
    blocked.dedup();
    for why in blocked.iter().take(3) {
        evidence.push(format!("a path not taken at {target}: {why}"));
    }
    if links.is_empty() {
        evidence.push(if blocked.is_empty() {
            format!(
                "no kernel link: the linked kernels are declared for other majors than {}",
                target.major
            )
        } else {
            format!("no kernel link: every linked path passes another gate that blocks {target}")
        });
        return Verdict {
            kind: VerdictKind::Unverified,
            evidence,
            kernels: Vec::new(),
        };
    }
    // What the path always runs decides; alternatives it picks on other conditions (a kernel
    // reached only through an `if` arm of a callee) decide only when nothing else does: one
    // present alternative keeps the path runnable, every alternative missing leaves it none.
    let mut always = Kernel::None;
    let mut alternatives = Alternatives::default();
    let mut missing_alternatives = Vec::new();
    let mut kernels = Vec::new();
    // Kernels the path needs that the target has only in part (some of the build's kernels
    // compiled out or unable to launch there).
    let mut partly: Vec<String> = Vec::new();
    for link in &links {
        let answer = index.coverage(&link.needs, target, site);
        let words = link.needs.words();
        let (at_target, how, found) = match &answer {
            Answer::Covered { how, evidence: e } => {
                (KernelState::Present, how.clone(), e.as_slice())
            }
            Answer::NotCovered { evidence: e } => {
                (KernelState::Missing, String::new(), e.as_slice())
            }
            Answer::Unknown { why } => (KernelState::Unknown, why.clone(), &[][..]),
        };
        let info = KernelInfo {
            kernel: words.clone(),
            at_target,
            how,
            alternative: link.conditional,
            found: found.to_vec(),
        };
        if !kernels.contains(&info) {
            kernels.push(info);
        }
        match answer {
            Answer::Covered { how, evidence: e } => {
                if crate::kernel::query::is_partly(&how) {
                    partly.push(words.clone());
                }
                evidence.extend(link.chain.iter().cloned());
                evidence.push(format!("needs {words}: present at {target} ({how})"));
                evidence.extend(e);
                if link.conditional {
                    alternatives.present += 1;
                } else {
                    always.add(Kernel::Present);
                }
            }
            Answer::NotCovered { evidence: e } if link.conditional => {
                missing_alternatives.push((link, e));
                alternatives.missing += 1;
            }
            Answer::NotCovered { evidence: e } => {
                evidence.extend(link.chain.iter().cloned());
                evidence.push(format!("needs {words}: MISSING at {target}"));
                evidence.extend(e);
                always.add(Kernel::Missing);
            }
            Answer::Unknown { why } => {
                evidence.extend(link.chain.iter().cloned());
                evidence.push(format!("needs {words}: unknown ({why})"));
                if link.conditional {
                    alternatives.unknown += 1;
                } else {
                    always.add(Kernel::Unknown);
                }
            }
        }
    }
    let kernel = match always {
        Kernel::None => alternatives.any(),
        always => always,
    };
    for (link, e) in missing_alternatives {
        let words = link.needs.words();
        if matches!(kernel, Kernel::Missing) {
            evidence.extend(link.chain.iter().cloned());
            evidence.push(format!("needs {words}: MISSING at {target}"));
            evidence.extend(e);
        } else {
            evidence.push(format!(
                "an alternative on another condition needs {words}: MISSING at {target} ({})",
                link.chain.last().map(String::as_str).unwrap_or("")
            ));
        }
    }
    let kind = match (&admits, kernel) {
        (Admits::Unknown(why), _) => {
            evidence.push(format!("admission unknown: {}", why.join("; ")));
            VerdictKind::Unverified
        }
        (_, Kernel::Unknown | Kernel::None) => VerdictKind::Unverified,
        (Admits::Yes, Kernel::Present) => VerdictKind::Open,
        // Positive evidence or no verdict: opening a gate is advised only where every
        // kernel its path may launch is there. A build covered in part may hold the very
        // kernel the path launches among those that cannot run (flashinfer's topk clusters
        // launcher asks for 227 KiB of shared memory, more than sm_120 has).
        (Admits::No, Kernel::Present) if !partly.is_empty() => {
            evidence.push(format!(
                "not an opportunity: {} {} only in part at {target}, and gatefix cannot tell whether the path launches the kernels that cannot run there",
                partly.join(", "),
                if partly.len() == 1 { "is there" } else { "are there" }
            ));
            VerdictKind::Unverified
        }
        (Admits::No, Kernel::Present) => VerdictKind::Opportunity,
        (Admits::No, Kernel::Missing) => VerdictKind::Wall,
        (Admits::Yes, Kernel::Missing) => VerdictKind::Trap,
    };
    let kind = reached_or_unverified(kind, link, target, cuda, gates, &mut evidence);
    let kind = whole_path_or_unverified(kind, link, &mut evidence);
    Verdict {
        kind,
        evidence,
        kernels,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn gate(text: &str, function: Option<&str>) -> Gate {
        Gate {
            id: String::new(),
            dist: None,
            dist_version: None,
            file: "p/x.py".into(),
            line: 1,
            column: 0,
            end_line: 1,
            end_column: 0,
            function: function.map(String::from),
            form: Form::HelperCall,
            text: text.into(),
            predicate: Pred::Const(true),
            guards_branch: true,
            assumes: None,
        }
    }

    fn link(stop: Option<&str>, guards_raise: bool) -> GateLink {
        GateLink {
            outcome: LinkOutcome::NotLinked(String::new()),
            guards_raise,
            returns_early: false,
            stop: stop.map(String::from),
            reached_under: Vec::new(),
            complete: None,
            helper_returns_it: false,
            left_out: None,
        }
    }

    fn returned_by_its_helper() -> GateLink {
        GateLink {
            helper_returns_it: true,
            ..link(Some("no-kernel-reached"), false)
        }
    }

    /// The word is a whole part of the name the gate reads or calls, or of the helper it is
    /// returned from; nothing else makes a gate a launch-feature gate.
    #[test]
    fn launch_features_match_whole_name_parts_of_plain_gates_only() {
        let pdl = [LaunchFeature {
            name: "PDL".into(),
            words: vec!["pdl".into()],
            min_major: 9,
            source: "guide".into(),
            file: PathBuf::from("rules/launch.toml"),
        }];
        let plain = link(Some("no-kernel-reached"), false);
        let matches = |g: &Gate, l: &GateLink| launch_feature_of(g, l, &pdl).is_some();
        for text in [
            "use_pdl",
            "self.enable_pdl",
            "ENABLE_PDL",
            "device_support_pdl(input.device)",
            "is_arch_support_pdl()",
            "mod.trtllm_moe_enable_pdl(x.shape[0])",
        ] {
            assert!(matches(&gate(text, None), &plain), "{text}");
        }
        for text in [
            "not use_pdl",
            "use_pdl and major == 10",
            "updl_ready",
            "pdlx()",
            "major >= 9",
            "f(use_pdl)",
            "device_support_pdl(d)[0]",
        ] {
            assert!(!matches(&gate(text, None), &plain), "{text}");
        }
        // An early exit protects the code after it, not a launch.
        assert!(!matches(&gate("use_pdl", None), &link(None, true)));
        // The gate a helper returns, only when it is what the helper returns.
        let helper = gate("major >= 9", Some("Caps.device_support_pdl"));
        assert!(matches(&helper, &returned_by_its_helper()));
        assert!(!matches(&helper, &plain));
        assert!(!matches(
            &gate("major >= 9", Some("supports_pdlx")),
            &returned_by_its_helper()
        ));
    }
}
