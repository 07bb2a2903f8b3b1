//! `gatefix cache dir` and `gatefix cache clean`: where gatefix keeps audit results between
//! runs, and removing them.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use crate::cache::{Settings, clean, location};
use crate::error::{Error, Result, exit};

#[derive(Args, Debug)]
pub struct CacheCommandArgs {
    #[command(subcommand)]
    pub command: CacheCommand,
}

#[derive(Subcommand, Debug)]
pub enum CacheCommand {
    /// Print the cache folder (what --cache-dir, $GATEFIX_CACHE_DIR, $XDG_CACHE_HOME or
    /// $HOME name).
    Dir {
        #[arg(long, value_name = "DIR")]
        cache_dir: Option<PathBuf>,
    },
    /// Remove every result and file hash gatefix keeps in the cache folder (other things
    /// there stay).
    Clean {
        #[arg(long, value_name = "DIR")]
        cache_dir: Option<PathBuf>,
    },
}

fn folder(cache_dir: Option<PathBuf>) -> Result<PathBuf> {
    let settings = Settings {
        dir: cache_dir,
        off: false,
    };
    location(&settings).map(|(dir, _)| dir).ok_or_else(|| {
        Error::input(
            "no cache folder: $HOME, $XDG_CACHE_HOME and $GATEFIX_CACHE_DIR are unset; name one \
             with --cache-dir",
        )
    })
}

pub fn run(args: CacheCommandArgs) -> Result<i32> {
    match args.command {
        CacheCommand::Dir { cache_dir } => {
            println!("{}", folder(cache_dir)?.display());
        }
        CacheCommand::Clean { cache_dir } => {
            let dir = folder(cache_dir)?;
            let removed = clean(&dir).map_err(|e| Error::Io {
                path: dir.join("audit"),
                source: e,
            })?;
            println!(
                "removed {} file(s), {} bytes, from {}",
                removed.files,
                removed.bytes,
                dir.join("audit").display()
            );
        }
    }
    Ok(exit::OK)
}
