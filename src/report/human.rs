//! `--format human`: gates grouped by distribution and file, evaluations per target, and a
//! closing summary. Colour only when stdout is a terminal.

use std::fmt::Write;

use super::AuditReport;
use crate::gate::predicate::{Admits, collapse_whitespace};
use crate::verdict::VerdictKind;

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

pub fn render(report: &AuditReport, color: bool) -> String {
    let palette = Palette { on: color };
    let mut out = String::new();
    let mut current_dist: Option<String> = None;
    let mut current_file: Option<&str> = None;
    let mut counts = vec![[0usize; 3]; report.targets.len()];
    leading_findings(report, &palette, &mut out);
    let mut gates: Vec<_> = report.result.gates.iter().enumerate().collect();
    gates.sort_by(|(_, a), (_, b)| {
        (dist_label(a), &a.file, a.line).cmp(&(dist_label(b), &b.file, b.line))
    });
    for (index, gate) in gates {
        let dist = dist_label(gate);
        if current_dist.as_deref() != Some(dist.as_str()) {
            let _ = writeln!(out, "\n{}", palette.paint("1", &dist));
            current_dist = Some(dist);
            current_file = None;
        }
        if current_file != Some(gate.file.as_str()) {
            let _ = writeln!(out, "  {}", palette.paint("36", &gate.file));
            current_file = Some(&gate.file);
        }
        let location = match &gate.function {
            Some(f) => format!("{}:{} in {f}", gate.line, gate.column),
            None => format!("{}:{}", gate.line, gate.column),
        };
        let _ = writeln!(out, "    {location}  [{}]", gate.form.name());
        let _ = writeln!(
            out,
            "      gate:  {}",
            shorten(&collapse_whitespace(&gate.text), 160)
        );
        let _ = writeln!(
            out,
            "      means: {}",
            shorten(&gate.predicate.to_string(), 200)
        );
        let mut parts = Vec::new();
        for (i, (target, admits)) in report.targets.iter().zip(report.admits(gate)).enumerate() {
            let (code, slot) = match admits {
                Admits::Yes => ("32", 0),
                Admits::No => ("31", 1),
                Admits::Unknown(_) => ("33", 2),
            };
            counts[i][slot] += 1;
            let word = palette.paint(code, admits.word());
            match admits {
                Admits::Unknown(why) => parts.push(format!("{target} {word} ({})", why.join("; "))),
                _ => parts.push(format!("{target} {word}")),
            }
        }
        let _ = writeln!(out, "      admits: {}", parts.join(", "));
        if let Some(verdicts) = report.verdicts.and_then(|v| v.get(index)) {
            let words: Vec<String> = report
                .targets
                .iter()
                .zip(verdicts)
                .map(|(t, v)| format!("{t} {}", v.kind.name()))
                .collect();
            let _ = writeln!(out, "      verdict: {}", words.join(", "));
        }
    }
    summary(report, &counts, &mut out);
    out
}

/// Traps, opportunities and walls first, each with its evidence chain: what a reader acts on.
fn leading_findings(report: &AuditReport, palette: &Palette, out: &mut String) {
    let Some(verdicts) = report.verdicts else {
        return;
    };
    for (kind, code) in [
        (VerdictKind::Trap, "1;31"),
        (VerdictKind::Opportunity, "1;32"),
        (VerdictKind::Wall, "1;33"),
    ] {
        let mut lines = Vec::new();
        for (gate, per_target) in report.result.gates.iter().zip(verdicts) {
            for (target, verdict) in report.targets.iter().zip(per_target) {
                if verdict.kind != kind {
                    continue;
                }
                lines.push(format!(
                    "  {target}  {} {}:{}  {}",
                    dist_label(gate),
                    gate.file,
                    gate.line,
                    shorten(&collapse_whitespace(&gate.text), 100)
                ));
                lines.extend(verdict.evidence.iter().map(|e| format!("      {e}")));
            }
        }
        if lines.is_empty() {
            continue;
        }
        let heading = format!(
            "{} ({}): {}",
            kind.name().to_uppercase(),
            lines.iter().filter(|l| !l.starts_with("      ")).count(),
            kind.short()
        );
        let _ = writeln!(out, "{}", palette.paint(code, &heading));
        for line in lines {
            let _ = writeln!(out, "{line}");
        }
        out.push('\n');
    }
}

fn dist_label(gate: &crate::scan::Gate) -> String {
    match (&gate.dist, &gate.dist_version) {
        (Some(name), Some(version)) => format!("{name} {version}"),
        (Some(name), None) => name.clone(),
        _ => "(files outside any distribution)".to_string(),
    }
}

fn summary(report: &AuditReport, counts: &[[usize; 3]], out: &mut String) {
    let stats = &report.result.stats;
    let _ = writeln!(
        out,
        "\n{} gates in {} Python files ({} parsed after the prefilter, {} skipped); CUDA {}",
        report.result.gates.len(),
        stats.python_files,
        stats.prefilter_hits,
        stats.skipped_files,
        report
            .cuda
            .map_or("unknown".to_string(), |c| c.text.clone()),
    );
    for (i, (target, [yes, no, unknown])) in report.targets.iter().zip(counts).enumerate() {
        let mut line = format!("  {target}: {yes} admit, {no} block, {unknown} unknown");
        if let Some(verdicts) = report.verdicts {
            let counts: Vec<String> = VerdictKind::ALL
                .iter()
                .map(|kind| {
                    let n = verdicts
                        .iter()
                        .filter(|v| v.get(i).is_some_and(|v| v.kind == *kind))
                        .count();
                    format!("{n} {}", kind.name())
                })
                .collect();
            line.push_str(&format!("; verdicts: {}", counts.join(", ")));
        }
        let _ = writeln!(out, "{line}");
    }
    if !report.result.warnings.is_empty() {
        let _ = writeln!(
            out,
            "  {} warnings (see stderr)",
            report.result.warnings.len()
        );
    }
}

fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let cut: String = text.chars().take(max).collect();
    format!("{cut}…")
}
