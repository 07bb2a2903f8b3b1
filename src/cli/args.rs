//! Argument groups shared by several subcommands, flattened into each.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use crate::arch::Arch;
use crate::error::Result;

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

/// The known-architecture check, on the commands that take a target (not a global flag:
/// `log` or `man` have nothing to check).
#[derive(Args, Debug, Clone, Default)]
pub struct ArchCheckArgs {
    /// Accept a target outside the list of known architectures (for hardware newer than
    /// this gatefix).
    #[arg(long)]
    pub allow_unknown_arch: bool,
}

/// Targets and the facts that evaluation needs.
#[derive(Args, Debug, Clone)]
pub struct TargetArgs {
    #[command(flatten)]
    pub arch_check: ArchCheckArgs,
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
    /// One self-contained HTML page: the verdict matrix, the findings with their evidence,
    /// the site's kernel coverage per target.
    Html,
}

/// Where gatefix keeps results between runs (the commands that audit a site).
#[derive(Args, Debug, Clone, Default)]
pub struct CacheArgs {
    /// gatefix's cache folder; default $GATEFIX_CACHE_DIR, else $XDG_CACHE_HOME/gatefix,
    /// else ~/.cache/gatefix. Never inside the site.
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Neither read nor write the cache (also GATEFIX_NO_CACHE=1).
    #[arg(long)]
    pub no_cache: bool,
}

impl CacheArgs {
    pub fn settings(&self) -> crate::cache::Settings {
        crate::cache::Settings {
            dir: self.cache_dir.clone(),
            off: self.no_cache,
        }
    }
}
