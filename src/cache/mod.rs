//! gatefix's own cache: an audit of a site whose files have not changed since the last audit
//! (same bytes, same gatefix build, same rules and options) reads that audit's result instead
//! of scanning again.
//!
//! Where: `--cache-dir DIR`, else `$GATEFIX_CACHE_DIR`, else `$XDG_CACHE_HOME/gatefix`, else
//! `~/.cache/gatefix`; never inside the audited site (gatefix writes nothing there but
//! patches). Off with `--no-cache` or `GATEFIX_NO_CACHE=1`. Everything gatefix keeps is
//! under `<dir>/audit`, which `gatefix cache clean` removes:
//!
//! - `files/<site>`: the content hash of each file of a site, with the stat data it was
//!   computed under, so that an unchanged file is not read again (`fingerprint`);
//! - `results/<key>`: one result per key, the key being the SHA-256 of the site's content,
//!   the gatefix build (its version and executable's SHA-256), the rules and the options;
//! - `executable`: the executable's hash with the stat it was computed under.
//!
//! Safe with concurrent runs: every file is written whole to a temporary name and renamed,
//! so a reader sees an old entry or a new one, never half of one. An entry is checked before
//! it is used (its header names the format, the gatefix version and the key it was written
//! for, and its body must parse whole); one that fails is ignored, said so, and rebuilt.
//! Bounded: past [`MAX_RESULT_BYTES`] or [`MAX_ENTRIES`] the least recently used entries go.
//! A cache that cannot be written (read-only, full disk) does not stop the audit: it runs
//! uncached and says so once.

pub mod fingerprint;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use serde::Serialize;
use serde::de::DeserializeOwned;
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::path::{absolute, real};
use fingerprint::{FileMemo, Fingerprint, hex};

pub const DIR_ENV: &str = "GATEFIX_CACHE_DIR";
pub const OFF_ENV: &str = "GATEFIX_NO_CACHE";
/// Makes every cache write fail as a full disk would (the cache tests' full disk).
const FULL_DISK_ENV: &str = "GATEFIX_FAULT_CACHE_ENOSPC";

/// Results kept at most, in bytes (an audit of sglang with flashinfer is about 9 MB)...
pub const MAX_RESULT_BYTES: u64 = 512 << 20;
/// ...and in entries, per folder (results; file memos, one per site).
pub const MAX_ENTRIES: usize = 64;
/// A temporary file this old was left by a killed run.
const STALE_TEMP: Duration = Duration::from_secs(3600);

/// The first line of a result entry, before the version and the key.
const RESULT_HEADER: &str = "gatefix cached result 1";

/// The cache directory tag (bford.info/cachedir), so backup tools skip the folder.
const CACHEDIR_TAG: &str = "Signature: 8a477f597d28d172789f06886806bc55\n\
                            # This file is a cache directory tag created by gatefix.\n\
                            # For information about cache directory tags see https://bford.info/cachedir/\n";

/// How a command was told to use the cache.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// `--cache-dir`.
    pub dir: Option<PathBuf>,
    /// `--no-cache`.
    pub off: bool,
}

/// The cache folder the settings and the environment name, and how it was named; `None`
/// when the cache is off or no place is known (no `$HOME`).
pub fn location(settings: &Settings) -> Option<(PathBuf, &'static str)> {
    let off = settings.off
        || std::env::var_os(OFF_ENV)
            .is_some_and(|v| !v.is_empty() && v != "0" && v != "false" && v != "no");
    if off {
        return None;
    }
    if let Some(dir) = &settings.dir {
        return Some((absolute(dir), "--cache-dir"));
    }
    let env = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    if let Some(dir) = env(DIR_ENV) {
        return Some((dir, "$GATEFIX_CACHE_DIR"));
    }
    if let Some(dir) = env("XDG_CACHE_HOME") {
        return Some((dir.join("gatefix"), "$XDG_CACHE_HOME"));
    }
    env("HOME").map(|home| (home.join(".cache").join("gatefix"), "$HOME"))
}

/// The cache of audit results, for one run.
#[derive(Debug)]
pub struct Cache {
    /// `<cache dir>/audit`.
    dir: PathBuf,
    /// Whether a failed write was already said.
    warned: AtomicBool,
}

/// A site's files and everything else a result depends on, hashed.
#[derive(Debug)]
pub struct Key {
    pub hash: [u8; 32],
    site_root: PathBuf,
    fingerprint: Fingerprint,
}

impl Key {
    /// How many files had to be read for the key (the others were known by their stat).
    pub fn files_read(&self) -> usize {
        self.fingerprint.hashed
    }
}

