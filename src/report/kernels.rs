//! Printers for `gatefix kernels`.

use std::collections::BTreeSet;
use std::fmt::Write;
use std::path::Path;

use serde_json::{Map, Value, json};

use rayon::prelude::*;

use crate::arch::Arch;
use crate::kernel::layers::Verdict;
use crate::kernel::query::{Answer, KernelIndex, LayeredAnswer};
use crate::kernel::requirement::Requirement;
use crate::kernel::{CoverageCounts, EntryKind, FileInventory, Location, coverage};
use crate::site::Site;

pub struct KernelsReport<'a> {
    site: Option<&'a Site>,
    root: &'a Path,
    index: &'a KernelIndex,
    targets: &'a [Arch],
    files: Vec<FileInventory>,
    /// Per generator id (in first-listed order), the layered answer at each target; empty
    /// when only the arch lists are asked for (`--layers list`).
    generator_layers: Vec<(String, Vec<(Arch, LayeredAnswer)>)>,
    /// Generators asked for by id (`--generator`) that have no arch list, so are not among
    /// the index's generators: reported after them.
    asked: Vec<String>,
}

/// How plain-data containers are loaded, for readers comparing with cuobjdump.
pub const PLAIN_DATA_NOTE: &str = "plain-data containers are fatbins stored as ordinary data \
     (torch's .lrodata, cuFFT's and cuPTI's embedded images), not in .nv_fatbin: the CUDA \
     runtime does not register them and cuobjdump does not list them; the library itself \
     hands them to the driver API (cuModuleLoadData / cuLibraryLoadData) when it needs them";

impl<'a> KernelsReport<'a> {
    pub fn new(
        site: Option<&'a Site>,
        root: &'a Path,
        index: &'a KernelIndex,
        targets: &'a [Arch],
    ) -> Self {
        let mut files = index.libraries.clone();
        for file in &mut files {
            file.annotate(targets);
        }
        KernelsReport {
            site,
            root,
            index,
            targets,
            files,
            generator_layers: Vec::new(),
            asked: Vec::new(),
        }
    }

    /// Adds every layer of each JIT generator at each target (reads their sources), and of
    /// the generators named in `asked` (`module:function`) that have no arch list.
    pub fn with_layers(mut self, asked: &[String]) -> Self {
        let Some(site) = self.site else {
            return self;
        };
        let mut ids: Vec<String> = Vec::new();
        for g in &self.index.jit.generators {
            if !ids.contains(&g.id) {
                ids.push(g.id.clone());
            }
        }
        for id in asked {
            if !ids.contains(id) {
                ids.push(id.clone());
                self.asked.push(id.clone());
            }
        }
        let index = self.index;
        let targets = self.targets;
        self.generator_layers = ids
            .into_par_iter()
            .map(|id| {
                let requirement = Requirement::Jit(id.clone());
                let per_target = targets
                    .iter()
                    .map(|&t| (t, index.coverage_layers(&requirement, t, site)))
                    .collect();
                (id, per_target)
            })
            .collect();
        self
    }

    fn layers_of(&self, id: &str) -> Option<&Vec<(Arch, LayeredAnswer)>> {
        self.generator_layers
            .iter()
            .find(|(g, _)| g == id)
            .map(|(_, l)| l)
    }

    pub fn errors(&self) -> Vec<String> {
        self.files
            .iter()
            .filter_map(|f| {
                f.error
                    .as_ref()
                    .map(|e| format!("{}: {e}", f.path.display()))
            })
            .collect()
    }

    fn dist(&self, file: &FileInventory) -> Option<(String, String)> {
        let owner = self.site?.owner(&file.path.to_string_lossy())?;
        Some((owner.name.clone(), owner.version.clone()))
    }

    fn dist_label(&self, file: &FileInventory) -> String {
        self.dist(file)
            .map(|(n, v)| format!("{n} {v}"))
            .unwrap_or_else(|| "(files outside any distribution)".into())
    }

