//! When an audit fails a CI job: `--fail-on` (which verdicts count) and baselines (which
//! findings were already accepted).
//!
//! A baseline names each finding by its verdict, distribution, site file, target and a hash of
//! the gate's whitespace-collapsed text, never by line: an upgrade that only moves a gate raises
//! nothing new, while an edited gate, a new gate or a changed verdict does.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::gate::predicate::collapse_whitespace;
use crate::report::AuditReport;
use crate::scan::Gate;
use crate::verdict::VerdictKind;

/// The baseline file format this build reads and writes.
pub const BASELINE_VERSION: u64 = 1;

/// How many characters of the gate text a baseline keeps for the people who read it.
const BASELINE_TEXT_CHARS: usize = 120;

/// The words `--fail-on` accepts, in the order error messages list them.
const FAIL_ON_WORDS: &str = "trap, opportunity, wall, unverified, new, none";

/// One reason to fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FailOn {
    /// A finding with this verdict (with a baseline: a new one).
    Verdict(VerdictKind),
    /// Any finding that is not in the baseline.
    New,
}

/// What `--fail-on` is when not given: traps, the latent crashes.
pub fn default_fail_on() -> Vec<FailOn> {
    vec![FailOn::Verdict(VerdictKind::Trap)]
}

/// Parses `--fail-on`: a comma-separated list of `trap`, `opportunity`, `wall`, `unverified` and
/// `new`, or `none` alone for an audit that never fails. Duplicates are dropped.
pub fn parse_fail_on(text: &str) -> Result<Vec<FailOn>, String> {
    let words: Vec<&str> = text.split(',').map(str::trim).collect();
    if words.len() == 1 && words[0] == "none" {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for word in words {
        let item = match word {
            "" => {
                return Err(format!(
                    "--fail-on `{text}` has an empty entry; expected a comma-separated list of \
                     {FAIL_ON_WORDS}"
                ));
            }
            "none" => {
                return Err(format!(
                    "--fail-on `none` cannot be combined with other values; expected a \
                     comma-separated list of {FAIL_ON_WORDS}"
                ));
            }
            "new" => FailOn::New,
            _ => match VerdictKind::parse(word) {
                Some(kind) if kind.is_finding() => FailOn::Verdict(kind),
                _ => {
                    return Err(format!(
                        "--fail-on: unknown value `{word}`; expected a comma-separated list of \
                         {FAIL_ON_WORDS}"
                    ));
                }
            },
        };
        if !out.contains(&item) {
            out.push(item);
        }
    }
    Ok(out)
}

/// Lowercase hex SHA-256 of a string.
pub(crate) fn sha256_hex(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The hash a baseline keeps of a gate's text: whitespace runs collapsed to one space first, so
/// reindenting or rewrapping a gate does not change it.
pub fn text_hash(text: &str) -> String {
    sha256_hex(&collapse_whitespace(text))
}

/// What identifies a finding across runs. Ordered for a sorted baseline file.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BaselineKey {
    pub verdict: VerdictKind,
    /// The distribution owning the gate's file; empty when none does.
    pub dist: String,
    /// The gate's file, relative to the site root.
    pub file: String,
    /// The target as printed (`sm_120`, `sm_100a`).
    pub target: String,
    pub text_hash: String,
}

impl BaselineKey {
    pub fn new(kind: VerdictKind, gate: &Gate, target: &str) -> BaselineKey {
        BaselineKey {
            verdict: kind,
            dist: gate.dist.clone().unwrap_or_default(),
            file: gate.file.clone(),
            target: target.to_string(),
            text_hash: text_hash(&gate.text),
        }
    }
}

/// Findings accepted earlier, each with the start of its gate text and how many gates share
/// the key (two identical gates in one file are two findings: a third one is new).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Baseline {
    entries: BTreeMap<BaselineKey, (String, usize)>,
}

/// The file format; `verdict` stays a string here and is checked on reading.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct BaselineFile {
    gatefix_baseline: u64,
    entries: Vec<EntryFile>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct EntryFile {
    verdict: String,
    dist: String,
    file: String,
    target: String,
    text_hash: String,
    #[serde(default)]
    text: String,
    #[serde(default = "one")]
    count: usize,
}

fn one() -> usize {
    1
}

