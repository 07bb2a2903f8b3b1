//! The ledger: a bare git repository (git2) that records every byte gatefix changes in a
//! site, so that `gatefix revert` can put it back and `git --git-dir <ledger> log -p` reads
//! as a plain history.
//!
//! The tree of `refs/heads/main` mirrors the files gatefix has touched, at the bytes gatefix
//! last wrote (paths relative to the site root). A transaction is two commits: *begin*, whose
//! tree holds the pre-images of the files it will change, and *done*, whose tree holds the
//! post-images. Both are written before the first site byte changes; `main` points at begin
//! (and `refs/gatefix/pending` at done) while files are being written, then moves to done.
//! So `main` at a begin commit means "interrupted", and the pre- and post-image of every
//! file are in the ledger whatever instant the process died at. See `txn`.

pub mod checking;
pub mod fault;
pub mod fsio;
pub mod history;
pub mod lock;
pub mod objects;
pub mod place;
pub mod revert;
pub mod space;
pub mod txn;
pub mod witness;

use std::path::{Path, PathBuf};

use std::sync::Once;

use git2::{Commit, IndexEntry, IndexTime, Oid, Repository, Signature, Tree};

use crate::error::{Error, Result};
use objects::ObjectError;

pub const MAIN: &str = "refs/heads/main";
pub const PENDING: &str = "refs/gatefix/pending";

pub struct Ledger {
    pub repo: Repository,
    pub dir: PathBuf,
    pub site_root: PathBuf,
}

/// Writes `HEAD` again into a ledger that has the marker and its history but lost the file
/// (`place::head_lost`); without it nothing would open the ledger, and its transactions
/// would look absent. Every ledger's `HEAD` names `main`.
fn restore_lost_head(dir: &Path) -> Result<()> {
    if !place::head_lost(dir) {
        return Ok(());
    }
    let head = dir.join("HEAD");
    std::fs::write(&head, format!("ref: {MAIN}\n")).map_err(|source| Error::Io {
        path: head.clone(),
        source,
    })?;
    eprintln!(
        "gatefix: ledger {}: its HEAD file was missing; written again (ref: {MAIN})",
        dir.display()
    );
    Ok(())
}

/// Removes what a cut-short creation left (`place::half_made`: creation's entries alone, no
/// object, no ref), keeping the lock file, so the ledger is made again from scratch.
fn clear_half_made(dir: &Path) -> Result<()> {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if entry.file_name() == "gatefix.lock" {
            continue;
        }
        let path = entry.path();
        let removed = if entry.file_type().is_ok_and(|t| t.is_dir()) {
            std::fs::remove_dir_all(&path)
        } else {
            std::fs::remove_file(&path)
        };
        removed.map_err(|source| Error::Io { path, source })?;
    }
    Ok(())
}

fn git_error(dir: &Path, what: &str, e: git2::Error) -> Error {
    Error::input(format!("ledger {}: {what}: {}", dir.display(), e.message()))
}

/// Objects and refs reach the disk before a site file changes (libgit2 does not fsync by
/// default; this is the same switch as git's core.fsync).
fn enable_fsync() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: a documented libgit2 global option taking one int; set once, before any
        // repository is opened by this process.
        unsafe {
            libgit2_sys::git_libgit2_opts(libgit2_sys::GIT_OPT_ENABLE_FSYNC_GITDIR as _, 1);
        }
    });
}

impl Ledger {
    /// Opens an existing ledger without checking its history (`None`: there is none), for
    /// `status --fsck`, which must report a damaged history rather than refuse with it.
    pub fn open_unchecked(dir: &Path, site_root: &Path) -> Result<Option<Ledger>> {
        if !dir.join("HEAD").is_file() {
            return Ok(None);
        }
        enable_fsync();
        let repo = Repository::open_bare(dir).map_err(|e| git_error(dir, "cannot open", e))?;
        Ok(Some(Ledger {
            repo,
            dir: dir.to_path_buf(),
            site_root: site_root.to_path_buf(),
        }))
    }

