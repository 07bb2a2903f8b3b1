//! What a site's files hold, as one hash: the content key of a cached audit.
//!
//! Every file under the site root is named by its path and the SHA-256 of its bytes (a
//! symlink by where it points), the way git's index names a tree. Hashing 600 MB of wheels
//! on every run would cost more than the audit saves, so, as git does, the hashes of the
//! last run are kept beside the stat data they were computed under (`FileMemo`): a file whose
//! size, times, inode and mode are unchanged is not read again. A changed stat means a read,
//! not a miss: `touch` on a file costs the hash of that one file, and the key stays the
//! same because the bytes do.
//!
//! A file written in the same clock tick as it was hashed could change without its stat
//! changing (git's "racy clean" case), so a hash is kept for the next run only when the
//! file's last change is older than [`RACY_SECONDS`] at the time of the walk; a younger one
//! is hashed again next time.
//!
//! What the audit never reads is left out: `__pycache__` folders (bytecode Python writes
//! whenever it imports) and the site's own `.gatefix` folder (the ledger's place).

use std::collections::HashMap;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{Duration, SystemTime};

use rayon::prelude::*;
use sha2::{Digest, Sha256};

/// A file changed less than this long before the walk may still change within the same
/// timestamp tick (coarse kernel clocks, 2 s on FAT): its hash is not reused.
pub const RACY_SECONDS: u64 = 3;

/// The stat data a kept hash is valid under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    pub kind: Kind,
    pub size: u64,
    pub mtime_ns: i128,
    pub ctime_ns: i128,
    pub ino: u64,
    pub dev: u64,
    pub mode: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    File,
    Symlink,
    /// A fifo, socket or device: never read, named by its kind alone.
    Other,
    /// An entry the walk could not read: named by the error, so the result that warned about
    /// it is only reused while it stays unreadable.
    Unreadable,
}

impl Kind {
    fn letter(self) -> u8 {
        match self {
            Kind::File => b'f',
            Kind::Symlink => b'l',
            Kind::Other => b'o',
            Kind::Unreadable => b'e',
        }
    }

    fn from_letter(letter: &[u8]) -> Option<Kind> {
        Some(match letter {
            b"f" => Kind::File,
            b"l" => Kind::Symlink,
            b"o" => Kind::Other,
            b"e" => Kind::Unreadable,
            _ => return None,
        })
    }
}

/// One entry under the root.
#[derive(Debug, Clone)]
pub struct Record {
    /// Relative to the root, as the file system spells it.
    pub path: Vec<u8>,
    pub stat: Option<Stat>,
    pub hash: [u8; 32],
    /// Old enough at the walk for its hash to be kept for the next run.
    pub settled: bool,
}

/// The site's files, hashed.
#[derive(Debug)]
pub struct Fingerprint {
    /// Sorted by path.
    pub records: Vec<Record>,
    /// How many files were read and hashed this time (the others reused a kept hash).
    pub hashed: usize,
}

impl Fingerprint {
    /// Walks `root` and names every file by its content, reading only those whose stat
    /// differs from `memo`.
    pub fn of_site(root: &Path, memo: &FileMemo) -> Fingerprint {
        let walk_started = SystemTime::now();
        let entries = entries(root);
        let settled_before = walk_started
            .checked_sub(Duration::from_secs(RACY_SECONDS))
            .unwrap_or(SystemTime::UNIX_EPOCH);
        let settled_before_ns = nanos(settled_before);
        let mut records: Vec<(Record, bool)> = entries
            .into_par_iter()
            .map(|entry| record(root, entry, memo, settled_before_ns))
            .collect();
        records.sort_unstable_by(|a, b| a.0.path.cmp(&b.0.path));
        let hashed = records.iter().filter(|(_, read)| *read).count();
        Fingerprint {
            records: records.into_iter().map(|(r, _)| r).collect(),
            hashed,
        }
    }

    /// The content of the whole tree in one hash: paths and file hashes, no stat data.
    pub fn content_hash(&self) -> [u8; 32] {
        let mut hash = Sha256::new();
        for record in &self.records {
            hash.update((record.path.len() as u64).to_le_bytes());
            hash.update(&record.path);
            hash.update([record.stat.map_or(b'e', |s| s.kind.letter())]);
            hash.update(record.hash);
        }
        hash.finalize().into()
    }
}

