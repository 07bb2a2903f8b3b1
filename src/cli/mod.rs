//! The command line: one module per subcommand, shared argument groups flattened into each.

pub mod apply;
pub mod audit;
pub mod completions;
pub mod explain;
pub mod history;
pub mod kernels;
pub mod progress;
pub mod rules_check;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::arch::Arch;
use crate::error::Result;

/// `gatefix --version`: the crate version and the commit it was built from (build.rs).
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("GATEFIX_BUILD_COMMIT"),
    ")"
);

/// Shown under every command's help, not only the top level's.
const EXIT_CODES: &str = "Exit codes: 0 success, 1 policy findings, 2 usage or input error, 3 refused.\n\
                          Machine-readable output goes to stdout; progress and warnings to stderr.";

#[derive(Parser, Debug)]
#[command(
    name = "gatefix",
    version = VERSION,
    about = "Find, audit and safely open GPU architecture gates in Python inference stacks",
    after_help = EXIT_CODES
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// Accept a target outside the list of known architectures (for hardware newer than
    /// this gatefix).
    #[arg(long, global = true)]
    pub allow_unknown_arch: bool,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// List every architecture gate in a site-packages tree and what it admits per target.
    #[command(after_help = EXIT_CODES)]
    Audit(audit::AuditArgs),
    /// List the GPU code a site, folder or file really carries, and what each target can load.
    #[command(after_help = EXIT_CODES)]
    Kernels(kernels::KernelsArgs),
    /// Open gates for a target with the shipped patches, only where a kernel backs them.
    #[command(after_help = EXIT_CODES)]
    Apply(apply::ApplyArgs),
    /// Undo the last transaction (or a named one, or all), byte for byte.
    #[command(after_help = EXIT_CODES)]
    Revert(history::RevertArgs),
    /// Applied transactions, unverified patches, drifted files, interrupted transactions.
    #[command(after_help = EXIT_CODES)]
    Status(history::StatusArgs),
    /// The ledger's history, oldest first.
    #[command(after_help = EXIT_CODES)]
    Log(history::LogArgs),
    /// Validate rule and patch files.
    #[command(after_help = EXIT_CODES)]
    Rules(rules_check::RulesArgs),
    /// Where an error message comes from in the site, the gates and JIT generators that lead
    /// there, their verdicts at the target, and what to do.
    #[command(after_help = EXIT_CODES)]
    Explain(explain::ExplainArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    #[command(after_help = EXIT_CODES)]
    Completions(completions::CompletionsArgs),
    /// Print the man page (roff), every subcommand included.
    #[command(after_help = EXIT_CODES)]
    Man,
}

/// How a command that writes (or reads the ledger of) a site names it.
#[derive(Args, Debug, Clone)]
pub struct WriteSiteArgs {
    /// A venv root (its lib/python3.*/site-packages is patched).
    #[arg(long, value_name = "DIR", conflicts_with_all = ["site", "python"])]
    pub venv: Option<PathBuf>,
    /// A site-packages folder.
    #[arg(long, value_name = "DIR", conflicts_with = "python")]
    pub site: Option<PathBuf>,
    /// A Python interpreter whose purelib is the site (asked with `-I`, nothing imported).
    #[arg(long, value_name = "EXE")]
    pub python: Option<PathBuf>,
    /// The ledger (a bare git repository); default $GATEFIX_LEDGER, else the one recorded
    /// by an earlier --ledger, else <venv>/.gatefix/ledger.git (<site>/.gatefix/ledger.git
    /// outside a venv). Never / , the site or a folder inside it, or a busy folder.
    #[arg(long, value_name = "DIR")]
    pub ledger: Option<PathBuf>,
}

impl WriteSiteArgs {
    /// The site root; with nothing named: $VIRTUAL_ENV, ./.venv, then python3's purelib.
    pub fn site_root(&self) -> Result<PathBuf> {
        match (&self.venv, &self.site, &self.python) {
            (Some(dir), _, _) | (None, Some(dir), _) => crate::site::discover(Some(dir)),
            (None, None, Some(python)) => crate::site::python_purelib(python),
            (None, None, None) => crate::site::discover(None),
        }
    }

    pub fn ledger_dir(&self, site_root: &std::path::Path) -> Result<PathBuf> {
        crate::ledger::place::resolve(site_root, self.ledger.as_deref()).map(|(dir, _)| dir)
    }

    /// [`site_root`](Self::site_root), and says on stderr which site and ledger the command
    /// uses (its first line), so a default choice never goes unnamed.
    pub fn announced_site_root(&self) -> Result<PathBuf> {
        let root = self.site_root()?;
        let ledger = self.ledger_dir(&root)?;
        eprintln!(
            "gatefix: site {}, ledger {}",
            root.display(),
            ledger.display()
        );
        Ok(root)
    }
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

/// Audit's formats: the two above plus the CI ones.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuditFormat {
    Human,
    Json,
    /// SARIF 2.1.0 for GitHub code scanning (with --anchor).
    Sarif,
    /// GitHub Actions workflow commands (annotations), plus $GITHUB_STEP_SUMMARY.
    Github,
}

/// The targets a command was given, for the known-architecture check.
fn targets(command: &Command) -> Vec<Arch> {
    match command {
        Command::Audit(args) => args.targets.targets.clone(),
        Command::Kernels(args) => args.targets.clone(),
        Command::Apply(args) => vec![args.target],
        Command::Explain(args) => args.target.into_iter().collect(),
        // The others take no target.
        _ => Vec::new(),
    }
}

pub fn run(cli: Cli) -> Result<i32> {
    crate::arch::check_known(&targets(&cli.command), cli.allow_unknown_arch)
        .map_err(|e| crate::error::Error::input(e.to_string()))?;
    match cli.command {
        Command::Audit(args) => audit::run(args),
        Command::Kernels(args) => kernels::run(args),
        Command::Apply(args) => apply::run(args),
        Command::Revert(args) => history::revert(args),
        Command::Status(args) => history::status(args),
        Command::Log(args) => history::log(args),
        Command::Rules(args) => rules_check::run(args),
        Command::Completions(args) => completions::completions(args),
        Command::Man => completions::man(),
        Command::Explain(args) => explain::run(args),
    }
}
