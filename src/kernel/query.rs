//! One query for "is there a kernel this target can load?", used by `apply` (refuse a patch
//! without one) and by audit verdicts: `coverage(requirement, target)`. Every answer carries
//! the evidence a person needs to believe it: file, line or container offset, arch list.

use serde::Serialize;

use super::dsl::{Admitted, DslArch, DslIndex};
use super::jit::{JitIndex, sass_loads};
use super::layer_rules::LayerRules;
use super::layers::{
    Layer, LayerAnswer, LayerIndex, Toolchain, Verdict, combine, device_layer, host_layer,
    toolchain_layer,
};
use super::load::{Coverage, coverage as file_coverage};
use super::model::FileInventory;
use super::requirement::Requirement;
use super::triton::{self, TritonInstall};
use crate::arch::Arch;
use crate::scan::ScanResult;
use crate::site::Site;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "answer", rename_all = "kebab-case")]
pub enum Answer {
    Covered { how: String, evidence: Vec<String> },
    NotCovered { evidence: Vec<String> },
    Unknown { why: String },
}

/// An answer with the layer answers it combines (see `kernel::layers`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LayeredAnswer {
    pub layers: Vec<LayerAnswer>,
    pub answer: Answer,
}

/// The kernels of a site: binary inventory plus JIT sources.
pub struct KernelIndex {
    pub libraries: Vec<FileInventory>,
    pub jit: JitIndex,
    /// The sources of JIT generators, read on first query and cached.
    pub layers: LayerIndex,
    pub layer_rules: LayerRules,
    /// `--cuda X.Y`: the toolkit JIT builds use, instead of the site's nvcc distribution.
    pub cuda: Option<String>,
    /// CuTe DSL ops and the modules that build them (filled by callers that read the site's
    /// Python text: the verdicts).
    pub dsl: DslIndex,
    /// The site's triton, looked for on the first Triton kernel asked about.
    triton: std::sync::OnceLock<Option<TritonInstall>>,
}

impl KernelIndex {
    /// Inventories the site's binaries (paths made relative to the root) and its JIT sources.
    pub fn build(site: &Site, scan: &ScanResult) -> KernelIndex {
        KernelIndex::build_with_jit(site, JitIndex::build(site, scan))
    }

    /// [`KernelIndex::build`] with the JIT sources already read (an analysis keeps them).
    pub fn build_with_jit(site: &Site, jit: JitIndex) -> KernelIndex {
        let mut libraries = super::inventory_path(&site.root);
        for library in &mut libraries {
            if let Ok(relative) = library.path.strip_prefix(&site.root) {
                library.path = relative.to_path_buf();
            }
        }
        KernelIndex::new(libraries, jit)
    }

    /// An index of these libraries and JIT lists, with the embedded layer rules.
    pub fn new(libraries: Vec<FileInventory>, jit: JitIndex) -> KernelIndex {
        KernelIndex {
            libraries,
            jit,
            layers: LayerIndex::default(),
            layer_rules: LayerRules::embedded().clone(),
            cuda: None,
            dsl: DslIndex::default(),
            triton: std::sync::OnceLock::new(),
        }
    }

    /// The layer rules of a loaded rule set (`--rules DIR`) and the `--cuda` version.
    pub fn with_layer_rules(mut self, rules: LayerRules, cuda: Option<String>) -> KernelIndex {
        self.layer_rules = rules;
        self.cuda = cuda;
        self
    }

    /// The JIT sources, and only the libraries that match one of `globs`.
    pub fn build_for_globs(site: &Site, scan: &ScanResult, globs: &[String]) -> KernelIndex {
        let keep = |relative: &str| globs.iter().any(|g| glob_match(g, relative));
        let mut libraries = super::inventory_matching(&site.root, &keep);
        for library in &mut libraries {
            if let Ok(relative) = library.path.strip_prefix(&site.root) {
                library.path = relative.to_path_buf();
            }
        }
        KernelIndex::new(libraries, JitIndex::build(site, scan))
    }

    /// The JIT sources only; library requirements then answer `Unknown`. For callers whose
    /// requirements name no library, this skips reading every binary of the site.
    pub fn build_jit_only(site: &Site, scan: &ScanResult) -> KernelIndex {
        KernelIndex::new(Vec::new(), JitIndex::build(site, scan))
    }