impl Cache {
    /// The cache for a run on `site_root`, or `None` when it is off. A place inside the site
    /// is refused: an error when `--cache-dir` named it, a warning (and no cache) when the
    /// environment did.
    pub fn open(settings: &Settings, site_root: &Path) -> Result<Option<Cache>> {
        let Some((dir, source)) = location(settings) else {
            return Ok(None);
        };
        let site = real(&absolute(site_root));
        if real(&absolute(&dir)).starts_with(&site) {
            let message = format!(
                "the cache folder {} (from {source}) is inside the audited site {}; gatefix writes \
                 nothing there but patches",
                dir.display(),
                site_root.display()
            );
            if source == "--cache-dir" {
                return Err(Error::input(format!(
                    "{message}: name a folder outside it, or pass --no-cache"
                )));
            }
            eprintln!("gatefix: warning: {message}; this run is not cached");
            return Ok(None);
        }
        Ok(Some(Cache {
            dir: dir.join("audit"),
            warned: AtomicBool::new(false),
        }))
    }

    /// Whether an earlier run kept the file hashes of this site. Without them no result can
    /// be found for it (the key needs every file read), so a caller may compute the key
    /// beside its own work instead of before it.
    pub fn knows(&self, site_root: &Path) -> bool {
        self.memo_path(site_root).is_file()
    }

    /// Hashes the site's files (reading only those changed since the memo of the last run)
    /// and `context`, everything else the result depends on. Keeps the new memo.
    pub fn key(&self, site_root: &Path, context: &[u8]) -> Key {
        let memo_path = self.memo_path(site_root);
        // The memo is read while the site is walked: each is about a third of the key's time.
        let (memo, walk) = rayon::join(
            || {
                std::fs::read(&memo_path)
                    .map(|bytes| FileMemo::parse(&bytes))
                    .unwrap_or_default()
            },
            || fingerprint::Walk::of(site_root),
        );
        let fingerprint = Fingerprint::of_walk(site_root, walk, &memo);
        if fingerprint.hashed > 0 {
            self.write(&memo_path, &FileMemo::text(&fingerprint));
        }
        let mut hash = Sha256::new();
        hash.update(RESULT_HEADER.as_bytes());
        hash.update(self.executable_identity());
        hash.update(site_root.as_os_str().as_encoded_bytes());
        hash.update([0]);
        hash.update((context.len() as u64).to_le_bytes());
        hash.update(context);
        hash.update(fingerprint.content_hash());
        Key {
            hash: hash.finalize().into(),
            site_root: site_root.to_path_buf(),
            fingerprint,
        }
    }

    /// The result kept under `key`, if there is a sound one. A damaged or foreign entry is
    /// said and ignored (the caller computes the result again and overwrites it).
    pub fn get<T: DeserializeOwned>(&self, key: &Key) -> Option<T> {
        let path = self.result_path(key);
        let bytes = std::fs::read(&path).ok()?;
        match parse_result(&bytes, key) {
            Ok(value) => {
                // Recently used: the last to go when the cache is trimmed.
                if let Ok(file) = std::fs::File::options().append(true).open(&path) {
                    let _ = file.set_modified(SystemTime::now());
                }
                Some(value)
            }
            Err(why) => {
                eprintln!(
                    "gatefix: warning: ignored the cache entry {} ({why}); it is computed again",
                    path.display()
                );
                None
            }
        }
    }

    /// Keeps `value` under `key`, unless a file of the site changed while the result was
    /// computed (its stat moved, or a file young enough to change unseen has new bytes):
    /// the result might then mix two states of the site.
    pub fn put<T: Serialize>(&self, key: &Key, value: &T) {
        if !unchanged_since(key) {
            eprintln!(
                "gatefix: note: files of {} changed during the audit; its result is not cached",
                key.site_root.display()
            );
            return;
        }
        let mut bytes =
            format!("{RESULT_HEADER} {} {}\n", crate::VERSION, hex(&key.hash)).into_bytes();
        if serde_json::to_writer(&mut bytes, value).is_err() {
            return;
        }
        let path = self.result_path(key);
        if self.write(&path, &bytes) {
            trim(&self.dir.join("results"), MAX_RESULT_BYTES, MAX_ENTRIES);
            trim(&self.dir.join("files"), u64::MAX, MAX_ENTRIES);
        }
    }

