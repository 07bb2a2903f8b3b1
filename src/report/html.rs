//! `--format html`: one self-contained page (inline CSS and a small script, nothing fetched)
//! with the target x package matrix of verdict counts, a sortable table of the findings that
//! each expand to their evidence chain, and the site's kernel coverage per target as bars.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::AuditReport;
use crate::arch::Arch;
use crate::gate::predicate::Admits;
use crate::kernel::CoverageCounts;
use crate::verdict::VerdictKind;

/// What the page shows of the site's kernels.
#[derive(Default)]
pub struct KernelCoverage {
    /// Per distribution that ships CUDA binaries (label "name version"), container counts at
    /// each target, in target order.
    pub libraries: Vec<(String, Vec<CoverageCounts>)>,
    /// JIT generators: per target, how many compile for it and how many were read.
    pub jit: Vec<(usize, usize)>,
}

/// Characters of a gate's text shown in the findings table.
const GATE_TEXT_CHARS: usize = 120;

/// The verdicts a finding has (the ones a person decides on), most urgent first.
const FINDINGS: [VerdictKind; 3] = [
    VerdictKind::Trap,
    VerdictKind::Opportunity,
    VerdictKind::Wall,
];

pub fn render(report: &AuditReport, kernels: &KernelCoverage) -> String {
    let mut page = String::with_capacity(64 << 10);
    let title = format!("gatefix audit of {}", report.site.root.display());
    let _ = write!(
        page,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{}</title><style>{STYLE}</style></head><body>\n<h1>{}</h1>\n",
        escape(&title),
        escape(&title)
    );
    let targets: Vec<String> = report.targets.iter().map(Arch::to_string).collect();
    let _ = writeln!(
        page,
        "<p class=\"meta\">{} gates in {} Python files ({} parsed); targets {}; CUDA {}; gatefix {}</p>",
        report.result.gates.len(),
        report.result.stats.python_files,
        report.result.stats.prefilter_hits,
        escape(&targets.join(", ")),
        escape(report.cuda.map_or("unknown", |c| c.text.as_str())),
        env!("CARGO_PKG_VERSION"),
    );
    matrix(&mut page, report);
    findings(&mut page, report);
    coverage(&mut page, report.targets, kernels);
    let _ = write!(page, "<script>{SCRIPT}</script>\n</body></html>\n");
    page
}

/// Per package (rows) and target (columns), the count of each verdict; without verdicts
/// (`--no-verdicts`), of each admission.
fn matrix(page: &mut String, report: &AuditReport) {
    let mut counts: BTreeMap<String, Vec<BTreeMap<&'static str, usize>>> = BTreeMap::new();
    for (index, gate) in report.result.gates.iter().enumerate() {
        let package = match (&gate.dist, &gate.dist_version) {
            (Some(name), Some(version)) => format!("{name} {version}"),
            (Some(name), None) => name.clone(),
            _ => "(no distribution)".to_string(),
        };
        let row = counts
            .entry(package)
            .or_insert_with(|| vec![BTreeMap::new(); report.targets.len()]);
        let words: Vec<&'static str> = match report.verdicts.and_then(|v| v.get(index)) {
            Some(verdicts) => verdicts.iter().map(|v| v.kind.name()).collect(),
            None => report.admits(gate).iter().map(Admits::word).collect(),
        };
        for (cell, word) in row.iter_mut().zip(words) {
            *cell.entry(word).or_default() += 1;
        }
    }
    let order: Vec<&str> = if report.verdicts.is_some() {
        VerdictKind::ALL.iter().map(|k| k.name()).collect()
    } else {
        vec!["yes", "no", "unknown"]
    };
    page.push_str(
        "<h2>Verdicts by package and target</h2>\n<table id=\"matrix\"><thead><tr><th>package</th>",
    );
    for target in report.targets {
        let _ = write!(page, "<th>{target}</th>");
    }
    page.push_str("</tr></thead><tbody>\n");
    for (package, row) in &counts {
        let _ = write!(page, "<tr><th scope=\"row\">{}</th>", escape(package));
        for (target, cell) in report.targets.iter().zip(row) {
            let _ = write!(
                page,
                "<td data-package=\"{}\" data-target=\"{target}\">",
                escape(package)
            );
            for word in &order {
                if let Some(n) = cell.get(word) {
                    let _ = write!(
                        page,
                        "<span class=\"chip {word}\" data-verdict=\"{word}\" data-count=\"{n}\">{n} {word}</span> "
                    );
                }
            }
            page.push_str("</td>");
        }
        page.push_str("</tr>\n");
    }
    page.push_str("</tbody></table>\n");
}

