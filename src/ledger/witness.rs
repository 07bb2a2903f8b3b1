//! The site as its own witness: every wheel's RECORD holds the sha256 of each file pip
//! installed. Comparing a file with it (and with the ledger) says whether it is as pip
//! installed it, patched by gatefix (and by which transaction), back at pip's bytes after a
//! reinstall, or changed by someone else; and, for the last, the exact command that puts pip's
//! bytes back. So a site whose ledger is gone, or elsewhere, is still reported as patched.

use std::collections::HashMap;

use serde::Serialize;

use super::Ledger;
use super::history::History;
use crate::site::{Installed, Site, record_digest, site_path};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum State {
    /// The bytes RECORD lists.
    AsInstalled,
    /// Different from RECORD, and exactly the bytes a transaction in effect wrote.
    PatchedByGatefix,
    /// A transaction in effect changed it, but it is back at RECORD's bytes (pip reinstalled).
    Reinstalled,
    /// Different from RECORD, and no transaction in effect explains it.
    NotByGatefix,
    /// RECORD lists it without a hash: nothing to compare with.
    NoRecordHash,
    /// No RECORD lists it.
    NotInRecord,
    /// It cannot be read (missing, or a path gatefix refuses).
    Unreadable,
    /// RECORD lists it more than once with different hashes: nothing says what pip installed.
    RecordConflict,
}

#[derive(Debug, Clone, Serialize)]
pub struct FileState {
    pub file: String,
    pub state: State,
    /// `name version` of the distribution whose RECORD lists it.
    pub dist: Option<String>,
    /// The transaction in effect that last changed it.
    pub txn: Option<u32>,
    /// For a file not as pip installed it: the command that restores pip's bytes.
    pub reinstall: Option<String>,
}

pub struct Witness<'s> {
    site: &'s Site,
    installed: HashMap<String, Installed>,
}

impl<'s> Witness<'s> {
    pub fn new(site: &'s Site) -> Witness<'s> {
        Witness {
            site,
            installed: site.installed_files(),
        }
    }

    /// Every file some RECORD lists (for `status --all`), sorted.
    pub fn all_files(&self) -> Vec<String> {
        let mut files: Vec<String> = self.installed.keys().cloned().collect();
        files.sort();
        files
    }

    /// Examines each file (once; sorted), against RECORD and, if there is one, the ledger.
    pub fn examine(&self, ledger: Option<(&Ledger, &History)>, files: &[String]) -> Vec<FileState> {
        let mut files = files.to_vec();
        files.sort();
        files.dedup();
        let head = ledger.and_then(|(l, _)| l.head().ok().flatten());
        let active: Vec<_> = ledger.map(|(_, h)| h.active_applies()).unwrap_or_default();
        files
            .into_iter()
            .map(|file| {
                let installed = self.installed.get(&file);
                let dist = installed
                    .and_then(|i| self.site.distributions.get(i.dist))
                    .map(|d| format!("{} {}", d.name, d.version));
                let reinstall = installed.and_then(|i| self.site.reinstall_command(i.dist));
                let txn = active
                    .iter()
                    .rev()
                    .find(|r| r.files.contains(&file))
                    .map(|r| r.txn);
                let bytes = site_path(&self.site.root, &file)
                    .ok()
                    .and_then(|p| std::fs::read(p).ok());
                let state = match &bytes {
                    _ if installed.is_some_and(|i| i.conflicting) && txn.is_none() => {
                        State::RecordConflict
                    }
                    None if installed.is_none() && txn.is_none() => State::NotInRecord,
                    None => State::Unreadable,
                    Some(bytes) => {
                        let written_by_gatefix = txn.is_some()
                            && matches!((ledger, &head), (Some((l, _)), Some(h))
                                if l.blob(h, &file).ok().flatten().as_ref() == Some(bytes));
                        match installed.map(|i| i.hash.as_deref()) {
                            Some(Some(hash)) if record_digest(bytes) == hash => {
                                if txn.is_some() {
                                    State::Reinstalled
                                } else {
                                    State::AsInstalled
                                }
                            }
                            _ if written_by_gatefix => State::PatchedByGatefix,
                            Some(Some(_)) => State::NotByGatefix,
                            Some(None) => State::NoRecordHash,
                            None => State::NotInRecord,
                        }
                    }
                };
                let reinstall = match state {
                    State::NotByGatefix | State::PatchedByGatefix | State::Unreadable => reinstall,
                    _ => None,
                };
                FileState {
                    file,
                    state,
                    dist,
                    txn,
                    reinstall,
                }
            })
            .collect()
    }
}

/// The commands that restore pip's bytes for the files no transaction explains (deduplicated).
pub fn way_back(states: &[FileState]) -> Vec<String> {
    let mut out: Vec<String> = states
        .iter()
        .filter(|s| s.state == State::NotByGatefix)
        .filter_map(|s| s.reinstall.clone())
        .collect();
    out.sort();
    out.dedup();
    out
}

/// One line per file that matters (not as pip installed it, or reinstalled under a
/// transaction).
pub fn describe(state: &FileState) -> Option<String> {
    let dist = state.dist.as_deref().unwrap_or("?");
    Some(match state.state {
        State::PatchedByGatefix => format!(
            "patched by gatefix: {} (transaction {}; {dist})",
            state.file,
            state.txn.unwrap_or(0)
        ),
        State::Reinstalled => format!(
            "REINSTALLED: {} is back at the bytes pip installed ({dist}); transaction {} no longer holds for it",
            state.file,
            state.txn.unwrap_or(0)
        ),
        State::NotByGatefix => format!(
            "NOT BY GATEFIX: {} differs from what pip installed ({dist} RECORD), and no gatefix transaction in effect explains it",
            state.file
        ),
        State::Unreadable => format!("UNREADABLE: {}", state.file),
        State::RecordConflict => format!(
            "RECORD CONFLICT: {}: the RECORD of {dist} lists it more than once with different hashes, so nothing says what pip installed",
            state.file
        ),
        State::AsInstalled | State::NoRecordHash | State::NotInRecord => return None,
    })
}
