//! `--format sarif`: SARIF 2.1.0 as GitHub code scanning accepts it. One result per gate and
//! target whose verdict is not `open`.
//!
//! Site-packages files are not in the user's repository, so code scanning cannot show them. With
//! an [`Anchor`] (the requirements file, lockfile or pyproject that pins the packages) every
//! result points at the line naming the gate's distribution, and the site path stays in the
//! message; without one, results point into the site through the `SITE` base URI.

use serde_json::{Value, json};

use super::AuditReport;
use crate::gate::predicate::collapse_whitespace;
use crate::policy::sha256_hex;
use crate::scan::Gate;
use crate::verdict::{Verdict, VerdictKind};

const SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";
/// The `partialFingerprints` key; bump the version when the hashed text changes.
const FINGERPRINT_KEY: &str = "gatefixGate/v1";

/// The file that pins the audited packages, as the user named it (relative to the repository
/// root), with its contents.
#[derive(Debug, Clone)]
pub struct Anchor {
    pub path: String,
    pub text: String,
}

/// The 1-based line of `anchor` that names the distribution `dist` (PEP 503 names compared, so
/// `flashinfer_python` finds `Flashinfer.Python==0.7`), or 1 when no line does.
///
/// Lines that name a package where it is defined or required win over lines that only mention
/// it: a requirement (`name==1.0`, `name>=1`, `name ; marker`), a TOML key (`name = "^1"`), a
/// quoted requirement opening the line (`"name==1.0",` in pyproject), and a lock entry
/// (`name = "name"` in uv.lock and poetry.lock). Only when none matches does a quoted
/// requirement anywhere in a line count (`dependencies = ["a", "name>=1"]`, or uv.lock's
/// `{ name = "name" }` dependency tables).
pub fn anchor_line(anchor: &Anchor, dist: &str) -> u32 {
    let wanted = normalize_name(dist);
    if wanted.is_empty() {
        return 1;
    }
    let lines: Vec<&str> = anchor.text.lines().collect();
    let strong = lines
        .iter()
        .position(|line| line_defines(line).is_some_and(|name| normalize_name(name) == wanted));
    let weak = || {
        lines.iter().position(|line| {
            quoted_names(line)
                .into_iter()
                .any(|name| normalize_name(name) == wanted)
        })
    };
    strong
        .or_else(weak)
        .map_or(1, |index| u32::try_from(index + 1).unwrap_or(u32::MAX))
}

/// PEP 503: lowercase, with every run of `-`, `_` and `.` made one `-`.
pub(crate) fn normalize_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut separator = false;
    for c in name.trim().chars() {
        if matches!(c, '-' | '_' | '.') {
            separator = true;
            continue;
        }
        if separator && !out.is_empty() {
            out.push('-');
        }
        separator = false;
        out.extend(c.to_lowercase());
    }
    out
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')
}

/// The leading distribution name of a requirement string.
fn leading_name(text: &str) -> &str {
    let end = text.find(|c| !is_name_char(c)).unwrap_or(text.len());
    &text[..end]
}

/// The package a line defines or requires, where it opens the line.
fn line_defines(line: &str) -> Option<&str> {
    let line = line.trim_start();
    if line.starts_with('#') || line.starts_with('-') || line.starts_with('[') {
        return None;
    }
    // `name = "flashinfer-python"`: a lock entry (uv.lock, poetry.lock).
    if let Some(rest) = line.strip_prefix("name") {
        let rest = rest.trim_start();
        if let Some(value) = rest.strip_prefix('=')
            && !value.starts_with('=')
            && let Some(quoted) = first_quoted(value.trim_start())
        {
            return Some(leading_name(quoted));
        }
    }
    // `"flashinfer-python==0.7.2",`: a requirement in a pyproject array.
    if line.starts_with('"') || line.starts_with('\'') {
        return first_quoted(line).map(leading_name);
    }
    // `flashinfer-python==0.7.2` (requirements.txt) or `flashinfer-python = "^0.7"` (TOML key).
    let name = leading_name(line);
    (!name.is_empty()).then_some(name)
}

/// The contents of the quoted string `text` opens with.
fn first_quoted(text: &str) -> Option<&str> {
    let quote = text.chars().next().filter(|c| *c == '"' || *c == '\'')?;
    let rest = &text[1..];
    rest.find(quote).map(|end| &rest[..end])
}