/// Every trap, opportunity and wall, one row per gate and target, sortable by any column;
/// the evidence chain opens under the gate.
fn findings(page: &mut String, report: &AuditReport) {
    page.push_str("<h2>Findings</h2>\n");
    let Some(verdicts) = report.verdicts else {
        page.push_str("<p>No verdicts: the audit ran with <code>--no-verdicts</code>.</p>\n");
        return;
    };
    let mut rows = Vec::new();
    for (gate, per_target) in report.result.gates.iter().zip(verdicts) {
        for (target, verdict) in report.targets.iter().zip(per_target) {
            if let Some(rank) = FINDINGS.iter().position(|k| *k == verdict.kind) {
                rows.push((rank, gate, target, verdict));
            }
        }
    }
    if rows.is_empty() {
        page.push_str("<p>No trap, opportunity or wall at these targets.</p>\n");
        return;
    }
    rows.sort_by(|a, b| (a.0, &a.1.file, a.1.line).cmp(&(b.0, &b.1.file, b.1.line)));
    page.push_str(
        "<table id=\"findings\" class=\"sortable\"><thead><tr>\
         <th data-sort=\"rank\">verdict</th><th>target</th><th>package</th>\
         <th>where</th><th>gate</th></tr></thead><tbody>\n",
    );
    for (rank, gate, target, verdict) in rows {
        let name = verdict.kind.name();
        let package = gate.dist.as_deref().unwrap_or("(no distribution)");
        // A gate over several lines reads as one; the whole text is in the JSON.
        let mut text = gate.text.split_whitespace().collect::<Vec<_>>().join(" ");
        if let Some((cut, _)) = text.char_indices().nth(GATE_TEXT_CHARS) {
            text.truncate(cut);
            text.push('…');
        }
        let _ = write!(
            page,
            "<tr data-rank=\"{rank}\"><td><span class=\"chip {name}\">{name}</span></td>\
             <td>{target}</td><td>{}</td><td><code>{}:{}</code></td><td><details>\
             <summary><code>{}</code></summary><ol>",
            escape(package),
            escape(&gate.file),
            gate.line,
            escape(&text),
        );
        for step in &verdict.evidence {
            let _ = write!(page, "<li>{}</li>", escape(step));
        }
        page.push_str("</ol></details></td></tr>\n");
    }
    page.push_str("</tbody></table>\n");
}

