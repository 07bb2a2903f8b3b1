//! `gatefix revert`, `gatefix status` and `gatefix log`: the commands that read (and, for
//! revert, write back) what the ledger recorded.

use std::fmt::Write as _;

use clap::Args;
use serde::Serialize;

use super::args::{Format, WriteSiteArgs};
use crate::error::{Error, Result, exit};
use crate::ledger::fsio::temp_path;
use crate::ledger::history::{History, Phase, Record};
use crate::ledger::lock::SiteLock;
use crate::ledger::revert::{Outcome, Which};
use crate::ledger::txn::recover;
use crate::ledger::witness::{self, FileState, State, Witness};
use crate::ledger::{Ledger, fault};
use crate::patch::PatchSet;
use crate::site::{Site, site_path};

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
    /// Check every object of the ledger (every commit, tree and blob, reachable or not),
    /// not only those the transactions in effect need.
    #[arg(long)]
    pub fsck: bool,
    /// Compare every file of every distribution with its RECORD, not only the files the
    /// ledger and the shipped patches touch.
    #[arg(long)]
    pub all: bool,
}

#[derive(Args, Debug)]
pub struct LogArgs {
    #[command(flatten)]
    pub site: WriteSiteArgs,
}

fn open(site: &WriteSiteArgs) -> Result<(std::path::PathBuf, Option<Ledger>)> {
    let root = site.announced_site_root()?;
    let dir = site.ledger_dir(&root)?;
    let ledger = Ledger::open(&dir, &root)?;
    Ok((dir, ledger))
}

pub fn revert(args: RevertArgs) -> Result<i32> {
    let (dir, ledger) = open(&args.site)?;
    let Some(ledger) = ledger else {
        let root = args.site.site_root()?;
        let site = Site::open(&root)?;
        let states = examine(&site, &shipped_patches(&site), None, false);
        if let Some(report) = unexplained_report(&states, &dir, false) {
            print!("{report}");
            return Ok(exit::FINDINGS);
        }
        println!("nothing to revert: no ledger at {}", dir.display());
        return Ok(exit::OK);
    };
    let _lock = SiteLock::acquire(&ledger.site_root, &ledger.dir, "gatefix revert")?;
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
        Outcome::NothingToRevert => {
            let site = Site::open(&ledger.site_root)?;
            let history = History::read(&ledger)?;
            let states = examine(
                &site,
                &shipped_patches(&site),
                Some((&ledger, &history)),
                false,
            );
            if let Some(report) = unexplained_report(&states, &ledger.dir, true) {
                print!("{report}");
                fault::report();
                return Ok(exit::FINDINGS);
            }
            println!("nothing to revert: no transaction is in effect")
        }
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
    /// Files of transactions in effect that are back at their bytes before the transaction
    /// (pip put them back): `gatefix apply` re-applies those patches as a new transaction.
    undone_by_reinstall: Vec<Undone>,
    leftover_temp_files: Vec<String>,
    /// Objects the transactions in effect need (or, with --fsck, any object) that cannot be
    /// read back or do not match their id.
    damaged: Vec<String>,
    /// Files compared with their distribution's RECORD that are not simply as pip installed
    /// them (patched by gatefix, reinstalled, changed by someone else, unreadable).
    site_files: Vec<FileState>,
    /// How many files were compared with RECORD.
    files_checked: usize,
    /// Commands that restore pip's bytes for the files no transaction explains.
    way_back: Vec<String>,
    /// With --fsck: how many objects were checked.
    #[serde(skip_serializing_if = "Option::is_none")]
    objects_checked: Option<usize>,
    /// A transaction in effect whose `--verify` check started and never finished (gatefix
    /// was killed while it ran): applied, and checked by nobody.
    verify_unfinished: Option<crate::ledger::checking::Unfinished>,
}

#[derive(Serialize)]
struct Drift {
    file: String,
    txn: u32,
    why: String,
}

