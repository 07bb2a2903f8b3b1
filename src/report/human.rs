//! `--format human`, what a person reads while a server is down: a verdict summary per target
//! (with the `--cuda` hint on top when CUDA is unknown), then the findings, then what to run
//! next. By default (`Layout::Brief`) a finding is one line, grouped by package and by the
//! kernel it needs, so the answer fits a screen; `--show findings` gives each its evidence
//! chain, `--show all` every gate too, `-q` the summary alone. Lines fit the width: code
//! text is elided with `…`, evidence is wrapped (JSON has it all).

use std::fmt::Write;

use super::AuditReport;
use crate::arch::Arch;
use crate::gate::predicate::{Admits, CUDA_UNKNOWN, collapse_whitespace};
use crate::scan::Gate;
use crate::verdict::{Verdict, VerdictKind};

/// A shipped patch that applies to this site's version of its distribution.
#[derive(Debug, Clone)]
pub struct PatchHint {
    pub id: String,
    pub targets: Vec<Arch>,
    /// The files it edits, relative to the site root.
    pub files: Vec<String>,
}

/// How the human report is laid out.
#[derive(Debug, Clone)]
pub struct HumanOptions {
    pub color: bool,
    /// Columns a line may take (at least [`MIN_WIDTH`]).
    pub width: usize,
    /// How much follows the summary.
    pub layout: Layout,
    /// With `--baseline`: the findings it accepts, as (gate index, target index). A finding
    /// accepted at every target it holds at is old: listed after the new ones, or (brief)
    /// only counted.
    pub accepted: Option<super::Accepted>,
    pub patches: Vec<PatchHint>,
}

/// How much of the report follows the summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// The summary alone (`-q`).
    Quiet,
    /// One line per finding, grouped (the default).
    Brief,
    /// Each finding with its evidence chain (`--show findings`).
    Findings,
    /// The findings' evidence, then every gate (`--show all`).
    All,
}

/// Lines of findings the brief layout gives each kind (group headings included) before it
/// says how many more there are: the summary, three kinds and the next steps fit about 60.
const BRIEF_LINES: [(VerdictKind, usize); 3] = [
    (VerdictKind::Trap, 16),
    (VerdictKind::Opportunity, 13),
    (VerdictKind::Wall, 9),
];

/// Findings of one package and kernel the brief layout lists before `+N more here`.
const MAX_BRIEF_PER_GROUP: usize = 3;

/// Narrower than this, nothing useful fits; a smaller `--width` is raised to it.
pub const MIN_WIDTH: usize = 40;

/// The width when neither `--width`, `COLUMNS` nor a terminal says.
pub const DEFAULT_WIDTH: usize = 100;

/// Whether to colour, by `--color` and the conventions: `NO_COLOR` (any non-empty value)
/// turns colour off, `CLICOLOR_FORCE` (non-empty, not `0`) turns it on, `TERM=dumb` off;
/// otherwise colour when stdout is a terminal. `always`/`never` override them all.
pub fn color_wanted(
    choice: &str,
    stdout_is_terminal: bool,
    env: &dyn Fn(&str) -> Option<String>,
) -> bool {
    match choice {
        "always" => return true,
        "never" => return false,
        _ => {}
    }
    let set = |name: &str| env(name).is_some_and(|v| !v.is_empty());
    if set("NO_COLOR") {
        return false;
    }
    if env("CLICOLOR_FORCE").is_some_and(|v| !v.is_empty() && v != "0") {
        return true;
    }
    if env("TERM").as_deref() == Some("dumb") {
        return false;
    }
    stdout_is_terminal
}

struct Palette {
    on: bool,
}

