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
        Fingerprint::of_walk(root, Walk::of(root), memo)
    }

    /// [`Fingerprint::of_site`] from a walk already made (so that the memo can be read
    /// meanwhile).
    pub fn of_walk(root: &Path, walk: Walk, memo: &FileMemo) -> Fingerprint {
        let settled_before_ns = racy_limit(walk.started);
        let mut records: Vec<(Record, bool)> = walk
            .entries
            .into_par_iter()
            .map(|(path, stat)| record(root, path, stat, memo, settled_before_ns))
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

/// Every entry under a root but folders, with its stat data or the error that hid it;
/// unsorted.
pub struct Walk {
    started: SystemTime,
    entries: Vec<(Vec<u8>, Result<Stat, String>)>,
}

impl Walk {
    /// Folders are read in parallel, and each entry is stat'ed through its folder's handle
    /// (`fstatat`): a path lookup from the root for each of 16,000 files was a third of the
    /// walk. Never through a symlink.
    pub fn of(root: &Path) -> Walk {
        Walk {
            started: SystemTime::now(),
            entries: folder(root, &[]),
        }
    }
}

/// The entries under `root/relative`, subfolders included.
fn folder(root: &Path, relative: &[u8]) -> Vec<(Vec<u8>, Result<Stat, String>)> {
    let mut out = Vec::new();
    let listing = match std::fs::read_dir(root.join(std::ffi::OsStr::from_bytes(relative))) {
        Ok(listing) => listing,
        Err(err) => return vec![(relative.to_vec(), Err(err.to_string()))],
    };
    let mut subfolders = Vec::new();
    for entry in listing {
        let entry = match entry {
            Ok(entry) => entry,
            Err(err) => {
                out.push((relative.to_vec(), Err(err.to_string())));
                continue;
            }
        };
        let name = entry.file_name();
        let mut path = relative.to_vec();
        if !path.is_empty() {
            path.push(b'/');
        }
        path.extend_from_slice(name.as_bytes());
        match entry.file_type() {
            Ok(kind) if kind.is_dir() => {
                let skipped = name == "__pycache__" || (relative.is_empty() && name == ".gatefix");
                if !skipped {
                    subfolders.push(path);
                }
            }
            Ok(_) => out.push((
                path,
                entry
                    .metadata()
                    .map(|m| stat_of(&m))
                    .map_err(|e| e.to_string()),
            )),
            Err(err) => out.push((path, Err(err.to_string()))),
        }
    }
    let nested: Vec<Vec<_>> = subfolders.par_iter().map(|sub| folder(root, sub)).collect();
    out.extend(nested.into_iter().flatten());
    out
}

/// Whether a file with this stat changed long enough before `now` for its hash to be kept
/// ([`RACY_SECONDS`]).
pub fn settled(stat: &Stat, now: SystemTime) -> bool {
    settled_before(stat, racy_limit(now))
}

/// The time (ns since the epoch) a change must precede to be settled at `now`.
fn racy_limit(now: SystemTime) -> i128 {
    nanos(
        now.checked_sub(Duration::from_secs(RACY_SECONDS))
            .unwrap_or(SystemTime::UNIX_EPOCH),
    )
}

fn settled_before(stat: &Stat, limit_ns: i128) -> bool {
    stat.mtime_ns < limit_ns && stat.ctime_ns < limit_ns
}

fn nanos(time: SystemTime) -> i128 {
    match time.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(after) => after.as_nanos() as i128,
        Err(before) => -(before.duration().as_nanos() as i128),
    }
}

