//! "A kernel exists" in layers (see `docs/design.md`, kernel layers): under a JIT generator's
//! arch list (L2) sit the device-side guards of the sources it compiles (L3), the host-side
//! checks of their launchers (L4) and the toolchain that must know the target (L6). Each
//! layer answers yes / partly / no / unknown / not applicable per target, with file:line
//! evidence; the query combines them (`query::KernelIndex::coverage_layers`).
//!
//! What cannot be inferred from the sources (the spec constructors, the folder constants,
//! the check macros, the names that hold the device's SM, the CUDA version each JIT target
//! needs) is declared in `rules/kernels.toml`.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

use rayon::prelude::*;
use serde::Serialize;

use super::cpp::{self, CExpr, Check, KernelDef};
use super::layer_rules::{Holds, JitTarget, LayerRules, parse_cuda};
use super::preproc::{self, Directive, DirectiveKind, Env, Tri};
use super::sources::{FileIncludes, GeneratorFile, SourceSet, file_includes, generator_sources};
use crate::arch::{Arch, Variant};

// ------------------------------------------------------------------------------------------
// Facts of one file (target-independent), cached.
// ------------------------------------------------------------------------------------------

/// One line of a kernel body with code on it.
#[derive(Debug, Clone)]
pub struct CodeLine {
    pub line: u32,
    pub trap: bool,
    pub calls: Vec<String>,
    /// The PTX instructions of `[[kernel_layers.ptx_instruction]]` its string literals hold
    /// (inline `asm`), by index in `LayerRules::ptx_instructions`.
    pub ptx: Vec<usize>,
}

#[derive(Debug, Clone)]
pub struct KernelFacts {
    pub def: KernelDef,
    pub code: Vec<CodeLine>,
}

/// What a file holds, independent of the target.
#[derive(Debug)]
pub struct FileFacts {
    pub path: String,
    pub directives: Vec<Directive>,
    pub line_count: u32,
    pub kernels: Vec<KernelFacts>,
    pub checks: Vec<Check>,
    /// Launchers' requests for dynamic shared memory (`cpp::host_code`).
    pub shared_memory: Vec<cpp::SharedMemoryRequest>,
    /// The file's integer constants, by which those requests are written.
    pub constants: HashMap<String, CExpr>,
}

impl FileFacts {
    pub fn read(root: &Path, path: &str, rules: &LayerRules) -> FileFacts {
        let text = std::fs::read(root.join(path))
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default();
        FileFacts::from_text(path, &text, rules)
    }

    pub fn from_text(path: &str, text: &str, rules: &LayerRules) -> FileFacts {
        let code = cpp::blank(text);
        let (directives, line_count) = preproc::directives(&code);
        let original: Vec<&str> = text.split('\n').collect();
        let blanked: Vec<&str> = code.split('\n').collect();
        let kernels = cpp::kernels(&code)
            .into_iter()
            .map(|def| {
                let mut lines = Vec::new();
                let first = def.open_line;
                let last = def.close_line;
                for line in first..=last {
                    let Some(text) = blanked.get(line as usize - 1) else {
                        break;
                    };
                    // Of the first and last lines, only the parts inside the braces count.
                    let body: &str = text;
                    let trimmed = body.trim();
                    if trimmed.starts_with('#') {
                        continue;
                    }
                    let meaningful = trimmed.trim_matches(|c: char| {
                        c == '{' || c == '}' || c == ';' || c.is_whitespace()
                    });
                    let inner = if line == first {
                        body.split_once('{').map_or("", |(_, r)| r).trim()
                    } else if line == last {
                        body.rsplit_once('}').map_or(body, |(l, _)| l).trim()
                    } else {
                        meaningful
                    };
                    let inner = inner.trim_matches(|c: char| {
                        c == '{' || c == '}' || c == ';' || c.is_whitespace()
                    });
                    if inner.is_empty() || meaningful.is_empty() {
                        continue;
                    }
                    let original_line = original.get(line as usize - 1).copied().unwrap_or("");
                    lines.push(CodeLine {
                        line,
                        trap: cpp::is_trap(original_line),
                        calls: cpp::calls_in(inner),
                        ptx: ptx_named(original_line, text, rules),
                    });
                }
                KernelFacts { def, code: lines }
            })
            .collect();
        // The grammar reads only files that name a check macro and an SM-holding word, or
        // that ask for a kernel's dynamic shared memory; once for both.
        let names_check =
            rules.checks.iter().any(|(m, _)| text.contains(m.as_str())) || text.contains("throw");
        let names_sm = rules
            .prefilter_words()
            .iter()
            .any(|w| text.contains(w.as_str()));
        let host = cpp::host_code(
            text,
            (names_check && names_sm).then_some(rules.checks.as_slice()),
            text.contains(cpp::SHARED_MEMORY_ATTRIBUTE),
        );
        let checks = host
            .checks
            .into_iter()
            .filter(|c| mentions_sm(&c.must_hold, rules))
            .collect();
        let shared_memory = host.shared_memory;
        let constants = host.constants.into_iter().collect();
        FileFacts {
            path: path.to_string(),
            directives,
            line_count,
            kernels,
            checks,
            shared_memory,
            constants,
        }
    }

