//! Nothing lost, nothing silent: a damaged ledger, a ledger where it does not belong, a
//! full disk, a removed ledger. Every case asserts the message, the exit code, and that the
//! site is byte-identical to what it was before the command.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::fixture::{hash_tree, stderr, stdout, venv_args, venv_copy};

const COMMUNICATOR: &str = "sglang/srt/layers/communicator.py";

/// Runs gatefix, killing it (and failing the test) if it takes more than 60 s: a hang is
/// the failure these tests exist to catch.
fn gatefix_timed(args: &[String], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_gatefix"));
    command
        .args(args)
        .env_remove("VIRTUAL_ENV")
        .env_remove("GATEFIX_LEDGER")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        command.env(k, v);
    }
    let mut child = command.spawn().expect("gatefix runs");
    let start = Instant::now();
    loop {
        if child.try_wait().expect("wait").is_some() {
            return child.wait_with_output().expect("output");
        }
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("gatefix {args:?} hung for 60 s");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn verb(name: &str, root: &Path, extra: &[&str]) -> Output {
    let mut args = vec![name.to_string()];
    if name == "apply" {
        args.push("sm_120".into());
    }
    args.extend(venv_args(root));
    args.extend(extra.iter().map(|s| s.to_string()));
    gatefix_timed(&args, &[])
}

fn ledger_dir(root: &Path) -> PathBuf {
    root.join(".gatefix/ledger.git")
}

/// The pre-image blobs of transaction 1 (its begin commit is main's parent): (file, id).
fn pre_image_objects(root: &Path) -> Vec<(String, git2::Oid)> {
    let repo = git2::Repository::open_bare(ledger_dir(root)).unwrap();
    let main = repo.find_reference("refs/heads/main").unwrap();
    let done = main.peel_to_commit().unwrap();
    let begin = done.parent(0).unwrap();
    let tree = begin.tree().unwrap();
    let mut out = Vec::new();
    for file in [COMMUNICATOR, "sglang/srt/server_args.py"] {
        let entry = tree.get_path(Path::new(file)).unwrap();
        out.push((file.to_string(), entry.id()));
    }
    out
}

fn loose(root: &Path, oid: git2::Oid) -> PathBuf {
    let hex = oid.to_string();
    ledger_dir(root)
        .join("objects")
        .join(&hex[..2])
        .join(&hex[2..])
}

fn write_object(path: &Path, bytes: &[u8]) {
    let mut perms = std::fs::metadata(path).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perms.set_readonly(false);
    std::fs::set_permissions(path, perms).unwrap();
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn a_cut_ledger_object_is_an_error_naming_it_never_a_hang() {
    let (_g, root) = venv_copy("fusion");
    let original = hash_tree(&root);
    assert_eq!(verb("apply", &root, &[]).status.code(), Some(0));
    let patched = hash_tree(&root);
    for (file, oid) in pre_image_objects(&root) {
        let path = loose(&root, oid);
        let intact = std::fs::read(&path).unwrap();
        let mut cuts = vec![2, 10, 40, 100, 500, 1000];
        cuts.retain(|&c| c < intact.len());
        cuts.push(intact.len() - 1);
        for cut in cuts {
            write_object(&path, &intact[..cut]);
            for args in [&[][..], &["--force"][..]] {
                let out = verb("revert", &root, args);
                let err = stderr(&out);
                assert_eq!(out.status.code(), Some(2), "cut {cut} {args:?}: {err}");
                assert!(
                    err.contains("transaction 1: the pre-image of")
                        && err.contains(&file)
                        && err.contains(&oid.to_string())
                        && err.contains("Nothing was written"),
                    "cut {cut}: {err}"
                );
                assert!(!err.contains("holds no pre-image"), "{err}");
                assert_eq!(hash_tree(&root), patched, "cut {cut}: the site changed");
            }
            let out = verb("status", &root, &[]);
            assert_eq!(out.status.code(), Some(2), "status, cut {cut}");
            let text = stdout(&out);
            assert!(
                text.contains(&format!("DAMAGED: transaction 1: the pre-image of {file}"))
                    && text.contains(&oid.to_string()),
                "{text}"
            );
        }
        write_object(&path, &intact);
    }
    let out = verb("status", &root, &["--fsck"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(stdout(&out).contains(", 0 damaged"), "{}", stdout(&out));
    let out = verb("revert", &root, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(hash_tree(&root), original);
}

#[test]
fn a_missing_object_and_a_damaged_commit_are_named() {
    let (_g, root) = venv_copy("fusion");
    assert_eq!(verb("apply", &root, &[]).status.code(), Some(0));
    let patched = hash_tree(&root);
    let (file, oid) = pre_image_objects(&root).remove(0);
    let path = loose(&root, oid);
    let intact = std::fs::read(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    let out = verb("revert", &root, &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&file) && err.contains(&oid.to_string()) && err.contains("is missing"),
        "{err}"
    );
    assert_eq!(hash_tree(&root), patched);
    std::fs::write(&path, &intact).unwrap();

    // The done commit itself, cut: nothing parses it, every command says so.
    let repo = git2::Repository::open_bare(ledger_dir(&root)).unwrap();
    let done = repo.refname_to_id("refs/heads/main").unwrap();
    let commit_path = loose(&root, done);
    let intact = std::fs::read(&commit_path).unwrap();
    write_object(&commit_path, &intact[..intact.len() / 2]);
    for command in ["revert", "status", "log"] {
        let out = verb(command, &root, &[]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{command}: {err}");
        assert!(err.contains(&done.to_string()), "{command}: {err}");
        assert!(err.contains("cut short"), "{command}: {err}");
    }
    // The command those errors name lists the damage instead of refusing with it.
    let out = verb("status", &root, &["--fsck"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("DAMAGED: ") && text.contains(&done.to_string()),
        "{text}"
    );
    assert!(
        text.contains("fsck: ") && text.contains("object(s) checked"),
        "{text}"
    );
    assert_eq!(hash_tree(&root), patched);
    // A content swap (valid zlib, wrong bytes) is caught by the hash.
    write_object(&commit_path, &intact);
    let other = std::fs::read(loose(&root, oid)).unwrap();
    write_object(&loose(&root, pre_image_objects(&root)[1].1), &other);
    let out = verb("revert", &root, &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("its content hashes to"),
        "{}",
        stderr(&out)
    );
    assert_eq!(hash_tree(&root), patched);
}

fn site(root: &Path) -> PathBuf {
    root.join(common::fixture::FUSION_SITE)
}

#[test]
fn a_ledger_may_not_live_at_the_root_in_the_site_or_in_a_busy_folder() {
    let (guard, root) = venv_copy("fusion");
    let before = hash_tree(&root);
    let root_link = guard.path().join("rootlink");
    std::os::unix::fs::symlink("/", &root_link).unwrap();
    let busy = guard.path().join("busy");
    std::fs::create_dir_all(&busy).unwrap();
    std::fs::write(busy.join("notes.txt"), "mine").unwrap();
    let cases = [
        (
            PathBuf::from("/"),
            "the file system root cannot hold a ledger",
        ),
        (
            root_link.clone(),
            "the file system root cannot hold a ledger",
        ),
        (site(&root), "that is the site root"),
        (site(&root).join("sglang/x"), "that is inside the site"),
        (
            busy.clone(),
            "holds other things and is not a gatefix ledger",
        ),
        (root.join("lib"), "holds the site"),
    ];
    for (dir, why) in &cases {
        for command in ["apply", "status", "revert", "log"] {
            let out = verb(command, &root, &["--ledger", dir.to_str().unwrap()]);
            let err = stderr(&out);
            assert_eq!(
                out.status.code(),
                Some(2),
                "{command} {}: {err}",
                dir.display()
            );
            assert!(err.contains(why), "{command} {}: {err}", dir.display());
            assert!(err.contains("--ledger"), "{err}");
            assert_eq!(hash_tree(&root), before, "{command} {}", dir.display());
        }
    }
    assert!(!Path::new("/gatefix.lock").exists());
    assert!(!site(&root).join("HEAD").exists());
    assert_eq!(std::fs::read_dir(&busy).unwrap().count(), 1);
    // The same through the environment.
    let mut args = vec!["apply".to_string(), "sm_120".into()];
    args.extend(venv_args(&root));
    let out = gatefix_timed(&args, &[("GATEFIX_LEDGER", site(&root).to_str().unwrap())]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("$GATEFIX_LEDGER"), "{}", stderr(&out));
    assert_eq!(hash_tree(&root), before);
}

#[test]
fn a_ledger_named_once_is_found_again_without_the_flag() {
    let (guard, root) = venv_copy("fusion");
    let original = hash_tree(&root);
    let elsewhere = guard.path().join("ledgers/fusion.git");
    let flag = ["--ledger", elsewhere.to_str().unwrap()];
    assert_eq!(verb("apply", &root, &flag).status.code(), Some(0));
    assert!(elsewhere.join("gatefix-ledger").is_file());
    let pointer = root.join(".gatefix/ledger-path");
    assert_eq!(
        std::fs::read_to_string(&pointer).unwrap().trim(),
        elsewhere.to_str().unwrap()
    );
    let status = stdout(&verb("status", &root, &[]));
    assert!(status.contains("transaction 1: apply sm_120"), "{status}");
    assert!(status.contains(elsewhere.to_str().unwrap()), "{status}");
    let out = verb("revert", &root, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(hash_tree(&root), original);

    // $GATEFIX_LEDGER is used by every command too.
    let (_g2, root2) = venv_copy("fusion");
    let env_ledger = guard.path().join("env/ledger.git");
    let env = [("GATEFIX_LEDGER", env_ledger.to_str().unwrap())];
    let run = |name: &str| {
        let mut args = vec![name.to_string()];
        if name == "apply" {
            args.push("sm_120".into());
        }
        args.extend(venv_args(&root2));
        gatefix_timed(&args, &env)
    };
    assert_eq!(run("apply").status.code(), Some(0));
    assert!(env_ledger.join("HEAD").is_file());
    assert!(stdout(&run("status")).contains("transaction 1"));
    assert_eq!(run("revert").status.code(), Some(0));
}

#[test]
fn a_second_ledger_cannot_hide_the_first_ones_transactions() {
    let (guard, root) = venv_copy("fusion");
    let original: Vec<(PathBuf, Vec<u8>)> = [
        "sglang/srt/layers/communicator.py",
        "sglang/srt/server_args.py",
    ]
    .iter()
    .map(|f| {
        let p = site(&root).join(f);
        let bytes = std::fs::read(&p).unwrap();
        (p, bytes)
    })
    .collect();
    assert_eq!(verb("apply", &root, &[]).status.code(), Some(0));
    // Someone puts the files back by hand; the default ledger still says transaction 1.
    for (p, bytes) in &original {
        std::fs::write(p, bytes).unwrap();
    }
    let before = hash_tree(&root);
    let other = guard.path().join("other.git");
    let out = verb("apply", &root, &["--ledger", other.to_str().unwrap()]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains("transaction(s) 1 in effect in another ledger")
            && err.contains(".gatefix/ledger.git"),
        "{err}"
    );
    assert_eq!(hash_tree(&root), before);
}

/// Rewrites the fixture's RECORD files with the sha256 of every file they list, as pip does
/// (the bundled fixture lists files without hashes).
fn with_record_hashes(root: &Path) {
    use sha2::{Digest, Sha256};
    let site = site(root);
    for entry in std::fs::read_dir(&site).unwrap() {
        let dir = entry.unwrap().path();
        let record = dir.join("RECORD");
        if !record.is_file() {
            continue;
        }
        let text = std::fs::read_to_string(&record).unwrap();
        let mut out = String::new();
        for line in text.lines() {
            let path = line.split(',').next().unwrap();
            if path.ends_with(".dist-info/RECORD") {
                // RECORD cannot hold its own hash: pip lists it with none.
                out.push_str(&format!("{path},,\n"));
                continue;
            }
            let bytes = std::fs::read(site.join(path)).unwrap();
            let digest = Sha256::digest(&bytes);
            out.push_str(&format!(
                "{path},sha256={},{}\n",
                b64url(&digest),
                bytes.len()
            ));
        }
        std::fs::write(&record, out).unwrap();
    }
}

fn b64url(bytes: &[u8]) -> String {
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut bits = 0u32;
    let mut n = 0;
    let mut out = String::new();
    for &b in bytes {
        bits = (bits << 8) | b as u32;
        n += 8;
        while n >= 6 {
            n -= 6;
            out.push(alphabet[((bits >> n) & 63) as usize] as char);
        }
    }
    if n > 0 {
        out.push(alphabet[((bits << (6 - n)) & 63) as usize] as char);
    }
    out
}

const PIP_LINE: &str = "pip install --force-reinstall --no-deps sglang==0.5.5";

#[test]
fn a_removed_ledger_cannot_make_a_patched_site_look_clean() {
    let (_g, root) = venv_copy("fusion");
    with_record_hashes(&root);
    let original = hash_tree(&root);
    let out = verb("status", &root, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(stdout(&out).contains("no gatefix transactions"));
    assert_eq!(verb("apply", &root, &[]).status.code(), Some(0));
    let out = verb("status", &root, &[]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains(
            "patched by gatefix: sglang/srt/layers/communicator.py (transaction 1; sglang 0.5.5)"
        ),
        "{text}"
    );

    std::fs::remove_dir_all(root.join(".gatefix")).unwrap();
    let patched = hash_tree(&root);
    for command in ["status", "revert"] {
        let out = verb(command, &root, &[]);
        let text = stdout(&out);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{command}: {text}{}",
            stderr(&out)
        );
        assert!(!text.contains("no gatefix transactions"), "{text}");
        assert!(!text.contains("nothing to revert"), "{text}");
        assert!(
            text.contains("no ledger at")
                && text.contains(".gatefix/ledger.git")
                && text.contains("NOT BY GATEFIX: sglang/srt/layers/communicator.py differs from what pip installed (sglang 0.5.5 RECORD)")
                && text.contains(PIP_LINE),
            "{command}: {text}"
        );
        assert_eq!(hash_tree(&root), patched, "{command} wrote");
    }
    let out = verb("status", &root, &["--format", "json"]);
    assert_eq!(out.status.code(), Some(1));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["way_back"], serde_json::json!([PIP_LINE]));
    assert_eq!(doc["site_files"][0]["state"], "not-by-gatefix");

    // A ledger at another place than the one that patched the site: the same report.
    let (guard, root2) = venv_copy("fusion");
    with_record_hashes(&root2);
    assert_eq!(verb("apply", &root2, &[]).status.code(), Some(0));
    let empty = guard.path().join("empty.git");
    let out = verb("status", &root2, &["--ledger", empty.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(stdout(&out).contains(PIP_LINE));
    // And with the ledger back in place, everything is explained and revert works.
    assert_eq!(verb("revert", &root2, &[]).status.code(), Some(0));
    let _ = original;
}

#[test]
fn apply_refuses_to_stack_on_files_changed_by_someone_else() {
    let (_g, root) = venv_copy("fusion");
    with_record_hashes(&root);
    let server_args = site(&root).join("sglang/srt/server_args.py");
    let mut text = std::fs::read_to_string(&server_args).unwrap();
    text.push_str("# a local hand edit\n");
    std::fs::write(&server_args, text).unwrap();
    let before = hash_tree(&root);
    let out = verb("apply", &root, &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains("sglang/srt/server_args.py (sglang 0.5.5) differ(s) from what pip installed")
            && err.contains("nothing was written")
            && err.contains(PIP_LINE),
        "{err}"
    );
    assert_eq!(hash_tree(&root), before);
    let status = verb("status", &root, &[]);
    assert_eq!(status.status.code(), Some(1));
    assert!(stdout(&status).contains("NOT BY GATEFIX: sglang/srt/server_args.py"));
}

#[test]
fn status_all_compares_every_installed_file_and_sees_a_reinstall() {
    let (_g, root) = venv_copy("fusion");
    with_record_hashes(&root);
    let comm = site(&root).join("flashinfer/jit/comm.py");
    let intact = std::fs::read(&comm).unwrap();
    let mut edited = intact.clone();
    edited.extend_from_slice(b"# edited\n");
    std::fs::write(&comm, &edited).unwrap();
    assert_eq!(verb("status", &root, &[]).status.code(), Some(0));
    let out = verb("status", &root, &["--all"]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("NOT BY GATEFIX: flashinfer/jit/comm.py")
            && text.contains("pip install --force-reinstall --no-deps flashinfer-python==0.7.2"),
        "{text}"
    );
    std::fs::write(&comm, &intact).unwrap();

    // A reinstall under an applied transaction: the file is back at RECORD's bytes.
    let communicator = site(&root).join(COMMUNICATOR);
    let pip_bytes = std::fs::read(&communicator).unwrap();
    assert_eq!(verb("apply", &root, &[]).status.code(), Some(0));
    std::fs::write(&communicator, &pip_bytes).unwrap();
    let out = verb("status", &root, &[]);
    let text = stdout(&out);
    assert!(
        text.contains("REINSTALLED: sglang/srt/layers/communicator.py is back at the bytes pip installed (sglang 0.5.5); transaction 1"),
        "{text}"
    );
}

/// Files a transaction might leave beside a site file.
fn temp_files(root: &Path) -> Vec<String> {
    hash_tree(root)
        .into_keys()
        .filter(|f| f.contains(".gatefix-") && f.ends_with(".tmp"))
        .collect()
}

fn write_points(output: &Output) -> usize {
    stderr(output)
        .lines()
        .find_map(|l| l.strip_prefix("gatefix: write points reached: "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no write count in {}", stderr(output)))
}

fn verb_env(name: &str, root: &Path, env: &[(&str, &str)]) -> Output {
    let mut args = vec![name.to_string()];
    if name == "apply" {
        args.push("sm_120".into());
    }
    args.extend(venv_args(root));
    gatefix_timed(&args, env)
}

/// A full disk at every write of an apply and of a revert (simulated `ENOSPC`): no temp file
/// is left, every file is whole, the site is unchanged or the message names `gatefix revert`,
/// and that command restores it byte for byte.
#[test]
fn a_full_disk_at_any_write_leaves_no_temp_file_and_names_the_way_out() {
    let (_g, root) = venv_copy("fusion");
    let original = hash_tree(&root);
    let out = verb_env("apply", &root, &[("GATEFIX_FAULT_COUNT", "1")]);
    assert_eq!(out.status.code(), Some(0));
    let apply_writes = write_points(&out);
    let patched = hash_tree(&root);
    let out = verb_env("revert", &root, &[("GATEFIX_FAULT_COUNT", "1")]);
    let revert_writes = write_points(&out);
    assert!(apply_writes >= 8, "{apply_writes} write points");

    let mut interrupted = 0;
    for (phase, count) in [("apply", apply_writes), ("revert", revert_writes)] {
        for at in 1..=count {
            let (_g, root) = venv_copy("fusion");
            if phase == "revert" {
                assert_eq!(verb("apply", &root, &[]).status.code(), Some(0));
            }
            let before = hash_tree(&root);
            let n = at.to_string();
            let out = verb_env(phase, &root, &[("GATEFIX_FAULT_ENOSPC", &n)]);
            let err = stderr(&out);
            let context = format!("{phase}, ENOSPC at write {at}: {err}");
            if out.status.code() == Some(0) {
                // Only the clean-up after a complete transaction may fail this softly.
                assert!(
                    err.contains("warning") && err.contains("cannot delete refs/gatefix/pending"),
                    "{context}"
                );
                let done = if phase == "apply" {
                    &patched
                } else {
                    &original
                };
                assert_eq!(&hash_tree(&root), done, "{context}");
                assert!(temp_files(&root).is_empty(), "{context}");
                continue;
            }
            assert!(matches!(out.status.code(), Some(2 | 3)), "{context}");
            assert!(err.contains("No space left on device"), "{context}");
            assert!(
                temp_files(&root).is_empty(),
                "{context}: {:?}",
                temp_files(&root)
            );
            for (file, hash) in hash_tree(&root) {
                assert!(
                    original.get(&file) == Some(&hash) || patched.get(&file) == Some(&hash),
                    "{context}: {file} is not whole"
                );
            }
            let status = stdout(&verb("status", &root, &[]));
            if status.contains("INTERRUPTED") {
                interrupted += 1;
                assert!(err.contains("run `gatefix revert`"), "{context}");
                let out = verb("revert", &root, &[]);
                assert_eq!(out.status.code(), Some(0), "{context}: {}", stderr(&out));
                assert_eq!(hash_tree(&root), original, "{context}: revert");
            } else {
                assert!(
                    err.contains("nothing in the site was changed")
                        || err.contains("nothing was changed"),
                    "{context}"
                );
                assert_eq!(hash_tree(&root), before, "{context}: the site changed");
            }
        }
    }
    assert!(
        interrupted >= 1,
        "no write failure left an interrupted transaction"
    );
}

#[test]
fn too_little_free_space_is_refused_before_the_first_write() {
    let (_g, root) = venv_copy("fusion");
    let before = hash_tree(&root);
    let out = verb_env("apply", &root, &[("GATEFIX_FAULT_FREE_BYTES", "4096")]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("not enough free space") && err.contains("nothing was written"),
        "{err}"
    );
    assert_eq!(hash_tree(&root), before);
    assert!(temp_files(&root).is_empty());
    // Checked before the ledger is created: a full disk cannot leave half a repository.
    assert!(!ledger_dir(&root).join("HEAD").exists());
    assert!(!ledger_dir(&root).join("objects").exists());
}

/// The name of the fault point a killed command died at (`killed at point N (NAME)`).
fn killed_at(output: &Output) -> Option<String> {
    let err = stderr(output);
    let line = err
        .lines()
        .find_map(|l| l.strip_prefix("gatefix: fault injection: killed at point "))?;
    let (_, name) = line.split_once(" (")?;
    Some(name.trim_end_matches(')').to_string())
}

/// A kill -9 at each fault point of the ledger's creation (the first apply on a site) never
/// locks gatefix out: afterwards `status` and `revert` succeed with the site unchanged, and
/// `apply` makes the ledger and applies, and reverts byte for byte.
#[test]
fn a_kill_while_the_ledger_is_created_never_locks_gatefix_out() {
    let mut creation_points = Vec::new();
    for at in 1..=40 {
        let (_g, root) = venv_copy("fusion");
        let original = hash_tree(&root);
        let n = at.to_string();
        let out = verb_env("apply", &root, &[("GATEFIX_FAULT_AT", &n)]);
        let Some(point) = killed_at(&out) else {
            panic!("apply was not killed at point {at}: {}", stderr(&out));
        };
        if !point.starts_with("ledger ") {
            if creation_points.is_empty() {
                continue;
            }
            break;
        }
        creation_points.push(point.clone());
        let context = format!("killed at {at} ({point})");
        assert_eq!(hash_tree(&root), original, "{context}");
        for command in ["status", "revert"] {
            let out = verb(command, &root, &[]);
            assert_eq!(
                out.status.code(),
                Some(0),
                "{context}: {command}: {}",
                stderr(&out)
            );
            assert!(
                !stdout(&out).contains("INTERRUPTED"),
                "{context}: {command}"
            );
        }
        assert_eq!(hash_tree(&root), original, "{context}");
        let out = verb("apply", &root, &[]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{context}: apply: {}",
            stderr(&out)
        );
        assert_ne!(hash_tree(&root), original, "{context}: apply wrote nothing");
        assert!(
            ledger_dir(&root).join("gatefix-ledger").is_file(),
            "{context}"
        );
        let out = verb("revert", &root, &[]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{context}: revert: {}",
            stderr(&out)
        );
        assert_eq!(hash_tree(&root), original, "{context}: revert");
    }
    assert_eq!(
        creation_points,
        [
            "ledger folder made",
            "ledger repository made",
            "ledger HEAD set",
            "ledger marker written"
        ]
    );
}

/// A ledger whose `HEAD` file was deleted still shows its transaction and reverts it.
#[test]
fn a_ledger_that_lost_its_head_file_still_reverts() {
    let (_g, root) = venv_copy("fusion");
    let original = hash_tree(&root);
    assert_eq!(verb("apply", &root, &[]).status.code(), Some(0));
    std::fs::remove_file(ledger_dir(&root).join("HEAD")).unwrap();
    let out = verb("status", &root, &[]);
    let text = stdout(&out);
    assert!(text.contains("transaction 1"), "{text}");
    assert!(
        stderr(&out).contains("its HEAD file was missing"),
        "{}",
        stderr(&out)
    );
    let out = verb("revert", &root, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(hash_tree(&root), original);
}

/// A real full disk: the venv on a small tmpfs (where this process may mount one; as root in
/// CI containers usually not, and then this test says so and checks nothing).
#[test]
fn a_real_full_tmpfs() {
    let mount = tempfile::tempdir().unwrap();
    let size = "480k";
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
        .arg(mount.path())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        eprintln!(
            "a_real_full_tmpfs: no tmpfs could be mounted here; covered by the ENOSPC injection test"
        );
        return;
    }
    struct Unmount(PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(&self.0).status();
        }
    }
    let _unmount = Unmount(mount.path().to_path_buf());
    let root = mount.path().join("fusion");
    common::fixture::copy_tree(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/venvs/fusion"),
        &root,
    );
    let original = hash_tree(&root);
    // The space check sees the tmpfs is too small for the transaction and its margin.
    let out = verb("apply", &root, &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("not enough free space"), "{err}");
    assert_eq!(hash_tree(&root), original);
    // Past the check (told there is room), the disk really fills: fill it to the last few KB.
    let filler = mount.path().join("filler");
    let _ = std::fs::write(&filler, vec![0u8; 4 << 20]); // ENOSPC part-way is the point
    let keep = std::fs::metadata(&filler).map(|m| m.len()).unwrap_or(0);
    let _ = std::fs::write(&filler, vec![0u8; keep.saturating_sub(12 << 10) as usize]);
    let out = verb_env(
        "apply",
        &root,
        &[("GATEFIX_FAULT_FREE_BYTES", "1000000000")],
    );
    let err = stderr(&out);
    eprintln!("a_real_full_tmpfs: {err}");
    assert!(matches!(out.status.code(), Some(2 | 3)), "{err}");
    assert!(
        err.contains("No space left on device"),
        "a real ENOSPC: {err}"
    );
    assert!(temp_files(&root).is_empty(), "{err}");
    let _ = std::fs::remove_file(&filler);
    let status = stdout(&verb("status", &root, &[]));
    if status.contains("INTERRUPTED") {
        assert!(err.contains("run `gatefix revert`"), "{err}");
        assert_eq!(verb("revert", &root, &[]).status.code(), Some(0));
    }
    assert_eq!(hash_tree(&root), original, "{err}");
}

// ----- No silent skip -------------------------------------------------------------------

const GATE_FILE: &str = "import torch\n\ndef f():\n    if torch.cuda.get_device_capability()[0] == 10:\n        return 1\n";

fn audit_json(dir: &Path, extra: &[&str]) -> (serde_json::Value, String) {
    let mut args = vec![
        "audit".to_string(),
        dir.display().to_string(),
        "--format".into(),
        "json".into(),
        "--no-verdicts".into(),
        "--fail-on".into(),
        "none".into(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let out = gatefix_timed(&args, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    (serde_json::from_slice(&out.stdout).unwrap(), stderr(&out))
}

fn gate_files(doc: &serde_json::Value) -> Vec<String> {
    doc["gates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["file"].as_str().unwrap().to_string())
        .collect()
}

fn warning_for(doc: &serde_json::Value, file: &str) -> String {
    doc["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["file"] == file)
        .map(|w| w["message"].as_str().unwrap().to_string())
        .unwrap_or_else(|| panic!("no warning for {file}: {doc}"))
}

#[test]
fn odd_python_files_are_scanned_or_named_never_dropped() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    let pkg = dir.path().join("pkg");
    std::fs::create_dir_all(&pkg).unwrap();
    let odd = pkg.join(std::ffi::OsStr::from_bytes(b"\xff.py"));
    std::fs::write(&odd, GATE_FILE).unwrap();
    let mut big = GATE_FILE.to_string();
    big.push_str(&"x = 1\n".repeat(40_000)); // 240 KB
    std::fs::write(pkg.join("big.py"), &big).unwrap();
    let fifo = pkg.join("fifo.py");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    std::os::unix::fs::symlink("loop.py", pkg.join("loop.py")).unwrap();
    for (n, name) in [(46, "p46.py"), (199, "p199.py")] {
        let text = format!(
            "import torch\n\ndef f():\n    if {}torch.cuda.get_device_capability()[0] == 10{}:\n        return 1\n",
            "(".repeat(n),
            ")".repeat(n)
        );
        std::fs::write(pkg.join(name), text).unwrap();
    }
    let deep = format!(
        "import torch\n\ndef f():\n    if {}torch.cuda.get_device_capability()[0] == 10{}:\n        return 1\n",
        "x and (".repeat(60),
        ")".repeat(60)
    );
    std::fs::write(pkg.join("deep.py"), deep).unwrap();
    let unreadable = pkg.join("unreadable.py");
    std::fs::write(&unreadable, GATE_FILE).unwrap();
    std::fs::set_permissions(
        &unreadable,
        std::os::unix::fs::PermissionsExt::from_mode(0o000),
    )
    .unwrap();
    let root_reads_anything = std::fs::read(&unreadable).is_ok();
    // Bytes that are not source: with a NUL byte CPython refuses the file (skipped, said);
    // bytes that are not UTF-8 and hold no gate token are said too, not passed over.
    let random: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let mut with_nul = random.clone();
    with_nul[7] = 0;
    std::fs::write(pkg.join("random.py"), &with_nul).unwrap();
    let binary: Vec<u8> = random.iter().map(|&b| b.max(0x80)).collect();
    std::fs::write(pkg.join("binary.py"), &binary).unwrap();
    // A folder symlink that leaves the site is named, not silently skipped.
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("gated.py"), GATE_FILE).unwrap();
    std::os::unix::fs::symlink(outside.path(), pkg.join("elsewhere")).unwrap();

    for extra in [
        &["--max-file-size", "100K"][..],
        &["--max-file-size", "100K", "--exhaustive"][..],
    ] {
        let (doc, err) = audit_json(dir.path(), extra);
        let files = gate_files(&doc);
        for expected in ["pkg/\\xff.py", "pkg/p46.py", "pkg/p199.py"] {
            assert!(
                files.contains(&expected.to_string()),
                "{extra:?}: {expected} missing: {files:?}"
            );
        }
        assert!(!files.contains(&"pkg/big.py".to_string()), "{files:?}");
        assert!(
            warning_for(&doc, "pkg/big.py")
                .contains("over the 102400-byte limit (--max-file-size)")
        );
        assert!(warning_for(&doc, "pkg/fifo.py").contains("not a regular file"));
        assert!(warning_for(&doc, "pkg/loop.py").contains("cannot be resolved"));
        assert!(warning_for(&doc, "pkg/deep.py").contains("nested too deep"));
        assert!(warning_for(&doc, "pkg/\\xff.py").contains("not valid UTF-8"));
        assert!(
            warning_for(&doc, "pkg/random.py").contains("not source text (it holds NUL bytes)")
        );
        assert!(warning_for(&doc, "pkg/binary.py").contains("not valid UTF-8"));
        assert!(
            warning_for(&doc, "pkg/elsewhere").contains("folder symlink points outside the site"),
            "{doc}"
        );
        // Skipped: big.py, fifo.py, loop.py, random.py and the folder symlink (and
        // unreadable.py, unless root reads anything).
        let skipped = if root_reads_anything {
            5
        } else {
            assert!(warning_for(&doc, "pkg/unreadable.py").contains("cannot read"));
            6
        };
        assert!(
            err.contains(&format!("parsed, {skipped} skipped)")),
            "{err}"
        );
        assert!(err.contains("warning: pkg/big.py: skipped"), "{err}");
    }
    // Without the option, the 240 KB file is under the 16 MiB default and scanned.
    let (doc, _) = audit_json(dir.path(), &[]);
    assert!(gate_files(&doc).contains(&"pkg/big.py".to_string()));
}

#[test]
fn kernels_reads_a_cubin_whose_name_is_not_utf8() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    let sample = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata/fatbin-samples/cubin13/k.sm_100.cubin");
    std::fs::copy(
        &sample,
        dir.path().join(std::ffi::OsStr::from_bytes(b"\xff.cubin")),
    )
    .unwrap();
    let out = gatefix_timed(
        &[
            "kernels".into(),
            dir.path().display().to_string(),
            "--format".into(),
            "json".into(),
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let files = doc["files"].as_array().unwrap();
    assert_eq!(files.len(), 1, "{doc}");
    assert!(
        !files[0]["containers"].as_array().unwrap().is_empty(),
        "{doc}"
    );
}

// ----- False syntax errors ----------------------------------------------------------------

#[test]
fn valid_python_is_not_called_a_syntax_error_and_an_error_is() {
    let dir = tempfile::tempdir().unwrap();
    let text = "import torch\n\n\ndef backward(ctx, dq, dk):\n    if torch.cuda.get_device_capability()[0] == 10:\n        return dq, dk, *((None,) * 20)\n    if torch.cuda.get_device_capability()[0] == 9:\n        return dq, *(dk)\n    return dq\n\n\ndef broken():\n    x = = 1\n";
    std::fs::write(dir.path().join("interface.py"), text).unwrap();
    // CPython agrees that the two returns are valid (text only: nothing is imported or run).
    let valid =
        "def backward(ctx, dq, dk):\n    return dq, dk, *((None,) * 20)\n    return dq, *(dk)\n";
    if let Ok(out) = Command::new("python3")
        .args(["-c", "import ast,sys; ast.parse(sys.argv[1])", valid])
        .output()
    {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let (doc, err) = audit_json(dir.path(), &[]);
    let lines: Vec<u64> = doc["gates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["line"].as_u64().unwrap())
        .collect();
    assert_eq!(lines, vec![5, 7], "gates around the starred returns: {doc}");
    let warnings: Vec<String> = doc["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| {
            format!(
                "{}:{} {}",
                w["line"],
                w["column"],
                w["message"].as_str().unwrap()
            )
        })
        .collect();
    // The starred returns (which tree-sitter-python rejected) are valid, so say nothing; the
    // real error is one, where it is.
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].starts_with("13:") && warnings[0].contains("syntax error (1 region)"),
        "{warnings:?}"
    );
    assert!(
        !err.contains("interface.py:6") && !err.contains("interface.py:8"),
        "{err}"
    );
}

/// A patched file deleted after the apply: revert refuses, naming it and `--force`, and
/// changes nothing; `revert --force` writes it again and the whole site is back byte for
/// byte, that file included.
#[test]
fn a_deleted_patched_file_is_restored_by_revert_force() {
    let (_g, root) = venv_copy("fusion");
    let original = hash_tree(&root);
    assert_eq!(verb("apply", &root, &[]).status.code(), Some(0));
    let file = site(&root).join(COMMUNICATOR);
    assert!(file.is_file());
    std::fs::remove_file(&file).unwrap();
    let deleted = hash_tree(&root);
    let out = verb("revert", &root, &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains(COMMUNICATOR) && err.contains("deleted") && err.contains("--force"),
        "{err}"
    );
    assert_eq!(hash_tree(&root), deleted, "a refused revert writes nothing");
    let out = verb("revert", &root, &["--force"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        hash_tree(&root),
        original,
        "every file, the deleted one too"
    );
    let status = stdout(&verb("status", &root, &[]));
    assert!(!status.contains("INTERRUPTED"), "{status}");
}

/// A kill -9 while `--verify` runs: `status` says the transaction was never checked (exit
/// 1) until it is reverted; a check that finishes leaves no such record.
#[test]
fn a_kill_during_verify_is_reported_by_status() {
    let verify = ["--verify", "exit 0"];
    let (_g, root) = venv_copy("fusion");
    let original = hash_tree(&root);
    let out = verb("apply", &root, &verify);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = verb("status", &root, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(!stdout(&out).contains("NOT VERIFIED"));

    let (_g, root) = venv_copy("fusion");
    let killed = (1..=60).find(|at| {
        let (_g, probe) = venv_copy("fusion");
        let mut args = vec!["apply".to_string(), "sm_120".into()];
        args.extend(venv_args(&probe));
        args.extend(verify.iter().map(|s| s.to_string()));
        let out = gatefix_timed(&args, &[("GATEFIX_FAULT_AT", &at.to_string())]);
        killed_at(&out).as_deref() == Some("verify started")
    });
    let at = killed
        .expect("a fault point named `verify started`")
        .to_string();
    let mut args = vec!["apply".to_string(), "sm_120".into()];
    args.extend(venv_args(&root));
    args.extend(verify.iter().map(|s| s.to_string()));
    let out = gatefix_timed(&args, &[("GATEFIX_FAULT_AT", &at)]);
    assert_eq!(killed_at(&out).as_deref(), Some("verify started"));
    let out = verb("status", &root, &[]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("NOT VERIFIED: transaction 1's check `exit 0` started and never finished"),
        "{text}"
    );
    let out = verb("revert", &root, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(hash_tree(&root), original);
    let out = verb("status", &root, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(!stdout(&out).contains("NOT VERIFIED"));
}

/// Two applies at once on one site, one into the default ledger and one into another: the
/// site lock lets one write and refuses (or, once it is done, stops) the other, so `status`
/// always finds the transaction that patched the site and `revert` restores it byte for byte.
#[test]
fn two_applies_into_two_ledgers_at_once_never_hide_a_transaction() {
    for round in 0..100 {
        let (guard, root) = venv_copy("fusion");
        let original = hash_tree(&root);
        let other = guard.path().join("other.git");
        let spawn = |extra: &[&str]| {
            let mut command = Command::new(env!("CARGO_BIN_EXE_gatefix"));
            command
                .arg("apply")
                .arg("sm_120")
                .args(venv_args(&root))
                .args(extra)
                .env_remove("VIRTUAL_ENV")
                .env_remove("GATEFIX_LEDGER")
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            command.spawn().unwrap()
        };
        let first = spawn(&[]);
        let second = spawn(&["--ledger", other.to_str().unwrap()]);
        let outs = [
            first.wait_with_output().unwrap(),
            second.wait_with_output().unwrap(),
        ];
        let context = |i: usize| format!("round {round}, apply {i}: {}", stderr(&outs[i]));
        // One writes; the other is refused (locked, or another ledger's transaction in
        // effect), or, when it starts after the first is done, finds nothing to write.
        let applied = outs.iter().filter(|o| o.status.code() == Some(0)).count();
        assert!(applied >= 1, "{} / {}", context(0), context(1));
        for (i, out) in outs.iter().enumerate() {
            assert!(matches!(out.status.code(), Some(0 | 3)), "{}", context(i));
        }
        let status = verb("status", &root, &[]);
        let text = stdout(&status);
        assert!(
            text.contains("transaction 1") && !text.contains("no transaction in effect"),
            "round {round}: {text}"
        );
        let out = verb("revert", &root, &[]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "round {round}: {}",
            stderr(&out)
        );
        assert_eq!(hash_tree(&root), original, "round {round}: revert");
    }
}

/// A refused apply leaves no lock file and no empty ledger folder behind.
#[test]
fn a_refused_apply_leaves_no_lock_behind() {
    let (_g, root) = venv_copy("fusion");
    let out = verb_env("apply", &root, &[("GATEFIX_FAULT_FREE_BYTES", "4096")]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(!root.join(".gatefix").exists());
}

/// RECORD files gatefix cannot rely on are said, never silently lost: a binary RECORD is a
/// warning in the audit (its files get no distribution), and a RECORD listing a file twice
/// with two hashes makes `status --all` exit 1 naming the file, where a clean one passes.
#[test]
fn a_binary_or_contradictory_record_is_a_warning() {
    let (_g, root) = venv_copy("fusion");
    with_record_hashes(&root);
    assert_eq!(verb("status", &root, &["--all"]).status.code(), Some(0));

    // The same file twice, the second time with another hash.
    let record = site(&root).join("flashinfer_python-0.7.2.dist-info/RECORD");
    let text = std::fs::read_to_string(&record).unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with("flashinfer/jit/comm.py,"))
        .unwrap();
    let forged = format!("flashinfer/jit/comm.py,sha256={},1\n", b64url(&[7u8; 32]));
    std::fs::write(&record, format!("{text}{forged}")).unwrap();
    let out = verb("status", &root, &["--all"]);
    let report = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{report}");
    assert!(
        report.contains("RECORD CONFLICT: flashinfer/jit/comm.py: the RECORD of flashinfer-python 0.7.2 lists it more than once"),
        "{report}"
    );
    // Listed twice with the same hash is no conflict.
    std::fs::write(&record, format!("{text}{line}\n")).unwrap();
    assert_eq!(verb("status", &root, &["--all"]).status.code(), Some(0));

    // A RECORD that is not text.
    std::fs::write(&record, b"\x00\x01\x02binary\xff").unwrap();
    let (doc, err) = audit_json(&site(&root), &[]);
    let warning = warning_for(&doc, "flashinfer_python-0.7.2.dist-info/RECORD");
    assert!(
        warning.contains("is not text (it holds NUL bytes)"),
        "{warning}"
    );
    assert!(
        warning.contains("attributed to no distribution"),
        "{warning}"
    );
    assert!(
        err.contains("flashinfer_python-0.7.2.dist-info/RECORD"),
        "{err}"
    );
}

/// Expressions nested 100,000 deep (1.4 MB lines CPython itself refuses to compile): a
/// warning naming the file and line, the gate above them reported, never a stack overflow.
#[test]
fn a_100000_deep_expression_is_a_warning_not_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let pkg = dir.path().join("pkg");
    std::fs::create_dir_all(&pkg).unwrap();
    let gate = "torch.cuda.get_device_capability()[0] == 10";
    let n = 100_000;
    let chain = format!(
        "import torch\n\nx = 1 if {gate} else {}0\n",
        "1 if y else ".repeat(n)
    );
    std::fs::write(pkg.join("chain.py"), chain).unwrap();
    let nested = format!(
        "import torch\n\nx = {}1 if {gate} else 0{}\n",
        "[".repeat(n),
        "]".repeat(n)
    );
    std::fs::write(pkg.join("nested.py"), nested).unwrap();
    let (doc, err) = audit_json(dir.path(), &[]);
    for file in ["pkg/chain.py", "pkg/nested.py"] {
        assert!(
            warning_for(&doc, file).contains("nested too deep"),
            "{file}: {err}"
        );
    }
    let warning = doc["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["file"] == "pkg/chain.py")
        .unwrap();
    assert_eq!(warning["line"], 3);
    assert!(
        gate_files(&doc).contains(&"pkg/chain.py".to_string()),
        "the gate before the deep part: {doc}"
    );
}

/// After pip installs another release over a patched file, `revert` needs no `--force`
/// for a file at pip's bytes (it writes nothing there), and `--force` refuses to write the
/// old release's pre-image over a new-release file that was edited since.
#[test]
fn revert_after_another_release_never_writes_old_bytes_into_it() {
    let (_g, root) = venv_copy("fusion");
    with_record_hashes(&root);
    assert_eq!(verb("apply", &root, &[]).status.code(), Some(0));
    // "pip install sglang==0.5.6": a new METADATA version, new bytes, RECORD to match.
    let site = site(&root);
    let metadata = site.join("sglang-0.5.5.dist-info/METADATA");
    let text = std::fs::read_to_string(&metadata).unwrap();
    std::fs::write(&metadata, text.replace("Version: 0.5.5", "Version: 0.5.6")).unwrap();
    let communicator = site.join(COMMUNICATOR);
    let mut release = std::fs::read(&communicator).unwrap();
    release.extend_from_slice(b"\n# sglang 0.5.6\n");
    std::fs::write(&communicator, &release).unwrap();
    with_record_hashes(&root);
    let reinstalled = hash_tree(&root);

    // Edited by hand after the upgrade: --force would write 0.5.5 bytes. Refused.
    let mut edited = release.clone();
    edited.extend_from_slice(b"# a hand edit\n");
    std::fs::write(&communicator, &edited).unwrap();
    let before = hash_tree(&root);
    let out = verb("revert", &root, &["--force"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains(&format!(
            "{COMMUNICATOR} (sglang 0.5.6 now, 0.5.5 when patched)"
        )),
        "{err}"
    );
    assert_eq!(hash_tree(&root), before, "nothing written");

    // At pip's bytes of the new release: revert writes nothing to it, and needs no --force.
    std::fs::write(&communicator, &release).unwrap();
    let out = verb("revert", &root, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains(COMMUNICATOR), "{}", stdout(&out));
    assert_eq!(std::fs::read(&communicator).unwrap(), release);
    let after = hash_tree(&root);
    let changed: Vec<&String> = after
        .iter()
        .filter(|(file, hash)| reinstalled.get(*file) != Some(hash))
        .map(|(file, _)| file)
        .collect();
    // Only the other patched file of the transaction went back to its pre-image.
    assert!(
        changed.iter().all(|f| f.ends_with("server_args.py")),
        "{changed:?}"
    );
}