pub fn status(args: StatusArgs) -> Result<i32> {
    let root = args.site.announced_site_root()?;
    let dir = args.site.ledger_dir(&root)?;
    let site = Site::open(&root)?;
    // The error every other command gives for a damaged history points to `status --fsck`:
    // that must list the damage, not refuse with the same error.
    if args.fsck
        && let Some(ledger) = Ledger::open_unchecked(&dir, &root)?
        && let Err(error) = ledger.check_history()
    {
        let (checked, problems) = ledger.fsck();
        let mut status = empty_status(&root, &dir);
        status.objects_checked = Some(checked);
        status.damaged = problems.into_iter().map(|(_, problem)| problem).collect();
        if status.damaged.is_empty() {
            status.damaged.push(error.to_string());
        }
        match args.format {
            Format::Json => println!(
                "{}",
                serde_json::to_string_pretty(&status).expect("status serialises")
            ),
            Format::Human => print!("{}", human_status(&status)),
        }
        eprintln!("gatefix: {error}");
        return Ok(exit::USAGE);
    }
    let Some(ledger) = Ledger::open(&dir, &root)? else {
        let states = examine(&site, &shipped_patches(&site), None, args.all);
        let mut status = empty_status(&root, &dir);
        fill_site_files(&mut status, states);
        match args.format {
            // The same document as with a ledger, so tools need not special-case it.
            Format::Json => println!(
                "{}",
                serde_json::to_string_pretty(&status).expect("status serialises")
            ),
            Format::Human => match unexplained_report(&status.site_files, &dir, false) {
                Some(report) => print!("site   {}\n{report}", root.display()),
                None => println!("no gatefix transactions: no ledger at {}", dir.display()),
            },
        }
        return Ok(if status.way_back.is_empty() && !has_unexplained(&status) {
            exit::OK
        } else {
            exit::FINDINGS
        });
    };
    let history = History::read(&ledger)?;
    let shipped = shipped_patches(&site);
    let mut status = collect_status(&ledger, &history, &shipped)?;
    let states = examine(&site, &shipped, Some((&ledger, &history)), args.all);
    fill_site_files(&mut status, states);
    if args.fsck {
        let (checked, problems) = ledger.fsck();
        status.objects_checked = Some(checked);
        for (oid, problem) in problems {
            let oid = oid.to_string();
            if !status.damaged.iter().any(|d| d.contains(&oid)) {
                status.damaged.push(problem);
            }
        }
    }
    match args.format {
        Format::Json => println!(
            "{}",
            serde_json::to_string_pretty(&status).expect("status serialises")
        ),
        Format::Human => {
            print!("{}", human_status(&status));
            if let Some(report) = unexplained_report(&status.site_files, &ledger.dir, true) {
                print!("{report}");
            }
        }
    }
    if !status.damaged.is_empty() {
        eprintln!(
            "gatefix: the ledger {} has {} damaged object(s); `gatefix revert` would refuse to use them",
            ledger.dir.display(),
            status.damaged.len()
        );
        return Ok(exit::USAGE);
    }
    if has_unexplained(&status) {
        return Ok(exit::FINDINGS);
    }
    // Something a person must act on: exit 1, as audit does for a finding.
    if status.interrupted.is_some()
        || !status.drifted.is_empty()
        || status.verify_unfinished.is_some()
    {
        return Ok(exit::FINDINGS);
    }
    Ok(exit::OK)
}

fn empty_status(root: &std::path::Path, dir: &std::path::Path) -> Status {
    Status {
        site: root.display().to_string(),
        ledger: dir.display().to_string(),
        interrupted: None,
        applied: Vec::new(),
        unverified: Vec::new(),
        drifted: Vec::new(),
        undone_by_reinstall: Vec::new(),
        leftover_temp_files: Vec::new(),
        damaged: Vec::new(),
        site_files: Vec::new(),
        files_checked: 0,
        way_back: Vec::new(),
        objects_checked: None,
        verify_unfinished: None,
    }
}

fn has_unexplained(status: &Status) -> bool {
    status
        .site_files
        .iter()
        .any(|s| matches!(s.state, State::NotByGatefix | State::RecordConflict))
}

fn fill_site_files(status: &mut Status, states: Vec<FileState>) {
    status.files_checked = states.len();
    status.way_back = witness::way_back(&states);
    status.site_files = states
        .into_iter()
        .filter(|s| witness::describe(s).is_some())
        .collect();
}

