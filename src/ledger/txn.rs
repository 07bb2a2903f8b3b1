//! Transactions: the only code that writes site files.
//!
//! Order of a transaction (every step is a fault point of the crash test):
//! 1. pre- and post-images go into the ledger as blobs and trees; a *begin* commit (tree =
//!    pre-images) and a *done* commit (tree = post-images, parent = begin) are written;
//! 2. `refs/gatefix/pending` → done, then `main` → begin: from here on, any gatefix command
//!    sees an interrupted transaction and `revert` can restore every file from the ledger;
//! 3. each file: its bytes are re-checked against the planned pre-image (drift is refused),
//!    then replaced atomically (`fsio::replace_file`) and its stale bytecode removed;
//! 4. `main` → done, `pending` removed.
//!
//! A failure in step 3 puts the written files back at once and records a rollback.

use std::path::PathBuf;

use git2::{Commit, Oid};

use super::fault;
use super::fsio::{remove_stale_bytecode, remove_temp, replace_file};
use super::history::{
    History, Kind, PatchEntry, Record, TRAILER_DIST, TRAILER_FILE, TRAILER_KIND, TRAILER_PATCH,
    TRAILER_PHASE, TRAILER_REVERTS, TRAILER_TARGET, TRAILER_TXN, TRAILER_VERIFY_FAILED, message,
};
use super::{Ledger, MAIN, PENDING};
use crate::error::{Error, Result};
use crate::site::site_path;

/// One file's planned change.
#[derive(Debug, Clone)]
pub struct Change {
    pub path: String,
    pub old: Vec<u8>,
    pub new: Vec<u8>,
}

/// What a transaction records about itself.
#[derive(Debug, Clone)]
pub struct Meta {
    pub kind: Kind,
    pub target: Option<String>,
    pub patches: Vec<PatchEntry>,
    pub dists: Vec<String>,
    pub reverts: Vec<u32>,
    /// A revert made because `apply --verify` failed: the transaction it undoes.
    pub verify_failed: Option<u32>,
    pub subject: String,
    pub body: String,
}

impl Meta {
    fn trailers(&self, txn: u32, phase: &str, files: &[&str]) -> Vec<(&'static str, String)> {
        let mut t = vec![
            (TRAILER_TXN, txn.to_string()),
            (TRAILER_PHASE, phase.to_string()),
            (TRAILER_KIND, self.kind.word().to_string()),
        ];
        if let Some(target) = &self.target {
            t.push((TRAILER_TARGET, target.clone()));
        }
        for patch in &self.patches {
            let status = if patch.verified {
                "verified"
            } else {
                "unverified"
            };
            let entry = if patch.class == "safe" {
                format!("{} {status}", patch.id)
            } else {
                format!("{} {status} {}", patch.id, patch.class)
            };
            t.push((TRAILER_PATCH, entry));
        }
        for dist in &self.dists {
            t.push((TRAILER_DIST, dist.clone()));
        }
        if !self.reverts.is_empty() {
            let list: Vec<String> = self.reverts.iter().map(|n| n.to_string()).collect();
            t.push((TRAILER_REVERTS, list.join(",")));
        }
        if let Some(n) = self.verify_failed {
            t.push((TRAILER_VERIFY_FAILED, n.to_string()));
        }
        for file in files {
            t.push((TRAILER_FILE, file.to_string()));
        }
        t
    }
}