    /// Per distribution that ships CUDA binaries ("name version"), its container counts at
    /// each target, in target order (what `--format html` draws).
    pub fn distribution_coverage(&self) -> Vec<(String, Vec<CoverageCounts>)> {
        let mut labels: Vec<String> = self.files.iter().map(|f| self.dist_label(f)).collect();
        labels.sort();
        labels.dedup();
        labels
            .into_iter()
            .map(|label| {
                let counts = self
                    .targets
                    .iter()
                    .map(|&t| self.dist_totals(&label, t))
                    .collect();
                (label, counts)
            })
            .collect()
    }

    /// Container counts summed over a distribution's files, per target: one library can hold
    /// containers with and without code for a target, and so can a distribution.
    fn dist_totals(&self, label: &str, target: Arch) -> CoverageCounts {
        let mut total = CoverageCounts::default();
        for file in self.files.iter().filter(|f| self.dist_label(f) == label) {
            total += coverage(file, target).counts;
        }
        total
    }
}

/// SASS and PTX archs present in a file, deduplicated and sorted (loadable code only: code in
/// relocatable containers is link input and listed apart).
fn archs(file: &FileInventory, kind: EntryKind) -> (Vec<String>, Vec<String>) {
    let mut loadable = BTreeSet::new();
    let mut relocatable = BTreeSet::new();
    for container in &file.containers {
        for entry in container.leaves().filter(|e| e.kind == kind) {
            let set = if container.relocatable {
                &mut relocatable
            } else {
                &mut loadable
            };
            set.insert(entry.target());
        }
    }
    let names = |set: BTreeSet<Arch>| set.into_iter().map(|a| a.to_string()).collect();
    (names(loadable), names(relocatable))
}

pub fn render_json(report: &KernelsReport) -> String {
    let files: Vec<Value> = report
        .files
        .iter()
        .map(|file| {
            let (sass, sass_reloc) = archs(file, EntryKind::Sass);
            let (ptx, ptx_reloc) = archs(file, EntryKind::Ptx);
            let mut per_target = Map::new();
            for &target in report.targets {
                let counts = coverage(file, target).counts;
                per_target.insert(
                    target.to_string(),
                    serde_json::to_value(counts).expect("plain data"),
                );
            }
            let dist = report.dist(file);
            json!({
                "path": crate::site::path_text(&file.path),
                "dist": dist.as_ref().map(|d| &d.0),
                "dist_version": dist.as_ref().map(|d| &d.1),
                "kind": file.kind,
                "size": file.size,
                "sass": sass,
                "ptx": ptx,
                "relocatable_sass": sass_reloc,
                "relocatable_ptx": ptx_reloc,
                "coverage": per_target,
                "containers": file.containers,
                "plain_data_note": file
                    .containers
                    .iter()
                    .any(|c| c.section == Location::PlainData)
                    .then_some(PLAIN_DATA_NOTE),
                "error": file.error,
            })
        })
        .collect();
    let mut generators: Vec<Value> = report
        .index
        .jit
        .generators
        .iter()
        .map(|g| {
            let mut admits = Map::new();
            for target in report.targets {
                let answer = match (&g.majors, &g.unknown_because) {
                    (_, Some(_)) => "unknown",
                    (None, None) => "yes",
                    (Some(m), None) if m.contains(&(target.major as i64)) => "yes",
                    _ => "no",
                };
                admits.insert(target.to_string(), Value::from(answer));
            }
            let mut value = serde_json::to_value(g).expect("plain data");
            value["admits"] = Value::Object(admits);
            if let Some(per_target) = report.layers_of(&g.id) {
                let mut layers = Map::new();
                for (target, layered) in per_target {
                    layers.insert(target.to_string(), layered_json(layered));
                }
                value["layers"] = Value::Object(layers);
            }
            value
        })
        .collect();
    for id in &report.asked {
        let mut layers = Map::new();
        for (target, layered) in report.layers_of(id).into_iter().flatten() {
            layers.insert(target.to_string(), layered_json(layered));
        }
        generators.push(json!({ "id": id, "majors": null, "asked": true, "layers": layers }));
    }
    let labels: BTreeSet<String> = report.files.iter().map(|f| report.dist_label(f)).collect();
    let distributions: Vec<Value> = labels
        .iter()
        .map(|label| {
            let mut per_target = Map::new();
            for &target in report.targets {
                let counts = report.dist_totals(label, target);
                per_target.insert(
                    target.to_string(),
                    serde_json::to_value(counts).expect("plain data"),
                );
            }
            json!({ "distribution": label, "coverage": per_target })
        })
        .collect();
    let document = json!({
        "gatefix": env!("CARGO_PKG_VERSION"),
        "site": report.root.display().to_string(),
        "targets": report.targets.iter().map(|t| t.to_string()).collect::<Vec<_>>(),
        "distributions": distributions,
        "files": files,
        "generators": generators,
        "fixed_arch": report.index.jit.fixed_arch,
        "cubin_tables": report.index.jit.cubin_tables,
    });
    let mut text = serde_json::to_string_pretty(&document).expect("plain data");
    text.push('\n');
    text
}