/// The files to compare with RECORD: every file the ledger names, every file a shipped patch
/// for an installed distribution edits, and with `all` every file of every RECORD.
fn examine(
    site: &Site,
    shipped: &PatchSet,
    ledger: Option<(&Ledger, &History)>,
    all: bool,
) -> Vec<FileState> {
    let witness = Witness::new(site);
    let mut files: Vec<String> = if all { witness.all_files() } else { Vec::new() };
    if let Some((_, history)) = ledger {
        files.extend(history.records.iter().flat_map(|r| r.files.iter().cloned()));
    }
    let installed: Vec<&str> = site.distributions.iter().map(|d| d.name.as_str()).collect();
    files.extend(
        shipped
            .patches
            .iter()
            .filter(|p| installed.iter().any(|d| same_dist(d, &p.dist)))
            .flat_map(|p| p.edits.iter().map(|e| e.file.clone())),
    );
    witness.examine(ledger, &files)
}

/// Distribution names compare as PEP 503 normalises them.
fn same_dist(a: &str, b: &str) -> bool {
    let norm = |s: &str| s.to_ascii_lowercase().replace(['_', '.'], "-");
    norm(a) == norm(b)
}

/// For files no transaction explains: what they are, and the way back.
fn unexplained_report(
    states: &[FileState],
    dir: &std::path::Path,
    has_ledger: bool,
) -> Option<String> {
    let foreign: Vec<&FileState> = states
        .iter()
        .filter(|s| s.state == State::NotByGatefix)
        .collect();
    // With a ledger, `human_status` lists these beside the transactions.
    let mut conflicts = String::new();
    if !has_ledger {
        for s in states.iter().filter(|s| s.state == State::RecordConflict) {
            if let Some(line) = witness::describe(s) {
                let _ = writeln!(conflicts, "{line}");
            }
        }
    }
    if foreign.is_empty() {
        return (!conflicts.is_empty()).then_some(conflicts);
    }
    let mut out = conflicts;
    if !has_ledger {
        let _ = writeln!(
            out,
            "no ledger at {}, but the site is patched:",
            dir.display()
        );
    }
    for s in &foreign {
        if let Some(line) = witness::describe(s) {
            let _ = writeln!(out, "{line}");
        }
    }
    let _ = writeln!(
        out,
        "the ledger that explains these files was expected at {}; if it is elsewhere, name it with --ledger DIR \
         (or $GATEFIX_LEDGER). To put back the bytes pip installed:",
        dir.display()
    );
    for command in witness::way_back(states) {
        let _ = writeln!(out, "  {command}");
    }
    Some(out)
}

/// Every object the transactions in effect (and an interrupted one) need to be undone: their
/// pre-images, and the bytes gatefix last wrote (what drift is measured against).
fn needed_objects(ledger: &Ledger, history: &History, damaged: &mut Vec<String>) {
    let mut check = |commit: &git2::Commit, txn: u32, role: &str, file: &str| {
        if let Err(e) = ledger.blob(commit, file) {
            damaged.push(format!("transaction {txn}: the {role} of {file}: {e}"));
        }
    };
    let mut needs: Vec<(&Record, Phase)> = history
        .active_applies()
        .into_iter()
        .map(|r| (r, Phase::Begin))
        .collect();
    if let Some(r) = history.interrupted() {
        needs.push((r, Phase::Begin));
    }
    for (record, phase) in needs {
        let Some(begin) = history.record(record.txn, phase) else {
            continue;
        };
        let Ok(commit) = ledger.repo.find_commit(begin.oid) else {
            continue;
        };
        for file in &record.files {
            check(&commit, record.txn, "pre-image", file);
        }
    }
    if let Some(pending) = ledger.pending()
        && let Some(r) = history.interrupted()
    {
        for file in &r.files {
            check(&pending, r.txn, "post-image", file);
        }
    }
}

#[derive(Serialize)]
struct Undone {
    file: String,
    txn: u32,
    patches: Vec<String>,
}

/// The shipped patches as they read for this site: on a fork of a package they were written
/// for, naming the fork's files and distribution, as `apply` reads them.
fn shipped_patches(site: &Site) -> PatchSet {
    crate::rules::Rules::load_for_site_quietly(None, site)
        .ok()
        .and_then(|rules| PatchSet::load_for_site(None, &rules).ok())
        .or_else(|| PatchSet::load(None).ok())
        .unwrap_or_default()
}

