//! `gatefix apply` and `revert` on real pinned wheels (issue 4's story): the shipped patches
//! refuse over the flashinfer sglang 0.5.5 pinned, apply over flashinfer 0.7.2, and revert
//! byte for byte. `#[ignore]`d in a plain `cargo test`; `.ci/run` fetches the wheels
//! (`ci/fetch-wheels.sh`) and runs them with `--ignored`.

mod common;

use std::path::Path;

use common::audits::{TARGETS, audit_wheels};
use common::fixture::{hash_tree, run, stderr, stdout, wheel_site};
use serde_json::Value;

fn apply(site: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["apply".to_string(), "sm_120".into(), "--site".into()];
    args.push(site.display().to_string());
    args.extend(extra.iter().map(|s| s.to_string()));
    run(args)
}

/// `apply sm_120` on the site with no extra arguments, which must write one transaction of
/// `files` changed files.
fn apply_changing(site: &Path, files: usize) {
    let out = apply(site, &[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    assert!(
        stdout(&out).contains(&format!(
            "applied as transaction 1: {files} file(s) changed"
        )),
        "{}",
        stdout(&out)
    );
}

fn revert(site: &Path) -> std::process::Output {
    run([
        "revert".to_string(),
        "--site".into(),
        site.display().to_string(),
    ])
}

fn audit(site: &Path) -> Value {
    common::gatefix_json([
        "audit".to_string(),
        site.display().to_string(),
        "--cuda".into(),
        "12.8".into(),
        "--format".into(),
        "json".into(),
        "--fail-on".into(),
        "none".into(),
    ])
}

/// The evaluation at sm_120 of the gates in `file` whose text holds `needle`.
fn admits(doc: &Value, file: &str, needle: &str) -> Vec<String> {
    doc["gates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["file"] == file && g["text"].as_str().unwrap().contains(needle))
        .map(|g| g["admits"]["sm_120"].as_str().unwrap().to_string())
        .collect()
}

/// 1-based line of the arch-list call (`get_nvcc_flags_list(`) in `def gen_trtllm_comm_module`.
fn comm_list_line(site: &Path) -> usize {
    let text = std::fs::read_to_string(site.join("flashinfer/jit/comm.py")).unwrap();
    let def = text
        .lines()
        .position(|l| l.starts_with("def gen_trtllm_comm_module"))
        .expect("gen_trtllm_comm_module is defined");
    def + 1
        + text
            .lines()
            .skip(def)
            .position(|l| l.contains("get_nvcc_flags_list("))
            .unwrap()
}

#[test]
#[ignore = "needs the pinned wheels (ci/fetch-wheels.sh)"]
fn sglang_055_with_its_pinned_flashinfer_is_refused_with_the_jit_list() {
    let site = wheel_site(&["sglang-0.5.5-", "flashinfer_python-0.5.0-"]);
    let before = hash_tree(site.path());
    let out = apply(site.path(), &[]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let text = stdout(&out);
    let line = comm_list_line(site.path());
    assert!(
        text.contains("sglang-ar-fusion-communicator (sglang 0.5.5): REFUSED"),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "flashinfer/jit/comm.py:{line} supported_major_versions=[9, 10]"
        )),
        "names the file, line {line} and [9, 10]: {text}"
    );
    assert!(
        text.contains("the gate at sglang/srt/layers/communicator.py:"),
        "{text}"
    );
    assert_eq!(hash_tree(site.path()), before, "a refusal writes nothing");
}

#[test]
#[ignore = "needs the pinned wheels (ci/fetch-wheels.sh)"]
fn sglang_055_with_flashinfer_072_applies_and_reverts_byte_for_byte() {
    let wheels = ["sglang-0.5.5-", "flashinfer_python-0.7.2-"];
    let site = wheel_site(&wheels);
    // Bytecode as pip writes it (timestamp pycs) for the files the patch edits: apply leaves
    // it (Python finds it stale), so the whole site, `.pyc` included, is back after revert.
    let edited = [
        "sglang/srt/layers/communicator.py",
        "sglang/srt/server_args.py",
    ];
    let compiled = std::process::Command::new("python3")
        .args(["-m", "compileall", "-q"])
        .args(edited.iter().map(|f| site.path().join(f)))
        .env_remove("SOURCE_DATE_EPOCH")
        .status()
        .expect("python3 runs");
    assert!(compiled.success());
    let pycs = || -> Vec<String> {
        hash_tree(site.path())
            .into_keys()
            .filter(|f| f.ends_with(".pyc"))
            .collect()
    };
    assert_eq!(pycs().len(), 2, "{:?}", pycs());
    let before = hash_tree(site.path());
    let gate = "_is_sm100_supported or _is_sm90_supported";
    assert_eq!(
        admits(
            &audit_wheels(&wheels),
            "sglang/srt/layers/communicator.py",
            gate
        ),
        ["no"]
    );

    apply_changing(site.path(), 2);
    assert_eq!(pycs().len(), 2, "pip's bytecode stays: {:?}", pycs());
    let opened = admits(
        &audit(site.path()),
        "sglang/srt/layers/communicator.py",
        gate,
    );
    assert_eq!(opened.len(), 1);
    assert_ne!(opened[0], "no", "the fusion gate no longer rejects sm_120");
    let again = apply(site.path(), &[]);
    assert!(stdout(&again).contains("(sglang 0.5.5): already applied"));

    let out = revert(site.path());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(hash_tree(site.path()), before);
}

#[test]
#[ignore = "needs the pinned wheels (ci/fetch-wheels.sh)"]
fn sglang_0523_opens_the_three_fusion_gates_together_and_keeps_mnnvl_closed() {
    let wheels = ["sglang-0.5.23-", "flashinfer_python-0.7.2-"];
    let site = wheel_site(&wheels);
    let before = hash_tree(site.path());
    let add_norm = "sglang/srt/layers/layer_boundary/residual/add_norm.py";
    let fusion = "sglang/srt/layers/flashinfer_comm_fusion.py";
    let doc = audit_wheels(&wheels);
    assert_eq!(
        admits(&doc, add_norm, "_is_sm90_supported or _is_sm100_supported"),
        ["no"]
    );
    assert_eq!(
        admits(&doc, fusion, "not (get_platform().is_sm90"),
        ["yes"],
        "raises at sm_120"
    );

    apply_changing(site.path(), 3);

    let doc = audit(site.path());
    let opened = admits(&doc, add_norm, "_is_sm90_supported or _is_sm100_supported");
    assert!(opened.iter().all(|a| a != "no"), "{opened:?}");
    assert_eq!(
        admits(&doc, fusion, "is_sm100 or get_platform().is_sm120"),
        ["no"],
        "no longer raises"
    );
    // SM12x must never be routed to mnnvl (JIT list [9, 10]) or cutedsl.
    let mnnvl: Vec<&Value> = doc["gates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["file"] == fusion && g["function"] == "_mnnvl_supported")
        .collect();
    assert!(!mnnvl.is_empty());
    assert!(
        mnnvl.iter().all(|g| g["admits"]["sm_120"] == "no"),
        "{mnnvl:?}"
    );

    let out = revert(site.path());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(hash_tree(site.path()), before);
}

/// The shipped patch on a fork that publishes sglang and flashinfer under other names: the
/// patch is written for `sglang/...` files and the `sglang` distribution, and follows the
/// rules to the fork (`Rules::load_for_site`). It opens the fork's three gates, and revert
/// restores the fork byte for byte. Before, it was "NOT APPLICABLE" (no such file).
#[test]
#[ignore = "needs the pinned wheels (ci/fetch-wheels.sh)"]
fn the_fusion_patch_opens_the_same_gates_of_a_renamed_fork() {
    let wheels = ["sglang-0.5.23-", "flashinfer_python-0.7.2-"];
    let site = wheel_site(&wheels);
    for package in ["sglang", "flashinfer"] {
        common::fixture::renamed_fork(site.path(), package, &format!("{package}_fork"));
    }
    let before = hash_tree(site.path());
    let add_norm = "sglang_fork/srt/layers/layer_boundary/residual/add_norm.py";
    // The human report names the patch that `apply` applies (it read the patches as written
    // before: "no shipped patch opens these opportunities").
    let human = run([
        "audit",
        &site.path().display().to_string(),
        "--target",
        "sm_120",
        "--cuda",
        "12.8",
        "--fail-on",
        "none",
    ]);
    assert!(
        stdout(&human).contains("sglang-ar-fusion-add-norm"),
        "{}",
        stdout(&human)
    );
    // With no ledger yet, `status` compares the files the shipped patches edit with RECORD:
    // a hand edit of one is found on the fork as on the published package (before, it looked
    // for `sglang/...` and checked nothing).
    let path = site.path().join(add_norm);
    let pristine = std::fs::read(&path).unwrap();
    std::fs::write(&path, [pristine.as_slice(), b"# edited by hand\n"].concat()).unwrap();
    let out = run([
        "status",
        "--site",
        &site.path().display().to_string(),
        "--format",
        "json",
    ]);
    let status: Value = serde_json::from_slice(&out.stdout).expect("status JSON");
    let states: Vec<(&str, &str)> = status["site_files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["file"].as_str().unwrap(), f["state"].as_str().unwrap()))
        .collect();
    assert_eq!(states, [(add_norm, "not-by-gatefix")], "{status}");
    std::fs::write(&path, pristine).unwrap();
    apply_changing(site.path(), 3);
    let edited = std::fs::read_to_string(site.path().join(add_norm)).unwrap();
    assert!(edited.contains("get_platform().is_sm120"), "{edited}");
    let doc = audit(site.path());
    let opened = admits(&doc, add_norm, "_is_sm90_supported or _is_sm100_supported");
    assert!(
        !opened.is_empty() && opened.iter().all(|a| a != "no"),
        "{opened:?}"
    );
    let out = revert(site.path());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(hash_tree(site.path()), before);
}

// ----- Fixes synthesized from the audit, on real wheels -----------------------------------

fn audit_at(site: &Path, targets: &[&str]) -> Value {
    let mut args = vec![
        "audit".to_string(),
        site.display().to_string(),
        "--cuda".into(),
        "12.8".into(),
        "--format".into(),
        "json".into(),
        "--fail-on".into(),
        "none".into(),
    ];
    for t in targets {
        args.push("--target".into());
        args.push(t.to_string());
    }
    common::gatefix_json(args)
}

/// Every gate in order with its admission at sm_90, sm_100 and sm_103.
fn other_targets(doc: &Value) -> Vec<(String, String, Vec<String>)> {
    doc["gates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["file"].as_str().unwrap().to_string(),
                g["function"].as_str().unwrap_or("").to_string(),
                ["sm_90", "sm_100", "sm_103"]
                    .iter()
                    .map(|t| g["admits"][t].as_str().unwrap().to_string())
                    .collect(),
            )
        })
        .collect()
}

/// `apply sm_120 --unsafe-fixes EXTRA...` on `site`, a pristine site of `wheels`: every
/// synthesized fix re-parses, each targeted gate is open (or, closed, a wall) at sm_120 in a
/// fresh audit, every gate keeps its admission at sm_90/sm_100/sm_103, and revert is
/// byte-identical. Returns how many fixes were applied. The audit before the edit is the
/// shared one of the pristine site.
fn synthesized_round_trip(wheels: &[&str], site: &Path, extra: &[&str]) -> usize {
    let before = hash_tree(site);
    let audit_before = audit_wheels(wheels);
    let mut args = vec!["--unsafe-fixes", "--cuda", "12.8"];
    args.extend(extra);
    let out = apply(site, &args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    // "  unsafe  synthesized from gate <id> (open|close)"
    let fixed: Vec<(String, String)> = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("unsafe  synthesized from gate "))
        .map(|rest| {
            let (id, mode) = rest.split_once(' ').unwrap();
            (id.to_string(), mode.trim_matches(['(', ')']).to_string())
        })
        .collect();
    if fixed.is_empty() && !text.contains("applied as transaction") {
        assert_eq!(hash_tree(site), before);
        return 0;
    }
    let audit_after = audit_at(site, &TARGETS);
    for warning in audit_after["warnings"].as_array().unwrap() {
        let file = warning["file"].as_str().unwrap();
        let old = audit_before["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w["file"] == file);
        assert!(old, "a fix broke {file}: {warning}");
    }
    let gates_before = audit_before["gates"].as_array().unwrap();
    let gates_after = audit_after["gates"].as_array().unwrap();
    for (id, mode) in &fixed {
        let old = gates_before
            .iter()
            .find(|g| g["id"] == id.as_str())
            .unwrap();
        let new_ids: Vec<&Value> = gates_after
            .iter()
            .filter(|g| {
                g["file"] == old["file"]
                    && g["function"] == old["function"]
                    && !gates_before.iter().any(|b| b["id"] == g["id"])
            })
            .collect();
        let want = if mode == "open" { "open" } else { "wall" };
        assert!(
            new_ids.iter().any(|g| g["verdict"]["sm_120"] == want),
            "gate {id} ({mode}) is not {want} at sm_120 after the fix: {new_ids:?}"
        );
    }
    assert_eq!(other_targets(&audit_before), other_targets(&audit_after));
    let out = revert(site);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(hash_tree(site), before, "revert is byte-identical");
    fixed.len()
}

#[test]
#[ignore = "needs the pinned wheels (ci/fetch-wheels.sh)"]
fn sglang_0523_synthesized_opportunities_open_and_nothing_else_moves() {
    let wheels = ["sglang-0.5.23-", "flashinfer_python-0.7.2-"];
    let site = wheel_site(&wheels);
    let fixed = synthesized_round_trip(&wheels, site.path(), &["--all-opportunities"]);
    // 13 opportunities today: 3 are the curated add-norm patch's, 5 get a fix, 5 have none
    // (an arch part spelled the same elsewhere in its function, a function-local flag).
    assert!(fixed >= 1, "the mechanism is exercised");
}

#[test]
#[ignore = "needs the pinned wheels (ci/fetch-wheels.sh)"]
fn vllm_0330_synthesized_fixes_and_the_closed_trap() {
    let wheels = ["vllm-0.33.0-", "flashinfer_python-0.7.2.post1-"];
    let site = wheel_site(&wheels);
    // Synthesized fixes alone: the curated vllm-ar-fusion-sm120 patch edits the same file
    // (and a ready curated patch wins its files), so only a patch for another distribution
    // is loaded here.
    let patch_dir = tempfile::tempdir().unwrap();
    let sglang_only = "sglang-ar-fusion-communicator.toml";
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("patches")
            .join(sglang_only),
        patch_dir.path().join(sglang_only),
    )
    .unwrap();
    let no_patches = patch_dir.path().display().to_string();
    // No opportunity at sm_120 today: nothing is written, exit 0.
    synthesized_round_trip(
        &wheels,
        site.path(),
        &["--all-opportunities", "--patches", &no_patches],
    );
    // The mnnvl branch of flashinfer_all_reduce.py admits sm_120 (has_device_capability(100))
    // over a JIT list of [9, 10]: closed with the package's own family predicate.
    // The first round trip reverted byte for byte, so the site is pristine again.
    let fixed = synthesized_round_trip(
        &wheels,
        site.path(),
        &[
            "--all-opportunities",
            "--close-traps",
            "--patches",
            &no_patches,
        ],
    );
    assert!(fixed >= 1, "the trap is closed");
}

/// The arch-table gates (`form = arch-table`) of vllm's own files, with their admission at
/// sm_120, in order.
fn vllm_tables(doc: &Value) -> Vec<(String, String)> {
    doc["gates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["form"] == "arch-table" && g["file"].as_str().unwrap().starts_with("vllm/"))
        .map(|g| {
            (
                g["file"].as_str().unwrap().to_string(),
                g["admits"]["sm_120"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Each gate's admission at sm_90, sm_100 and sm_103, keyed by file, function and text (lines
/// move when a patch adds lines).
fn admissions_by_text(
    doc: &Value,
) -> std::collections::BTreeMap<(String, String, String), Vec<Vec<String>>> {
    let mut map: std::collections::BTreeMap<_, Vec<Vec<String>>> = Default::default();
    for (g, (file, function, admits)) in doc["gates"]
        .as_array()
        .unwrap()
        .iter()
        .zip(other_targets(doc))
    {
        let text = g["text"].as_str().unwrap().to_string();
        map.entry((file, function, text)).or_default().push(admits);
    }
    map
}

#[test]
#[ignore = "needs the pinned wheels (ci/fetch-wheels.sh)"]
fn vllm_0330_fusion_size_tables_get_a_120_row_and_trtllm() {
    let wheels = ["vllm-0.33.0-", "flashinfer_python-0.7.2.post1-"];
    let site = wheel_site(&wheels);
    let before_bytes = hash_tree(site.path());
    let before = audit_wheels(&wheels);
    // `PassConfig.default_fi_allreduce_fusion_max_size_mb` and the one-shot size choice: both
    // tables are keyed {90, 100, 103, 107}, so sm_120 finds no row.
    let tables = vllm_tables(&before);
    assert!(
        tables
            .iter()
            .any(|(f, _)| f == "vllm/config/compilation.py")
            && tables
                .iter()
                .any(|(f, _)| f.ends_with("fusion/allreduce_rms_fusion.py")),
        "{tables:?}"
    );
    assert!(tables.iter().all(|(_, a)| a == "no"), "{tables:?}");

    let out = apply(
        site.path(),
        &["--patch", "vllm-ar-fusion-sm120", "--cuda", "12.8"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("vllm-ar-fusion-sm120 (vllm 0.33.0): ready: kernel present [safe fix]"),
        "{text}"
    );
    assert!(
        text.contains("supported_major_versions=[9, 10, 12]"),
        "{text}"
    );
    // The backend choice has a switch of its own, read in vllm/envs.py.
    assert!(
        text.contains(
            "  instead VLLM_FLASHINFER_ALLREDUCE_BACKEND=trtllm needs no edit of \
             vllm/distributed/device_communicators/flashinfer_all_reduce.py (read at vllm/envs.py:"
        ),
        "{text}"
    );

    let after = audit_at(site.path(), &TARGETS);
    let tables_after = vllm_tables(&after);
    assert_eq!(tables_after.len(), tables.len(), "{tables_after:?}");
    assert!(
        tables_after.iter().all(|(_, a)| a == "yes"),
        "{tables_after:?}"
    );
    // Nothing moves at sm_90/100/103: every gate keeps its admission there; the new ones are
    // the inserted SM12x check and the trtllm tests whose backend it now decides, all in the
    // backend choice's file.
    let (old, new) = (admissions_by_text(&before), admissions_by_text(&after));
    for (key, admits) in &old {
        assert_eq!(new.get(key), Some(admits), "{key:?}");
    }
    for key in new.keys().filter(|k| !old.contains_key(*k)) {
        assert_eq!(
            key.0, "vllm/distributed/device_communicators/flashinfer_all_reduce.py",
            "a gate appeared outside the backend choice: {key:?}"
        );
    }
    let out = revert(site.path());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        hash_tree(site.path()),
        before_bytes,
        "revert is byte-identical"
    );
}

#[test]
#[ignore = "needs the pinned wheels (ci/fetch-wheels.sh)"]
fn sglang_0510_fusion_is_refused_over_its_flashinfer_and_opens_over_072() {
    let communicator = "sglang/srt/layers/communicator.py";
    // sglang 0.5.10 with the flashinfer it pinned: the trtllm comm JIT list is [9, 10].
    let site = wheel_site(&["sglang-0.5.10-", "flashinfer_python-0.6.7.post2-"]);
    let before = hash_tree(site.path());
    let out = apply(
        site.path(),
        &["--patch", "sglang-ar-fusion-communicator-0510"],
    );
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let text = stdout(&out);
    let line = comm_list_line(site.path());
    assert!(
        text.contains("sglang-ar-fusion-communicator-0510 (sglang 0.5.10): REFUSED"),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "found: flashinfer/jit/comm.py:{line} supported_major_versions=[9, 10]"
        )),
        "{text}"
    );
    assert_eq!(hash_tree(site.path()), before);

    // The same sglang over flashinfer 0.7.2 ([9, 10, 12]): applied, opened, reverted.
    let site = wheel_site(&["sglang-0.5.10-", "flashinfer_python-0.7.2-"]);
    let before = hash_tree(site.path());
    apply_changing(site.path(), 1);
    // The audit does not report this returned condition as a gate today (it is neither an
    // `if` test nor a helper's body), so the edit is checked in the file itself.
    let patched = std::fs::read_to_string(site.path().join(communicator)).unwrap();
    assert!(
        patched.contains("(_is_sm90_supported or _is_sm100_supported or is_sm120_supported())"),
        "{patched}"
    );
    assert!(patched.contains("\nfrom sglang.srt.utils import is_sm120_supported\n"));
    let out = revert(site.path());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(hash_tree(site.path()), before);
}

/// Issue 17: a re-apply over a site whose ledger was removed finds the patches "already
/// applied"; it must not say all is well. With the ledger it exits 0 quietly; without it, it
/// warns that no transaction records the files, names the way back, and exits 1.
#[test]
#[ignore = "needs the pinned wheels (ci/fetch-wheels.sh)"]
fn sglang_0523_reapply_without_its_ledger_says_the_site_has_no_way_back() {
    let site = wheel_site(&["sglang-0.5.23-", "flashinfer_python-0.7.2-"]);
    let out = apply(site.path(), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let again = apply(site.path(), &[]);
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    assert!(!stderr(&again).contains("warning"), "{}", stderr(&again));

    std::fs::remove_dir_all(site.path().join(".gatefix")).expect("the ledger is in the site");
    let orphaned = apply(site.path(), &[]);
    let err = stderr(&orphaned);
    assert_eq!(orphaned.status.code(), Some(1), "{err}");
    assert!(
        err.contains("add_norm.py is already patched, but no transaction in the ledger"),
        "{err}"
    );
    assert!(
        err.contains("pip install --force-reinstall --no-deps sglang==0.5.23"),
        "{err}"
    );
}

// ----- Shipped patches that span releases (issue 16 item 4) -------------------------------

/// The shipped patch `id`: the files its edits touch, and how many of its edits have an anchor.
fn shipped_patch_files(id: &str) -> (Vec<String>, usize) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("patches/{id}.toml"));
    let patch: toml::Table = std::fs::read_to_string(&path).unwrap().parse().unwrap();
    let edits = patch["edit"].as_array().unwrap();
    let mut files: Vec<String> = edits
        .iter()
        .map(|e| e["file"].as_str().unwrap().to_string())
        .collect();
    files.sort();
    files.dedup();
    let anchored = edits.iter().filter(|e| e.get("anchor").is_some()).count();
    (files, anchored)
}

/// A site of one real sglang wheel, cut down to its `.dist-info` and `files` (the kernel
/// index then has nothing to scan, so each dry run takes a second, not a minute).
fn sglang_files_site(version: &str, files: &[String]) -> tempfile::TempDir {
    let full = wheel_site(&[&format!("sglang-{version}-")]);
    let site = tempfile::tempdir().unwrap();
    let info = format!("sglang-{version}.dist-info");
    common::fixture::copy_tree(&full.path().join(&info), &site.path().join(&info));
    for file in files {
        let to = site.path().join(file);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(full.path().join(file), &to)
            .unwrap_or_else(|e| panic!("sglang {version} has {file}: {e}"));
    }
    site
}

/// Each shipped sglang patch on three real releases of its `versions` range: every anchor
/// matches exactly once and the edited files re-parse, so the plan reaches the kernel check
/// (refused here: the cut-down site holds no flashinfer), never an anchor conflict; nothing
/// is written. Over the flashinfer-python each release pinned, 0.5.5 ... 0.5.13.post1 are
/// refused ([9, 10]) and 0.5.21 ... 0.5.23 ready (0.6.18, 0.7.1, 0.7.2: [9, 10, 12]).
#[test]
#[ignore = "needs the pinned wheels (ci/fetch-wheels.sh)"]
fn shipped_patches_match_every_anchor_on_three_releases_of_their_range() {
    let spans: [(&str, [&str; 3]); 4] = [
        (
            "sglang-ar-fusion-communicator",
            ["0.5.5", "0.5.5.post3", "0.5.7"],
        ),
        (
            "sglang-ar-fusion-auto-enable-deepseek",
            ["0.5.5", "0.5.5.post1", "0.5.5.post3"],
        ),
        (
            "sglang-ar-fusion-communicator-0510",
            ["0.5.8", "0.5.10", "0.5.13.post1"],
        ),
        ("sglang-ar-fusion-add-norm", ["0.5.21", "0.5.22", "0.5.23"]),
    ];
    for (id, versions) in spans {
        let (files, anchored) = shipped_patch_files(id);
        for version in versions {
            let site = sglang_files_site(version, &files);
            let before = hash_tree(site.path());
            let out = apply(site.path(), &["--dry-run", "--patch", id]);
            let text = stdout(&out);
            assert!(
                !text.contains("NOT APPLICABLE"),
                "{id} on {version}: {text}"
            );
            assert!(
                text.contains(&format!(
                    "{id} (sglang {version}): REFUSED: no kernel for sm_120"
                )),
                "{id} on {version}: {text}{}",
                stderr(&out)
            );
            assert_eq!(out.status.code(), Some(3), "{id} on {version}");
            let gates = text.lines().filter(|l| l.starts_with("  gate    ")).count();
            assert_eq!(
                gates, anchored,
                "{id} on {version}: every anchor found: {text}"
            );
            assert_eq!(hash_tree(site.path()), before, "{id} on {version}");
        }
    }
}