    fn directive_words(&self, index: u32) -> String {
        let Some(d) = self.directives.get(index as usize) else {
            return String::new();
        };
        let word = match d.kind {
            DirectiveKind::If => "#if",
            DirectiveKind::Ifdef => "#ifdef",
            DirectiveKind::Ifndef => "#ifndef",
            DirectiveKind::Elif => "#elif",
            DirectiveKind::Else => "#else",
            _ => "#",
        };
        if d.kind == DirectiveKind::Else {
            // Name the condition it is the else of.
            let mut depth = 0i32;
            for prev in self.directives[..index as usize].iter().rev() {
                match prev.kind {
                    DirectiveKind::Endif => depth += 1,
                    DirectiveKind::If | DirectiveKind::Ifdef | DirectiveKind::Ifndef
                        if depth == 0 =>
                    {
                        return format!("#else of line {} `{}`", prev.line, prev.text);
                    }
                    DirectiveKind::If | DirectiveKind::Ifdef | DirectiveKind::Ifndef => depth -= 1,
                    _ => {}
                }
            }
            return "#else".into();
        }
        format!("{word} {}", d.text)
    }

    fn directive_line(&self, index: u32) -> u32 {
        self.directives.get(index as usize).map_or(0, |d| d.line)
    }

    /// Whether the chain a directive belongs to names an arch macro.
    fn arch_guard(&self, index: u32) -> bool {
        let words = self.directive_words(index);
        preproc::names_arch(&words)
    }
}

fn mentions_sm(expr: &CExpr, rules: &LayerRules) -> bool {
    match expr {
        CExpr::Name(n) => rules.holds(n).is_some(),
        CExpr::Not(e) => mentions_sm(e, rules),
        CExpr::Bin(_, a, b) => mentions_sm(a, rules) || mentions_sm(b, rules),
        CExpr::Int(_) | CExpr::Opaque(_) => false,
    }
}

// ------------------------------------------------------------------------------------------
// A generator's sources, analysed once.
// ------------------------------------------------------------------------------------------

/// The sources of one generator and their facts.
#[derive(Debug)]
pub struct GeneratorSources {
    pub set: SourceSet,
    pub files: Vec<Arc<FileFacts>>,
}

/// Caches file facts across generators (headers are shared) and generators across queries.
/// Each entry is computed once: a thread asking for one that another is computing waits for
/// it (verdicts are judged in parallel, and many gates share a generator and its headers).
#[derive(Debug, Default)]
pub struct LayerIndex {
    files: Cells<String, FileFacts>,
    generators: Cells<(String, String), GeneratorSources>,
    /// The Python files generators are read from, parsed.
    generator_files: Cells<String, GeneratorFile>,
    /// What each C++ file includes, resolved (`sources::file_includes`).
    includes: Cells<String, FileIncludes>,
}

/// Keys to values computed once each.
type Cells<K, V> = Mutex<HashMap<K, Arc<OnceLock<Arc<V>>>>>;

/// The cell for `key`, made empty when it is new; the lock is held only to find it.
fn cell<K: std::hash::Hash + Eq, V>(
    map: &Mutex<HashMap<K, Arc<OnceLock<V>>>>,
    key: K,
) -> Arc<OnceLock<V>> {
    match map.lock() {
        Ok(mut map) => map.entry(key).or_default().clone(),
        // A panic elsewhere poisoned the cache: compute without it.
        Err(_) => Arc::new(OnceLock::new()),
    }
}

impl LayerIndex {
    /// Reads the sources of these generators (file, function) before anyone asks: each
    /// generator's source set, then every file of them once, each step spread over the cores.
    /// Gates judged in parallel that share a generator otherwise wait on the one thread that
    /// reads its files one after another (`generator`).
    pub fn read_generators(
        &self,
        root: &Path,
        generators: &[(String, String)],
        rules: &LayerRules,
    ) {
        let sets: Vec<SourceSet> = generators
            .par_iter()
            .map(|(file, function)| self.source_set(root, file, function, rules))
            .collect();
        let files: BTreeSet<&String> = sets.iter().flat_map(|set| &set.files).collect();
        files.into_par_iter().for_each(|path| {
            self.file_facts(root, path, rules);
        });
        generators
            .par_iter()
            .zip(sets)
            .for_each(|((file, function), set)| {
                cell(&self.generators, (file.clone(), function.clone()))
                    .get_or_init(|| self.with_facts(root, set, rules));
            });
    }