/// Per target, a bar per distribution that ships CUDA binaries (share of containers with
/// SASS, PTX only, or nothing for the target) and the JIT generators that compile for it.
fn coverage(page: &mut String, targets: &[Arch], kernels: &KernelCoverage) {
    page.push_str("<h2>Kernel coverage per target</h2>\n<div id=\"coverage\">\n");
    if kernels.libraries.is_empty() && kernels.jit.iter().all(|(_, total)| *total == 0) {
        page.push_str("<p>No CUDA binary and no JIT generator found on this site.</p>\n");
    }
    for (i, target) in targets.iter().enumerate() {
        let _ = writeln!(page, "<h3>{target}</h3>");
        for (label, per_target) in &kernels.libraries {
            let Some(c) = per_target.get(i) else {
                continue;
            };
            let total = (c.sass + c.ptx_jit + c.none).max(1) as f64;
            let share = |n: usize| n as f64 * 100.0 / total;
            let _ = writeln!(
                page,
                "<div class=\"bar-row\" data-target=\"{target}\" data-library=\"{}\">\
                 <span class=\"label\">{}</span><span class=\"bar\">\
                 <span class=\"sass\" style=\"width:{:.1}%\"></span>\
                 <span class=\"ptx\" style=\"width:{:.1}%\"></span>\
                 <span class=\"none\" style=\"width:{:.1}%\"></span></span>\
                 <span class=\"numbers\">{} SASS, {} PTX only, {} none</span></div>",
                escape(label),
                escape(label),
                share(c.sass),
                share(c.ptx_jit),
                share(c.none),
                c.sass,
                c.ptx_jit,
                c.none,
            );
        }
        if let Some(&(admitting, total)) = kernels.jit.get(i).filter(|(_, t)| *t > 0) {
            let share = admitting as f64 * 100.0 / total as f64;
            let _ = writeln!(
                page,
                "<div class=\"bar-row\" data-target=\"{target}\" data-library=\"JIT generators\">\
                 <span class=\"label\">JIT generators</span><span class=\"bar\">\
                 <span class=\"sass\" style=\"width:{share:.1}%\"></span>\
                 <span class=\"none\" style=\"width:{:.1}%\"></span></span>\
                 <span class=\"numbers\">{admitting} of {total} compile for {target}</span></div>",
                100.0 - share,
            );
        }
    }
    page.push_str(
        "<p class=\"legend\"><span class=\"chip open\">SASS</span> \
         <span class=\"chip opportunity\">PTX only (JIT-compiled by the driver)</span> \
         <span class=\"chip trap\">no code for the target</span></p>\n</div>\n",
    );
}

fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "\
body{font:14px/1.45 system-ui,sans-serif;margin:1.5em auto;max-width:1200px;padding:0 1em;color:#1b1f24}\
h1{font-size:1.3em}h2{font-size:1.1em;margin-top:1.6em}h3{font-size:1em;margin:1em 0 .3em}\
.meta{color:#57606a}table{border-collapse:collapse;width:100%}\
th,td{border-bottom:1px solid #d0d7de;padding:.3em .5em;text-align:left;vertical-align:top}\
thead th{background:#f6f8fa;cursor:default}table.sortable thead th{cursor:pointer}\
.chip{display:inline-block;border-radius:.7em;padding:0 .55em;margin:.1em 0;font-size:.9em;white-space:nowrap}\
.trap{background:#ffd8d3;color:#86181d}.opportunity{background:#fff1c2;color:#6a4b00}\
.wall{background:#e1e4e8;color:#24292f}.open,.yes{background:#d2f4d8;color:#116329}\
.unverified,.unknown{background:#eef1f4;color:#57606a}.no{background:#e1e4e8;color:#24292f}\
.no-kernel{background:#ddf4ff;color:#0550ae}\
details summary{cursor:pointer}details ol{margin:.3em 0 .3em 1.2em;padding:0;font-size:.92em}\
code{font:12.5px ui-monospace,monospace;word-break:break-all}\
.bar-row{display:flex;align-items:center;gap:.6em;margin:.15em 0}\
.bar-row .label{width:16em;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}\
.bar{display:flex;width:28em;height:1em;background:#eef1f4;border-radius:.2em;overflow:hidden}\
.bar .sass{background:#2da44e}.bar .ptx{background:#d4a72c}.bar .none{background:#cf222e}\
.numbers{color:#57606a;font-size:.9em}";

/// Sorting by a click on a column head; marks the page ready (what the browser test checks).
const SCRIPT: &str = r#"
document.querySelectorAll('table.sortable').forEach(function (table) {
  table.querySelectorAll('thead th').forEach(function (head, column) {
    var ascending = true;
    head.addEventListener('click', function () {
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      var key = function (row) {
        if (head.dataset.sort === 'rank') { return Number(row.dataset.rank); }
        return row.cells[column].textContent.trim();
      };
      rows.sort(function (a, b) {
        var x = key(a), y = key(b);
        var order = typeof x === 'number' ? x - y : x.localeCompare(y, undefined, {numeric: true});
        return ascending ? order : -order;
      });
      ascending = !ascending;
      rows.forEach(function (row) { body.appendChild(row); });
    });
  });
});
document.body.dataset.ready = 'yes';
"#;
