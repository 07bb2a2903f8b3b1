//! Reading the ledger's history back: each commit's trailers say which transaction it
//! belongs to and what it did. From them: which applies are still in effect, whether the
//! last transaction was interrupted, and the next transaction number.

use git2::{Commit, Oid};
use serde::Serialize;

use super::Ledger;
use crate::error::Result;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Phase {
    /// Pre-images recorded; files may be partly written.
    Begin,
    /// Post-images in place; the transaction took effect.
    Done,
    /// An interrupted or failed transaction undone; the site is as before it.
    Rollback,
    /// Bytes found in the site (drift) saved before `revert --force` replaced them.
    Saved,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    Apply,
    Revert,
}

impl Kind {
    /// As the `Gatefix-Action` trailer spells it.
    pub fn word(self) -> &'static str {
        match self {
            Kind::Apply => "apply",
            Kind::Revert => "revert",
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct PatchEntry {
    pub id: String,
    pub verified: bool,
    /// `safe` (a curated patch) or `unsafe` (a fix synthesized from the audit); the third
    /// word of the `Gatefix-Patch` trailer, `safe` when absent (older ledgers).
    pub class: String,
}

/// One ledger commit, as its trailers describe it.
#[derive(Debug, Clone, Serialize)]
pub struct Record {
    #[serde(skip)]
    pub oid: Oid,
    pub commit: String,
    pub txn: u32,
    pub phase: Phase,
    pub kind: Kind,
    pub target: Option<String>,
    pub patches: Vec<PatchEntry>,
    pub dists: Vec<String>,
    pub reverts: Vec<u32>,
    pub files: Vec<String>,
    /// On a revert made because `apply --verify` failed: the transaction it undid.
    pub verify_failed: Option<u32>,
    pub time: i64,
    pub subject: String,
}

#[derive(Debug, Default)]
pub struct History {
    /// Oldest first, along `main`'s first parents.
    pub records: Vec<Record>,
}

pub const TRAILER_TXN: &str = "Gatefix-Txn";
pub const TRAILER_PHASE: &str = "Gatefix-Phase";
pub const TRAILER_KIND: &str = "Gatefix-Action";
pub const TRAILER_TARGET: &str = "Gatefix-Target";
pub const TRAILER_PATCH: &str = "Gatefix-Patch";
pub const TRAILER_DIST: &str = "Gatefix-Dist";
pub const TRAILER_REVERTS: &str = "Gatefix-Reverts";
pub const TRAILER_FILE: &str = "Gatefix-File";
/// On a revert made because `apply --verify CMD` failed: the transaction it undid.
pub const TRAILER_VERIFY_FAILED: &str = "Gatefix-Verify-Failed";

impl History {
    pub fn read(ledger: &Ledger) -> Result<History> {
        let mut records = Vec::new();
        let mut next = ledger.head()?;
        while let Some(commit) = next {
            if let Some(record) = parse(&commit) {
                records.push(record);
            }
            next = commit.parent(0).ok();
        }
        records.reverse();
        Ok(History { records })
    }

    /// The history of the site's ledger (`$GATEFIX_LEDGER`, the recorded one, or the
    /// default), opened only to read: none of the repairs a writing command makes. `None`
    /// where there is no ledger.
    pub fn read_only(site_root: &std::path::Path) -> Result<Option<History>> {
        let (dir, _) = super::place::resolve(site_root, None)?;
        match Ledger::open_unchecked(&dir, site_root)? {
            Some(ledger) => History::read(&ledger).map(Some),
            None => Ok(None),
        }
    }

    /// A warning for any command that reads the site: an interrupted transaction, if the
    /// site's ledger (`$GATEFIX_LEDGER`, the recorded one, or the default) shows one.
    pub fn interrupted_warning(site_root: &std::path::Path) -> Option<String> {
        let (dir, _) = super::place::resolve(site_root, None).ok()?;
        let ledger = Ledger::open(&dir, site_root).ok()??;
        let history = History::read(&ledger).ok()?;
        let record = history.interrupted()?;
        Some(format!(
            "transaction {} ({}) on this site was interrupted; `gatefix revert` restores it",
            record.txn, record.subject
        ))
    }

    /// The transaction `main` stopped in the middle of, if any.
    pub fn interrupted(&self) -> Option<&Record> {
        self.records
            .iter()
            .rev()
            .find(|r| r.phase != Phase::Saved)
            .filter(|r| r.phase == Phase::Begin)
    }

    /// Saved-drift records carry the number of the transaction they precede.
    pub fn next_txn(&self) -> u32 {
        self.records
            .iter()
            .filter(|r| r.phase != Phase::Saved)
            .map(|r| r.txn)
            .max()
            .unwrap_or(0)
            + 1
    }

    /// Applies that took effect and are not reverted, oldest first (their done records).
    pub fn active_applies(&self) -> Vec<&Record> {
        let reverted: Vec<u32> = self
            .records
            .iter()
            .filter(|r| r.phase == Phase::Done && r.kind == Kind::Revert)
            .flat_map(|r| r.reverts.iter().copied())
            .collect();
        self.records
            .iter()
            .filter(|r| r.phase == Phase::Done && r.kind == Kind::Apply)
            .filter(|r| !reverted.contains(&r.txn))
            .collect()
    }

    /// The transaction whose bytes `main` holds for `file` (the last record naming it).
    pub fn last_writer(&self, file: &str) -> u32 {
        self.records
            .iter()
            .rev()
            .find(|r| r.files.iter().any(|f| f == file))
            .map_or(0, |r| r.txn)
    }

    pub fn record(&self, txn: u32, phase: Phase) -> Option<&Record> {
        self.records
            .iter()
            .find(|r| r.txn == txn && r.phase == phase)
    }

    /// How each transaction ended: done, rolled back, or still interrupted.
    pub fn outcome(&self, txn: u32) -> Phase {
        self.records
            .iter()
            .rev()
            .find(|r| r.txn == txn && r.phase != Phase::Saved)
            .map_or(Phase::Begin, |r| r.phase)
    }
}

fn parse(commit: &Commit) -> Option<Record> {
    let message = commit.message()?;
    let trailers = trailers(message);
    let get = |key: &'static str| {
        trailers
            .iter()
            .filter(move |(k, _)| k == key)
            .map(|(_, v)| v.clone())
    };
    let phase = match get(TRAILER_PHASE).next()?.as_str() {
        "begin" => Phase::Begin,
        "done" => Phase::Done,
        "rollback" => Phase::Rollback,
        "saved" => Phase::Saved,
        _ => return None,
    };
    let action = get(TRAILER_KIND).next()?;
    let kind = [Kind::Apply, Kind::Revert]
        .into_iter()
        .find(|k| k.word() == action)?;
    let patches = get(TRAILER_PATCH)
        .map(|v| {
            let mut words = v.split_whitespace();
            let id = words.next().unwrap_or("");
            let status = words.next().unwrap_or("verified");
            PatchEntry {
                id: id.to_string(),
                verified: status != "unverified",
                class: words.next().unwrap_or("safe").to_string(),
            }
        })
        .collect();
    Some(Record {
        oid: commit.id(),
        commit: commit.id().to_string(),
        txn: get(TRAILER_TXN).next()?.parse().ok()?,
        phase,
        kind,
        target: get(TRAILER_TARGET).next(),
        patches,
        dists: get(TRAILER_DIST).collect(),
        reverts: get(TRAILER_REVERTS)
            .flat_map(|v| {
                v.split(',')
                    .filter_map(|n| n.trim().parse().ok())
                    .collect::<Vec<u32>>()
            })
            .collect(),
        files: get(TRAILER_FILE).collect(),
        verify_failed: get(TRAILER_VERIFY_FAILED)
            .next()
            .and_then(|v| v.parse().ok()),
        time: commit.time().seconds(),
        subject: message
            .lines()
            .next()
            .unwrap_or("")
            .trim_start_matches("begin: ")
            .to_string(),
    })
}

/// `Key: value` lines of the message's last paragraph.
fn trailers(message: &str) -> Vec<(String, String)> {
    let last = message.trim_end().rsplit("\n\n").next().unwrap_or("");
    last.lines()
        .filter_map(|line| {
            let (key, value) = line.split_once(": ")?;
            (!key.contains(' ')).then(|| (key.to_string(), value.trim().to_string()))
        })
        .collect()
}

/// Builds a commit message: subject, body, and the trailer paragraph.
pub fn message(subject: &str, body: &str, trailers: &[(&str, String)]) -> String {
    let mut out = format!("{subject}\n\n");
    if !body.trim().is_empty() {
        out.push_str(body.trim_end());
        out.push_str("\n\n");
    }
    for (key, value) in trailers {
        out.push_str(&format!("{key}: {}\n", value.replace('\n', " ")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trailers_come_from_the_last_paragraph() {
        let m = message(
            "apply sm_120: x",
            "Body: not a trailer\n",
            &[(TRAILER_TXN, "3".into()), (TRAILER_FILE, "a/b.py".into())],
        );
        let t = trailers(&m);
        assert_eq!(
            t,
            vec![
                ("Gatefix-Txn".to_string(), "3".to_string()),
                ("Gatefix-File".to_string(), "a/b.py".to_string())
            ]
        );
    }
}
