//! Recall of `gatefix audit` against an independent survey of real wheels (issue 13).
//!
//! `ci/survey.py` lists the architecture decision sites of a site with Python's own `ast` and a
//! small dataflow of its own (no gatefix code). A survey site counts as found when one of
//! gatefix's gate records spans it. The tests print the recall, the sites gatefix misses and the
//! agreement on sm_120 where both sides are definite, and assert the recall floor. Sites the
//! survey lists wrongly are excluded by `ci/survey-exclusions.toml`, each with its reason; an
//! exclusion that matches no site fails the test, so the list cannot go stale silently.
//!
//! They need the wheels of `ci/fetch-wheels.sh` and `python3`, so they are `#[ignore]`d in a
//! plain `cargo test`; `.ci/run` runs them with `--ignored`.

mod common;

use common::audits::audit_wheels;
use common::fixture::wheel_site;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde::Deserialize;
use serde_json::Value;

/// Recall floors. Measured on main at 61bacf4 (2026-12-01): sglang 0.5.23 + flashinfer 0.7.2,
/// survey of `sglang`, 273/392 = 0.696 (agreement at sm_120 79/79); vllm 0.33.0 + flashinfer
/// 0.7.2.post1, survey of `vllm`, 474/665 = 0.713 (78/78). Raised after the override idiom,
/// interface methods and capability named tuples resolved: 333/392 = 0.849 (80/80) and
/// 574/665 = 0.863 (79/79); after `any(...)` unrolling, token-less helpers kept by the
/// chunking and rule-declared parameters in big functions and instance attributes:
/// 339/392 = 0.865 (80/80) and 618/665 = 0.929 (79/79); after try/except bindings, callers
/// in other modules and tuple unpacking: 356/392 = 0.908 (84/84) and 622/665 = 0.935
/// (79/79); with device strings (`f"sm{major}{minor}" == "sm90"`): 360/392 = 0.918; with
/// parameters fed device values by their callers (`gate::feed`) and comments after a `(`:
/// 365/392 = 0.931 (84/84) and 642/665 = 0.965 (79/79); with same-value arms joined past
/// the arm limit: vllm 645/665 = 0.970; with importers of device-name exports relowered
/// (`gate::exports`) and the survey's platform rule (ROCm/MUSA-only arms are not NVIDIA
/// decisions): 369/385 = 0.958 (85/85) and 658/665 = 0.989 (86/86), measured at f6a6547
/// (2026-12-03); with exported deciding helpers and resolution frames (d9716fc): 369/385 =
/// 0.958 (85/85) and 659/665 = 0.991 (86/86); with field defaults free, big tables' small
/// elements and parenthesized arguments (b1f62d4, 2026-12-05): 370/385 = 0.961 (85/85) and
/// 661/665 = 0.994 (87/87); with probe attributes as call results and choices on the
/// configuration free (bb06bdc): 374/385 = 0.971 (87/87); with the values of conditional
/// expressions as sites (11e6e3b): 375/385 = 0.974 (88/88) and 661/665 = 0.994 (88/88).
/// Issue 37's goal is 0.95 on both;
/// the floors keep recall from falling back.
const MIN_RECALL_SGLANG: f64 = 0.96;
const MIN_RECALL_VLLM: f64 = 0.99;

/// flashinfer 0.7.2 on its own (the survey of `flashinfer` over the sglang 0.5.23 site):
/// 584/670 = 0.872 at 7586c9b (2026-12-07); 620/670 = 0.925 after submodule helpers
/// (`common._arch_for(device)`), converted and spread capabilities (f2916bb). Most of what is
/// left are the survey's name guesses (`arch not in record["arches"]`).
const MIN_RECALL_FLASHINFER: f64 = 0.92;

#[derive(Debug, Deserialize)]
struct SurveySite {
    file: String,
    line: u64,
    col: u64,
    end_line: u64,
    end_col: u64,
    kind: String,
    text: String,
    function: String,
    runtime: bool,
    sm_120: String,
    guess: bool,
}

