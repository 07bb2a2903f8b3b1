//! `gatefix audit` end to end on the fixture site `testdata/sites/mixed`, whose files model the
//! gate forms of docs/gates.md (written for these tests; no upstream source).

mod common;

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::Value;

const SITE: &str = "testdata/sites/mixed";

fn audit(site: &Path, extra: &[&str]) -> Value {
    let mut args = vec![OsString::from("audit"), site.into()];
    for arg in [
        "--target",
        "sm_120",
        "--target",
        "sm121",
        "--format",
        "json",
        "--fail-on",
        "none",
    ]
    .iter()
    .chain(extra)
    {
        args.push(arg.into());
    }
    common::gatefix_json(args)
}

fn gates(doc: &Value) -> &Vec<Value> {
    doc["gates"].as_array().unwrap()
}

fn gate<'a>(doc: &'a Value, file: &str, line: u64) -> &'a Value {
    gates(doc)
        .iter()
        .find(|g| g["file"] == file && g["line"] == line)
        .unwrap_or_else(|| panic!("no gate at {file}:{line}"))
}

/// (file, line, form, predicate, admits at sm_120, admits at sm_121)
const EXPECTED: &[(&str, u64, &str, &str, &str, &str)] = &[
    // F1 helpers through two levels of imports (utils/__init__ star-imports common).
    (
        "sglang/srt/layers/fusion.py",
        20,
        "value-select",
        "major in {10, 12} and cuda >= 12.8",
        "yes",
        "yes",
    ),
    // F2 platform attributes through the probe table, F3 cached flags and their uses.
    (
        "sglang/srt/layers/fusion.py",
        7,
        "cached-flag",
        "major == 9 and cuda >= 12.3",
        "no",
        "no",
    ),
    (
        "sglang/srt/layers/fusion.py",
        8,
        "cached-flag",
        "major == 10 and cuda >= 12.8",
        "no",
        "no",
    ),
    (
        "sglang/srt/layers/fusion.py",
        12,
        "flag-use",
        "(major == 9 and cuda >= 12.3 or major == 10 and cuda >= 12.8) and `batch_size <= 2048`",
        "no",
        "no",
    ),
    (
        "sglang/srt/layers/fusion.py",
        16,
        "platform-attr",
        "not (major == 9 and cuda >= 12.3 or major == 10 and cuda >= 12.8)",
        "yes",
        "yes",
    ),
    (
        "sglang/srt/layers/fusion.py",
        18,
        "platform-attr",
        "`backend == \"auto\"` and (major == 12 and cuda >= 12.8 or (major, minor) == (12, 0))",
        "yes",
        "yes",
    ),
    // F4 `major, minor = ...` tracked inside the function; F6 through a platform value.
    (
        "sglang/srt/layers/fusion.py",
        26,
        "capability-compare",
        "major == 12 and minor == 1",
        "no",
        "yes",
    ),
    (
        "sglang/srt/layers/fusion.py",
        28,
        "capability-membership",
        "sm in {100, 103}",
        "no",
        "no",
    ),
    // Exact-minor helper.
    (
        "sglang/srt/utils/common.py",
        44,
        "capability-compare",
        "(major, minor) == (12, 0)",
        "yes",
        "no",
    ),
    // The same name in another module means something else.
    (
        "sglang/multimodal/platform.py",
        10,
        "helper-call",
        "major == 10",
        "no",
        "no",
    ),
    // F6 named module constant, F12 decorator, helper with `major, minor` unpacking.
    (
        "flashinfer/utils.py",
        29,
        "capability-membership",
        "(major, minor) not in {(10, 0), (10, 3)}",
        "yes",
        "yes",
    ),
    (
        "flashinfer/utils.py",
        33,
        "capability-decorator",
        "sm in {90, 100}",
        "no",
        "no",
    ),
    (
        "flashinfer/utils.py",
        22,
        "capability-compare",
        "major == 12 and minor == 0",
        "yes",
        "no",
    ),
    // F11 JIT arch lists, literal and through a named constant.
    (
        "flashinfer/jit/comm.py",
        7,
        "jit-arch-list",
        "major in {9, 10}",
        "no",
        "no",
    ),
    (
        "flashinfer/jit/comm.py",
        14,
        "jit-arch-list",
        "major in {9, 10, 12}",
        "yes",
        "yes",
    ),
    // F7 platform methods (rules), F8 backend capability and min capability.
    (
        "vllm/backends/mla.py",
        14,
        "backend-capability",
        "major == 10",
        "no",
        "no",
    ),
    (
        "vllm/backends/mla.py",
        18,
        "min-capability",
        "sm >= 80",
        "yes",
        "yes",
    ),
    (
        "vllm/backends/mla.py",
        22,
        "platform-method",
        "major == 10 or sm == 90",
        "no",
        "no",
    ),
    (
        "vllm/backends/mla.py",
        26,
        "platform-method",
        "sm >= 100",
        "yes",
        "yes",
    ),
    (
        "vllm/backends/mla.py",
        28,
        "platform-method",
        "major == 12",
        "yes",
        "yes",
    ),
    // Methods through `self`, inherited from a base class.
    (
        "sglang/srt/layers/runner.py",
        9,
        "helper-call",
        "major == 9",
        "no",
        "no",
    ),
    (
        "sglang/srt/layers/runner.py",
        16,
        "value-select",
        "major == 9",
        "no",
        "no",
    ),
    // Chunked parsing: gates deep inside big blocks of a 30 kB module.
    (
        "sglang/srt/big_module.py",
        624,
        "flag-use",
        "`backend == \"auto\"` and major == 10 and cuda >= 12.8",
        "no",
        "no",
    ),
    (
        "sglang/srt/big_module.py",
        1235,
        "capability-compare",
        "major == 9",
        "no",
        "no",
    ),
    (
        "sglang/srt/big_module.py",
        1237,
        "helper-call",
        "major == 12 and cuda >= 12.8",
        "yes",
        "yes",
    ),
];

