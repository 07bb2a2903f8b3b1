//! `gatefix apply TARGET`: plan every patch, refuse what no kernel backs, write the rest in
//! one ledger transaction (or, with `--dry-run`, show the diffs and write nothing).

use std::cell::OnceCell;

use crate::arch::Arch;
use crate::cli::args::TargetArgs;
use crate::cli::audit::cached_jit;
use crate::error::{Error, Result, exit};
use crate::kernel::jit::JitIndex;
use crate::kernel::query::KernelIndex;
use crate::kernel::requirement::Requirement;
use crate::ledger::history::{History, Kind, PatchEntry};
use crate::ledger::lock::SiteLock;
use crate::ledger::txn::{self, Change, Meta};
use crate::ledger::witness::{self, Witness};
use crate::ledger::{Ledger, fault};
use crate::patch::synth;
use crate::patch::{Decision, Patch, PatchSet, plan};
use crate::report::patches as render;
use crate::rules::Rules;
use crate::scan::{LoweringMemo, ScanResult, scan_overlay_with};
use crate::site::Site;

mod args;
mod synthesis;
mod verify;

pub use args::ApplyArgs;

pub fn run(args: ApplyArgs) -> Result<i32> {
    if args.verify.as_deref().is_some_and(|c| c.trim().is_empty()) {
        return Err(Error::input(
            "--verify needs a command to run after the apply (a smoke test such as `python -c 'import sglang'`); an empty one would pass without checking anything",
        ));
    }
    let root = args.site.announced_site_root()?;
    let site = Site::open(&root)?;
    let rules = Rules::load_for_site(args.rules.as_deref(), &site)?;
    let patches = PatchSet::load_for_site(args.patch_dir.as_deref(), &rules)?;
    let selected = select(&patches, &args.patches)?;
    let ledger_dir = args.site.ledger_dir(&site.root)?;

    // The lock is held from before the plan is made until the transaction is recorded, so
    // no other gatefix can change the site between the two.
    let _lock = if args.dry_run {
        None
    } else {
        Some(SiteLock::acquire(&site.root, &ledger_dir, "gatefix apply")?)
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
    let needs_dsl = selected
        .iter()
        .flat_map(|p| &p.requires)
        .any(|r| matches!(r, Requirement::Dsl(_)));
    // One scan of the site (kernel sources included: the options synthesis needs) serves the
    // kernel index and the synthesis audit, and one kernel index serves both plans: nothing
    // is written in between, so a second scan would find the same.
    // With fixes to synthesize, its lowerings are kept for the re-resolutions (`LoweringMemo`).
    let request = synthesis::wanted(&args)?;
    let memo = request.as_ref().map(|_| LoweringMemo::default());
    let site_scan: OnceCell<ScanResult> = OnceCell::new();
    let scan = || {
        site_scan.get_or_init(|| {
            let no_edits = std::collections::HashMap::new();
            scan_overlay_with(&site, &rules, synth::SCAN_OPTIONS, &no_edits, memo.as_ref())
        })
    };
    // Without synthesis the scan serves only the JIT sources, which an earlier audit of the
    // unchanged site (same targets and options) keeps in gatefix's cache.
    let cached_jit = if request.is_none() {
        let targets = TargetArgs {
            arch_check: args.arch_check.clone(),
            targets: vec![args.target],
            cuda: args.cuda.clone(),
            rules: args.rules.clone(),
        };
        cached_jit(&site, &rules, &targets, synth::SCAN_OPTIONS, &args.cache)?
    } else {
        None
    };
    if cached_jit.is_some() {
        eprintln!(
            "gatefix: the site is unchanged since an earlier audit at {}: its JIT sources were \
             read from gatefix's cache",
            args.target
        );
    }
    let cached_jit = std::cell::Cell::new(cached_jit);
    let kernel_cell: OnceCell<KernelIndex> = OnceCell::new();
    let kernels = || {
        kernel_cell.get_or_init(|| {
            let jit = cached_jit
                .take()
                .unwrap_or_else(|| JitIndex::build(&site, scan()));
            // The DSL's op uses under branch tests are judged by the scan's gates there.
            let gates = needs_dsl.then(|| scan().gates.as_slice());
            kernel_index(&site, jit, needs_libraries, gates)
        })
    };
    let input = plan::PlanInput {
        site: &site,
        target: args.target,
        force_unverified: args.force_unverified,
        kernels: &kernels,
    };
    let curated_plan = plan::plan(&selected, &input);
    let synthesized = match (&request, &memo) {
        (Some(request), Some(memo)) => {
            synthesis::run(&site, &rules, scan(), memo, &args, request, &curated_plan)?
        }
        _ => Vec::new(),
    };
    drop(curated_plan);
    let fixes: Vec<&Patch> = synthesized
        .iter()
        .filter_map(|o| o.fix.as_ref().ok())
        .collect();
    let mut all = selected.clone();
    all.extend(fixes.iter().copied());
    let mut plan = plan::plan(&all, &input);
    crate::patch::overrides::attach(&mut plan, &rules.overrides, &site);
    fault::point("plan made");
    print!("{}", render::plan(&plan, args.target));
    print!("{}", render::no_fixes(&synthesized));
    let mut code = exit_code(&plan, !args.patches.is_empty());
    if !args.gates.is_empty() && synthesized.iter().any(|o| o.fix.is_err()) {
        code = exit::REFUSED;
    }
    if args.dry_run {
        print!("{}", render::diffs(&plan));
        if let Some(dir) = &args.emit_patches {
            emit(dir, &plan)?;
        }
        eprintln!("gatefix: dry run: nothing was written");
        return Ok(code);
    }
    if unexplained_already_applied(&site, &ledger_dir, &plan)? {
        code = code.max(exit::FINDINGS);
    }
    if plan.files.is_empty() {
        eprintln!("gatefix: nothing to write");
        return Ok(code);
    }
    warn_unverified(&plan);
    let changes: Vec<Change> = plan
        .files
        .iter()
        .map(|f| Change {
            path: f.path.clone(),
            old: f.old.clone(),
            new: f.new.clone(),
        })
        .collect();
    // Room for the whole transaction before anything is created, the ledger included.
    let sizes: Vec<(usize, usize)> = changes.iter().map(|c| (c.old.len(), c.new.len())).collect();
    crate::ledger::space::check(&site.root, &ledger_dir, &sizes)?;
    let ledger = Ledger::open_or_init(&ledger_dir, &site.root)?;
    let meta = apply_meta(&plan, args.target);
    let number = txn::run(&ledger, &meta, &changes)?;
    println!(
        "applied as transaction {number}: {} file(s) changed; ledger {}",
        changes.len(),
        ledger.dir.display()
    );
    match &args.verify {
        None => {
            println!(
                "next: run your smoke test (a tiny forward pass, `pytest -x tests/smoke.py`), or let gatefix do it and revert on failure: \
                 gatefix revert {}; gatefix apply {} ... --verify 'CMD'",
                number, args.target
            );
        }
        Some(command) => {
            crate::ledger::checking::begin(&ledger, number, command)?;
            fault::point("verify started");
            match verify::run(command, std::time::Duration::from_secs(args.verify_timeout)) {
                Ok(()) => {
                    crate::ledger::checking::end(&ledger)?;
                    println!("verify: `{command}` passed")
                }
                Err(failure) => {
                    eprintln!("gatefix: verify: `{command}` {}", failure.what);
                    for line in &failure.tail {
                        eprintln!("  | {line}");
                    }
                    let why = format!(
                        "command: {command}\nresult: {}\nlast lines:\n{}",
                        failure.what,
                        failure.tail.join("\n")
                    );
                    let outcome =
                        crate::ledger::revert::revert_verify_failed(&ledger, number, &why)?;
                    crate::ledger::checking::end(&ledger)?;
                    if let crate::ledger::revert::Outcome::Reverted { txn, restored, .. } = outcome
                    {
                        println!(
                            "verify failed: transaction {number} reverted as transaction {txn}: {} file(s) restored",
                            restored.len()
                        );
                    }
                    fault::report();
                    return Ok(exit::REFUSED);
                }
            }
        }
    }
    fault::report();
    Ok(code)
}

/// Writes every ready synthesized fix as a patch file of the curated format.
fn emit(dir: &std::path::Path, plan: &plan::Plan) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|source| Error::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    for patch in plan.ready().filter(|p| p.patch.synth.is_some()) {
        let path = dir.join(format!("{}.toml", patch.patch.id));
        std::fs::write(&path, patch.patch.to_toml()).map_err(|source| Error::Io {
            path: path.clone(),
            source,
        })?;
        eprintln!("gatefix: wrote {}", path.display());
    }
    Ok(())
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

/// The kernel index apply checks its patches with; `dsl_gates`: read the site's CuTe DSL
/// kernels too, with the scan's gates for the branches their ops are built under.
fn kernel_index(
    site: &Site,
    jit: JitIndex,
    libraries: bool,
    dsl_gates: Option<&[crate::scan::Gate]>,
) -> KernelIndex {
    let mut index = if libraries {
        KernelIndex::build_with_jit(site, jit)
    } else {
        KernelIndex::new(Vec::new(), jit)
    };
    if let Some(gates) = dsl_gates {
        index.dsl = crate::verdict::site_text::SiteFiles::read(&site.root).dsl_index();
        index.dsl.set_branch_gates(gates);
    }
    index
}

/// 3 when a patch meant for this site was refused or did not fit it; a patch named with
/// `--patch` that is not for the site counts too.
/// A patch found already applied whose files no transaction in effect explains (the ledger
/// was removed, or lives elsewhere): saying "already applied" alone would hide that gatefix can
/// no longer take it back. Warns with the way back (as `status` does); true when it warned.
fn unexplained_already_applied(
    site: &Site,
    ledger_dir: &std::path::Path,
    plan: &plan::Plan,
) -> Result<bool> {
    let files: Vec<String> = plan
        .patches
        .iter()
        .filter(|p| matches!(p.decision, Decision::AlreadyApplied))
        .flat_map(|p| p.patch.edits.iter().map(|e| e.file.clone()))
        .collect();
    if files.is_empty() {
        return Ok(false);
    }
    let ledger = Ledger::open(ledger_dir, &site.root)?;
    let history = match &ledger {
        Some(ledger) => Some(History::read(ledger)?),
        None => None,
    };
    let states = Witness::new(site).examine(ledger.as_ref().zip(history.as_ref()), &files);
    let unexplained: Vec<_> = states
        .iter()
        .filter(|s| s.state == witness::State::NotByGatefix)
        .collect();
    if unexplained.is_empty() {
        return Ok(false);
    }
    for state in &unexplained {
        eprintln!(
            "gatefix: warning: {} is already patched, but no transaction in the ledger at {} records it: `gatefix revert` cannot take it back",
            state.file,
            ledger_dir.display()
        );
    }
    eprintln!(
        "gatefix: if the ledger is elsewhere, name it with --ledger DIR (or $GATEFIX_LEDGER); to put back the bytes pip installed:"
    );
    for command in witness::way_back(&states) {
        eprintln!("  {command}");
    }
    Ok(true)
}

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
                class: p.patch.class.word().to_string(),
            })
            .collect(),
        dists,
        reverts: Vec::new(),
        verify_failed: None,
        subject: format!("apply {target}: {}", ids.join(", ")),
        body: render::evidence_body(&ready),
    }
}