#[derive(Debug, Deserialize)]
struct SurveyDoc {
    sites: Vec<SurveySite>,
    files_parsed: u64,
    seconds: f64,
}

#[derive(Debug, Deserialize)]
struct Exclusion {
    /// The wheel (a file-name prefix, as in `wheel_site`) whose survey lists the site.
    wheel: String,
    file: String,
    text: String,
    why: String,
}

#[derive(Debug, Deserialize)]
struct Exclusions {
    #[serde(default)]
    exclude: Vec<Exclusion>,
}

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The survey of the named top-level packages only: over a whole site (flashinfer's 2,500
/// files included) it takes 4 minutes and 5 GB, over sglang or vllm alone 11-18 s and < 1 GB.
fn survey(site: &Path, packages: &str) -> SurveyDoc {
    let out = Command::new("python3")
        .arg(repo().join("ci/survey.py"))
        .arg(site)
        .arg("--packages")
        .arg(packages)
        .arg("--quiet")
        .output()
        .expect("python3 runs ci/survey.py");
    assert!(
        out.status.success(),
        "ci/survey.py failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("ci/survey.py writes one JSON document")
}

fn exclusions() -> Vec<Exclusion> {
    let path = repo().join("ci/survey-exclusions.toml");
    let text = std::fs::read_to_string(&path).expect("ci/survey-exclusions.toml");
    let parsed: Exclusions =
        toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    for e in &parsed.exclude {
        assert!(
            !e.why.trim().is_empty(),
            "{}: the exclusion of {} {:?} says no reason",
            path.display(),
            e.file,
            e.text
        );
    }
    parsed.exclude
}

/// (line, column) pairs, 1-based; the end is exclusive on both sides.
fn spans(gate: &Value, site: &SurveySite) -> bool {
    let n = |k: &str| gate[k].as_u64().unwrap_or(0);
    (n("line"), n("column")) <= (site.line, site.col)
        && (site.end_line, site.end_col) <= (n("end_line"), n("end_column"))
}

fn exact(gate: &Value, site: &SurveySite) -> bool {
    let n = |k: &str| gate[k].as_u64().unwrap_or(0);
    (n("line"), n("column"), n("end_line"), n("end_column"))
        == (site.line, site.col, site.end_line, site.end_col)
}

struct Measure {
    recall: f64,
}

fn measure(label: &str, prefixes: &[&str], packages: &str) -> Measure {
    let site = wheel_site(prefixes);
    let started = std::time::Instant::now();
    let doc = survey(site.path(), packages);
    let survey_s = started.elapsed().as_secs_f64();
    let started = std::time::Instant::now();
    // The shared audit of the pristine site (`common::audits`): a record spans a survey
    // site whatever the verdicts say, and admissions at sm_120 are in it.
    let gates_doc = audit_wheels(prefixes);
    let audit_s = started.elapsed().as_secs_f64();
    let gates = gates_doc["gates"].as_array().expect("gates");
    let mut by_file: BTreeMap<&str, Vec<&Value>> = BTreeMap::new();
    for g in gates {
        by_file
            .entry(g["file"].as_str().unwrap())
            .or_default()
            .push(g);
    }

    let exclusions = exclusions();
    let mut used = vec![false; exclusions.len()];
    let mut runtime = Vec::new();
    for s in doc.sites.iter().filter(|s| s.runtime) {
        let hit = exclusions.iter().position(|e| {
            prefixes.contains(&e.wheel.as_str()) && e.file == s.file && e.text == s.text
        });
        match hit {
            Some(i) => used[i] = true,
            None => runtime.push(s),
        }
    }
    for (e, used) in exclusions.iter().zip(&used) {
        assert!(
            *used || !prefixes.contains(&e.wheel.as_str()),
            "ci/survey-exclusions.toml: {} {} {:?} matches no survey site on {label}: remove it",
            e.wheel,
            e.file,
            e.text
        );
    }

    let mut found = 0usize;
    let mut found_sure = 0usize;
    let mut sure = 0usize;
    let mut agree = 0usize;
    let mut definite = 0usize;
    let mut misses: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut disagreements = Vec::new();
    for s in &runtime {
        let file_gates = by_file
            .get(s.file.as_str())
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let covering: Vec<&&Value> = file_gates.iter().filter(|g| spans(g, s)).collect();
        if !s.guess {
            sure += 1;
        }
        if covering.is_empty() {
            misses.entry(s.kind.clone()).or_default().push(format!(
                "{}:{}:{} [{}] {}{}",
                s.file,
                s.line,
                s.col,
                s.function,
                s.text,
                if s.guess { "  (guess)" } else { "" }
            ));
            continue;
        }
        found += 1;
        if !s.guess {
            found_sure += 1;
        }
        if s.sm_120 == "unknown" {
            continue;
        }
        if let Some(g) = covering.iter().find(|g| exact(g, s)) {
            let admits = g["admits"]["sm_120"].as_str().unwrap_or("");
            let theirs = match admits {
                "yes" => "true",
                "no" => "false",
                _ => continue,
            };
            definite += 1;
            if theirs == s.sm_120 {
                agree += 1;
            } else {
                disagreements.push(format!(
                    "{}:{}:{} {}  survey {} / gatefix admits {admits}",
                    s.file, s.line, s.col, s.text, s.sm_120
                ));
            }
        }
    }
    let total = runtime.len();
    let ratio = |a: usize, b: usize| if b == 0 { 1.0 } else { a as f64 / b as f64 };
    let recall = ratio(found, total);
    eprintln!(
        "survey {label}: {} files parsed, {} sites, {total} runtime counted ({} excluded), \
         survey {survey_s:.1}s (its own {:.1}s), audit {audit_s:.1}s (shared with the other suites), {} gate records",
        doc.files_parsed,
        doc.sites.len(),
        used.iter().filter(|u| **u).count(),
        doc.seconds,
        gates.len()
    );
    eprintln!(
        "survey {label}: recall {found}/{total} = {recall:.3}; without name guesses \
         {found_sure}/{sure} = {:.3}; agreement at sm_120 {agree}/{definite} = {:.3}",
        ratio(found_sure, sure),
        ratio(agree, definite)
    );
    for (kind, list) in &misses {
        eprintln!("survey {label}: missed {kind}: {}", list.len());
        for m in list {
            eprintln!("  {m}");
        }
    }
    for d in &disagreements {
        eprintln!("survey {label}: disagrees: {d}");
    }
    Measure { recall }
}

/// The survey of `packages` on the site of `prefixes`, its recall held by `floor`.
fn assert_recall(label: &str, prefixes: &[&str], packages: &str, floor: f64) {
    let m = measure(label, prefixes, packages);
    assert!(m.recall >= floor, "recall {:.3} < {floor}", m.recall);
}

#[test]
#[ignore = "needs the pinned wheels (ci/fetch-wheels.sh) and python3"]
fn survey_recall_sglang_0523_flashinfer_072() {
    assert_recall(
        "sglang 0.5.23 + flashinfer 0.7.2",
        &["sglang-0.5.23-", "flashinfer_python-0.7.2-"],
        "sglang",
        MIN_RECALL_SGLANG,
    );
}

#[test]
#[ignore = "needs the pinned wheels (ci/fetch-wheels.sh) and python3"]
fn survey_recall_vllm_0330_flashinfer_072post1() {
    assert_recall(
        "vllm 0.33.0 + flashinfer 0.7.2.post1",
        &["vllm-0.33.0-", "flashinfer_python-0.7.2.post1-"],
        "vllm",
        MIN_RECALL_VLLM,
    );
}

#[test]
#[ignore = "needs the pinned wheels (ci/fetch-wheels.sh) and python3"]
fn survey_recall_flashinfer_072() {
    assert_recall(
        "flashinfer 0.7.2 (beside sglang 0.5.23)",
        &["sglang-0.5.23-", "flashinfer_python-0.7.2-"],
        "flashinfer",
        MIN_RECALL_FLASHINFER,
    );
}