    pub fn generator(
        &self,
        root: &Path,
        file: &str,
        function: &str,
        rules: &LayerRules,
    ) -> Arc<GeneratorSources> {
        let generator = cell(&self.generators, (file.to_string(), function.to_string()));
        generator
            .get_or_init(|| {
                self.with_facts(root, self.source_set(root, file, function, rules), rules)
            })
            .clone()
    }

    /// A generator's source set with the facts of each of its files.
    fn with_facts(&self, root: &Path, set: SourceSet, rules: &LayerRules) -> Arc<GeneratorSources> {
        let files = set
            .files
            .iter()
            .map(|path| self.file_facts(root, path, rules))
            .collect();
        Arc::new(GeneratorSources { set, files })
    }

    /// The files a generator compiles (its generator file read once per audit).
    fn source_set(&self, root: &Path, file: &str, function: &str, rules: &LayerRules) -> SourceSet {
        let parsed = cell(&self.generator_files, file.to_string())
            .get_or_init(|| Arc::new(GeneratorFile::read(root, file)))
            .clone();
        let includes_of = |path: &str| {
            cell(&self.includes, path.to_string())
                .get_or_init(|| Arc::new(file_includes(root, rules, path)))
                .clone()
        };
        generator_sources(root, &parsed, file, function, rules, &includes_of)
    }

    /// One source file's facts, read once per audit.
    fn file_facts(&self, root: &Path, path: &str, rules: &LayerRules) -> Arc<FileFacts> {
        cell(&self.files, path.to_string())
            .get_or_init(|| Arc::new(FileFacts::read(root, path, rules)))
            .clone()
    }
}

// ------------------------------------------------------------------------------------------
// Answers per layer.
// ------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Layer {
    L2,
    L3,
    L4,
    L5,
    L6,
    L7,
}

impl Layer {
    pub fn name(self) -> &'static str {
        match self {
            Layer::L2 => "L2 JIT arch list",
            Layer::L3 => "L3 device guards",
            Layer::L4 => "L4 host checks",
            Layer::L5 => "L5 DSL admission",
            Layer::L6 => "L6 toolchain",
            Layer::L7 => "L7 binary",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    Yes,
    /// Some kernels are compiled out or trap at the target, others are not.
    Partly,
    No,
    Unknown,
    /// The layer does not exist for this requirement.
    NotApplicable,
}

impl Verdict {
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Yes => "yes",
            Verdict::Partly => "partly",
            Verdict::No => "no",
            Verdict::Unknown => "unknown",
            Verdict::NotApplicable => "n/a",
        }
    }
    /// Whether it closes the target. `partly` does not: which kernels of a build a caller
    /// launches is decided at run time, so a build with some kernels compiled out is covered
    /// with a warning that names them (see `query::combined`).
    pub fn closes(self) -> bool {
        self == Verdict::No
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LayerAnswer {
    pub layer: Layer,
    pub verdict: Verdict,
    /// One sentence.
    pub summary: String,
    /// `file:line ...` lines.
    pub evidence: Vec<String>,
}

impl LayerAnswer {
    pub fn new(layer: Layer, verdict: Verdict, summary: impl Into<String>) -> Self {
        LayerAnswer {
            layer,
            verdict,
            summary: summary.into(),
            evidence: Vec::new(),
        }
    }

    /// Evidence lines as the coverage answer cites them: `L3 device guards no: ...`.
    pub fn cited(&self) -> Vec<String> {
        let head = format!(
            "{} {}: {}",
            self.layer.name(),
            self.verdict.word(),
            self.summary
        );
        std::iter::once(head)
            .chain(
                self.evidence
                    .iter()
                    .map(|e| format!("{} {e}", self.layer.name())),
            )
            .collect()
    }
}

/// The toolkit a JIT build would use, when known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Toolchain {
    pub cuda: Option<(u32, u32)>,
    /// Where the version came from: `nvidia-cuda-nvcc-cu12 12.8.93`, `--cuda 13.0`.
    pub source: String,
}

impl Toolchain {
    pub fn unknown() -> Toolchain {
        Toolchain {
            cuda: None,
            source: String::new(),
        }
    }

    /// `--cuda X.Y` when given, else the nvcc distribution installed in the site.
    pub fn find(site: &crate::site::Site, cuda: Option<&str>, rules: &LayerRules) -> Toolchain {
        if let Some(version) = cuda.and_then(parse_cuda) {
            return Toolchain {
                cuda: Some(version),
                source: format!("--cuda {}.{}", version.0, version.1),
            };
        }
        let normal = |n: &str| n.to_ascii_lowercase().replace('_', "-");
        for dist in &site.distributions {
            if rules
                .nvcc_dists
                .iter()
                .any(|d| normal(d) == normal(&dist.name))
                && let Some(version) = parse_cuda(&dist.version)
            {
                return Toolchain {
                    cuda: Some(version),
                    source: format!("{} {}", dist.name, dist.version),
                };
            }
        }
        Toolchain::unknown()
    }
}