impl Palette {
    fn paint(&self, code: &str, text: &str) -> String {
        if self.on {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }
}

/// The kinds a reader acts on, in the order they are shown, with their colour.
const FINDINGS: [(VerdictKind, &str, &str); 3] = [
    (VerdictKind::Trap, "TRAPS", "1;31"),
    (VerdictKind::Opportunity, "OPPORTUNITIES", "1;32"),
    (VerdictKind::Wall, "WALLS", "1;33"),
];

pub fn render(report: &AuditReport, options: &HumanOptions) -> String {
    let width = options.width.max(MIN_WIDTH);
    let palette = Palette { on: options.color };
    let mut out = String::new();
    summary(report, width, &palette, &mut out);
    if options.layout == Layout::Quiet {
        return out;
    }
    let mut patches_used: Vec<(Arch, &str)> = Vec::new();
    if let Some(verdicts) = report.verdicts {
        for (kind, heading, code) in FINDINGS {
            if options.layout == Layout::Brief {
                let budget = BRIEF_LINES
                    .iter()
                    .find(|(k, _)| *k == kind)
                    .map_or(10, |(_, n)| *n);
                brief_findings(
                    report,
                    verdicts,
                    kind,
                    (heading, code),
                    budget,
                    options,
                    width,
                    &palette,
                    &mut patches_used,
                    &mut out,
                );
            } else {
                findings_of(
                    report,
                    verdicts,
                    kind,
                    (heading, code),
                    options,
                    width,
                    &palette,
                    &mut patches_used,
                    &mut out,
                );
            }
        }
    }
    if options.layout == Layout::All {
        every_gate(report, width, &palette, &mut out);
    }
    next_steps(report, options, &patches_used, width, &palette, &mut out);
    out
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The site, the counts per target and, when CUDA is unknown and it matters, the hint.
fn summary(report: &AuditReport, width: usize, palette: &Palette, out: &mut String) {
    let stats = &report.result.stats;
    let head = format!("gatefix audit of {}", report.site.root.display());
    let _ = writeln!(out, "{}", palette.paint("1", &elide(&head, width)));
    let cuda = report
        .cuda
        .map_or("CUDA unknown".to_string(), |c| format!("CUDA {}", c.text));
    let skipped = if stats.skipped_files > 0 {
        format!(" ({} skipped: see the warnings)", stats.skipped_files)
    } else {
        String::new()
    };
    let line = format!(
        "{} in {} Python files{skipped}; {cuda}",
        plural(report.result.gates.len(), "gate", "gates"),
        stats.python_files
    );
    let _ = writeln!(out, "{}", elide(&line, width));
    let cuda_undecided = report
        .result
        .gates
        .iter()
        .filter(|g| {
            report
                .admits(g)
                .iter()
                .any(|a| matches!(a, Admits::Unknown(why) if why.iter().any(|w| w == CUDA_UNKNOWN)))
        })
        .count();
    if report.cuda.is_none() && cuda_undecided > 0 {
        let hint = format!(
            "{} undecided for want of the CUDA version: rerun with --cuda X.Y (the CUDA the \
             site's torch was built with, e.g. --cuda 12.8)",
            plural(cuda_undecided, "gate is", "gates are")
        );
        wrap_into(
            out,
            "",
            "  ",
            &palette.paint("1;33", "hint: "),
            &hint,
            width,
        );
    }
    out.push('\n');
    for (i, target) in report.targets.iter().enumerate() {
        let mut admits = [0usize; 3];
        for gate in &report.result.gates {
            let slot = match evaluate_at(report, gate, i) {
                Admits::Yes => 0,
                Admits::No => 1,
                Admits::Unknown(_) => 2,
            };
            admits[slot] += 1;
        }
        let mut parts = Vec::new();
        if let Some(verdicts) = report.verdicts {
            let count = |kind: VerdictKind| {
                verdicts
                    .iter()
                    .filter(|v| v.get(i).is_some_and(|v| v.kind == kind))
                    .count()
            };
            let acted = [
                (VerdictKind::Trap, "trap", "traps", "1;31"),
                (
                    VerdictKind::Opportunity,
                    "opportunity",
                    "opportunities",
                    "1;32",
                ),
                (VerdictKind::Wall, "wall", "walls", "1;33"),
            ];
            for (kind, one, many, code) in acted {
                let n = count(kind);
                let text = plural(n, one, many);
                parts.push(if n > 0 {
                    palette.paint(code, &text)
                } else {
                    text
                });
            }
            let last = parts.pop().unwrap_or_default();
            // `no-kernel` is said only where there is one: most sites' gates call code
            // outside the site, and none is proven to launch nothing.
            let no_kernel = match count(VerdictKind::NoKernel) {
                0 => String::new(),
                n => format!(", {n} no-kernel"),
            };
            parts.push(format!(
                "{last}; {} unverified, {} open{no_kernel}",
                count(VerdictKind::Unverified),
                count(VerdictKind::Open),
            ));
        }
        let label = format!("{target}: ");
        let hang = " ".repeat(label.chars().count());
        if !parts.is_empty() {
            wrap_into(out, "", &hang, &label, &parts.join(", "), width);
        }
        let gates = format!(
            "gates: {} admit, {} block, {} unknown",
            admits[0], admits[1], admits[2]
        );
        let lead = if parts.is_empty() {
            label
        } else {
            hang.clone()
        };
        wrap_into(out, "", &hang, &lead, &gates, width);
    }
    if !report.result.warnings.is_empty() {
        let _ = writeln!(
            out,
            "{} (see stderr)",
            plural(report.result.warnings.len(), "warning", "warnings")
        );
    }
}

fn evaluate_at(report: &AuditReport, gate: &Gate, target_index: usize) -> Admits {
    crate::gate::predicate::evaluate(
        &gate.predicate,
        report.targets[target_index].plain(),
        report.cuda,
    )
}

/// Each gate with a verdict of `kind` at some target, once: the targets it holds at, and one
/// evidence chain per distinct chain (chains that differ only in the target's name are one).
#[allow(clippy::too_many_arguments)]
fn findings_of<'p>(
    report: &AuditReport,
    verdicts: &crate::verdict::Verdicts,
    kind: VerdictKind,
    (heading, code): (&str, &str),
    options: &'p HumanOptions,
    width: usize,
    palette: &Palette,
    patches_used: &mut Vec<(Arch, &'p str)>,
    out: &mut String,
) {
    let mut gates = gates_with(report, verdicts, kind, options.accepted.as_ref());
    if gates.is_empty() {
        return;
    }
    // New findings first; with a baseline, the ones it accepts after them, marked.
    gates.sort_by(|(a, _, a_old), (b, _, b_old)| {
        (a_old, dist_label(a), &a.file, a.line, a.column).cmp(&(
            b_old,
            dist_label(b),
            &b.file,
            b.line,
            b.column,
        ))
    });
    let title = format!(
        "{heading} ({}): {}",
        count_label(&gates, options),
        kind.short()
    );
    let _ = writeln!(out, "\n{}", palette.paint(code, &elide(&title, width)));
    for (gate, hits, old) in gates {
        let targets: Vec<String> = hits
            .iter()
            .map(|(i, _)| report.targets[*i].to_string())
            .collect();
        let location = match &gate.function {
            Some(f) => format!("{}:{} in {f}", gate.file, gate.line),
            None => format!("{}:{}", gate.file, gate.line),
        };
        let mark = if old { "(in the baseline)  " } else { "" };
        let head = format!("{mark}{}  {location}", dist_label(gate));
        let _ = writeln!(out, "  {}", palette.paint("36", &elide(&head, width - 2)));
        if report.targets.len() > 1 {
            let at = format!("at      {}", targets.join(", "));
            let _ = writeln!(out, "    {}", elide(&at, width - 4));
        }
        let text = format!("gate    {}", collapse_whitespace(&gate.text));
        let _ = writeln!(out, "    {}", elide(&text, width - 4));
        // One chain per distinct chain; the first target of each names it.
        let mut chains: Vec<(Vec<String>, Vec<usize>)> = Vec::new();
        for (i, verdict) in &hits {
            let target = report.targets[*i].to_string();
            let normal: Vec<String> = verdict
                .evidence
                .iter()
                .map(|e| e.replace(&target, "\u{0}"))
                .collect();
            match chains.iter_mut().find(|(c, _)| *c == normal) {
                Some((_, targets)) => targets.push(*i),
                None => chains.push((normal, vec![*i])),
            }
        }
        let several = chains.len() > 1;
        for (_, target_indices) in &chains {
            let first = target_indices[0];
            let verdict = hits
                .iter()
                .find(|(i, _)| *i == first)
                .map(|(_, v)| *v)
                .expect("the chain's first target is a hit");
            let (lead, rest) = if several {
                let names: Vec<String> = target_indices
                    .iter()
                    .map(|i| report.targets[*i].to_string())
                    .collect();
                (format!("at {}: ", names.join(", ")), "          ")
            } else {
                (String::new(), "          ")
            };
            for (n, line) in verdict.evidence.iter().enumerate() {
                let label = if n == 0 {
                    format!("{lead}why     ")
                } else {
                    "        ".to_string()
                };
                wrap_into(out, "    ", rest, &label, line, width);
            }
        }
        if kind == VerdictKind::Opportunity {
            let matching = matching_patches(report, options, gate, &hits);
            if matching.is_empty() {
                let _ = writeln!(
                    out,
                    "    {}",
                    elide(
                        "fix     no shipped patch edits this file for this version",
                        width - 4
                    )
                );
            }
            for patch in matching {
                let target = note_patch_used(report, patch, &hits, patches_used);
                let line = format!(
                    "patch {}: gatefix apply {target} --dry-run --patch {}",
                    patch.id, patch.id
                );
                wrap_into(out, "    ", "          ", "fix     ", &line, width);
            }
        }
    }
}

/// The shipped patches that edit a finding's file for one of the targets it holds at.
fn matching_patches<'p>(
    report: &AuditReport,
    options: &'p HumanOptions,
    gate: &Gate,
    hits: &[(usize, &Verdict)],
) -> Vec<&'p PatchHint> {
    options
        .patches
        .iter()
        .filter(|p| {
            p.files.contains(&gate.file)
                && hits
                    .iter()
                    .any(|(i, _)| p.targets.contains(&report.targets[*i].plain()))
        })
        .collect()
}

