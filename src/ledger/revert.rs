//! Revert: undo applied transactions (the last, a named one, or all, newest first) as a new
//! transaction of its own. Files gatefix did not write last are never clobbered silently.

use std::collections::BTreeMap;

use super::Ledger;
use super::history::{History, Kind, Phase, Record};
use super::txn::{self, Change, Meta, drift_error, resolve_paths, save_drift};
use crate::error::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Which {
    Last,
    Txn(u32),
    All,
}

#[derive(Debug)]
pub enum Outcome {
    NothingToRevert,
    Reverted {
        txn: u32,
        reverted: Vec<u32>,
        restored: Vec<String>,
        already_original: Vec<String>,
    },
}

/// Reverts; the caller holds the lock and has recovered any interrupted transaction.
pub fn revert(ledger: &Ledger, which: Which, force: bool) -> Result<Outcome> {
    revert_noting(ledger, which, force, None)
}

/// Undoes the transaction `apply --verify CMD` just made, because CMD failed: the revert's
/// commit says so (`Gatefix-Verify-Failed`) and keeps the command's last lines in its body.
pub fn revert_verify_failed(ledger: &Ledger, txn: u32, why: &str) -> Result<Outcome> {
    revert_noting(ledger, Which::Txn(txn), false, Some((txn, why)))
}

fn revert_noting(
    ledger: &Ledger,
    which: Which,
    force: bool,
    verify_failed: Option<(u32, &str)>,
) -> Result<Outcome> {
    let history = History::read(ledger)?;
    let active = history.active_applies();
    let selected: Vec<&Record> = match which {
        Which::Last => active.last().copied().into_iter().collect(),
        Which::All => active.iter().rev().copied().collect(),
        Which::Txn(n) => {
            let record = active.iter().find(|r| r.txn == n).copied().ok_or_else(|| {
                Error::input(format!(
                    "transaction {n} is not in effect ({}); `gatefix status` lists those that are",
                    describe(&history, n)
                ))
            })?;
            refuse_if_newer_touch(&active, record)?;
            vec![record]
        }
    };
    if selected.is_empty() {
        return Ok(Outcome::NothingToRevert);
    }
    let targets = restore_targets(ledger, &history, &selected)?;
    let head = ledger
        .head()?
        .expect("a ledger with transactions has a head");
    restore_deleted(ledger, &history, &head, &targets, force)?;
    let paths = resolve_paths(ledger, targets.keys().map(String::as_str))?;
    let mut changes = Vec::new();
    let mut drift = Vec::new();
    let mut already_original = Vec::new();
    // What pip installed, by RECORD: a file pip reinstalled (of this release or another)
    // needs nothing from the ledger, and an old release's pre-image must not land in it.
    let site = crate::site::Site::open(&ledger.site_root).ok();
    let installed = site
        .as_ref()
        .map(crate::site::Site::installed_files)
        .unwrap_or_default();
    let mut other_release = Vec::new();
    for ((file, want), path) in targets.iter().zip(&paths) {
        let current = std::fs::read(path).map_err(|source| Error::Io {
            path: path.clone(),
            source,
        })?;
        if &current == want {
            already_original.push(file.clone());
            continue;
        }
        let record = installed.get(file).filter(|i| !i.conflicting);
        if record
            .and_then(|i| i.hash.as_deref())
            .is_some_and(|hash| crate::site::record_digest(&current) == hash)
        {
            already_original.push(file.clone());
            continue;
        }
        if let (Some(site), Some(record)) = (&site, record)
            && let Some(now) = site.distributions.get(record.dist)
            && let Some(then) = patched_release(&selected, file, &now.name)
            && then != now.version
        {
            other_release.push(format!(
                "{file} ({} {} now, {then} when patched)",
                now.name, now.version
            ));
        }
        let last = ledger.blob(&head, file).map_err(|e| {
            ledger.damaged(history.last_writer(file), "last written bytes", file, &e)
        })?;
        if last.as_ref() != Some(&current) {
            drift.push((file.clone(), current.clone()));
        }
        changes.push(Change {
            path: file.clone(),
            old: current,
            new: want.clone(),
        });
    }
    let reverted: Vec<u32> = selected.iter().map(|r| r.txn).collect();
    let txn_number = history.next_txn();
    if !other_release.is_empty() {
        // Even with --force: the pre-images are another release's bytes.
        return Err(Error::refused(format!(
            "{} file(s) belong to another release than the one gatefix patched: {}; writing \
             their pre-images would put old code into the new install, so nothing was written, \
             --force or not. Reinstall the distribution (`pip install --force-reinstall --no-deps \
             NAME==VERSION`, as `gatefix status --all` prints it) and run `gatefix revert` again: \
             files at pip's bytes need nothing from the ledger",
            other_release.len(),
            other_release.join(", ")
        )));
    }
    if !drift.is_empty() {
        if !force {
            return Err(drift_error(&drift, *reverted.first().unwrap_or(&0)));
        }
        let context = Record {
            txn: txn_number,
            ..selected[0].clone()
        };
        save_drift(ledger, &context, &drift)?;
    }
    let mut meta = revert_meta(&selected, &reverted);
    if let Some((n, why)) = verify_failed {
        meta.verify_failed = Some(n);
        meta.subject = format!("verify failed, {}", meta.subject);
        meta.body = format!(
            "`gatefix apply --verify` failed after transaction {n}; every file is back at its bytes before it.\n\n{why}"
        );
    }
    let txn = txn::run(ledger, &meta, &changes)?;
    // A check that never finished on a transaction now reverted no longer matters.
    if super::checking::unfinished(ledger).is_some_and(|u| reverted.contains(&u.txn)) {
        super::checking::end(ledger)?;
    }
    Ok(Outcome::Reverted {
        txn,
        reverted,
        restored: changes.into_iter().map(|c| c.path).collect(),
        already_original,
    })
}

