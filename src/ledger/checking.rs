//! A `--verify` check in progress, recorded in the ledger folder before the command starts
//! and removed once its outcome is acted on (passed, or the transaction reverted). A kill
//! while the check runs leaves the record: `status` then reports a transaction in effect
//! that nobody checked, instead of a clean site.

use std::path::Path;

use serde::Serialize;

use super::{Ledger, fsio};
use crate::error::{Error, Result};

const FILE: &str = "verify-running";

/// The check that started and never finished.
#[derive(Debug, Clone, Serialize)]
pub struct Unfinished {
    pub txn: u32,
    pub command: String,
}

/// Records that transaction `txn`'s check `command` is starting (synced before it runs).
pub fn begin(ledger: &Ledger, txn: u32, command: &str) -> Result<()> {
    let path = ledger.dir.join(FILE);
    let temp = ledger.dir.join(format!("{FILE}.tmp"));
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| Error::Io { path, source }
    };
    // The command on one line: a record another gatefix reads back, not a script.
    let text = format!("{txn}\n{}\n", command.replace('\n', " "));
    std::fs::write(&temp, text).map_err(io(&temp))?;
    std::fs::File::open(&temp)
        .and_then(|f| f.sync_all())
        .map_err(io(&temp))?;
    std::fs::rename(&temp, &path).map_err(io(&path))?;
    fsio::sync_dir(&ledger.dir).map_err(io(&ledger.dir))
}

/// The check is over and acted on.
pub fn end(ledger: &Ledger) -> Result<()> {
    let path = ledger.dir.join(FILE);
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(Error::Io { path, source }),
    }
}

/// The check a killed gatefix left running, if any.
pub fn unfinished(ledger: &Ledger) -> Option<Unfinished> {
    let text = std::fs::read_to_string(ledger.dir.join(FILE)).ok()?;
    let mut lines = text.lines();
    let txn = lines.next()?.trim().parse().ok()?;
    let command = lines.next().unwrap_or("").to_string();
    Some(Unfinished { txn, command })
}