/// Runs one transaction. The caller holds the site lock and has made sure no transaction is
/// interrupted. Returns the transaction number.
pub fn run(ledger: &Ledger, meta: &Meta, changes: &[Change]) -> Result<u32> {
    if meta.kind == Kind::Apply {
        refuse_hidden_transactions(ledger)?;
        refuse_unexplained(ledger, changes)?;
    }
    let sizes: Vec<(usize, usize)> = changes.iter().map(|c| (c.old.len(), c.new.len())).collect();
    super::space::check(&ledger.site_root, &ledger.dir, &sizes)?;
    let paths = resolve_paths(ledger, changes.iter().map(|c| c.path.as_str()))?;
    let files: Vec<&str> = changes.iter().map(|c| c.path.as_str()).collect();
    let (txn, begin, done) = record_images(ledger, meta, changes, &files).map_err(|e| {
        Error::refused(format!(
            "{e}; nothing in the site was changed (the transaction was not begun). Run the command again once that is fixed"
        ))
    })?;

    // From here until `main` reaches done, the ledger shows the transaction as interrupted:
    // every error says so, and names the command that resolves it.
    write_files(ledger, meta, changes, &paths, txn, begin, &files)
        .map_err(|e| left_interrupted(e, txn))?;
    ledger
        .move_ref(MAIN, Some(begin), done, "gatefix: done")
        .map_err(|e| left_interrupted(e, txn))?;
    fault::point("main at done");
    if let Err(e) = ledger.delete_ref(PENDING) {
        // The transaction is complete; a stale pending ref is ignored and replaced next time.
        eprintln!("gatefix: warning: {e}");
    }
    fault::point("pending ref removed");
    Ok(txn)
}

/// Steps 1 and 2: the images, the begin and done commits, `pending`, and `main` at begin.
/// Nothing in the site changes here; an error leaves `main` where it was.
fn record_images(
    ledger: &Ledger,
    meta: &Meta,
    changes: &[Change],
    files: &[&str],
) -> Result<(u32, Oid, Oid)> {
    super::place::record(&ledger.site_root, &ledger.dir)?;
    let history = History::read(ledger)?;
    let txn = history.next_txn();
    let head = ledger.head()?;
    let base = head.as_ref().and_then(|c| c.tree().ok());
    let pre: Vec<(&str, &[u8])> = changes
        .iter()
        .map(|c| (c.path.as_str(), &c.old[..]))
        .collect();
    let post: Vec<(&str, &[u8])> = changes
        .iter()
        .map(|c| (c.path.as_str(), &c.new[..]))
        .collect();
    let pre_tree = ledger.tree_with(base.as_ref(), &pre)?;
    let post_tree = ledger.tree_with(base.as_ref(), &post)?;
    fault::point("images written");
    let parents: Vec<&Commit> = head.iter().collect();
    let begin_message = message(
        &format!("begin: {}", meta.subject),
        "Pre-images of the files below, recorded before any of them changed.",
        &meta.trailers(txn, "begin", files),
    );
    let begin = ledger.commit(pre_tree, &parents, &begin_message)?;
    fault::point("begin commit written");
    let begin_commit = find_commit(ledger, begin)?;
    let done_message = message(
        &meta.subject,
        &meta.body,
        &meta.trailers(txn, "done", files),
    );
    let done = ledger.commit(post_tree, &[&begin_commit], &done_message)?;
    fault::point("done commit written");
    // Every object the two commits need is whole on disk before a ref names them (a full
    // disk can leave a short object behind an id libgit2 reported as written).
    let mut seen = std::collections::HashSet::new();
    super::objects::check_reachable(&ledger.repo, &ledger.dir, &[begin, done], false, &mut seen)
        .map_err(|(what, e)| {
            Error::input(format!(
                "ledger {}: {what}: {e} just after it was written (is the disk full?)",
                ledger.dir.display()
            ))
        })?;
    set_ref(ledger, PENDING, done)?;
    fault::point("pending ref set");
    ledger.move_ref(MAIN, head.as_ref().map(|c| c.id()), begin, "gatefix: begin")?;
    fault::point("main at begin");
    Ok((txn, begin, done))
}

/// Writes every file; on a failure puts back those already written and records a rollback.
fn write_files(
    ledger: &Ledger,
    meta: &Meta,
    changes: &[Change],
    paths: &[PathBuf],
    txn: u32,
    begin: Oid,
    files: &[&str],
) -> Result<()> {
    for (i, (change, path)) in changes.iter().zip(paths).enumerate() {
        if let Err(why) = write_checked(path, change, txn) {
            let undone = undo_written(&changes[..i], &paths[..i], txn);
            if let Err(e) = record_rollback(ledger, meta, txn, files, begin) {
                return Err(Error::refused(format!(
                    "{why}; {}, but recording the rollback failed: {e}",
                    match &undone {
                        Ok(()) => "every file is back at its old bytes".to_string(),
                        Err(more) =>
                            format!("putting back the files already written failed too ({more})"),
                    }
                )));
            }
            return Err(match undone {
                Ok(()) => Error::refused(format!(
                    "{why}; nothing was changed (the {i} file(s) already written were put back)"
                )),
                Err(more) => Error::refused(format!(
                    "{why}; putting back the files already written failed too ({more}); run `gatefix revert`"
                )),
            });
        }
    }
    Ok(())
}

