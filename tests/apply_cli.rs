//! `gatefix apply / revert / status / log / rules check` on the fixture venv
//! `testdata/venvs/fusion` (sglang 0.5.5's fusion gate shape over flashinfer 0.7.2's JIT list),
//! copied into a temp folder for every test.

mod common;

use std::fs::OpenOptions;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use common::fixture::{FUSION_SITE, hash_tree, run, stderr, stdout, venv_args, venv_copy};

const COMMUNICATOR: &str = "sglang/srt/layers/communicator.py";
const COMM_JIT: &str = "flashinfer/jit/comm.py";

fn apply(root: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["apply".to_string(), "sm_120".into()];
    args.extend(venv_args(root));
    args.extend(extra.iter().map(|s| s.to_string()));
    run(args)
}

fn command(name: &str, root: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec![name.to_string()];
    args.extend(venv_args(root));
    args.extend(extra.iter().map(|s| s.to_string()));
    run(args)
}

fn site_file(root: &Path, relative: &str) -> std::path::PathBuf {
    root.join(FUSION_SITE).join(relative)
}

/// flashinfer as sglang 0.5.5 pinned it: the trtllm comm module compiles for [9, 10] only.
fn downgrade_comm_jit(root: &Path) {
    let path = site_file(root, COMM_JIT);
    let text = std::fs::read_to_string(&path).unwrap();
    let old = text.replacen(
        "supported_major_versions=[9, 10, 12]",
        "supported_major_versions=[9, 10]",
        1,
    );
    assert_ne!(text, old);
    std::fs::write(path, old).unwrap();
}