pub fn render_human(report: &KernelsReport, color: bool) -> String {
    let paint = |code: &str, text: &str| {
        if color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    };
    let mut out = String::new();
    let mut by_dist: Vec<(String, &FileInventory)> = report
        .files
        .iter()
        .map(|f| (report.dist_label(f), f))
        .collect();
    by_dist.sort_by(|a, b| (&a.0, &a.1.path).cmp(&(&b.0, &b.1.path)));
    let mut current = None;
    for (dist, file) in by_dist {
        if current.as_ref() != Some(&dist) {
            let _ = writeln!(out, "\n{}", paint("1", &dist));
            for &target in report.targets {
                let c = report.dist_totals(&dist, target);
                let _ = writeln!(
                    out,
                    "  {target}: {} containers sass, {} ptx-jit, {} none in all",
                    c.sass, c.ptx_jit, c.none
                );
            }
            current = Some(dist);
        }
        let (sass, _) = archs(file, EntryKind::Sass);
        let (ptx, _) = archs(file, EntryKind::Ptx);
        let _ = writeln!(out, "  {}", paint("36", &file.path.display().to_string()));
        let _ = writeln!(out, "      SASS: {}", list_or_none(&sass));
        let _ = writeln!(out, "      PTX:  {}", list_or_none(&ptx));
        for &target in report.targets {
            let c = coverage(file, target).counts;
            let verdict = if c.sass > 0 && c.none == 0 {
                paint("32", "covered")
            } else if c.sass + c.ptx_jit > 0 {
                paint("33", "partly covered")
            } else {
                paint("31", "not covered")
            };
            let _ = writeln!(
                out,
                "      {target}: {verdict} (containers: {} sass, {} ptx-jit, {} none{})",
                c.sass,
                c.ptx_jit,
                c.none,
                if c.relocatable > 0 {
                    format!(", {} relocatable", c.relocatable)
                } else {
                    String::new()
                }
            );
        }
        let plain: Vec<&str> = file
            .containers
            .iter()
            .filter(|c| c.section == Location::PlainData)
            .map(|c| c.in_section.as_deref().unwrap_or("data"))
            .collect();
        if !plain.is_empty() {
            let mut sections = plain.clone();
            sections.sort();
            sections.dedup();
            let _ = writeln!(
                out,
                "      {} plain-data containers (in {}): {PLAIN_DATA_NOTE}",
                plain.len(),
                sections.join(", ")
            );
        }
        if let Some(error) = &file.error {
            let _ = writeln!(out, "      error: {error}");
        }
    }
    let jit = &report.index.jit;
    if !jit.generators.is_empty() {
        let _ = writeln!(out, "\n{}", paint("1", "JIT generators"));
        let mut shown: Vec<&str> = Vec::new();
        for g in &jit.generators {
            let list = match (&g.majors, &g.unknown_because) {
                (_, Some(why)) => format!("unknown ({why})"),
                (None, None) => "every target arch".into(),
                (Some(m), None) => format!("majors {m:?}"),
            };
            let targets: Vec<String> = report
                .targets
                .iter()
                .map(|t| {
                    let yes = match &g.majors {
                        None => g.unknown_because.is_none(),
                        Some(m) => m.contains(&(t.major as i64)),
                    };
                    format!(
                        "{t} {}",
                        if yes {
                            paint("32", "yes")
                        } else {
                            paint("31", "no")
                        }
                    )
                })
                .collect();
            let _ = writeln!(
                out,
                "  {}  {list}  ({}:{})  {}",
                g.id,
                g.file,
                g.line,
                targets.join(", ")
            );
            if shown.contains(&g.id.as_str()) {
                continue;
            }
            shown.push(&g.id);
            write_layers(&mut out, report, &g.id, false, &paint);
        }
    }
    if !report.asked.is_empty() {
        let _ = writeln!(
            out,
            "\n{}",
            paint("1", "JIT generators asked for (no arch list)")
        );
        for id in &report.asked {
            let _ = writeln!(out, "  {id}");
            write_layers(&mut out, report, id, true, &paint);
        }
    }
    if !jit.fixed_arch.is_empty() {
        let _ = writeln!(out, "\n{}", paint("1", "Fixed-arch JIT builds"));
        for f in &jit.fixed_arch {
            let archs: Vec<String> = f.archs.iter().map(|a| a.to_string()).collect();
            let _ = writeln!(
                out,
                "  {}  {}  ({}:{})",
                f.id,
                archs.join(" "),
                f.file,
                f.line
            );
        }
    }
    if !jit.cubin_tables.is_empty() {
        let _ = writeln!(out, "\n{}", paint("1", "Cubin arch tables"));
        for t in &jit.cubin_tables {
            let archs: Vec<String> = t.archs.iter().map(|a| a.to_string()).collect();
            let _ = writeln!(out, "  {}  {}  ({})", t.id, archs.join(" "), t.file);
        }
    }
    let _ = writeln!(
        out,
        "\n{} files with device code, {} JIT arch lists, {} fixed-arch builds, {} cubin tables",
        report.files.len(),
        jit.generators.len(),
        jit.fixed_arch.len(),
        jit.cubin_tables.len()
    );
    out
}