impl Baseline {
    /// Every finding of a report (verdicts other than `open`); empty without verdicts.
    pub fn from_report(report: &AuditReport) -> Baseline {
        let mut baseline = Baseline::default();
        for (gate_index, target_index, kind) in non_open(report) {
            let gate = &report.result.gates[gate_index];
            let key = BaselineKey::new(kind, gate, &report.targets[target_index].to_string());
            let text: String = collapse_whitespace(&gate.text)
                .chars()
                .take(BASELINE_TEXT_CHARS)
                .collect();
            baseline.entries.entry(key).or_insert((text, 0)).1 += 1;
        }
        baseline
    }

    pub fn contains(&self, key: &BaselineKey) -> bool {
        self.entries.contains_key(key)
    }

    /// How many findings with this key the baseline accepts.
    pub fn count(&self, key: &BaselineKey) -> usize {
        self.entries.get(key).map_or(0, |(_, count)| *count)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The keys, sorted.
    pub fn keys(&self) -> impl Iterator<Item = &BaselineKey> {
        self.entries.keys()
    }

    /// The baseline as its file holds it: pretty JSON, entries sorted, with a trailing newline.
    pub fn to_json(&self) -> String {
        let file = BaselineFile {
            gatefix_baseline: BASELINE_VERSION,
            entries: self
                .entries
                .iter()
                .map(|(key, (text, count))| EntryFile {
                    verdict: key.verdict.name().to_string(),
                    dist: key.dist.clone(),
                    file: key.file.clone(),
                    target: key.target.clone(),
                    text_hash: key.text_hash.clone(),
                    text: text.clone(),
                    count: *count,
                })
                .collect(),
        };
        let mut text = serde_json::to_string_pretty(&file).expect("JSON of plain data");
        text.push('\n');
        text
    }

    /// Parses a baseline; `origin` names the file in errors.
    pub fn from_json(text: &str, origin: &str) -> Result<Baseline, String> {
        let value: serde_json::Value = serde_json::from_str(text)
            .map_err(|err| format!("baseline {origin}: not valid JSON: {err}"))?;
        match value.get("gatefix_baseline") {
            None => {
                return Err(format!(
                    "baseline {origin}: not a gatefix baseline (no `gatefix_baseline` field)"
                ));
            }
            Some(version) if version.as_u64() != Some(BASELINE_VERSION) => {
                return Err(format!(
                    "baseline {origin}: format version {version} is not supported; this gatefix \
                     reads version {BASELINE_VERSION} (write a new one with this version)"
                ));
            }
            Some(_) => {}
        }
        let file: BaselineFile =
            serde_json::from_value(value).map_err(|err| format!("baseline {origin}: {err}"))?;
        let mut baseline = Baseline::default();
        for (index, entry) in file.entries.into_iter().enumerate() {
            let verdict = VerdictKind::parse(&entry.verdict)
                .filter(|kind| kind.is_finding())
                .ok_or_else(|| {
                    format!(
                        "baseline {origin}: entry {index}: unknown verdict `{}`; expected trap, \
                         opportunity, wall or unverified",
                        entry.verdict
                    )
                })?;
            let hex = entry.text_hash.len() == 64
                && entry
                    .text_hash
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
            if !hex {
                return Err(format!(
                    "baseline {origin}: entry {index}: text_hash `{}` is not a lowercase SHA-256 \
                     hex digest",
                    entry.text_hash
                ));
            }
            let key = BaselineKey {
                verdict,
                dist: entry.dist,
                file: entry.file,
                target: entry.target,
                text_hash: entry.text_hash,
            };
            baseline.entries.entry(key).or_insert((entry.text, 0)).1 += entry.count.max(1);
        }
        Ok(baseline)
    }

    /// Writes the baseline, replacing the file in one rename so a failed write never leaves
    /// half a baseline.
    pub fn write(&self, path: &Path) -> Result<(), String> {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "baseline".into());
        let temporary = path.with_file_name(format!(".{name}.gatefix-tmp"));
        std::fs::write(&temporary, self.to_json())
            .and_then(|()| std::fs::rename(&temporary, path))
            .map_err(|err| {
                let _ = std::fs::remove_file(&temporary);
                format!("cannot write baseline {}: {err}", path.display())
            })
    }

    pub fn read(path: &Path) -> Result<Baseline, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|err| format!("cannot read baseline {}: {err}", path.display()))?;
        Baseline::from_json(&text, &path.display().to_string())
    }
}