/// An entry found by the walk: its relative path, or the error that hid it.
enum Entry {
    Found(Vec<u8>),
    Unreadable(Vec<u8>, String),
}

/// Every entry under `root` but folders, unsorted; never through a symlink.
fn entries(root: &Path) -> Vec<Entry> {
    let mut out = Vec::new();
    let walk = walkdir::WalkDir::new(root)
        .follow_links(false)
        .min_depth(1)
        .into_iter()
        .filter_entry(|e| {
            let name = e.file_name();
            let is_dir = e.file_type().is_dir();
            !(is_dir && (name == "__pycache__" || (e.depth() == 1 && name == ".gatefix")))
        });
    for item in walk {
        match item {
            Ok(entry) if entry.file_type().is_dir() => {}
            Ok(entry) => out.push(Entry::Found(relative(root, entry.path()))),
            Err(err) => {
                let path = err.path().map_or_else(Vec::new, |p| relative(root, p));
                out.push(Entry::Unreadable(path, err.to_string()));
            }
        }
    }
    out
}

fn relative(root: &Path, path: &Path) -> Vec<u8> {
    path.strip_prefix(root)
        .unwrap_or(path)
        .as_os_str()
        .as_bytes()
        .to_vec()
}

fn nanos(time: SystemTime) -> i128 {
    match time.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(after) => after.as_nanos() as i128,
        Err(before) => -(before.duration().as_nanos() as i128),
    }
}

/// One entry's record, and whether its bytes were read for it.
fn record(root: &Path, entry: Entry, memo: &FileMemo, settled_before_ns: i128) -> (Record, bool) {
    let (path, stat) = match entry {
        Entry::Unreadable(path, why) => return (unreadable(path, &why), false),
        Entry::Found(path) => {
            let full = root.join(std::ffi::OsStr::from_bytes(&path));
            match std::fs::symlink_metadata(&full) {
                Ok(meta) => (path, stat_of(&meta)),
                Err(err) => return (unreadable(path, &err.to_string()), false),
            }
        }
    };
    let settled = stat.mtime_ns < settled_before_ns && stat.ctime_ns < settled_before_ns;
    if let Some(hash) = memo.hash(&path, &stat) {
        let record = Record {
            path,
            stat: Some(stat),
            hash,
            settled,
        };
        return (record, false);
    }
    let full = root.join(std::ffi::OsStr::from_bytes(&path));
    let hashed = match stat.kind {
        Kind::File => std::fs::read(&full).map(|bytes| Sha256::digest(&bytes).into()),
        Kind::Symlink => Ok(symlink_hash(&full)),
        Kind::Other | Kind::Unreadable => Ok(Sha256::digest([stat.kind.letter()]).into()),
    };
    match hashed {
        Ok(hash) => {
            let record = Record {
                path,
                stat: Some(stat),
                hash,
                settled,
            };
            (record, true)
        }
        Err(err) => (unreadable(path, &err.to_string()), true),
    }
}

fn unreadable(path: Vec<u8>, why: &str) -> Record {
    Record {
        path,
        stat: None,
        hash: Sha256::digest(why.as_bytes()).into(),
        settled: false,
    }
}

/// A symlink by where it points, what is there, and where that resolves: the scan follows
/// one that stays in the site (whose target is hashed on its own) and warns about one that
/// leaves it, naming the resolved target.
fn symlink_hash(path: &Path) -> [u8; 32] {
    let mut hash = Sha256::new();
    if let Ok(target) = std::fs::read_link(path) {
        hash.update(target.as_os_str().as_bytes());
    }
    hash.update([0]);
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => hash.update(b"d"),
        Ok(meta) if meta.is_file() => hash.update(b"f"),
        Ok(_) => hash.update(b"o"),
        Err(_) => hash.update(b"-"),
    }
    if let Ok(resolved) = path.canonicalize() {
        hash.update(resolved.as_os_str().as_bytes());
    }
    hash.finalize().into()
}

