//! The command line: one module per subcommand, shared argument groups flattened into each.

pub mod audit;
pub mod kernels;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::arch::Arch;
use crate::error::Result;

#[derive(Parser, Debug)]
#[command(
    name = "gatefix",
    version,
    about = "Find, audit and safely open GPU architecture gates in Python inference stacks",
    after_help = "Exit codes: 0 success, 1 policy findings, 2 usage or input error, 3 refused.\n\
                  Machine-readable output goes to stdout; progress and warnings to stderr."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// List every architecture gate in a site-packages tree and what it admits per target.
    Audit(audit::AuditArgs),
    /// List the GPU code a site, folder or file really carries, and what each target can load.
    Kernels(kernels::KernelsArgs),
}

/// How a site is named; shared by every command that reads one.
#[derive(Args, Debug, Clone)]
pub struct SiteArgs {
    /// A site-packages folder, a venv root, or any folder of Python files. Default:
    /// $VIRTUAL_ENV, then ./.venv, then python3's purelib.
    pub path: Option<PathBuf>,
}

/// Targets and the facts that evaluation needs.
#[derive(Args, Debug, Clone)]
pub struct TargetArgs {
    /// GPU architecture to evaluate at (repeatable): sm_120, sm120, 12.0, 120, sm_120a ...
    #[arg(long = "target", short = 't', value_name = "ARCH", default_values_t = vec![Arch::new(12, 0)])]
    pub targets: Vec<Arch>,
    /// CUDA version for `cuda >= X` atoms; default: read from the site's torch/version.py.
    #[arg(long, value_name = "X.Y")]
    pub cuda: Option<String>,
    /// Read rules from this folder's *.toml instead of the embedded ones.
    #[arg(long, value_name = "DIR")]
    pub rules: Option<PathBuf>,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Human,
    Json,
}

pub fn run(cli: Cli) -> Result<i32> {
    match cli.command {
        Command::Audit(args) => audit::run(args),
        Command::Kernels(args) => kernels::run(args),
    }
}
