//! gatefix's cache of audit results: output byte-identical with and without it, a result
//! never reused for a site whose bytes changed, and the failure matrix (a damaged entry, an
//! entry of another version, two audits at once, a cache that cannot be written, a full
//! disk, a cache folder inside the site).

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::fixture::{copy_tree, run_env, stderr, stdout};

const HIT: &str = "read from gatefix's cache";
const FORMATS: [&str; 5] = ["json", "human", "sarif", "github", "html"];

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata/sites")
        .join(name)
}

/// A copy of a fixture site and a cache folder, both temporary.
struct Setup {
    _tmp: tempfile::TempDir,
    site: PathBuf,
    cache: PathBuf,
}

fn setup(name: &str) -> Setup {
    let tmp = tempfile::tempdir().unwrap();
    let site = tmp.path().join("site");
    copy_tree(&fixture(name), &site);
    let cache = tmp.path().join("cache");
    Setup {
        _tmp: tmp,
        site,
        cache,
    }
}

fn audit(site: &Path, cache: &Path, format: &str, env: &[(&str, &str)]) -> Output {
    let args = [
        "audit".to_string(),
        site.display().to_string(),
        "--format".into(),
        format.into(),
        "--fail-on".into(),
        "none".into(),
        "-t".into(),
        "sm_120".into(),
        "-t".into(),
        "sm_100".into(),
        "--cache-dir".into(),
        cache.display().to_string(),
    ];
    let out = run_env(args, env);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    out
}