/// An error that leaves the ledger showing an interrupted transaction ends with the command
/// that resolves it. Errors that already rolled back (`nothing was changed`) are left as they
/// are.
fn left_interrupted(e: Error, txn: u32) -> Error {
    let text = e.to_string();
    if text.contains("nothing was changed") || text.contains("`gatefix revert`") {
        return e;
    }
    Error::refused(format!(
        "{text}; transaction {txn} is left interrupted: run `gatefix revert` to bring every file back to whole bytes"
    ))
}

/// A new transaction in one ledger while another ledger of the site still has transactions
/// in effect would split the site's history in two; refused.
fn refuse_hidden_transactions(ledger: &Ledger) -> Result<()> {
    let Some(other) = super::place::other_ledger(&ledger.site_root, &ledger.dir) else {
        return Ok(());
    };
    let Some(other_ledger) = Ledger::open(&other, &ledger.site_root)? else {
        return Ok(());
    };
    let history = History::read(&other_ledger)?;
    let live: Vec<String> = history
        .active_applies()
        .into_iter()
        .chain(history.interrupted())
        .map(|r| r.txn.to_string())
        .collect();
    if live.is_empty() {
        return Ok(());
    }
    Err(Error::refused(format!(
        "this site has transaction(s) {} in effect in another ledger, {}; nothing was written. \
         Use `--ledger {}`, or revert them there first",
        live.join(", "),
        other.display(),
        other.display()
    )))
}

/// A new transaction may only stack on files that are as pip installed them (RECORD) or
/// exactly as a transaction in effect left them: anything else was changed by someone the
/// ledger knows nothing of, and reverting would not get back to pip's bytes.
fn refuse_unexplained(ledger: &Ledger, changes: &[Change]) -> Result<()> {
    let site = crate::site::Site::open(&ledger.site_root)?;
    let history = History::read(ledger)?;
    let files: Vec<String> = changes.iter().map(|c| c.path.clone()).collect();
    let states = super::witness::Witness::new(&site).examine(Some((ledger, &history)), &files);
    let foreign: Vec<&super::witness::FileState> = states
        .iter()
        .filter(|s| s.state == super::witness::State::NotByGatefix)
        .collect();
    if foreign.is_empty() {
        return Ok(());
    }
    let names: Vec<String> = foreign
        .iter()
        .map(|s| format!("{} ({})", s.file, s.dist.as_deref().unwrap_or("?")))
        .collect();
    let commands = super::witness::way_back(&states);
    Err(Error::refused(format!(
        "{} differ(s) from what pip installed (RECORD), and no transaction in the ledger {} explains it \
         (a hand edit, another tool, or a ledger elsewhere: name it with --ledger); nothing was written. \
         To start from pip's bytes: {}",
        names.join(", "),
        ledger.dir.display(),
        commands.join("; ")
    )))
}

/// Re-checks the file against the planned pre-image, then replaces it.
fn write_checked(
    path: &std::path::Path,
    change: &Change,
    txn: u32,
) -> std::result::Result<(), String> {
    let current = std::fs::read(path).map_err(|e| format!("{}: {e}", change.path))?;
    if current != change.old {
        return Err(format!(
            "{} changed while gatefix was working (another process wrote it); refused",
            change.path
        ));
    }
    replace_file(path, &change.new, txn).map_err(|e| format!("{}: {e}", change.path))?;
    remove_stale_bytecode(path);
    fault::point("bytecode removed");
    Ok(())
}

fn undo_written(
    changes: &[Change],
    paths: &[PathBuf],
    txn: u32,
) -> std::result::Result<(), String> {
    for (change, path) in changes.iter().zip(paths).rev() {
        replace_file(path, &change.old, txn).map_err(|e| format!("{}: {e}", change.path))?;
        remove_stale_bytecode(path);
    }
    Ok(())
}