    /// What identifies the running gatefix build: its version and the SHA-256 of its
    /// executable, so that a rebuilt binary never reads another's results while the same
    /// build installed again (a fresh venv in each CI job) keeps them. The hash is kept with
    /// the executable's stat (`<dir>/audit/executable`), like a site file's: read again only
    /// when the stat moved.
    fn executable_identity(&self) -> Vec<u8> {
        let mut out = crate::VERSION.as_bytes().to_vec();
        out.push(0);
        match self.executable_hash() {
            Some(hash) => out.extend_from_slice(&hash),
            // Unknown: a key no other process can compute, so nothing is shared.
            None => out.extend_from_slice(
                format!("{:?} {}", SystemTime::now(), std::process::id()).as_bytes(),
            ),
        }
        out
    }

    fn executable_hash(&self) -> Option<[u8; 32]> {
        let exe = std::env::current_exe().ok()?;
        let stat = fingerprint::stat_of(&std::fs::metadata(&exe).ok()?);
        let path = exe.as_os_str().as_encoded_bytes().to_vec();
        let memo_path = self.dir.join("executable");
        let memo = std::fs::read(&memo_path)
            .map(|bytes| FileMemo::parse(&bytes))
            .unwrap_or_default();
        if let Some(hash) = memo.hash(&path, &stat) {
            return Some(hash);
        }
        let hash: [u8; 32] = Sha256::digest(std::fs::read(&exe).ok()?).into();
        let record = fingerprint::Record {
            path,
            stat: Some(stat),
            hash,
            settled: fingerprint::settled(&stat, SystemTime::now()),
        };
        if record.settled {
            let kept = Fingerprint {
                records: vec![record],
                hashed: 1,
            };
            self.write(&memo_path, &FileMemo::text(&kept));
        }
        Some(hash)
    }

    fn memo_path(&self, site_root: &Path) -> PathBuf {
        let site = Sha256::digest(site_root.as_os_str().as_encoded_bytes());
        self.dir.join("files").join(hex(&site[..16]))
    }

    fn result_path(&self, key: &Key) -> PathBuf {
        self.dir.join("results").join(hex(&key.hash))
    }

    /// Writes `path` whole or not at all; a failure is said once per run.
    fn write(&self, path: &Path, bytes: &[u8]) -> bool {
        match write_atomic(path, bytes) {
            Ok(()) => true,
            Err(err) => {
                if !self.warned.swap(true, Ordering::Relaxed) {
                    eprintln!(
                        "gatefix: warning: cannot write gatefix's cache in {}: {err}; this run \
                         is not cached, and the next one will not be faster (--cache-dir DIR \
                         names another place, --no-cache turns the cache off)",
                        self.dir.display()
                    );
                }
                false
            }
        }
    }
}

/// The result in an entry's bytes, if the entry is whole and was written for `key` by this
/// gatefix.
fn parse_result<T: DeserializeOwned>(bytes: &[u8], key: &Key) -> std::result::Result<T, String> {
    let newline = memchr::memchr(b'\n', bytes).ok_or("no header line")?;
    let expected = format!("{RESULT_HEADER} {} {}", crate::VERSION, hex(&key.hash));
    if &bytes[..newline] != expected.as_bytes() {
        return Err("written by another gatefix or for another key".to_string());
    }
    let mut reader = serde_json::Deserializer::from_slice(&bytes[newline + 1..]);
    // Predicates nest deeper than serde_json's default limit of 128; their size is bounded
    // where they are built, and this runs on gatefix's 64 MiB stack.
    reader.disable_recursion_limit();
    let value = T::deserialize(&mut reader).map_err(|e| format!("unreadable: {e}"))?;
    reader.end().map_err(|e| format!("unreadable: {e}"))?;
    Ok(value)
}

/// Whether the site still holds what the key was computed from: the same stat for every
/// file, and the same bytes for those young enough to have changed within a clock tick.
fn unchanged_since(key: &Key) -> bool {
    let now = Fingerprint::of_site(&key.site_root, &FileMemo::settled_in(&key.fingerprint));
    now.records.len() == key.fingerprint.records.len()
        && now
            .records
            .iter()
            .zip(&key.fingerprint.records)
            .all(|(a, b)| a.path == b.path && a.stat == b.stat && a.hash == b.hash)
}