#[test]
fn every_form_resolves_and_evaluates_at_sm120_and_sm121() {
    let doc = audit(Path::new(SITE), &[]);
    for &(file, line, form, predicate, at120, at121) in EXPECTED {
        let g = gate(&doc, file, line);
        assert_eq!(g["form"], form, "{file}:{line}");
        assert_eq!(g["predicate"], predicate, "{file}:{line}");
        assert_eq!(g["admits"]["sm_120"], at120, "{file}:{line} at sm_120");
        assert_eq!(g["admits"]["sm_121"], at121, "{file}:{line} at sm_121");
    }
}

#[test]
fn json_carries_the_documented_fields() {
    let doc = audit(Path::new(SITE), &[]);
    assert_eq!(doc["gatefix"], env!("CARGO_PKG_VERSION"));
    assert_eq!(doc["targets"], serde_json::json!(["sm_120", "sm_121"]));
    assert_eq!(doc["cuda"], "12.8", "read from the site's torch/version.py");
    let names: Vec<&str> = doc["distributions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["flashinfer-python", "sglang", "sglang-kernel", "vllm"]
    );
    let g = gate(&doc, "vllm/backends/mla.py", 14);
    assert_eq!(g["dist"], "vllm");
    assert_eq!(g["dist_version"], "0.33.0");
    assert_eq!(
        g["function"],
        "CutlassMLABackend.supports_compute_capability"
    );
    assert_eq!(g["text"], "capability.major == 10");
    assert_eq!(
        (
            g["column"].as_u64(),
            g["end_line"].as_u64(),
            g["end_column"].as_u64()
        ),
        (Some(16), Some(14), Some(38))
    );
    for g in gates(&doc) {
        for key in [
            "id",
            "file",
            "line",
            "column",
            "end_line",
            "end_column",
            "form",
            "text",
            "predicate",
            "admits",
            "unknown_because",
        ] {
            assert!(g.get(key).is_some(), "{key} missing in {g}");
        }
        assert!(g["line"].as_u64().unwrap() >= 1 && g["column"].as_u64().unwrap() >= 1);
    }
}

#[test]
fn the_same_name_in_two_modules_resolves_to_its_own_definition() {
    let doc = audit(Path::new(SITE), &[]);
    // srt's is_blackwell admits major 12; multimodal's is_blackwell is major 10 only.
    assert_eq!(
        gate(&doc, "sglang/srt/layers/fusion.py", 20)["admits"]["sm_120"],
        "yes"
    );
    assert_eq!(
        gate(&doc, "sglang/multimodal/platform.py", 10)["admits"]["sm_120"],
        "no"
    );
}

