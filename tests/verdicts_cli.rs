//! Verdicts, CI formats and policy on `testdata/sites/verdicts`: one gate per verdict (the
//! backends of the gated branches, and a call chain followed over three hops to a JIT
//! generator), SARIF and GitHub output anchored to a requirements file, `--fail-on`, and
//! baselines that survive line shifts but report a really new gate.

mod common;

use std::path::{Path, PathBuf};

use common::fixture::{copy_tree, run_env, stderr, stdout};
use serde_json::Value;

const BACKENDS: &str = "sglang/srt/layers/backends.py";

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/sites/verdicts")
}

fn anchor() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/anchors/requirements.txt")
}

fn audit(site: &Path, extra: &[&str]) -> std::process::Output {
    audit_env(site, extra, &[])
}

fn audit_env(site: &Path, extra: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let mut args = vec!["audit".to_string(), site.display().to_string()];
    args.extend(extra.iter().map(|s| s.to_string()));
    run_env(args, env)
}

fn json(site: &Path) -> Value {
    let out = audit(site, &["--format", "json", "--fail-on", "none"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// (verdict at sm_120, evidence) of the gate at `file:line`.
fn verdict_at(doc: &Value, file: &str, line: u64) -> (String, Vec<String>) {
    let gate = doc["gates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["file"] == file && g["line"] == line)
        .unwrap_or_else(|| panic!("no gate at {file}:{line}"));
    let evidence = gate["evidence"]["sm_120"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap().to_string())
        .collect();
    (
        gate["verdict"]["sm_120"].as_str().unwrap().to_string(),
        evidence,
    )
}

#[test]
fn every_verdict_with_its_evidence_chain() {
    let doc = json(&fixture());
    let (wall, evidence) = verdict_at(&doc, BACKENDS, 19);
    assert_eq!(wall, "wall");
    assert!(
        evidence
            .iter()
            .any(|e| e == "chooses backend \"mnnvl\" (a [[backend]] in rules/links.toml)"),
        "{evidence:?}"
    );
    assert!(
        evidence
            .iter()
            .any(|e| e == "flashinfer/jit/comm.py:13 supported_major_versions=[9, 10]"),
        "{evidence:?}"
    );
    assert_eq!(verdict_at(&doc, BACKENDS, 21).0, "opportunity");
    let (trap, evidence) = verdict_at(&doc, BACKENDS, 23);
    assert_eq!(trap, "trap");
    assert!(
        evidence[0].starts_with("admits sm_120: yes"),
        "{evidence:?}"
    );
    assert_eq!(verdict_at(&doc, BACKENDS, 25).0, "open");
    let (unverified, evidence) = verdict_at(&doc, BACKENDS, 33);
    assert_eq!(unverified, "unverified");
    assert!(
        evidence
            .iter()
            .any(|e| e.contains("followed 1 call(s) up to 3 hops")),
        "{evidence:?}"
    );
}

#[test]
fn calls_are_followed_through_imports_to_the_jit_generator() {
    let doc = json(&fixture());
    let (verdict, evidence) = verdict_at(&doc, BACKENDS, 31);
    assert_eq!(verdict, "open");
    let chain: Vec<&String> = evidence
        .iter()
        .filter(|e| e.starts_with("calls "))
        .collect();
    assert_eq!(
        chain,
        [
            "calls sglang.srt.layers.backends:fused_allreduce",
            "calls flashinfer.comm:trtllm_allreduce_fusion",
            "calls flashinfer.jit.comm:gen_trtllm_comm_module",
        ]
    );
}

#[test]
fn a_gate_that_raises_protects_the_code_after_it() {
    let doc = json(&fixture());
    let (verdict, evidence) = verdict_at(&doc, BACKENDS, 43);
    assert!(
        evidence[0].starts_with("the gated branch raises, so the path it protects runs when the gate does not hold: at sm_120 no"),
        "{evidence:?}"
    );
    assert!(
        evidence
            .iter()
            .any(|e| e == "calls flashinfer.jit.comm:gen_trtllm_comm_module"),
        "{evidence:?}"
    );
    assert_eq!(
        verdict, "opportunity",
        "blocks SM12x from a path whose kernel has 12"
    );
}

#[test]
fn human_output_leads_with_traps_then_opportunities() {
    let out = audit(&fixture(), &["--fail-on", "none", "--show", "all"]);
    let text = stdout(&out);
    let trap = text.find("TRAPS (1)").expect("a trap section");
    let opportunity = text
        .find("OPPORTUNITIES (2)")
        .expect("an opportunity section");
    let listing = text.find("\nsglang 0.5.23\n").expect("the full listing");
    assert!(trap < opportunity && opportunity < listing, "{text}");
    assert!(text.contains("verdict: sm_120 wall"));
}

#[test]
fn fail_on_decides_the_exit_code() {
    assert_eq!(
        audit(&fixture(), &[]).status.code(),
        Some(1),
        "a trap fails by default"
    );
    assert_eq!(
        audit(&fixture(), &["--fail-on", "none"]).status.code(),
        Some(0)
    );
    assert_eq!(
        audit(&fixture(), &["--fail-on", "opportunity"])
            .status
            .code(),
        Some(1)
    );
    let out = audit(&fixture(), &["--fail-on", "trap,banana"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("banana"), "{}", stderr(&out));
    let out = audit(&fixture(), &["--no-verdicts"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "no verdicts, nothing to fail on"
    );
}

#[test]
fn sarif_is_structurally_valid_and_anchored_to_the_requirements_file() {
    let anchor = anchor();
    let out = audit(
        &fixture(),
        &[
            "--format",
            "sarif",
            "--anchor",
            anchor.to_str().unwrap(),
            "--fail-on",
            "none",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["version"], "2.1.0");
    assert!(doc["$schema"].as_str().unwrap().contains("sarif-2.1.0"));
    let run = &doc["runs"][0];
    let rules: Vec<&str> = run["tool"]["driver"]["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    let results = run["results"].as_array().unwrap();
    assert!(!results.is_empty());
    for result in results {
        let id = result["ruleId"].as_str().unwrap();
        assert_eq!(rules.iter().filter(|r| **r == id).count(), 1, "{id}");
        assert_eq!(rules[result["ruleIndex"].as_u64().unwrap() as usize], id);
        let location = &result["locations"][0]["physicalLocation"];
        assert!(
            location["artifactLocation"]["uri"]
                .as_str()
                .unwrap()
                .ends_with("requirements.txt")
        );
        let region = &location["region"];
        assert!(region["startLine"].as_u64().unwrap() >= 1);
        assert!(region["endColumn"].as_u64().unwrap() > region["startColumn"].as_u64().unwrap());
        assert!(
            result["partialFingerprints"]
                .as_object()
                .is_some_and(|f| !f.is_empty())
        );
        assert!(
            result["message"]["text"]
                .as_str()
                .unwrap()
                .contains("sm_120")
        );
    }
    // The sglang finding points at the sglang pin (line 4), flashinfer's at line 3.
    let line_of = |needle: &str| {
        results
            .iter()
            .find(|r| r["message"]["text"].as_str().unwrap().contains(needle))
            .map(|r| {
                r["locations"][0]["physicalLocation"]["region"]["startLine"]
                    .as_u64()
                    .unwrap()
            })
            .unwrap()
    };
    assert_eq!(line_of(BACKENDS), 4);
    assert_eq!(line_of("flashinfer/jit/comm.py"), 3);
    assert!(
        !results.iter().any(|r| r["ruleId"] == "gatefix/open"),
        "open verdicts are not results"
    );
}

#[test]
fn github_annotations_and_step_summary() {
    let summary = tempfile::NamedTempFile::new().unwrap();
    let out = audit_env(
        &fixture(),
        &["--format", "github", "--fail-on", "none"],
        &[("GITHUB_STEP_SUMMARY", summary.path().to_str().unwrap())],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let error = text
        .lines()
        .find(|l| l.starts_with("::error "))
        .expect("the trap is an error annotation");
    assert!(error.contains(&format!("file={BACKENDS}")), "{error}");
    assert!(error.contains(",line=23,"), "{error}");
    assert!(
        text.lines().any(|l| l.starts_with("::warning ")),
        "the opportunity is a warning"
    );
    // Messages are one line each: newlines and percent signs are escaped.
    assert!(
        text.lines()
            .all(|l| l.is_empty() || l.starts_with("::") || l.starts_with("gatefix:"))
    );
    let table = std::fs::read_to_string(summary.path()).unwrap();
    assert!(
        table.contains(&format!(
            "| trap | sm_120 | sglang 0.5.23 | `{BACKENDS}:23` |"
        )),
        "the trap's row: {table}"
    );
    assert!(
        table.contains("| target | trap | opportunity | wall | unverified | open |"),
        "{table}"
    );
}

#[test]
fn a_baseline_survives_a_line_shift_and_reports_a_new_gate() {
    let temp = tempfile::tempdir().unwrap();
    let site = temp.path().join("site");
    copy_tree(&fixture(), &site);
    let baseline = temp.path().join("baseline.json");
    let out = audit(
        &site,
        &[
            "--write-baseline",
            baseline.to_str().unwrap(),
            "--fail-on",
            "none",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let strict = [
        "--baseline",
        baseline.to_str().unwrap(),
        "--fail-on",
        "trap,wall,new",
    ];
    assert_eq!(
        audit(&site, &strict).status.code(),
        Some(0),
        "the baseline accepts today's findings"
    );

    let path = site.join(BACKENDS);
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, format!("# moved\n\n\n{text}")).unwrap();
    let shifted = audit(&site, &strict);
    assert_eq!(
        shifted.status.code(),
        Some(0),
        "a line shift raises nothing new: {}",
        stdout(&shifted)
    );

    let with_new = text.replace(
        "def something_else(x):",
        "def newer(x):\n    if is_blackwell_supported():\n        return \"mnnvl\"\n    return x\n\n\ndef something_else(x):",
    );
    std::fs::write(&path, with_new).unwrap();
    assert_eq!(
        audit(&site, &strict).status.code(),
        Some(1),
        "a new trap is new"
    );
    let lenient = [
        "--baseline",
        baseline.to_str().unwrap(),
        "--fail-on",
        "wall",
    ];
    assert_eq!(
        audit(&site, &lenient).status.code(),
        Some(0),
        "a new trap is not a wall"
    );
}

#[test]
fn a_broken_baseline_is_an_input_error() {
    let temp = tempfile::tempdir().unwrap();
    let baseline = temp.path().join("baseline.json");
    std::fs::write(&baseline, "{not json").unwrap();
    let out = audit(&fixture(), &["--baseline", baseline.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("baseline.json"), "{}", stderr(&out));
}