fn uncached(site: &Path, format: &str) -> Output {
    let out = run_env(
        [
            "audit",
            &site.display().to_string(),
            "--format",
            format,
            "--fail-on",
            "none",
            "-t",
            "sm_120",
            "-t",
            "sm_100",
            "--no-cache",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    out
}

fn hit(out: &Output) -> bool {
    stderr(out).contains(HIT)
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = walk(dir);
    out.sort();
    out
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .flat_map(|e| {
            let path = e.path();
            if path.is_dir() {
                walk(&path)
            } else {
                vec![path]
            }
        })
        .collect()
}

fn results(cache: &Path) -> Vec<PathBuf> {
    files_under(&cache.join("audit/results"))
}

#[test]
fn output_is_byte_identical_with_and_without_the_cache() {
    for name in ["verdicts", "nokernel", "mixed"] {
        let s = setup(name);
        for format in FORMATS {
            let plain = uncached(&s.site, format);
            let first = audit(&s.site, &s.cache, format, &[]);
            let second = audit(&s.site, &s.cache, format, &[]);
            // One analysis serves every format: only the very first run misses.
            assert_eq!(
                hit(&first),
                format != "json",
                "{name} {format}: {}",
                stderr(&first)
            );
            assert!(hit(&second), "{name} {format}: {}", stderr(&second));
            assert_eq!(plain.stdout, first.stdout, "{name} {format}: miss differs");
            assert_eq!(plain.stdout, second.stdout, "{name} {format}: hit differs");
        }
        assert_eq!(
            results(&s.cache).len(),
            1,
            "{name}: one result for one site"
        );
    }
}

#[test]
fn the_warnings_of_the_scan_are_said_again_from_the_cache() {
    let s = setup("verdicts");
    let elsewhere = s.site.parent().unwrap().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, s.site.join("linked")).unwrap();
    let plain = uncached(&s.site, "json");
    audit(&s.site, &s.cache, "json", &[]);
    let again = audit(&s.site, &s.cache, "json", &[]);
    assert!(hit(&again));
    let warnings = |out: &Output| -> Vec<String> {
        stderr(out)
            .lines()
            .filter(|l| l.starts_with("gatefix: warning:"))
            .map(str::to_string)
            .collect()
    };
    assert!(!warnings(&plain).is_empty(), "{}", stderr(&plain));
    assert_eq!(warnings(&plain), warnings(&again));
}

#[test]
fn an_edited_site_is_audited_again_and_a_touched_one_is_not() {
    let s = setup("verdicts");
    let first = audit(&s.site, &s.cache, "json", &[]);
    let backends = s.site.join("sglang/srt/layers/backends.py");
    // The same bytes under a new inode and new times: still the same site.
    let text = std::fs::read_to_string(&backends).unwrap();
    std::fs::write(s.site.join("tmp"), &text).unwrap();
    std::fs::rename(s.site.join("tmp"), &backends).unwrap();
    let touched = audit(&s.site, &s.cache, "json", &[]);
    assert!(hit(&touched), "{}", stderr(&touched));
    assert_eq!(touched.stdout, first.stdout);
    // One edited byte in a gate: the result is computed again and tells the new truth.
    let edited = text.replacen("if is_sm100_supported():", "if is_sm120_supported():", 1);
    assert_ne!(edited, text, "the fixture gates on sm100");
    std::fs::write(&backends, &edited).unwrap();
    let after = audit(&s.site, &s.cache, "json", &[]);
    assert!(!hit(&after), "{}", stderr(&after));
    assert_ne!(after.stdout, first.stdout);
    assert_eq!(after.stdout, uncached(&s.site, "json").stdout);
    // A new file, then its removal: a miss, then the first result again.
    std::fs::write(s.site.join("sglang/new.py"), "x = 1\n").unwrap();
    assert!(!hit(&audit(&s.site, &s.cache, "json", &[])));
    std::fs::remove_file(s.site.join("sglang/new.py")).unwrap();
    let back = audit(&s.site, &s.cache, "json", &[]);
    assert!(hit(&back), "{}", stderr(&back));
    assert_eq!(back.stdout, after.stdout);
}

#[test]
fn other_targets_rules_or_options_are_other_results() {
    let s = setup("verdicts");
    audit(&s.site, &s.cache, "json", &[]);
    let cache = s.cache.display().to_string();
    let site = s.site.display().to_string();
    let base = ["audit", &site, "--format", "json", "--fail-on", "none"];
    let runs: [&[&str]; 4] = [
        &["-t", "sm_120"],
        &["-t", "sm_120", "-t", "sm_100", "--cuda", "12.4"],
        &["-t", "sm_120", "-t", "sm_100", "--no-verdicts"],
        &[
            "-t",
            "sm_120",
            "-t",
            "sm_100",
            "--rules",
            concat!(env!("CARGO_MANIFEST_DIR"), "/rules"),
        ],
    ];
    for extra in runs {
        let mut args: Vec<&str> = base.to_vec();
        args.extend_from_slice(extra);
        let mut plain_args = args.clone();
        plain_args.push("--no-cache");
        args.extend(["--cache-dir", &cache]);
        let out = run_env(&args, &[]);
        assert!(!hit(&out), "{extra:?}: {}", stderr(&out));
        assert_eq!(out.stdout, run_env(&plain_args, &[]).stdout, "{extra:?}");
        let again = run_env(&args, &[]);
        assert!(hit(&again), "{extra:?}: {}", stderr(&again));
        assert_eq!(again.stdout, out.stdout, "{extra:?}");
    }
    assert_eq!(results(&s.cache).len(), 5);
}

/// How a test damages a cache entry's bytes.
type Damage = fn(Vec<u8>) -> Vec<u8>;

/// Every result entry of the cache rewritten by `edit`.
fn rewrite_results(cache: &Path, edit: impl Fn(Vec<u8>) -> Vec<u8>) {
    let entries = results(cache);
    assert_eq!(entries.len(), 1);
    for path in entries {
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, edit(bytes)).unwrap();
    }
}

#[test]
fn a_damaged_or_foreign_entry_is_said_ignored_and_rebuilt() {
    let s = setup("verdicts");
    let first = audit(&s.site, &s.cache, "json", &[]);
    let damages: [(&str, Damage); 4] = [
        ("torn", |b| b[..b.len() / 2].to_vec()),
        ("garbage", |_| b"not an entry".to_vec()),
        ("another version", |b| {
            let text = String::from_utf8(b).unwrap();
            text.replacen(
                "gatefix cached result 1 ",
                "gatefix cached result 1 0.0.1 ",
                1,
            )
            .into_bytes()
        }),
        ("valid JSON of another shape", |b| {
            let newline = b.iter().position(|&c| c == b'\n').unwrap();
            [&b[..=newline], b"{\"gates\": 3}"].concat()
        }),
    ];
    for (what, damage) in damages {
        rewrite_results(&s.cache, damage);
        let out = audit(&s.site, &s.cache, "json", &[]);
        assert!(!hit(&out), "{what}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("ignored the cache entry"),
            "{what}: {}",
            stderr(&out)
        );
        assert_eq!(out.stdout, first.stdout, "{what}");
        let rebuilt = audit(&s.site, &s.cache, "json", &[]);
        assert!(hit(&rebuilt), "{what}: {}", stderr(&rebuilt));
        assert_eq!(rebuilt.stdout, first.stdout, "{what}");
    }
    // A damaged memo of file hashes only costs reading the files again.
    for memo in files_under(&s.cache.join("audit/files")) {
        std::fs::write(memo, "gatefix file hashes 1\nzz\tf\tx\n").unwrap();
    }
    let out = audit(&s.site, &s.cache, "json", &[]);
    assert!(hit(&out), "{}", stderr(&out));
}