fn record_rollback(
    ledger: &Ledger,
    meta: &Meta,
    txn: u32,
    files: &[&str],
    begin: Oid,
) -> Result<()> {
    let begin_commit = find_commit(ledger, begin)?;
    let tree = begin_commit.tree_id();
    let text = message(
        &format!("rollback: {}", meta.subject),
        "The transaction did not complete; every file is back at its pre-image.",
        &meta.trailers(txn, "rollback", files),
    );
    let rollback = ledger.commit(tree, &[&begin_commit], &text)?;
    ledger.move_ref(MAIN, Some(begin), rollback, "gatefix: rollback")?;
    ledger.delete_ref(PENDING)
}

fn find_commit(ledger: &Ledger, oid: Oid) -> Result<Commit<'_>> {
    ledger
        .repo
        .find_commit(oid)
        .map_err(|e| ledger.err("cannot read commit", e))
}

fn set_ref(ledger: &Ledger, name: &str, oid: Oid) -> Result<()> {
    ledger.write_point(&format!("cannot set {name}"))?;
    ledger
        .repo
        .reference(name, oid, true, "gatefix")
        .map(|_| ())
        .map_err(|e| ledger.err(&format!("cannot set {name}"), e))
}

/// Site paths for ledger or patch entries; an escape refuses the whole operation before any
/// byte is read or written.
pub fn resolve_paths<'a>(
    ledger: &Ledger,
    paths: impl Iterator<Item = &'a str>,
) -> Result<Vec<PathBuf>> {
    paths
        .map(|p| site_path(&ledger.site_root, p).map_err(Error::refused))
        .collect()
}

// ----- Recovery -----------------------------------------------------------------------------

/// What recovery did with an interrupted transaction.
#[derive(Debug)]
pub struct Recovered {
    pub txn: u32,
    pub kind: Kind,
    /// True: an interrupted revert was finished; false: an interrupted apply was undone.
    pub finished: bool,
    pub restored: Vec<String>,
}

/// Brings the site out of an interrupted transaction: an apply is undone (every file back at
/// its pre-image), a revert is finished (every file at the bytes it was restoring). Files
/// with bytes that are neither are drift: refused, unless `force`, which saves them in the
/// ledger first. Safe to run again if it is itself interrupted.
pub fn recover(ledger: &Ledger, force: bool) -> Result<Option<Recovered>> {
    let history = History::read(ledger)?;
    let Some(begin) = history.interrupted().cloned() else {
        return Ok(None);
    };
    let begin_commit = find_commit(ledger, begin.oid)?;
    let pending = ledger
        .pending()
        .filter(|p| p.parent_id(0).ok() == Some(begin.oid));
    let finish = begin.kind == Kind::Revert && pending.is_some();
    let (want_commit, other_commit) = match (&pending, finish) {
        (Some(p), true) => (p.clone(), Some(begin_commit.clone())),
        (p, _) => (begin_commit.clone(), p.clone()),
    };
    let paths = resolve_paths(ledger, begin.files.iter().map(String::as_str))?;
    let mut writes = Vec::new();
    let mut drift = Vec::new();
    for (file, path) in begin.files.iter().zip(&paths) {
        let current = std::fs::read(path).map_err(|source| Error::Io {
            path: path.clone(),
            source,
        })?;
        let role = if finish { "post-image" } else { "pre-image" };
        let Some(want) = ledger
            .blob(&want_commit, file)
            .map_err(|e| ledger.damaged(begin.txn, role, file, &e))?
        else {
            return Err(Error::input(format!(
                "ledger {}: transaction {} names {file}, but commit {} has no entry for it \
                 (the ledger was edited by hand?); nothing was written",
                ledger.dir.display(),
                begin.txn,
                want_commit.id()
            )));
        };
        if current == want {
            continue;
        }
        let other = match &other_commit {
            Some(c) => ledger
                .blob(c, file)
                .map_err(|e| ledger.damaged(begin.txn, "other image", file, &e))?,
            None => None,
        };
        let known = other.is_some_and(|other| other == current);
        if !known {
            drift.push((file.clone(), current.clone()));
        }
        writes.push((file.clone(), path.clone(), current, want));
    }
    if !drift.is_empty() {
        if !force {
            return Err(drift_error(&drift, begin.txn));
        }
        save_drift(ledger, &begin, &drift)?;
    }
    let resume = |e: Error| {
        Error::refused(format!(
            "{e}; the recovery of transaction {} stopped part-way (every file is whole): run `gatefix revert` again to finish it",
            begin.txn
        ))
    };
    for (_, path, _, want) in &writes {
        replace_file(path, want, begin.txn)
            .map_err(|source| Error::Io {
                path: path.clone(),
                source,
            })
            .map_err(resume)?;
        remove_stale_bytecode(path);
        fault::point("recovery file restored");
    }
    for path in &paths {
        remove_temp(path, begin.txn);
    }
    let head = ledger
        .head()?
        .expect("an interrupted transaction has a head");
    let meta_subject = begin.subject.clone();
    let text = if finish {
        pending
            .as_ref()
            .and_then(|p| p.message().map(str::to_string))
            .unwrap_or_default()
    } else {
        rollback_message(&begin, &meta_subject)
    };
    let tree = want_commit.tree_id();
    let closing = ledger.commit(tree, &[&head], &text).map_err(resume)?;
    ledger
        .move_ref(MAIN, Some(head.id()), closing, "gatefix: recovered")
        .map_err(resume)?;
    fault::point("recovery recorded");
    if let Err(e) = ledger.delete_ref(PENDING) {
        eprintln!("gatefix: warning: {e}");
    }
    Ok(Some(Recovered {
        txn: begin.txn,
        kind: begin.kind,
        finished: finish,
        restored: writes.into_iter().map(|(file, ..)| file).collect(),
    }))
}