#[test]
fn only_code_makes_a_helper_arch_dependent_not_its_docstring_or_comments() {
    let doc = audit(Path::new(SITE), &[]);
    let lines: Vec<(u64, &str)> = gates(&doc)
        .iter()
        .filter(|g| g["file"] == "sglang/srt/layers/notes.py")
        .map(|g| {
            (
                g["line"].as_u64().unwrap(),
                g["predicate"].as_str().unwrap(),
            )
        })
        .collect();
    // `run()` is `is_sm100_supported()`; `wide_tiles` names helpers in prose only, so calling
    // it is no gate (not an `unknown` one either), and `running_total` is not `run`.
    assert_eq!(
        lines,
        [
            (26, "major == 10 and cuda >= 12.8"),
            (32, "major == 10 and cuda >= 12.8")
        ]
    );
}

#[test]
fn cuda_atoms_follow_the_cuda_flag() {
    let doc = audit(Path::new(SITE), &["--cuda", "12.4"]);
    assert_eq!(doc["cuda"], "12.4");
    let g = gate(&doc, "sglang/srt/big_module.py", 1237);
    assert_eq!(
        g["admits"]["sm_120"], "no",
        "is_sm120_supported needs CUDA 12.8"
    );
}

#[test]
fn without_a_cuda_version_cuda_atoms_are_unknown_with_the_reason() {
    let site = tempfile::tempdir().unwrap();
    copy_tree(Path::new(SITE), site.path());
    std::fs::remove_dir_all(site.path().join("torch")).unwrap();
    let doc = audit(site.path(), &[]);
    assert_eq!(doc["cuda"], Value::Null);
    let g = gate(&doc, "sglang/srt/big_module.py", 1237);
    assert_eq!(g["admits"]["sm_120"], "unknown");
    assert!(g["unknown_because"].as_str().unwrap().contains("--cuda"));
    // An atom that cannot decide the outcome does not make the gate unknown.
    assert_eq!(
        gate(&doc, "sglang/srt/layers/fusion.py", 8)["admits"]["sm_120"],
        "no"
    );
}

#[test]
fn broken_files_still_yield_their_well_formed_gates_with_warnings() {
    let doc = audit(Path::new(SITE), &[]);
    // A syntax error between two gates: both are reported.
    assert_eq!(
        gate(&doc, "flashinfer/broken.py", 5)["predicate"],
        "major == 12 and minor == 0"
    );
    assert_eq!(
        gate(&doc, "flashinfer/broken.py", 13)["admits"]["sm_121"],
        "no"
    );
    // Latin-1 bytes: no panic, the gate is there.
    assert_eq!(
        gate(&doc, "flashinfer/latin1.py", 8)["predicate"],
        "major == 9"
    );
    let warnings: Vec<String> = doc["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| {
            format!(
                "{}:{}",
                w["file"].as_str().unwrap(),
                w["message"].as_str().unwrap()
            )
        })
        .collect();
    assert!(
        warnings
            .iter()
            .any(|w| w.starts_with("flashinfer/broken.py:syntax error")),
        "{warnings:?}"
    );
    assert!(
        warnings
            .iter()
            .any(|w| w.starts_with("flashinfer/latin1.py:not valid UTF-8")),
        "{warnings:?}"
    );
    assert!(
        warnings
            .iter()
            .any(|w| w.starts_with("vllm/outside.py:symlink points outside")),
        "{warnings:?}"
    );
}

#[test]
fn output_is_deterministic_and_ids_survive_line_shifts() {
    let first = audit(Path::new(SITE), &[]);
    let second = audit(Path::new(SITE), &[]);
    assert_eq!(first, second);

    let site = tempfile::tempdir().unwrap();
    copy_tree(Path::new(SITE), site.path());
    let file = site.path().join("vllm/backends/mla.py");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, format!("# a comment\n# and another\n{text}")).unwrap();
    let shifted = audit(site.path(), &[]);
    let id_at = |doc: &Value, line| gate(doc, "vllm/backends/mla.py", line)["id"].clone();
    assert_eq!(id_at(&first, 14), id_at(&shifted, 16));
    assert_eq!(id_at(&first, 26), id_at(&shifted, 28));
    let ids: std::collections::HashSet<&Value> = gates(&first).iter().map(|g| &g["id"]).collect();
    assert_eq!(ids.len(), gates(&first).len(), "ids are unique");
}

