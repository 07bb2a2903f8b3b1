//! Printing apply plans: one block per patch with its decision, the gates it anchors on and
//! the kernel evidence; unified diffs for `--dry-run`.

use std::fmt::Write;

use similar::TextDiff;

use crate::arch::Arch;
use crate::kernel::query::Answer;
use crate::patch::plan::{Decision, PatchPlan, Plan};
use crate::patch::synth::Outcome;

/// The decision on every patch, with its evidence.
pub fn plan(plan: &Plan, target: Arch) -> String {
    let mut out = String::new();
    for patch in &plan.patches {
        let dist = match &patch.dist_version {
            Some(v) => format!("{} {v}", patch.patch.dist),
            None => patch.patch.dist.clone(),
        };
        let verdict = match &patch.decision {
            Decision::NotForSite(why) => format!("not for this site: {why}"),
            Decision::NotApplicable(why) => format!("NOT APPLICABLE: {why}"),
            Decision::AlreadyApplied => "already applied".into(),
            Decision::Refused(_) => format!("REFUSED: no kernel for {target}"),
            Decision::Ready { verified: true } if patch.patch.synth.is_some() => {
                "ready: checked by re-resolving the site".into()
            }
            Decision::Ready { verified: true } if patch.patch.requires.is_empty() => {
                "ready (the patch names no kernel requirement)".into()
            }
            Decision::Ready { verified: true } => "ready: kernel present".into(),
            Decision::Ready { verified: false } => {
                "ready, UNVERIFIED (--force-unverified): no kernel proven".into()
            }
        };
        let _ = writeln!(
            out,
            "{} ({dist}): {verdict} [{} fix]",
            patch.patch.id,
            patch.patch.class.word()
        );
        if matches!(patch.decision, Decision::NotForSite(_)) {
            continue;
        }
        let _ = writeln!(out, "  {}", patch.patch.summary);
        for line in synth_lines(patch) {
            let _ = writeln!(out, "  {line}");
        }
        for (file, hit) in &patch.hits {
            let _ = writeln!(out, "  gate    {file}:{}  {}", hit.line, hit.text);
        }
        for alt in &patch.alternatives {
            let _ = writeln!(
                out,
                "  instead {} needs no edit of {} (read at {}): {}",
                alt.switch, alt.instead_of, alt.read_at, alt.says
            );
        }
        if let Decision::Refused(lines) = &patch.decision {
            // The refusal lines carry the evidence of the missing kernels themselves.
            for (i, line) in lines.iter().enumerate() {
                let lead = if i == 0 { "refused" } else { "       " };
                let _ = writeln!(out, "  {lead} {line}");
            }
            let _ = writeln!(
                out,
                "  (the gate stays closed; --force-unverified would open it anyway)"
            );
        } else {
            for line in kernel_lines(patch) {
                let _ = writeln!(out, "  {line}");
            }
        }
    }
    out
}

fn kernel_lines(patch: &PatchPlan) -> Vec<String> {
    let mut lines = Vec::new();
    for check in &patch.kernels {
        let needs = check.requirement.words();
        match &check.answer {
            Answer::Covered { how, evidence } => {
                lines.push(format!("kernel  {needs}: present ({how})"));
                lines.extend(evidence.iter().map(|e| format!("          {e}")));
            }
            Answer::NotCovered { evidence } => {
                lines.push(format!("kernel  {needs}: MISSING"));
                lines.extend(evidence.iter().map(|e| format!("          {e}")));
            }
            Answer::Unknown { why } => lines.push(format!("kernel  {needs}: unknown ({why})")),
        }
    }
    lines
}

/// A synthesized fix's origin: the gate, its predicate before and after, the kernel evidence.
fn synth_lines(patch: &PatchPlan) -> Vec<String> {
    let Some(info) = &patch.patch.synth else {
        return Vec::new();
    };
    let mut lines = vec![
        format!(
            "unsafe  synthesized from gate {} ({})",
            info.gate_id, info.mode
        ),
        format!("before  {}", info.before),
        format!("after   {}", info.after),
    ];
    lines.extend(info.evidence.iter().map(|e| format!("kernel  {e}")));
    lines
}

/// The gates asked for that got no fix, and why.
pub fn no_fixes(outcomes: &[Outcome]) -> String {
    let mut out = String::new();
    for outcome in outcomes {
        if let Err(why) = &outcome.fix {
            let gate = &outcome.gate;
            let _ = writeln!(
                out,
                "gate {} {}:{} ({}, {}): no fix: {why}",
                gate.id,
                gate.file,
                gate.line,
                gate.form.name(),
                outcome.mode.word()
            );
        }
    }
    out
}

/// Unified diffs of every file a ready patch changes, paths relative to the site root.
pub fn diffs(plan: &Plan) -> String {
    let mut out = String::new();
    for file in &plan.files {
        let old = String::from_utf8_lossy(&file.old);
        let new = String::from_utf8_lossy(&file.new);
        let diff = TextDiff::from_lines(old.as_ref(), new.as_ref());
        let _ = write!(
            out,
            "{}",
            diff.unified_diff()
                .context_radius(3)
                .header(&format!("a/{}", file.path), &format!("b/{}", file.path))
        );
    }
    out
}

/// The evidence paragraph of a ledger commit.
pub fn evidence_body(ready: &[&PatchPlan]) -> String {
    let mut out = String::new();
    for patch in ready {
        let _ = writeln!(
            out,
            "{} [{}]: {}",
            patch.patch.id,
            patch.patch.class.word(),
            patch.patch.summary
        );
        for line in synth_lines(patch) {
            let _ = writeln!(out, "  {line}");
        }
        for (file, hit) in &patch.hits {
            let _ = writeln!(out, "  gate {file}:{} {}", hit.line, hit.text);
        }
        for line in kernel_lines(patch) {
            let _ = writeln!(out, "  {line}");
        }
    }
    out
}