fn answer_word(answer: &Answer) -> &'static str {
    match answer {
        Answer::Covered { how, .. } if crate::kernel::query::is_partly(how) => "partly covered",
        Answer::Covered { .. } => "covered",
        Answer::NotCovered { .. } => "not covered",
        Answer::Unknown { .. } => "unknown",
    }
}

/// Each target's answer for one generator, and the layers that are not a plain yes (the
/// arch list, L2, only with `with_list`: a listed generator's line already shows it).
fn write_layers(
    out: &mut String,
    report: &KernelsReport,
    id: &str,
    with_list: bool,
    paint: &dyn Fn(&str, &str) -> String,
) {
    for (target, layered) in report.layers_of(id).into_iter().flatten() {
        let word = answer_word(&layered.answer);
        let colored = match &layered.answer {
            Answer::Covered { .. } => paint("32", word),
            Answer::NotCovered { .. } => paint("31", word),
            Answer::Unknown { .. } => paint("33", word),
        };
        let summary: Vec<String> = layered
            .layers
            .iter()
            .map(|l| format!("{:?} {}", l.layer, l.verdict.word()))
            .collect();
        let _ = writeln!(out, "      {target}: {colored} ({})", summary.join(", "));
        for layer in layered.layers.iter().filter(|l| {
            !matches!(l.verdict, Verdict::Yes | Verdict::NotApplicable)
                || l.layer != crate::kernel::layers::Layer::L2 && !l.evidence.is_empty()
        }) {
            if layer.layer == crate::kernel::layers::Layer::L2 && !with_list {
                continue;
            }
            let _ = writeln!(
                out,
                "        {} {}: {}",
                layer.layer.name(),
                layer.verdict.word(),
                layer.summary
            );
            for line in &layer.evidence {
                let _ = writeln!(out, "          {line}");
            }
        }
    }
}

/// A generator's answer at one target, with its evidence and the layers it combines.
fn layered_json(layered: &LayeredAnswer) -> Value {
    json!({
        "answer": answer_word(&layered.answer),
        "evidence": answer_evidence(&layered.answer),
        "layers": layered.layers,
    })
}

/// What the combined answer rests on: the evidence lines, or why it is unknown.
fn answer_evidence(answer: &Answer) -> Vec<String> {
    match answer {
        Answer::Covered { evidence, .. } | Answer::NotCovered { evidence } => evidence.clone(),
        Answer::Unknown { why } => vec![why.clone()],
    }
}

fn list_or_none(items: &[String]) -> String {
    if items.is_empty() {
        "-".into()
    } else {
        items.join(" ")
    }
}
