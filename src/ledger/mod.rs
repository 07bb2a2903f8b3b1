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

pub mod fault;
pub mod fsio;
pub mod history;
pub mod lock;
pub mod revert;
pub mod txn;

use std::path::{Path, PathBuf};
use std::sync::Once;

use git2::{Commit, IndexEntry, IndexTime, Oid, Repository, Signature, Tree};

use crate::error::{Error, Result};

pub const MAIN: &str = "refs/heads/main";
pub const PENDING: &str = "refs/gatefix/pending";

pub struct Ledger {
    pub repo: Repository,
    pub dir: PathBuf,
    pub site_root: PathBuf,
}

/// Where a site's ledger lives: `--ledger DIR` if given, else `<venv>/.gatefix/ledger.git`
/// when the site is inside a venv, else `<site>/.gatefix/ledger.git`.
pub fn location(site_root: &Path, explicit: Option<&Path>) -> PathBuf {
    if let Some(dir) = explicit {
        return dir.to_path_buf();
    }
    let venv = site_root
        .ancestors()
        .take(5)
        .find(|dir| dir.join("pyvenv.cfg").is_file());
    venv.unwrap_or(site_root)
        .join(".gatefix")
        .join("ledger.git")
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
    /// Opens the ledger, creating it (bare, `main` as HEAD) if needed.
    pub fn open_or_init(dir: &Path, site_root: &Path) -> Result<Ledger> {
        enable_fsync();
        let repo = if dir.join("HEAD").is_file() {
            Repository::open_bare(dir).map_err(|e| git_error(dir, "cannot open", e))?
        } else {
            std::fs::create_dir_all(dir).map_err(|source| Error::Io {
                path: dir.to_path_buf(),
                source,
            })?;
            let repo =
                Repository::init_bare(dir).map_err(|e| git_error(dir, "cannot create", e))?;
            repo.set_head(MAIN)
                .map_err(|e| git_error(dir, "cannot set HEAD", e))?;
            repo
        };
        Ok(Ledger {
            repo,
            dir: dir.to_path_buf(),
            site_root: site_root.to_path_buf(),
        })
    }

    /// Opens an existing ledger; `None` when the site has none.
    pub fn open(dir: &Path, site_root: &Path) -> Result<Option<Ledger>> {
        if !dir.join("HEAD").is_file() {
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

    /// The bytes of `path` in a commit's tree.
    pub fn blob(&self, commit: &Commit, path: &str) -> Option<Vec<u8>> {
        let tree = commit.tree().ok()?;
        let entry = tree.get_path(Path::new(path)).ok()?;
        let blob = self.repo.find_blob(entry.id()).ok()?;
        Some(blob.content().to_vec())
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
            let id = self
                .repo
                .blob(bytes)
                .map_err(|e| self.err("cannot write blob", e))?;
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
        let result = match expected {
            Some(old) => self.repo.reference_matching(name, new, true, old, why),
            None => self.repo.reference(name, new, false, why),
        };
        result
            .map(|_| ())
            .map_err(|e| self.err(&format!("cannot move {name} (another writer?)"), e))
    }

    pub fn delete_ref(&self, name: &str) -> Result<()> {
        match self.repo.find_reference(name) {
            Ok(mut reference) => reference
                .delete()
                .map_err(|e| self.err(&format!("cannot delete {name}"), e)),
            Err(_) => Ok(()),
        }
    }
}