fn stat_of(meta: &std::fs::Metadata) -> Stat {
    let file_type = meta.file_type();
    let kind = if file_type.is_file() {
        Kind::File
    } else if file_type.is_symlink() {
        Kind::Symlink
    } else {
        Kind::Other
    };
    Stat {
        kind,
        size: meta.size(),
        mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
        ctime_ns: i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec()),
        ino: meta.ino(),
        dev: meta.dev(),
        mode: meta.mode(),
    }
}

/// The hashes an earlier run computed, by path, with the stat each is valid under.
#[derive(Debug, Default)]
pub struct FileMemo {
    by_path: HashMap<Vec<u8>, (Stat, [u8; 32])>,
}

/// The memo file's first line.
const MEMO_HEADER: &[u8] = b"gatefix file hashes 1\n";

impl FileMemo {
    fn hash(&self, path: &[u8], stat: &Stat) -> Option<[u8; 32]> {
        let (kept, hash) = self.by_path.get(path)?;
        (kept == stat).then_some(*hash)
    }

    /// The settled records of `fingerprint`: what a memo written now would hold.
    pub fn settled_in(fingerprint: &Fingerprint) -> FileMemo {
        let by_path = fingerprint
            .records
            .iter()
            .filter(|r| r.settled)
            .filter_map(|r| Some((r.path.clone(), (r.stat?, r.hash))))
            .collect();
        FileMemo { by_path }
    }

    /// Reads a memo written by [`FileMemo::text`]; a damaged line is skipped (its file is
    /// hashed again), a damaged header drops the whole memo.
    pub fn parse(bytes: &[u8]) -> FileMemo {
        let mut by_path = HashMap::new();
        let Some(body) = bytes.strip_prefix(MEMO_HEADER) else {
            return FileMemo { by_path };
        };
        for line in body.split(|&b| b == b'\n') {
            if let Some((path, stat, hash)) = parse_line(line) {
                by_path.insert(path, (stat, hash));
            }
        }
        FileMemo { by_path }
    }

    /// The settled records of `fingerprint`, one line each: `hash kind size mtime ctime ino
    /// dev mode path`, tab-separated. A path holding a tab or a newline is left out (its file
    /// is hashed every run).
    pub fn text(fingerprint: &Fingerprint) -> Vec<u8> {
        let mut out = MEMO_HEADER.to_vec();
        for record in &fingerprint.records {
            let Some(stat) = record.stat.filter(|_| record.settled) else {
                continue;
            };
            if record.path.iter().any(|&b| b == b'\t' || b == b'\n') {
                continue;
            }
            out.extend_from_slice(hex(&record.hash).as_bytes());
            out.extend_from_slice(
                format!(
                    "\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t",
                    stat.kind.letter() as char,
                    stat.size,
                    stat.mtime_ns,
                    stat.ctime_ns,
                    stat.ino,
                    stat.dev,
                    stat.mode
                )
                .as_bytes(),
            );
            out.extend_from_slice(&record.path);
            out.push(b'\n');
        }
        out
    }
}

fn parse_line(line: &[u8]) -> Option<(Vec<u8>, Stat, [u8; 32])> {
    let mut fields = line.splitn(9, |&b| b == b'\t');
    let hash = unhex(fields.next()?)?;
    let kind = Kind::from_letter(fields.next()?)?;
    let number = |what: &mut dyn Iterator<Item = &[u8]>| -> Option<i128> {
        std::str::from_utf8(what.next()?).ok()?.parse().ok()
    };
    let size = u64::try_from(number(&mut fields)?).ok()?;
    let mtime_ns = number(&mut fields)?;
    let ctime_ns = number(&mut fields)?;
    let ino = u64::try_from(number(&mut fields)?).ok()?;
    let dev = u64::try_from(number(&mut fields)?).ok()?;
    let mode = u32::try_from(number(&mut fields)?).ok()?;
    let path = fields.next().filter(|p| !p.is_empty())?.to_vec();
    let stat = Stat {
        kind,
        size,
        mtime_ns,
        ctime_ns,
        ino,
        dev,
        mode,
    };
    Some((path, stat, hash))
}

pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::new(), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