/// The leading names of every quoted string in a line.
fn quoted_names(line: &str) -> Vec<&str> {
    let mut names = Vec::new();
    let mut rest = line;
    while let Some(start) = rest.find(['"', '\'']) {
        let quote = rest[start..].chars().next().unwrap_or('"');
        let body = &rest[start + 1..];
        let Some(end) = body.find(quote) else { break };
        names.push(leading_name(&body[..end]));
        rest = &body[end + 1..];
    }
    names
}

/// Where a result points: the anchor line naming the distribution, or the gate in the site.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Region {
    /// The anchor path, or the gate's file relative to the site root.
    pub path: String,
    /// Whether `path` is the anchor (in the repository) rather than a site file.
    pub anchored: bool,
    pub start_line: u32,
    pub start_column: u32,
    pub end_line: u32,
    pub end_column: u32,
}

impl Region {
    pub(crate) fn single_line(&self) -> bool {
        self.start_line == self.end_line
    }
}

/// The region a finding about `gate` is reported at; every line and column is at least 1 and
/// the end never precedes the start.
pub(crate) fn region(gate: &Gate, anchor: Option<&Anchor>) -> Region {
    match anchor {
        Some(anchor) => {
            let line = anchor_line(anchor, gate.dist.as_deref().unwrap_or(""));
            let length = anchor
                .text
                .lines()
                .nth(line as usize - 1)
                .map_or(0, |text| text.chars().count());
            Region {
                path: anchor_path(&anchor.path),
                anchored: true,
                start_line: line,
                start_column: 1,
                end_line: line,
                end_column: u32::try_from(length + 1).unwrap_or(u32::MAX).max(2),
            }
        }
        None => {
            let start_line = gate.line.max(1);
            let start_column = gate.column.max(1);
            let end_line = gate.end_line.max(start_line);
            let mut end_column = gate.end_column.max(1);
            if end_line == start_line {
                end_column = end_column.max(start_column);
            }
            Region {
                path: gate.file.clone(),
                anchored: false,
                start_line,
                start_column,
                end_line,
                end_column,
            }
        }
    }
}

/// The anchor path as a repository-relative path with `/`.
fn anchor_path(path: &str) -> String {
    let path = path.replace('\\', "/");
    let mut path = path.as_str();
    while let Some(rest) = path.strip_prefix("./") {
        path = rest;
    }
    path.to_string()
}

/// "flashinfer-python 0.7.2", or a placeholder for files no distribution owns.
pub(crate) fn dist_label(gate: &Gate) -> String {
    match (&gate.dist, &gate.dist_version) {
        (Some(name), Some(version)) => format!("{name} {version}"),
        (Some(name), None) => name.clone(),
        _ => "(no distribution)".to_string(),
    }
}

/// The first line of the gate's source, with `…` when there is more.
pub(crate) fn first_line(text: &str) -> String {
    let trimmed = text.trim();
    let mut lines = trimmed.lines();
    let first = lines.next().unwrap_or("").trim_end();
    if lines.next().is_some() {
        format!("{first} …")
    } else {
        first.to_string()
    }
}

/// What a person reads about one finding, as three sentences: the verdict, where the gate is
/// and what it means, and the evidence. SARIF joins them with spaces, annotations with newlines.
pub(crate) fn message_lines(
    report: &AuditReport,
    gate: &Gate,
    target_index: usize,
    verdict: &Verdict,
) -> [String; 3] {
    let evidence = if verdict.evidence.is_empty() {
        "(none recorded)".to_string()
    } else {
        verdict.evidence.join("; ")
    };
    [
        format!(
            "{}: {} — {}.",
            report.targets[target_index],
            verdict.kind.name(),
            verdict.kind.short()
        ),
        format!(
            "Gate in {dist} at {file}:{line}:{column} (site {site}): `{text}`; predicate: \
             {predicate}.",
            dist = dist_label(gate),
            file = gate.file,
            line = gate.line,
            column = gate.column,
            site = report.site.root.display(),
            text = first_line(&gate.text),
            predicate = gate.predicate,
        ),
        format!("Evidence: {evidence}"),
    ]
}