    /// Opens the ledger, creating it (bare, `main` as HEAD) if needed. A ledger whose
    /// creation was cut short is made again; one that lost its `HEAD` file gets it back.
    pub fn open_or_init(dir: &Path, site_root: &Path) -> Result<Ledger> {
        enable_fsync();
        restore_lost_head(dir)?;
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| Error::Io { path, source }
        };
        let repo = if dir.join("HEAD").is_file() && !place::half_made(dir) {
            Repository::open_bare(dir).map_err(|e| git_error(dir, "cannot open", e))?
        } else {
            if place::half_made(dir) {
                clear_half_made(dir)?;
            }
            std::fs::create_dir_all(dir).map_err(io(dir))?;
            fault::point("ledger folder made");
            let repo =
                Repository::init_bare(dir).map_err(|e| git_error(dir, "cannot create", e))?;
            fault::point("ledger repository made");
            repo.set_head(MAIN)
                .map_err(|e| git_error(dir, "cannot set HEAD", e))?;
            fault::point("ledger HEAD set");
            // Last: the marker says the creation finished (see `place::half_made`).
            let marker = dir.join(place::MARKER);
            std::fs::write(&marker, "a gatefix ledger (see `gatefix status`)\n")
                .map_err(io(&marker))?;
            fsio::sync_dir(dir).map_err(io(dir))?;
            fault::point("ledger marker written");
            repo
        };
        let ledger = Ledger {
            repo,
            dir: dir.to_path_buf(),
            site_root: site_root.to_path_buf(),
        };
        ledger.check_history()?;
        Ok(ledger)
    }

    /// Every commit on `main` and `pending`, and every tree they hold, read with a bound and
    /// checked against its id, before libgit2 parses any of them (blobs are checked when
    /// read). A damaged one is an input error naming it: never a hang inside inflate.
    pub fn check_history(&self) -> Result<()> {
        let tips: Vec<Oid> = [MAIN, PENDING]
            .iter()
            .filter_map(|name| self.repo.refname_to_id(name).ok())
            .collect();
        let mut seen = std::collections::HashSet::new();
        objects::check_reachable(&self.repo, &self.dir, &tips, false, &mut seen)
            .map(|_| ())
            .map_err(|(what, e)| {
                Error::input(format!(
                    "ledger {}: {what}: {e}; the ledger cannot be read. Nothing was written. \
                     `gatefix status --fsck` lists every damaged object",
                    self.dir.display()
                ))
            })
    }

    /// Every object reachable from `main` and `pending`, blobs included: (objects checked,
    /// problems as (object, `what: why`)). Also every loose object file, reachable or not.
    pub fn fsck(&self) -> (usize, Vec<(Oid, String)>) {
        let mut problems = Vec::new();
        let tips: Vec<Oid> = [MAIN, PENDING]
            .iter()
            .filter_map(|name| self.repo.refname_to_id(name).ok())
            .collect();
        let mut seen = std::collections::HashSet::new();
        let mut checked = 0;
        // One problem stops a walk; walk again from each tip so one bad object hides little.
        for tip in &tips {
            match objects::check_reachable(&self.repo, &self.dir, &[*tip], true, &mut seen) {
                Ok(n) => checked += n,
                Err((what, e)) => problems.push((e.oid, format!("{what}: {e}"))),
            }
        }
        let objects_dir = self.dir.join("objects");
        for fanout in std::fs::read_dir(&objects_dir)
            .into_iter()
            .flatten()
            .flatten()
        {
            let prefix = fanout.file_name().to_string_lossy().into_owned();
            if prefix.len() != 2 {
                continue;
            }
            for entry in std::fs::read_dir(fanout.path())
                .into_iter()
                .flatten()
                .flatten()
            {
                let name = entry.file_name().to_string_lossy().into_owned();
                let Ok(oid) = Oid::from_str(&format!("{prefix}{name}")) else {
                    continue;
                };
                if seen.insert(oid) {
                    checked += 1;
                    if let Err(e) = objects::read(&self.repo, &self.dir, oid) {
                        problems.push((oid, format!("unreachable loose object: {e}")));
                    }
                }
            }
        }
        (checked, problems)
    }

    /// A write to the ledger is about to happen (a full disk can be simulated here).
    pub fn write_point(&self, what: &str) -> Result<()> {
        fault::write_point(what)
            .map_err(|e| Error::input(format!("ledger {}: {what}: {e}", self.dir.display())))
    }

    /// An error for a damaged object that a transaction needs.
    pub fn damaged(&self, txn: u32, role: &str, file: &str, e: &ObjectError) -> Error {
        Error::input(format!(
            "ledger {}: transaction {txn}: the {role} of {file} cannot be used: {e}. \
             Nothing was written; `gatefix status --fsck` checks the whole ledger",
            self.dir.display()
        ))
    }

    /// Opens an existing ledger; `None` when the site has none (or only one whose creation
    /// was cut short: it records nothing).
    pub fn open(dir: &Path, site_root: &Path) -> Result<Option<Ledger>> {
        restore_lost_head(dir)?;
        if !dir.join("HEAD").is_file() || place::half_made(dir) {
            return Ok(None);
        }
        Ledger::open_or_init(dir, site_root).map(Some)
    }

    pub fn err(&self, what: &str, e: git2::Error) -> Error {
        git_error(&self.dir, what, e)
    }

    pub fn head(&self) -> Result<Option<Commit<'_>>> {
        match self.repo.refname_to_id(MAIN) {
            Ok(oid) => self
                .repo
                .find_commit(oid)
                .map(Some)
                .map_err(|e| self.err("cannot read main", e)),
            Err(e) if e.code() == git2::ErrorCode::NotFound => Ok(None),
            Err(e) => Err(self.err("cannot read main", e)),
        }
    }

    pub fn pending(&self) -> Option<Commit<'_>> {
        let oid = self.repo.refname_to_id(PENDING).ok()?;
        self.repo.find_commit(oid).ok()
    }

    /// The bytes of `path` in a commit's tree (`None`: the tree has no such file), read with
    /// a bound and checked against the blob's id.
    pub fn blob(&self, commit: &Commit, path: &str) -> Result<Option<Vec<u8>>, ObjectError> {
        let Ok(tree) = commit.tree() else {
            return Ok(None);
        };
        let Ok(entry) = tree.get_path(Path::new(path)) else {
            return Ok(None);
        };
        objects::read_kind(&self.repo, &self.dir, entry.id(), git2::ObjectType::Blob).map(Some)
    }

    /// Writes a blob and reads it back: an object of that id already on disk but damaged
    /// (libgit2 then skips the write) is replaced.
    fn write_blob(&self, bytes: &[u8]) -> Result<Oid> {
        self.write_point("cannot write blob")?;
        let id = self
            .repo
            .blob(bytes)
            .map_err(|e| self.err("cannot write blob", e))?;
        if objects::read(&self.repo, &self.dir, id).is_ok() {
            return Ok(id);
        }
        let _ = std::fs::remove_file(objects::loose_path(&self.dir, id));
        let id = self
            .repo
            .blob(bytes)
            .map_err(|e| self.err("cannot write blob", e))?;
        objects::read(&self.repo, &self.dir, id)
            .map_err(|e| Error::input(format!("ledger {}: {e}", self.dir.display())))?;
        Ok(id)
    }

    /// A tree: `base` with each file set to the given bytes.
    pub fn tree_with(&self, base: Option<&Tree>, files: &[(&str, &[u8])]) -> Result<Oid> {
        let mut index = git2::Index::new().map_err(|e| self.err("index", e))?;
        if let Some(base) = base {
            index
                .read_tree(base)
                .map_err(|e| self.err("cannot read tree", e))?;
        }
        for (path, bytes) in files {
            let id = self.write_blob(bytes)?;
            let zero = IndexTime::new(0, 0);
            let entry = IndexEntry {
                ctime: zero,
                mtime: zero,
                dev: 0,
                ino: 0,
                mode: 0o100644,
                uid: 0,
                gid: 0,
                file_size: bytes.len() as u32,
                id,
                flags: path.len().min(0xfff) as u16,
                flags_extended: 0,
                path: path.as_bytes().to_vec(),
            };
            index
                .add(&entry)
                .map_err(|e| self.err("cannot stage file", e))?;
        }
        index
            .write_tree_to(&self.repo)
            .map_err(|e| self.err("cannot write tree", e))
    }

    pub fn commit(&self, tree: Oid, parents: &[&Commit], message: &str) -> Result<Oid> {
        self.write_point("cannot write commit")?;
        let tree = self
            .repo
            .find_tree(tree)
            .map_err(|e| self.err("cannot read tree", e))?;
        let signature =
            Signature::now("gatefix", "gatefix@localhost").map_err(|e| self.err("signature", e))?;
        self.repo
            .commit(None, &signature, &signature, message, &tree, parents)
            .map_err(|e| self.err("cannot write commit", e))
    }

    /// Moves `name` from `expected` (`None`: must not exist) to `new`, atomically.
    pub fn move_ref(&self, name: &str, expected: Option<Oid>, new: Oid, why: &str) -> Result<()> {
        self.write_point(&format!("cannot move {name}"))?;
        // A ref must never point at an object that is not whole on disk.
        objects::read(&self.repo, &self.dir, new).map_err(|e| {
            Error::input(format!(
                "ledger {}: cannot move {name}: the {e} (was the disk full?)",
                self.dir.display()
            ))
        })?;
        let result = match expected {
            Some(old) => self.repo.reference_matching(name, new, true, old, why),
            None => self.repo.reference(name, new, false, why),
        };
        result
            .map(|_| ())
            .map_err(|e| self.err(&format!("cannot move {name} (another writer?)"), e))
    }

    pub fn delete_ref(&self, name: &str) -> Result<()> {
        self.write_point(&format!("cannot delete {name}"))?;
        match self.repo.find_reference(name) {
            Ok(mut reference) => reference
                .delete()
                .map_err(|e| self.err(&format!("cannot delete {name}"), e)),
            Err(_) => Ok(()),
        }
    }
}
