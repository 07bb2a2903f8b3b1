//! `--format json`: one document on stdout; the field names are a contract (README).

use rayon::prelude::*;
use serde::Serialize;
use serde_json::{Map, Value};

use super::AuditReport;
use crate::gate::predicate::Admits;
use crate::site::Distribution;

#[derive(Serialize)]
struct Document<'a> {
    gatefix: &'static str,
    site: String,
    targets: Vec<String>,
    cuda: Option<&'a str>,
    distributions: &'a [Distribution],
    gates: Vec<Value>,
    warnings: Vec<Value>,
}

pub fn render(report: &AuditReport) -> String {
    let mut distributions = report.site.distributions.clone();
    distributions.sort();
    // Each gate's admissions are evaluated at every target: worth spreading over the cores.
    let gates = report
        .result
        .gates
        .par_iter()
        .enumerate()
        .map(|(index, gate)| {
            let admits = report.admits(gate);
            let mut admits_map = Map::new();
            let mut reasons = Vec::new();
            for (target, value) in report.targets.iter().zip(&admits) {
                admits_map.insert(target.to_string(), Value::from(value.word()));
                if let Admits::Unknown(why) = value {
                    for reason in why {
                        if !reasons.contains(reason) {
                            reasons.push(reason.clone());
                        }
                    }
                }
            }
            let mut verdict_map = Map::new();
            let mut evidence_map = Map::new();
            let mut kernels_map = Map::new();
            if let Some(verdicts) = report.verdicts.and_then(|v| v.get(index)) {
                for (target, verdict) in report.targets.iter().zip(verdicts) {
                    verdict_map.insert(target.to_string(), Value::from(verdict.kind.name()));
                    evidence_map.insert(target.to_string(), Value::from(verdict.evidence.clone()));
                    kernels_map.insert(
                        target.to_string(),
                        serde_json::to_value(&verdict.kernels).expect("plain data"),
                    );
                }
            }
            let verdicts_given = report.verdicts.is_some();
            serde_json::json!({
                "id": gate.id,
                "dist": gate.dist,
                "dist_version": gate.dist_version,
                "file": gate.file,
                "line": gate.line,
                "column": gate.column,
                "end_line": gate.end_line,
                "end_column": gate.end_column,
                "function": gate.function,
                "form": gate.form.name(),
                "text": gate.text,
                "predicate": gate.predicate.to_string(),
                "admits": admits_map,
                "unknown_because": (!reasons.is_empty()).then(|| reasons.join("; ")),
                "assumes": gate.assumes,
                "verdict": verdicts_given.then_some(verdict_map),
                "evidence": verdicts_given.then_some(evidence_map),
                "kernels": verdicts_given.then_some(kernels_map),
            })
        })
        .collect();
    let warnings = report
        .result
        .warnings
        .iter()
        .map(|w| {
            serde_json::json!({
                "file": w.file, "line": w.line, "column": w.column, "message": w.message,
            })
        })
        .collect();
    let document = Document {
        gatefix: env!("CARGO_PKG_VERSION"),
        site: report.site.root.display().to_string(),
        targets: report.targets.iter().map(|t| t.to_string()).collect(),
        cuda: report.cuda.map(|c| c.text.as_str()),
        distributions: &distributions,
        gates,
        warnings,
    };
    let mut text = serde_json::to_string_pretty(&document).expect("JSON of plain data");
    text.push('\n');
    text
}