#[test]
fn two_audits_at_once_agree_and_leave_one_sound_entry() {
    let s = setup("verdicts");
    let expected = uncached(&s.site, "json").stdout;
    let spawn = || {
        std::process::Command::new(common::gatefix_bin())
            .args(["audit", &s.site.display().to_string(), "--format", "json"])
            .args(["--fail-on", "none", "-t", "sm_120", "-t", "sm_100"])
            .args(["--cache-dir", &s.cache.display().to_string()])
            .env_remove("VIRTUAL_ENV")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    for _ in 0..3 {
        let children: Vec<_> = (0..4).map(|_| spawn()).collect();
        for child in children {
            let out = child.wait_with_output().unwrap();
            assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
            assert_eq!(out.stdout, expected);
            assert!(!stderr(&out).contains("warning"), "{}", stderr(&out));
        }
    }
    let leftovers: Vec<_> = files_under(&s.cache)
        .into_iter()
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    assert!(hit(&audit(&s.site, &s.cache, "json", &[])));
}

#[test]
fn a_cache_that_cannot_be_written_costs_speed_not_the_audit() {
    let s = setup("verdicts");
    let expected = uncached(&s.site, "json").stdout;
    // A file where the cache folder should be: nothing can be created under it.
    std::fs::write(&s.cache, "in the way").unwrap();
    for _ in 0..2 {
        let out = audit(&s.site, &s.cache, "json", &[]);
        assert_eq!(out.stdout, expected);
        let said = stderr(&out).matches("cannot write gatefix's cache").count();
        assert_eq!(said, 1, "said once per run: {}", stderr(&out));
        assert!(!hit(&out));
    }
}

#[test]
fn a_read_only_cache_folder_is_said_once() {
    use std::os::unix::fs::PermissionsExt;
    let s = setup("verdicts");
    std::fs::create_dir_all(&s.cache).unwrap();
    std::fs::set_permissions(&s.cache, std::fs::Permissions::from_mode(0o555)).unwrap();
    if std::fs::write(s.cache.join("probe"), "").is_ok() {
        // Root ignores the mode; the file-in-the-way test covers the same path.
        eprintln!("skipped: this user can write a read-only folder");
        return;
    }
    let expected = uncached(&s.site, "json").stdout;
    let out = audit(&s.site, &s.cache, "json", &[]);
    std::fs::set_permissions(&s.cache, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(out.stdout, expected);
    assert_eq!(
        stderr(&out).matches("cannot write gatefix's cache").count(),
        1,
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_full_disk_leaves_no_partial_entry() {
    let s = setup("verdicts");
    let expected = uncached(&s.site, "json").stdout;
    let full = [("GATEFIX_FAULT_CACHE_ENOSPC", "1")];
    let out = audit(&s.site, &s.cache, "json", &full);
    assert_eq!(out.stdout, expected);
    let err = stderr(&out);
    assert_eq!(
        err.matches("cannot write gatefix's cache").count(),
        1,
        "{err}"
    );
    assert!(err.contains("No space left on device"), "{err}");
    let kept: Vec<_> = files_under(&s.cache)
        .into_iter()
        .filter(|p| p.file_name().unwrap() != "CACHEDIR.TAG")
        .collect();
    assert!(kept.is_empty(), "{kept:?}");
    // Space again: cached, then read.
    assert!(!hit(&audit(&s.site, &s.cache, "json", &[])));
    assert!(hit(&audit(&s.site, &s.cache, "json", &[])));
}

#[test]
fn no_cache_writes_nothing_and_a_cache_in_the_site_is_refused() {
    let s = setup("verdicts");
    let out = audit(&s.site, &s.cache, "json", &[("GATEFIX_NO_CACHE", "1")]);
    assert!(!hit(&out));
    assert!(!s.cache.exists());
    let before = common::fixture::hash_tree(&s.site);
    let inside = s.site.join(".cache");
    let out = run_env(
        [
            "audit",
            &s.site.display().to_string(),
            "--cache-dir",
            &inside.display().to_string(),
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("inside the audited site"),
        "{}",
        stderr(&out)
    );
    let inside = inside.display().to_string();
    let out = run_env(
        ["audit", &s.site.display().to_string(), "--fail-on", "none"],
        &[("GATEFIX_CACHE_DIR", &inside)],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("inside the audited site"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        common::fixture::hash_tree(&s.site),
        before,
        "nothing written in the site"
    );
}

#[test]
fn cache_clean_removes_what_gatefix_keeps_and_nothing_else() {
    let s = setup("verdicts");
    audit(&s.site, &s.cache, "json", &[]);
    std::fs::create_dir_all(s.cache.join("wheels")).unwrap();
    std::fs::write(s.cache.join("wheels/w.whl"), "wheel").unwrap();
    let cache = s.cache.display().to_string();
    let dir = run_env(["cache", "dir", "--cache-dir", &cache], &[]);
    assert_eq!(String::from_utf8_lossy(&dir.stdout).trim(), cache);
    let from_env = run_env(["cache", "dir"], &[("GATEFIX_CACHE_DIR", &cache)]);
    assert_eq!(String::from_utf8_lossy(&from_env.stdout).trim(), cache);
    // A result, the site's file hashes, and the executable's hash once it is 3 s old.
    let kept = files_under(&s.cache.join("audit")).len();
    assert!((2..=3).contains(&kept), "{kept}");
    let out = run_env(["cache", "clean", "--cache-dir", &cache], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let said = format!("removed {kept} file(s)");
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with(&said),
        "{}",
        stdout(&out)
    );
    assert!(!s.cache.join("audit").exists());
    assert!(s.cache.join("wheels/w.whl").exists());
    assert!(!hit(&audit(&s.site, &s.cache, "json", &[])));
}

#[test]
fn explain_and_show_read_the_result_of_an_audit() {
    let s = setup("verdicts");
    let site = s.site.display().to_string();
    let cache = s.cache.display().to_string();
    let message = "ValueError: needs SM90 or SM10X";
    let explain = |cache_args: &[&str]| {
        let mut args = vec!["explain", "--site", &site, message, "-t", "sm_120"];
        args.extend(["--cuda", "12.8"]);
        args.extend_from_slice(cache_args);
        let out = run_env(&args, &[]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        out
    };
    let plain = explain(&["--no-cache"]);
    let audit = [
        "audit",
        &site,
        "-t",
        "sm_120",
        "--cuda",
        "12.8",
        "--fail-on",
        "none",
    ];
    let out = run_env(
        [&audit[..], &["--format", "json", "--cache-dir", &cache]].concat(),
        &[],
    );
    assert!(!hit(&out), "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let cached = explain(&["--cache-dir", &cache]);
    assert!(hit(&cached), "{}", stderr(&cached));
    assert_eq!(plain.stdout, cached.stdout);
    let id = doc["gates"][0]["id"].as_str().unwrap();
    let show = |cache_args: &[&str]| {
        let mut args = vec!["show", id, &site, "-t", "sm_120", "--cuda", "12.8"];
        args.extend_from_slice(cache_args);
        run_env(&args, &[])
    };
    let plain = show(&["--no-cache"]);
    assert_eq!(plain.status.code(), Some(0), "{}", stderr(&plain));
    assert_eq!(plain.stdout, show(&["--cache-dir", &cache]).stdout);
    assert_eq!(
        results(&s.cache).len(),
        1,
        "audit, explain and show share one result"
    );
}

#[test]
fn apply_without_synthesis_reads_the_jit_sources_of_an_audit() {
    let (tmp, venv) = common::fixture::venv_copy("fusion");
    let cache = tmp.path().join("cache").display().to_string();
    let venv_arg = venv.display().to_string();
    let apply = |extra: &[&str]| {
        let mut args = vec!["apply", "sm_120", "--venv", &venv_arg];
        args.extend_from_slice(extra);
        run_env(&args, &[])
    };
    let plain = apply(&["--dry-run", "--no-cache"]);
    assert!(!plain.stdout.is_empty(), "{}", stderr(&plain));
    // No audit yet: nothing to read, and apply computes what it needs as before.
    let before_audit = apply(&["--dry-run", "--cache-dir", &cache]);
    assert!(
        !stderr(&before_audit).contains(HIT),
        "{}",
        stderr(&before_audit)
    );
    let audit = run_env(
        [
            "audit",
            &venv_arg,
            "-t",
            "sm_120",
            "--fail-on",
            "none",
            "--cache-dir",
            &cache,
        ],
        &[],
    );
    assert_eq!(audit.status.code(), Some(0), "{}", stderr(&audit));
    let cached = apply(&["--dry-run", "--cache-dir", &cache]);
    assert!(stderr(&cached).contains(HIT), "{}", stderr(&cached));
    assert_eq!(cached.status.code(), plain.status.code());
    assert_eq!(cached.stdout, plain.stdout);
    // The transaction written from the cached sources is the one written without them.
    let site = venv.join(common::fixture::FUSION_SITE);
    let written = apply(&["--cache-dir", &cache]);
    assert!(stderr(&written).contains(HIT), "{}", stderr(&written));
    let with_cache = common::fixture::hash_tree(&site);
    let revert = run_env(["revert", "--venv", &venv_arg], &[]);
    assert_eq!(revert.status.code(), Some(0), "{}", stderr(&revert));
    let without = apply(&["--no-cache"]);
    assert_eq!(without.status.code(), written.status.code());
    assert_eq!(common::fixture::hash_tree(&site), with_cache);
}

#[test]
fn kernels_reads_the_jit_sources_of_an_audit() {
    let s = setup("verdicts");
    let site = s.site.display().to_string();
    let cache = s.cache.display().to_string();
    let kernels = |extra: &[&str]| {
        let mut args = vec!["kernels", &site, "--format", "json"];
        args.extend_from_slice(extra);
        let out = run_env(&args, &[]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        out
    };
    let plain = kernels(&["--no-cache"]);
    let audit = run_env(
        ["audit", &site, "--fail-on", "none", "--cache-dir", &cache],
        &[],
    );
    assert_eq!(audit.status.code(), Some(0), "{}", stderr(&audit));
    let cached = kernels(&["--cache-dir", &cache]);
    assert!(hit(&cached), "{}", stderr(&cached));
    assert_eq!(cached.stdout, plain.stdout);
    let doc: serde_json::Value = serde_json::from_slice(&cached.stdout).unwrap();
    assert!(
        doc.to_string().contains("supported_major_versions"),
        "the fixture's JIT lists are in the report: {doc}"
    );
}

/// The build is named by its executable's bytes: the same build installed again elsewhere
/// (a fresh venv in each CI job) reads the results of the first, a different build does not.
#[test]
fn the_same_build_installed_again_keeps_its_results_and_another_build_does_not() {
    use std::os::unix::fs::PermissionsExt;
    let s = setup("verdicts");
    let bytes = std::fs::read(common::gatefix_bin()).unwrap();
    let install = |name: &str, bytes: &[u8]| {
        let dir = s.cache.parent().unwrap().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let exe = dir.join("gatefix");
        std::fs::write(&exe, bytes).unwrap();
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        exe
    };
    let first = install("first", &bytes);
    let again = install("again", &bytes);
    // Bytes after the end of an ELF file change nothing it does, but make another file.
    let other = install("other", &[&bytes[..], b"another build"].concat());
    let audit_with = |exe: &Path| {
        let out = std::process::Command::new(exe)
            .args(["audit", &s.site.display().to_string(), "--format", "json"])
            .args([
                "--fail-on",
                "none",
                "--cache-dir",
                &s.cache.display().to_string(),
            ])
            .env_remove("VIRTUAL_ENV")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        out
    };
    let miss = audit_with(&first);
    assert!(!hit(&miss), "{}", stderr(&miss));
    let reinstalled = audit_with(&again);
    assert!(hit(&reinstalled), "{}", stderr(&reinstalled));
    assert_eq!(reinstalled.stdout, miss.stdout);
    let rebuilt = audit_with(&other);
    assert!(!hit(&rebuilt), "{}", stderr(&rebuilt));
    assert_eq!(rebuilt.stdout, miss.stdout);
}
