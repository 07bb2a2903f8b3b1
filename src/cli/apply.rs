//! `gatefix apply TARGET`: plan every patch, refuse what no kernel backs, write the rest in
//! one ledger transaction (or, with `--dry-run`, show the diffs and write nothing).

use std::path::PathBuf;

use clap::Args;

use super::WriteSiteArgs;
use crate::arch::Arch;
use crate::error::{Error, Result, exit};
use crate::kernel::query::{KernelIndex, Requirement};
use crate::ledger::history::{History, Kind, PatchEntry};
use crate::ledger::lock::SiteLock;
use crate::ledger::txn::{self, Change, Meta};
use crate::ledger::{Ledger, fault};
use crate::patch::{Decision, Patch, PatchSet, plan};
use crate::report::patches as render;
use crate::rules::Rules;
use crate::scan::{ScanOptions, scan_with};
use crate::site::Site;

#[derive(Args, Debug)]
pub struct ApplyArgs {
    /// The GPU to open gates for: sm_120, sm120, 12.0, 120 ...
    pub target: Arch,
    #[command(flatten)]
    pub site: WriteSiteArgs,
    /// Show the diffs and the kernel evidence; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Only this patch (repeatable); default: every patch meant for the site and target.
    #[arg(long = "patch", value_name = "ID")]
    pub patches: Vec<String>,
    /// Apply patches whose kernel is missing or unknown anyway. Loud, and recorded in the
    /// ledger as unverified.
    #[arg(long)]
    pub force_unverified: bool,
    /// Read patches from this folder's *.toml instead of the embedded ones.
    #[arg(long = "patches", value_name = "DIR")]
    pub patch_dir: Option<PathBuf>,
    /// Read rules from this folder's *.toml instead of the embedded ones.
    #[arg(long, value_name = "DIR")]
    pub rules: Option<PathBuf>,
}

pub fn run(args: ApplyArgs) -> Result<i32> {
    let root = args.site.announced_site_root()?;
    let site = Site::open(&root)?;
    let patches = PatchSet::load(args.patch_dir.as_deref())?;
    let rules = Rules::load(args.rules.as_deref())?;
    let selected = select(&patches, &args.patches)?;
    let ledger_dir = args.site.ledger_dir(&site.root)?;

    // The lock is held from before the plan is made until the transaction is recorded, so
    // no other gatefix can change the site between the two.
    let _lock = if args.dry_run {
        None
    } else {
        Some(SiteLock::acquire(&ledger_dir, "gatefix apply")?)
    };
    fault::point("lock taken");
    if let Some(ledger) = Ledger::open(&ledger_dir, &site.root)?
        && let Some(interrupted) = History::read(&ledger)?.interrupted()
    {
        return Err(Error::refused(format!(
            "transaction {} ({}) was interrupted; run `gatefix revert` to restore the site first",
            interrupted.txn, interrupted.subject
        )));
    }

    let needs_libraries = selected
        .iter()
        .flat_map(|p| &p.requires)
        .any(|r| matches!(r, Requirement::Library { .. }));
    let kernels = || kernel_index(&site, &rules, needs_libraries);
    let input = plan::PlanInput {
        site: &site,
        target: args.target,
        force_unverified: args.force_unverified,
        kernels: &kernels,
    };
    let plan = plan::plan(&selected, &input);
    fault::point("plan made");
    print!("{}", render::plan(&plan, args.target));
    let code = exit_code(&plan, !args.patches.is_empty());
    if args.dry_run {
        print!("{}", render::diffs(&plan));
        eprintln!("gatefix: dry run: nothing was written");
        return Ok(code);
    }
    if plan.files.is_empty() {
        eprintln!("gatefix: nothing to write");
        return Ok(code);
    }
    warn_unverified(&plan);
    let ledger = Ledger::open_or_init(&ledger_dir, &site.root)?;
    let meta = apply_meta(&plan, args.target);
    let changes: Vec<Change> = plan
        .files
        .iter()
        .map(|f| Change {
            path: f.path.clone(),
            old: f.old.clone(),
            new: f.new.clone(),
        })
        .collect();
    let number = txn::run(&ledger, &meta, &changes)?;
    fault::report();
    println!(
        "applied as transaction {number}: {} file(s) changed; ledger {}",
        changes.len(),
        ledger.dir.display()
    );
    Ok(code)
}

fn select<'p>(set: &'p PatchSet, ids: &[String]) -> Result<Vec<&'p Patch>> {
    if ids.is_empty() {
        return Ok(set.patches.iter().collect());
    }
    ids.iter()
        .map(|id| {
            set.get(id).ok_or_else(|| {
                let known: Vec<&str> = set.patches.iter().map(|p| p.id.as_str()).collect();
                Error::input(format!(
                    "no patch `{id}`; known patches: {}",
                    known.join(", ")
                ))
            })
        })
        .collect()
}

fn kernel_index(site: &Site, rules: &Rules, libraries: bool) -> KernelIndex {
    let options = ScanOptions {
        kernel_sources: true,
        ..ScanOptions::default()
    };
    let scan = scan_with(site, rules, options);
    if libraries {
        KernelIndex::build(site, &scan)
    } else {
        KernelIndex::build_jit_only(site, &scan)
    }
}

/// 3 when a patch meant for this site was refused or did not fit it; a patch named with
/// `--patch` that is not for the site counts too.
fn exit_code(plan: &plan::Plan, named: bool) -> i32 {
    let troubled = plan.patches.iter().any(|p| match &p.decision {
        Decision::Refused(_) | Decision::NotApplicable(_) => true,
        Decision::NotForSite(_) => named,
        _ => false,
    });
    if troubled { exit::REFUSED } else { exit::OK }
}

fn warn_unverified(plan: &plan::Plan) {
    for patch in plan.ready() {
        if let Decision::Ready { verified: false } = patch.decision {
            eprintln!(
                "gatefix: WARNING: applying {} WITHOUT a kernel for the target (--force-unverified). \
                 The opened path may crash at run time; the ledger marks it unverified. \
                 `gatefix revert` undoes it.",
                patch.patch.id
            );
        }
    }
}

fn apply_meta(plan: &plan::Plan, target: Arch) -> Meta {
    let ready: Vec<_> = plan.ready().collect();
    let ids: Vec<&str> = ready.iter().map(|p| p.patch.id.as_str()).collect();
    let mut dists: Vec<String> = ready
        .iter()
        .map(|p| {
            format!(
                "{} {}",
                p.patch.dist,
                p.dist_version.as_deref().unwrap_or("?")
            )
        })
        .collect();
    dists.sort();
    dists.dedup();
    Meta {
        kind: Kind::Apply,
        target: Some(target.to_string()),
        patches: ready
            .iter()
            .map(|p| PatchEntry {
                id: p.patch.id.clone(),
                verified: matches!(p.decision, Decision::Ready { verified: true }),
            })
            .collect(),
        dists,
        reverts: Vec::new(),
        subject: format!("apply {target}: {}", ids.join(", ")),
        body: render::evidence_body(&ready),
    }
}
