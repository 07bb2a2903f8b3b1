//! The crash test: gatefix is killed with SIGKILL (fault injection, `GATEFIX_FAULT_AT=N`) at
//! every fault point of an apply, of a revert, and of the recovery of an interrupted apply.
//! After each kill, no file of the site may be anything but its old or its new bytes, the next
//! gatefix command must notice an interrupted transaction, and `gatefix revert` must bring the
//! site back byte for byte.

mod common;

use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;

use common::fixture::{hash_tree, run_env, stderr, stdout, venv_args, venv_copy};

fn gatefix(verb: &[&str], root: &Path, env: &[(&str, &str)]) -> std::process::Output {
    let mut args: Vec<String> = verb.iter().map(|s| s.to_string()).collect();
    args.extend(venv_args(root));
    run_env(args, env)
}

fn apply(root: &Path, env: &[(&str, &str)]) -> std::process::Output {
    gatefix(&["apply", "sm_120"], root, env)
}

/// How many fault points a command passes when it is not killed.
fn points(output: &std::process::Output) -> usize {
    let err = stderr(output);
    err.lines()
        .find_map(|l| l.strip_prefix("gatefix: fault points reached: "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no fault count in: {err}"))
}

fn killed(output: &std::process::Output) -> bool {
    output.status.signal() == Some(libc_sigkill())
}

fn libc_sigkill() -> i32 {
    9
}

/// Every file is either its original bytes or its fully patched bytes; temp files may exist.
fn assert_whole_files(
    state: &BTreeMap<String, String>,
    original: &BTreeMap<String, String>,
    patched: &BTreeMap<String, String>,
    at: usize,
) {
    for (file, hash) in state {
        if file.contains(".gatefix-") && file.ends_with(".tmp") {
            continue;
        }
        assert!(
            original.get(file) == Some(hash) || patched.get(file) == Some(hash),
            "kill at point {at}: {file} is neither its old nor its new bytes"
        );
    }
    for file in original.keys() {
        assert!(
            state.contains_key(file),
            "kill at point {at}: {file} is gone"
        );
    }
}

fn revert_to_original(root: &Path, original: &BTreeMap<String, String>, context: &str) {
    let out = gatefix(&["revert"], root, &[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{context}: revert failed: {}{}",
        stdout(&out),
        stderr(&out)
    );
    assert_eq!(
        &hash_tree(root),
        original,
        "{context}: not restored byte for byte"
    );
    let status = stdout(&gatefix(&["status"], root, &[]));
    assert!(!status.contains("INTERRUPTED"), "{context}: {status}");
    assert!(
        !status.contains("leftover temp file"),
        "{context}: {status}"
    );
}

#[test]
fn every_kill_point_is_recoverable() {
    let (_g, root) = venv_copy("fusion");
    let original = hash_tree(&root);
    let out = apply(&root, &[("GATEFIX_FAULT_COUNT", "1")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let apply_points = points(&out);
    let patched = hash_tree(&root);
    assert_ne!(patched, original);
    let out = gatefix(&["revert"], &root, &[("GATEFIX_FAULT_COUNT", "1")]);
    let revert_points = points(&out);
    assert_eq!(hash_tree(&root), original);
    assert!(
        apply_points + revert_points >= 30,
        "only {apply_points} + {revert_points} fault points"
    );

    let mut interrupted_seen = 0;
    for at in 1..=apply_points {
        let (_g, root) = venv_copy("fusion");
        let out = apply(&root, &[("GATEFIX_FAULT_AT", &at.to_string())]);
        assert!(
            killed(&out),
            "apply point {at} did not kill: {}",
            stderr(&out)
        );
        assert_whole_files(&hash_tree(&root), &original, &patched, at);
        let status = stdout(&gatefix(&["status"], &root, &[]));
        if status.contains("INTERRUPTED") {
            interrupted_seen += 1;
            let again = apply(&root, &[]);
            assert_eq!(
                again.status.code(),
                Some(3),
                "apply must refuse over an interrupted transaction"
            );
            assert!(stderr(&again).contains("was interrupted; run `gatefix revert`"));
            let audit = common::fixture::run(["audit".to_string(), root.display().to_string()]);
            assert!(stderr(&audit).contains("was interrupted; `gatefix revert` restores it"));
        }
        revert_to_original(&root, &original, &format!("apply killed at {at}"));
    }
    assert!(
        interrupted_seen >= 10,
        "only {interrupted_seen} points left an interrupted transaction"
    );

    for at in 1..=revert_points {
        let (_g, root) = venv_copy("fusion");
        assert_eq!(apply(&root, &[]).status.code(), Some(0));
        let out = gatefix(&["revert"], &root, &[("GATEFIX_FAULT_AT", &at.to_string())]);
        assert!(killed(&out), "revert point {at} did not kill");
        assert_whole_files(&hash_tree(&root), &original, &patched, at);
        revert_to_original(&root, &original, &format!("revert killed at {at}"));
    }
}

#[test]
fn recovery_itself_can_be_killed_and_resumed() {
    let (_g, root) = venv_copy("fusion");
    let original = hash_tree(&root);
    // Killed just after the first file is renamed into place: a half-done apply.
    let rename_point = (1..200)
        .find(|at| {
            let (_g2, probe) = venv_copy("fusion");
            let out = apply(&probe, &[("GATEFIX_FAULT_AT", &at.to_string())]);
            stderr(&out).contains("(file renamed into place)")
        })
        .expect("apply has a rename point");
    let half_done = |root: &Path| {
        let out = apply(root, &[("GATEFIX_FAULT_AT", &rename_point.to_string())]);
        assert!(killed(&out));
    };
    half_done(&root);
    let out = gatefix(&["revert"], &root, &[("GATEFIX_FAULT_COUNT", "1")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("had been interrupted; undone"),
        "{}",
        stdout(&out)
    );
    let recovery_points = points(&out);
    assert_eq!(hash_tree(&root), original);

    for at in 1..=recovery_points {
        let (_g, root) = venv_copy("fusion");
        half_done(&root);
        let out = gatefix(&["revert"], &root, &[("GATEFIX_FAULT_AT", &at.to_string())]);
        assert!(killed(&out), "recovery point {at} did not kill");
        revert_to_original(&root, &original, &format!("recovery killed at {at}"));
    }
}

/// The id of the synth fixture's helper-call gate (one gate per synthesized form).
fn synth_helper_gate(root: &Path) -> String {
    let doc = common::gatefix_json([
        "audit".to_string(),
        root.join(common::fixture::FUSION_SITE)
            .display()
            .to_string(),
        "--format".into(),
        "json".into(),
        "--fail-on".into(),
        "none".into(),
    ]);
    doc["gates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["function"] == "helper_call")
        .map(|g| g["id"].as_str().unwrap().to_string())
        .expect("the fixture's helper_call gate")
}

/// A synthesized fix whose `--verify` fails: apply, the verify run and the automatic revert
/// are killed at every fault point; the site is always whole and `gatefix revert` always
/// brings it back byte for byte.
#[test]
fn synthesized_edits_and_the_verify_revert_are_recoverable_at_every_kill_point() {
    let (_g, root) = venv_copy("synth");
    let original = hash_tree(&root);
    let gate = synth_helper_gate(&root);
    let verb = ["apply", "sm_120", "--unsafe-fixes", "--gate", gate.as_str()];
    let out = gatefix(&verb, &root, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let patched = hash_tree(&root);
    assert_ne!(patched, original);
    revert_to_original(&root, &original, "plain synthesized apply");

    let mut failing = verb.to_vec();
    failing.extend(["--verify", "echo no good; exit 1"]);
    let out = gatefix(&failing, &root, &[("GATEFIX_FAULT_COUNT", "1")]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert_eq!(
        hash_tree(&root),
        original,
        "verify failed: reverted at once"
    );
    let total = points(&out);
    assert!(total >= 20, "only {total} fault points");
    for at in 1..=total {
        let (_g, root) = venv_copy("synth");
        let out = gatefix(&failing, &root, &[("GATEFIX_FAULT_AT", &at.to_string())]);
        assert!(killed(&out), "point {at} did not kill: {}", stderr(&out));
        assert_whole_files(&hash_tree(&root), &original, &patched, at);
        revert_to_original(&root, &original, &format!("verify-revert killed at {at}"));
    }
}

const COMMUNICATOR: &str = "lib/python3.11/site-packages/sglang/srt/layers/communicator.py";
const SERVER_ARGS: &str = "lib/python3.11/site-packages/sglang/srt/server_args.py";

/// Every file is one of the allowed versions of itself; temp files may exist.
fn assert_one_of(
    state: &BTreeMap<String, String>,
    allowed: &[&BTreeMap<String, String>],
    context: &str,
) {
    for (file, hash) in state {
        if file.contains(".gatefix-") && file.ends_with(".tmp") {
            continue;
        }
        assert!(
            allowed.iter().any(|a| a.get(file) == Some(hash)),
            "{context}: {file} is none of its whole versions"
        );
    }
}

/// Puts the files back at the bytes pip installed, as `pip install --force-reinstall` would.
fn reinstall(root: &Path, pristine: &Path) {
    for file in [COMMUNICATOR, SERVER_ARGS] {
        std::fs::copy(pristine.join(file), root.join(file)).unwrap();
    }
}

/// More kill points: a re-apply after a reinstall (the ledger still holds transaction 1),
/// a `revert --force` over a file someone changed, and a `revert --all` of two stacked
/// transactions. With the 49 points of `every_kill_point_is_recoverable` and the recovery's,
/// the crash test kills gatefix at more than 100 points.
#[test]
fn reapply_forced_revert_and_revert_all_kill_points() {
    let (_p, pristine) = venv_copy("fusion");
    let original = hash_tree(&pristine);
    let fresh = || venv_copy("fusion");

    // Counts, and the states each scenario may leave.
    let (_g, root) = fresh();
    let out = apply(&root, &[("GATEFIX_FAULT_COUNT", "1")]);
    let apply_points = points(&out);
    let patched = hash_tree(&root);
    let out = gatefix(&["revert"], &root, &[("GATEFIX_FAULT_COUNT", "1")]);
    let revert_points = points(&out);

    let reapplied_setup = |root: &Path| {
        assert_eq!(apply(root, &[]).status.code(), Some(0));
        reinstall(root, &pristine);
    };
    let (_g, root) = fresh();
    reapplied_setup(&root);
    let out = apply(&root, &[("GATEFIX_FAULT_COUNT", "1")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let reapply_points = points(&out);

    let drifted_setup = |root: &Path| {
        assert_eq!(apply(root, &[]).status.code(), Some(0));
        let path = root.join(SERVER_ARGS);
        let mut text = std::fs::read(&path).unwrap();
        text.extend_from_slice(b"# a hand edit after gatefix\n");
        std::fs::write(path, text).unwrap();
    };
    let (_g, root) = fresh();
    drifted_setup(&root);
    let drifted = hash_tree(&root);
    let out = gatefix(
        &["revert", "--force"],
        &root,
        &[("GATEFIX_FAULT_COUNT", "1")],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let forced_points = points(&out);

    let stacked_setup = |root: &Path| {
        for id in [
            "sglang-ar-fusion-communicator",
            "sglang-ar-fusion-auto-enable-deepseek",
        ] {
            let out = gatefix(&["apply", "sm_120", "--patch", id], root, &[]);
            assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        }
    };
    let (_g, root) = fresh();
    stacked_setup(&root);
    let half = hash_tree(&root); // both applied
    let out = gatefix(&["revert", "--all"], &root, &[("GATEFIX_FAULT_COUNT", "1")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let all_points = points(&out);
    assert_eq!(hash_tree(&root), original);

    let total = apply_points + revert_points + reapply_points + forced_points + all_points;
    eprintln!(
        "kill points: apply {apply_points}, revert {revert_points}, re-apply {reapply_points}, \
         revert --force {forced_points}, revert --all {all_points}: {total} (+ recovery)"
    );
    assert!(total >= 100, "only {total} kill points");

    for at in 1..=reapply_points {
        let (_g, root) = fresh();
        reapplied_setup(&root);
        let out = apply(&root, &[("GATEFIX_FAULT_AT", &at.to_string())]);
        assert!(killed(&out), "re-apply point {at} did not kill");
        let context = format!("re-apply killed at {at}");
        assert_one_of(&hash_tree(&root), &[&original, &patched], &context);
        let out = gatefix(&["revert"], &root, &[]);
        assert_eq!(out.status.code(), Some(0), "{context}: {}", stderr(&out));
        assert_eq!(hash_tree(&root), original, "{context}");
    }
    for at in 1..=forced_points {
        let (_g, root) = fresh();
        drifted_setup(&root);
        let out = gatefix(
            &["revert", "--force"],
            &root,
            &[("GATEFIX_FAULT_AT", &at.to_string())],
        );
        assert!(killed(&out), "revert --force point {at} did not kill");
        let context = format!("revert --force killed at {at}");
        assert_one_of(
            &hash_tree(&root),
            &[&original, &patched, &drifted],
            &context,
        );
        let out = gatefix(&["revert", "--force"], &root, &[]);
        assert_eq!(out.status.code(), Some(0), "{context}: {}", stderr(&out));
        assert_eq!(hash_tree(&root), original, "{context}");
    }
    for at in 1..=all_points {
        let (_g, root) = fresh();
        stacked_setup(&root);
        let out = gatefix(
            &["revert", "--all"],
            &root,
            &[("GATEFIX_FAULT_AT", &at.to_string())],
        );
        assert!(killed(&out), "revert --all point {at} did not kill");
        let context = format!("revert --all killed at {at}");
        assert_one_of(&hash_tree(&root), &[&original, &half, &patched], &context);
        // A killed revert is finished by the next one; then what is left is reverted.
        for _ in 0..2 {
            let out = gatefix(&["revert", "--all"], &root, &[]);
            assert_eq!(out.status.code(), Some(0), "{context}: {}", stderr(&out));
        }
        assert_eq!(hash_tree(&root), original, "{context}");
        let status = stdout(&gatefix(&["status"], &root, &[]));
        assert!(
            status.contains("no transaction in effect"),
            "{context}: {status}"
        );
    }
}
