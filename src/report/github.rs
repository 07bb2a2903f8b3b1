//! `--format github`: GitHub Actions workflow commands (`::error file=…::message`), one per gate
//! and target whose verdict is not `open`, and the Markdown step summary with every finding.
//!
//! GitHub shows at most ten annotations of each level per step, so the first ten of each level
//! are printed and the rest are counted on a plain line pointing at the step summary.
//! Annotations come traps first, then walls, then opportunities (what breaks, what must stay
//! closed, what could be opened); `unverified` shares the `notice` level with walls and would
//! use up its ten, so it is annotated only when asked (`--show all`). The step summary keeps
//! every finding.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

use super::sarif::{self, Anchor};
use super::{Accepted, AuditReport};
use crate::gate::predicate::collapse_whitespace;
use crate::scan::Gate;
use crate::verdict::{Verdict, VerdictKind};

/// How many annotations of one level GitHub shows for a step.
pub const ANNOTATIONS_PER_LEVEL: usize = 10;

/// The annotation levels, in the order their overflow lines are printed.
const LEVELS: [&str; 3] = ["error", "warning", "notice"];

/// GitHub's step summary limit is 1 MiB; rows stop a little before it.
const SUMMARY_LIMIT_BYTES: usize = 1000 * 1000;

/// How much of a gate's text a summary row shows.
const SUMMARY_TEXT_CHARS: usize = 200;
/// A row's evidence past this many characters is cut with `…` (the annotations and the
/// SARIF file carry it whole): about 600 rows fit the summary.
const SUMMARY_EVIDENCE_CHARS: usize = 1_500;

/// The workflow command of a verdict kind; `open` is not annotated.
pub fn command(kind: VerdictKind) -> Option<&'static str> {
    match kind {
        VerdictKind::Trap => Some("error"),
        VerdictKind::Opportunity => Some("warning"),
        VerdictKind::Wall | VerdictKind::Unverified => Some("notice"),
        VerdictKind::Open | VerdictKind::NoKernel => None,
    }
}

/// Escapes a command's message, as `escapeData` in `@actions/core` does.
pub fn escape_data(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// Escapes a command property value, as `escapeProperty` in `@actions/core` does.
pub fn escape_property(text: &str) -> String {
    escape_data(text).replace(':', "%3A").replace(',', "%2C")
}

fn annotation(
    report: &AuditReport,
    gate: &Gate,
    target_index: usize,
    verdict: &Verdict,
    anchor: Option<&Anchor>,
    level: &str,
) -> String {
    let region = sarif::region(gate, anchor);
    let mut properties = vec![
        ("file", region.path.clone()),
        ("line", region.start_line.to_string()),
        ("endLine", region.end_line.to_string()),
    ];
    // GitHub applies columns only to a region on one line.
    if region.single_line() {
        properties.push(("col", region.start_column.to_string()));
        properties.push(("endColumn", region.end_column.to_string()));
    }
    properties.push((
        "title",
        format!(
            "gatefix {} at {}: {}",
            verdict.kind.name(),
            report.targets[target_index],
            sarif::dist_label(gate)
        ),
    ));
    let properties: Vec<String> = properties
        .into_iter()
        .map(|(name, value)| format!("{name}={}", escape_property(&value)))
        .collect();
    let message = sarif::message_lines(report, gate, target_index, verdict).join("\n");
    format!(
        "::{level} {}::{}",
        properties.join(","),
        escape_data(&message)
    )
}

/// The order annotations are printed in: traps, walls, opportunities, unverified.
fn annotation_rank(kind: VerdictKind) -> usize {
    match kind {
        VerdictKind::Trap => 0,
        VerdictKind::Wall => 1,
        VerdictKind::Opportunity => 2,
        VerdictKind::Unverified => 3,
        VerdictKind::Open => 4,
        VerdictKind::NoKernel => 5,
    }
}

/// The workflow commands of an audit, one per line, with a plain overflow line per level past
/// [`ANNOTATIONS_PER_LEVEL`]; `unverified` only with `annotate_unverified`. Empty without
/// verdicts. With a baseline (`accepted`), only the new findings are annotated, after a line
/// that counts new and old: a pull request shows what it changed, not what was accepted.
pub fn render(
    report: &AuditReport,
    anchor: Option<&Anchor>,
    annotate_unverified: bool,
    accepted: Option<&Accepted>,
) -> String {
    let mut out = String::new();
    let mut shown = [0usize; LEVELS.len()];
    let mut hidden = [0usize; LEVELS.len()];
    let mut ordered = findings(report);
    ordered.retain(|f| annotate_unverified || f.verdict.kind != VerdictKind::Unverified);
    if accepted.is_some() {
        let total = ordered.len();
        ordered.retain(|f| !f.accepted(accepted));
        let _ = writeln!(
            out,
            "gatefix: {} new finding(s), {} in the baseline (not annotated)",
            ordered.len(),
            total - ordered.len()
        );
    }
    // Stable: within a kind, report order.
    ordered.sort_by_key(|f| annotation_rank(f.verdict.kind));
    for Finding {
        gate,
        target_index,
        verdict,
        ..
    } in ordered
    {
        let Some(level) = command(verdict.kind) else {
            continue;
        };
        let slot = LEVELS.iter().position(|l| *l == level).unwrap_or(0);
        if shown[slot] < ANNOTATIONS_PER_LEVEL {
            shown[slot] += 1;
            out.push_str(&annotation(
                report,
                gate,
                target_index,
                verdict,
                anchor,
                level,
            ));
            out.push('\n');
        } else {
            hidden[slot] += 1;
        }
    }
    for (level, count) in LEVELS.iter().zip(hidden) {
        if count > 0 {
            let _ = writeln!(
                out,
                "gatefix: {count} more {level} annotation(s) not shown; see the step summary"
            );
        }
    }
    out
}

/// A non-open verdict: its gate (and the gate's index in the report) and target index.
struct Finding<'a> {
    gate_index: usize,
    gate: &'a Gate,
    target_index: usize,
    verdict: &'a Verdict,
}

