//! The command line: one module per subcommand, shared argument groups flattened into each.

pub mod apply;
pub mod args;
pub mod audit;
pub mod cache;
pub mod completions;
pub mod explain;
pub mod history;
pub mod kernels;
pub mod progress;
pub mod rules_check;
pub mod show;

use clap::{CommandFactory, Parser, Subcommand};

use crate::arch::Arch;
use crate::error::Result;

pub use crate::VERSION;

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
    /// One gate whole, by the id `audit` prints: its code, what it admits at each target,
    /// its verdict and the evidence chain.
    #[command(after_help = EXIT_CODES)]
    Show(show::ShowArgs),
    /// Where an error message comes from in the site, the gates and JIT generators that lead
    /// there, their verdicts at the target, and what to do.
    #[command(after_help = EXIT_CODES)]
    Explain(explain::ExplainArgs),
    /// Where gatefix keeps audit results between runs (`dir`), and removing them (`clean`).
    #[command(after_help = EXIT_CODES)]
    Cache(cache::CacheCommandArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    #[command(after_help = EXIT_CODES)]
    Completions(completions::CompletionsArgs),
    /// Print the man page (roff), every subcommand included.
    #[command(after_help = EXIT_CODES)]
    Man,
}

/// The targets a command was given, and whether it accepts unknown ones, for the
/// known-architecture check.
fn targets(command: &Command) -> (Vec<Arch>, bool) {
    match command {
        Command::Audit(args) => (
            args.targets.targets.clone(),
            args.targets.arch_check.allow_unknown_arch,
        ),
        Command::Kernels(args) => (args.targets.clone(), args.arch_check.allow_unknown_arch),
        Command::Apply(args) => (vec![args.target], args.arch_check.allow_unknown_arch),
        Command::Explain(args) => (
            args.target.into_iter().collect(),
            args.arch_check.allow_unknown_arch,
        ),
        Command::Show(args) => (
            args.targets.targets.clone(),
            args.targets.arch_check.allow_unknown_arch,
        ),
        // The others take no target.
        _ => (Vec::new(), false),
    }
}

pub fn run(cli: Cli) -> Result<i32> {
    let (targets, allow_unknown) = targets(&cli.command);
    crate::arch::check_known(&targets, allow_unknown)
        .map_err(|e| crate::error::Error::input(e.to_string()))?;
    match cli.command {
        Command::Audit(args) => audit::run(args),
        Command::Kernels(args) => kernels::run(args),
        Command::Apply(args) => apply::run(args),
        Command::Revert(args) => history::revert(args),
        Command::Status(args) => history::status(args),
        Command::Log(args) => history::log(args),
        Command::Rules(args) => rules_check::run(args),
        Command::Completions(args) => completions::completions(args, Cli::command()),
        Command::Man => completions::man(Cli::command()),
        Command::Explain(args) => explain::run(args),
        Command::Show(args) => show::run(args),
        Command::Cache(args) => cache::run(args),
    }
}
