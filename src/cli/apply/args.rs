//! `gatefix apply`'s options, read by the command and by fix synthesis.

use std::path::PathBuf;

use clap::Args;

use crate::arch::Arch;
use crate::cli::args::{ArchCheckArgs, CacheArgs, WriteSiteArgs};

#[derive(Args, Debug)]
pub struct ApplyArgs {
    /// The GPU to open gates for: sm_120, sm120, 12.0, 120 ...
    pub target: Arch,
    #[command(flatten)]
    pub arch_check: ArchCheckArgs,
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
    /// Also apply fixes synthesized from the audit (unsafe fixes; they need a selection:
    /// --gate, --all-opportunities or --close-traps).
    #[arg(long)]
    pub unsafe_fixes: bool,
    /// A gate to fix, by its id from `gatefix audit` (a unique prefix will do; repeatable).
    #[arg(long = "gate", value_name = "ID")]
    pub gates: Vec<String>,
    /// Fix every gate whose verdict at the target is `opportunity`.
    #[arg(long)]
    pub all_opportunities: bool,
    /// Narrow gates whose verdict at the target is `trap` (all of them, or those named with
    /// --gate).
    #[arg(long)]
    pub close_traps: bool,
    /// With --dry-run: write each synthesized fix to DIR as a patch file (the curated format).
    #[arg(long, value_name = "DIR", requires = "dry_run")]
    pub emit_patches: Option<PathBuf>,
    /// After writing, run CMD (through `sh -c`); a non-zero exit, a crash or the timeout
    /// reverts the transaction at once and apply exits 3.
    #[arg(long, value_name = "CMD")]
    pub verify: Option<String>,
    /// Seconds --verify's command may run.
    #[arg(long, value_name = "SECONDS", default_value_t = 600)]
    pub verify_timeout: u64,
    /// CUDA version for `cuda >= X` atoms when synthesizing; default: the site's torch.
    #[arg(long, value_name = "X.Y")]
    pub cuda: Option<String>,
    /// Without fixes to synthesize, the JIT sources of an earlier `gatefix audit --target
    /// TARGET` of the unchanged site are read from gatefix's cache instead of scanning again.
    #[command(flatten)]
    pub cache: CacheArgs,
}