    /// Whether `target` has a kernel for `requirement`: the layers combined (any `no` closes
    /// it, else any `unknown` makes it unknown; `partly` is covered with the compiled-out
    /// kernels named in `how` and the evidence). Evidence lines name the
    /// layer that decided, with file:line.
    pub fn coverage(&self, requirement: &Requirement, target: Arch, site: &Site) -> Answer {
        self.coverage_layers(requirement, target, site).answer
    }

    /// [`KernelIndex::coverage`] with each layer's own answer.
    pub fn coverage_layers(
        &self,
        requirement: &Requirement,
        target: Arch,
        site: &Site,
    ) -> LayeredAnswer {
        match requirement {
            Requirement::Jit(id) => self.jit_layers(id, target, site),
            Requirement::Library { dist, glob } => {
                binary_only(self.library_coverage(dist.as_deref(), glob, target, site))
            }
            Requirement::TorchOp { namespace, op } => {
                binary_only(self.op_coverage(namespace, op, target, site))
            }
            Requirement::CubinTable(id) => binary_only(self.cubin_coverage(id, target)),
            Requirement::Dsl(module) => self.dsl_layers(module, target),
            Requirement::Triton(id) => {
                let install = self
                    .triton
                    .get_or_init(|| triton::find(site, &self.layer_rules));
                let layers = triton::layers(install.as_ref(), id, target, &self.layer_rules);
                let listed = Answer::Covered {
                    how: "Triton".into(),
                    evidence: Vec::new(),
                };
                let answer = combined(&layers, &listed);
                LayeredAnswer { layers, answer }
            }
        }
    }

    /// A CuTe DSL kernel: L5 from the ops it builds; it compiles at run time with the DSL's
    /// own compiler, so no nvcc (L6) and no prebuilt binary (L7) is asked.
    fn dsl_layers(&self, module: &str, target: Arch) -> LayeredAnswer {
        let arch = DslArch::of_device(target).name();
        let l5 = match self.dsl.admitted(module, target) {
            None => LayerAnswer::new(
                Layer::L5,
                Verdict::Unknown,
                format!("no CuTe DSL kernel `{module}` in the site"),
            ),
            Some((admitted, evidence)) => {
                // A covered answer shows its summary only: say there which ops were left out
                // as built under a branch the target does not take.
                let left_out = evidence
                    .iter()
                    .find(|e| e.contains(" only where "))
                    .map(|e| format!(" (left out: {e})"))
                    .unwrap_or_default();
                let (verdict, summary) = match admitted {
                    Admitted::All => (
                        Verdict::Yes,
                        format!("every CuTe DSL op {module} builds admits {arch}{left_out}"),
                    ),
                    Admitted::None => (
                        Verdict::No,
                        format!(
                            "no CuTe DSL op {module} builds admits {arch}: each raises OpError \
                             when compiled for it"
                        ),
                    ),
                    Admitted::Some(refused) => (
                        Verdict::Partly,
                        format!(
                            "its kernels {} build ops that do not admit {arch}; others do",
                            refused.join(", ")
                        ),
                    ),
                    Admitted::Unknown(why) => (Verdict::Unknown, why),
                };
                LayerAnswer {
                    layer: Layer::L5,
                    verdict,
                    summary,
                    evidence,
                }
            }
        };
        let layers = vec![
            l5,
            LayerAnswer::new(
                Layer::L6,
                Verdict::NotApplicable,
                "compiled by the DSL's own bundled compiler, not nvcc",
            ),
            LayerAnswer::new(
                Layer::L7,
                Verdict::NotApplicable,
                "compiled at run time: no prebuilt binary to read",
            ),
        ];
        let listed = Answer::Covered {
            how: "CuTe DSL".into(),
            evidence: Vec::new(),
        };
        let answer = combined(&layers, &listed);
        LayeredAnswer { layers, answer }
    }

