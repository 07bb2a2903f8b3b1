//! Which gates `apply` synthesizes fixes for, from the audit's verdicts at the target, and
//! the check that the accepted fixes also hold together.

use std::collections::HashMap;

use super::ApplyArgs;
use crate::error::{Error, Result};
use crate::gate::predicate::CudaVersion;
use crate::patch::plan::Plan;
use crate::patch::synth::{self, Mode, Outcome};
use crate::rules::Rules;
use crate::scan::{Gate, scan_overlay, scan_with};
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

pub fn run(
    site: &Site,
    rules: &Rules,
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
    let scan = scan_with(site, rules, synth::SCAN_OPTIONS);
    let verdicts = judge(site, &scan, rules, &[target], cuda.as_ref());
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
        scan: &scan,
    };
    eprintln!(
        "gatefix: synthesizing {} fix(es); each is re-resolved over the whole site",
        to_build.len()
    );
    let mut built = synth::synthesize(&input, &to_build);
    together(&input, &mut built)?;
    outcomes.extend(built);
    outcomes.extend(refused);
    Ok(outcomes)
}

/// The accepted fixes re-resolved all at once: together they must still leave every other
/// gate unchanged; if not, none of them is offered.
fn together(input: &synth::Input, outcomes: &mut [Outcome]) -> Result<()> {
    let accepted: Vec<usize> = (0..outcomes.len())
        .filter(|&i| outcomes[i].fix.is_ok())
        .collect();
    if accepted.len() < 2 {
        return Ok(());
    }
    let mut texts: HashMap<String, Vec<u8>> = HashMap::new();
    for &i in &accepted {
        let patch = outcomes[i].fix.as_ref().expect("accepted");
        let file = &outcomes[i].gate.file;
        let current = match texts.get(file) {
            Some(text) => text.clone(),
            None => std::fs::read(input.site.root.join(file)).map_err(|source| Error::Io {
                path: input.site.root.join(file),
                source,
            })?,
        };
        match synth::edited_text(&current, &patch.edits) {
            Ok(new) => {
                texts.insert(file.clone(), new);
            }
            Err(why) => {
                outcomes[i].fix = Err(format!("does not combine with the other fixes: {why}"));
            }
        }
    }
    let edited: Vec<(&Gate, Mode)> = outcomes
        .iter()
        .filter(|o| o.fix.is_ok())
        .map(|o| (&o.gate, o.mode))
        .collect();
    let scan = scan_overlay(input.site, input.rules, synth::SCAN_OPTIONS, &texts);
    let baseline = synth::profiles(&input.scan.gates, input.cuda);
    if let Err(why) = synth::verify(&baseline, &scan, &edited, input) {
        for outcome in outcomes.iter_mut().filter(|o| o.fix.is_ok()) {
            outcome.fix = Err(format!("refused with the other fixes together: {why}"));
        }
    }
    Ok(())
}