/// One entry's record, and whether its bytes were read for it.
fn record(
    root: &Path,
    path: Vec<u8>,
    stat: Result<Stat, String>,
    memo: &FileMemo,
    settled_before_ns: i128,
) -> (Record, bool) {
    let stat = match stat {
        Ok(stat) => stat,
        Err(why) => return (unreadable(path, &why), false),
    };
    let settled = settled_before(&stat, settled_before_ns);
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

pub fn stat_of(meta: &std::fs::Metadata) -> Stat {
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
    /// Sorted by path.
    entries: Vec<(Vec<u8>, Stat, [u8; 32])>,
}

/// The memo file's first line.
const MEMO_HEADER: &[u8] = b"gatefix file hashes 1\n";

impl FileMemo {
    pub fn hash(&self, path: &[u8], stat: &Stat) -> Option<[u8; 32]> {
        let at = self
            .entries
            .binary_search_by(|(p, _, _)| p.as_slice().cmp(path))
            .ok()?;
        let (_, kept, hash) = &self.entries[at];
        (kept == stat).then_some(*hash)
    }

    fn sorted(mut entries: Vec<(Vec<u8>, Stat, [u8; 32])>) -> FileMemo {
        if !entries.is_sorted_by(|a, b| a.0 <= b.0) {
            entries.sort_by(|a, b| a.0.cmp(&b.0));
        }
        entries.dedup_by(|a, b| a.0 == b.0);
        FileMemo { entries }
    }

    /// The settled records of `fingerprint`: what a memo written now would hold.
    pub fn settled_in(fingerprint: &Fingerprint) -> FileMemo {
        let entries = fingerprint
            .records
            .iter()
            .filter(|r| r.settled)
            .filter_map(|r| Some((r.path.clone(), r.stat?, r.hash)))
            .collect();
        FileMemo::sorted(entries)
    }

    /// Reads a memo written by [`FileMemo::text`]; a damaged line is skipped (its file is
    /// hashed again), a damaged header drops the whole memo.
    pub fn parse(bytes: &[u8]) -> FileMemo {
        let Some(body) = bytes.strip_prefix(MEMO_HEADER) else {
            return FileMemo::default();
        };
        let entries = body.split(|&b| b == b'\n').filter_map(parse_line).collect();
        FileMemo::sorted(entries)
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

/// A decimal integer, optionally negative, and nothing else (what `text` writes).
fn integer(text: &[u8]) -> Option<i128> {
    let (negative, digits) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, text),
    };
    if digits.is_empty() || digits.len() > 38 {
        return None;
    }
    let mut value: i128 = 0;
    for &b in digits {
        if !b.is_ascii_digit() {
            return None;
        }
        value = value * 10 + i128::from(b - b'0');
    }
    Some(if negative { -value } else { value })
}

fn parse_line(line: &[u8]) -> Option<(Vec<u8>, Stat, [u8; 32])> {
    let mut fields = line.splitn(9, |&b| b == b'\t');
    let hash = unhex(fields.next()?)?;
    let kind = Kind::from_letter(fields.next()?)?;
    let mut number = || integer(fields.next()?);
    let size = u64::try_from(number()?).ok()?;
    let mtime_ns = number()?;
    let ctime_ns = number()?;
    let ino = u64::try_from(number()?).ok()?;
    let dev = u64::try_from(number()?).ok()?;
    let mode = u32::try_from(number()?).ok()?;
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
    fn nibble(b: u8) -> Option<u8> {
        match b {
            b'0'..=b'9' => Some(b - b'0'),
            b'a'..=b'f' => Some(b - b'a' + 10),
            _ => None,
        }
    }
    if text.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, pair) in text.chunks_exact(2).enumerate() {
        out[i] = nibble(pair[0])? << 4 | nibble(pair[1])?;
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
    fn a_symlink_counts_by_where_it_points_and_is_not_followed() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("site");
        write(&dir.join("a/x.py"), "x = 1\n");
        write(&dir.join("b/x.py"), "x = 2\n");
        let outside = tmp.path().join("outside");
        write(&outside.join("y.py"), "y = 1\n");
        std::os::unix::fs::symlink(dir.join("a"), dir.join("link")).unwrap();
        std::os::unix::fs::symlink(&outside, dir.join("out")).unwrap();
        let fingerprint = Fingerprint::of_site(&dir, &FileMemo::default());
        let paths: Vec<&[u8]> = fingerprint.records.iter().map(|r| &r.path[..]).collect();
        assert_eq!(paths, [&b"a/x.py"[..], b"b/x.py", b"link", b"out"]);
        let first = fingerprint.content_hash();
        std::fs::remove_file(dir.join("link")).unwrap();
        std::os::unix::fs::symlink(dir.join("b"), dir.join("link")).unwrap();
        assert_ne!(key(&dir, &FileMemo::default()).0, first, "re-pointed");
        // What lies behind a symlink that leaves the site is not the site's content.
        let repointed = key(&dir, &FileMemo::default()).0;
        write(&outside.join("y.py"), "y = 2\n");
        assert_eq!(key(&dir, &FileMemo::default()).0, repointed);
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
        assert!(FileMemo::parse(b"garbage").entries.is_empty());
        let text = [MEMO_HEADER, b"zz\tf\t1\t2\t3\t4\t5\t6\ta.py\n"].concat();
        assert!(FileMemo::parse(&text).entries.is_empty());
        let good = format!("{}\tf\t1\t2\t3\t4\t5\t6\ta.py\n", "ab".repeat(32));
        let text = [MEMO_HEADER, good.as_bytes(), b"\tf\n"].concat();
        assert_eq!(FileMemo::parse(&text).entries.len(), 1);
    }
}
