//! `gatefix revert`, `gatefix status` and `gatefix log`: the commands that read (and, for
//! revert, write back) what the ledger recorded.

use std::fmt::Write as _;

use clap::Args;
use serde::Serialize;

use super::{Format, WriteSiteArgs};
use crate::error::{Error, Result, exit};
use crate::ledger::fsio::temp_path;
use crate::ledger::history::{History, Phase, Record};
use crate::ledger::lock::SiteLock;
use crate::ledger::revert::{Outcome, Which};
use crate::ledger::txn::recover;
use crate::ledger::{Ledger, fault};
use crate::site::site_path;

#[derive(Args, Debug)]
pub struct RevertArgs {
    /// The transaction to undo (see `gatefix status`); default: the last one.
    #[arg(value_name = "TXN", conflicts_with = "all")]
    pub txn: Option<u32>,
    /// Undo every transaction still in effect, newest first.
    #[arg(long)]
    pub all: bool,
    /// Restore files that changed since gatefix wrote them (their current bytes are saved in
    /// the ledger first).
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub site: WriteSiteArgs,
}

#[derive(Args, Debug)]
pub struct StatusArgs {
    #[command(flatten)]
    pub site: WriteSiteArgs,
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
}

#[derive(Args, Debug)]
pub struct LogArgs {
    #[command(flatten)]
    pub site: WriteSiteArgs,
}

fn open(site: &WriteSiteArgs) -> Result<(std::path::PathBuf, Option<Ledger>)> {
    let root = site.site_root()?;
    let dir = site.ledger_dir(&root);
    let ledger = Ledger::open(&dir, &root)?;
    Ok((dir, ledger))
}

pub fn revert(args: RevertArgs) -> Result<i32> {
    let (dir, ledger) = open(&args.site)?;
    let Some(ledger) = ledger else {
        println!("nothing to revert: no ledger at {}", dir.display());
        return Ok(exit::OK);
    };
    let _lock = SiteLock::acquire(&ledger.dir, "gatefix revert")?;
    fault::point("lock taken");
    if let Some(recovered) = recover(&ledger, args.force)? {
        let what = if recovered.finished {
            "finished"
        } else {
            "undone"
        };
        let kind = recovered.kind.word();
        println!(
            "transaction {} ({kind}) had been interrupted; {what}: {} file(s) restored{}",
            recovered.txn,
            recovered.restored.len(),
            list(&recovered.restored)
        );
        fault::report();
        return Ok(exit::OK);
    }
    let which = match (args.txn, args.all) {
        (Some(n), _) => Which::Txn(n),
        (None, true) => Which::All,
        (None, false) => Which::Last,
    };
    match crate::ledger::revert::revert(&ledger, which, args.force)? {
        Outcome::NothingToRevert => println!("nothing to revert: no transaction is in effect"),
        Outcome::Reverted {
            txn,
            reverted,
            restored,
            already_original,
        } => {
            let numbers: Vec<String> = reverted.iter().map(|n| n.to_string()).collect();
            println!(
                "reverted transaction(s) {} as transaction {txn}: {} file(s) restored{}",
                numbers.join(", "),
                restored.len(),
                list(&restored)
            );
            if !already_original.is_empty() {
                println!(
                    "already at their original bytes (reinstalled?): {}",
                    already_original.join(", ")
                );
            }
        }
    }
    fault::report();
    Ok(exit::OK)
}

fn list(files: &[String]) -> String {
    if files.is_empty() {
        String::new()
    } else {
        format!(": {}", files.join(", "))
    }
}

/// What `status` reports, also as JSON.
#[derive(Serialize)]
struct Status {
    site: String,
    ledger: String,
    interrupted: Option<Record>,
    applied: Vec<Record>,
    unverified: Vec<String>,
    drifted: Vec<Drift>,
    leftover_temp_files: Vec<String>,
}

#[derive(Serialize)]
struct Drift {
    file: String,
    txn: u32,
    why: String,
}

pub fn status(args: StatusArgs) -> Result<i32> {
    let root = args.site.site_root()?;
    let dir = args.site.ledger_dir(&root);
    let Some(ledger) = Ledger::open(&dir, &root)? else {
        match args.format {
            Format::Json => {
                // The same document as with a ledger, so tools need not special-case it.
                let empty = Status {
                    site: root.display().to_string(),
                    ledger: dir.display().to_string(),
                    interrupted: None,
                    applied: Vec::new(),
                    unverified: Vec::new(),
                    drifted: Vec::new(),
                    leftover_temp_files: Vec::new(),
                };
                println!(
                    "{}",
                    serde_json::to_string_pretty(&empty).expect("status serialises")
                );
            }
            Format::Human => println!("no gatefix transactions: no ledger at {}", dir.display()),
        }
        return Ok(exit::OK);
    };
    let history = History::read(&ledger)?;
    let status = collect_status(&ledger, &history)?;
    match args.format {
        Format::Json => println!(
            "{}",
            serde_json::to_string_pretty(&status).expect("status serialises")
        ),
        Format::Human => print!("{}", human_status(&status)),
    }
    Ok(exit::OK)
}