    /// The Python file and function of a generator id, when the site has them.
    /// Reads the sources of these JIT generators ahead of the queries that need them
    /// (`LayerIndex::read_generators`).
    pub fn read_generators<'i>(&self, ids: impl IntoIterator<Item = &'i str>, site: &Site) {
        let located: std::collections::BTreeSet<(String, String)> = ids
            .into_iter()
            .filter_map(|id| self.generator_location(id, site))
            .collect();
        let located: Vec<(String, String)> = located.into_iter().collect();
        self.layers
            .read_generators(&site.root, &located, &self.layer_rules);
    }

    fn generator_location(&self, id: &str, site: &Site) -> Option<(String, String)> {
        let (module, function) = id.split_once(':')?;
        if let Some(g) = self.jit.generators(id).first() {
            return Some((g.file.clone(), function.to_string()));
        }
        if let Some(f) = self.jit.fixed_arch.iter().find(|f| f.id == id) {
            return Some((f.file.clone(), function.to_string()));
        }
        crate::gate::index::module_file(&site.root, module).map(|p| (p, function.to_string()))
    }

    fn jit_layers(&self, id: &str, target: Arch, site: &Site) -> LayeredAnswer {
        let rules = &self.layer_rules;
        let listed = self.jit_coverage(id, target);
        let location = self.generator_location(id, site);
        let sources = location
            .as_ref()
            .map(|(file, function)| self.layers.generator(&site.root, file, function, rules));
        let l2 = match &listed {
            Answer::Covered { evidence, .. } => LayerAnswer {
                layer: Layer::L2,
                verdict: Verdict::Yes,
                summary: format!("the arch list admits {target}"),
                evidence: evidence.clone(),
            },
            Answer::NotCovered { evidence } => LayerAnswer {
                layer: Layer::L2,
                verdict: Verdict::No,
                summary: format!("the arch list leaves out {target}"),
                evidence: evidence.clone(),
            },
            Answer::Unknown { why } => match sources.as_ref().and_then(|s| s.set.spec_at.clone()) {
                // A spec built without an arch list compiles for the device's arch.
                Some(at)
                    if self.jit.generators(id).is_empty()
                        && !self.jit.fixed_arch.iter().any(|f| f.id == id) =>
                {
                    LayerAnswer {
                        layer: Layer::L2,
                        verdict: Verdict::Yes,
                        summary: "no arch list: builds for the device it runs on".into(),
                        evidence: vec![format!(
                            "{at} builds a JIT spec without supported_major_versions"
                        )],
                    }
                }
                _ => {
                    return LayeredAnswer {
                        layers: vec![LayerAnswer::new(Layer::L2, Verdict::Unknown, why.clone())],
                        answer: listed,
                    };
                }
            },
        };
        let Some(sources) = sources else {
            return LayeredAnswer {
                layers: vec![l2],
                answer: listed,
            };
        };
        let toolchain = Toolchain::find(site, self.cuda.as_deref(), rules);
        let (variant, l6) = toolchain_layer(target, &toolchain, rules);
        let l3 = device_layer(&sources, target, variant, &toolchain, rules);
        let l4 = host_layer(&sources, target, &toolchain, rules);
        // Without an arch list, only a kernel read in the sources says that one is built for
        // the target: a runner whose kernels come from elsewhere (trtllm-gen's cubins,
        // fetched by name at run time, with the headers that list them) shows none.
        let no_list = l2.verdict == Verdict::Yes && matches!(listed, Answer::Unknown { .. });
        let l2 = if no_list && l3.verdict == Verdict::NotApplicable {
            let mut evidence = l2.evidence;
            evidence.extend(super::layers::source_notes(&sources.set));
            LayerAnswer {
                layer: Layer::L2,
                verdict: Verdict::Unknown,
                summary: format!(
                    "no arch list, and no kernel in the {} source file(s) read: nothing on the site says a kernel for {target} is built (prebuilt cubins fetched at run time?)",
                    sources.set.files.len()
                ),
                evidence,
            }
        } else {
            l2
        };
        let l5 = LayerAnswer::new(
            Layer::L5,
            Verdict::NotApplicable,
            "a C++ JIT build, not a CuTe DSL op",
        );
        let l7 = LayerAnswer::new(
            Layer::L7,
            Verdict::NotApplicable,
            "built at run time: no prebuilt binary to read",
        );
        let layers = vec![l2, l3, l4, l5, l6, l7];
        let answer = combined(&layers, &listed);
        LayeredAnswer { layers, answer }
    }

    fn jit_coverage(&self, id: &str, target: Arch) -> Answer {
        let lists = self.jit.generators(id);
        if lists.is_empty() {
            if let Some(build) = self.jit.fixed_arch.iter().find(|f| f.id == id) {
                let loads = build.archs.iter().any(|a| sass_loads(*a, target));
                let evidence = vec![format!(
                    "{}:{} builds with {} only",
                    build.file,
                    build.line,
                    build.flags.join(", ")
                )];
                return if loads {
                    Answer::Covered {
                        how: "fixed-arch JIT build".into(),
                        evidence,
                    }
                } else {
                    Answer::NotCovered { evidence }
                };
            }
            return Answer::Unknown {
                why: format!("no JIT generator `{id}` in the site"),
            };
        }
        let mut evidence = Vec::new();
        let mut covered = true;
        for list in lists {
            match (&list.majors, &list.unknown_because) {
                (_, Some(why)) => {
                    return Answer::Unknown {
                        why: format!("{}:{}: {why}", list.file, list.line),
                    };
                }
                (None, None) => evidence.push(format!(
                    "{}:{} compiles for every target arch",
                    list.file, list.line
                )),
                (Some(majors), None) => {
                    covered &= majors.contains(&(target.major as i64));
                    evidence.push(format!(
                        "{}:{} supported_major_versions={majors:?}",
                        list.file, list.line
                    ));
                }
            }
        }
        if covered {
            Answer::Covered {
                how: "jit".into(),
                evidence,
            }
        } else {
            Answer::NotCovered { evidence }
        }
    }

    /// The inventoried libraries a glob (and a distribution, when given) names.
    fn libraries_matching(
        &self,
        dist: Option<&str>,
        glob: &str,
        site: &Site,
    ) -> Vec<&FileInventory> {
        self.libraries
            .iter()
            .filter(|f| glob_match(glob, &f.path.to_string_lossy()))
            .filter(|f| {
                dist.is_none_or(|d| {
                    site.owner(&f.path.to_string_lossy())
                        .is_some_and(|o| o.name == d)
                })
            })
            .collect()
    }

    fn library_coverage(
        &self,
        dist: Option<&str>,
        glob: &str,
        target: Arch,
        site: &Site,
    ) -> Answer {
        let matching = self.libraries_matching(dist, glob, site);
        if matching.is_empty() {
            return Answer::Unknown {
                why: format!(
                    "no native library matches `{glob}`{}",
                    dist.map(|d| format!(" in {d}")).unwrap_or_default()
                ),
            };
        }
        // Every matching library must carry code for the target: which one a process loads
        // is decided at run time, so the weakest one decides.
        let mut evidence = Vec::new();
        let mut how = Coverage::Sass;
        for file in matching {
            let cov = file_coverage(file, target);
            let c = cov.counts;
            evidence.push(format!(
                "{}: {} containers sass, {} ptx-jit, {} none at {target}",
                file.path.display(),
                c.sass,
                c.ptx_jit,
                c.none
            ));
            how = how.max(if c.sass > 0 {
                Coverage::Sass
            } else if c.ptx_jit > 0 {
                Coverage::PtxJit
            } else {
                Coverage::None
            });
        }
        match how {
            Coverage::Sass => Answer::Covered {
                how: "sass".into(),
                evidence,
            },
            Coverage::PtxJit => Answer::Covered {
                how: "ptx-jit (needs a driver that knows the PTX ISA)".into(),
                evidence,
            },
            Coverage::None => Answer::NotCovered { evidence },
        }
    }

    /// A torch op's libraries: all of them carrying code for the target (or none) decide;
    /// where they disagree, the one that registers the op decides, and that is not read.
    fn op_coverage(&self, namespace: &str, op: &str, target: Arch, site: &Site) -> Answer {
        let glob = format!("{namespace}/**/*.so");
        let answer = self.library_coverage(None, &glob, target, site);
        if !matches!(answer, Answer::NotCovered { .. }) {
            return answer;
        }
        let libraries = self.libraries_matching(None, &glob, site);
        let carrying = libraries
            .iter()
            .filter(|f| {
                let c = file_coverage(f, target).counts;
                c.sass > 0 || c.ptx_jit > 0
            })
            .count();
        if carrying == 0 {
            return answer;
        }
        Answer::Unknown {
            why: format!(
                "{carrying} of the {} libraries under {namespace}/ carry code for {target}, and which one registers torch.ops.{namespace}.{op} is not read",
                libraries.len()
            ),
        }
    }

    fn cubin_coverage(&self, id: &str, target: Arch) -> Answer {
        let Some(table) = self.jit.cubin_tables.iter().find(|t| t.id == id) else {
            return Answer::Unknown {
                why: format!("no cubin table `{id}` in the site"),
            };
        };
        let archs: Vec<String> = table.archs.iter().map(|a| a.to_string()).collect();
        let evidence = vec![format!("{}: {} = {archs:?}", table.file, id)];
        if table.archs.iter().any(|a| sass_loads(*a, target)) {
            Answer::Covered {
                how: "cubin".into(),
                evidence,
            }
        } else {
            Answer::NotCovered { evidence }
        }
    }
}

