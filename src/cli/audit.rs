//! `gatefix audit`: every gate in a site, its predicate, and what it admits per target.

use std::io::{IsTerminal, Write};
use std::time::Instant;

use clap::Args;

use super::{Format, SiteArgs, TargetArgs};
use crate::error::{Error, Result, exit};
use crate::gate::predicate::CudaVersion;
use crate::report::{AuditReport, human, json};
use crate::rules::Rules;
use crate::scan::{ScanOptions, scan_with};
use crate::site::{Site, discover};

#[derive(Args, Debug)]
pub struct AuditArgs {
    #[command(flatten)]
    pub site: SiteArgs,
    #[command(flatten)]
    pub targets: TargetArgs,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
    /// Parse every Python file whole, without the prefilter and chunking (slow; for checking
    /// that the fast path misses nothing on a given site).
    #[arg(long)]
    pub exhaustive: bool,
}

pub fn run(args: AuditArgs) -> Result<i32> {
    let started = Instant::now();
    let root = discover(args.site.path.as_deref())?;
    let site = Site::open(&root)?;
    let rules = Rules::load(args.targets.rules.as_deref())?;
    let cuda = cuda_version(&args.targets, &site)?;
    let options = if args.exhaustive {
        ScanOptions {
            prefilter: false,
            chunking: false,
            kernel_sources: false,
        }
    } else {
        ScanOptions::default()
    };
    let result = scan_with(&site, &rules, options);
    for warning in &result.warnings {
        let location = match (warning.line, warning.column) {
            (Some(l), Some(c)) => format!("{}:{l}:{c}", warning.file),
            _ => warning.file.clone(),
        };
        eprintln!("gatefix: warning: {location}: {}", warning.message);
    }
    let report = AuditReport {
        site: &site,
        targets: &args.targets.targets,
        cuda: cuda.as_ref(),
        result: &result,
    };
    let text = match args.format {
        Format::Json => json::render(&report),
        Format::Human => human::render(&report, std::io::stdout().is_terminal()),
    };
    let mut stdout = std::io::stdout().lock();
    // A closed pipe (`gatefix audit | head`) is not an error worth a panic.
    let _ = stdout.write_all(text.as_bytes());
    eprintln!(
        "gatefix: audited {} ({} Python files, {} parsed) in {:.2?}",
        site.root.display(),
        result.stats.python_files,
        result.stats.prefilter_hits,
        started.elapsed()
    );
    // The process ends next; freeing the lowered modules one by one would only delay that.
    std::mem::forget(result);
    Ok(exit::OK)
}

fn cuda_version(args: &TargetArgs, site: &Site) -> Result<Option<CudaVersion>> {
    match &args.cuda {
        Some(text) => CudaVersion::parse(text).map(Some).ok_or_else(|| {
            Error::input(format!(
                "invalid --cuda `{text}`: expected X.Y such as 12.8"
            ))
        }),
        None => Ok(site.torch_cuda()),
    }
}