fn collect_status(ledger: &Ledger, history: &History) -> Result<Status> {
    let head = ledger.head()?;
    let applied: Vec<Record> = history.active_applies().into_iter().cloned().collect();
    let mut drifted = Vec::new();
    let mut leftover = Vec::new();
    for record in &applied {
        for file in &record.files {
            let why = match (site_path(&ledger.site_root, file), &head) {
                (Err(why), _) => Some(why),
                (Ok(path), Some(head)) => {
                    let current = std::fs::read(&path).ok();
                    (current != ledger.blob(head, file))
                        .then(|| "changed since gatefix wrote it".to_string())
                }
                (Ok(_), None) => None,
            };
            if let Some(why) = why {
                drifted.push(Drift {
                    file: file.clone(),
                    txn: record.txn,
                    why,
                });
            }
        }
    }
    for record in &history.records {
        for file in &record.files {
            let temp = temp_path(&ledger.site_root.join(file), record.txn);
            if temp.exists() && !leftover.contains(&file.to_string()) {
                leftover.push(temp.display().to_string());
            }
        }
    }
    let unverified = applied
        .iter()
        .flat_map(|r| {
            r.patches
                .iter()
                .filter(|p| !p.verified)
                .map(move |p| format!("{} (transaction {})", p.id, r.txn))
        })
        .collect();
    Ok(Status {
        site: ledger.site_root.display().to_string(),
        ledger: ledger.dir.display().to_string(),
        interrupted: history.interrupted().cloned(),
        applied,
        unverified,
        drifted,
        leftover_temp_files: leftover,
    })
}

fn human_status(status: &Status) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "site   {}\nledger {}", status.site, status.ledger);
    if let Some(r) = &status.interrupted {
        let _ = writeln!(
            out,
            "INTERRUPTED: transaction {} ({}) did not finish; run `gatefix revert` to restore the site",
            r.txn, r.subject
        );
    }
    if status.applied.is_empty() {
        let _ = writeln!(out, "no transaction in effect");
    }
    for r in &status.applied {
        let _ = writeln!(
            out,
            "transaction {}: {} ({} file(s): {})",
            r.txn,
            r.subject,
            r.files.len(),
            r.files.join(", ")
        );
        for p in &r.patches {
            let _ = writeln!(out, "  {}: {} fix", p.id, p.class);
        }
    }
    for p in &status.unverified {
        let _ = writeln!(
            out,
            "UNVERIFIED: {p} was applied without a kernel proven for its target"
        );
    }
    for d in &status.drifted {
        let _ = writeln!(out, "DRIFT: {} (transaction {}): {}", d.file, d.txn, d.why);
    }
    for t in &status.leftover_temp_files {
        let _ = writeln!(out, "leftover temp file: {t} (`gatefix revert` removes it)");
    }
    out
}

pub fn log(args: LogArgs) -> Result<i32> {
    let (dir, ledger) = open(&args.site)?;
    let Some(ledger) = ledger else {
        println!("no gatefix transactions: no ledger at {}", dir.display());
        return Ok(exit::OK);
    };
    let history = History::read(&ledger)?;
    for record in history.records.iter().filter(|r| r.phase != Phase::Begin) {
        println!("{}", log_line(record));
    }
    if let Some(r) = history.interrupted() {
        println!("{}  (interrupted: run `gatefix revert`)", log_line(r));
    }
    if history.records.is_empty() {
        return Err(Error::input(format!(
            "{}: a ledger without gatefix transactions",
            dir.display()
        )));
    }
    Ok(exit::OK)
}

fn log_line(r: &Record) -> String {
    let phase = match r.phase {
        Phase::Begin => "begun",
        Phase::Done => "done",
        Phase::Rollback => "rolled back",
        Phase::Saved => "saved drift",
    };
    format!(
        "{:>4}  {}  {:<11}  {}",
        r.txn,
        short_commit(&r.commit),
        phase,
        r.subject
    )
}

fn short_commit(commit: &str) -> &str {
    &commit[..commit.len().min(10)]
}