/// One gate's non-open verdict at one target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Finding {
    /// Index into the report's `result.gates`.
    pub gate_index: usize,
    /// Index into the report's `targets`.
    pub target_index: usize,
    pub kind: VerdictKind,
    /// A baseline was given and does not hold this finding.
    pub new: bool,
    /// A baseline was given and holds this finding: it was accepted and never fails the audit.
    /// (`new` alone cannot tell "no baseline" from "in the baseline".)
    pub accepted: bool,
}

/// (gate index, target index, kind) of every finding (`VerdictKind::is_finding`), in report
/// order.
fn non_open(report: &AuditReport) -> Vec<(usize, usize, VerdictKind)> {
    let Some(verdicts) = report.verdicts else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (gate_index, per_target) in verdicts.iter().enumerate().take(report.result.gates.len()) {
        for (target_index, verdict) in per_target.iter().enumerate().take(report.targets.len()) {
            if verdict.kind.is_finding() {
                out.push((gate_index, target_index, verdict.kind));
            }
        }
    }
    out
}

/// Every non-open verdict of the report, in gate then target order, marked new when a baseline
/// is given and does not hold it.
pub fn findings(report: &AuditReport, baseline: Option<&Baseline>) -> Vec<Finding> {
    let mut seen: std::collections::HashMap<BaselineKey, usize> = Default::default();
    non_open(report)
        .into_iter()
        .map(|(gate_index, target_index, kind)| {
            let in_baseline = baseline.map(|baseline| {
                let gate = &report.result.gates[gate_index];
                let target = report.targets[target_index].to_string();
                let key = BaselineKey::new(kind, gate, &target);
                let accepted = baseline.count(&key);
                let nth = seen.entry(key).or_insert(0);
                *nth += 1;
                *nth <= accepted
            });
            Finding {
                gate_index,
                target_index,
                kind,
                new: in_baseline == Some(false),
                accepted: in_baseline == Some(true),
            }
        })
        .collect()
}