impl Finding<'_> {
    /// Whether the baseline accepts it.
    fn accepted(&self, accepted: Option<&Accepted>) -> bool {
        accepted.is_some_and(|a| a.contains(&(self.gate_index, self.target_index)))
    }
}

/// Every finding (`VerdictKind::is_finding`), in report order.
fn findings<'a>(report: &'a AuditReport) -> Vec<Finding<'a>> {
    let Some(verdicts) = report.verdicts else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (gate_index, (gate, per_target)) in report.result.gates.iter().zip(verdicts).enumerate() {
        for (target_index, verdict) in per_target.iter().enumerate().take(report.targets.len()) {
            if verdict.kind.is_finding() {
                out.push(Finding {
                    gate_index,
                    gate,
                    target_index,
                    verdict,
                });
            }
        }
    }
    out
}

/// Markdown text for a table cell: one line, every ASCII punctuation character that Markdown
/// or a table could read as syntax backslash-escaped.
fn md_text(text: &str) -> String {
    let mut out = String::new();
    for c in collapse_whitespace(text).chars() {
        if matches!(
            c,
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '|' | '#' | '~' | '&' | '!'
        ) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A code span for a table cell: one line, `|` escaped (GitHub tables split on it even inside
/// code), delimited by more backticks than the text contains in a row.
fn md_code(text: &str) -> String {
    let text = collapse_whitespace(text).replace('|', "\\|");
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat(longest + 1);
    if text.starts_with('`') || text.ends_with('`') {
        format!("{fence} {text} {fence}")
    } else {
        format!("{fence}{text}{fence}")
    }
}

fn shorten(text: &str, limit: usize) -> String {
    let text = collapse_whitespace(text);
    if text.chars().count() <= limit {
        return text;
    }
    let mut short: String = text.chars().take(limit.saturating_sub(1)).collect();
    short.push('…');
    short
}

/// The step summary: counts of every verdict per target, then one table row per finding:
/// with a baseline (`accepted`) the new ones first, then those it accepts, marked.
pub fn step_summary(report: &AuditReport, accepted: Option<&Accepted>) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "## gatefix audit\n");
    let targets: Vec<String> = report.targets.iter().map(|t| t.to_string()).collect();
    let _ = writeln!(
        out,
        "Site {} · {} gate(s) · targets: {}\n",
        md_code(&report.site.root.display().to_string()),
        report.result.gates.len(),
        if targets.is_empty() {
            "none".to_string()
        } else {
            targets.join(", ")
        }
    );
    let Some(verdicts) = report.verdicts else {
        let _ = writeln!(out, "Verdicts were not computed for this audit.");
        return out;
    };

    let _ = writeln!(out, "### Verdicts per target\n");
    let mut header = String::from("| target |");
    let mut rule = String::from("| --- |");
    for kind in VerdictKind::ALL {
        let _ = write!(header, " {} |", kind.name());
        rule.push_str(" ---: |");
    }
    let _ = writeln!(out, "{header}\n{rule}");
    for (target_index, target) in targets.iter().enumerate() {
        let mut counts = [0usize; VerdictKind::ALL.len()];
        for per_target in verdicts.iter().take(report.result.gates.len()) {
            if let Some(verdict) = per_target.get(target_index) {
                let slot = VerdictKind::ALL
                    .iter()
                    .position(|k| *k == verdict.kind)
                    .unwrap_or(0);
                counts[slot] += 1;
            }
        }
        let cells: Vec<String> = counts.iter().map(|c| c.to_string()).collect();
        let _ = writeln!(out, "| {target} | {} |", cells.join(" | "));
    }
    out.push('\n');

    let mut findings = findings(report);
    let _ = writeln!(out, "### Findings\n");
    if findings.is_empty() {
        let _ = writeln!(out, "None: every gate is open at every target.");
        return out;
    }
    if accepted.is_some() {
        let old = findings.iter().filter(|f| f.accepted(accepted)).count();
        let _ = writeln!(
            out,
            "{} new, {old} in the baseline (listed after the new ones, marked *baseline*).\n",
            findings.len() - old
        );
    }
    let _ = writeln!(
        out,
        "| verdict | target | dist version | file:line | gate | evidence |\n\
         | --- | --- | --- | --- | --- | --- |"
    );
    // New before old; then traps, opportunities, walls and the rest: what breaks a run is
    // never below what merely could be better.
    findings.sort_by_key(|f| (f.accepted(accepted), summary_rank(f.verdict.kind)));
    let row = |finding: &Finding, evidence_chars: usize| {
        let Finding {
            gate,
            target_index,
            verdict,
            ..
        } = finding;
        format!(
            "| {}{} | {} | {} | {} | {} | {} |\n",
            verdict.kind.name(),
            if finding.accepted(accepted) {
                " *baseline*"
            } else {
                ""
            },
            report.targets[*target_index],
            md_text(&sarif::dist_label(gate)),
            md_code(&format!("{}:{}", gate.file, gate.line)),
            md_code(&shorten(&gate.text, SUMMARY_TEXT_CHARS)),
            md_text(&shorten(&verdict.evidence.join("; "), evidence_chars)),
        )
    };
    // Past the limit only traps are listed, whatever the room (their evidence shrinks to
    // its start); the rest are counted.
    let mut left_out = [0usize; VerdictKind::ALL.len()];
    for finding in &findings {
        let mut line = row(finding, SUMMARY_EVIDENCE_CHARS);
        if out.len() + line.len() > SUMMARY_LIMIT_BYTES {
            if finding.verdict.kind != VerdictKind::Trap {
                left_out[summary_rank(finding.verdict.kind)] += 1;
                continue;
            }
            line = row(finding, SUMMARY_TEXT_CHARS);
        }
        out.push_str(&line);
    }
    let not_shown: usize = left_out.iter().sum();
    if not_shown > 0 {
        let kinds: Vec<String> = [
            VerdictKind::Opportunity,
            VerdictKind::Wall,
            VerdictKind::Unverified,
        ]
        .into_iter()
        .filter(|kind| left_out[summary_rank(*kind)] > 0)
        .map(|kind| format!("{} {}", left_out[summary_rank(kind)], kind.name()))
        .collect();
        let _ = writeln!(
            out,
            "\n{not_shown} more finding(s) not shown ({}): GitHub limits a step summary to 1 MiB. \
             The SARIF file (`gatefix audit --format sarif`, uploaded by the action) and \
             `--format json` list every one.",
            kinds.join(", ")
        );
    }
    out
}

/// Where a verdict's rows stand in the step summary.
fn summary_rank(kind: VerdictKind) -> usize {
    match kind {
        VerdictKind::Trap => 0,
        VerdictKind::Opportunity => 1,
        VerdictKind::Wall => 2,
        VerdictKind::Unverified => 3,
        VerdictKind::Open => 4,
        VerdictKind::NoKernel => 5,
    }
}

/// Appends the step summary to the file `$GITHUB_STEP_SUMMARY` names; does nothing when the
/// variable is unset or empty (outside GitHub Actions).
pub fn append_step_summary(
    report: &AuditReport,
    accepted: Option<&Accepted>,
) -> std::io::Result<()> {
    match std::env::var_os("GITHUB_STEP_SUMMARY") {
        Some(path) if !path.is_empty() => {
            append_step_summary_to(report, accepted, Path::new(&path))
        }
        _ => Ok(()),
    }
}

/// Appends the step summary to `path`, after a blank line when the file already has content.
pub fn append_step_summary_to(
    report: &AuditReport,
    accepted: Option<&Accepted>,
    path: &Path,
) -> std::io::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    let mut text = step_summary(report, accepted);
    if file.metadata()?.len() > 0 {
        text.insert(0, '\n');
    }
    file.write_all(text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::sarif::fixture::{Fixture, SM100, SM120, gate};
    use VerdictKind::{NoKernel, Open, Opportunity, Trap, Unverified, Wall};

    fn lines(text: &str) -> Vec<&str> {
        text.lines().collect()
    }

    /// The value of one property of a workflow command line.
    fn property<'a>(line: &'a str, name: &str) -> Option<&'a str> {
        let head = line.split("::").nth(1)?;
        let (_, properties) = head.split_once(' ')?;
        properties
            .split(',')
            .find_map(|p| p.strip_prefix(&format!("{name}=")))
    }

    #[test]
    fn escaping_matches_the_actions_toolkit() {
        assert_eq!(escape_data("50% a:b,c\r\nd"), "50%25 a:b,c%0D%0Ad");
        assert_eq!(escape_property("50% a:b,c\r\nd"), "50%25 a%3Ab%2Cc%0D%0Ad");
        // `%` first, so an escape is never escaped twice or produced from the text.
        assert_eq!(escape_property("%3A"), "%253A");
    }

    #[test]
    fn verdicts_map_to_levels_and_open_is_silent() {
        let mut f = Fixture::new(&[SM120, SM100]);
        f.add(gate("sglang", "sglang/a.py", 1, "a"), &[Trap, Opportunity]);
        f.add(gate("sglang", "sglang/b.py", 2, "b"), &[Wall, Unverified]);
        f.add(gate("sglang", "sglang/c.py", 3, "c"), &[Open, Open]);
        let levels = |out: &str| -> Vec<String> {
            lines(out)
                .iter()
                .map(|l| {
                    l.split([' ', ':'])
                        .find(|w| !w.is_empty())
                        .unwrap()
                        .to_string()
                })
                .collect()
        };
        // Traps, then walls, then opportunities; unverified only when asked.
        let out = render(&f.report(), None, true, None);
        assert_eq!(levels(&out), ["error", "notice", "warning", "notice"]);
        assert!(
            lines(&out)[1].contains("file=sglang/b.py,"),
            "the wall: {out}"
        );
        assert!(lines(&out).iter().all(|l| l.starts_with("::")));
        assert!(!out.contains("sglang/c.py"));
        let out = render(&f.report(), None, false, None);
        assert_eq!(levels(&out), ["error", "notice", "warning"]);
        assert!(!out.contains("unverified"), "{out}");
        let mut report = f.report();
        report.verdicts = None;
        assert_eq!(render(&report, None, true, None), "");
    }

    #[test]
    fn walls_are_annotated_even_with_many_unverified() {
        let mut f = Fixture::new(&[SM120]);
        for i in 0..20 {
            f.add(
                gate("sglang", &format!("sglang/u{i}.py"), 1, "u"),
                &[Unverified],
            );
        }
        f.add(gate("sglang", "sglang/w.py", 1, "w"), &[Wall]);
        let out = render(&f.report(), None, false, None);
        assert_eq!(lines(&out).len(), 1, "{out}");
        assert!(out.starts_with("::notice file=sglang/w.py,"), "{out}");
    }

    #[test]
    fn properties_and_message_are_escaped_and_each_command_is_one_line() {
        let mut f = Fixture::new(&[SM120]);
        f.add(
            gate(
                "sglang",
                "sglang/a,b:c.py",
                7,
                "x % 2 == 0 and\n  major >= 10",
            ),
            &[Trap],
        );
        let out = render(&f.report(), None, true, None);
        assert_eq!(lines(&out).len(), 1, "{out}");
        let line = lines(&out)[0];
        assert!(line.starts_with("::error file=sglang/a%2Cb%3Ac.py,line=7,endLine=8,title="));
        assert_eq!(property(line, "file"), Some("sglang/a%2Cb%3Ac.py"));
        assert_eq!(
            property(line, "title"),
            Some("gatefix trap at sm_120%3A sglang 0.5.0")
        );
        let message = line.splitn(3, "::").nth(2).unwrap();
        assert!(message.starts_with("sm_120: trap — "), "{message}");
        assert!(message.contains("`x %25 2 == 0 and …`"), "{message}");
        // The three sentences are separate lines of the annotation.
        assert_eq!(message.matches("%0A").count(), 2, "{message}");
        assert!(message.contains("%0AEvidence: trap evidence; second"));
        assert!(!message.contains('\n') && !message.contains('\r'));
    }

    #[test]
    fn columns_only_on_single_line_regions() {
        let mut f = Fixture::new(&[SM120]);
        f.add(gate("sglang", "sglang/one.py", 3, "is_sm90()"), &[Trap]);
        f.add(
            gate("sglang", "sglang/two.py", 10, "if a and\n    b:"),
            &[Trap],
        );
        let out = render(&f.report(), None, true, None);
        let (one, two) = (lines(&out)[0], lines(&out)[1]);
        assert_eq!(property(one, "line"), Some("3"));
        assert_eq!(property(one, "endLine"), Some("3"));
        assert_eq!(property(one, "col"), Some("5"));
        assert_eq!(property(one, "endColumn"), Some("14"));
        assert_eq!(property(two, "line"), Some("10"));
        assert_eq!(property(two, "endLine"), Some("11"));
        assert_eq!(property(two, "col"), None);
        assert_eq!(property(two, "endColumn"), None);
    }

    #[test]
    fn anchor_points_at_the_distribution_line() {
        let mut f = Fixture::new(&[SM120]);
        f.add(
            gate("sglang", "sglang/two.py", 10, "if a and\n    b:"),
            &[Wall],
        );
        let anchor = Anchor {
            path: "ci/requirements.txt".into(),
            text: "torch==2.8\nSGLang[all]==0.5.0\n".into(),
        };
        let out = render(&f.report(), Some(&anchor), true, None);
        let line = lines(&out)[0];
        assert!(line.starts_with("::notice "));
        assert_eq!(property(line, "file"), Some("ci/requirements.txt"));
        assert_eq!(property(line, "line"), Some("2"));
        assert_eq!(property(line, "endLine"), Some("2"));
        assert_eq!(property(line, "col"), Some("1"));
        assert_eq!(property(line, "endColumn"), Some("19"));
        assert!(line.contains("at sglang/two.py:10:5 (site "), "{line}");
    }

    #[test]
    fn at_most_ten_annotations_per_level_then_a_plain_count() {
        let mut f = Fixture::new(&[SM120]);
        for i in 0..12 {
            f.add(gate("sglang", &format!("sglang/t{i}.py"), 1, "t"), &[Trap]);
        }
        for i in 0..11 {
            f.add(
                gate("sglang", &format!("sglang/o{i}.py"), 1, "o"),
                &[Opportunity],
            );
        }
        for i in 0..3 {
            f.add(gate("sglang", &format!("sglang/w{i}.py"), 1, "w"), &[Wall]);
        }
        let out = render(&f.report(), None, true, None);
        let count = |prefix: &str| lines(&out).iter().filter(|l| l.starts_with(prefix)).count();
        assert_eq!(count("::error "), 10);
        assert_eq!(count("::warning "), 10);
        assert_eq!(count("::notice "), 3);
        // The first ten of each level are the ones shown.
        assert!(out.contains("file=sglang/t9.py,") && !out.contains("file=sglang/t10.py,"));
        let plain: Vec<&str> = lines(&out)
            .into_iter()
            .filter(|l| !l.starts_with("::"))
            .collect();
        assert_eq!(
            plain,
            [
                "gatefix: 2 more error annotation(s) not shown; see the step summary",
                "gatefix: 1 more warning annotation(s) not shown; see the step summary",
            ]
        );
    }

    /// The cells of a Markdown table row, split on unescaped `|`.
    fn cells(row: &str) -> Vec<String> {
        let mut cells = vec![String::new()];
        let mut escaped = false;
        for c in row.chars() {
            if c == '|' && !escaped {
                cells.push(String::new());
            } else {
                cells.last_mut().unwrap().push(c);
            }
            escaped = c == '\\' && !escaped;
        }
        // Drop what is outside the outer pipes.
        cells.remove(0);
        cells.pop();
        cells.into_iter().map(|c| c.trim().to_string()).collect()
    }

    #[test]
    fn step_summary_counts_every_verdict_and_lists_every_finding() {
        let mut f = Fixture::new(&[SM120, SM100]);
        f.add(
            gate("flashinfer-python", "flashinfer/a.py", 4, "a | b"),
            &[Trap, Open],
        );
        f.add(gate("sglang", "sglang/b.py", 9, "x"), &[Wall, Open]);
        f.add(gate("sglang", "sglang/c.py", 2, "y"), &[Open, Unverified]);
        f.add(gate("sglang", "sglang/d.py", 7, "z"), &[NoKernel, NoKernel]);
        f.verdicts[1][0].evidence = vec!["<script> | *bold*".into()];
        let summary = step_summary(&f.report(), None);
        assert!(summary.starts_with("## gatefix audit\n"));
        let rows: Vec<&str> = summary.lines().filter(|l| l.starts_with('|')).collect();
        let counts = rows.iter().find(|r| r.starts_with("| sm_120 |")).unwrap();
        assert_eq!(cells(counts), ["sm_120", "1", "0", "1", "0", "1", "1"]);
        let counts = rows.iter().find(|r| r.starts_with("| sm_100 |")).unwrap();
        assert_eq!(cells(counts), ["sm_100", "0", "0", "0", "1", "2", "1"]);
        let (_, section) = summary.split_once("### Findings").unwrap();
        let findings: Vec<Vec<String>> = section
            .lines()
            .filter(|l| l.starts_with('|'))
            .skip(2)
            .map(cells)
            .collect();
        assert_eq!(findings.len(), 3, "{summary}");
        assert_eq!(
            findings[0],
            [
                "trap",
                "sm_120",
                "flashinfer-python 0.7.2",
                "`flashinfer/a.py:4`",
                "`a \\| b`",
                "trap evidence; second"
            ]
        );
        assert_eq!(findings[1][5], "\\<script\\> \\| \\*bold\\*");
        assert_eq!(findings[2][0], "unverified");
        assert_eq!(findings[2][1], "sm_100");
    }

    #[test]
    fn step_summary_without_verdicts_or_findings_says_so() {
        let mut f = Fixture::new(&[SM120]);
        f.add(gate("sglang", "sglang/b.py", 9, "x"), &[Open]);
        assert!(step_summary(&f.report(), None).contains("None: every gate is open"));
        let mut report = f.report();
        report.verdicts = None;
        let summary = step_summary(&report, None);
        assert!(summary.contains("Verdicts were not computed"));
        assert!(!summary.contains("### Findings"));
    }

    #[test]
    fn step_summary_stays_under_the_github_limit() {
        let mut f = Fixture::new(&[SM120]);
        for i in 0..8 {
            f.add(gate("sglang", &format!("sglang/{i}.py"), 1, "x"), &[Trap]);
            f.verdicts[i][0].evidence = vec!["e".repeat(300_000)];
        }
        let summary = step_summary(&f.report(), None);
        assert!(
            summary.len() <= SUMMARY_LIMIT_BYTES + 200,
            "{}",
            summary.len()
        );
        // Every trap is listed, its evidence cut.
        assert_eq!(
            summary.matches("\n| trap |").count(),
            8,
            "{}",
            &summary[..2000]
        );
        assert!(!summary.contains("not shown"));
    }

    /// 2,000 unverified gates at sm_120 with 2,000 characters of evidence each: past the
    /// step summary's limit.
    fn long_unverified_rows() -> Fixture {
        let mut f = Fixture::new(&[SM120]);
        for i in 0..2000 {
            f.add(
                gate("sglang", &format!("sglang/u{i}.py"), 1, "x"),
                &[Unverified],
            );
            f.verdicts[i][0].evidence = vec!["u".repeat(2_000)];
        }
        f
    }

    #[test]
    fn step_summary_lists_traps_first_and_cuts_only_after_them() {
        // 2,000 unverified gates first in report order, with long evidence, then 3 traps
        // and an opportunity: the traps lead and the cut falls among the unverified.
        let mut f = long_unverified_rows();
        for i in 0..3 {
            f.add(gate("sglang", &format!("sglang/t{i}.py"), 1, "x"), &[Trap]);
        }
        f.add(gate("sglang", "sglang/o.py", 1, "x"), &[Opportunity]);
        let summary = step_summary(&f.report(), None);
        assert!(
            summary.len() <= SUMMARY_LIMIT_BYTES + 400,
            "{}",
            summary.len()
        );
        // Rows start a line; the counts table's header names the kinds too.
        let first_trap = summary.find("\n| trap |").expect("traps listed");
        let opportunity = summary.find("\n| opportunity |").expect("the opportunity");
        let first_unverified = summary.find("\n| unverified |").expect("some unverified");
        assert!(first_trap < opportunity && opportunity < first_unverified);
        assert_eq!(summary.matches("\n| trap |").count(), 3);
        let tail = summary.lines().last().unwrap();
        assert!(tail.contains("unverified): GitHub limits"), "{tail}");
        assert!(tail.contains("--format sarif"), "{tail}");
    }

    #[test]
    fn with_a_baseline_new_findings_come_first_and_old_ones_are_counted() {
        let mut f = Fixture::new(&[SM120]);
        f.add(gate("sglang", "sglang/old_trap.py", 1, "a"), &[Trap]);
        f.add(gate("sglang", "sglang/new_wall.py", 2, "b"), &[Wall]);
        f.add(gate("sglang", "sglang/old_opp.py", 3, "c"), &[Opportunity]);
        f.add(gate("sglang", "sglang/new_trap.py", 4, "d"), &[Trap]);
        let accepted: Accepted = [(0, 0), (2, 0)].into_iter().collect();
        let out = render(&f.report(), None, true, Some(&accepted));
        assert_eq!(
            out.lines().next(),
            Some("gatefix: 2 new finding(s), 2 in the baseline (not annotated)")
        );
        let files: Vec<&str> = out.lines().filter_map(|l| property(l, "file")).collect();
        assert_eq!(files, ["sglang/new_trap.py", "sglang/new_wall.py"]);
        // Without a baseline every finding is annotated and no count line is printed.
        let out = render(&f.report(), None, true, None);
        assert_eq!(out.lines().filter(|l| l.starts_with("::")).count(), 4);
        assert!(!out.contains("in the baseline"));

        let summary = step_summary(&f.report(), Some(&accepted));
        assert!(summary.contains("2 new, 2 in the baseline"), "{summary}");
        let (_, section) = summary
            .split_once("| --- | --- | --- | --- | --- | --- |")
            .unwrap();
        let rows: Vec<Vec<String>> = section
            .lines()
            .filter(|l| l.starts_with('|'))
            .map(cells)
            .collect();
        let order: Vec<(&str, &str)> = rows
            .iter()
            .map(|r| (r[0].as_str(), r[3].as_str()))
            .collect();
        assert_eq!(
            order,
            [
                ("trap", "`sglang/new_trap.py:4`"),
                ("wall", "`sglang/new_wall.py:2`"),
                ("trap *baseline*", "`sglang/old_trap.py:1`"),
                ("opportunity *baseline*", "`sglang/old_opp.py:3`"),
            ]
        );
    }

    #[test]
    fn past_the_limit_an_old_trap_behind_new_rows_is_still_listed() {
        let mut f = long_unverified_rows();
        f.add(gate("sglang", "sglang/old_trap.py", 1, "x"), &[Trap]);
        let accepted: Accepted = [(2000, 0)].into_iter().collect();
        let summary = step_summary(&f.report(), Some(&accepted));
        assert!(
            summary.len() <= SUMMARY_LIMIT_BYTES + 400,
            "{}",
            summary.len()
        );
        assert!(summary.contains("| trap *baseline* | sm_120 |"));
        let tail = summary.lines().last().unwrap();
        assert!(tail.contains("unverified): GitHub limits"), "{tail}");
    }

    #[test]
    fn code_spans_outlast_backticks_in_the_text() {
        assert_eq!(md_code("a`b"), "``a`b``");
        assert_eq!(md_code("`a`"), "`` `a` ``");
        assert_eq!(md_code("a\n   b"), "`a b`");
    }

    #[test]
    fn summary_appends_after_what_is_there() {
        let mut f = Fixture::new(&[SM120]);
        f.add(gate("sglang", "sglang/b.py", 9, "x"), &[Trap]);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("summary.md");
        std::fs::write(&path, "earlier step").unwrap();
        append_step_summary_to(&f.report(), None, &path).unwrap();
        append_step_summary_to(&f.report(), None, &path).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.starts_with("earlier step\n## gatefix audit\n"),
            "{text}"
        );
        assert_eq!(text.matches("## gatefix audit").count(), 2);
    }
}
