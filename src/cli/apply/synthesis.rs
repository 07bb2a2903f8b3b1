//! Which gates `apply` synthesizes fixes for, from the audit's verdicts at the target (the
//! fixes themselves, and the check that they hold together, are `patch::synth`'s).

use super::args::ApplyArgs;
use crate::error::{Error, Result};
use crate::gate::predicate::CudaVersion;
use crate::patch::plan::Plan;
use crate::patch::synth::{self, Mode, Outcome};
use crate::rules::Rules;
use crate::scan::{Gate, LoweringMemo, ScanResult};
use crate::site::Site;
use crate::verdict::{VerdictKind, judge};

/// What the user selected.
pub struct Request {
    pub gates: Vec<String>,
    pub all_opportunities: bool,
    pub close_traps: bool,
}

/// The selection, or `None` when no synthesized fix was asked for. Unsafe fixes need both
/// `--unsafe-fixes` and a selection.
pub fn wanted(args: &ApplyArgs) -> Result<Option<Request>> {
    let selects = !args.gates.is_empty() || args.all_opportunities || args.close_traps;
    match (args.unsafe_fixes, selects) {
        (false, false) => Ok(None),
        (false, true) => Err(Error::input(
            "--gate, --all-opportunities and --close-traps select fixes synthesized from the audit, \
             which are unsafe: add --unsafe-fixes",
        )),
        (true, false) => Err(Error::input(
            "--unsafe-fixes needs a selection: --gate ID (repeatable; ids from `gatefix audit --format json`), \
             --all-opportunities, or --close-traps",
        )),
        (true, true) => Ok(Some(Request {
            gates: args.gates.clone(),
            all_opportunities: args.all_opportunities,
            close_traps: args.close_traps,
        })),
    }
}

/// `scan` is the site's scan with `synth::SCAN_OPTIONS`, shared with the kernel index, and
/// `memo` the lowerings it made (the re-resolutions reuse them).
pub fn run(
    site: &Site,
    rules: &Rules,
    scan: &ScanResult,
    memo: &LoweringMemo,
    args: &ApplyArgs,
    request: &Request,
    curated: &Plan,
) -> Result<Vec<Outcome>> {
    let cuda = match &args.cuda {
        Some(text) => Some(CudaVersion::parse(text).ok_or_else(|| {
            Error::input(format!(
                "invalid --cuda `{text}`: expected X.Y such as 12.8"
            ))
        })?),
        None => site.torch_cuda(),
    };
    let target = args.target;
    eprintln!("gatefix: auditing the site for fixes at {target}");
    let verdicts = judge(site, scan, rules, &[target], cuda.as_ref());
    let mut refused: Vec<Outcome> = Vec::new();
    let mut wanted: Vec<(Gate, Mode, Vec<String>)> = Vec::new();
    let mut pick = |gate: &Gate, kind: VerdictKind, evidence: &[String], named: bool| {
        let mode = match kind {
            VerdictKind::Opportunity if named || request.all_opportunities => Mode::Open,
            VerdictKind::Trap if request.close_traps => Mode::Close,
            _ if !named => return,
            VerdictKind::Trap => {
                refused.push(Outcome {
                    gate: gate.clone(),
                    mode: Mode::Close,
                    fix: Err(format!(
                        "the gate is a trap at {target} (it admits it, a kernel is missing): closing it needs --close-traps"
                    )),
                });
                return;
            }
            other => {
                refused.push(Outcome {
                    gate: gate.clone(),
                    mode: Mode::Open,
                    fix: Err(format!(
                        "its verdict at {target} is {}: only an opportunity is opened, a trap closed",
                        other.name()
                    )),
                });
                return;
            }
        };
        wanted.push((gate.clone(), mode, evidence.to_vec()));
    };
    if request.gates.is_empty() {
        for (gate, verdict) in scan.gates.iter().zip(&verdicts) {
            pick(gate, verdict[0].kind, &verdict[0].evidence, false);
        }
    } else {
        for id in &request.gates {
            let matching: Vec<usize> = (0..scan.gates.len())
                .filter(|&i| scan.gates[i].id.starts_with(id.as_str()))
                .collect();
            match matching.as_slice() {
                [i] => pick(
                    &scan.gates[*i],
                    verdicts[*i][0].kind,
                    &verdicts[*i][0].evidence,
                    true,
                ),
                [] => {
                    return Err(Error::input(format!(
                        "--gate {id}: no gate of the site has that id (`gatefix audit --format json` lists them)"
                    )));
                }
                many => {
                    return Err(Error::input(format!(
                        "--gate {id}: {} gates have ids starting so; give more of the id",
                        many.len()
                    )));
                }
            }
        }
    }
    // A curated (safe) patch that changes the file wins over a synthesized fix in it.
    let mut outcomes = Vec::new();
    let mut to_build = Vec::new();
    for (gate, mode, evidence) in wanted {
        match curated.files.iter().find(|f| f.path == gate.file) {
            Some(_) => {
                let by: Vec<&str> = curated
                    .ready()
                    .filter(|p| p.patch.files().contains(&gate.file.as_str()))
                    .map(|p| p.patch.id.as_str())
                    .collect();
                outcomes.push(Outcome {
                    gate,
                    mode,
                    fix: Err(format!(
                        "the curated patch {} edits this file; it is applied instead",
                        by.join(", ")
                    )),
                });
            }
            None => to_build.push((gate, mode, evidence)),
        }
    }
    let input = synth::Input {
        site,
        rules,
        target,
        cuda: cuda.as_ref(),
        scan,
        memo,
    };
    eprintln!(
        "gatefix: synthesizing {} fix(es), checked by re-resolving the whole site with them",
        to_build.len()
    );
    outcomes.extend(synth::synthesize(&input, &to_build));
    outcomes.extend(refused);
    Ok(outcomes)
}