fn rollback_message(begin: &Record, subject: &str) -> String {
    let meta = Meta {
        kind: begin.kind,
        target: begin.target.clone(),
        patches: begin.patches.clone(),
        dists: begin.dists.clone(),
        reverts: begin.reverts.clone(),
        verify_failed: begin.verify_failed,
        subject: subject.to_string(),
        body: String::new(),
    };
    let files: Vec<&str> = begin.files.iter().map(String::as_str).collect();
    message(
        &format!("rollback: {subject}"),
        "gatefix was interrupted during this transaction; every file is back at its pre-image.",
        &meta.trailers(begin.txn, "rollback", &files),
    )
}

/// Records bytes found in the site that gatefix did not write, before they are replaced.
pub fn save_drift(ledger: &Ledger, context: &Record, drift: &[(String, Vec<u8>)]) -> Result<()> {
    let head = ledger.head()?;
    let base = head.as_ref().and_then(|c| c.tree().ok());
    let files: Vec<(&str, &[u8])> = drift.iter().map(|(f, b)| (f.as_str(), &b[..])).collect();
    let tree = ledger.tree_with(base.as_ref(), &files)?;
    let mut trailers = vec![
        (TRAILER_TXN, context.txn.to_string()),
        (TRAILER_PHASE, "saved".to_string()),
        (TRAILER_KIND, Kind::Revert.word().to_string()),
    ];
    for (file, _) in drift {
        trailers.push((TRAILER_FILE, file.clone()));
    }
    let text = message(
        "saved: bytes found in the site, replaced by revert --force",
        "These files had changed since gatefix wrote them; their bytes are kept here.",
        &trailers,
    );
    let parents: Vec<&Commit> = head.iter().collect();
    let saved = ledger.commit(tree, &parents, &text)?;
    ledger.move_ref(
        MAIN,
        head.as_ref().map(|c| c.id()),
        saved,
        "gatefix: saved drift",
    )?;
    fault::point("drift saved");
    Ok(())
}

pub fn drift_error(drift: &[(String, Vec<u8>)], txn: u32) -> Error {
    let files: Vec<&str> = drift.iter().map(|(f, _)| f.as_str()).collect();
    Error::refused(format!(
        "{} file(s) of transaction {txn} changed since gatefix wrote them (a reinstall or a hand edit?): {}; \
         nothing was written. `gatefix revert --force` saves their current bytes in the ledger and restores anyway",
        files.len(),
        files.join(", ")
    ))
}