fn unhex(text: &[u8]) -> Option<[u8; 32]> {
    if text.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, pair) in text.chunks(2).enumerate() {
        let pair = std::str::from_utf8(pair).ok()?;
        out[i] = u8::from_str_radix(pair, 16).ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn key(root: &Path, memo: &FileMemo) -> ([u8; 32], usize) {
        let fingerprint = Fingerprint::of_site(root, memo);
        (fingerprint.content_hash(), fingerprint.hashed)
    }

    #[test]
    fn the_key_follows_content_not_stat() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        write(&dir.join("pkg/a.py"), "x = 1\n");
        write(&dir.join("pkg/b.so"), "ELF");
        let (first, hashed) = key(&dir, &FileMemo::default());
        assert_eq!(hashed, 2);
        // Same bytes written again (new mtime and ctime): same key.
        write(&dir.join("pkg/a.py"), "x = 1\n");
        assert_eq!(key(&dir, &FileMemo::default()).0, first);
        // New bytes, a new file, a removed file, a renamed file: each a new key.
        write(&dir.join("pkg/a.py"), "x = 2\n");
        let edited = key(&dir, &FileMemo::default()).0;
        assert_ne!(edited, first);
        write(&dir.join("pkg/c.py"), "");
        let added = key(&dir, &FileMemo::default()).0;
        assert_ne!(added, edited);
        std::fs::rename(dir.join("pkg/c.py"), dir.join("pkg/d.py")).unwrap();
        assert_ne!(key(&dir, &FileMemo::default()).0, added);
        std::fs::remove_file(dir.join("pkg/d.py")).unwrap();
        assert_eq!(key(&dir, &FileMemo::default()).0, edited);
    }

    #[test]
    fn bytecode_and_the_ledger_place_do_not_count() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        write(&dir.join("pkg/a.py"), "x = 1\n");
        let before = key(&dir, &FileMemo::default()).0;
        write(&dir.join("pkg/__pycache__/a.cpython-311.pyc"), "bytecode");
        write(&dir.join(".gatefix/ledger.git/HEAD"), "ref");
        assert_eq!(key(&dir, &FileMemo::default()).0, before);
        // A `.gatefix` below the root is ordinary site content.
        write(&dir.join("pkg/.gatefix/x.py"), "");
        assert_ne!(key(&dir, &FileMemo::default()).0, before);
    }

    #[test]
    fn a_kept_hash_is_reused_only_under_the_same_stat() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        write(&dir.join("a.py"), "x = 1\n");
        let fingerprint = Fingerprint::of_site(&dir, &FileMemo::default());
        // Just written: too young to keep.
        assert!(!fingerprint.records[0].settled);
        assert_eq!(FileMemo::text(&fingerprint), MEMO_HEADER);
        // A memo that claims other bytes under the file's current stat is believed (that is
        // what a memo is for), so the key changes: proof the hash was not read again.
        let mut record = fingerprint.records[0].clone();
        record.hash = [7; 32];
        record.settled = true;
        let forged = Fingerprint {
            records: vec![record],
            hashed: 0,
        };
        let memo = FileMemo::parse(&FileMemo::text(&forged));
        let (with_memo, hashed) = key(&dir, &memo);
        assert_eq!(hashed, 0);
        assert_ne!(with_memo, fingerprint.content_hash());
        // Any change of stat and the file is read again: the same bytes under a new inode
        // (a write in the same clock tick could keep the times).
        write(&dir.join("a.tmp"), "x = 1\n");
        std::fs::rename(dir.join("a.tmp"), dir.join("a.py")).unwrap();
        let (rehashed, hashed) = key(&dir, &memo);
        assert_eq!(hashed, 1);
        assert_eq!(rehashed, fingerprint.content_hash());
    }

    #[test]
    fn a_damaged_memo_is_not_trusted() {
        assert!(FileMemo::parse(b"garbage").by_path.is_empty());
        let text = [MEMO_HEADER, b"zz\tf\t1\t2\t3\t4\t5\t6\ta.py\n"].concat();
        assert!(FileMemo::parse(&text).by_path.is_empty());
        let good = format!("{}\tf\t1\t2\t3\t4\t5\t6\ta.py\n", "ab".repeat(32));
        let text = [MEMO_HEADER, good.as_bytes(), b"\tf\n"].concat();
        assert_eq!(FileMemo::parse(&text).by_path.len(), 1);
    }
}
