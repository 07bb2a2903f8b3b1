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

/// The JSON audit of `site` at these targets (exit 0 required).
fn json_at(site: &Path, targets: &[&str]) -> Value {
    let mut args = vec!["--format", "json", "--fail-on", "none"];
    for target in targets {
        args.extend(["-t", target]);
    }
    let out = audit(site, &args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The gate record at `file:line`.
fn gate_at<'d>(doc: &'d Value, file: &str, line: u64) -> &'d Value {
    doc["gates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["file"] == file && g["line"] == line)
        .unwrap_or_else(|| panic!("no gate at {file}:{line}"))
}

/// (file, line, verdict at sm_120) of each gate in the files under `prefix`, in report order.
fn verdict_table(doc: &Value, prefix: &str) -> Vec<(String, u64, String)> {
    doc["gates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["file"].as_str().unwrap().starts_with(prefix))
        .map(|g| {
            (
                g["file"].as_str().unwrap().to_string(),
                g["line"].as_u64().unwrap(),
                g["verdict"]["sm_120"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// (verdict at sm_120, evidence) of the gate at `file:line`.
fn verdict_at(doc: &Value, file: &str, line: u64) -> (String, Vec<String>) {
    let gate = gate_at(doc, file, line);
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
            .any(|e| e.contains("followed 1 call(s) up to 6 hops")),
        "{evidence:?}"
    );
}

/// Each verdict names the kernels it rests on in one line each (`kernels` in the JSON): the
/// kernel, whether it is there at the target, how, and what was read of it (the arch list, each
/// layer's answer); a gate linked to no kernel names none.
#[test]
fn each_verdict_names_its_kernels_with_their_layers() {
    let doc = json(&fixture());
    let kernels_at = |line: u64| -> Vec<Value> {
        gate_at(&doc, BACKENDS, line)["kernels"]["sm_120"]
            .as_array()
            .unwrap()
            .clone()
    };
    // The wall: the mnnvl backend's JIT generator, missing at sm_120, and the layer that
    // says so.
    let wall = kernels_at(19);
    assert_eq!(wall.len(), 1, "{wall:?}");
    assert_eq!(
        wall[0]["kernel"],
        "JIT generator flashinfer.jit.comm:gen_trtllm_mnnvl_comm_module"
    );
    assert_eq!(wall[0]["at_target"], "missing");
    assert_eq!(wall[0]["alternative"], false);
    let found: Vec<&str> = wall[0]["found"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    assert!(
        found.contains(&"flashinfer/jit/comm.py:13 supported_major_versions=[9, 10]"),
        "{found:?}"
    );
    assert!(found.iter().any(|l| l.starts_with("L3 ")), "{found:?}");
    // Every kernel named is one the evidence needs, in the same words.
    for line in [19, 21, 23, 25, 31] {
        let (_, evidence) = verdict_at(&doc, BACKENDS, line);
        let kernels = kernels_at(line);
        assert!(!kernels.is_empty(), "{line}");
        for kernel in kernels {
            let name = kernel["kernel"].as_str().unwrap();
            assert!(
                evidence
                    .iter()
                    .any(|e| e.starts_with(&format!("needs {name}: "))),
                "{line}: {name} not in {evidence:?}"
            );
        }
    }
    let present = kernels_at(25);
    assert_eq!(present[0]["at_target"], "present", "{present:?}");
    assert!(!present[0]["how"].as_str().unwrap().is_empty());
    assert!(kernels_at(33).is_empty());
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
    let trap = text.find("TRAPS (2)").expect("a trap section");
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
    let hook = audit(&site, &[&strict[..], &["--color", "never"]].concat());
    assert_eq!(hook.status.code(), Some(1), "a new trap is new");
    // What the pre-commit hook shows: the new trap, the old findings only counted.
    let text = stdout(&hook);
    assert!(text.contains("TRAPS (1 new, 2 in the baseline)"), "{text}");
    let listed: Vec<&str> = text
        .lines()
        .filter(|l| l.trim_start().starts_with("sglang/"))
        .collect();
    assert_eq!(listed.len(), 1, "{text}");
    assert!(listed[0].contains(&format!("{BACKENDS}:39")), "{text}");
    // GitHub: the new trap alone is annotated, after a line counting both.
    let github = stdout(&audit(
        &site,
        &[&strict[..], &["--format", "github"]].concat(),
    ));
    let annotations: Vec<&str> = github
        .lines()
        .filter(|l| l.starts_with("::"))
        .map(|l| l.split("::").nth(1).unwrap())
        .collect();
    assert_eq!(annotations.len(), 1, "{github}");
    assert!(annotations[0].contains(",line=39,"), "{annotations:?}");
    assert!(github.starts_with("gatefix: 1 new finding(s), 7 in the baseline"));
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

fn flags_site() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/sites/flags")
}

/// Every gate of the flag-flow site with its verdict at sm_120 (missing and extra both fail).
#[test]
fn flags_are_followed_from_the_store_to_the_reads_and_their_kernels() {
    let doc = json(&flags_site());
    let mut verdicts: Vec<(String, u64, String)> = doc["gates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["dist"] == "sglang")
        .map(|g| {
            (
                g["file"].as_str().unwrap().to_string(),
                g["line"].as_u64().unwrap(),
                g["verdict"]["sm_120"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    verdicts.sort();
    let expected = [
        ("sglang/srt/layers/backends.py", 17, "wall"),
        ("sglang/srt/layers/backends.py", 18, "open"),
        ("sglang/srt/layers/backends.py", 20, "wall"),
        ("sglang/srt/layers/backends.py", 26, "unverified"),
        ("sglang/srt/layers/backends.py", 27, "open"),
        ("sglang/srt/layers/checks.py", 15, "wall"),
        ("sglang/srt/layers/checks.py", 25, "unverified"),
        ("sglang/srt/layers/checks.py", 36, "unverified"),
        // An `assert` on the device: the code after it is what it guards; in a check's own
        // body, the code after the check's calls.
        ("sglang/srt/layers/checks.py", 48, "wall"),
        ("sglang/srt/layers/checks.py", 53, "opportunity"),
        ("sglang/srt/layers/fusion.py", 11, "wall"),
        ("sglang/srt/layers/fusion.py", 25, "opportunity"),
        ("sglang/srt/layers/fusion.py", 37, "wall"),
        ("sglang/srt/layers/fusion.py", 44, "open"),
        ("sglang/srt/server_args.py", 14, "trap"),
        ("sglang/srt/server_args.py", 16, "open"),
        // Predicate helpers: what their calls decide, joined (one missing kernel under
        // `is_sm100_supported()` makes opening it a wall; `is_sm90_supported` is never called).
        ("sglang/srt/utils.py", 14, "unverified"),
        ("sglang/srt/utils.py", 19, "wall"),
        ("sglang/srt/utils.py", 24, "open"),
        ("sglang/srt/utils.py", 29, "trap"),
    ];
    let expected: Vec<(String, u64, String)> = expected
        .iter()
        .map(|(f, l, v)| (f.to_string(), *l, v.to_string()))
        .collect();
    assert_eq!(verdicts, expected);

    let (_, evidence) = verdict_at(&doc, "sglang/srt/layers/checks.py", 48);
    assert_eq!(
        evidence[1..4],
        [
            "sglang/srt/layers/checks.py:48 asserts it; followed the code after",
            "calls sglang.srt.layers.checks:mnnvl_launch",
            "calls flashinfer.jit.comm:gen_trtllm_mnnvl_comm_module",
        ],
        "{evidence:#?}"
    );
    let (_, evidence) = verdict_at(&doc, "sglang/srt/layers/checks.py", 53);
    assert_eq!(
        evidence[1..4],
        [
            "sglang/srt/layers/checks.py:53 require_sm100() raises unless it holds",
            "sets the code after the calls of require_sm100()",
            "read at sglang/srt/layers/checks.py:58 calls require_sm100(); followed the code after it",
        ],
        "{evidence:#?}"
    );

    // A dataclass field set in a gated branch, read through the global accessor.
    let (_, evidence) = verdict_at(&doc, "sglang/srt/server_args.py", 14);
    let hops: Vec<&str> = evidence
        .iter()
        .map(String::as_str)
        .filter(|e| !e.starts_with("admits") && !e.starts_with("a path not taken"))
        // The kernel layers under the generator (L3 guards, L4 checks) are the kernel's own
        // evidence, tested in tests/kernel_layers.rs; the hops end at the generator.
        .filter(|e| !(e.starts_with('L') && e.as_bytes().get(1).is_some_and(u8::is_ascii_digit)))
        .collect();
    assert_eq!(
        hops,
        [
            "sglang/srt/server_args.py:14 gated branch",
            "sglang/srt/server_args.py:15 stores the flag",
            "sets attribute .enable_fusion",
            "read at sglang/srt/layers/fusion.py:19 its branch runs when it holds",
            "calls sglang.srt.layers.fusion:mnnvl_fusion",
            "calls flashinfer.jit.comm:gen_trtllm_mnnvl_comm_module",
            "needs JIT generator flashinfer.jit.comm:gen_trtllm_mnnvl_comm_module: MISSING at sm_120",
            "flashinfer/jit/comm.py:13 supported_major_versions=[9, 10]",
        ]
    );
    // The read that also needs `is_sm100_supported()` is not taken at sm_120.
    assert!(
        evidence.iter().any(|e| e.starts_with(
            "a path not taken at sm_120: sglang/srt/layers/fusion.py:25 `get_global_server_args().enable_fusion and is_sm100_supported()` blocks it"
        )),
        "{evidence:?}"
    );

    // An environment variable set in a gated branch, read with os.environ.get(...) == "1".
    let (_, evidence) = verdict_at(&doc, "sglang/srt/server_args.py", 16);
    assert!(
        evidence.contains(&"sets environment variable SGL_FUSION_TRTLLM".to_string())
            && evidence.contains(
                &"read at sglang/srt/layers/fusion.py:31 its branch runs when it holds".to_string()
            ),
        "{evidence:?}"
    );

    // A cached module global, read in its module.
    let (_, evidence) = verdict_at(&doc, "sglang/srt/layers/fusion.py", 11);
    assert!(
        evidence.contains(&"sets global sglang.srt.layers.fusion._use_mnnvl".to_string()),
        "{evidence:?}"
    );

    // A flag read by a check that raises for one backend only (`backend == "mnnvl" and not
    // eligible`): the code after it runs on every GPU for the other backends, so it is not
    // what the gate decides; the branch that reads the flag again is, and the condition
    // around that read (a gate because `eligible` is) is the flag's own test, not another
    // gate that blocks the path.
    let (_, evidence) = verdict_at(&doc, "sglang/srt/layers/backends.py", 17);
    assert!(
        evidence.contains(
            &"sglang/srt/layers/backends.py:17 stores it in the local eligible -> sglang/srt/layers/backends.py:20 its branch runs when it holds"
                .to_string()
        ) && !evidence.iter().any(|e| e.contains("returns early unless it holds")
            || e.starts_with("a path not taken")),
        "{evidence:?}"
    );
    // Read only by such a check: no verdict, and the stop says why.
    let (_, evidence) = verdict_at(&doc, "sglang/srt/layers/backends.py", 26);
    assert!(
        evidence.iter().any(|e| e.contains(
            "sglang/srt/layers/backends.py:27 branches on it only together with conditions that are no gate"
        )) && evidence.contains(&"stop: not-decided".to_string()),
        "{evidence:?}"
    );

    // A check that raises, called as a statement: the code after the call is what it guards.
    let (_, evidence) = verdict_at(&doc, "sglang/srt/layers/checks.py", 15);
    assert!(
        evidence.contains(
            &"read at sglang/srt/layers/checks.py:20 calls require_sm90(); followed the code after it"
                .to_string()
        ),
        "{evidence:?}"
    );
    // A function that raises and then does the work: its result (`out = fp8_attention(q)`)
    // is no flag, and the kernel its caller launches next is not what the gate guards.
    let (_, evidence) = verdict_at(&doc, "sglang/srt/layers/checks.py", 25);
    assert!(
        evidence.iter().any(|e| e.contains(
            "first stop: sglang/srt/layers/checks.py:31 uses the result of fp8_attention(), which raises where the gate holds"
        )),
        "{evidence:?}"
    );
    assert!(
        !evidence.iter().any(|e| e.contains("mnnvl")),
        "{evidence:?}"
    );

    // A procedure that returns nothing early (`if major != 12: return`, then tunes): its
    // caller goes on either way, so `pin_block(x)` is no check and the kernel launched after
    // it is not what the gate guards.
    let (_, evidence) = verdict_at(&doc, "sglang/srt/layers/checks.py", 36);
    assert!(
        evidence.iter().any(|e| e.contains(
            "the function returns nothing where the gate fails, so its callers go on either way"
        )) && !evidence.iter().any(|e| e.contains("mnnvl")),
        "{evidence:?}"
    );

    // A predicate helper's definition: its calls are followed like a flag's reads, each to
    // the kernel its branch reaches.
    let (_, evidence) = verdict_at(&doc, "sglang/srt/utils.py", 24);
    let reads: Vec<&str> = evidence
        .iter()
        .map(String::as_str)
        .filter(|e| e.contains("returns it") || e.starts_with("read at"))
        .collect();
    assert_eq!(
        reads,
        [
            "sglang/srt/utils.py:24 is_sm120_supported() returns it",
            "read at sglang/srt/layers/fusion.py:44 its branch runs when it holds",
            "sglang/srt/utils.py:24 is_sm120_supported() returns it",
            "read at sglang/srt/server_args.py:16 its branch runs when it holds",
            "read at sglang/srt/layers/fusion.py:31 its branch runs when it holds",
        ]
    );
    let (_, evidence) = verdict_at(&doc, "sglang/srt/utils.py", 14);
    assert!(
        evidence.contains(&"stop: entry-point".to_string()),
        "{evidence:?}"
    );

    // self.m(): the method of this module.
    let (_, evidence) = verdict_at(&doc, "sglang/srt/layers/fusion.py", 44);
    assert!(
        evidence.contains(
            &"calls sglang/srt/layers/fusion.py:48 (the _launch of this module)".to_string()
        ),
        "{evidence:?}"
    );
}

/// L5: CuTe DSL kernels judged by the `admissible_archs` (or `__post_init__` arch check) of
/// the ops they build, directly or through a DSL helper (`testdata/sites/dsl/README.md`).
#[test]
fn cute_dsl_kernels_decide_verdicts_by_their_ops_admission() {
    let site = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/sites/dsl");
    let doc = json_at(&site, &["sm_90", "sm_100", "sm_120", "sm_121"]);
    let gates = doc["gates"].as_array().unwrap();
    let table: Vec<(u64, Vec<&str>)> = gates
        .iter()
        .filter(|g| g["file"] == "gemmlib/gemm.py")
        .map(|g| {
            let at = |t: &str| g["verdict"][t].as_str().unwrap();
            (
                g["line"].as_u64().unwrap(),
                vec![at("sm_90"), at("sm_100"), at("sm_120"), at("sm_121")],
            )
        })
        .collect();
    assert_eq!(
        table,
        vec![
            // major == 12 → the warp block-scaled op, which checks arch == sm_120a: a trap
            // on sm_121 (DGX Spark), as in cutlass' warp/mma.py.
            (11, vec!["wall", "wall", "open", "trap"]),
            // major == 10 → the tcgen05 op through blackwell_helpers: [sm_100a, sm_103a].
            (13, vec!["wall", "open", "wall", "wall"]),
            // major >= 10 lets sm_120 onto the SM100 kernel: OpError at compile time.
            (20, vec!["wall", "open", "trap", "trap"]),
            // major >= 9 → a kernel for every arch, whose tcgen05 op is built only in the
            // `else` of `if const_expr(self.arch // 10 in [8, 12])` / `elif ... == 9`: the
            // scan's gates on those tests keep it out at sm_90, sm_120 and sm_121.
            (27, vec!["open", "open", "open", "open"]),
        ]
    );
    let (_, evidence) = verdict_at(&doc, "gemmlib/gemm.py", 27);
    assert!(
        evidence.iter().any(|e| e
            == "L5 DSL admission yes: every CuTe DSL op gemmlib.kernels.gemm_any:run_any builds \
                admits sm_120a (left out: gemmlib/kernels/gemm_any.py:28 run_any builds \
                tcgen05.MmaMXF4NVF4Op through AnyArchGemmKernel > \
                cutlass.utils.blackwell_helpers.make_blockscaled_trivial_tiled_mma only where \
                gemmlib/kernels/gemm_any.py:16 `self.arch // 10 in [8, 12]` fails: not at \
                sm_120a)"),
        "{evidence:#?}"
    );
    let (_, evidence) = verdict_at(&doc, "gemmlib/gemm.py", 20);
    assert!(
        evidence.iter().any(|e| e
            == "L5 DSL admission gemmlib/kernels/gemm_sm100.py:12 run_sm100 builds \
                tcgen05.MmaMXF4NVF4Op through Sm100BlockScaledGemmKernel > \
                cutlass.utils.blackwell_helpers.make_blockscaled_trivial_tiled_mma \
                (cutlass/cute/nvgpu/tcgen05/mma.py:20 admits [sm_100a, sm_103a]): \
                does not admit sm_120a"),
        "{evidence:#?}"
    );
}

/// L5 for kernels that drive tcgen05 through MLIR's `nvvm` dialect (`nvvm.tcgen05_alloc`,
/// wrapped in a module of their own as sglang 0.5.22's `cute_utils/_tcgen05.py` does) rather
/// than through a CuTe op: the PTX ISA gives tcgen05 to sm_100a/101a/103a/110a and their
/// families only, so a gate that lets sm_120 onto such a kernel is a trap.
#[test]
fn kernels_calling_tcgen05_intrinsics_need_a_target_with_tcgen05() {
    let site = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/sites/dsl");
    let doc = json_at(&site, &["sm_90", "sm_100", "sm_120", "sm_121"]);
    let gate = gate_at(&doc, "rawlib/api.py", 11);
    let at = |t: &str| gate["verdict"][t].as_str().unwrap().to_string();
    assert_eq!(
        [at("sm_90"), at("sm_100"), at("sm_120"), at("sm_121")],
        ["wall", "open", "trap", "trap"],
        "{gate:#?}"
    );
    let (_, evidence) = verdict_at(&doc, "rawlib/api.py", 11);
    assert!(
        evidence.iter().any(|e| e.starts_with("L5 DSL admission rawlib/prefill.py:")
            && e.contains("ChunkPrefillKernel builds nvvm.tcgen05 through rawlib.tmem.")
            && e.contains("(the PTX ISA (`tcgen05_*` intrinsics of the `nvvm` dialect) admits [sm_100a, sm_100f")
            && e.ends_with("does not admit sm_120a")),
        "{evidence:#?}"
    );
}

/// Paths to kernels that are not native libraries (`testdata/sites/paths/mylib/ops.py`): a
/// Triton launch judged by the ptxas the installed triton bundles, a JIT spec without an arch
/// list (built for the device), a branch that only sets values (the code after it decides,
/// with the gates it dispatches on), an alternative picked on a free condition (it does not
/// make the path a trap), a support check that returns False early, and the checkers of a
/// `[[checker_registry]]` decorator.
#[test]
fn paths_to_triton_and_generic_jit_kernels() {
    let site = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/sites/paths");
    let run = |site: &Path| json_at(site, &["sm_90", "sm_120"]);
    let doc = run(&site);
    let table: Vec<(&str, u64, &str, &str)> = doc["gates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["file"].as_str().unwrap(),
                g["line"].as_u64().unwrap(),
                g["verdict"]["sm_90"].as_str().unwrap(),
                g["verdict"]["sm_120"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        table,
        vec![
            // Checkers of `@backend_requirement` (flashinfer/gemm.py): the "sm100" checker's
            // decorator gates mm()'s `backend == "sm100"` branch; the "generic" backend has no
            // branch of its own, so its checker stays unlinked; the common check gates all of
            // mm(), where one present alternative keeps it runnable.
            ("flashinfer/gemm.py", 8, "wall", "wall"),
            ("flashinfer/gemm.py", 13, "unverified", "unverified"),
            ("flashinfer/gemm.py", 18, "opportunity", "open"),
            ("flashinfer/jit/kernels.py", 16, "wall", "wall"),
            // major >= 9 → a @triton.jit kernel: triton 3.5.1's ptxas is CUDA 12.8.
            ("mylib/ops.py", 26, "open", "open"),
            // major == 9 only picks a block size; the autotuned kernel after it runs anyway.
            ("mylib/ops.py", 33, "open", "opportunity"),
            // major >= 10 → a generic JIT spec; the SM100 module is an alternative on
            // `backend == "sm100"`, so the path stays runnable at sm_120.
            ("mylib/ops.py", 46, "opportunity", "open"),
            // major >= 10 → the SM100 module itself: no SM12x build.
            ("mylib/ops.py", 52, "wall", "trap"),
            // A tile size; the code after dispatches on `arch == 10`, a gate that keeps the
            // SM100 module off the path at sm_120, so the generic module decides.
            ("mylib/ops.py", 60, "open", "open"),
            ("mylib/ops.py", 62, "wall", "wall"),
            // A support check that returns False early: its callers go on only where it
            // passes (the path it protects runs where the gate does not hold).
            ("mylib/ops.py", 68, "opportunity", "open"),
            ("mylib/ops.py", 74, "opportunity", "open"),
            // Gates inside `if major == 10:` are not reached at sm_90 or sm_120: what they
            // would admit there (open at sm_120, a trap at sm_90) is not claimed. A wall stays
            // one: the target is blocked either way.
            ("mylib/ops.py", 81, "opportunity", "opportunity"),
            ("mylib/ops.py", 82, "unverified", "unverified"),
            ("mylib/ops.py", 84, "unverified", "wall"),
            // major == 10 → a module whose launcher asks for 200 KiB of shared memory: an
            // opportunity at sm_90 (227 KiB per block), not at sm_120 (99 KiB).
            ("mylib/ops.py", 92, "opportunity", "unverified"),
            // A tile size; the SM100 module a local names is called under `elif arch ==
            // 10` only (the local's own call is a hop left out, so the path is not shown
            // whole).
            ("mylib/ops.py", 102, "unverified", "unverified"),
            ("mylib/ops.py", 106, "wall", "wall"),
        ]
    );
    let (_, evidence) = verdict_at(&doc, "mylib/ops.py", 92);
    assert!(
        evidence.iter().any(|e| e
            == "L4 host checks flashinfer/data/csrc/bigtile.cu:8 `cudaFuncSetAttribute(bigtile_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kBigTileBytes)` asks for 204800 bytes; sm_120 allows at most 101376 per block (rules/kernels.toml)"),
        "{evidence:#?}"
    );
    assert!(
        evidence
            .iter()
            .any(|e| e.starts_with("not an opportunity: JIT generator flashinfer.jit.kernels:gen_bigtile_module is there only in part at sm_120")),
        "{evidence:#?}"
    );
    let (_, evidence) = verdict_at(&doc, "mylib/ops.py", 82);
    assert!(
        evidence.iter().any(|e| e
            == "not reached at sm_120: the gate sits under mylib/ops.py:81 `major == 10`, which blocks sm_120; it would be open otherwise")
            && evidence.last().map(String::as_str) == Some("stop: unreachable-at-target"),
        "{evidence:#?}"
    );
    let (_, evidence) = verdict_at(&doc, "mylib/ops.py", 60);
    assert!(
        evidence.iter().any(|e| e
            == "a path not taken at sm_120: mylib/ops.py:62 `arch == 10` blocks it on the way to JIT generator flashinfer.jit.kernels:gen_sm100_module"),
        "{evidence:#?}"
    );
    let (_, evidence) = verdict_at(&doc, "mylib/ops.py", 102);
    assert!(
        evidence.iter().any(|e| e
            == "a path not taken at sm_120: mylib/ops.py:106 `arch == 10` blocks it on the way to JIT generator flashinfer.jit.kernels:gen_sm100_module"),
        "{evidence:#?}"
    );
    let (_, evidence) = verdict_at(&doc, "mylib/ops.py", 68);
    assert!(
        evidence[0].starts_with("the gated branch returns early, so the path it protects runs when the gate does not hold: at sm_120 yes")
            && evidence.iter().any(|e| e == "read at mylib/ops.py:74 returns early unless it holds; followed the code after"),
        "{evidence:#?}"
    );
    let (_, evidence) = verdict_at(&doc, "flashinfer/gemm.py", 8);
    assert_eq!(
        evidence[1],
        "flashinfer/gemm.py:23 registers the checker for backend \"sm100\" of mm(); followed its `backend == \"sm100\"` branches",
        "{evidence:#?}"
    );
    let (_, evidence) = verdict_at(&doc, "mylib/ops.py", 26);
    assert!(
        evidence.iter().any(|e| e
            == "L6 toolchain yes: builds sm_120a with CUDA 12.8 (triton/backends/nvidia/bin/ptxas of triton 3.5.1)"),
        "{evidence:#?}"
    );
    let (_, evidence) = verdict_at(&doc, "mylib/ops.py", 33);
    assert!(
        evidence[1].contains("sets values the code after it uses"),
        "{evidence:#?}"
    );
    let (_, evidence) = verdict_at(&doc, "mylib/ops.py", 46);
    assert!(
        evidence.iter().any(|e| e.starts_with(
            "an alternative on another condition needs JIT generator flashinfer.jit.kernels:gen_sm100_module: MISSING at sm_120"
        )),
        "{evidence:#?}"
    );

    // Without triton in the site, a Triton kernel's coverage is unknown, and says why.
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(&site, tmp.path());
    std::fs::remove_dir_all(tmp.path().join("triton")).unwrap();
    std::fs::remove_dir_all(tmp.path().join("triton-3.5.1.dist-info")).unwrap();
    let doc = run(tmp.path());
    let (verdict, evidence) = verdict_at(&doc, "mylib/ops.py", 26);
    assert_eq!(verdict, "unverified");
    assert!(
        evidence
            .iter()
            .any(|e| e.contains("triton is not installed in the site")),
        "{evidence:#?}"
    );
}

/// A gate that only turns a launch feature on or off (`rules/launch.toml`) is judged by
/// whether the target has the feature: PDL at sm_80 (none) and sm_120 (has it). An early
/// exit and a compound test decide more than the feature and keep their usual verdicts; a
/// gate that keeps the feature off where the hardware has it gets none, and neither does one
/// under a gate that blocks the target.
#[test]
fn launch_feature_gates_are_judged_by_the_targets_hardware() {
    let site = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/sites/launch");
    let doc = json_at(&site, &["sm_80", "sm_120"]);
    let stop = |g: &Value| -> String {
        g["evidence"]["sm_120"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|e| e.as_str()?.strip_prefix("stop: "))
            .collect::<Vec<_>>()
            .join(",")
    };
    let table: Vec<(String, u64, String, String, String)> = doc["gates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["file"].as_str().unwrap().to_string(),
                g["line"].as_u64().unwrap(),
                g["verdict"]["sm_80"].as_str().unwrap().to_string(),
                g["verdict"]["sm_120"].as_str().unwrap().to_string(),
                stop(g),
            )
        })
        .collect();
    let row = |file: &str, line: u64, sm80: &str, sm120: &str, stop: &str| {
        (
            file.to_string(),
            line,
            sm80.to_string(),
            sm120.to_string(),
            stop.to_string(),
        )
    };
    assert_eq!(
        table,
        vec![
            row("launchpkg/ops.py", 13, "wall", "open", ""),
            // `checked()` returns early, so its callers are the path it protects; nobody
            // on the site calls it.
            row(
                "launchpkg/ops.py",
                19,
                "unverified",
                "unverified",
                "entry-point"
            ),
            row(
                "launchpkg/ops.py",
                26,
                "unverified",
                "unverified",
                "no-kernel-reached"
            ),
            row(
                "launchpkg/ops.py",
                33,
                "wall",
                "unverified",
                "launch-feature-off"
            ),
            // Under `major == 10`: not reached at sm_120, so not open there.
            row(
                "launchpkg/ops.py",
                38,
                "unverified",
                "unverified",
                "no-kernel-reached"
            ),
            row(
                "launchpkg/ops.py",
                39,
                "wall",
                "unverified",
                "unreachable-at-target"
            ),
            row("launchpkg/utils.py", 6, "wall", "open", ""),
            row(
                "launchpkg/utils.py",
                11,
                "wall",
                "unverified",
                "launch-feature-off"
            ),
        ]
    );
    let (_, evidence) = verdict_at(&doc, "launchpkg/ops.py", 13);
    assert!(
        evidence
            .iter()
            .any(|e| e.contains("programmatic dependent launch")
                && e.contains("rules/launch.toml")
                && e.contains("9.0 or higher")),
        "{evidence:?}"
    );
    assert!(
        evidence
            .iter()
            .any(|e| e == "sm_120 has it (major 12 >= 9)"),
        "{evidence:?}"
    );
    let pdl = gate_at(&doc, "launchpkg/ops.py", 13);
    let feature = "launch feature programmatic dependent launch (PDL)";
    assert_eq!(pdl["kernels"]["sm_120"][0]["kernel"], feature);
    assert_eq!(pdl["kernels"]["sm_120"][0]["at_target"], "present");
    assert_eq!(pdl["kernels"]["sm_80"][0]["at_target"], "missing");
    let (_, evidence) = verdict_at(&doc, "launchpkg/utils.py", 6);
    assert!(
        evidence
            .iter()
            .any(|e| e.contains("what device_support_pdl() returns")),
        "{evidence:?}"
    );
}

/// A common word names a backend only where the code that chooses it imports the module the
/// rule gives (`module_imports` in rules/links.toml): "trtllm" in a module without
/// flashinfer.comm is some other thing of that name, and no kernel is claimed for it.
#[test]
fn a_backend_name_counts_only_in_a_module_that_imports_its_library() {
    let doc = json_at(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/sites/mixed"),
        &["sm_120"],
    );
    // big_module.py imports no flashinfer.comm: its "trtllm" is not the allreduce backend.
    let (verdict, evidence) = verdict_at(&doc, "sglang/srt/big_module.py", 624);
    assert_eq!(verdict, "unverified", "{evidence:#?}");
    assert!(
        !evidence.iter().any(|e| e.contains("chooses backend")),
        "{evidence:#?}"
    );
    // fusion.py imports it: the same word there is the allreduce fusion's backend.
    let (_, evidence) = verdict_at(&doc, "sglang/srt/layers/fusion.py", 18);
    assert!(
        evidence
            .iter()
            .any(|e| e.starts_with("chooses backend \"trtllm\"")),
        "{evidence:#?}"
    );
}

/// An unverified search says how far it got: the first hop it did not take (a call into
/// code that is not on the site), or that every call was followed. Python's own calls
/// (`logger.info`, `len`, `ValueError(...)`) launch nothing and are not hops left out. A call
/// on a module imported from outside the site (`torch.matmul`) is that module's, not the
/// site's only def of the same name (`hoppkg/linalg.py`).
#[test]
fn an_unlinked_search_names_its_first_unfollowed_hop() {
    let site = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/sites/unfollowed");
    let doc = json_at(&site, &["sm_120"]);
    let link_line = |line: u64| -> String {
        let (verdict, evidence) = verdict_at(&doc, "hoppkg/ops.py", line);
        assert_eq!(verdict, "unverified", "{evidence:?}");
        evidence
            .into_iter()
            .find(|e| e.starts_with("no kernel link:"))
            .unwrap_or_else(|| panic!("no link evidence at line {line}"))
    };
    // Every call followed, and yet not shown to launch nothing: the branch returns.
    let complete = link_line(18);
    assert!(
        complete.ends_with(
            "; every call it makes was followed to its definition, but it is not shown to \
             launch nothing: the gated branch leaves its block, or the gate is no `if` or \
             conditional-expression test, so what it skips is not read"
        ),
        "{complete}"
    );
    let partial = link_line(26);
    assert!(
        partial.ends_with(
            "; 1 hop(s) not followed, the first: `torch.matmul` is no code gatefix finds on the site"
        ),
        "{partial}"
    );
    // Through a flag (here the calls of a check that raises): the code each read guards is
    // followed, and where it reaches no kernel its first unfollowed hop is the stop.
    let through_flag = link_line(36);
    assert!(
        through_flag.ends_with(
            "first stop: hoppkg/ops.py:41 calls require_hopper(); followed the code after it: \
             the code it guards reaches no kernel; 1 hop(s) not followed, the first: \
             `torch.matmul` is no code gatefix finds on the site"
        ),
        "{through_flag}"
    );
    let (_, evidence) = verdict_at(&doc, "hoppkg/ops.py", 36);
    assert!(
        evidence.contains(&"stop: no-kernel-reached".to_string()),
        "{evidence:?}"
    );
}

/// A gate whose code was read whole and launches nothing is `no-kernel` (logging, a message,
/// a local setting the code after reads, also where the function returns something not made
/// from it), with what was read as its evidence. Gates that
/// look alike but decide more stay `unverified`: another arm that builds a JIT module (and
/// whose kernel is not taken for the gate's), a value handed to the callers (directly, or a
/// setting the function returns), a module global, a `global`, a computed callee, a binding
/// read again on a loop's next pass, an `assert`, a store into an object.
#[test]
fn a_gate_whose_code_launches_nothing_chooses_no_kernel() {
    let site = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/sites/nokernel");
    let doc = json_at(&site, &["sm_120"]);
    let table_of = |file: &str| -> Vec<(u64, String)> {
        doc["gates"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|g| g["file"] == file)
            .map(|g| {
                (
                    g["line"].as_u64().unwrap(),
                    g["verdict"]["sm_120"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    };
    let row = |line: u64, verdict: &str| (line, verdict.to_string());
    assert_eq!(
        table_of("flashinfer/choose.py"),
        vec![
            row(18, "no-kernel"),   // log_only
            row(26, "no-kernel"),   // message_only
            row(32, "no-kernel"),   // local_setting
            row(38, "unverified"),  // else_builds
            row(46, "unverified"),  // returns_choice
            row(50, "unverified"),  // MODE
            row(57, "unverified"),  // enable (global)
            row(65, "unverified"),  // dispatch (computed callee)
            row(74, "unverified"),  // in_loop
            row(79, "unverified"),  // asserts
            row(85, "unverified"),  // stores
            row(92, "unverified"),  // returns_setting
            row(99, "no-kernel"),   // returns_other: the value returned is not the setting
            row(107, "unverified"), // returns_derived: made from the setting
        ]
    );
    let (_, evidence) = verdict_at(&doc, "flashinfer/choose.py", 18);
    assert!(
        evidence.iter().any(|e| e
            .starts_with("chooses no kernel: the gated code was read whole: 3 call(s) followed")),
        "{evidence:#?}"
    );
    // Calls outside the site that rules/quiet.toml names (a function as the imports qualify
    // it, a method on an untyped object) leave nothing out; torch.zeros launches a fill
    // kernel, and a method that the site defines twice may be either definition.
    assert_eq!(
        table_of("flashinfer/quiet.py"),
        vec![
            row(23, "no-kernel"),  // quiet_calls
            row(32, "unverified"), // fills
            row(38, "unverified"), // site_method
        ]
    );
    let first_unfollowed = |line: u64| -> String {
        let (_, evidence) = verdict_at(&doc, "flashinfer/quiet.py", line);
        evidence
            .iter()
            .find_map(|e| {
                e.split_once("not followed, the first: ")
                    .map(|(_, f)| f.to_string())
            })
            .unwrap_or_else(|| panic!("{evidence:#?}"))
    };
    assert_eq!(
        first_unfollowed(32),
        "`torch.zeros` is no code gatefix finds on the site"
    );
    assert_eq!(
        first_unfollowed(38),
        "`state.update` is no code gatefix finds on the site"
    );
    // The other arm's JIT module is not the gated branch's kernel.
    let (_, evidence) = verdict_at(&doc, "flashinfer/choose.py", 38);
    assert!(
        evidence.iter().all(|e| !e.contains("norm")),
        "{evidence:#?}"
    );
    // Each look-alike says why it is not shown to launch nothing.
    let why = |line: u64| -> String {
        let (_, evidence) = verdict_at(&doc, "flashinfer/choose.py", line);
        let link = evidence
            .iter()
            .find(|e| e.starts_with("no kernel link:"))
            .cloned()
            .unwrap_or_default();
        link.split_once("not shown to launch nothing: ")
            .map(|(_, why)| why.to_string())
            .unwrap_or(link)
    };
    assert_eq!(why(38), "the gate's other arms reach a kernel");
    assert_eq!(why(50), "it binds `MODE` in module-level code");
    assert_eq!(
        why(57),
        "it binds `_ENABLED`, declared `global` or `nonlocal`"
    );
    assert_eq!(
        why(74),
        "it binds `scale` inside a loop, where the next pass may read it first"
    );
    assert_eq!(
        why(85),
        "flashinfer/choose.py: line 86 stores into `config.tile`"
    );
    assert_eq!(
        why(107),
        "the function returns a value made from `tile`, which the gated code binds"
    );
    // Informational, like `open`: no finding, no non-zero exit.
    let out = audit(&site, &["--target", "sm_120", "--fail-on", "unverified"]);
    assert_eq!(out.status.code(), Some(1), "the unverified gates fail it");
    let sarif = audit(&site, &["--target", "sm_120", "--format", "sarif"]);
    let sarif: Value = serde_json::from_slice(&sarif.stdout).unwrap();
    let results = sarif["runs"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), 12, "the twelve unverified verdicts only");
}

/// Positive evidence or no verdict: a gate is `open` only where the search read its whole
/// path. Kernels found beside a call it could not follow (a method two classes define) show
/// nothing of what that call launches: `unverified`, naming the hop (`path-left-out`). A
/// tensor method (torch's own kernel) leaves nothing out. A check that computes its message
/// before it raises still guards the code after its calls; a function the gated path stores
/// on `self` and calls later is followed; a helper or an attribute that two modules each
/// define is read where it is defined, not in the other module.
#[test]
fn a_gate_is_open_only_where_its_whole_path_was_read() {
    let site = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/sites/partial");
    let doc = json_at(&site, &["sm_120"]);
    let table = verdict_table(&doc, "fastpkg/");
    let row = |file: &str, line: u64, verdict: &str| {
        (format!("fastpkg/{file}"), line, verdict.to_string())
    };
    assert_eq!(
        table,
        vec![
            // decode.py: its own check reaches torch.matmul only, not prefill.py's kernel.
            row("decode.py", 9, "unverified"),
            row("decode.py", 14, "unverified"),
            row("decode.py", 17, "unverified"),
            row("ops.py", 11, "open"),
            row("ops.py", 20, "unverified"),
            // prefill.py: helper, flag and check all reach the kernel held by self._fn.
            row("prefill.py", 9, "open"),
            row("prefill.py", 14, "open"),
            row("prefill.py", 18, "open"),
        ]
    );
    let (_, partial) = verdict_at(&doc, "fastpkg/ops.py", 20);
    assert!(
        partial.contains(
            &"not open: the kernels above are those of the part of the path gatefix read; it \
              left out 1 hop(s) not followed, the first: `runner.launch` is no code gatefix \
              finds on the site"
                .to_string()
        ) && partial.contains(&"stop: path-left-out".to_string()),
        "{partial:#?}"
    );
    let (_, held) = verdict_at(&doc, "fastpkg/prefill.py", 18);
    assert!(
        held.iter().any(|e| e
            == "calls flashinfer.comm:trtllm_allreduce_fusion (the only def \
                trtllm_allreduce_fusion in the site) (held by self._fn, set to \
                trtllm_allreduce_fusion at fastpkg/prefill.py:23)"),
        "{held:#?}"
    );
    let (_, own) = verdict_at(&doc, "fastpkg/decode.py", 9);
    assert!(
        own.iter().all(|e| !e.contains("prefill.py")),
        "decode.py's helper is followed into prefill.py: {own:#?}"
    );
}

/// A class's own capability check, asked through `cls.` by a base class that picks among its
/// subclasses (vllm's experts classes and their `_supports_current_device()`), decides
/// whether the class is used: its methods are the gated path, with `super().__init__` read in
/// the base, `kb.Experts.finalize(...)` read in the class the module alias names, a function
/// defined inside a method followed into, and a module global that
/// imports a library function lazily (`_lazy_import_wrapper("flashinfer.comm", name)`)
/// followed to that function. A check whose kernel builds for sm_120 but leaves it out is an
/// opportunity, one that admits sm_120 onto a kernel without it a trap; a check held by a
/// mixin gates the methods of the class combining it with the base; a name imported from a
/// module outside the site (`functools.partial`) is not the site's function of that name; a
/// class that derives
/// from no base asking the check stays an entry point (`unverified`), even where another
/// class calls a method of that name through `self`.
#[test]
fn a_class_check_asked_by_its_base_gates_the_class_methods() {
    let site = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/sites/classes");
    let doc = json_at(&site, &["sm_120"]);
    let table = verdict_table(&doc, "kernpkg/");
    let row = |file: &str, line: u64, verdict: &str| {
        (format!("kernpkg/{file}"), line, verdict.to_string())
    };
    assert_eq!(
        table,
        vec![
            row("fused.py", 26, "opportunity"),
            // The mixin's check gates its subclass's methods too, one of them on a kernel
            // sm_120 lacks.
            row("mixin.py", 13, "wall"),
            // The mixin's methods call what its subclass inherits from the base
            // (`self.finalize`) and make an instance (`cls(config)`, its `__init__`): all
            // read, the path is whole.
            row("mixin_calls.py", 13, "opportunity"),
            row("mnnvl.py", 23, "trap"),
            row("probe.py", 12, "unverified"),
        ]
    );
    let (_, fused) = verdict_at(&doc, "kernpkg/fused.py", 26);
    for expected in [
        "read at kernpkg/fused.py:28 FusedExperts.apply, a method of the class that \
         _supports_current_device() admits (its base asks cls._supports_current_device() at \
         kernpkg/base.py:12)",
        "calls flashinfer.comm:trtllm_allreduce_fusion",
        "needs JIT generator flashinfer.jit.comm:gen_trtllm_comm_module: present at sm_120 (jit)",
    ] {
        assert!(
            fused.iter().any(|e| e == expected),
            "{expected}: {fused:#?}"
        );
    }
    assert!(
        fused.iter().all(|e| !e.contains("not open")),
        "the whole class was read: {fused:#?}"
    );
    let (_, probe) = verdict_at(&doc, "kernpkg/probe.py", 12);
    assert!(probe.iter().any(|e| e == "stop: entry-point"), "{probe:#?}");
}
