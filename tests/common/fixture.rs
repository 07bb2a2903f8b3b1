//! Fixture venvs copied into temp folders, byte hashes of whole trees, and gatefix runs that
//! return their output whatever the exit code.
#![allow(dead_code)] // each test crate uses its own subset

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use sha2::{Digest, Sha256};

/// The site-packages of the fixture venv `testdata/venvs/fusion`, relative to a venv root.
pub const FUSION_SITE: &str = "lib/python3.11/site-packages";

/// Copies `testdata/venvs/<name>` into a fresh temp folder; returns (guard, venv root).
pub fn venv_copy(name: &str) -> (tempfile::TempDir, PathBuf) {
    let temp = tempfile::tempdir().expect("temp dir");
    let root = temp.path().join(name);
    copy_tree(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("testdata/venvs")
            .join(name),
        &root,
    );
    (temp, root)
}

pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read fixture") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// Every file under `root` (the ledger folder `.gatefix` excluded) → sha256 of its bytes.
pub fn hash_tree(root: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    hash_into(root, root, &mut out);
    out
}

fn hash_into(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
    for entry in std::fs::read_dir(dir).expect("read dir") {
        let entry = entry.expect("entry");
        let path = entry.path();
        if entry.file_name() == ".gatefix" {
            continue;
        }
        if entry.file_type().expect("type").is_dir() {
            hash_into(root, &path, out);
        } else {
            let bytes = std::fs::read(&path).expect("read");
            let relative = path
                .strip_prefix(root)
                .expect("inside")
                .display()
                .to_string();
            out.insert(relative, format!("{:x}", Sha256::digest(&bytes)));
        }
    }
}

/// Runs gatefix with extra environment variables; never asserts on the exit code.
pub fn run_env<I, S>(args: I, env: &[(&str, &str)]) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut command = Command::new(super::gatefix_bin());
    command.args(args).env_remove("VIRTUAL_ENV");
    for (key, value) in env {
        command.env(key, value);
    }
    command.output().expect("the gatefix binary runs")
}

pub fn run<I, S>(args: I) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    run_env(args, &[])
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Shorthand for `--venv <root>` argument pairs.
pub fn venv_args(root: &Path) -> Vec<String> {
    vec!["--venv".into(), root.display().to_string()]
}

pub fn wheels_dir() -> PathBuf {
    std::env::var_os("GATEFIX_WHEELS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/gatefix/wheels")
        })
}

/// The wheel files whose names start with the given prefixes, one per prefix, in the order
/// given (the wheels come from `ci/fetch-wheels.sh`; `GATEFIX_WHEELS` names their folder).
pub fn wheel_files(prefixes: &[&str]) -> Vec<PathBuf> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(wheels_dir())
        .expect("wheels are fetched by ci/fetch-wheels.sh")
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    prefixes
        .iter()
        .map(|prefix| {
            entries
                .iter()
                .find(|p| p.file_name().unwrap().to_string_lossy().starts_with(prefix))
                .unwrap_or_else(|| panic!("wheel {prefix}* missing; run ci/fetch-wheels.sh"))
                .clone()
        })
        .collect()
}

/// Unzips the wheels whose file names start with the given prefixes into one temp site.
pub fn wheel_site(prefixes: &[&str]) -> tempfile::TempDir {
    let site = tempfile::tempdir().unwrap();
    for wheel in wheel_files(prefixes) {
        let status = Command::new("python3")
            .args(["-m", "zipfile", "-e"])
            .arg(&wheel)
            .arg(site.path())
            .status()
            .unwrap();
        assert!(status.success(), "unzip {}", wheel.display());
    }
    site
}

/// The package `old` of an unzipped site as a fork publishes it under another name: its
/// folder and its distribution renamed, and every whole word `old` of the site's Python
/// (imports, module paths, strings) and of its METADATA (`Name: sglang_fork`,
/// `flashinfer_fork-python`), RECORD and top_level.txt rewritten to `new`, and RECORD's hashes
/// those of the fork's files; C++ sources, headers and data stay where the package keeps
/// them, below the new folder.
pub fn renamed_fork(site: &Path, old: &str, new: &str) {
    fn rename_words(text: &str, old: &str, new: &str) -> String {
        let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_';
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(at) = rest.find(old) {
            let before = rest[..at].chars().next_back();
            let after = rest[at + old.len()..].chars().next();
            out.push_str(&rest[..at]);
            if before.is_some_and(is_word) || after.is_some_and(is_word) {
                out.push_str(old);
            } else {
                out.push_str(new);
            }
            rest = &rest[at + old.len()..];
        }
        out.push_str(rest);
        out
    }
    std::fs::rename(site.join(old), site.join(new)).unwrap();
    // Its distribution too: `sglang-0.5.23.dist-info` (a `flashinfer_python-...` folder
    // keeps its name, as RECORD's lines of it do).
    for entry in std::fs::read_dir(site).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if let Some(rest) = name.strip_prefix(&format!("{old}-"))
            && name.ends_with(".dist-info")
        {
            std::fs::rename(site.join(&name), site.join(format!("{new}-{rest}"))).unwrap();
        }
    }
    let mut rewritten = 0;
    for entry in walkdir::WalkDir::new(site) {
        let path = entry.unwrap().into_path();
        let is_python = path.extension().is_some_and(|e| e == "py");
        let is_record = path
            .file_name()
            .is_some_and(|n| n == "RECORD" || n == "top_level.txt" || n == "METADATA");
        if !(is_python || is_record) {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let renamed = rename_words(&text, old, new);
        if renamed != text {
            std::fs::write(&path, renamed).unwrap();
            rewritten += 1;
        }
    }
    assert!(rewritten > 100, "only {rewritten} files name {old}");
    // The fork's RECORDs hold its own files' hashes, as pip writes them for its wheel.
    for entry in walkdir::WalkDir::new(site).max_depth(2) {
        let path = entry.unwrap().into_path();
        if path.file_name().is_none_or(|n| n != "RECORD") {
            continue;
        }
        let record = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<String> = record
            .lines()
            .map(|line| {
                let mut fields = line.splitn(3, ',');
                let (Some(file), Some(hash), Some(_)) =
                    (fields.next(), fields.next(), fields.next())
                else {
                    return line.to_string();
                };
                match std::fs::read(site.join(file)) {
                    Ok(bytes) if hash.starts_with("sha256=") => format!(
                        "{file},sha256={},{}",
                        urlsafe_base64(&Sha256::digest(&bytes)),
                        bytes.len()
                    ),
                    _ => line.to_string(),
                }
            })
            .collect();
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    }
}

/// Base64 with the URL-safe alphabet and no padding: RECORD's hash encoding (PEP 376).
fn urlsafe_base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
        }
    }
    out
}