/// Records that `patch` is offered (for the `next:` line); returns the target it opens.
fn note_patch_used<'p>(
    report: &AuditReport,
    patch: &'p PatchHint,
    hits: &[(usize, &Verdict)],
    patches_used: &mut Vec<(Arch, &'p str)>,
) -> Arch {
    let target = hits
        .iter()
        .map(|(i, _)| report.targets[*i].plain())
        .find(|t| patch.targets.contains(t))
        .expect("filtered on a shared target");
    if !patches_used
        .iter()
        .any(|(t, id)| *t == target && *id == patch.id)
    {
        patches_used.push((target, &patch.id));
    }
    target
}

/// A gate with a finding: the targets (index, verdict) it holds at, and whether the baseline
/// accepts it everywhere it holds (an old finding).
type FindingRow<'r> = (&'r Gate, Vec<(usize, &'r Verdict)>, bool);

/// The gates with a verdict of `kind` at some target, as [`FindingRow`]s.
fn gates_with<'r>(
    report: &AuditReport<'r>,
    verdicts: &'r crate::verdict::Verdicts,
    kind: VerdictKind,
    accepted: Option<&std::collections::HashSet<(usize, usize)>>,
) -> Vec<FindingRow<'r>> {
    report
        .result
        .gates
        .iter()
        .zip(verdicts)
        .enumerate()
        .filter_map(|(gate_index, (gate, per_target))| {
            let hits: Vec<(usize, &Verdict)> = per_target
                .iter()
                .enumerate()
                .take(report.targets.len())
                .filter(|(_, v)| v.kind == kind)
                .collect();
            let old = accepted.is_some_and(|accepted| {
                hits.iter()
                    .all(|(target, _)| accepted.contains(&(gate_index, *target)))
            });
            (!hits.is_empty()).then_some((gate, hits, old))
        })
        .collect()
}

