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

// ---- The human report, as snapshots (insta; `cargo insta review` or INSTA_UPDATE=always
// to accept a deliberate change).

/// The human report of `site` with the given options, colour off unless the env says.
fn human(site: &str, extra: &[&str], env: &[(&str, &str)]) -> String {
    let mut args = vec!["audit", site, "--fail-on", "none"];
    args.extend_from_slice(extra);
    let mut all_env = vec![("COLUMNS", ""), ("NO_COLOR", ""), ("CLICOLOR_FORCE", "")];
    all_env.extend_from_slice(env);
    let out = run_env(&args, &all_env);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    stdout(&out)
}

fn max_width(text: &str) -> usize {
    text.lines().map(|l| l.chars().count()).max().unwrap_or(0)
}

#[test]
fn human_report_summary_first_each_finding_once_then_next() {
    let text = human(
        SITE,
        &["-t", "sm_120", "-t", "sm_121", "--width", "100"],
        &[],
    );
    let summary = text.find("sm_120: 1 trap").expect("summary");
    let traps = text.find("TRAPS (1)").expect("traps");
    let next = text.find("\nnext: ").expect("next step");
    assert!(summary < traps && traps < next, "{text}");
    // Each finding once, although it holds at two targets: one header line per gate.
    let backends_23 = "sglang/srt/layers/backends.py:23 in resolve_backend";
    assert_eq!(text.matches(backends_23).count(), 1, "{text}");
    assert!(text.contains("at      sm_120, sm_121"), "{text}");
    // One evidence chain: the trap's kernel line appears once.
    assert_eq!(
        text.matches("gen_trtllm_mnnvl_comm_module: MISSING at")
            .count(),
        3,
        "one per trap/wall gate whose chain ends there: {text}"
    );
    // Only findings by default: no per-gate listing, no unverified gate.
    assert!(
        !text.contains("EVERY GATE") && !text.contains("verdict: "),
        "{text}"
    );
    assert!(max_width(&text) <= 100, "{text}");
    insta::assert_snapshot!("verdicts_default_100", text);
}

#[test]
fn human_report_show_all_lists_every_gate() {
    let text = human(SITE, &["--show", "all", "--width", "120"], &[]);
    let every = text.find("EVERY GATE").expect("the full listing");
    assert!(text.find("TRAPS (1)").unwrap() < every, "{text}");
    assert_eq!(text.matches("      verdict: sm_120 ").count(), 13, "{text}");
    assert!(max_width(&text) <= 120, "{text}");
    insta::assert_snapshot!("verdicts_show_all_120", text);
}

#[test]
fn human_report_folds_to_80_and_120_columns() {
    for width in [80, 120] {
        let text = human(
            "testdata/sites/mixed",
            &["--show", "all"],
            &[("COLUMNS", &width.to_string())],
        );
        assert!(max_width(&text) <= width, "{width}: {text}");
        assert!(text.contains('…'), "long gate text is elided at {width}");
        insta::assert_snapshot!(format!("mixed_show_all_{width}"), text);
    }
    // JSON keeps the full text that the human report elides.
    let out = run([
        "audit",
        "testdata/sites/mixed",
        "--format",
        "json",
        "--fail-on",
        "none",
    ]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let longest = doc["gates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["text"].as_str().unwrap().chars().count())
        .max()
        .unwrap();
    assert!(longest > 80, "a gate longer than a line: {longest}");
}

#[test]
fn human_report_names_the_patch_and_the_apply_command() {
    let text = human("testdata/venvs/fusion", &["--width", "100"], &[]);
    assert!(
        text.contains(
            "fix     patch sglang-ar-fusion-communicator: gatefix apply sm_120 --dry-run"
        ),
        "{text}"
    );
    assert!(
        text.contains("next: gatefix apply sm_120 --dry-run"),
        "{text}"
    );
    insta::assert_snapshot!("fusion_default_100", text);
}

#[test]
fn human_report_puts_the_cuda_hint_on_top_when_cuda_is_unknown() {
    let temp = tempfile::tempdir().unwrap();
    let site = temp.path().join("site");
    common::fixture::copy_tree(Path::new(SITE), &site);
    std::fs::remove_dir_all(site.join("torch")).unwrap();
    let text = human(site.to_str().unwrap(), &["--width", "100"], &[]);
    let text = text.replace(site.to_str().unwrap(), "<site>");
    let hint = text.find("hint: ").expect("the --cuda hint");
    assert!(hint < text.find("sm_120: ").unwrap(), "on top: {text}");
    assert!(text.contains("--cuda 12.8"), "{text}");
    insta::assert_snapshot!("verdicts_cuda_unknown_100", text);
}

#[test]
fn colour_follows_no_color_clicolor_force_and_color() {
    let plain = human(SITE, &["--width", "100"], &[]);
    assert!(!plain.contains('\x1b'), "no colour on a pipe");
    let forced = human(SITE, &["--width", "100"], &[("CLICOLOR_FORCE", "1")]);
    assert!(forced.contains("\x1b[1;31mTRAPS (1)"), "{forced}");
    let no_color = human(
        SITE,
        &["--width", "100"],
        &[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")],
    );
    assert_eq!(no_color, plain, "NO_COLOR wins");
    let dumb = human(
        SITE,
        &["--width", "100", "--color", "auto"],
        &[("TERM", "dumb")],
    );
    assert_eq!(dumb, plain);
    let always = human(
        SITE,
        &["--width", "100", "--color", "always"],
        &[("NO_COLOR", "1")],
    );
    assert!(always.contains('\x1b'), "--color always overrides NO_COLOR");
    let never = human(
        SITE,
        &["--width", "100", "--color", "never"],
        &[("CLICOLOR_FORCE", "1")],
    );
    assert_eq!(never, plain);
    insta::assert_snapshot!("verdicts_no_color_100", no_color);
}