#[test]
fn human_output_groups_by_distribution_without_colour_when_piped() {
    let output = Command::cargo_bin("gatefix")
        .unwrap()
        .args([
            "audit",
            SITE,
            "--target",
            "12.0",
            "--fail-on",
            "none",
            "--show",
            "all",
        ])
        .output()
        .unwrap();
    assert!(output.status.success());
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(!text.contains('\x1b'), "no ANSI escapes on a pipe");
    assert!(
        text.contains("\nvllm 0.33.0\n  vllm/backends/mla.py\n"),
        "{text}"
    );
    assert!(text.contains("admits: sm_120 no"));
    assert!(text.contains("gates in "));
    assert!(String::from_utf8_lossy(&output.stderr).contains("symlink points outside the site"));
}

#[test]
fn venv_roots_and_virtual_env_are_followed() {
    let venv = tempfile::tempdir().unwrap();
    let site = venv.path().join("lib/python3.11/site-packages");
    std::fs::create_dir_all(&site).unwrap();
    copy_tree(Path::new(SITE), &site);
    std::fs::write(venv.path().join("pyvenv.cfg"), "home = /usr/bin\n").unwrap();
    let by_path = audit(venv.path(), &[]);
    assert_eq!(by_path["site"], site.display().to_string());
    let output = Command::cargo_bin("gatefix")
        .unwrap()
        .args(["audit", "--format", "json", "--fail-on", "none"])
        .env("VIRTUAL_ENV", venv.path())
        .current_dir(venv.path())
        .output()
        .unwrap();
    assert!(output.status.success());
    let by_env: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(by_env["site"], site.display().to_string());
    assert_eq!(gates(&by_env).len(), gates(&by_path).len());
}

#[test]
fn usage_and_input_errors_exit_2_with_a_clear_message() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["audit", "no/such/site"],
            "no/such/site: no such file or folder",
        ),
        (
            &["audit", SITE, "--target", "sm_12x"],
            "invalid target `sm_12x`",
        ),
        (
            &["audit", SITE, "--cuda", "twelve"],
            "invalid --cuda `twelve`",
        ),
        (&["audit", SITE, "--format", "xml"], "invalid value 'xml'"),
    ];
    for (args, message) in cases {
        let output = Command::cargo_bin("gatefix")
            .unwrap()
            .args(*args)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(message), "{args:?}: {stderr}");
        assert!(output.stdout.is_empty());
    }
}

#[test]
fn a_malformed_rule_file_is_named_with_line_and_column() {
    let rules = tempfile::tempdir().unwrap();
    std::fs::write(
        rules.path().join("bad.toml"),
        "[[helper]]\nname = \"x\"\nadmits = 3\n",
    )
    .unwrap();
    let output = Command::cargo_bin("gatefix")
        .unwrap()
        .args(["audit", SITE, "--rules"])
        .arg(rules.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("bad.toml:3:10:"), "{stderr}");
}

#[test]
fn rules_from_a_folder_replace_the_embedded_ones() {
    // Without parameters.toml, a backend's `capability: DeviceCapability` parameter is no
    // longer taken for the device's: unknown, with the reason. The platform's methods need
    // no rule at all: they are read from the site (vllm/platforms/cuda.py).
    let rules = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir("rules").unwrap() {
        let path = entry.unwrap().path();
        if path.file_name().unwrap() != "parameters.toml" {
            std::fs::copy(&path, rules.path().join(path.file_name().unwrap())).unwrap();
        }
    }
    let doc = audit(
        Path::new(SITE),
        &["--rules", rules.path().to_str().unwrap()],
    );
    let g = gate(&doc, "vllm/backends/mla.py", 14);
    assert_eq!(g["admits"]["sm_120"], "unknown");
    let why = g["unknown_because"].as_str().unwrap();
    assert!(why.contains("no rule says what it is"), "{why}");
    let embedded = audit(Path::new(SITE), &[]);
    assert_eq!(
        gate(&embedded, "vllm/backends/mla.py", 14)["admits"]["sm_120"],
        "no"
    );
    let platform = gate(&doc, "vllm/backends/mla.py", 26);
    assert_eq!(platform["predicate"], "sm >= 100");
    assert_eq!(platform["form"], "platform-method");
}

fn copy_tree(from: &Path, to: &Path) {
    for entry in walkdir::WalkDir::new(from).follow_links(false) {
        let entry = entry.unwrap();
        let relative = entry.path().strip_prefix(from).unwrap();
        let target: PathBuf = to.join(relative);
        if entry.path_is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(entry.path()).unwrap(), &target).unwrap();
        } else if entry.file_type().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

