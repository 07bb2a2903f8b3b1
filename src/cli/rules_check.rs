//! `gatefix rules check`: validate every rule and patch file (embedded, or the folders
//! given), with file, line and column on the first error.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use crate::error::{Result, exit};
use crate::patch::PatchSet;
use crate::rules::Rules;

#[derive(Args, Debug)]
pub struct RulesArgs {
    #[command(subcommand)]
    pub command: RulesCommand,
}

#[derive(Subcommand, Debug)]
pub enum RulesCommand {
    /// Parse and validate rules/*.toml and patches/*.toml.
    Check {
        /// Rule folder; default: the embedded rules.
        #[arg(long, value_name = "DIR")]
        rules: Option<PathBuf>,
        /// Patch folder; default: the embedded patches.
        #[arg(long, value_name = "DIR")]
        patches: Option<PathBuf>,
    },
}

pub fn run(args: RulesArgs) -> Result<i32> {
    match args.command {
        RulesCommand::Check { rules, patches } => {
            let rules = Rules::load(rules.as_deref())?;
            let patches = PatchSet::load(patches.as_deref())?;
            println!(
                "ok: {} rule file(s), {} patch(es)",
                rules.files.len(),
                patches.patches.len()
            );
            for patch in &patches.patches {
                println!(
                    "  {}  {} {}  {} edit(s), {} kernel requirement(s)",
                    patch.id,
                    patch.dist,
                    patch.versions_text,
                    patch.edits.len(),
                    patch.requires.len()
                );
            }
            Ok(exit::OK)
        }
    }
}
