//! `gatefix show GATE-ID`: one gate of the audit, whole (its code, what it admits at each
//! target, its verdict and the evidence chain), by the id `gatefix audit` prints.

use std::io::Write;

use clap::Args;

use super::args::{CacheArgs, SiteArgs, TargetArgs};
use super::audit::{Analysis, DisplayArgs, analyse};
use crate::error::{Error, Result, exit};
use crate::report::{AuditReport, human};
use crate::scan::ScanOptions;

#[derive(Args, Debug)]
pub struct ShowArgs {
    /// The gate's id from `gatefix audit` (`--format json` lists them), or a unique prefix.
    #[arg(value_name = "GATE-ID")]
    pub gate: String,
    #[command(flatten)]
    pub site: SiteArgs,
    #[command(flatten)]
    pub targets: TargetArgs,
    #[command(flatten)]
    pub display: DisplayArgs,
    #[command(flatten)]
    pub cache: CacheArgs,
}

pub fn run(args: ShowArgs) -> Result<i32> {
    let wanted = args.gate.trim().to_ascii_lowercase();
    if wanted.is_empty() {
        return Err(Error::input(
            "an empty GATE-ID names no gate: give the id `gatefix audit` prints (or a prefix)",
        ));
    }
    let Analysis {
        site,
        cuda,
        result,
        verdicts,
        ..
    } = analyse(
        &args.site,
        &args.targets,
        ScanOptions {
            kernel_sources: true,
            ..ScanOptions::default()
        },
        Some(&args.cache),
    )?;
    let matching: Vec<usize> = result
        .gates
        .iter()
        .enumerate()
        .filter(|(_, g)| g.id.starts_with(&wanted))
        .map(|(i, _)| i)
        .collect();
    match matching.len() {
        0 => {
            return Err(Error::input(format!(
                "no gate of {} has an id starting with `{}`: `gatefix audit {} --format json` \
                 lists every gate's id",
                site.root.display(),
                args.gate,
                site.root.display()
            )));
        }
        1 => {}
        n => {
            let ids: Vec<String> = matching
                .iter()
                .take(5)
                .map(|&i| {
                    let g = &result.gates[i];
                    format!("{} ({}:{})", g.id, g.file, g.line)
                })
                .collect();
            return Err(Error::input(format!(
                "`{}` starts {n} gate ids ({}{}): give more of the id",
                args.gate,
                ids.join(", "),
                if n > 5 { ", ..." } else { "" }
            )));
        }
    }
    let report = AuditReport {
        site: &site,
        targets: &args.targets.targets,
        cuda: cuda.as_ref(),
        result: &result,
        verdicts: verdicts.as_ref(),
    };
    let text = human::render_gates(
        &report,
        &matching,
        &human::HumanOptions {
            color: args.display.color(),
            width: args.display.width(),
            layout: human::Layout::Findings,
            accepted: None,
            patches: Vec::new(),
        },
    );
    // A closed pipe (`gatefix show ID | head`) is not an error worth a panic.
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
    std::mem::forget(result);
    Ok(exit::OK)
}
