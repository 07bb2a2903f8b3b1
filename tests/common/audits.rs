//! One audit of a pristine real-wheel site per argument set, shared by every test and every
//! real-wheel suite that asks for it.
//!
//! An audit of sglang 0.5.23 + flashinfer 0.7.2 takes 15-40 s on a 2-core machine, and the
//! real-wheel suites ask for the same pristine sites again and again (before an apply, for
//! the survey, for the verdict floors). `audit_wheels` runs the binary once per (binary,
//! wheels, arguments) and keeps the JSON document in memory for the tests of one test binary
//! and on disk, under cargo's target tmp folder, for the suites that follow in other test
//! binaries. The key holds the binary's size and modification time, so a rebuilt gatefix
//! never reads a document an older one wrote.
//!
//! Only pristine sites are cached: an audit after an apply runs the binary on that site.
#![allow(dead_code)] // each test crate uses its own subset

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::fixture::{wheel_files, wheel_site};

/// The targets every shared audit reports, so that suites asking about different targets
/// still share one document: sm_90, sm_100 and sm_103 to see that nothing moves there, sm_120
/// and sm_121 for the targets the tool is for.
pub const TARGETS: [&str; 5] = ["sm_90", "sm_100", "sm_103", "sm_120", "sm_121"];

/// `gatefix audit SITE --target ... --cuda 12.8 --format json --fail-on none` over the site
/// that the wheels named by `prefixes` make, unzipped fresh; one run per binary and wheels.
pub fn audit_wheels(prefixes: &[&str]) -> Arc<Value> {
    let mut args: Vec<String> = Vec::new();
    for target in TARGETS {
        args.extend(["--target".to_string(), target.to_string()]);
    }
    args.extend(
        ["--cuda", "12.8", "--format", "json", "--fail-on", "none"]
            .iter()
            .map(|s| s.to_string()),
    );
    audit_wheels_with(prefixes, &args)
}

/// `audit SITE` with the shared audits' targets and options, uncached: each run computes its
/// own result (gatefix's cache would hand a second run of one site the first's).
pub fn uncached_audit_args(site: &Path) -> Vec<String> {
    let mut args = vec!["audit".to_string(), site.display().to_string()];
    for target in TARGETS {
        args.extend(["--target".to_string(), target.to_string()]);
    }
    args.extend(
        [
            "--cuda",
            "12.8",
            "--format",
            "json",
            "--fail-on",
            "none",
            "--no-cache",
        ]
        .map(String::from),
    );
    args
}

/// As `audit_wheels`, with the arguments after the site given in full.
pub fn audit_wheels_with(prefixes: &[&str], args: &[String]) -> Arc<Value> {
    let key = cache_key(prefixes, args);
    // One cell per key: tests of one binary run on threads, and the second asker of a key
    // waits for the first one's run instead of starting its own.
    static CELLS: OnceLock<Mutex<HashMap<String, Cell>>> = OnceLock::new();
    let cell = CELLS
        .get_or_init(Default::default)
        .lock()
        .unwrap()
        .entry(key.clone())
        .or_default()
        .clone();
    cell.get_or_init(|| Arc::new(load_or_run(&key, prefixes, args)))
        .clone()
}

/// A document computed once, by whichever test asks first.
type Cell = Arc<OnceLock<Arc<Value>>>;

fn load_or_run(key: &str, prefixes: &[&str], args: &[String]) -> Value {
    let path = cache_dir().join(format!("{key}.json"));
    if let Ok(bytes) = std::fs::read(&path)
        && let Ok(doc) = serde_json::from_slice(&bytes)
    {
        return doc;
    }
    let site = wheel_site(prefixes);
    let mut full: Vec<std::ffi::OsString> = vec!["audit".into(), site.path().into()];
    full.extend(args.iter().map(Into::into));
    let stdout = super::gatefix_stdout(&full);
    let doc: Value = serde_json::from_slice(&stdout).expect("stdout is one JSON document");
    store(&path, &stdout);
    doc
}

/// Writes the document whole or not at all: a temp file renamed into place, so a reader in
/// a later suite never sees half of one.
fn store(path: &Path, bytes: &[u8]) {
    let dir = path.parent().unwrap();
    if std::fs::create_dir_all(dir).is_err() {
        return; // the cache is a speed-up; without it every suite audits for itself
    }
    let Ok(mut temp) = tempfile::NamedTempFile::new_in(dir) else {
        return;
    };
    if temp.write_all(bytes).is_ok() {
        let _ = temp.persist(path);
    }
}

/// The folder of this binary's documents; those of other builds are removed when it is
/// first made, so the cache holds one build's documents.
fn cache_dir() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("real-audits");
        let dir = root.join(binary_identity());
        if !dir.exists()
            && let Ok(entries) = std::fs::read_dir(&root)
        {
            for entry in entries.flatten() {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
        dir
    })
    .clone()
}

/// The gatefix binary as built now: its path, size and modification time.
fn binary_identity() -> String {
    let binary = super::gatefix_bin();
    let meta = std::fs::metadata(&binary).expect("the gatefix binary");
    let modified = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    let mut hash = Sha256::new();
    hash.update(binary.as_os_str().as_encoded_bytes());
    hash.update(meta.len().to_le_bytes());
    hash.update(modified.to_le_bytes());
    format!("{:x}", hash.finalize())[..16].to_string()
}

/// The wheels' file names and sizes and the arguments: what the document depends on besides
/// the binary.
fn cache_key(prefixes: &[&str], args: &[String]) -> String {
    let mut hash = Sha256::new();
    for wheel in wheel_files(prefixes) {
        hash.update(wheel.file_name().unwrap().as_encoded_bytes());
        hash.update([0]);
        let size = std::fs::metadata(&wheel).map_or(0, |m| m.len());
        hash.update(size.to_le_bytes());
    }
    for arg in args {
        hash.update(arg.as_bytes());
        hash.update([0]);
    }
    format!("{:x}", hash.finalize())[..24].to_string()
}