fn cuda_text((major, minor): (u32, u32)) -> String {
    format!("{major}.{minor}")
}

/// The build variant a JIT build uses at `target` with `toolchain`, and the L6 answer.
pub fn toolchain_layer(
    target: Arch,
    toolchain: &Toolchain,
    rules: &LayerRules,
) -> (Option<Variant>, LayerAnswer) {
    let options: Vec<&JitTarget> = rules
        .jit_targets
        .iter()
        .filter(|t| t.target == target.plain())
        .collect();
    let name = |t: &JitTarget| format!("{}{}", t.target, t.variant.suffix());
    if options.is_empty() {
        return (
            Some(Variant::Plain),
            LayerAnswer::new(
                Layer::L6,
                Verdict::Yes,
                format!("{target} needs no arch-specific target from the toolkit"),
            ),
        );
    }
    let needs: Vec<String> = options
        .iter()
        .map(|t| format!("{} needs CUDA >= {}", name(t), cuda_text(t.min_cuda)))
        .collect();
    match toolchain.cuda {
        Some(cuda) => match options.iter().find(|t| t.min_cuda <= cuda) {
            Some(t) => (
                Some(t.variant),
                LayerAnswer::new(
                    Layer::L6,
                    Verdict::Yes,
                    format!(
                        "builds {} with CUDA {} ({})",
                        name(t),
                        cuda_text(cuda),
                        toolchain.source
                    ),
                ),
            ),
            None => (
                None,
                LayerAnswer::new(
                    Layer::L6,
                    Verdict::No,
                    format!(
                        "the toolkit is CUDA {} ({}): {}",
                        cuda_text(cuda),
                        toolchain.source,
                        needs.join(", ")
                    ),
                ),
            ),
        },
        None => {
            let same = options.iter().all(|t| t.variant == options[0].variant);
            (
                same.then_some(options[0].variant),
                LayerAnswer::new(
                    Layer::L6,
                    Verdict::NotApplicable,
                    format!(
                        "not checked: no nvcc distribution in the site and no --cuda ({})",
                        needs.join(", ")
                    ),
                ),
            )
        }
    }
}

/// The state of one kernel at one target.
#[derive(Debug, Clone, PartialEq, Eq)]
enum KernelState {
    Compiled,
    CompiledOut(Option<u32>),
    Traps(u32),
    Unknown(Option<u32>),
}

/// The `[[kernel_layers.ptx_instruction]]`s a line's string literals hold, by index (`blanked`:
/// the line as `cpp::blank` leaves it).
fn ptx_named(line: &str, blanked: &str, rules: &LayerRules) -> Vec<usize> {
    if rules.ptx_instructions.is_empty() || !blanked.contains('"') {
        return Vec::new();
    }
    let strings = cpp::string_contents(line, blanked);
    (0..rules.ptx_instructions.len())
        .filter(|&i| {
            strings
                .iter()
                .any(|s| rules.ptx_instructions[i].named_in(s))
        })
        .collect()
}

/// The first PTX instruction on a line that is compiled at the target (`Tri::Yes`) which the
/// build for the target does not assemble: (line, instruction).
fn unassembled<'r>(
    kernel: &KernelFacts,
    live: &preproc::Liveness,
    target: Arch,
    variant: Option<Variant>,
    rules: &'r LayerRules,
) -> Option<(u32, &'r super::layer_rules::PtxInstruction)> {
    kernel.code.iter().find_map(|code| {
        if code.ptx.is_empty() || live.at(code.line) != Tri::Yes {
            return None;
        }
        code.ptx
            .iter()
            .filter_map(|&i| rules.ptx_instructions.get(i))
            .find(|ins| ins.missing_at(target, variant))
            .map(|ins| (code.line, ins))
    })
}

/// How many kernels that stop the build L3's evidence names.
const UNBUILDABLE_SHOWN: usize = 3;

