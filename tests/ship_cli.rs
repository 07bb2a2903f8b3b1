//! What a new user meets first: inputs that say what they mean (each check with its exit code
//! and message), the site and ledger named on the first line, and `status` exiting 1 when
//! something needs doing.

mod common;

use std::path::Path;

use common::fixture::{FUSION_SITE, run, run_env, stderr, stdout, venv_args, venv_copy};

const SITE: &str = "testdata/sites/verdicts";

fn audit(extra: &[&str]) -> std::process::Output {
    let mut args = vec!["audit", SITE, "--fail-on", "none"];
    args.extend_from_slice(extra);
    run(args)
}

#[test]
fn a_bare_major_is_an_error_suggesting_both_spellings() {
    for command in [
        vec!["audit", SITE, "--target", "12"],
        vec!["kernels", SITE, "--target", "12"],
        vec!["apply", "12", "--site", SITE, "--dry-run"],
    ] {
        let out = run(&command);
        assert_eq!(out.status.code(), Some(2), "{command:?}");
        let err = stderr(&out);
        assert!(
            err.contains("ambiguous target `12`") && err.contains("12.0") && err.contains("sm_120"),
            "{command:?}: {err}"
        );
    }
}

#[test]
fn an_unknown_arch_is_an_error_listing_the_known_ones() {
    for command in [
        vec!["audit", SITE, "--target", "sm_999"],
        vec!["kernels", SITE, "--target", "sm_999"],
        vec!["apply", "sm_999", "--site", SITE, "--dry-run"],
    ] {
        let out = run(&command);
        assert_eq!(out.status.code(), Some(2), "{command:?}");
        let err = stderr(&out);
        assert!(
            err.contains("unknown architecture `sm_999`")
                && err.contains("sm_90, sm_100")
                && err.contains("--allow-unknown-arch"),
            "{command:?}: {err}"
        );
    }
}

#[test]
fn allow_unknown_arch_takes_new_hardware() {
    let out = audit(&[
        "--target",
        "sm_999",
        "--allow-unknown-arch",
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["targets"], serde_json::json!(["sm_999"]));
}

#[test]
fn an_empty_or_missing_rules_or_patches_folder_is_an_error() {
    let empty = tempfile::tempdir().unwrap();
    let empty = empty.path().to_str().unwrap().to_string();
    let missing = format!("{empty}/missing");
    for (command, folder) in [
        (vec!["audit", SITE, "--rules", &empty], &empty),
        (vec!["audit", SITE, "--rules", &missing], &missing),
        (vec!["rules", "check", "--patches", &empty], &empty),
        (
            vec![
                "apply",
                "sm_120",
                "--site",
                SITE,
                "--dry-run",
                "--patches",
                &empty,
            ],
            &empty,
        ),
    ] {
        let out = run(&command);
        assert_eq!(out.status.code(), Some(2), "{command:?}");
        let err = stderr(&out);
        assert!(err.contains(folder.as_str()), "{command:?}: {err}");
        let says_why = err.contains("no *.toml files") || err.contains("cannot read");
        assert!(says_why, "{command:?}: {err}");
    }
}

#[test]
fn apply_revert_and_status_name_their_site_and_ledger_first() {
    let (_guard, root) = venv_copy("fusion");
    let site = root.join(FUSION_SITE);
    let ledger = root.join(".gatefix/ledger.git");
    let expected = format!(
        "gatefix: site {}, ledger {}",
        site.display(),
        ledger.display()
    );
    for verb in [
        vec!["apply", "sm_120", "--dry-run"],
        vec!["status"],
        vec!["revert"],
    ] {
        let mut args: Vec<String> = verb.iter().map(|s| s.to_string()).collect();
        args.extend(venv_args(&root));
        let out = run(&args);
        let err = stderr(&out);
        assert_eq!(
            err.lines().next(),
            Some(expected.as_str()),
            "{verb:?}: {err}"
        );
    }
}

#[test]
fn the_default_site_is_named_too() {
    // No site option: $VIRTUAL_ENV is the default, and the line says so.
    let (_guard, root) = venv_copy("fusion");
    let out = run_env(["status"], &[("VIRTUAL_ENV", root.to_str().unwrap())]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let first = stderr(&out).lines().next().unwrap_or_default().to_string();
    assert!(
        first.starts_with("gatefix: site ")
            && first.contains(&root.join(FUSION_SITE).display().to_string()),
        "{first}"
    );
}

fn status(root: &Path) -> std::process::Output {
    let mut args = vec!["status".to_string()];
    args.extend(venv_args(root));
    run(args)
}

#[test]
fn status_exits_1_when_files_drifted() {
    let (_guard, root) = venv_copy("fusion");
    assert_eq!(status(&root).status.code(), Some(0));
    let mut args = vec!["apply".to_string(), "sm_120".to_string()];
    args.extend(venv_args(&root));
    let out = run(&args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(status(&root).status.code(), Some(0), "applied, no drift");
    let file = root
        .join(FUSION_SITE)
        .join("sglang/srt/layers/communicator.py");
    let mut text = std::fs::read_to_string(&file).unwrap();
    text.push_str("# edited by hand\n");
    std::fs::write(&file, text).unwrap();
    let out = status(&root);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(stdout(&out).contains("DRIFT: sglang/srt/layers/communicator.py"));
}

#[test]
fn status_exits_1_when_a_transaction_was_interrupted() {
    // Kill an apply at successive fault points until one leaves an interrupted transaction.
    for at in 1..=40 {
        let (_guard, root) = venv_copy("fusion");
        let mut args = vec!["apply".to_string(), "sm_120".to_string()];
        args.extend(venv_args(&root));
        run_env(&args, &[("GATEFIX_FAULT_AT", &at.to_string())]);
        let out = status(&root);
        if stdout(&out).contains("INTERRUPTED") {
            assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
            return;
        }
    }
    panic!("no fault point left an interrupted transaction");
}