/// The version of distribution `dist` that the selected transactions recorded (`Gatefix-Dist:
/// name version`) when one of them patched `file`.
fn patched_release(selected: &[&Record], file: &str, dist: &str) -> Option<String> {
    selected
        .iter()
        .filter(|r| r.files.iter().any(|f| f == file))
        .flat_map(|r| &r.dists)
        .find_map(|d| {
            let (name, version) = d.rsplit_once(' ')?;
            same_distribution(name, dist).then(|| version.to_string())
        })
}

/// Distribution names compare as pip compares them (PEP 503: case, `-`, `_` and `.` alike).
fn same_distribution(a: &str, b: &str) -> bool {
    let norm = |s: &str| -> String {
        s.chars()
            .map(|c| match c {
                '_' | '.' => '-',
                c => c.to_ascii_lowercase(),
            })
            .collect()
    };
    norm(a) == norm(b)
}

/// Files of the transactions being reverted that were deleted since gatefix wrote them (an
/// uninstall, a hand `rm`). Refused unless `force`; with it, each is first written back with
/// the bytes gatefix last wrote there (the ledger's newest image), each atomically, so the
/// site is at a state the ledger knows before the revert proper restores the pre-images: a
/// crash in between leaves files the ledger explains, never a half-written one.
fn restore_deleted(
    ledger: &Ledger,
    history: &History,
    head: &git2::Commit,
    targets: &BTreeMap<String, Vec<u8>>,
    force: bool,
) -> Result<()> {
    let mut deleted = Vec::new();
    for file in targets.keys() {
        if let Some(path) = crate::site::missing_site_path(&ledger.site_root, file) {
            deleted.push((file, path.map_err(Error::refused)?));
        }
    }
    if deleted.is_empty() {
        return Ok(());
    }
    let names: Vec<&str> = deleted.iter().map(|(file, _)| file.as_str()).collect();
    if !force {
        return Err(Error::refused(format!(
            "{} file(s) gatefix patched were deleted since (an uninstall, a hand edit?): {}; \
             nothing was written. `gatefix revert --force` writes them again from the ledger \
             and restores their pre-images",
            names.len(),
            names.join(", ")
        )));
    }
    let txn = history.next_txn();
    for (file, path) in deleted {
        let last = ledger
            .blob(head, file)
            .map_err(|e| ledger.damaged(history.last_writer(file), "last written bytes", file, &e))?
            .ok_or_else(|| {
                Error::input(format!(
                    "ledger {}: no image of {file} to write it again from; nothing was written",
                    ledger.dir.display()
                ))
            })?;
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|source| Error::Io {
                path: parent.to_path_buf(),
                source,
            })?;
        }
        super::fsio::restore_missing_file(&path, &last, txn).map_err(|source| Error::Io {
            path: path.clone(),
            source,
        })?;
        eprintln!("gatefix: {file} was deleted; written again from the ledger (--force)");
    }
    Ok(())
}