/// `3`, or with a baseline `1 new, 2 in the baseline`.
fn count_label<T>(gates: &[(&Gate, T, bool)], options: &HumanOptions) -> String {
    if options.accepted.is_none() {
        return gates.len().to_string();
    }
    let old = gates.iter().filter(|(_, _, old)| *old).count();
    format!("{} new, {old} in the baseline", gates.len() - old)
}

/// The kernel a finding's evidence says it needs (`JIT generator flashinfer.jit.comm:...`)
/// and what became of it (`MISSING at sm_120`). A chain that follows several paths names a
/// kernel per path: a trap or wall is told by the first one missing at the target (or by a
/// layer underneath that fails, `L4 host checks no: ...`), an opportunity by the first one
/// present. Without a kernel named, the first line of the evidence.
fn kernel_and_reason(verdict: &Verdict, kind: VerdictKind) -> (String, String) {
    let needs: Vec<(&str, &str)> = verdict
        .evidence
        .iter()
        .filter_map(|line| line.strip_prefix("needs ")?.split_once(": "))
        .collect();
    let blocked = |state: &str| !state.starts_with("present");
    let wanted = needs.iter().find(|(_, state)| match kind {
        VerdictKind::Opportunity | VerdictKind::Open => !blocked(state),
        _ => blocked(state),
    });
    if let Some((kernel, state)) = wanted {
        return (kernel.to_string(), state.to_string());
    }
    let failing_layer = verdict.evidence.iter().find(|line| {
        line.starts_with('L')
            && line
                .split_once(':')
                .is_some_and(|(head, _)| head.ends_with(" no"))
    });
    match (needs.first(), failing_layer) {
        (Some((kernel, _)), Some(layer)) => (kernel.to_string(), layer.clone()),
        (Some((kernel, state)), None) => (kernel.to_string(), state.to_string()),
        (None, _) => {
            let first = verdict.evidence.first().cloned().unwrap_or_default();
            ("no kernel named in the evidence".to_string(), first)
        }
    }
}

/// A tool's build or example script rather than a runtime module (`aot.py`, `setup.py`,
/// `build_*.py`, files under `examples/`, `tests/`, `benchmarks/`, `scripts/`, a `data/`
/// copy of sources): such findings are listed after the runtime ones.
fn is_tooling(file: &str) -> bool {
    let parts: Vec<&str> = file.split('/').collect();
    let (name, folders) = parts.split_last().unwrap_or((&"", &[]));
    let stem = name.strip_suffix(".py").unwrap_or(name);
    matches!(stem, "aot" | "setup" | "conftest")
        || stem.starts_with("build_")
        || stem.ends_with("_build")
        || folders.iter().any(|f| {
            matches!(
                *f,
                "examples"
                    | "example"
                    | "tests"
                    | "test"
                    | "benchmarks"
                    | "benchmark"
                    | "scripts"
                    | "data"
            )
        })
}