/// A library or cubin table: the binary layer alone.
fn binary_only(answer: Answer) -> LayeredAnswer {
    let layer = match &answer {
        Answer::Covered { how, evidence } => LayerAnswer {
            layer: Layer::L7,
            verdict: Verdict::Yes,
            summary: how.clone(),
            evidence: evidence.clone(),
        },
        Answer::NotCovered { evidence } => LayerAnswer {
            layer: Layer::L7,
            verdict: Verdict::No,
            summary: "no loadable code".into(),
            evidence: evidence.clone(),
        },
        Answer::Unknown { why } => LayerAnswer::new(Layer::L7, Verdict::Unknown, why.clone()),
    };
    LayeredAnswer {
        layers: vec![layer],
        answer,
    }
}

/// The combined answer. The L2 lines keep their old form (callers match them); every other
/// layer is cited as `L3 device guards no: ...`, the layers that close the target first.
fn combined(layers: &[LayerAnswer], listed: &Answer) -> Answer {
    let l2_lines: Vec<String> = layers
        .iter()
        .find(|l| l.layer == Layer::L2)
        .map(|l| l.evidence.clone())
        .unwrap_or_default();
    let others = || layers.iter().filter(|l| l.layer != Layer::L2);
    match combine(layers) {
        Verdict::No => {
            let mut evidence = l2_lines;
            for verdict in [Verdict::No, Verdict::Partly] {
                for layer in others().filter(|l| l.verdict == verdict) {
                    evidence.extend(layer.cited());
                }
            }
            for layer in others().filter(|l| l.verdict == Verdict::Unknown) {
                evidence.extend(layer.cited());
            }
            Answer::NotCovered { evidence }
        }
        Verdict::Unknown => {
            let why: Vec<String> = layers
                .iter()
                .filter(|l| l.verdict == Verdict::Unknown)
                .map(|l| format!("{} unknown: {}", l.layer.name(), l.summary))
                .collect();
            Answer::Unknown {
                why: why.join("; "),
            }
        }
        _ => {
            let mut how = match listed {
                Answer::Covered { how, .. } => how.clone(),
                _ => "jit".into(),
            };
            let mut evidence = l2_lines;
            for layer in others().filter(|l| l.verdict != Verdict::NotApplicable) {
                if layer.verdict == Verdict::Partly {
                    // Covered with a warning: the kernels it would build empty or trapping.
                    how = format!("{how}; {PARTLY}: {}", layer.summary);
                    evidence.extend(layer.cited());
                } else {
                    evidence.push(layer.cited().remove(0));
                }
            }
            Answer::Covered { how, evidence }
        }
    }
}