/// Each file goes back to its pre-image in the oldest selected transaction that touched it.
fn restore_targets(
    ledger: &Ledger,
    history: &History,
    selected: &[&Record],
) -> Result<BTreeMap<String, Vec<u8>>> {
    let mut targets = BTreeMap::new();
    for record in selected {
        let begin = history.record(record.txn, Phase::Begin).ok_or_else(|| {
            Error::refused(format!(
                "ledger {}: transaction {} has no begin record",
                ledger.dir.display(),
                record.txn
            ))
        })?;
        let commit = ledger
            .repo
            .find_commit(begin.oid)
            .map_err(|e| ledger.err("cannot read commit", e))?;
        for file in &record.files {
            let bytes = ledger
                .blob(&commit, file)
                .map_err(|e| ledger.damaged(record.txn, "pre-image", file, &e))?
                .ok_or_else(|| {
                    Error::input(format!(
                        "ledger {}: transaction {} names {file}, but its begin commit {} has no \
                         entry for it (the ledger was edited by hand?); nothing was written",
                        ledger.dir.display(),
                        record.txn,
                        begin.oid
                    ))
                })?;
            targets.insert(file.clone(), bytes); // newest first: the oldest pre-image wins
        }
    }
    Ok(targets)
}

fn refuse_if_newer_touch(active: &[&Record], record: &Record) -> Result<()> {
    for newer in active.iter().filter(|r| r.txn > record.txn) {
        if let Some(file) = newer.files.iter().find(|f| record.files.contains(f)) {
            return Err(Error::refused(format!(
                "transaction {} also changed {file}, on top of transaction {}; revert it first, or use --all",
                newer.txn, record.txn
            )));
        }
    }
    Ok(())
}

fn describe(history: &History, txn: u32) -> &'static str {
    if !history.records.iter().any(|r| r.txn == txn) {
        return "no such transaction";
    }
    match history.outcome(txn) {
        Phase::Rollback => "it was rolled back",
        Phase::Begin => "it was interrupted",
        _ if history
            .records
            .iter()
            .any(|r| r.kind == Kind::Revert && r.reverts.contains(&txn)) =>
        {
            "it is already reverted"
        }
        _ => "it is a revert, not an apply",
    }
}

fn revert_meta(selected: &[&Record], reverted: &[u32]) -> Meta {
    let list: Vec<String> = reverted.iter().map(|n| n.to_string()).collect();
    let patches: Vec<String> = selected
        .iter()
        .flat_map(|r| r.patches.iter().map(|p| p.id.clone()))
        .collect();
    Meta {
        kind: Kind::Revert,
        target: None,
        patches: Vec::new(),
        dists: Vec::new(),
        reverts: reverted.to_vec(),
        verify_failed: None,
        subject: format!("revert {}: {}", list.join(", "), patches.join(", ")),
        body: "Every file is back at the bytes it had before the reverted transaction(s).".into(),
    }
}