/// One line per finding of `kind`, grouped by package and by the kernel it needs, runtime
/// modules before tooling; past `budget` lines, how many more and where to see them.
#[allow(clippy::too_many_arguments)]
fn brief_findings<'p>(
    report: &AuditReport,
    verdicts: &crate::verdict::Verdicts,
    kind: VerdictKind,
    (heading, code): (&str, &str),
    budget: usize,
    options: &'p HumanOptions,
    width: usize,
    palette: &Palette,
    patches_used: &mut Vec<(Arch, &'p str)>,
    out: &mut String,
) {
    let all = gates_with(report, verdicts, kind, options.accepted.as_ref());
    if all.is_empty() {
        return;
    }
    let title = format!(
        "{heading} ({}): {}",
        count_label(&all, options),
        kind.short()
    );
    let _ = writeln!(out, "\n{}", palette.paint(code, &elide(&title, width)));
    // With a baseline the brief report lists what is new: the accepted ones are counted.
    let gates: Vec<(&Gate, Vec<(usize, &Verdict)>)> = all
        .into_iter()
        .filter(|(_, _, old)| !old)
        .map(|(gate, hits, _)| (gate, hits))
        .collect();
    // (tooling, package, kernel) → the findings under it.
    type Group<'g> = ((bool, String, String), Vec<String>);
    let mut groups: Vec<Group> = Vec::new();
    let mut rows: Vec<(&Gate, Vec<(usize, &Verdict)>)> = gates;
    rows.sort_by(|(a, _), (b, _)| {
        (is_tooling(&a.file), dist_label(a), &a.file, a.line).cmp(&(
            is_tooling(&b.file),
            dist_label(b),
            &b.file,
            b.line,
        ))
    });
    for (gate, hits) in &rows {
        let (kernel, reason) = kernel_and_reason(hits[0].1, kind);
        // The fix and the targets before the reason: an elided line keeps them.
        let mut line = format!("{}:{}  ", gate.file, gate.line);
        if kind == VerdictKind::Opportunity {
            let fixes: Vec<&str> = matching_patches(report, options, gate, hits)
                .into_iter()
                .map(|patch| {
                    note_patch_used(report, patch, hits, patches_used);
                    patch.id.as_str()
                })
                .collect();
            if !fixes.is_empty() {
                line.push_str(&format!("fix: {}; ", fixes.join(", ")));
            }
        }
        if report.targets.len() > 1 && hits.len() < report.targets.len() {
            let at: Vec<String> = hits
                .iter()
                .map(|(i, _)| report.targets[*i].to_string())
                .collect();
            line.push_str(&format!("at {}: ", at.join(", ")));
        }
        line.push_str(&reason);
        let key = (is_tooling(&gate.file), dist_label(gate), kernel);
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, lines)) => lines.push(line),
            None => groups.push((key, vec![line])),
        }
    }
    // Every package gets a turn before any gets a second group (a site's largest package
    // would otherwise fill the screen), runtime modules before tooling.
    let mut order: Vec<(bool, usize, String, usize)> = groups
        .iter()
        .enumerate()
        .map(|(index, ((tooling, dist, _), _))| {
            let nth = groups[..index]
                .iter()
                .filter(|((t, d, _), _)| t == tooling && d == dist)
                .count();
            (*tooling, nth, dist.clone(), index)
        })
        .collect();
    order.sort();
    let mut used = 0;
    let mut shown = 0;
    let total = rows.len();
    for (_, _, _, index) in order {
        let ((tooling, dist, kernel), lines) = &groups[index];
        if used + 2 > budget {
            break;
        }
        // The tag before the kernel's name, which elision may cut.
        let tag = if *tooling {
            " (build or example script)"
        } else {
            ""
        };
        let head = if kernel.starts_with("no kernel named") {
            format!("{dist}{tag}  ({kernel})")
        } else {
            format!("{dist}{tag}  needs {kernel}")
        };
        let _ = writeln!(out, "  {}", palette.paint("36", &elide(&head, width - 2)));
        used += 1;
        for (n, line) in lines.iter().enumerate() {
            if used >= budget {
                break;
            }
            // A few per group: the rest of a group is one line.
            if n == MAX_BRIEF_PER_GROUP && lines.len() > MAX_BRIEF_PER_GROUP + 1 {
                let rest = format!("+{} more here", lines.len() - n);
                let _ = writeln!(out, "    {}", elide(&rest, width - 4));
                used += 1;
                break;
            }
            let _ = writeln!(out, "    {}", elide(line, width - 4));
            used += 1;
            shown += 1;
        }
    }
    if shown < total {
        let more = format!(
            "… and {} more: --show findings (or --format json)",
            total - shown
        );
        let _ = writeln!(out, "    {}", elide(&more, width - 4));
    }
}

/// `gatefix show GATE-ID`: the gates named, whole: where, the code, what it admits at each
/// target and why, and the verdict with its evidence chain.
pub fn render_gates(report: &AuditReport, indices: &[usize], options: &HumanOptions) -> String {
    let width = options.width.max(MIN_WIDTH);
    let palette = Palette { on: options.color };
    let mut out = String::new();
    for (n, &index) in indices.iter().enumerate() {
        if n > 0 {
            out.push('\n');
        }
        let gate = &report.result.gates[index];
        let location = match &gate.function {
            Some(f) => format!("{}:{}:{} in {f}", gate.file, gate.line, gate.column),
            None => format!("{}:{}:{}", gate.file, gate.line, gate.column),
        };
        let head = format!("gate {}  {}  {location}", gate.id, dist_label(gate));
        let _ = writeln!(out, "{}", palette.paint("1", &elide(&head, width)));
        let form = format!("form    {}", gate.form.name());
        let _ = writeln!(out, "  {}", elide(&form, width - 2));
        let text = collapse_whitespace(&gate.text);
        wrap_into(&mut out, "  ", "          ", "gate    ", &text, width);
        wrap_into(
            &mut out,
            "  ",
            "          ",
            "means   ",
            &gate.predicate.to_string(),
            width,
        );
        if let Some(assumes) = &gate.assumes {
            wrap_into(&mut out, "  ", "          ", "assumes ", assumes, width);
        }
        for (i, target) in report.targets.iter().enumerate() {
            let admits = match evaluate_at(report, gate, i) {
                Admits::Yes => "yes".to_string(),
                Admits::No => "no".to_string(),
                Admits::Unknown(why) => format!("unknown ({})", why.join("; ")),
            };
            let line = format!("{target}: admits {admits}");
            wrap_into(&mut out, "  ", "          ", "", &line, width);
            let Some(verdict) = report.verdicts.and_then(|v| v[index].get(i)) else {
                continue;
            };
            let line = format!("verdict {}: {}", verdict.kind.name(), verdict.kind.short());
            wrap_into(&mut out, "    ", "          ", "", &line, width);
            for line in &verdict.evidence {
                wrap_into(&mut out, "    ", "          ", "  ", line, width);
            }
        }
    }
    out
}

