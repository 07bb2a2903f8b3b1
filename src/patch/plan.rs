//! Planning an apply: everything is decided before the first byte of the site changes. Each
//! patch gets a decision (not for this site, not applicable, already applied, refused, ready),
//! and ready patches get the exact new bytes of every file they touch.

use std::collections::BTreeMap;

use super::edit::{EditState, Hit, apply_replacements, check_reparse, plan_edit};
use super::model::{Action, Patch};
use crate::arch::Arch;
use crate::kernel::query::{Answer, KernelIndex};
use crate::kernel::requirement::Requirement;
use crate::site::{Site, site_path};
use crate::syntax::ts::parse;

/// What apply will do with one patch, and why.
#[derive(Debug, Clone)]
pub enum Decision {
    /// The distribution is not installed, its version is out of range, or the target is not
    /// one the patch is for. Listed, never an error.
    NotForSite(String),
    /// Meant for this site, but an anchor does not match exactly once, or the edit would
    /// break the file: a conflict.
    NotApplicable(String),
    AlreadyApplied,
    /// A required kernel is not there for the target (or cannot be found).
    Refused(Vec<String>),
    /// Will be written; `verified` is false only under `--force-unverified`.
    Ready {
        verified: bool,
    },
}

/// The kernel side of a decision: one line per requirement, with the evidence.
#[derive(Debug, Clone)]
pub struct KernelCheck {
    pub requirement: Requirement,
    pub answer: Answer,
}

#[derive(Debug, Clone)]
pub struct PatchPlan<'p> {
    pub patch: &'p Patch,
    pub decision: Decision,
    /// Where each edit anchored: (file, hit).
    pub hits: Vec<(String, Hit)>,
    pub kernels: Vec<KernelCheck>,
    /// The installed version of the patch's distribution.
    pub dist_version: Option<String>,
    /// Switches of the package that select what an edit opens, with no edit (`overrides`).
    pub alternatives: Vec<Alternative>,
}

/// A switch the user can set instead of an edit (a `[[override]]` rule the site confirms).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alternative {
    pub switch: String,
    /// `file:line` where the package reads it.
    pub read_at: String,
    /// The edited file it stands in for.
    pub instead_of: String,
    pub says: String,
}

/// One file's change, shared by every ready patch that touches it.
#[derive(Debug, Clone)]
pub struct FileChange {
    pub path: String,
    pub old: Vec<u8>,
    pub new: Vec<u8>,
}

#[derive(Debug)]
pub struct Plan<'p> {
    pub patches: Vec<PatchPlan<'p>>,
    pub files: Vec<FileChange>,
}

impl Plan<'_> {
    pub fn ready(&self) -> impl Iterator<Item = &PatchPlan<'_>> {
        self.patches
            .iter()
            .filter(|p| matches!(p.decision, Decision::Ready { .. }))
    }
}

/// What a plan needs to know besides the patches.
pub struct PlanInput<'a> {
    pub site: &'a Site,
    pub target: Arch,
    pub force_unverified: bool,
    /// The kernel index, built on first use (it needs a scan of the site) and kept by the
    /// caller, so that every plan of one run shares it.
    pub kernels: &'a dyn Fn() -> &'a KernelIndex,
}

/// Decides every patch, in order; later patches see the files as earlier ready ones leave them.
pub fn plan<'p>(patches: &[&'p Patch], input: &PlanInput) -> Plan<'p> {
    let mut texts: BTreeMap<String, (Vec<u8>, Vec<u8>)> = BTreeMap::new();
    let mut plans = Vec::new();
    for patch in patches {
        let dist_version = input
            .site
            .distributions
            .iter()
            .find(|d| normalise(&d.name) == normalise(&patch.dist))
            .map(|d| d.version.clone());
        let mut plan = PatchPlan {
            patch,
            decision: Decision::AlreadyApplied,
            hits: Vec::new(),
            kernels: Vec::new(),
            dist_version: dist_version.clone(),
            alternatives: Vec::new(),
        };
        if let Some(why) = not_for_site(patch, dist_version.as_deref(), input.target) {
            plan.decision = Decision::NotForSite(why);
            plans.push(plan);
            continue;
        }
        let edited = match edit_files(patch, input.site, &texts, &mut plan.hits) {
            Ok(edited) => edited,
            Err(why) => {
                plan.decision = Decision::NotApplicable(why);
                plans.push(plan);
                continue;
            }
        };
        let Some(edited) = edited else {
            plans.push(plan); // already applied
            continue;
        };
        let index = (input.kernels)();
        plan.kernels = patch
            .requires
            .iter()
            .map(|r| KernelCheck {
                requirement: r.clone(),
                answer: index.coverage(r, input.target, input.site),
            })
            .collect();
        let missing: Vec<String> = plan
            .kernels
            .iter()
            .filter(|k| !matches!(k.answer, Answer::Covered { .. }))
            .flat_map(|k| refusal_lines(&plan.hits, k, input.target))
            .collect();
        plan.decision = if missing.is_empty() {
            Decision::Ready { verified: true }
        } else if input.force_unverified {
            Decision::Ready { verified: false }
        } else {
            Decision::Refused(missing)
        };
        if matches!(plan.decision, Decision::Ready { .. }) {
            for (path, (old, new)) in edited {
                texts.insert(path, (old, new));
            }
        }
        plans.push(plan);
    }
    let files = texts
        .into_iter()
        .filter(|(_, (old, new))| old != new)
        .map(|(path, (old, new))| FileChange { path, old, new })
        .collect();
    Plan {
        patches: plans,
        files,
    }
}