#[test]
fn dry_run_shows_the_diff_and_writes_nothing() {
    let (_guard, root) = venv_copy("fusion");
    let before = hash_tree(&root);
    let out = apply(&root, &["--dry-run"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("--- a/sglang/srt/layers/communicator.py"),
        "{text}"
    );
    assert!(
        text.contains(
            "+            (_is_sm100_supported or _is_sm90_supported or is_sm120_supported())"
        ),
        "{text}"
    );
    assert!(
        text.contains("+from sglang.srt.utils import is_sm120_supported"),
        "{text}"
    );
    assert!(
        text.contains("flashinfer/jit/comm.py:7 supported_major_versions=[9, 10, 12]"),
        "{text}"
    );
    assert_eq!(hash_tree(&root), before);
    assert!(
        !root.join(".gatefix").exists(),
        "a dry run creates no ledger"
    );
}

#[test]
fn apply_then_revert_restores_every_byte_and_mode() {
    let (_guard, root) = venv_copy("fusion");
    let communicator = site_file(&root, COMMUNICATOR);
    std::fs::set_permissions(&communicator, std::fs::Permissions::from_mode(0o640)).unwrap();
    let pycache = communicator.parent().unwrap().join("__pycache__");
    std::fs::create_dir_all(&pycache).unwrap();
    let stale = pycache.join("communicator.cpython-311.pyc");
    std::fs::write(&stale, b"stale bytecode").unwrap();
    let other = pycache.join("server_args_helper.cpython-311.pyc");
    std::fs::write(&other, b"unrelated").unwrap();
    let before = hash_tree(&root);

    let out = apply(&root, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("applied as transaction 1"),
        "{}",
        stdout(&out)
    );
    let patched = std::fs::read_to_string(&communicator).unwrap();
    assert!(patched.contains("or is_sm120_supported())"));
    assert_eq!(
        std::fs::metadata(&communicator)
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o640,
        "the file keeps its mode"
    );
    assert!(
        !stale.exists(),
        "stale bytecode of a patched module is removed"
    );
    assert!(other.exists(), "other modules' bytecode stays");
    assert!(
        root.join(".gatefix/ledger.git/HEAD").is_file(),
        "ledger beside the venv"
    );

    let out = command("revert", &root, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let mut after = hash_tree(&root);
    let mut expected = before.clone();
    // The removed bytecode is the one intended difference.
    expected.remove(&format!(
        "{FUSION_SITE}/sglang/srt/layers/__pycache__/communicator.cpython-311.pyc"
    ));
    after.remove(&format!(
        "{FUSION_SITE}/sglang/srt/layers/__pycache__/communicator.cpython-311.pyc"
    ));
    assert_eq!(after, expected);
    assert_eq!(
        std::fs::metadata(&communicator)
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o640
    );
}

#[test]
fn the_patched_gate_admits_the_target_in_a_fresh_audit() {
    let (_guard, root) = venv_copy("fusion");
    let admits = |root: &Path| {
        let doc = common::gatefix_json([
            "audit".to_string(),
            root.display().to_string(),
            "--format".into(),
            "json".into(),
            "--fail-on".into(),
            "none".into(),
        ]);
        doc["gates"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["file"] == COMMUNICATOR && g["form"] == "flag-use")
            .map(|g| g["admits"]["sm_120"].as_str().unwrap().to_string())
            .unwrap()
    };
    assert_eq!(admits(&root), "no");
    assert_eq!(apply(&root, &[]).status.code(), Some(0));
    assert_ne!(
        admits(&root),
        "no",
        "the opened gate no longer rejects sm_120"
    );
}

#[test]
fn applying_twice_is_a_no_op() {
    let (_guard, root) = venv_copy("fusion");
    assert_eq!(apply(&root, &[]).status.code(), Some(0));
    let once = hash_tree(&root);
    let out = apply(&root, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("sglang-ar-fusion-communicator (sglang 0.5.5): already applied"));
    assert_eq!(hash_tree(&root), once);
    let log = stdout(&command("log", &root, &[]));
    assert_eq!(log.lines().count(), 1, "one transaction: {log}");
}

#[test]
fn a_missing_kernel_refuses_with_the_evidence_chain() {
    let (_guard, root) = venv_copy("fusion");
    downgrade_comm_jit(&root);
    let before = hash_tree(&root);
    let out = apply(&root, &[]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("sglang-ar-fusion-communicator (sglang 0.5.5): REFUSED"),
        "{text}"
    );
    assert!(text.contains("the gate at sglang/srt/layers/communicator.py:24 needs JIT generator flashinfer.jit.comm:gen_trtllm_comm_module"), "{text}");
    assert!(
        text.contains("flashinfer/jit/comm.py:7 supported_major_versions=[9, 10]"),
        "{text}"
    );
    assert_eq!(hash_tree(&root), before, "a refusal writes nothing");
}

#[test]
fn force_unverified_applies_loudly_and_status_says_so() {
    let (_guard, root) = venv_copy("fusion");
    downgrade_comm_jit(&root);
    let out = apply(
        &root,
        &[
            "--force-unverified",
            "--patch",
            "sglang-ar-fusion-communicator",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("WARNING: applying sglang-ar-fusion-communicator WITHOUT a kernel")
    );
    let status = stdout(&command("status", &root, &[]));
    assert!(
        status.contains("UNVERIFIED: sglang-ar-fusion-communicator (transaction 1)"),
        "{status}"
    );
    let json: serde_json::Value =
        serde_json::from_slice(&command("status", &root, &["--format", "json"]).stdout).unwrap();
    assert_eq!(json["applied"][0]["patches"][0]["verified"], false);
}

#[test]
fn drift_stops_revert_until_forced_and_the_drifted_bytes_are_kept() {
    let (_guard, root) = venv_copy("fusion");
    let original = std::fs::read(site_file(&root, COMMUNICATOR)).unwrap();
    assert_eq!(apply(&root, &[]).status.code(), Some(0));
    let hand_edit = b"# edited by hand after gatefix\n";
    std::fs::write(site_file(&root, COMMUNICATOR), hand_edit).unwrap();

    let status = stdout(&command("status", &root, &[]));
    assert!(
        status.contains("DRIFT: sglang/srt/layers/communicator.py"),
        "{status}"
    );
    let out = command("revert", &root, &[]);
    assert_eq!(out.status.code(), Some(3));
    assert!(
        stderr(&out).contains("sglang/srt/layers/communicator.py"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        std::fs::read(site_file(&root, COMMUNICATOR)).unwrap(),
        hand_edit,
        "not clobbered"
    );

    let out = command("revert", &root, &["--force"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        std::fs::read(site_file(&root, COMMUNICATOR)).unwrap(),
        original
    );
    let ledger = root.join(".gatefix/ledger.git");
    let saved = std::process::Command::new("git")
        .args([
            "--git-dir",
            ledger.to_str().unwrap(),
            "show",
            "HEAD~2:sglang/srt/layers/communicator.py",
        ])
        .output()
        .unwrap();
    assert_eq!(
        saved.stdout, hand_edit,
        "revert --force saved the drifted bytes first"
    );
}

#[test]
fn a_reinstalled_file_counts_as_already_reverted() {
    let (_guard, root) = venv_copy("fusion");
    let original = std::fs::read(site_file(&root, COMMUNICATOR)).unwrap();
    assert_eq!(apply(&root, &[]).status.code(), Some(0));
    std::fs::write(site_file(&root, COMMUNICATOR), &original).unwrap(); // as pip would
    let out = command("revert", &root, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("already at their original bytes"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn a_second_writer_fails_fast_while_the_lock_is_held() {
    let (_guard, root) = venv_copy("fusion");
    let ledger = root.join(".gatefix/ledger.git");
    std::fs::create_dir_all(&ledger).unwrap();
    let lock = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(ledger.join("gatefix.lock"))
        .unwrap();
    lock.try_lock().unwrap();
    let before = hash_tree(&root);
    let out = apply(&root, &[]);
    assert_eq!(out.status.code(), Some(3));
    assert!(
        stderr(&out).contains("locked by another gatefix"),
        "{}",
        stderr(&out)
    );
    assert_eq!(hash_tree(&root), before);
    lock.unlock().unwrap();
    assert_eq!(apply(&root, &[]).status.code(), Some(0));
}

#[test]
fn a_symlink_out_of_the_site_is_refused_before_reading() {
    let (guard, root) = venv_copy("fusion");
    let outside = guard.path().join("outside.py");
    let communicator = site_file(&root, COMMUNICATOR);
    std::fs::copy(&communicator, &outside).unwrap();
    std::fs::remove_file(&communicator).unwrap();
    std::os::unix::fs::symlink(&outside, &communicator).unwrap();
    let before = std::fs::read(&outside).unwrap();
    let out = apply(&root, &["--patch", "sglang-ar-fusion-communicator"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(
        stdout(&out).contains("leads out of the site root"),
        "{}",
        stdout(&out)
    );
    assert_eq!(std::fs::read(&outside).unwrap(), before);
}

#[test]
fn patch_files_that_escape_or_break_are_errors_with_a_position() {
    let dir = tempfile::tempdir().unwrap();
    let good = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("patches/sglang-ar-fusion-communicator.toml"),
    )
    .unwrap();
    let cases = [
        (
            good.replace(
                "file = \"sglang/srt/layers/communicator.py\"",
                "file = \"../../etc/passwd.py\"",
            ),
            "must be a .py file relative to the site root",
        ),
        (
            good.replace("versions = \">=0.5.5, <0.5.6\"", "versions = \">=banana\""),
            "not a PEP 440 version range",
        ),
        (
            good.replace(
                "or_extend = \"is_sm120_supported()\"",
                "or_extend = \"is_sm120_supported(\"",
            ),
            "not valid Python",
        ),
        (good.replace("[[edit]]", "[[edit]\n"), "patch.toml:"),
    ];
    for (text, message) in cases {
        assert_ne!(text, good, "the case changes the file");
        std::fs::write(dir.path().join("patch.toml"), &text).unwrap();
        let out = run(["rules", "check", "--patches", dir.path().to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{message}");
        let err = stderr(&out);
        assert!(err.contains(message), "{err}");
        assert!(
            err.contains("patch.toml:")
                && err
                    .split("patch.toml:")
                    .nth(1)
                    .unwrap()
                    .chars()
                    .next()
                    .unwrap()
                    .is_ascii_digit(),
            "names file:line:col: {err}"
        );
    }
}

#[test]
fn rules_check_validates_the_shipped_files() {
    let out = run(["rules", "check"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("sglang-ar-fusion-add-norm"));
}

#[test]
fn an_anchor_that_matches_nothing_is_a_conflict_not_a_silent_skip() {
    let (_guard, root) = venv_copy("fusion");
    let path = site_file(&root, COMMUNICATOR);
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        text.replace(
            "(_is_sm100_supported or _is_sm90_supported)",
            "_is_sm100_supported",
        ),
    )
    .unwrap();
    let out = apply(&root, &["--patch", "sglang-ar-fusion-communicator"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(stdout(&out).contains("NOT APPLICABLE"), "{}", stdout(&out));
    assert!(
        stdout(&out).contains("not found in `_gather_hidden_states_and_residual`"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn unknown_patch_ids_and_missing_venvs_are_usage_errors() {
    let (_guard, root) = venv_copy("fusion");
    let out = apply(&root, &["--patch", "no-such-patch"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no patch `no-such-patch`; known patches:"));
    let out = run(["apply", "sm_120", "--venv", "/nonexistent/venv"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("/nonexistent/venv"));
}

#[test]
fn revert_all_and_named_transactions() {
    let (_guard, root) = venv_copy("fusion");
    let before = hash_tree(&root);
    assert_eq!(
        apply(&root, &["--patch", "sglang-ar-fusion-communicator"])
            .status
            .code(),
        Some(0)
    );
    assert_eq!(
        apply(&root, &["--patch", "sglang-ar-fusion-auto-enable-deepseek"])
            .status
            .code(),
        Some(0)
    );
    let out = command("revert", &root, &["1"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = command("revert", &root, &["1"]);
    assert_eq!(out.status.code(), Some(2), "already reverted");
    assert!(
        stderr(&out).contains("already reverted"),
        "{}",
        stderr(&out)
    );
    let out = command("revert", &root, &["--all"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(hash_tree(&root), before);
    let out = command("revert", &root, &["--all"]);
    assert!(stdout(&out).contains("nothing to revert"));
}

#[test]
fn python_names_the_site_through_its_purelib() {
    let (guard, root) = venv_copy("fusion");
    let fake = guard.path().join("python3");
    let site = root.join(FUSION_SITE);
    // Stands in for an interpreter: answers the purelib question, whatever it is asked.
    std::fs::write(&fake, format!("#!/bin/sh\necho '{}'\n", site.display())).unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = run([
        "apply",
        "sm_120",
        "--python",
        fake.to_str().unwrap(),
        "--dry-run",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("sglang-ar-fusion-communicator (sglang 0.5.5): ready"));
}

#[test]
fn an_explicit_ledger_folder_is_used_by_every_command() {
    let (guard, root) = venv_copy("fusion");
    let before = hash_tree(&root);
    let ledger = guard.path().join("elsewhere/ledger.git");
    let ledger_arg = ledger.to_str().unwrap();
    assert_eq!(
        apply(&root, &["--ledger", ledger_arg]).status.code(),
        Some(0)
    );
    assert!(ledger.join("HEAD").is_file());
    assert!(
        !root.join(".gatefix/ledger.git").exists(),
        "no ledger at the default place, only the pointer to this one"
    );
    let status = stdout(&command("status", &root, &["--ledger", ledger_arg]));
    assert!(status.contains("transaction 1: apply sm_120"), "{status}");
    // Without the flag, the pointer the apply recorded leads to the same ledger.
    let default_status = stdout(&command("status", &root, &[]));
    assert!(
        default_status.contains("transaction 1: apply sm_120")
            && default_status.contains(ledger_arg),
        "{default_status}"
    );
    assert_eq!(
        command("revert", &root, &["--ledger", ledger_arg])
            .status
            .code(),
        Some(0)
    );
    assert_eq!(hash_tree(&root), before);
}

#[test]
fn status_json_has_one_shape_with_and_without_a_ledger() {
    let (_guard, root) = venv_copy("fusion");
    let keys = |out: std::process::Output| {
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let mut keys: Vec<String> = doc.as_object().unwrap().keys().cloned().collect();
        keys.sort();
        (keys, doc)
    };
    let (before, doc) = keys(command("status", &root, &["--format", "json"]));
    assert_eq!(doc["applied"].as_array().unwrap().len(), 0);
    assert_eq!(apply(&root, &[]).status.code(), Some(0));
    let (after, doc) = keys(command("status", &root, &["--format", "json"]));
    assert_eq!(before, after);
    assert_eq!(doc["applied"][0]["txn"], 1);
    assert_eq!(doc["applied"][0]["target"], "sm_120");
}

#[test]
fn a_git_lock_left_by_a_killed_ref_update_does_not_block_the_ledger() {
    let (_guard, root) = venv_copy("fusion");
    assert_eq!(
        apply(&root, &["--patch", "sglang-ar-fusion-communicator"])
            .status
            .code(),
        Some(0)
    );
    let stale = root.join(".gatefix/ledger.git/refs/heads/main.lock");
    std::fs::write(&stale, "0000000000000000000000000000000000000000\n").unwrap();
    let out = command("revert", &root, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!stale.exists());
}