/// Identifies a finding across runs: its verdict, where the gate lives (not its line) and what
/// it says, at one target.
pub fn fingerprint(kind: VerdictKind, gate: &Gate, target: &str) -> String {
    sha256_hex(&format!(
        "{}|{}|{}|{}|{}",
        kind.name(),
        gate.dist.as_deref().unwrap_or(""),
        gate.file,
        collapse_whitespace(&gate.text),
        target
    ))
}

/// The rule behind each verdict kind, in [`VerdictKind::ALL`] order (which is `ruleIndex`).
struct RuleText {
    name: &'static str,
    full: &'static str,
    help: &'static str,
    level: &'static str,
}

fn rule_text(kind: VerdictKind) -> RuleText {
    match kind {
        VerdictKind::Trap => RuleText {
            name: "ArchGateTrap",
            full: "An architecture gate admits the target GPU, but no kernel compiled for that \
                   target exists under the gated path: the code will take the path and fail \
                   at run time (missing kernel image, illegal instruction, or a JIT error).",
            help: "A kernel for the target is missing under an open gate: pin or upgrade the \
                   package that provides it, or close the path.",
            level: "error",
        },
        VerdictKind::Opportunity => RuleText {
            name: "ArchGateOpportunity",
            full: "An architecture gate blocks the target GPU although a kernel for that \
                   target is installed under the gated path: the fast path is left unused.",
            help: "The kernel exists: `gatefix apply <target>` can open it.",
            level: "warning",
        },
        VerdictKind::Wall => RuleText {
            name: "ArchGateWall",
            full: "An architecture gate blocks the target GPU and no kernel for that target \
                   exists under the gated path: the gate is right.",
            help: "Keep it closed: opening it would crash at run time.",
            level: "note",
        },
        VerdictKind::Unverified => RuleText {
            name: "ArchGateUnverified",
            full: "gatefix could not link the gated path to a kernel, or could not tell \
                   whether the gate admits the target, so the gate could not be judged.",
            help: "Add a [[link]] rule naming the kernel behind the gated path, so gatefix \
                   can judge the gate.",
            level: "note",
        },
        VerdictKind::Open => RuleText {
            name: "ArchGateOpen",
            full: "An architecture gate admits the target GPU and a kernel for that target \
                   exists under the gated path.",
            help: "Informational: nothing to do.",
            level: "none",
        },
        VerdictKind::NoKernel => RuleText {
            name: "ArchGateNoKernel",
            full: "The code an architecture gate decides was read whole (every call followed \
                   to its definition) and launches no kernel: the gate changes Python \
                   behaviour only, at any target.",
            help: "Informational: opening or closing it changes no kernel.",
            level: "none",
        },
    }
}

/// The SARIF level of a verdict kind.
pub(crate) fn level(kind: VerdictKind) -> &'static str {
    rule_text(kind).level
}

fn rule_id(kind: VerdictKind) -> String {
    format!("gatefix/{}", kind.name())
}

fn rule_index(kind: VerdictKind) -> usize {
    VerdictKind::ALL
        .iter()
        .position(|k| *k == kind)
        .expect("every kind is in ALL")
}

fn rules() -> Vec<Value> {
    VerdictKind::ALL
        .into_iter()
        .map(|kind| {
            let text = rule_text(kind);
            json!({
                "id": rule_id(kind),
                "name": text.name,
                "shortDescription": { "text": capitalize(kind.short()) },
                "fullDescription": { "text": collapse_whitespace(text.full) },
                "help": {
                    "text": collapse_whitespace(text.help),
                    "markdown": format!("**{}**: {}", kind.name(), collapse_whitespace(text.help)),
                },
                "defaultConfiguration": { "level": text.level },
                "properties": {
                    "tags": ["gpu", "architecture-gate", kind.name()],
                },
            })
        })
        .collect()
}