/// Whether the audit fails.
///
/// Without a baseline every finding counts: the audit fails when some finding's verdict is in
/// `fail_on`. `New` then matches nothing, since nothing is new without a baseline.
///
/// With a baseline, the baseline means "accepted": findings it holds (`accepted`) never fail the
/// audit, whatever `fail_on` says, so `Verdict(kind)` only counts *new* findings of that kind.
/// The audit fails when a new finding's verdict is in `fail_on`, or when `New` is in `fail_on`
/// and any finding is new.
pub fn should_fail(findings: &[Finding], fail_on: &[FailOn]) -> bool {
    findings
        .iter()
        .filter(|finding| !finding.accepted)
        .any(|finding| {
            fail_on.iter().any(|rule| match rule {
                FailOn::Verdict(kind) => *kind == finding.kind,
                FailOn::New => finding.new,
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::sarif::fixture::{Fixture, SM100, SM120, gate};
    use VerdictKind::{Open, Opportunity, Trap, Unverified, Wall};

    #[test]
    fn fail_on_parses_lists_and_none() {
        assert_eq!(parse_fail_on("trap"), Ok(vec![FailOn::Verdict(Trap)]));
        assert_eq!(
            parse_fail_on(" trap , wall,opportunity,unverified ,new,trap"),
            Ok(vec![
                FailOn::Verdict(Trap),
                FailOn::Verdict(Wall),
                FailOn::Verdict(Opportunity),
                FailOn::Verdict(Unverified),
                FailOn::New,
            ])
        );
        assert_eq!(parse_fail_on(" none "), Ok(vec![]));
        assert_eq!(default_fail_on(), vec![FailOn::Verdict(Trap)]);
    }

    #[test]
    fn fail_on_errors_name_the_word_and_the_choices() {
        let err = parse_fail_on("trap,traps").unwrap_err();
        assert!(err.contains("`traps`"), "{err}");
        assert!(
            err.contains("trap, opportunity, wall, unverified, new, none"),
            "{err}"
        );
        // `open` is a verdict but never a reason to fail.
        assert!(parse_fail_on("open").unwrap_err().contains("`open`"));
        assert!(parse_fail_on("").unwrap_err().contains("empty entry"));
        assert!(
            parse_fail_on("trap,,wall")
                .unwrap_err()
                .contains("empty entry")
        );
        assert!(parse_fail_on("Trap").is_err(), "values are lowercase");
        assert!(
            parse_fail_on("none,trap")
                .unwrap_err()
                .contains("cannot be combined")
        );
    }

    #[test]
    fn text_hash_ignores_whitespace_layout_only() {
        assert_eq!(text_hash("if a and\n    b:"), text_hash("if a and  b:"));
        assert_ne!(text_hash("if a and b:"), text_hash("if a or b:"));
        assert_eq!(
            text_hash("x"),
            "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881"
        );
    }

    fn sample(shift: u32) -> Fixture {
        let mut f = Fixture::new(&[SM120, SM100]);
        f.add(
            gate(
                "flashinfer-python",
                "flashinfer/a.py",
                10 + shift,
                "is_sm100_supported()",
            ),
            &[Trap, Open],
        );
        f.add(
            gate(
                "sglang",
                "sglang/b.py",
                40 + shift,
                "if major >= 10 and\n    minor == 0:",
            ),
            &[Wall, Opportunity],
        );
        f.add(
            gate("sglang", "sglang/c.py", 5 + shift, "sm >= 90"),
            &[Open, Open],
        );
        f
    }

    #[test]
    fn baseline_holds_non_open_findings_sorted_and_deduplicated() {
        let mut f = sample(0);
        // The same gate text twice in one file is one entry.
        f.add(
            gate(
                "sglang",
                "sglang/b.py",
                90,
                "if major >= 10 and minor == 0:",
            ),
            &[Wall, Opportunity],
        );
        let baseline = Baseline::from_report(&f.report());
        let keys: Vec<(VerdictKind, &str, &str)> = baseline
            .keys()
            .map(|k| (k.verdict, k.file.as_str(), k.target.as_str()))
            .collect();
        assert_eq!(
            keys,
            [
                (Trap, "flashinfer/a.py", "sm_120"),
                (Opportunity, "sglang/b.py", "sm_100"),
                (Wall, "sglang/b.py", "sm_120"),
            ]
        );
        let mut report = f.report();
        report.verdicts = None;
        assert!(Baseline::from_report(&report).is_empty());
    }

    #[test]
    fn baseline_file_round_trips_and_keeps_short_text() {
        let mut f = sample(0);
        let long = format!("flag = {}", "x or ".repeat(60));
        f.add(
            gate("sglang", "sglang/long.py", 1, &long),
            &[Unverified, Open],
        );
        let baseline = Baseline::from_report(&f.report());
        let json = baseline.to_json();
        let value: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(value["gatefix_baseline"], 1);
        let entries = value["entries"].as_array().unwrap();
        assert_eq!(entries.len(), 4);
        let first = &entries[0];
        assert_eq!(first["verdict"], "trap");
        assert_eq!(first["dist"], "flashinfer-python");
        assert_eq!(first["file"], "flashinfer/a.py");
        assert_eq!(first["target"], "sm_120");
        assert_eq!(first["text"], "is_sm100_supported()");
        assert_eq!(first["text_hash"], text_hash("is_sm100_supported()"));
        let long_entry = entries
            .iter()
            .find(|e| e["file"] == "sglang/long.py")
            .unwrap();
        assert_eq!(long_entry["text"].as_str().unwrap().chars().count(), 120);

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gatefix-baseline.json");
        baseline.write(&path).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), json);
        assert_eq!(Baseline::read(&path).unwrap(), baseline);
        let leftovers = std::fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(leftovers, 1, "no temporary file left behind");
    }

    #[test]
    fn reading_a_bad_baseline_names_the_file_and_the_problem() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("base.json");
        let read = |text: &str| {
            std::fs::write(&path, text).unwrap();
            Baseline::read(&path).unwrap_err()
        };
        let name = path.display().to_string();
        let err = read("{ not json");
        assert!(
            err.contains(&name) && err.contains("not valid JSON"),
            "{err}"
        );
        let err = read(r#"{"entries": []}"#);
        assert!(
            err.contains(&name) && err.contains("not a gatefix baseline"),
            "{err}"
        );
        let err = read(r#"{"gatefix_baseline": 2, "entries": []}"#);
        assert!(
            err.contains("version 2") && err.contains("reads version 1"),
            "{err}"
        );
        let hash = text_hash("x");
        let entry = |verdict: &str, hash: &str| {
            format!(
                r#"{{"gatefix_baseline": 1, "entries": [{{"verdict": "{verdict}", "dist": "d",
                "file": "f.py", "target": "sm_120", "text_hash": "{hash}", "text": "x"}}]}}"#
            )
        };
        assert!(read(&entry("trapp", &hash)).contains("unknown verdict `trapp`"));
        assert!(read(&entry("open", &hash)).contains("unknown verdict `open`"));
        assert!(read(&entry("trap", "abc")).contains("not a lowercase SHA-256"));
        let err = read(r#"{"gatefix_baseline": 1, "entries": [{"verdict": "trap"}]}"#);
        assert!(
            err.contains(&name) && err.contains("missing field"),
            "{err}"
        );
        std::fs::write(&path, entry("trap", &hash)).unwrap();
        assert_eq!(Baseline::read(&path).unwrap().len(), 1);
        let missing = dir.path().join("absent.json");
        let err = Baseline::read(&missing).unwrap_err();
        assert!(err.contains("absent.json"), "{err}");
    }

    #[test]
    fn a_line_shift_raises_nothing_new_and_a_new_gate_is_new() {
        let baseline = Baseline::from_report(&sample(0).report());
        let shifted = sample(37);
        let found = findings(&shifted.report(), Some(&baseline));
        assert_eq!(found.len(), 3);
        assert!(found.iter().all(|f| !f.new && f.accepted), "{found:?}");

        let mut grown = sample(37);
        grown.add(
            gate("sglang", "sglang/d.py", 3, "is_hopper()"),
            &[Open, Trap],
        );
        // An edited gate is a new finding too.
        grown.result.gates[0].text = "is_sm100_supported() or is_sm120()".into();
        let found = findings(&grown.report(), Some(&baseline));
        let new: Vec<(usize, usize, VerdictKind)> = found
            .iter()
            .filter(|f| f.new)
            .map(|f| (f.gate_index, f.target_index, f.kind))
            .collect();
        assert_eq!(new, [(0, 0, Trap), (3, 1, Trap)]);
        assert!(found.iter().all(|f| f.new != f.accepted));

        // A changed verdict is new as well.
        let mut changed = sample(0);
        changed.verdicts[1][0].kind = Trap;
        let found = findings(&changed.report(), Some(&baseline));
        assert_eq!(found.iter().filter(|f| f.new).count(), 1);

        let found = findings(&grown.report(), None);
        assert_eq!(found.len(), 4);
        assert!(found.iter().all(|f| !f.new && !f.accepted));
    }

    #[test]
    fn should_fail_without_a_baseline_counts_every_finding() {
        let report_fixture = sample(0);
        let found = findings(&report_fixture.report(), None);
        assert!(should_fail(&found, &default_fail_on()));
        assert!(!should_fail(&found, &[]));
        assert!(!should_fail(&found, &[FailOn::Verdict(Unverified)]));
        assert!(should_fail(&found, &[FailOn::Verdict(Wall)]));
        assert!(
            !should_fail(&found, &[FailOn::New]),
            "nothing is new without a baseline"
        );
        let no_trap: Vec<Finding> = found.iter().copied().filter(|f| f.kind != Trap).collect();
        assert!(!should_fail(&no_trap, &default_fail_on()));
    }

    #[test]
    fn should_fail_with_a_baseline_counts_only_new_findings() {
        let baseline = Baseline::from_report(&sample(0).report());
        // Everything accepted: even a trap in the baseline does not fail.
        let found = findings(&sample(5).report(), Some(&baseline));
        assert!(!should_fail(&found, &default_fail_on()));
        assert!(!should_fail(&found, &[FailOn::New, FailOn::Verdict(Wall)]));

        // A new wall: fails on `new` or `wall`, not on `trap`.
        let mut grown = sample(5);
        grown.add(
            gate("sglang", "sglang/e.py", 1, "is_blackwell()"),
            &[Wall, Open],
        );
        let found = findings(&grown.report(), Some(&baseline));
        assert!(!should_fail(&found, &default_fail_on()));
        assert!(should_fail(&found, &[FailOn::New]));
        assert!(should_fail(&found, &[FailOn::Verdict(Wall)]));
        assert!(!should_fail(&found, &[FailOn::Verdict(Opportunity)]));

        // A new trap fails the default.
        let mut trapped = sample(5);
        trapped.add(
            gate("sglang", "sglang/f.py", 1, "is_sm120()"),
            &[Trap, Open],
        );
        let found = findings(&trapped.report(), Some(&baseline));
        assert!(should_fail(&found, &default_fail_on()));
    }
}