/// The patches of a transaction that edit a file: those of the shipped set that name it, or
/// (a synthesized fix, a patch from --patches) every patch of the transaction.
fn patches_of(record: &Record, file: &str, shipped: &PatchSet) -> Vec<String> {
    let named: Vec<String> = record
        .patches
        .iter()
        .filter(|p| {
            shipped
                .get(&p.id)
                .is_some_and(|patch| patch.files().contains(&file))
        })
        .map(|p| p.id.clone())
        .collect();
    if named.is_empty() {
        record.patches.iter().map(|p| p.id.clone()).collect()
    } else {
        named
    }
}

/// The bytes a file had before a transaction (its begin commit's tree).
fn pre_image(ledger: &Ledger, history: &History, txn: u32, file: &str) -> Option<Vec<u8>> {
    let begin = history.record(txn, Phase::Begin)?;
    let commit = ledger.repo.find_commit(begin.oid).ok()?;
    ledger.blob(&commit, file).ok().flatten()
}

fn collect_status(ledger: &Ledger, history: &History, shipped: &PatchSet) -> Result<Status> {
    let head = ledger.head()?;
    let applied: Vec<Record> = history.active_applies().into_iter().cloned().collect();
    let mut drifted = Vec::new();
    let mut undone = Vec::new();
    let mut leftover = Vec::new();
    let mut damaged = Vec::new();
    needed_objects(ledger, history, &mut damaged);
    for record in &applied {
        for file in &record.files {
            let why = match (site_path(&ledger.site_root, file), &head) {
                (Err(why), _) => Some(why),
                (Ok(path), Some(head)) => {
                    let current = std::fs::read(&path).ok();
                    match ledger.blob(head, file) {
                        Ok(last) => {
                            if current != last
                                && current.is_some()
                                && pre_image(ledger, history, record.txn, file) == current
                            {
                                undone.push(Undone {
                                    file: file.clone(),
                                    txn: record.txn,
                                    patches: patches_of(record, file, shipped),
                                });
                                None
                            } else {
                                (current != last)
                                    .then(|| "changed since gatefix wrote it".to_string())
                            }
                        }
                        Err(e) => {
                            damaged.push(format!(
                                "transaction {}: the last written bytes of {file}: {e}",
                                history.last_writer(file)
                            ));
                            None
                        }
                    }
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
    let verify_unfinished = crate::ledger::checking::unfinished(ledger)
        .filter(|u| applied.iter().any(|r| r.txn == u.txn));
    Ok(Status {
        verify_unfinished,
        site: ledger.site_root.display().to_string(),
        ledger: ledger.dir.display().to_string(),
        interrupted: history.interrupted().cloned(),
        applied,
        undone_by_reinstall: undone,
        unverified,
        drifted,
        leftover_temp_files: leftover,
        damaged,
        site_files: Vec::new(),
        files_checked: 0,
        way_back: Vec::new(),
        objects_checked: None,
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
    if let Some(u) = &status.verify_unfinished {
        let _ = writeln!(
            out,
            "NOT VERIFIED: transaction {}'s check `{}` started and never finished (gatefix was stopped while it ran); run it yourself, and `gatefix revert {}` if it fails",
            u.txn, u.command, u.txn
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
    for u in &status.undone_by_reinstall {
        let _ = writeln!(
            out,
            "UNDONE BY A REINSTALL: {} (transaction {}) is back at its original bytes; `gatefix apply` re-applies {}",
            u.file,
            u.txn,
            u.patches.join(", ")
        );
    }
    for d in &status.drifted {
        let _ = writeln!(out, "DRIFT: {} (transaction {}): {}", d.file, d.txn, d.why);
    }
    for f in status
        .site_files
        .iter()
        .filter(|f| f.state != State::NotByGatefix)
    {
        if let Some(line) = witness::describe(f) {
            let _ = writeln!(out, "{line}");
        }
    }
    for d in &status.damaged {
        let _ = writeln!(out, "DAMAGED: {d}");
    }
    if let Some(n) = status.objects_checked {
        let _ = writeln!(
            out,
            "fsck: {n} object(s) checked, {} damaged",
            status.damaged.len()
        );
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