/// Writes to a temporary name in the same folder and renames it over `path`.
fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    static SEQUENCE: AtomicUsize = AtomicUsize::new(0);
    let folder = path.parent().expect("cache paths have a folder");
    std::fs::create_dir_all(folder)?;
    if let Some(top) = folder.parent().and_then(Path::parent) {
        let tag = top.join("CACHEDIR.TAG");
        if !tag.exists() {
            let _ = std::fs::write(tag, CACHEDIR_TAG);
        }
    }
    let temp = folder.join(format!(
        ".tmp-{}-{}",
        std::process::id(),
        SEQUENCE.fetch_add(1, Ordering::Relaxed)
    ));
    let written = (|| {
        let mut file = std::fs::File::create(&temp)?;
        if std::env::var_os(FULL_DISK_ENV).is_some() {
            file.write_all(&bytes[..bytes.len() / 2])?;
            return Err(std::io::Error::from_raw_os_error(libc::ENOSPC));
        }
        file.write_all(bytes)?;
        drop(file);
        std::fs::rename(&temp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}

/// Removes the least recently used entries of `folder` past `max_bytes` or `max_entries`,
/// and temporary files of killed runs.
fn trim(folder: &Path, max_bytes: u64, max_entries: usize) {
    let Ok(listing) = std::fs::read_dir(folder) else {
        return;
    };
    let now = SystemTime::now();
    let mut entries: Vec<(SystemTime, u64, PathBuf)> = Vec::new();
    for entry in listing.flatten() {
        let Ok(meta) = entry.metadata() else { continue };
        let modified = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
        if entry.file_name().to_string_lossy().starts_with(".tmp-") {
            if now.duration_since(modified).unwrap_or_default() > STALE_TEMP {
                let _ = std::fs::remove_file(entry.path());
            }
            continue;
        }
        entries.push((modified, meta.len(), entry.path()));
    }
    // Newest first; keep while under both limits.
    entries.sort_by_key(|e| std::cmp::Reverse(e.0));
    let mut total = 0u64;
    for (index, (_, size, path)) in entries.iter().enumerate() {
        total = total.saturating_add(*size);
        if index >= max_entries || total > max_bytes {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// What `gatefix cache clean` removed.
#[derive(Debug, Default)]
pub struct Removed {
    pub files: usize,
    pub bytes: u64,
}

/// Removes everything gatefix keeps under `dir` (its `audit` folder; other things there,
/// such as downloaded wheels, stay).
pub fn clean(dir: &Path) -> std::io::Result<Removed> {
    let ours = dir.join("audit");
    let mut removed = Removed::default();
    if !ours.exists() {
        return Ok(removed);
    }
    for entry in walkdir::WalkDir::new(&ours).follow_links(false) {
        let entry = entry.map_err(std::io::Error::other)?;
        if !entry.file_type().is_dir() {
            removed.files += 1;
            removed.bytes += entry.metadata().map(|m| m.len()).unwrap_or(0);
        }
    }
    std::fs::remove_dir_all(&ours)?;
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `count` entries of 10 bytes, entry `i` used `count - i` minutes ago.
    fn entries(folder: &Path, count: usize) {
        std::fs::create_dir_all(folder).unwrap();
        let now = SystemTime::now();
        for i in 0..count {
            let path = folder.join(format!("e{i:03}"));
            std::fs::write(&path, "0123456789").unwrap();
            let file = std::fs::File::options().append(true).open(&path).unwrap();
            file.set_modified(now - Duration::from_secs(60 * (count - i) as u64))
                .unwrap();
        }
    }

    fn names(folder: &Path) -> Vec<String> {
        let mut out: Vec<String> = std::fs::read_dir(folder)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        out.sort();
        out
    }

    #[test]
    fn trimming_keeps_the_most_recently_used_within_both_limits() {
        let tmp = tempfile::tempdir().unwrap();
        let folder = tmp.path().join("results");
        entries(&folder, 70);
        trim(&folder, u64::MAX, 64);
        let kept = names(&folder);
        assert_eq!(kept.len(), 64);
        assert_eq!(kept[0], "e006", "the six least recent went");
        trim(&folder, 100, 64);
        assert_eq!(
            names(&folder),
            (60..70).map(|i| format!("e{i:03}")).collect::<Vec<_>>()
        );
    }

    #[test]
    fn trimming_removes_the_temporary_files_of_killed_runs_only_when_old() {
        let tmp = tempfile::tempdir().unwrap();
        let folder = tmp.path();
        std::fs::write(folder.join(".tmp-1-0"), "old").unwrap();
        std::fs::write(folder.join(".tmp-2-0"), "a write in progress").unwrap();
        let old = std::fs::File::options()
            .append(true)
            .open(folder.join(".tmp-1-0"))
            .unwrap();
        old.set_modified(SystemTime::now() - 2 * STALE_TEMP)
            .unwrap();
        trim(folder, u64::MAX, MAX_ENTRIES);
        assert_eq!(names(folder), [".tmp-2-0"]);
    }
}