/// How a covered answer says some of the build's kernels are compiled out, trap or cannot
/// launch at the target (a `partly` layer): which of them a path runs is decided at run time.
const PARTLY: &str = "PARTLY";

/// Whether a covered answer's `how` says the target is covered only in part (see `PARTLY`).
pub fn is_partly(how: &str) -> bool {
    how.contains(PARTLY)
}

/// `*` matches within a path segment, `**` across segments, `?` one character.
pub fn glob_match(pattern: &str, path: &str) -> bool {
    fn go(p: &[u8], s: &[u8]) -> bool {
        match p.first() {
            None => s.is_empty(),
            Some(b'*') if p.get(1) == Some(&b'*') => {
                let rest = p[2..].strip_prefix(b"/").unwrap_or(&p[2..]);
                (0..=s.len()).any(|i| go(rest, &s[i..]))
            }
            Some(b'*') => (0..=s.len())
                .take_while(|&i| i == 0 || s[i - 1] != b'/')
                .any(|i| go(&p[1..], &s[i..])),
            Some(b'?') => !s.is_empty() && s[0] != b'/' && go(&p[1..], &s[1..]),
            Some(c) => s.first() == Some(c) && go(&p[1..], &s[1..]),
        }
    }
    go(pattern.as_bytes(), path.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob_match(
            "sgl_kernel/*.so",
            "sgl_kernel/flash_ops.abi3.so"
        ));
        assert!(!glob_match(
            "sgl_kernel/*.so",
            "sgl_kernel/sm100/common_ops.abi3.so"
        ));
        assert!(glob_match(
            "sgl_kernel/**/*.so",
            "sgl_kernel/sm100/common_ops.abi3.so"
        ));
        assert!(glob_match("sgl_kernel/**/*.so", "sgl_kernel/x.so"));
        assert!(glob_match(
            "vllm/_C?stable*.so",
            "vllm/_C_stable_libtorch.abi3.so"
        ));
    }
}