/// Distribution names compare as PEP 503 does (`flashinfer_python` = `flashinfer-python`).
pub fn normalise(name: &str) -> String {
    name.to_ascii_lowercase().replace(['_', '.'], "-")
}

fn not_for_site(patch: &Patch, version: Option<&str>, target: Arch) -> Option<String> {
    let Some(version) = version else {
        return Some(format!("{} is not installed", patch.dist));
    };
    if !patch.admits_version(version) {
        return Some(format!(
            "{} {version} is outside {}",
            patch.dist, patch.versions_text
        ));
    }
    if !patch.admits_target(target) {
        let targets: Vec<String> = patch.targets.iter().map(|t| t.to_string()).collect();
        return Some(format!("for {} only", targets.join(", ")));
    }
    None
}

type Edited = BTreeMap<String, (Vec<u8>, Vec<u8>)>;

/// The patch's files after its edits, `None` when every edit is already in place.
fn edit_files(
    patch: &Patch,
    site: &Site,
    earlier: &Edited,
    hits: &mut Vec<(String, Hit)>,
) -> Result<Option<Edited>, String> {
    let mut out = Edited::new();
    let mut any_ready = false;
    let mut any_applied = false;
    for file in patch.files() {
        let (old, current) = match earlier.get(file) {
            Some((old, new)) => (old.clone(), new.clone()),
            None => {
                let path = site_path(&site.root, file)?;
                let bytes = std::fs::read(&path).map_err(|e| format!("{file}: {e}"))?;
                (bytes.clone(), bytes)
            }
        };
        let tree = parse(&current).ok_or_else(|| format!("{file}: the parser gave up"))?;
        let mut replacements = Vec::new();
        for edit in patch.edits.iter().filter(|e| e.file == file) {
            let import = matches!(edit.action, Action::EnsureImport { .. });
            match plan_edit(&current, &tree, edit) {
                EditState::Ready {
                    replacements: r,
                    hit,
                } => {
                    any_ready |= !import;
                    replacements.extend(r);
                    if let Some(hit) = hit {
                        hits.push((file.to_string(), hit));
                    }
                }
                EditState::Applied { hit } => {
                    any_applied |= !import;
                    if let Some(hit) = hit {
                        hits.push((file.to_string(), hit));
                    }
                }
                EditState::NoMatch(why) => return Err(format!("{file}: {why}")),
            }
        }
        let new =
            apply_replacements(&current, &replacements).map_err(|e| format!("{file}: {e}"))?;
        check_reparse(&tree, &new).map_err(|e| format!("{file}: {e}"))?;
        out.insert(file.to_string(), (old, new));
    }
    match (any_ready, any_applied) {
        (false, _) => Ok(None),
        (true, true) => Err(
            "partly applied: some edits are in place and others are not; revert or reinstall the package first"
                .into(),
        ),
        (true, false) => Ok(Some(out)),
    }
}

/// The evidence chain of a refusal: where the gate is, what it needs, what was found.
fn refusal_lines(hits: &[(String, Hit)], check: &KernelCheck, target: Arch) -> Vec<String> {
    let gates: Vec<String> = hits
        .iter()
        .map(|(file, hit)| format!("{file}:{}", hit.line))
        .collect();
    let needs = check.requirement.words();
    let mut lines = vec![format!(
        "{} needs {needs}, which has no kernel for {target}",
        if gates.is_empty() {
            "the patch".to_string()
        } else {
            format!("the gate at {}", gates.join(", "))
        }
    )];
    match &check.answer {
        Answer::NotCovered { evidence } => {
            lines.extend(evidence.iter().map(|e| format!("found: {e}")))
        }
        Answer::Unknown { why } => lines.push(format!("not found: {why}")),
        Answer::Covered { .. } => {}
    }
    lines
}