fn capitalize(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// Percent-encodes a path for a URI reference, keeping `/` and the characters RFC 3986 allows
/// unencoded in a path segment.
fn encode_uri_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for byte in path.bytes() {
        let c = byte as char;
        if c.is_ascii_alphanumeric() || "-._~/!$&'()*+,;=:@".contains(c) {
            out.push(c);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

fn site_base_uri(report: &AuditReport) -> String {
    let root = report.site.root.to_string_lossy().replace('\\', "/");
    let root = root.trim_end_matches('/');
    let root = if root.starts_with('/') {
        root.to_string()
    } else {
        format!("/{root}")
    };
    format!("file://{}/", encode_uri_path(&root))
}

fn result(
    report: &AuditReport,
    gate: &Gate,
    target_index: usize,
    verdict: &Verdict,
    anchor: Option<&Anchor>,
) -> Value {
    let target = report.targets[target_index].to_string();
    let region = region(gate, anchor);
    let artifact = if region.anchored {
        json!({ "uri": encode_uri_path(&region.path), "uriBaseId": "%SRCROOT%" })
    } else {
        json!({ "uri": encode_uri_path(&region.path), "uriBaseId": "SITE" })
    };
    json!({
        "ruleId": rule_id(verdict.kind),
        "ruleIndex": rule_index(verdict.kind),
        "level": level(verdict.kind),
        "message": { "text": message_lines(report, gate, target_index, verdict).join(" ") },
        "locations": [{
            "physicalLocation": {
                "artifactLocation": artifact,
                "region": {
                    "startLine": region.start_line,
                    "startColumn": region.start_column,
                    "endLine": region.end_line,
                    "endColumn": region.end_column,
                },
            },
        }],
        "partialFingerprints": { FINGERPRINT_KEY: fingerprint(verdict.kind, gate, &target) },
        "properties": {
            "gate_id": gate.id,
            "target": target,
            "dist": gate.dist,
            "dist_version": gate.dist_version,
            "site_file": gate.file,
            "site_line": gate.line,
            "form": gate.form.name(),
            "evidence": verdict.evidence,
        },
    })
}

/// The SARIF log of an audit: pretty JSON with a trailing newline. Results follow the gate
/// order of the scan and the target order of the report; without verdicts there are none.
pub fn render(report: &AuditReport, anchor: Option<&Anchor>) -> String {
    let mut results = Vec::new();
    if let Some(verdicts) = report.verdicts {
        for (gate, per_target) in report.result.gates.iter().zip(verdicts) {
            for (target_index, verdict) in per_target.iter().enumerate().take(report.targets.len())
            {
                if verdict.kind.is_finding() {
                    results.push(result(report, gate, target_index, verdict, anchor));
                }
            }
        }
    }
    let mut run = json!({
        "tool": {
            "driver": {
                "name": "gatefix",
                "version": env!("CARGO_PKG_VERSION"),
                "semanticVersion": env!("CARGO_PKG_VERSION"),
                "rules": rules(),
            },
        },
        "columnKind": "unicodeCodePoints",
        "results": results,
    });
    if anchor.is_none() {
        run["originalUriBaseIds"] = json!({ "SITE": { "uri": site_base_uri(report) } });
    }
    let log = json!({
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [run],
    });
    let mut text = serde_json::to_string_pretty(&log).expect("JSON of plain data");
    text.push('\n');
    text
}

/// Small audit reports for the printers' and the policy's tests.
#[cfg(test)]
pub(crate) mod fixture {
    use crate::arch::Arch;
    use crate::gate::ir::CmpOp;
    use crate::gate::predicate::{Atom, DevVar, Form, Pred, Rhs};
    use crate::report::AuditReport;
    use crate::scan::{Gate, ScanResult};
    use crate::site::{Distribution, Site};
    use crate::verdict::{Verdict, VerdictKind, Verdicts};

    pub(crate) const SM120: Arch = Arch::new(12, 0);
    pub(crate) const SM100: Arch = Arch::new(10, 0);

    pub(crate) struct Fixture {
        pub site: Site,
        pub targets: Vec<Arch>,
        pub result: ScanResult,
        pub verdicts: Verdicts,
    }

    impl Fixture {
        pub(crate) fn new(targets: &[Arch]) -> Fixture {
            let dir = tempfile::tempdir().expect("temporary directory");
            let mut site = Site::open(dir.path()).expect("empty site");
            site.distributions = vec![
                Distribution {
                    name: "flashinfer-python".into(),
                    version: "0.7.2".into(),
                },
                Distribution {
                    name: "sglang".into(),
                    version: "0.5.0".into(),
                },
            ];
            Fixture {
                site,
                targets: targets.to_vec(),
                result: ScanResult {
                    gates: vec![],
                    modules: vec![],
                    warnings: vec![],
                    stats: Default::default(),
                },
                verdicts: vec![],
            }
        }

        /// Adds a gate with one verdict per target; each verdict's evidence names its kind.
        pub(crate) fn add(&mut self, gate: Gate, kinds: &[VerdictKind]) -> &mut Fixture {
            assert_eq!(kinds.len(), self.targets.len(), "one verdict per target");
            self.result.gates.push(gate);
            self.verdicts.push(
                kinds
                    .iter()
                    .map(|kind| Verdict {
                        kind: *kind,
                        evidence: vec![format!("{} evidence", kind.name()), "second".into()],
                        kernels: Vec::new(),
                    })
                    .collect(),
            );
            self
        }

        pub(crate) fn report(&self) -> AuditReport<'_> {
            AuditReport {
                site: &self.site,
                targets: &self.targets,
                cuda: None,
                result: &self.result,
                verdicts: Some(&self.verdicts),
            }
        }
    }

    /// A gate of `dist` (0.7.2 for flashinfer-python, else 0.5.0) at `line`, column 5, spanning
    /// as many lines as `text` has.
    pub(crate) fn gate(dist: &str, file: &str, line: u32, text: &str) -> Gate {
        let lines: Vec<&str> = text.lines().collect();
        let end_line = line + lines.len().saturating_sub(1) as u32;
        let last = lines.last().map_or(0, |l| l.chars().count() as u32);
        let end_column = if lines.len() > 1 { last + 1 } else { 5 + last };
        Gate {
            id: format!("{dist}:{file}:{line}"),
            dist: Some(dist.to_string()),
            dist_version: Some(
                if dist == "flashinfer-python" {
                    "0.7.2"
                } else {
                    "0.5.0"
                }
                .into(),
            ),
            file: file.to_string(),
            line,
            column: 5,
            end_line,
            end_column,
            function: Some("run".into()),
            form: Form::HelperCall,
            text: text.to_string(),
            predicate: Pred::atom(
                Atom::Dev {
                    var: DevVar::Sm,
                    op: CmpOp::Ge,
                    rhs: Rhs::Int(100),
                },
                Form::HelperCall,
            ),
            guards_branch: true,
            assumes: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fixture::{Fixture, SM100, SM120, gate};
    use super::*;
    use VerdictKind::{Open, Opportunity, Trap, Unverified, Wall};
    use serde_json::Value;

    fn parse(text: &str) -> Value {
        assert!(text.ends_with("}\n"), "pretty JSON with a trailing newline");
        serde_json::from_str(text).expect("valid JSON")
    }

    fn results(log: &Value) -> &Vec<Value> {
        log["runs"][0]["results"].as_array().expect("results")
    }

    /// Two targets, four gates, every kind at least once, one gate open everywhere.
    fn sample() -> Fixture {
        let mut f = Fixture::new(&[SM120, SM100]);
        f.add(
            gate(
                "flashinfer-python",
                "flashinfer/jit.py",
                12,
                "is_sm100_supported()",
            ),
            &[Trap, Open],
        );
        f.add(
            gate(
                "sglang",
                "sglang/srt/layers/x.py",
                40,
                "if major >= 10 and\n        minor == 0:",
            ),
            &[Wall, Opportunity],
        );
        f.add(gate("sglang", "sglang/y.py", 7, "sm >= 90"), &[Open, Open]);
        f.add(
            gate("sglang", "sglang/z.py", 3, "cap in [(9, 0)]"),
            &[Unverified, Trap],
        );
        f
    }

    fn requirements() -> Anchor {
        Anchor {
            path: "./requirements.txt".into(),
            text: "# pinned\ntorch==2.8.0\nsglang[all]==0.5.0 ; python_version >= \"3.10\"\nFlashinfer_Python>=0.7\n".into(),
        }
    }

    #[test]
    fn log_has_schema_version_and_driver() {
        let f = sample();
        let log = parse(&render(&f.report(), None));
        assert_eq!(log["version"], "2.1.0");
        assert_eq!(log["$schema"], SCHEMA);
        assert_eq!(log["runs"].as_array().unwrap().len(), 1);
        let driver = &log["runs"][0]["tool"]["driver"];
        assert_eq!(driver["name"], "gatefix");
        assert_eq!(driver["version"], env!("CARGO_PKG_VERSION"));
    }

    #[test]
    fn every_rule_id_once_and_rule_index_points_at_it() {
        let f = sample();
        let log = parse(&render(&f.report(), None));
        let rules = log["runs"][0]["tool"]["driver"]["rules"]
            .as_array()
            .unwrap();
        let ids: Vec<&str> = rules.iter().map(|r| r["id"].as_str().unwrap()).collect();
        for (i, id) in ids.iter().enumerate() {
            assert!(!ids[..i].contains(id), "rule {id} listed twice");
        }
        let results = results(&log);
        assert!(!results.is_empty());
        for result in results {
            let id = result["ruleId"].as_str().unwrap();
            assert_eq!(ids.iter().filter(|i| **i == id).count(), 1, "{id}");
            let index = result["ruleIndex"].as_u64().unwrap() as usize;
            assert_eq!(rules[index]["id"], id);
            assert_eq!(
                result["level"], rules[index]["defaultConfiguration"]["level"],
                "a result's level is its rule's default"
            );
        }
        let trap = &rules[rule_index(Trap)];
        assert_eq!(trap["id"], "gatefix/trap");
        assert_eq!(trap["name"], "ArchGateTrap");
        assert_eq!(trap["defaultConfiguration"]["level"], "error");
        assert!(
            trap["help"]["text"]
                .as_str()
                .unwrap()
                .contains("pin or upgrade")
        );
        assert_eq!(
            rules[rule_index(Open)]["defaultConfiguration"]["level"],
            "none"
        );
        assert_eq!(
            rules[rule_index(Wall)]["defaultConfiguration"]["level"],
            "note"
        );
        assert_eq!(
            rules[rule_index(Opportunity)]["defaultConfiguration"]["level"],
            "warning"
        );
        assert!(
            rules[rule_index(Unverified)]["help"]["text"]
                .as_str()
                .unwrap()
                .contains("[[link]]")
        );
    }

    #[test]
    fn one_result_per_non_open_verdict_in_gate_then_target_order() {
        let f = sample();
        let log = parse(&render(&f.report(), None));
        let seen: Vec<(String, String)> = results(&log)
            .iter()
            .map(|r| {
                (
                    r["ruleId"].as_str().unwrap().to_string(),
                    r["properties"]["target"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        let expected = [
            ("gatefix/trap", "sm_120"),
            ("gatefix/wall", "sm_120"),
            ("gatefix/opportunity", "sm_100"),
            ("gatefix/unverified", "sm_120"),
            ("gatefix/trap", "sm_100"),
        ];
        let expected: Vec<(String, String)> = expected
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        assert_eq!(seen, expected);
        assert_eq!(render(&f.report(), None), render(&f.report(), None));
    }

    #[test]
    fn message_names_target_verdict_site_location_predicate_and_evidence() {
        let f = sample();
        let log = parse(&render(&f.report(), None));
        let text = results(&log)[0]["message"]["text"]
            .as_str()
            .unwrap()
            .to_string();
        let site = f.site.root.display().to_string();
        assert_eq!(
            text,
            format!(
                "sm_120: trap — {}. Gate in flashinfer-python 0.7.2 at flashinfer/jit.py:12:5 \
                 (site {site}): `is_sm100_supported()`; predicate: {}. Evidence: trap evidence; \
                 second",
                Trap.short(),
                f.result.gates[0].predicate
            )
        );
        // A multi-line gate shows its first line only.
        let text = results(&log)[1]["message"]["text"].as_str().unwrap();
        assert!(text.contains("`if major >= 10 and …`"), "{text}");
    }

    #[test]
    fn regions_in_the_site_start_at_one_and_name_the_site_base() {
        let mut f = sample();
        // A degenerate position must still give a valid region.
        let mut bad = gate("sglang", "sglang/a b.py", 0, "x");
        bad.column = 0;
        bad.end_line = 0;
        bad.end_column = 0;
        f.add(bad, &[Wall, Wall]);
        let log = parse(&render(&f.report(), None));
        for result in results(&log) {
            let location = &result["locations"][0]["physicalLocation"];
            assert_eq!(location["artifactLocation"]["uriBaseId"], "SITE");
            let region = &location["region"];
            let start = region["startLine"].as_u64().unwrap();
            let end = region["endLine"].as_u64().unwrap();
            assert!(start >= 1 && end >= start, "{region}");
            assert!(region["startColumn"].as_u64().unwrap() >= 1);
            assert!(region["endColumn"].as_u64().unwrap() >= 1);
        }
        let first = &results(&log)[0]["locations"][0]["physicalLocation"];
        assert_eq!(first["artifactLocation"]["uri"], "flashinfer/jit.py");
        assert_eq!(first["region"]["startLine"], 12);
        assert_eq!(first["region"]["startColumn"], 5);
        let multi = &results(&log)[1]["locations"][0]["physicalLocation"]["region"];
        assert_eq!(
            (multi["startLine"].as_u64(), multi["endLine"].as_u64()),
            (Some(40), Some(41))
        );
        let last = results(&log).last().unwrap();
        assert_eq!(
            last["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            "sglang/a%20b.py"
        );
        let base = log["runs"][0]["originalUriBaseIds"]["SITE"]["uri"]
            .as_str()
            .unwrap();
        assert!(
            base.starts_with("file:///") && base.ends_with('/'),
            "{base}"
        );
    }

    #[test]
    fn anchor_puts_every_result_on_the_distribution_line() {
        let f = sample();
        let anchor = requirements();
        let log = parse(&render(&f.report(), Some(&anchor)));
        assert!(log["runs"][0].get("originalUriBaseIds").is_none());
        let first = &results(&log)[0];
        let location = &first["locations"][0]["physicalLocation"];
        assert_eq!(location["artifactLocation"]["uri"], "requirements.txt");
        assert_eq!(location["artifactLocation"]["uriBaseId"], "%SRCROOT%");
        let region = &location["region"];
        assert_eq!(region["startLine"], 4);
        assert_eq!(region["endLine"], 4);
        assert_eq!(region["startColumn"], 1);
        assert_eq!(
            region["endColumn"],
            "Flashinfer_Python>=0.7".len() as u64 + 1
        );
        // The site location stays in the message and the properties.
        let text = first["message"]["text"].as_str().unwrap();
        assert!(text.contains("at flashinfer/jit.py:12:5 (site "), "{text}");
        assert_eq!(first["properties"]["site_file"], "flashinfer/jit.py");
        let sglang = &results(&log)[1]["locations"][0]["physicalLocation"]["region"];
        assert_eq!(sglang["startLine"], 3);
    }

    #[test]
    fn anchor_region_is_never_empty() {
        let mut f = Fixture::new(&[SM120]);
        f.add(gate("unpinned", "unpinned/a.py", 1, "x"), &[Trap]);
        let anchor = Anchor {
            path: "requirements.txt".into(),
            text: "\ntorch\n".into(),
        };
        let log = parse(&render(&f.report(), Some(&anchor)));
        let region = &results(&log)[0]["locations"][0]["physicalLocation"]["region"];
        assert_eq!(region["startLine"], 1);
        assert_eq!(region["endColumn"], 2);
    }

    #[test]
    fn fingerprint_survives_a_line_shift_and_reindent_but_not_a_new_text() {
        let fingerprint_of = |g: Gate| {
            let mut f = Fixture::new(&[SM120]);
            f.add(g, &[Trap]);
            let log = parse(&render(&f.report(), None));
            results(&log)[0]["partialFingerprints"][FINGERPRINT_KEY]
                .as_str()
                .unwrap()
                .to_string()
        };
        let base = fingerprint_of(gate("sglang", "sglang/x.py", 10, "if a and\n    b:"));
        assert_eq!(base.len(), 64);
        assert!(base.bytes().all(|b| b.is_ascii_hexdigit()));
        let shifted = fingerprint_of(gate("sglang", "sglang/x.py", 250, "if a and\n        b:"));
        assert_eq!(base, shifted);
        let edited = fingerprint_of(gate("sglang", "sglang/x.py", 10, "if a or\n    b:"));
        assert_ne!(base, edited);
        let moved = fingerprint_of(gate("sglang", "sglang/other.py", 10, "if a and\n    b:"));
        assert_ne!(base, moved);
        let g = gate("sglang", "sglang/x.py", 10, "x");
        assert_ne!(
            fingerprint(Trap, &g, "sm_120"),
            fingerprint(Trap, &g, "sm_100")
        );
        assert_ne!(
            fingerprint(Trap, &g, "sm_120"),
            fingerprint(Wall, &g, "sm_120")
        );
    }

    #[test]
    fn without_verdicts_the_log_is_valid_with_rules_and_no_results() {
        let f = sample();
        let mut report = f.report();
        report.verdicts = None;
        let log = parse(&render(&report, None));
        assert_eq!(log["version"], "2.1.0");
        assert!(results(&log).is_empty());
        let rules = log["runs"][0]["tool"]["driver"]["rules"]
            .as_array()
            .unwrap();
        assert_eq!(rules.len(), VerdictKind::ALL.len());
    }

    #[test]
    fn names_are_normalised_per_pep_503() {
        assert_eq!(normalize_name("Flashinfer.Python"), "flashinfer-python");
        assert_eq!(normalize_name("flashinfer__python"), "flashinfer-python");
        assert_eq!(normalize_name("a-_.b"), "a-b");
        assert_ne!(normalize_name("flashinferpython"), "flashinfer-python");
    }

    fn anchor(text: &str) -> Anchor {
        Anchor {
            path: "x".into(),
            text: text.into(),
        }
    }

    #[test]
    fn anchor_line_in_requirements() {
        let text = "# flashinfer-python is pinned below\n\
                    -r base.txt\n\
                    flashinfer-python-extra==1.0\n\
                    flashinfer\n\
                    Flashinfer.Python>=0.7\n\
                    flashinfer-python==0.7.2\n";
        let a = anchor(text);
        assert_eq!(anchor_line(&a, "flashinfer_python"), 5);
        assert_eq!(anchor_line(&a, "flashinfer-python"), 5);
        assert_eq!(anchor_line(&a, "flashinfer"), 4);
        assert_eq!(anchor_line(&a, "torch"), 1);
        assert_eq!(anchor_line(&a, ""), 1);
        let a = anchor("torch==2.8\r\nsglang[all] @ https://example.com/sglang.whl\r\n");
        assert_eq!(anchor_line(&a, "sglang"), 2);
    }

    #[test]
    fn anchor_line_in_pyproject() {
        let text = "[project]\n\
                    name = \"myapp\"\n\
                    dependencies = [\n    \
                    \"torch>=2.8\",\n    \
                    \"flashinfer-python==0.7.2\",\n\
                    ]\n\
                    optional = [\"sglang[all]>=0.5\", \"vllm\"]\n\
                    [tool.poetry.dependencies]\n\
                    vllm = \"^0.9\"\n";
        let a = anchor(text);
        assert_eq!(anchor_line(&a, "Flashinfer_Python"), 5);
        assert_eq!(anchor_line(&a, "myapp"), 2);
        // A quoted requirement inside a one-line array counts only when no line opens with it.
        assert_eq!(anchor_line(&a, "sglang"), 7);
        assert_eq!(anchor_line(&a, "vllm"), 9);
    }

    #[test]
    fn anchor_line_in_lockfiles_prefers_the_package_entry() {
        let uv = "version = 1\n\
                  [[package]]\n\
                  name = \"abc\"\n\
                  dependencies = [\n    \
                  { name = \"flashinfer-python\" },\n\
                  ]\n\
                  [[package]]\n\
                  name = \"flashinfer-python\"\n\
                  version = \"0.7.2\"\n";
        assert_eq!(anchor_line(&anchor(uv), "flashinfer_python"), 8);
        let poetry = "[[package]]\nname = \"Flashinfer_Python\"\nversion = \"0.7.2\"\n";
        assert_eq!(anchor_line(&anchor(poetry), "flashinfer-python"), 2);
        // Only a dependency table names it: that line is the best there is.
        let only_dependency =
            "[[package]]\nname = \"abc\"\ndependencies = [{ name = \"sglang\" }]\n";
        assert_eq!(anchor_line(&anchor(only_dependency), "sglang"), 3);
    }
}
