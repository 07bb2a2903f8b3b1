//! Judging: a gate's admission at a target, crossed with the coverage of the kernels its path
//! needs, gives the verdict; the evidence says each step.

use std::collections::{BTreeMap, HashSet};

use rayon::prelude::*;

use super::code::{Code, FileCache};
use super::link::{GateLink, LinkOutcome, Linker};
use super::model::{Verdict, VerdictKind, Verdicts};
use crate::arch::Arch;
use crate::gate::predicate::{Admits, CudaVersion, Form, Pred, evaluate};
use crate::kernel::query::{Answer, KernelIndex, Requirement};
use crate::rules::Rules;
use crate::scan::{Gate, ScanResult};
use crate::site::Site;

/// Verdicts for every gate of a scan, at every target.
pub fn judge(
    site: &Site,
    scan: &ScanResult,
    rules: &Rules,
    targets: &[Arch],
    cuda: Option<&CudaVersion>,
) -> Verdicts {
    let code = Code::new(&site.root);
    let packages = top_level_folders(site);
    let jit_only = KernelIndex::build_jit_only(site, scan);
    let linker = Linker {
        rules,
        code: &code,
        jit: &jit_only.jit,
        packages,
    };
    let links = link_by_file(&linker, &code, &scan.gates);
    let globs = library_globs(&links);
    let index = if globs.is_empty() {
        jit_only
    } else {
        KernelIndex::build_for_globs(site, scan, &globs)
    };
    scan.gates
        .par_iter()
        .zip(&links)
        .map(|(gate, link)| {
            targets
                .iter()
                .map(|&target| verdict(gate, link, target, cuda, &index, site))
                .collect()
        })
        .collect()
}

/// Links every gate, reading each gate file once (and not keeping it: only callees' modules
/// stay cached, so memory does not grow with the number of gate files).
fn link_by_file(linker: &Linker, code: &Code, gates: &[Gate]) -> Vec<GateLink> {
    let mut by_file: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (index, gate) in gates.iter().enumerate() {
        by_file.entry(gate.file.as_str()).or_default().push(index);
    }
    let groups: Vec<(&str, Vec<usize>)> = by_file.into_iter().collect();
    let mut linked: Vec<(usize, GateLink)> = groups
        .par_iter()
        .flat_map_iter(|(file, indices)| {
            // Flags, decorators and JIT lists guard no branch: their files need not be read.
            let needs_code = indices.iter().any(|&i| {
                !matches!(
                    gates[i].form,
                    Form::CachedFlag
                        | Form::CapabilityDecorator
                        | Form::MinCapability
                        | Form::JitArchList
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
    linked.into_iter().map(|(_, link)| link).collect()
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

fn library_globs(links: &[GateLink]) -> Vec<String> {
    let mut globs: Vec<String> = links
        .iter()
        .filter_map(|l| match &l.outcome {
            LinkOutcome::Linked(links) => Some(links),
            LinkOutcome::NotLinked(_) => None,
        })
        .flatten()
        .filter_map(|l| match &l.needs {
            Requirement::Library { glob, .. } => Some(glob.clone()),
            _ => None,
        })
        .collect();
    globs.sort();
    globs.dedup();
    globs
}

/// What the kernels of a path add up to at a target: all present, one missing, or unknown.
enum Kernel {
    Present,
    Missing,
    Unknown,
}

fn verdict(
    gate: &Gate,
    link: &GateLink,
    target: Arch,
    cuda: Option<&CudaVersion>,
    index: &KernelIndex,
    site: &Site,
) -> Verdict {
    let (admits, mut evidence) = if link.guards_raise {
        let guarded = match &gate.predicate {
            Pred::Not(inner) => inner.as_ref().clone(),
            other => Pred::Not(Box::new(other.clone())),
        };
        let admits = evaluate(&guarded, target.plain(), cuda);
        let line = format!(
            "the gated branch raises, so the path it protects runs when the gate does not hold: at {target} {} ({guarded})",
            admits.word()
        );
        (admits, vec![line])
    } else {
        let admits = evaluate(&gate.predicate, target.plain(), cuda);
        let line = format!("admits {target}: {} ({})", admits.word(), gate.predicate);
        (admits, vec![line])
    };
    let links = match &link.outcome {
        LinkOutcome::NotLinked(why) => {
            evidence.push(format!("no kernel link: {why}"));
            return Verdict {
                kind: VerdictKind::Unverified,
                evidence,
            };
        }
        LinkOutcome::Linked(links) => links,
    };
    let links: Vec<_> = links
        .iter()
        .filter(|l| l.applies_to(target.major))
        .collect();
    if links.is_empty() {
        evidence.push(format!(
            "no kernel link: the linked kernels are declared for other majors than {}",
            target.major
        ));
        return Verdict {
            kind: VerdictKind::Unverified,
            evidence,
        };
    }
    let mut kernel = Kernel::Present;
    for link in &links {
        evidence.extend(link.chain.iter().cloned());
        let answer = index.coverage(&link.needs, target, site);
        let words = link.needs.words();
        match answer {
            Answer::Covered { how, evidence: e } => {
                evidence.push(format!("needs {words}: present at {target} ({how})"));
                evidence.extend(e);
            }
            Answer::NotCovered { evidence: e } => {
                evidence.push(format!("needs {words}: MISSING at {target}"));
                evidence.extend(e);
                kernel = Kernel::Missing;
            }
            Answer::Unknown { why } => {
                evidence.push(format!("needs {words}: unknown ({why})"));
                if !matches!(kernel, Kernel::Missing) {
                    kernel = Kernel::Unknown;
                }
            }
        }
    }
    let kind = match (&admits, kernel) {
        (Admits::Unknown(why), _) => {
            evidence.push(format!("admission unknown: {}", why.join("; ")));
            VerdictKind::Unverified
        }
        (_, Kernel::Unknown) => VerdictKind::Unverified,
        (Admits::Yes, Kernel::Present) => VerdictKind::Open,
        (Admits::No, Kernel::Present) => VerdictKind::Opportunity,
        (Admits::No, Kernel::Missing) => VerdictKind::Wall,
        (Admits::Yes, Kernel::Missing) => VerdictKind::Trap,
    };
    Verdict { kind, evidence }
}