#[test]
fn exhaustive_mode_finds_the_same_gates_on_the_fixtures() {
    let fast = audit(Path::new(SITE), &[]);
    let exhaustive = audit(Path::new(SITE), &["--exhaustive"]);
    assert_eq!(fast["gates"], exhaustive["gates"]);
}

/// `--format html` on the fusion venv: one page with nothing fetched, the verdict matrix with
/// the cells the JSON says (sglang's fusion gate an opportunity at sm_120, flashinfer's JIT
/// list a wall, nothing a trap), one finding row per trap/opportunity/wall and target with
/// its evidence, and text escaped. ci/check-html.sh loads the same page in Chromium.
#[test]
fn the_html_report_is_one_page_with_the_matrix_findings_and_coverage() {
    let site = "testdata/venvs/fusion";
    let targets = ["--target", "sm_120", "--target", "sm_100"];
    let output = Command::cargo_bin("gatefix")
        .unwrap()
        .args(["audit", site, "--format", "html"])
        .args(targets)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let page = String::from_utf8(output.stdout).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>"));
    for fetched in ["http://", "https://", "<link", " src="] {
        assert!(!page.contains(fetched), "the page fetches: {fetched}");
    }
    // The matrix agrees with the JSON, cell by cell.
    let doc = common::gatefix_json(
        ["audit", site, "--format", "json"]
            .into_iter()
            .chain(targets)
            .map(OsString::from)
            .collect::<Vec<OsString>>(),
    );
    let mut expected: std::collections::BTreeMap<(String, String, String), usize> =
        Default::default();
    for gate in gates(&doc) {
        let package = format!(
            "{} {}",
            gate["dist"].as_str().unwrap(),
            gate["dist_version"].as_str().unwrap()
        );
        for target in ["sm_120", "sm_100"] {
            let verdict = gate["verdict"][target].as_str().unwrap().to_string();
            *expected
                .entry((package.clone(), target.to_string(), verdict))
                .or_default() += 1;
        }
    }
    let mut found: std::collections::BTreeMap<(String, String, String), usize> = Default::default();
    for cell in page.split("<td data-package=\"").skip(1) {
        let package = cell.split('"').next().unwrap().to_string();
        let target = cell.split("data-target=\"").nth(1).unwrap();
        let target = target.split('"').next().unwrap().to_string();
        let cell = cell.split("</td>").next().unwrap();
        for chip in cell.split("data-verdict=\"").skip(1) {
            let verdict = chip.split('"').next().unwrap().to_string();
            let count = chip.split("data-count=\"").nth(1).unwrap();
            let count: usize = count.split('"').next().unwrap().parse().unwrap();
            found.insert((package.clone(), target.clone(), verdict), count);
        }
    }
    assert_eq!(found, expected);
    assert_eq!(
        expected.get(&("sglang 0.5.5".into(), "sm_120".into(), "opportunity".into())),
        Some(&1)
    );
    assert!(!found.keys().any(|(_, _, v)| v == "trap"));
    // Findings: the opportunity and the wall at sm_120, each with its evidence chain.
    let rows: Vec<&str> = page.split("<tr data-rank=").skip(1).collect();
    assert_eq!(rows.len(), 2, "{page}");
    assert!(rows[0].contains("chip opportunity") && rows[0].contains("communicator.py:"));
    assert!(rows[1].contains("chip wall"));
    assert!(rows.iter().all(|r| r.contains("<ol><li>")));
    // Gate text and evidence are escaped (`->` in evidence, `<` in comparisons).
    let body = page.split("<body>").nth(1).unwrap();
    let body = body.split("<script>").next().unwrap();
    for tag in body.split('<').skip(1) {
        let name: String = tag
            .trim_start_matches('/')
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect();
        assert!(
            [
                "h1", "h2", "h3", "p", "table", "thead", "tbody", "tr", "th", "td", "span", "code",
                "details", "summary", "ol", "li", "div"
            ]
            .contains(&name.as_str()),
            "unexpected markup <{tag:.40}"
        );
    }
    // The coverage chart: the JIT generators at each target.
    assert!(page.contains("data-target=\"sm_120\" data-library=\"JIT generators\""));
}
