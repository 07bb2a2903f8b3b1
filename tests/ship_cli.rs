//! What a new user meets first: inputs that say what they mean (each check with its exit code
//! and message), the site and ledger named on the first line, and `status` exiting 1 when
//! something needs doing.

mod common;

use std::path::Path;

use common::fixture::{
    FUSION_SITE, copy_tree, hash_tree, run, run_env, stderr, stdout, venv_args, venv_copy,
};

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
fn a_folder_without_python_files_is_an_input_error() {
    let empty = tempfile::tempdir().unwrap();
    let out = run(["audit", empty.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("no Python file under") && err.contains("site-packages"),
        "{err}"
    );
    assert!(stdout(&out).is_empty());
}

#[test]
fn allow_unknown_arch_is_offered_only_where_a_target_is_taken() {
    for command in ["audit", "kernels", "apply", "explain", "show"] {
        let help = stdout(&run([command, "--help"]));
        assert!(help.contains("--allow-unknown-arch"), "{command}: {help}");
    }
    for command in ["log", "status", "revert", "completions", "rules"] {
        let help = stdout(&run([command, "--help"]));
        assert!(!help.contains("--allow-unknown-arch"), "{command}: {help}");
    }
    let out = run(["log", "--allow-unknown-arch"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
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
        &[
            "-t", "sm_120", "-t", "sm_121", "--width", "100", "--show", "findings",
        ],
        &[],
    );
    let summary = text.find("sm_120: 2 traps").expect("summary");
    let traps = text.find("TRAPS (2)").expect("traps");
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
        5,
        "one per trap/wall gate whose chain ends there: {text}"
    );
    // Only findings by default: no per-gate listing, no unverified gate.
    assert!(
        !text.contains("EVERY GATE") && !text.contains("verdict: "),
        "{text}"
    );
    assert!(max_width(&text) <= 100, "{text}");
    insta::assert_snapshot!("verdicts_findings_100", text);
}

#[test]
fn human_report_by_default_gives_each_finding_one_line_and_fits_a_screen() {
    let text = human(
        SITE,
        &["-t", "sm_120", "-t", "sm_121", "--width", "100"],
        &[],
    );
    let summary = text.find("sm_120: 2 traps").expect("summary");
    let traps = text.find("TRAPS (2)").expect("traps");
    let next = text.find("\nnext: ").expect("next step");
    assert!(summary < traps && traps < next, "{text}");
    // One line for the trap that holds at both targets, no evidence chain.
    assert_eq!(
        text.matches("sglang/srt/layers/backends.py:23").count(),
        1,
        "{text}"
    );
    assert!(!text.contains("why     "), "{text}");
    assert!(text.contains("--show findings"), "{text}");
    assert!(text.lines().count() <= 60, "{text}");
    assert!(max_width(&text) <= 100, "{text}");
    insta::assert_snapshot!("verdicts_default_100", text);
    // -q: the summary alone.
    let quiet = human(SITE, &["-q", "--width", "100"], &[]);
    assert!(quiet.contains("sm_120: 2 traps"), "{quiet}");
    assert!(
        !quiet.contains("TRAPS") && !quiet.contains("next:"),
        "{quiet}"
    );
}

#[test]
fn show_prints_one_gate_whole_by_its_id_prefix() {
    let doc: serde_json::Value = serde_json::from_slice(
        &run(["audit", SITE, "--format", "json", "--fail-on", "none"]).stdout,
    )
    .unwrap();
    let gate = doc["gates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["file"] == "sglang/srt/layers/backends.py" && g["line"] == 23)
        .expect("the trap gate");
    let id = gate["id"].as_str().unwrap();
    let out = run(["show", &id[..8], SITE, "--width", "100"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with(&format!("gate {id}")), "{text}");
    assert!(text.contains("verdict trap:"), "{text}");
    assert!(text.contains("needs "), "the evidence chain: {text}");
    let missing = run(["show", "ffffffffffffffff0", SITE]);
    assert_eq!(missing.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert!(stderr.contains("--format json"), "{stderr}");
}

#[test]
fn human_report_show_all_lists_every_gate() {
    let text = human(SITE, &["--show", "all", "--width", "120"], &[]);
    let every = text.find("EVERY GATE").expect("the full listing");
    assert!(text.find("TRAPS (2)").unwrap() < every, "{text}");
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
        text.contains("communicator.py:23  fix: sglang-ar-fusion-communicator; present"),
        "{text}"
    );
    let findings = human(
        "testdata/venvs/fusion",
        &["--width", "100", "--show", "findings"],
        &[],
    );
    assert!(
        findings.contains(
            "fix     patch sglang-ar-fusion-communicator: gatefix apply sm_120 --dry-run"
        ),
        "{findings}"
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
    assert!(forced.contains("\x1b[1;31mTRAPS (2)"), "{forced}");
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

// ---- Version, completions, man page.

#[test]
fn version_names_the_commit() {
    let out = run(["--version"]);
    assert_eq!(out.status.code(), Some(0));
    let text = stdout(&out);
    let version = env!("CARGO_PKG_VERSION");
    assert!(
        text.starts_with(&format!("gatefix {version} (commit ")),
        "{text}"
    );
    // Built from this checkout, the commit is git's (10 hex digits).
    let is_git = std::process::Command::new("git")
        .args(["rev-parse", "--short=10", "HEAD"])
        .output()
        .is_ok_and(|o| o.status.success());
    if is_git && std::env::var_os("GATEFIX_COMMIT").is_none() {
        let commit = text
            .split("(commit ")
            .nth(1)
            .unwrap()
            .trim_end()
            .trim_end_matches(')');
        assert!(
            commit.len() == 10 && commit.bytes().all(|b| b.is_ascii_hexdigit()),
            "{text}"
        );
    }
}

#[test]
fn completions_for_each_shell_know_the_subcommands_and_options() {
    for shell in ["bash", "zsh", "fish"] {
        let out = run(["completions", shell]);
        assert_eq!(out.status.code(), Some(0), "{shell}");
        let text = stdout(&out);
        for word in ["audit", "apply", "allow-unknown-arch", "show"] {
            assert!(text.contains(word), "{shell}: {word}");
        }
    }
    let out = run(["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn the_man_page_covers_every_subcommand() {
    let out = run(["man"]);
    assert_eq!(out.status.code(), Some(0));
    let text = stdout(&out);
    assert!(text.contains(".TH gatefix 1"), "{text}");
    for section in [
        "AUDIT", "KERNELS", "APPLY", "REVERT", "STATUS", "LOG", "RULES",
    ] {
        assert!(
            text.contains(&format!(".SH \"GATEFIX {section}\"")),
            "{section}"
        );
    }
    assert!(text.contains("\\-\\-show"), "audit's options are in it");
}

// ---- gatefix explain.

fn explain(site: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "explain".to_string(),
        "--site".to_string(),
        site.display().to_string(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    run(args)
}

#[test]
fn explain_says_when_no_site_has_the_message() {
    let out = explain(
        Path::new(SITE),
        &["This kernel only supports sm100f.", "--target", "sm_120"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no raise or check site"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn explain_without_a_target_or_nvidia_smi_asks_for_one() {
    let empty_path = tempfile::tempdir().unwrap();
    let out = run_env(
        ["explain", "--site", SITE, "Unsupported architecture"],
        &[("PATH", empty_path.path().to_str().unwrap())],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--target"), "{}", stderr(&out));
}

fn explain_json(site: &Path, extra: &[&str]) -> (Option<i32>, serde_json::Value) {
    let mut args = extra.to_vec();
    args.extend(["--format", "json"]);
    let out = explain(site, &args);
    let value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("explain's JSON: {e}\n{}", stdout(&out)));
    (out.status.code(), value)
}

const NEEDS_SM90: &str = "ValueError: needs SM90 or SM10X";

#[test]
fn explain_a_raise_whose_guard_is_an_opportunity_says_the_gate_can_open() {
    // backends.py:43 raises unless sm_90/sm_100, and the fused allreduce after it has an
    // sm_120 kernel: the guard is an opportunity at sm_120, a wall at sm_89.
    let out = explain(
        Path::new(SITE),
        &[NEEDS_SM90, "--target", "sm_120", "--cuda", "12.8"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains(
            "raise at sglang/srt/layers/backends.py:44 in checked_allreduce (sglang 0.5.23)"
        ) && text.contains("guarded by sglang/srt/layers/backends.py:43")
            && text.contains("this check raises, yet the code after it has a kernel for sm_120")
            && text.contains("Run: gatefix apply sm_120 --dry-run"),
        "{text}"
    );
    assert!(!text.contains("must stay closed"), "{text}");
    let out = explain(
        Path::new(SITE),
        &[NEEDS_SM90, "--target", "sm_89", "--cuda", "12.8"],
    );
    let text = stdout(&out);
    assert!(
        text.contains("at sm_89 this check raises (verdict: wall)")
            && text.contains("must stay closed"),
        "{text}"
    );
}

/// After an apply, explain names the transaction that wrote the file it finds the check in,
/// with the command that undoes it; after the revert it no longer does. The ledger is only
/// read.
#[test]
fn explain_names_the_gatefix_transaction_that_wrote_the_file() {
    let temp = tempfile::tempdir().unwrap();
    copy_tree(Path::new(SITE), temp.path());
    let site = temp.path().display().to_string();
    let out = run([
        "apply",
        "sm_120",
        "--site",
        &site,
        "--unsafe-fixes",
        "--all-opportunities",
        "--cuda",
        "12.8",
    ]);
    // Exit 3: a curated patch for this sglang release is refused (the fixture lacks its
    // file); the synthesized fixes are applied.
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("applied as transaction 1"),
        "{}",
        stdout(&out)
    );
    let ask = [NEEDS_SM90, "--target", "sm_120", "--cuda", "12.8"];
    let before = hash_tree(temp.path());
    let out = explain(temp.path(), &ask);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let line = text
        .lines()
        .find(|l| l.starts_with("gatefix wrote "))
        .unwrap_or_else(|| panic!("no transaction line:\n{text}"));
    assert!(
        line.starts_with(
            "gatefix wrote sglang/srt/layers/backends.py in transaction 1 (apply sm_120: "
        ) && line.contains("(unsafe)")
            && line.ends_with(&format!("undo it: gatefix revert 1 --site {site}")),
        "{line}"
    );
    assert_eq!(hash_tree(temp.path()), before, "explain writes nothing");
    let (_, json) = explain_json(temp.path(), &ask);
    assert_eq!(json["transactions"][0]["txn"], 1);
    assert_eq!(
        json["transactions"][0]["files"],
        serde_json::json!(["sglang/srt/layers/backends.py"])
    );

    let out = run(["revert", "--site", &site]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&explain(temp.path(), &ask));
    assert!(!text.contains("gatefix wrote"), "{text}");
    let (_, json) = explain_json(temp.path(), &ask);
    assert_eq!(json["transactions"], serde_json::json!([]));
}

/// `... 2>&1 | gatefix explain` and `gatefix explain -` read the message (or a whole log)
/// from standard input and answer as the argument does.
#[test]
fn explain_reads_the_message_or_a_log_from_standard_input() {
    let args = [
        "explain", "--site", SITE, "--target", "sm_120", "--cuda", "12.8",
    ];
    let by_argument = run(args.iter().copied().chain([NEEDS_SM90]));
    assert_eq!(
        by_argument.status.code(),
        Some(0),
        "{}",
        stderr(&by_argument)
    );
    let log = format!(
        "INFO starting\nTraceback (most recent call last):\n  File \"x.py\", line 1\n{NEEDS_SM90}\n"
    );
    for (extra, input) in [
        (&[][..], format!("{NEEDS_SM90}\n")),
        (&["-"][..], format!("{NEEDS_SM90}\n")),
        (&[][..], log),
    ] {
        let out = assert_cmd::Command::new(common::gatefix_bin())
            .args(args)
            .args(extra)
            .env_remove("VIRTUAL_ENV")
            .write_stdin(input.clone())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{input}: {}", stderr(&out));
        assert_eq!(stdout(&out), stdout(&by_argument), "{input}");
    }
    let out = assert_cmd::Command::new(common::gatefix_bin())
        .args(args)
        .env_remove("VIRTUAL_ENV")
        .write_stdin("")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("standard input was empty"),
        "{}",
        stderr(&out)
    );
}

/// A bad `--fail-on` names the option once; every command's help ends with the exit codes.
#[test]
fn messages_name_the_option_once_and_every_help_has_the_exit_codes() {
    let out = run(["audit", SITE, "--fail-on", "traps"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("--fail-on: unknown value `traps`"), "{err}");
    assert!(!err.contains("--fail-on: --fail-on"), "{err}");
    for command in [
        "audit",
        "kernels",
        "apply",
        "revert",
        "status",
        "log",
        "rules",
        "explain",
        "completions",
        "man",
    ] {
        let out = run([command, "--help"]);
        assert!(
            stdout(&out).contains("Exit codes: 0 success, 1 policy findings"),
            "{command} --help: {}",
            stdout(&out)
        );
    }
}

#[test]
fn explain_json_holds_the_same_findings() {
    let (code, json) = explain_json(
        Path::new(SITE),
        &[NEEDS_SM90, "--target", "sm_120", "--cuda", "12.8"],
    );
    assert_eq!(code, Some(0));
    assert_eq!(json["exception"], "ValueError");
    assert_eq!(json["message"], "needs SM90 or SM10X");
    assert_eq!(json["target"], "sm_120");
    assert_eq!(json["conclusion"], "can-open");
    let raises = json["raises"].as_array().unwrap();
    assert_eq!(raises.len(), 1, "{json}");
    assert_eq!(raises[0]["file"], "sglang/srt/layers/backends.py");
    assert_eq!(raises[0]["line"], 44);
    assert_eq!(raises[0]["distribution"], "sglang 0.5.23");
    let guard = &raises[0]["guard"];
    assert_eq!(guard["line"], 43);
    assert_eq!(guard["raises"], "yes");
    assert_eq!(guard["verdict"], "opportunity");
    assert_eq!(
        guard["text"],
        "not (is_sm90_supported() or is_sm100_supported())"
    );
    let (_, json) = explain_json(
        Path::new(SITE),
        &[NEEDS_SM90, "--target", "sm_90", "--cuda", "12.8"],
    );
    assert_eq!(json["raises"][0]["guard"]["raises"], "no");
    assert_eq!(json["conclusion"], "no-patch");
    // No site has it: exit 1, still one JSON document on stdout.
    let (code, json) = explain_json(
        Path::new(SITE),
        &["This kernel only supports sm100f.", "--target", "sm_120"],
    );
    assert_eq!(code, Some(1));
    assert_eq!(json["conclusion"], "not-found");
    assert_eq!(json["raises"].as_array().map(Vec::len), Some(0));
}

const NO_ARCHS: &str =
    "RuntimeError: No supported CUDA architectures found for major versions [9, 10]";

#[test]
#[ignore = "real wheels: run by .ci/run"]
fn explain_the_original_crash_on_sglang_055_flashinfer_050() {
    let site = common::fixture::wheel_site(&["sglang-0.5.5-", "flashinfer_python-0.5.0-"]);
    let out = explain(
        site.path(),
        &[NO_ARCHS, "--target", "sm_120", "--cuda", "12.8"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("raise at flashinfer/compilation_context.py:62 in get_nvcc_flags_list"),
        "{text}"
    );
    assert!(
        text.contains("{supported_major_versions} = [9, 10]"),
        "{text}"
    );
    // The generators whose list is [9, 10], and only those: here the trtllm comm module.
    assert!(
        text.contains("flashinfer.jit.comm:gen_trtllm_comm_module  flashinfer/jit/comm.py:60  NO kernel at sm_120"),
        "{text}"
    );
    assert_eq!(text.matches("NO kernel at sm_120").count(), 1, "{text}");
    // ... that a sglang path reaches.
    assert!(
        text.contains("reached from sglang sglang/srt/layers/communicator.py:567"),
        "{text}"
    );
    assert!(
        text.contains("the gates that reach it must stay closed"),
        "{text}"
    );
    assert!(
        text.contains("no fix: patch sglang-ar-fusion-communicator"),
        "refused, kernel missing: {text}"
    );
    assert!(!text.contains("\nfix: "), "{text}");
    // The same findings as JSON.
    let (code, json) = explain_json(
        site.path(),
        &[NO_ARCHS, "--target", "sm_120", "--cuda", "12.8"],
    );
    assert_eq!(code, Some(0));
    assert_eq!(json["conclusion"], "no-kernel");
    let raise = &json["raises"][0];
    assert_eq!(raise["file"], "flashinfer/compilation_context.py");
    assert_eq!(raise["generator_list"], "[9, 10]");
    let generators = raise["generators"].as_array().unwrap();
    assert_eq!(generators.len(), 1, "{json}");
    assert_eq!(
        generators[0]["id"],
        "flashinfer.jit.comm:gen_trtllm_comm_module"
    );
    assert_eq!(generators[0]["kernel"], "missing");
    assert!(
        generators[0]["reached_from"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["file"] == "sglang/srt/layers/communicator.py" && r["line"] == 567),
        "{json}"
    );
    assert_eq!(json["patches"][0]["id"], "sglang-ar-fusion-communicator");
    assert_eq!(json["patches"][0]["applies"], false);
}

#[test]
#[ignore = "real wheels: run by .ci/run"]
fn explain_names_the_fusion_patch_with_flashinfer_072() {
    let site = common::fixture::wheel_site(&["sglang-0.5.5-", "flashinfer_python-0.7.2-"]);
    let out = explain(
        site.path(),
        &[NO_ARCHS, "--target", "sm_120", "--cuda", "12.8"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("flashinfer/compilation_context.py:162"),
        "{text}"
    );
    // gen_trtllm_comm_module lists 12 now: not among the [9, 10] generators.
    assert!(!text.contains("gen_trtllm_comm_module "), "{text}");
    assert!(
        text.contains("flashinfer.jit.comm:gen_trtllm_mnnvl_comm_module"),
        "{text}"
    );
    assert!(
        text.contains(
            "fix: patch sglang-ar-fusion-communicator applies here (Open sglang's FlashInfer allreduce fusion"
        ) && text.contains("gatefix apply sm_120 --dry-run --patch sglang-ar-fusion-communicator"),
        "{text}"
    );
}

/// On a fork of flashinfer 0.7.2 (`flashinfer_fork`), explain names the shipped patch whose
/// kernel the fork holds, as on the published package: the patch's JIT requirement is read
/// with the fork's module names, as the rules are (before, no patch was named).
#[test]
#[ignore = "real wheels: run by .ci/run"]
fn explain_names_the_fusion_patch_over_a_renamed_flashinfer_fork() {
    let site = common::fixture::wheel_site(&["sglang-0.5.5-", "flashinfer_python-0.7.2-"]);
    common::fixture::renamed_fork(site.path(), "flashinfer", "flashinfer_fork");
    let (code, json) = explain_json(
        site.path(),
        &[NO_ARCHS, "--target", "sm_120", "--cuda", "12.8"],
    );
    assert_eq!(code, Some(0), "{json}");
    assert_eq!(
        json["raises"][0]["file"], "flashinfer_fork/compilation_context.py",
        "{json}"
    );
    assert_eq!(
        json["patches"][0]["id"], "sglang-ar-fusion-communicator",
        "{json}"
    );
    assert_eq!(json["patches"][0]["applies"], true, "{json}");
}

#[test]
#[ignore = "real wheels: run by .ci/run"]
fn explain_three_more_messages_on_real_sites() {
    let site = common::fixture::wheel_site(&["sglang-0.5.5-", "flashinfer_python-0.5.0-"]);
    // The XQA check: its gate, and whether it raises at the target.
    let xqa = "... is only supported on SM90, SM100, SM120 GPUs";
    let text = stdout(&explain(site.path(), &[xqa, "--target", "sm_120"]));
    assert!(
        text.contains("raise at flashinfer/xqa.py:254 in xqa"),
        "{text}"
    );
    assert!(
        text.contains("guarded by flashinfer/xqa.py:253")
            && text.contains("major not in {9, 10, 12}"),
        "{text}"
    );
    assert!(
        text.contains("at sm_120 this check does not raise"),
        "{text}"
    );
    let text = stdout(&explain(
        site.path(),
        &[xqa, "--target", "sm_89", "--cuda", "12.8"],
    ));
    assert!(text.contains("at sm_89 this check raises"), "{text}");
    // A check in native code, not the InternVL config's "Unsupported architecture: {}".
    let out = explain(
        site.path(),
        &["Unsupported architecture", "--target", "sm_120"],
    );
    let text = stdout(&out);
    assert!(
        text.contains(
            "FLASHINFER_CHECK at flashinfer/data/include/flashinfer/trtllm/fmha/fmhaRunner.cuh:30"
        ),
        "{text}"
    );
    assert!(text.contains("mSM == kSM_100 || mSM == kSM_103"), "{text}");
    assert!(!text.contains("internvl.py"), "{text}");
    // Not raised anywhere in the pinned wheels: said so, exit 1.
    let newer = common::fixture::wheel_site(&["sglang-0.5.23-", "flashinfer_python-0.7.2-"]);
    let out = explain(
        newer.path(),
        &["This kernel only supports sm100f.", "--target", "sm_120"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(stderr(&out).contains("no raise or check site"));
    // The same message from a log file: its last exception.
    let log = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        log.path(),
        format!(
            "INFO starting\nTraceback (most recent call last):\n  File \"x.py\", line 3\n{NO_ARCHS}.\nINFO exit\n"
        ),
    )
    .unwrap();
    let text = stdout(&explain(
        site.path(),
        &[
            log.path().to_str().unwrap(),
            "--target",
            "sm_120",
            "--cuda",
            "12.8",
        ],
    ));
    assert!(text.contains(&format!("explain: {NO_ARCHS}.")), "{text}");
    assert!(
        text.contains("flashinfer/compilation_context.py:62"),
        "{text}"
    );
}

/// The default report of a real site at `width`, the temporary site path replaced.
fn real_brief(site: &Path, width: &str) -> String {
    let out = run_env(
        [
            "audit",
            site.to_str().unwrap(),
            "--cuda",
            "12.8",
            "--fail-on",
            "none",
            "--width",
            width,
        ],
        &[("NO_COLOR", "1")],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    stdout(&out).replace(site.to_str().unwrap(), "<site>")
}

#[test]
#[ignore = "real wheels: run by .ci/run"]
fn the_default_report_of_real_sites_fits_a_screen() {
    let story = common::fixture::wheel_site(&["sglang-0.5.5-", "flashinfer_python-0.5.0-"]);
    let current = common::fixture::wheel_site(&["sglang-0.5.23-", "flashinfer_python-0.7.2-"]);
    for (name, site) in [("sglang055", &story), ("sglang0523", &current)] {
        for width in ["80", "120"] {
            let text = real_brief(site.path(), width);
            let lines = text.lines().count();
            assert!(lines <= 65, "{name} at {width}: {lines} lines\n{text}");
            let columns: usize = width.parse().unwrap();
            assert!(max_width(&text) <= columns, "{name} at {width}\n{text}");
            assert!(
                text.contains("TRAPS (") && text.contains("\nnext: "),
                "{text}"
            );
            if name == "sglang055" {
                // The story's gate (the allreduce fusion of sglang 0.5.5's communicator, a
                // wall over flashinfer 0.5.0) is on the first screen.
                let at = text
                    .lines()
                    .position(|l| l.contains("sglang/srt/layers/communicator.py:567"))
                    .unwrap_or_else(|| panic!("the story's gate at {width}:\n{text}"));
                assert!(at < 50, "line {at}:\n{text}");
            }
            insta::assert_snapshot!(format!("real_default_{name}_{width}"), text);
        }
    }
}