/// What to run next, from what was found.
fn next_steps(
    report: &AuditReport,
    options: &HumanOptions,
    patches_used: &[(Arch, &str)],
    width: usize,
    palette: &Palette,
    out: &mut String,
) {
    out.push('\n');
    let label = palette.paint("1", "next: ");
    let Some(verdicts) = report.verdicts else {
        wrap_into(
            out,
            "",
            "      ",
            &label,
            "verdicts were not computed (--no-verdicts); run without it to see traps, \
             opportunities and walls",
            width,
        );
        return;
    };
    let any = |kind: VerdictKind| verdicts.iter().flatten().any(|v| v.kind == kind);
    let mut lines = Vec::new();
    let mut targets: Vec<Arch> = patches_used.iter().map(|(t, _)| *t).collect();
    targets.dedup();
    for target in targets {
        let ids: Vec<&str> = patches_used
            .iter()
            .filter(|(t, _)| *t == target)
            .map(|(_, id)| *id)
            .collect();
        lines.push(format!(
            "gatefix apply {target} --dry-run   (shows the diffs of {} and the kernel under each; \
             writes nothing)",
            ids.join(", ")
        ));
    }
    if any(VerdictKind::Opportunity) && patches_used.is_empty() {
        lines.push(
            "no shipped patch opens these opportunities at this site's versions; each one \
             names the gate to open"
                .to_string(),
        );
    }
    if any(VerdictKind::Trap) {
        lines.push(
            "a trap crashes at run time on that GPU: keep off the path its evidence names \
             (the backend or flag) until a kernel exists"
                .to_string(),
        );
    }
    if lines.is_empty() {
        lines.push("nothing to do: no trap and no opportunity at these targets".to_string());
    }
    for (n, line) in lines.iter().enumerate() {
        let lead = if n == 0 {
            label.clone()
        } else {
            "      ".to_string()
        };
        wrap_into(out, "", "      ", &lead, line, width);
    }
    let any_finding =
        any(VerdictKind::Trap) || any(VerdictKind::Opportunity) || any(VerdictKind::Wall);
    if options.layout == Layout::Brief && any_finding {
        wrap_into(
            out,
            "",
            "      ",
            "      ",
            "the evidence of each finding: --show findings (one gate: gatefix show GATE-ID)",
            width,
        );
    }
    if options.layout != Layout::All {
        let unverified = verdicts
            .iter()
            .filter(|v| v.iter().any(|v| v.kind == VerdictKind::Unverified))
            .count();
        let line = format!(
            "every gate ({} unverified): --show all; everything, untruncated: --format json",
            unverified
        );
        wrap_into(out, "", "      ", "      ", &line, width);
    }
}

/// The full listing: every gate by distribution and file, its predicate and admissions.
fn every_gate(report: &AuditReport, width: usize, palette: &Palette, out: &mut String) {
    let mut current_dist: Option<String> = None;
    let mut current_file: Option<&str> = None;
    let mut gates: Vec<_> = report.result.gates.iter().enumerate().collect();
    gates.sort_by(|(_, a), (_, b)| {
        (dist_label(a), &a.file, a.line).cmp(&(dist_label(b), &b.file, b.line))
    });
    let _ = writeln!(out, "\n{}", palette.paint("1", "EVERY GATE"));
    for (index, gate) in gates {
        let dist = dist_label(gate);
        if current_dist.as_deref() != Some(dist.as_str()) {
            let _ = writeln!(out, "{}", palette.paint("1", &elide(&dist, width)));
            current_dist = Some(dist);
            current_file = None;
        }
        if current_file != Some(gate.file.as_str()) {
            let _ = writeln!(
                out,
                "  {}",
                palette.paint("36", &elide(&gate.file, width - 2))
            );
            current_file = Some(&gate.file);
        }
        let location = match &gate.function {
            Some(f) => format!(
                "{}:{} in {f}  [{}]",
                gate.line,
                gate.column,
                gate.form.name()
            ),
            None => format!("{}:{}  [{}]", gate.line, gate.column, gate.form.name()),
        };
        let _ = writeln!(out, "    {}", elide(&location, width - 4));
        let gate_line = format!("gate:  {}", collapse_whitespace(&gate.text));
        let _ = writeln!(out, "      {}", elide(&gate_line, width - 6));
        let means = format!("means: {}", gate.predicate);
        let _ = writeln!(out, "      {}", elide(&means, width - 6));
        let mut parts = Vec::new();
        for (target, admits) in report.targets.iter().zip(report.admits(gate)) {
            let code = match admits {
                Admits::Yes => "32",
                Admits::No => "31",
                Admits::Unknown(_) => "33",
            };
            let word = palette.paint(code, admits.word());
            match admits {
                Admits::Unknown(why) => parts.push(format!("{target} {word} ({})", why.join("; "))),
                _ => parts.push(format!("{target} {word}")),
            }
        }
        wrap_into(
            out,
            "      ",
            "        ",
            "admits: ",
            &parts.join(", "),
            width,
        );
        if let Some(verdicts) = report.verdicts.and_then(|v| v.get(index)) {
            let words: Vec<String> = report
                .targets
                .iter()
                .zip(verdicts)
                .map(|(t, v)| format!("{t} {}", v.kind.name()))
                .collect();
            let line = format!("verdict: {}", words.join(", "));
            let _ = writeln!(out, "      {}", elide(&line, width - 6));
        }
    }
}

fn dist_label(gate: &Gate) -> String {
    match (&gate.dist, &gate.dist_version) {
        (Some(name), Some(version)) => format!("{name} {version}"),
        (Some(name), None) => name.clone(),
        _ => "(files outside any distribution)".to_string(),
    }
}