/// L3 at one target.
pub fn device_layer(
    sources: &GeneratorSources,
    target: Arch,
    variant: Option<Variant>,
    toolchain: &Toolchain,
    rules: &LayerRules,
) -> LayerAnswer {
    if sources.set.roots.is_empty() {
        return not_found(Layer::L3, &sources.set);
    }
    let mut env = Env::device(target, variant, toolchain.cuda);
    env.define_flags(sources.set.defines.iter().map(String::as_str));
    let mut total = 0usize;
    let mut closed = Vec::new();
    let mut unknown = Vec::new();
    let mut partial = Vec::new();
    let mut notes = Vec::new();
    // Kernels whose compiled code holds PTX the target's build does not assemble: ptxas stops
    // there, and the whole module with it.
    let mut unbuildable = Vec::new();
    for file in &sources.files {
        if file.kernels.is_empty() {
            continue;
        }
        let live = preproc::liveness(&file.directives, file.line_count, &env);
        for kernel in &file.kernels {
            // A definition on a dead branch is not this target's kernel: another branch
            // defines it (`#if __CUDA_ARCH__ >= 900 ... #else <stub> #endif`).
            if live.at(kernel.def.line) == Tri::No {
                continue;
            }
            total += 1;
            let at = format!("{}:{}", file.path, kernel.def.line);
            let state = kernel_state(kernel, &live);
            if matches!(state, KernelState::Compiled | KernelState::Traps(_))
                && let Some((line, ins)) = unassembled(kernel, &live, target, variant, rules)
            {
                let built = match variant {
                    Some(variant) => format!("{}{}", target.plain(), variant.suffix()),
                    None => format!("{} (any variant)", target.plain()),
                };
                let says = format!(
                    "{}:{line} `{}` ({at}) holds PTX `{}`, which a build for {built} does not assemble ({})",
                    file.path, kernel.def.name, ins.prefix, ins.source
                );
                // A template is compiled only where the host code instantiates it.
                if kernel.def.template {
                    unknown.push(format!(
                        "{says}: the build fails if the template is instantiated"
                    ));
                } else {
                    unbuildable.push(format!("{says}: the build fails there"));
                }
                continue;
            }
            let guard_text = |g: Option<u32>| {
                g.map(|g| {
                    format!(
                        "{}:{} `{}`",
                        file.path,
                        file.directive_line(g),
                        file.directive_words(g)
                    )
                })
                .unwrap_or_else(|| "(no enclosing guard)".into())
            };
            match state {
                KernelState::CompiledOut(g) => closed.push(format!(
                    "{} compiles `{}` ({at}) to an empty body at {target}: it returns without computing and without an error",
                    guard_text(g),
                    kernel.def.name
                )),
                KernelState::Traps(line) => closed.push(format!(
                    "{}:{line} `{}` ({at}) traps at {target} (asm trap / __trap)",
                    file.path, kernel.def.name
                )),
                // A guard that names no arch macro (`#ifdef ENABLE_FP8`) is the same at every
                // target: not this layer's question, so a note, not an unknown.
                KernelState::Unknown(g) if !g.is_some_and(|g| file.arch_guard(g)) => {
                    notes.push(format!(
                        "{} decides whether `{}` ({at}) has a body, the same at every target",
                        guard_text(g),
                        kernel.def.name
                    ))
                }
                KernelState::Unknown(g) => unknown.push(format!(
                    "{} decides whether `{}` ({at}) has a body at {target}: it names a macro gatefix cannot know",
                    guard_text(g),
                    kernel.def.name
                )),
                KernelState::Compiled => {}
            }
            // Parts removed: code lines dropped by an arch guard, grouped by guard.
            let mut removed: Vec<(u32, Vec<String>)> = Vec::new();
            for code in &kernel.code {
                if live.at(code.line) != Tri::No {
                    continue;
                }
                let Some(g) = live.guard_of(code.line) else {
                    continue;
                };
                if !file.arch_guard(g) {
                    continue;
                }
                match removed.iter_mut().find(|(gg, _)| *gg == g) {
                    Some((_, calls)) => {
                        for c in &code.calls {
                            if !calls.contains(c) {
                                calls.push(c.clone());
                            }
                        }
                    }
                    None => removed.push((g, code.calls.clone())),
                }
            }
            if matches!(state, KernelState::Compiled) {
                for (g, calls) in removed {
                    let what = if calls.is_empty() {
                        "code".to_string()
                    } else {
                        calls
                            .iter()
                            .map(|c| format!("{c}()"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    };
                    partial.push(format!(
                        "{}:{} `{}` removes {what} from `{}` at {target} (compiled with parts removed)",
                        file.path,
                        file.directive_line(g),
                        file.directive_words(g),
                        kernel.def.name
                    ));
                }
            }
        }
    }
    let read = sources.files.len();
    if total == 0 {
        // The kernels come from headers not read (CUTLASS templates, generated sources): no
        // guard gatefix reads decides; the layer does not apply, and says so.
        let mut answer = LayerAnswer::new(
            Layer::L3,
            Verdict::NotApplicable,
            format!(
                "no __global__ kernel with a body in the {read} files read (kernels from headers outside them, such as CUTLASS, are not evaluated)"
            ),
        );
        answer.evidence = source_notes(&sources.set);
        return answer;
    }
    let (verdict, summary) = if !unbuildable.is_empty() {
        (
            Verdict::No,
            format!(
                "{} of {total} kernels hold PTX that {target}'s build does not assemble: the module does not build",
                unbuildable.len()
            ),
        )
    } else if closed.len() == total {
        (
            Verdict::No,
            format!("all {total} kernels are compiled out or trap at {target}"),
        )
    } else if !closed.is_empty() {
        (
            Verdict::Partly,
            format!(
                "{} of {total} kernels are compiled out or trap at {target}",
                closed.len()
            ),
        )
    } else if !unknown.is_empty() {
        (
            Verdict::Unknown,
            format!(
                "{} of {total} kernels depend on macros gatefix cannot know",
                unknown.len()
            ),
        )
    } else {
        (
            Verdict::Yes,
            format!("{total} kernels in {read} files have bodies at {target}"),
        )
    };
    let mut answer = LayerAnswer::new(Layer::L3, verdict, summary);
    // One failing kernel stops the build: a few name where, the count says the rest (a
    // generated module holds dozens).
    let more = unbuildable.len().saturating_sub(UNBUILDABLE_SHOWN);
    answer
        .evidence
        .extend(unbuildable.into_iter().take(UNBUILDABLE_SHOWN));
    if more > 0 {
        answer.evidence.push(format!(
            "and {more} more kernel(s) with PTX the build does not assemble"
        ));
    }
    answer.evidence.extend(closed);
    answer.evidence.extend(unknown);
    answer.evidence.extend(partial);
    answer.evidence.extend(notes);
    if verdict == Verdict::Yes || verdict == Verdict::Unknown {
        answer.evidence.extend(source_notes(&sources.set));
    }
    answer
}

fn kernel_state(kernel: &KernelFacts, live: &preproc::Liveness) -> KernelState {
    let mut yes = Vec::new();
    let mut unknown = Vec::new();
    for code in &kernel.code {
        match live.at(code.line) {
            Tri::Yes => yes.push(code),
            Tri::Unknown => unknown.push(code),
            Tri::No => {}
        }
    }
    let first_guard = || kernel.code.first().and_then(|c| live.guard_of(c.line));
    if yes.is_empty() && unknown.is_empty() {
        if kernel.code.is_empty() {
            // An empty body in the source itself is not a guard's doing.
            return KernelState::Compiled;
        }
        return KernelState::CompiledOut(first_guard());
    }
    if yes.is_empty() {
        return KernelState::Unknown(unknown.first().and_then(|c| live.guard_of(c.line)));
    }
    if unknown.is_empty() && yes.iter().all(|c| c.trap) {
        return KernelState::Traps(yes[0].line);
    }
    KernelState::Compiled
}

fn not_found(layer: Layer, set: &SourceSet) -> LayerAnswer {
    let why = set
        .why_none
        .clone()
        .unwrap_or_else(|| "sources not found".into());
    let summary = if why.starts_with("sources not found") {
        why
    } else {
        format!("sources not found: {why}")
    };
    LayerAnswer::new(layer, Verdict::Unknown, summary)
}

pub(crate) fn source_notes(set: &SourceSet) -> Vec<String> {
    let mut out = Vec::new();
    if !set.unresolved.is_empty() {
        out.push(format!(
            "{} source list elements not resolved: {}",
            set.unresolved.len(),
            set.unresolved.join("; ")
        ));
    }
    if !set.missing_includes.is_empty() {
        let shown: Vec<&String> = set.missing_includes.iter().take(5).collect();
        out.push(format!(
            "{} quoted includes not found in the site (not read): {}{}",
            set.missing_includes.len(),
            shown
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            if set.missing_includes.len() > 5 {
                ", ..."
            } else {
                ""
            }
        ));
    }
    if set.truncated {
        out.push(format!(
            "the include walk stopped at {} files",
            super::sources::MAX_FILES
        ));
    }
    out
}

/// L4 at one target.
pub fn host_layer(
    sources: &GeneratorSources,
    target: Arch,
    toolchain: &Toolchain,
    rules: &LayerRules,
) -> LayerAnswer {
    if sources.set.roots.is_empty() {
        return not_found(Layer::L4, &sources.set);
    }
    let mut env = Env::host(toolchain.cuda);
    env.define_flags(sources.set.defines.iter().map(String::as_str));
    let mut fails = Vec::new();
    let mut unknown = Vec::new();
    let mut notes = Vec::new();
    let mut passes = 0usize;
    for file in &sources.files {
        if file.checks.is_empty() {
            continue;
        }
        let live = preproc::liveness(&file.directives, file.line_count, &env);
        for check in &file.checks {
            if live.at(check.line) == Tri::No {
                continue;
            }
            let context = check
                .context
                .iter()
                .filter(|c| mentions_sm(c, rules))
                .fold(Tri::Yes, |acc, c| acc.and(Tri::of(value(c, target, rules))));
            if context == Tri::No {
                continue;
            }
            let holds = Tri::of(value(&check.must_hold, target, rules));
            let at = format!("{}:{} `{}`", file.path, check.line, check.text);
            // Under an `if` on something else (a mode, a dtype), a failing check closes that
            // path only: reported, not deciding.
            let path = check
                .context
                .iter()
                .zip(&check.context_text)
                .find(|(c, _)| !mentions_sm(c, rules))
                .map(|(_, text)| text.clone());
            match (holds, context, path) {
                (Tri::Yes, _, _) => passes += 1,
                (Tri::No, Tri::Yes, Some(path)) => notes.push(format!(
                    "{at} fails at {target} on the path where `{path}` holds (that path only)"
                )),
                (Tri::No, Tri::Yes, None) => fails.push(format!(
                    "{at} fails at {target} ({}): the launcher raises after a successful build",
                    sm_values(target)
                )),
                _ => unknown.push(format!("{at}: not decided at {target}")),
            }
        }
    }
    let too_big = shared_memory_over(sources, target, &env, rules);
    let (verdict, summary) = if !fails.is_empty() {
        (
            Verdict::No,
            format!("{} host checks on the SM fail at {target}", fails.len()),
        )
    } else if unknown.is_empty() && !too_big.is_empty() {
        // One launcher's kernels cannot run; which launcher a caller's path reaches is not
        // known here, so the build is covered only in part.
        (
            Verdict::Partly,
            format!(
                "{} launcher(s) ask for more dynamic shared memory per block than {target} has: \
                 the kernels they launch cannot run there",
                too_big.len()
            ),
        )
    } else if !unknown.is_empty() {
        (
            Verdict::Unknown,
            format!(
                "{} host checks on the SM are not decided at {target}",
                unknown.len()
            ),
        )
    } else if passes > 0 {
        (
            Verdict::Yes,
            format!("{passes} host checks on the SM pass at {target}"),
        )
    } else {
        (
            Verdict::Yes,
            format!(
                "no host check on the SM in the {} files read",
                sources.files.len()
            ),
        )
    };
    let mut answer = LayerAnswer::new(Layer::L4, verdict, summary);
    answer.evidence.extend(fails);
    answer.evidence.extend(unknown);
    answer.evidence.extend(too_big);
    answer.evidence.extend(notes);
    answer
}

/// The launchers that ask for a constant amount of dynamic shared memory above what one
/// block may have at `target` (`rules/kernels.toml`, `[[kernel_layers.shared_memory]]`),
/// where the request is live at the target: `file:line` lines. A size gatefix cannot
/// compute (a runtime value, a constant of another file) is not judged.
fn shared_memory_over(
    sources: &GeneratorSources,
    target: Arch,
    env: &Env,
    rules: &LayerRules,
) -> Vec<String> {
    let Some(max) = rules.max_shared_memory(target) else {
        return Vec::new();
    };
    let mut over = Vec::new();
    for file in &sources.files {
        if file.shared_memory.is_empty() {
            continue;
        }
        let live = preproc::liveness(&file.directives, file.line_count, env);
        for request in &file.shared_memory {
            if live.at(request.line) == Tri::No {
                continue;
            }
            let reached = request
                .context
                .iter()
                .filter(|c| mentions_sm(c, rules))
                .all(|c| value(c, target, rules) != Some(0));
            if !reached {
                continue;
            }
            let Some(bytes) = constant_value(&request.bytes, &file.constants, 0) else {
                continue;
            };
            if u64::try_from(bytes).is_ok_and(|bytes| bytes > max) {
                over.push(format!(
                    "{}:{} `{}` asks for {bytes} bytes; {target} allows at most {max} per block (rules/kernels.toml)",
                    file.path, request.line, request.text
                ));
            }
        }
    }
    over
}

/// An integer expression of literals and the file's constants (`227 * 1024`, `48 << 10`).
fn constant_value(expr: &CExpr, constants: &HashMap<String, CExpr>, depth: usize) -> Option<i64> {
    if depth > 16 {
        return None;
    }
    match expr {
        CExpr::Int(v) => Some(*v),
        CExpr::Name(name) => constant_value(constants.get(name)?, constants, depth + 1),
        CExpr::Bin(op, a, b) => {
            let l = constant_value(a, constants, depth + 1)?;
            let r = constant_value(b, constants, depth + 1)?;
            match op.as_str() {
                "+" => l.checked_add(r),
                "-" => l.checked_sub(r),
                "*" => l.checked_mul(r),
                "/" => l.checked_div(r),
                "<<" => u32::try_from(r).ok().and_then(|r| l.checked_shl(r)),
                _ => None,
            }
        }
        CExpr::Not(_) | CExpr::Opaque(_) => None,
    }
}

fn sm_values(target: Arch) -> String {
    format!(
        "major = {}, minor = {}, sm = {}",
        target.major,
        target.minor,
        target.sm()
    )
}

/// The value of a host expression at `target`; `None` when it names something unknown.
fn value(expr: &CExpr, target: Arch, rules: &LayerRules) -> Option<i64> {
    match expr {
        CExpr::Int(v) => Some(*v),
        CExpr::Name(name) => match rules.holds(name) {
            Some(Holds::Major) => Some(i64::from(target.major)),
            Some(Holds::Minor) => Some(i64::from(target.minor)),
            Some(Holds::Sm) => Some(i64::from(target.sm())),
            None => rules.constant(name),
        },
        CExpr::Not(e) => value(e, target, rules).map(|v| i64::from(v == 0)),
        CExpr::Bin(op, a, b) => {
            let (l, r) = (value(a, target, rules), value(b, target, rules));
            match op.as_str() {
                "&&" => match (l, r) {
                    (Some(0), _) | (_, Some(0)) => Some(0),
                    (Some(_), Some(_)) => Some(1),
                    _ => None,
                },
                "||" => match (l, r) {
                    (Some(l), _) if l != 0 => Some(1),
                    (_, Some(r)) if r != 0 => Some(1),
                    (Some(_), Some(_)) => Some(0),
                    _ => None,
                },
                _ => {
                    let (l, r) = (l?, r?);
                    Some(match op.as_str() {
                        "==" => i64::from(l == r),
                        "!=" => i64::from(l != r),
                        "<" => i64::from(l < r),
                        "<=" => i64::from(l <= r),
                        ">" => i64::from(l > r),
                        ">=" => i64::from(l >= r),
                        "+" => l.wrapping_add(r),
                        "-" => l.wrapping_sub(r),
                        "*" => l.wrapping_mul(r),
                        "/" => l.checked_div(r)?,
                        "%" => l.checked_rem(r)?,
                        _ => return None,
                    })
                }
            }
        }
        CExpr::Opaque(_) => None,
    }
}

/// Combines layers: any `no` closes the target; otherwise any `unknown` makes the answer
/// unknown; `partly` and `n/a` layers do not close it.
pub fn combine(layers: &[LayerAnswer]) -> Verdict {
    if layers.iter().any(|l| l.verdict.closes()) {
        Verdict::No
    } else if layers.iter().any(|l| l.verdict == Verdict::Unknown) {
        Verdict::Unknown
    } else {
        Verdict::Yes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_rules_parse() {
        let rules = LayerRules::embedded();
        assert!(rules.spec_calls.iter().any(|c| c == "gen_jit_spec"));
        assert!(rules.checks.iter().any(|(c, _)| c == "TVM_FFI_ICHECK_EQ"));
        assert_eq!(rules.constant("kSM_100"), Some(100));
        assert_eq!(rules.constant("kSM_100f"), None);
        assert!(!rules.jit_targets.is_empty());
        assert_eq!(rules.max_shared_memory(Arch::new(12, 0)), Some(101_376));
        assert_eq!(rules.max_shared_memory(Arch::new(10, 0)), Some(232_448));
        // Not in the table: nothing is judged there.
        assert_eq!(rules.max_shared_memory(Arch::new(11, 0)), None);
    }

    #[test]
    fn toolchain_needs() {
        let rules = LayerRules::embedded();
        let tc = |v| Toolchain {
            cuda: Some(v),
            source: "test".into(),
        };
        let (variant, l6) = toolchain_layer(Arch::new(12, 0), &tc((12, 8)), rules);
        assert_eq!((variant, l6.verdict), (Some(Variant::A), Verdict::Yes));
        let (variant, l6) = toolchain_layer(Arch::new(12, 0), &tc((12, 9)), rules);
        assert_eq!((variant, l6.verdict), (Some(Variant::F), Verdict::Yes));
        assert_eq!(
            toolchain_layer(Arch::new(12, 1), &tc((12, 8)), rules)
                .1
                .verdict,
            Verdict::No
        );
        assert_eq!(
            toolchain_layer(Arch::new(11, 0), &tc((12, 9)), rules)
                .1
                .verdict,
            Verdict::No
        );
        assert_eq!(
            toolchain_layer(Arch::new(11, 0), &tc((13, 0)), rules)
                .1
                .verdict,
            Verdict::Yes
        );
        let l6 = toolchain_layer(Arch::new(12, 0), &Toolchain::unknown(), rules).1;
        assert_eq!(l6.verdict, Verdict::NotApplicable);
    }
}
