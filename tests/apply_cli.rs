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
    // pip's bytecode: a timestamp pyc of the installed source (PEP 552 header). Python
    // finds it stale once the source changes, so apply leaves it and revert finds it as
    // pip left it. An unchecked-hash pyc would be trusted for the patched source: removed.
    let pyc = |flags: u32, mtime: u32, size: u32| -> Vec<u8> {
        let mut bytes = b"\xa7\x0d\r\n".to_vec();
        for word in [flags, mtime, size] {
            bytes.extend_from_slice(&word.to_le_bytes());
        }
        bytes.extend_from_slice(b"code object");
        bytes
    };
    // Installed a while ago, as a real site was (a copy made this second would share the
    // second of the edit, and Python would trust the old bytecode for the new source).
    std::fs::File::options()
        .write(true)
        .open(&communicator)
        .unwrap()
        .set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000))
        .unwrap();
    let installed = std::fs::metadata(&communicator).unwrap();
    let stale = pycache.join("communicator.cpython-311.pyc");
    {
        use std::os::unix::fs::MetadataExt;
        std::fs::write(
            &stale,
            pyc(0, installed.mtime() as u32, installed.len() as u32),
        )
        .unwrap();
    }
    let unchecked = pycache.join("communicator.cpython-312.pyc");
    std::fs::write(&unchecked, pyc(0b01, 0, 0)).unwrap();
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
    assert!(stale.exists(), "bytecode Python finds stale stays");
    assert!(
        !unchecked.exists(),
        "bytecode Python would trust for the patched source is removed"
    );
    assert!(other.exists(), "other modules' bytecode stays");
    assert!(
        root.join(".gatefix/ledger.git/HEAD").is_file(),
        "ledger beside the venv"
    );

    let out = command("revert", &root, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let after = hash_tree(&root);
    let mut expected = before.clone();
    // The unchecked-hash bytecode is the one intended difference: pip's own is back.
    expected.remove(&format!(
        "{FUSION_SITE}/sglang/srt/layers/__pycache__/communicator.cpython-312.pyc"
    ));
    assert!(
        after.contains_key(&format!(
            "{FUSION_SITE}/sglang/srt/layers/__pycache__/communicator.cpython-311.pyc"
        )),
        "pip's bytecode survives apply and revert"
    );
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
    // The line is the one `audit` gives the gate (its condition starts at `if (`), not the
    // line of the edited operand below it.
    let audit = run(vec![
        "audit".into(),
        root.display().to_string(),
        "--format".into(),
        "json".into(),
        "--no-verdicts".into(),
    ]);
    let doc: serde_json::Value = serde_json::from_slice(&audit.stdout).unwrap();
    let lines: Vec<u64> = doc["gates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["file"] == COMMUNICATOR && g["text"].as_str().unwrap().contains("and fuse"))
        .map(|g| g["line"].as_u64().unwrap())
        .collect();
    assert_eq!(lines, [23], "{doc}");
    assert!(text.contains("the gate at sglang/srt/layers/communicator.py:23 needs JIT generator flashinfer.jit.comm:gen_trtllm_comm_module"), "{text}");
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
            good.replace("versions = \">=0.5.5, <0.5.8\"", "versions = \">=banana\""),
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

// ----- Fixes synthesized from the audit (testdata/venvs/synth: one gate per form) ---------

const FIXES: &str = "sglang/srt/layers/fixes.py";

fn synth_site(root: &Path) -> std::path::PathBuf {
    root.join(FUSION_SITE)
}

/// The audit of the synth fixture at the given targets.
fn audit_json(root: &Path, targets: &[&str]) -> serde_json::Value {
    let mut args = vec![
        "audit".to_string(),
        synth_site(root).display().to_string(),
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

/// The id of the one gate in `file` inside `function`.
fn gate_id(doc: &serde_json::Value, file: &str, function: &str) -> String {
    let ids: Vec<String> = doc["gates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["file"] == file && g["function"] == function)
        .map(|g| g["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids.len(), 1, "one gate in {file} {function}: {ids:?}");
    ids[0].clone()
}

/// The ready synthesized fixes of an apply's output (patch ids) and the gates with no fix.
fn synth_lines(text: &str) -> (Vec<String>, Vec<String>) {
    let ready = text
        .lines()
        .filter(|l| l.starts_with("gate-") && l.contains("[unsafe fix]"))
        .map(|l| l.split(' ').next().unwrap().to_string())
        .collect();
    let none = text
        .lines()
        .filter(|l| l.starts_with("gate ") && l.contains("no fix"))
        .map(str::to_string)
        .collect();
    (ready, none)
}

#[test]
fn synthesized_fixes_are_unsafe_and_need_a_selection() {
    let (_guard, root) = venv_copy("synth");
    let before = hash_tree(&root);
    let out = apply(&root, &["--all-opportunities"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("add --unsafe-fixes"),
        "{}",
        stderr(&out)
    );
    let out = apply(&root, &["--unsafe-fixes"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("needs a selection"),
        "{}",
        stderr(&out)
    );
    let out = apply(&root, &["--unsafe-fixes", "--gate", "ffffffffffff"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    // Without a selection nothing synthesized is offered: the curated patches are not for
    // this site, so there is nothing to do.
    let out = apply(&root, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(synth_lines(&stdout(&out)).0, Vec::<String>::new());
    assert_eq!(hash_tree(&root), before);
}

#[test]
fn every_synthesized_form_and_the_ones_without_a_fix() {
    let (_guard, root) = venv_copy("synth");
    let before = hash_tree(&root);
    let out = apply(
        &root,
        &[
            "--dry-run",
            "--unsafe-fixes",
            "--all-opportunities",
            "--close-traps",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let (ready, none) = synth_lines(&text);
    assert_eq!(ready.len(), 8, "{text}");
    // The semantic model also reports the cached flag's definition (`_is_sm90 = ...`, a store
    // to a name) as a gate of its own; its use is the edit that is offered. The helpers'
    // own definitions are judged by what their calls decide: `is_sm90_supported` is no
    // opportunity (one of its reads, `fixes.py:24`, is joined with another test, so its whole
    // path was not read); `is_blackwell_supported` is a trap whose one caller, `fixes.py:51`,
    // is closed in the same plan, so narrowing the helper moves no other gate.
    assert_eq!(none.len(), 2, "{text}");
    assert!(
        text.contains(
            "Close the capability-membership gate at sglang/srt/utils.py:29 for sm_120 (member 12 removed)"
        ),
        "{text}"
    );
    assert!(
        none[0]
            .contains("fixes.py:12 (cached-flag, open): no fix: every candidate edit was refused"),
        "{text}"
    );
    assert!(
        none[1].contains("fixes.py:58 (capability-compare, open): no fix: no synthesizable edit for a capability-compare")
            && none[1].contains("range compare"),
        "{text}"
    );
    for line in [
        "+from sglang.srt.utils import is_sm120_supported",
        "+    if is_sm90_supported() or is_sm120_supported():",
        "+    if not (is_sm90_supported() or is_sm100_supported() or is_sm120_supported()):",
        "+    if major in (9, 10, 12):",
        "+    if torch.cuda.get_device_capability() in ((10, 0), (12, 0)):",
        "+    if _is_sm90 or is_sm120_supported():",
        "+    if (is_blackwell_supported() and not is_sm120_supported()):",
        "+    if current_platform.is_device_capability_family(100) or current_platform.is_device_capability_family(120):",
    ] {
        assert!(text.contains(line), "missing {line}:\n{text}");
    }
    // Each fix says its class, gate, predicates and evidence.
    assert!(text.contains("before  major in {9, 10}"), "{text}");
    assert!(text.contains("after   major in {9, 10, 12}"), "{text}");
    assert!(
        text.contains("kernel  flashinfer/jit/comm.py:7 supported_major_versions=[9, 10, 12]"),
        "{text}"
    );
    assert!(
        text.contains("synthesized from gate 8cc81417b73d3404 (close)"),
        "{text}"
    );
    assert_eq!(hash_tree(&root), before, "a dry run writes nothing");
}

#[test]
fn synthesized_fixes_open_their_gates_in_a_fresh_audit_and_revert_byte_for_byte() {
    let (_guard, root) = venv_copy("synth");
    let before = hash_tree(&root);
    let targets = ["sm_90", "sm_100", "sm_103", "sm_120"];
    let audit_before = audit_json(&root, &targets);
    let out = apply(
        &root,
        &["--unsafe-fixes", "--all-opportunities", "--close-traps"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("applied as transaction 1"),
        "{}",
        stdout(&out)
    );
    assert!(
        stdout(&out).contains("next: run your smoke test"),
        "{}",
        stdout(&out)
    );
    let audit_after = audit_json(&root, &targets);
    assert_eq!(
        audit_after["warnings"],
        serde_json::json!([]),
        "every fix re-parses"
    );
    let verdict = |doc: &serde_json::Value, function: &str, target: &str| {
        doc["gates"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|g| g["function"] == function)
            .map(|g| g["verdict"][target].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    for function in [
        "helper_call",
        "raise_guard",
        "membership",
        "equality",
        "flag_use",
        "allreduce_backend",
    ] {
        assert_eq!(verdict(&audit_before, function, "sm_120"), ["opportunity"]);
        assert_eq!(
            verdict(&audit_after, function, "sm_120"),
            ["open"],
            "{function}"
        );
    }
    assert_eq!(verdict(&audit_before, "trap", "sm_120"), ["trap"]);
    assert_eq!(verdict(&audit_after, "trap", "sm_120"), ["wall"]);
    // Every gate's admission at the other targets is unchanged (gates in source order).
    let admissions = |doc: &serde_json::Value| {
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
                        .collect::<Vec<_>>(),
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(admissions(&audit_before), admissions(&audit_after));

    let status = common::gatefix_json([
        "status".to_string(),
        "--venv".into(),
        root.display().to_string(),
        "--format".into(),
        "json".into(),
    ]);
    let patches = status["applied"][0]["patches"].as_array().unwrap();
    assert_eq!(patches.len(), 8);
    assert!(patches.iter().all(|p| p["class"] == "unsafe"), "{status}");
    let human = stdout(&command("status", &root, &[]));
    assert!(human.contains("unsafe"), "{human}");

    let out = command("revert", &root, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(hash_tree(&root), before, "revert is byte-identical");
}

#[test]
fn gates_are_selected_by_id_and_refusals_say_why() {
    let (_guard, root) = venv_copy("synth");
    let before = hash_tree(&root);
    let doc = audit_json(&root, &["sm_120"]);
    let membership = gate_id(&doc, FIXES, "membership");
    let range = gate_id(&doc, FIXES, "range_compare");
    let trap = gate_id(&doc, FIXES, "trap");
    let open = gate_id(&doc, "flashinfer/jit/comm.py", "gen_trtllm_comm_module");

    let out = apply(
        &root,
        &["--dry-run", "--unsafe-fixes", "--gate", &membership[..10]],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let (ready, none) = synth_lines(&stdout(&out));
    assert_eq!(ready, [format!("gate-{}-open-sm_120", &membership[..12])]);
    assert!(none.is_empty());

    for (id, exit, why) in [
        (&range, 3, "a range compare"),
        (&trap, 3, "closing it needs --close-traps"),
        (&open, 3, "its verdict at sm_120 is open"),
    ] {
        let out = apply(&root, &["--dry-run", "--unsafe-fixes", "--gate", id]);
        assert_eq!(out.status.code(), Some(exit), "{}", stdout(&out));
        let (ready, none) = synth_lines(&stdout(&out));
        assert!(ready.is_empty(), "{ready:?}");
        assert_eq!(none.len(), 1, "{none:?}");
        assert!(none[0].contains(why), "{none:?}");
    }
    let out = apply(
        &root,
        &[
            "--dry-run",
            "--unsafe-fixes",
            "--close-traps",
            "--gate",
            &trap,
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert_eq!(synth_lines(&stdout(&out)).0.len(), 1);
    assert_eq!(hash_tree(&root), before);
}

#[test]
fn emitted_patches_apply_as_curated_ones_and_revert_byte_for_byte() {
    let (_guard, root) = venv_copy("synth");
    let before = hash_tree(&root);
    let emitted = tempfile::tempdir().unwrap();
    let doc = audit_json(&root, &["sm_120"]);
    let helper = gate_id(&doc, FIXES, "helper_call");
    let method = gate_id(&doc, "vllm/fusion.py", "allreduce_backend");
    let dir = emitted.path().display().to_string();
    let out = apply(
        &root,
        &[
            "--dry-run",
            "--unsafe-fixes",
            "--gate",
            &helper,
            "--gate",
            &method,
            "--emit-patches",
            &dir,
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(hash_tree(&root), before);
    let mut files: Vec<_> = std::fs::read_dir(emitted.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    files.sort();
    assert_eq!(files.len(), 2, "{files:?}");
    let text: String = files
        .iter()
        .map(|f| std::fs::read_to_string(emitted.path().join(f)).unwrap())
        .collect();
    assert!(text.contains("versions = \"==0.5.99\""), "{text}");
    assert!(text.contains("versions = \"==0.99.0\""), "{text}");
    assert!(text.contains("# predicate before: major == 10\n"), "{text}");
    assert!(
        text.contains("anchor = { function = \"allreduce_backend\", gate = \"current_platform.is_device_capability_family(100)\" }"),
        "{text}"
    );
    let out = run(["rules", "check", "--patches", &dir]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    let out = apply(&root, &["--patches", &dir]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("[safe fix]"), "{text}");
    assert!(!text.contains("[unsafe fix]"), "{text}");
    let patched = std::fs::read_to_string(synth_site(&root).join(FIXES)).unwrap();
    assert!(patched.contains("if is_sm90_supported() or is_sm120_supported():"));
    let again = apply(&root, &["--patches", &dir]);
    assert!(
        stdout(&again).contains("already applied"),
        "{}",
        stdout(&again)
    );
    let out = command("revert", &root, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(hash_tree(&root), before);
}

/// gatefix runs without transparent huge pages (`gatefix::process`), and the user's
/// `--verify` command runs with them as it would outside gatefix. Read from
/// `/proc/self/status` of a child of each: a fake `nvidia-smi` that `explain` asks for the
/// target, and the verify command itself. Linux kernels from 6.x say `THP_enabled`; older
/// ones do not, and the test has nothing to read there.
#[test]
fn gatefix_runs_without_huge_pages_and_the_verify_command_with_them() {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    if !status.contains("THP_enabled:") {
        eprintln!("no THP_enabled in /proc/self/status: nothing to check on this kernel");
        return;
    }
    let bin = tempfile::tempdir().unwrap();
    let seen = bin.path().join("seen");
    let fake = bin.path().join("nvidia-smi");
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\ngrep THP_enabled /proc/self/status > '{}'\necho 12.0\n",
            seen.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let (_guard, root) = venv_copy("synth");
    let mut args = venv_args(&root);
    args.splice(0..0, ["explain".to_string()]);
    args.push("RuntimeError: no message any site has".into());
    let _ = common::fixture::run_env(&args, &[("PATH", &path)]);
    let inherited = std::fs::read_to_string(&seen).expect("explain ran nvidia-smi");
    assert_eq!(
        inherited.split_whitespace().last(),
        Some("0"),
        "{inherited}"
    );

    let doc = audit_json(&root, &["sm_120"]);
    let helper = gate_id(&doc, FIXES, "helper_call");
    let check = "grep -q 'THP_enabled:[[:space:]]*1' /proc/self/status";
    let out = apply(
        &root,
        &["--unsafe-fixes", "--gate", &helper, "--verify", check],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("passed"), "{}", stdout(&out));
}

#[test]
fn verify_passing_keeps_the_transaction() {
    let (_guard, root) = venv_copy("synth");
    let doc = audit_json(&root, &["sm_120"]);
    let helper = gate_id(&doc, FIXES, "helper_call");
    let out = apply(
        &root,
        &["--unsafe-fixes", "--gate", &helper, "--verify", "exit 0"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("verify: `exit 0` passed"),
        "{}",
        stdout(&out)
    );
    let status = stdout(&command("status", &root, &[]));
    assert!(status.contains("transaction 1"), "{status}");
}

#[test]
fn an_empty_verify_command_is_refused_before_anything_is_written() {
    let (_guard, root) = venv_copy("synth");
    let before = hash_tree(&root);
    let doc = audit_json(&root, &["sm_120"]);
    let helper = gate_id(&doc, FIXES, "helper_call");
    for empty in ["", "   "] {
        let out = apply(
            &root,
            &["--unsafe-fixes", "--gate", &helper, "--verify", empty],
        );
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(
            stderr(&out).contains("--verify needs a command"),
            "{}",
            stderr(&out)
        );
        assert_eq!(hash_tree(&root), before);
    }
}

#[test]
fn verify_failing_crashing_or_timing_out_reverts_at_once() {
    for (command_text, timeout, what) in [
        (
            "echo smoke test output; echo boom >&2; exit 7",
            "60",
            "exited with status 7",
        ),
        ("kill -SEGV $$", "60", "killed by signal 11"),
        ("sleep 30", "1", "timed out after 1 s"),
        // A process started outside the command's group holds its output open: neither the
        // exit nor the timeout waits for it.
        (
            "setsid sleep 100 & sleep 1; exit 1",
            "60",
            "exited with status 1",
        ),
        ("setsid sleep 100 & sleep 30", "3", "timed out after 3 s"),
    ] {
        let (_guard, root) = venv_copy("synth");
        let before = hash_tree(&root);
        let doc = audit_json(&root, &["sm_120"]);
        let helper = gate_id(&doc, FIXES, "helper_call");
        let started = std::time::Instant::now();
        let out = apply(
            &root,
            &[
                "--unsafe-fixes",
                "--gate",
                &helper,
                "--verify",
                command_text,
                "--verify-timeout",
                timeout,
            ],
        );
        assert!(started.elapsed().as_secs() < 20, "the timeout holds");
        assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
        assert!(stderr(&out).contains(what), "{}", stderr(&out));
        assert!(
            stdout(&out).contains("verify failed: transaction 1 reverted as transaction 2"),
            "{}",
            stdout(&out)
        );
        assert_eq!(
            hash_tree(&root),
            before,
            "{command_text}: byte-identical after the revert"
        );
        let status = stdout(&command("status", &root, &[]));
        assert!(status.contains("no transaction in effect"), "{status}");
        let log = stdout(&command("log", &root, &[]));
        assert!(log.contains("verify failed, revert 1"), "{log}");
        if command_text.contains("boom") {
            let ledger = root.join(".gatefix/ledger.git");
            let message = std::process::Command::new("git")
                .arg("--git-dir")
                .arg(&ledger)
                .args(["log", "-1", "--format=%B", "main"])
                .output()
                .unwrap();
            let message = String::from_utf8_lossy(&message.stdout);
            assert!(message.contains("Gatefix-Verify-Failed: 1"), "{message}");
            assert!(message.contains("boom"), "{message}");
            assert!(message.contains("smoke test output"), "{message}");
        }
    }
}

#[test]
fn status_names_patches_undone_by_a_reinstall_and_apply_reapplies_them() {
    let (_guard, root) = venv_copy("fusion");
    let original = std::fs::read(site_file(&root, COMMUNICATOR)).unwrap();
    assert_eq!(apply(&root, &[]).status.code(), Some(0));
    // pip puts the file back as the wheel has it.
    std::fs::write(site_file(&root, COMMUNICATOR), &original).unwrap();
    let out = command("status", &root, &[]);
    let text = stdout(&out);
    assert!(
        text.contains("UNDONE BY A REINSTALL: sglang/srt/layers/communicator.py (transaction 1) is back at its original bytes; `gatefix apply` re-applies sglang-ar-fusion-communicator\n"),
        "{text}"
    );
    assert!(!text.contains("DRIFT"), "{text}");
    let json = common::gatefix_json([
        "status".to_string(),
        "--venv".into(),
        root.display().to_string(),
        "--format".into(),
        "json".into(),
    ]);
    assert_eq!(
        json["undone_by_reinstall"][0]["patches"],
        serde_json::json!(["sglang-ar-fusion-communicator"])
    );
    let out = apply(&root, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("applied as transaction 2: 1 file(s) changed"),
        "{}",
        stdout(&out)
    );
    let text = stdout(&command("status", &root, &[]));
    assert!(!text.contains("UNDONE"), "{text}");
    assert!(
        std::fs::read_to_string(site_file(&root, COMMUNICATOR))
            .unwrap()
            .contains("or is_sm120_supported())")
    );
    let out = command("revert", &root, &["--all"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        std::fs::read(site_file(&root, COMMUNICATOR)).unwrap(),
        original
    );
}

/// The block of `patch` in a plan: its header line and the indented lines under it.
fn plan_block<'t>(text: &'t str, patch: &str) -> Vec<&'t str> {
    let mut lines = text
        .lines()
        .skip_while(|l| !l.starts_with(&format!("{patch} ")));
    let header = lines.next().into_iter();
    header
        .chain(lines.take_while(|l| l.starts_with("  ")))
        .collect()
}

#[test]
fn a_switch_that_needs_no_edit_is_named_where_the_site_still_reads_it() {
    let (_guard, root) = venv_copy("fusion");
    let out = apply(&root, &["--dry-run"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    // The auto-enable only sets the flag: the server argument does the same with no edit.
    let auto = plan_block(&text, "sglang-ar-fusion-auto-enable-deepseek");
    assert!(
        auto.iter().any(|l| l.starts_with(
            "  instead --enable-flashinfer-allreduce-fusion needs no edit of sglang/srt/server_args.py (read at sglang/srt/server_args.py:"
        )),
        "{text}"
    );
    // The fusion check in the communicator has no switch.
    let communicator = plan_block(&text, "sglang-ar-fusion-communicator");
    assert!(!communicator.is_empty(), "{text}");
    assert!(
        !communicator.iter().any(|l| l.starts_with("  instead")),
        "{text}"
    );
}