/// Columns a line takes on screen: characters outside colour escapes.
fn visible_len(text: &str) -> usize {
    let mut n = 0;
    let mut in_escape = false;
    for c in text.chars() {
        match (in_escape, c) {
            (false, '\x1b') => in_escape = true,
            (true, 'm') => in_escape = false,
            (true, _) => {}
            (false, _) => n += 1,
        }
    }
    n
}

/// `text` cut to `max` columns, the last one `…` when something was cut.
pub fn elide(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut cut: String = text.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// Writes `indent` + `label` + `text`, wrapped at spaces so no line is wider than `width`;
/// continuation lines start with `indent` + `hang`. A word too long for a line is elided.
fn wrap_into(out: &mut String, indent: &str, hang: &str, label: &str, text: &str, width: usize) {
    let first = format!("{indent}{label}");
    let rest = format!("{indent}{hang}");
    let mut line = first.clone();
    let mut line_len = visible_len(&first);
    let mut empty = true;
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        let word_len = word.chars().count();
        if !empty && line_len + 1 + word_len > width {
            let _ = writeln!(out, "{line}");
            line = rest.clone();
            line_len = visible_len(&rest);
            empty = true;
        }
        let room = width.saturating_sub(line_len + usize::from(!empty));
        let word = if word_len > room {
            elide(word, room.max(1))
        } else {
            word.to_string()
        };
        if !empty {
            line.push(' ');
            line_len += 1;
        }
        line_len += word.chars().count();
        line.push_str(&word);
        empty = false;
    }
    let _ = writeln!(out, "{line}");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::sarif::fixture::{Fixture, SM100, SM120, gate};
    use crate::verdict::VerdictKind::{Open, Opportunity, Trap, Wall};

    fn brief(fixture: &Fixture, layout: Layout) -> String {
        render(
            &fixture.report(),
            &HumanOptions {
                color: false,
                width: 100,
                layout,
                accepted: None,
                patches: Vec::new(),
            },
        )
    }

    #[test]
    fn the_brief_layout_gives_a_finding_one_line_grouped_by_package_and_kernel() {
        let mut f = Fixture::new(&[SM120, SM100]);
        for line in [10, 20] {
            f.add(
                gate("sglang", "sglang/srt/a.py", line, "is_sm100()"),
                &[Trap, Open],
            );
        }
        f.add(
            gate("flashinfer-python", "flashinfer/aot.py", 5, "has_sm100"),
            &[Trap, Open],
        );
        f.add(
            gate("flashinfer-python", "flashinfer/b.py", 7, "is_sm100()"),
            &[Wall, Wall],
        );
        f.verdicts[0][0].evidence = vec![
            "admits sm_120: yes (sm >= 100)".into(),
            "needs JIT generator flashinfer.jit.x:gen: MISSING at sm_120".into(),
        ];
        let text = brief(&f, Layout::Brief);
        let lines: Vec<&str> = text.lines().collect();
        let at = |needle: &str| {
            lines
                .iter()
                .position(|l| l.contains(needle))
                .unwrap_or_else(|| panic!("`{needle}` in\n{text}"))
        };
        // The runtime module before the build script, each finding on one line.
        assert!(at("sglang/srt/a.py:10  at sm_120: MISSING at sm_120") < at("flashinfer/aot.py:5"));
        assert!(
            text.contains("sglang 0.5.0  (no kernel named in the evidence)"),
            "{text}"
        );
        assert!(at("needs JIT generator flashinfer.jit.x:gen") < at("sglang/srt/a.py:10"));
        assert!(text.contains("(build or example script)"), "{text}");
        // Both targets are findings only at sm_120: the line says so.
        assert!(
            text.contains("sglang/srt/a.py:20  at sm_120: trap evidence"),
            "{text}"
        );
        // No evidence chain past the first line, and the way to it.
        assert!(!text.contains("second"), "{text}");
        assert!(text.contains("--show findings"), "{text}");
        assert!(!brief(&f, Layout::Findings).contains("(build or example script)"));
        assert!(brief(&f, Layout::Findings).contains("second"));
    }

    #[test]
    fn the_brief_layout_stops_at_its_budget_and_says_how_many_more() {
        let mut f = Fixture::new(&[SM120]);
        for line in 1..=40 {
            let file = format!("sglang/srt/m{line}.py");
            f.add(gate("sglang", &file, line, "is_sm100()"), &[Opportunity]);
        }
        let text = brief(&f, Layout::Brief);
        // One group: three findings, the rest of the group on one line, then the count.
        assert!(text.contains("+37 more here"), "{text}");
        assert!(text.contains("… and 37 more: --show findings"), "{text}");
        assert!(text.lines().count() < 30, "{text}");
        // Quiet: the summary alone.
        let quiet = brief(&f, Layout::Quiet);
        assert!(quiet.contains("40 opportunities"), "{quiet}");
        assert!(!quiet.contains("OPPORTUNITIES"), "{quiet}");
        assert!(!quiet.contains("next:"), "{quiet}");
    }

    #[test]
    fn with_a_baseline_the_new_findings_come_first_and_the_old_are_counted() {
        let mut f = Fixture::new(&[SM120]);
        f.add(gate("sglang", "sglang/a.py", 1, "is_sm100()"), &[Trap]);
        f.add(gate("sglang", "sglang/b.py", 2, "is_sm100()"), &[Trap]);
        f.add(gate("sglang", "sglang/c.py", 3, "is_sm100()"), &[Trap]);
        let options = |layout| HumanOptions {
            color: false,
            width: 100,
            layout,
            // a.py and b.py are in the baseline; c.py is new.
            accepted: Some([(0, 0), (1, 0)].into_iter().collect()),
            patches: Vec::new(),
        };
        let brief = render(&f.report(), &options(Layout::Brief));
        assert!(
            brief.contains("TRAPS (1 new, 2 in the baseline)"),
            "{brief}"
        );
        assert!(brief.contains("sglang/c.py:3"), "{brief}");
        assert!(
            !brief.contains("sglang/a.py") && !brief.contains("sglang/b.py"),
            "{brief}"
        );
        let findings = render(&f.report(), &options(Layout::Findings));
        let at = |needle: &str| findings.find(needle).unwrap_or_else(|| panic!("{needle}"));
        assert!(at("sglang/c.py:3") < at("sglang/a.py:1"), "{findings}");
        assert!(
            findings.contains("(in the baseline)  sglang 0.5.0  sglang/a.py:1"),
            "{findings}"
        );
        assert!(!findings.contains("(in the baseline)  sglang 0.5.0  sglang/c.py"));
    }

    #[test]
    fn a_finding_is_told_by_the_kernel_that_decides_it() {
        let verdict = |lines: &[&str]| Verdict {
            kind: Trap,
            evidence: lines.iter().map(|l| l.to_string()).collect(),
            kernels: Vec::new(),
        };
        let two_paths = verdict(&[
            "admits sm_120: yes (major >= 9)",
            "needs JIT generator a:gen_a: present at sm_120 (jit)",
            "needs JIT generator b:gen_b: MISSING at sm_120",
        ]);
        assert_eq!(
            kernel_and_reason(&two_paths, Trap),
            ("JIT generator b:gen_b".into(), "MISSING at sm_120".into())
        );
        assert_eq!(
            kernel_and_reason(&two_paths, Opportunity),
            (
                "JIT generator a:gen_a".into(),
                "present at sm_120 (jit)".into()
            )
        );
        let layer = verdict(&[
            "needs JIT generator c:gen_c: present at sm_120 (jit)",
            "L3 device guards yes: 1 kernels",
            "L4 host checks no: 3 host checks on the SM fail at sm_120",
        ]);
        assert_eq!(
            kernel_and_reason(&layer, Wall).1,
            "L4 host checks no: 3 host checks on the SM fail at sm_120"
        );
    }

    #[test]
    fn build_and_example_scripts_are_told_apart_from_runtime_modules() {
        for file in [
            "flashinfer/aot.py",
            "pkg/setup.py",
            "pkg/build_ext.py",
            "pkg/examples/run.py",
            "flashinfer/data/cutlass/x.py",
        ] {
            assert!(is_tooling(file), "{file}");
        }
        for file in [
            "sglang/srt/layers/communicator.py",
            "pkg/testing_utils.py",
            "pkg/database.py",
        ] {
            assert!(!is_tooling(file), "{file}");
        }
    }

    #[test]
    fn colour_follows_the_conventions() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert!(color_wanted("auto", true, &env(&[])));
        assert!(!color_wanted("auto", false, &env(&[])));
        assert!(!color_wanted("auto", true, &env(&[("NO_COLOR", "1")])));
        // An empty NO_COLOR does not count.
        assert!(color_wanted("auto", true, &env(&[("NO_COLOR", "")])));
        assert!(!color_wanted("auto", true, &env(&[("TERM", "dumb")])));
        assert!(color_wanted(
            "auto",
            false,
            &env(&[("CLICOLOR_FORCE", "1")])
        ));
        assert!(!color_wanted(
            "auto",
            false,
            &env(&[("CLICOLOR_FORCE", "0")])
        ));
        assert!(!color_wanted(
            "auto",
            true,
            &env(&[("NO_COLOR", "1"), ("CLICOLOR_FORCE", "1")])
        ));
        assert!(color_wanted("always", false, &env(&[("NO_COLOR", "1")])));
        assert!(!color_wanted(
            "never",
            true,
            &env(&[("CLICOLOR_FORCE", "1")])
        ));
    }

    #[test]
    fn wrapping_keeps_every_line_within_the_width() {
        let mut out = String::new();
        let text = "needs JIT generator flashinfer.jit.comm:gen_trtllm_comm_module_with_a_very_long_name_indeed: present at sm_120 (jit)";
        wrap_into(&mut out, "    ", "      ", "why     ", text, 40);
        assert!(out.lines().all(|l| l.chars().count() <= 40), "{out}");
        assert!(out.contains("present at sm_120"), "{out}");
        assert!(out.contains('…'), "the long word is elided: {out}");
        assert_eq!(elide("abcdef", 4), "abc…");
        assert_eq!(elide("abc", 4), "abc");
        assert_eq!(visible_len("\x1b[1;31mab\x1b[0m"), 2);
    }
}
