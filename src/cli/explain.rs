//! `gatefix explain MESSAGE|LOGFILE`: where a message can be raised in the site, the gates and
//! JIT generators that lead there, their verdicts at the target, and what to do.

use std::fmt::Write as _;
use std::path::PathBuf;

use clap::Args;

use crate::arch::Arch;
use crate::error::{Error, Result, exit};
use crate::explain::{self, Match};
use crate::gate::predicate::{Admits, evaluate};
use crate::kernel::query::{Answer, KernelIndex, Requirement};
use crate::patch::PatchSet;
use crate::rules::Rules;
use crate::scan::{ScanOptions, scan_with};
use crate::site::Site;
use crate::verdict::{VerdictKind, judge};

#[derive(Args, Debug)]
pub struct ExplainArgs {
    /// The error message as printed (`RuntimeError: ...`; `...` stands for a part left out),
    /// or a log file: its last exception is taken.
    #[arg(value_name = "MESSAGE|LOGFILE")]
    pub message: String,
    /// A venv root.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["site", "python"])]
    pub venv: Option<PathBuf>,
    /// A site-packages folder.
    #[arg(long, value_name = "DIR", conflicts_with = "python")]
    pub site: Option<PathBuf>,
    /// A Python interpreter whose purelib is the site.
    #[arg(long, value_name = "EXE")]
    pub python: Option<PathBuf>,
    /// The GPU the message came from; default: the first GPU nvidia-smi reports.
    #[arg(long = "target", short = 't', value_name = "ARCH")]
    pub target: Option<Arch>,
    /// CUDA version for `cuda >= X` atoms; default: from the site's torch/version.py.
    #[arg(long, value_name = "X.Y")]
    pub cuda: Option<String>,
}

/// The compute capability of the first GPU, from `nvidia-smi` when it is installed.
fn nvidia_smi_target() -> Option<Arch> {
    let output = std::process::Command::new("nvidia-smi")
        .args(["--query-gpu=compute_cap", "--format=csv,noheader"])
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .next()?
        .trim()
        .parse()
        .ok()
}

pub fn run(args: ExplainArgs) -> Result<i32> {
    let root = match (&args.venv, &args.site, &args.python) {
        (Some(dir), _, _) | (None, Some(dir), _) => crate::site::discover(Some(dir))?,
        (None, None, Some(python)) => crate::site::python_purelib(python)?,
        (None, None, None) => crate::site::discover(None)?,
    };
    let target = match args.target.or_else(nvidia_smi_target) {
        Some(t) => t,
        None => {
            return Err(Error::input(
                "explain needs --target (no nvidia-smi to ask which GPU this is): \
                 e.g. --target sm_120",
            ));
        }
    };
    let path = std::path::Path::new(&args.message);
    let (kind, message) = if path.is_file() {
        let log = std::fs::read(path).map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })?;
        explain::last_exception(&String::from_utf8_lossy(&log)).ok_or_else(|| {
            Error::input(format!(
                "{}: no exception line (`SomeError: message`) in this log",
                path.display()
            ))
        })?
    } else {
        match explain::split_exception(args.message.trim()) {
            Some(pair) => pair,
            None => (String::new(), args.message.trim().to_string()),
        }
    };
    eprintln!("gatefix: site {}, target {target}", root.display());
    let site = Site::open(&root)?;
    let matches = explain::find(&site.root, &message);
    let mut out = String::new();
    let shown = if kind.is_empty() {
        message.clone()
    } else {
        format!("{kind}: {message}")
    };
    let _ = writeln!(out, "explain: {shown}");
    if matches.is_empty() {
        print!("{out}");
        eprintln!(
            "gatefix: no raise or check site in {} has this message; is it the site the \
             program ran with (--venv, --site, --python)?",
            site.root.display()
        );
        return Ok(exit::FINDINGS);
    }
    let rules = Rules::load(None)?;
    let cuda = match &args.cuda {
        Some(text) => Some(
            crate::gate::predicate::CudaVersion::parse(text)
                .ok_or_else(|| Error::input(format!("invalid --cuda `{text}`")))?,
        ),
        None => site.torch_cuda(),
    };
    let scan = scan_with(
        &site,
        &rules,
        ScanOptions {
            kernel_sources: true,
            ..ScanOptions::default()
        },
    );
    let verdicts = judge(&site, &scan, &rules, &[target], cuda.as_ref());
    let kernels = KernelIndex::build_jit_only(&site, &scan);
    let mut generators_seen: Vec<String> = Vec::new();
    let mut missing_kernel = false;
    for found in &matches {
        describe_site(&mut out, &site, found);
        if let Some(condition) = &found.site.condition {
            let _ = writeln!(
                out,
                "  a check in native code: it fails unless `{condition}`; the kernel behind it was \
                 built for what that condition names, and no Python gate decides it"
            );
            continue;
        }
        let function = found.site.function.clone().unwrap_or_default();
        // JIT generators that call the function raising: the placeholder naming the arch
        // list (captured from the message) picks those whose list it printed.
        let call = format!("{function}(");
        let lists: Vec<&String> = found
            .captures
            .iter()
            .filter(|(_, v)| v.starts_with('['))
            .map(|(_, v)| v)
            .collect();
        let generators: Vec<&crate::kernel::jit::Generator> = kernels
            .jit
            .generators
            .iter()
            .filter(|g| !function.is_empty() && g.text.contains(&call))
            .filter(|g| {
                lists.is_empty()
                    || g.majors.as_ref().is_some_and(|m| {
                        let shown = format!(
                            "[{}]",
                            m.iter()
                                .map(|x| x.to_string())
                                .collect::<Vec<_>>()
                                .join(", ")
                        );
                        lists.iter().any(|l| **l == shown)
                    })
            })
            .collect();
        if !generators.is_empty() {
            let which = if lists.is_empty() {
                String::new()
            } else {
                format!(" with the list {}", lists[0])
            };
            let _ = writeln!(out, "  JIT generators that call {function}{which}:");
            for g in &generators {
                let answer = kernels.coverage(&Requirement::Jit(g.id.clone()), target, &site);
                let word = match &answer {
                    Answer::Covered { .. } => format!("kernel present at {target}"),
                    Answer::NotCovered { .. } => {
                        missing_kernel = true;
                        format!("NO kernel at {target}")
                    }
                    Answer::Unknown { why } => format!("unknown at {target} ({why})"),
                };
                let _ = writeln!(out, "    {}  {}:{}  {word}", g.id, g.file, g.line);
                generators_seen.push(g.id.clone());
                // The gates whose path needs it, outside the generator's own file.
                for (gate, per_target) in scan.gates.iter().zip(&verdicts) {
                    let Some(verdict) = per_target.first() else {
                        continue;
                    };
                    let needle = format!("JIT generator {}:", g.id);
                    if gate.file == g.file || !verdict.evidence.iter().any(|e| e.contains(&needle))
                    {
                        continue;
                    }
                    let _ = writeln!(
                        out,
                        "      reached from {} {}:{}  `{}`: {} at {target}",
                        gate.dist.as_deref().unwrap_or("?"),
                        gate.file,
                        gate.line,
                        crate::report::human::elide(
                            &crate::gate::predicate::collapse_whitespace(&gate.text),
                            70
                        ),
                        verdict.kind.name()
                    );
                    if verdict.kind == VerdictKind::Trap {
                        let _ = writeln!(
                            out,
                            "        this gate lets {target} onto the path that raises: keep off \
                             it (the flag or backend it guards) until a kernel exists"
                        );
                    }
                }
            }
            continue;
        }
        // Otherwise: the gate guarding the raise, nearest above it in the same function.
        let guard = scan
            .gates
            .iter()
            .enumerate()
            .filter(|(_, g)| {
                g.file == found.site.file
                    && g.line <= found.site.line
                    && g.line + 20 >= found.site.line
                    && g.function.as_deref().and_then(|f| f.rsplit('.').next())
                        == found.site.function.as_deref()
            })
            .max_by_key(|(_, g)| g.line);
        match guard {
            Some((index, gate)) => {
                let admits = evaluate(&gate.predicate, target.plain(), cuda.as_ref());
                let _ = writeln!(
                    out,
                    "  guarded by {}:{}  `{}`  ({})",
                    gate.file,
                    gate.line,
                    crate::report::human::elide(
                        &crate::gate::predicate::collapse_whitespace(&gate.text),
                        80
                    ),
                    gate.predicate
                );
                let verdict = verdicts
                    .get(index)
                    .and_then(|v| v.first())
                    .map_or("not judged", |v| v.kind.name());
                match admits {
                    Admits::Yes => {
                        missing_kernel = true;
                        let _ = writeln!(
                            out,
                            "  at {target} this check raises (verdict: {verdict}): the code after it has no \
                             path for {target}; the gate must stay closed"
                        );
                    }
                    Admits::No => {
                        let _ = writeln!(
                            out,
                            "  at {target} this check does not raise (verdict: {verdict}): the message came \
                             from another GPU or another call; check --target"
                        );
                    }
                    Admits::Unknown(why) => {
                        let _ = writeln!(
                            out,
                            "  at {target} whether it raises is unknown: {}",
                            why.join("; ")
                        );
                    }
                }
            }
            None => {
                let _ = writeln!(
                    out,
                    "  no architecture gate guards it: it is not an arch check, or one gatefix \
                     does not read"
                );
            }
        }
    }
    advice(
        &mut out,
        &site,
        &kernels,
        target,
        &generators_seen,
        missing_kernel,
    );
    print!("{out}");
    std::mem::forget(scan);
    Ok(exit::OK)
}

fn describe_site(out: &mut String, site: &Site, found: &Match) {
    let s = &found.site;
    let owner = site
        .owner(&s.file)
        .map(|d| format!(" ({} {})", d.name, d.version))
        .unwrap_or_default();
    let place = match &s.function {
        Some(f) => format!("{}:{} in {f}{owner}", s.file, s.line),
        None => format!("{}:{}{owner}", s.file, s.line),
    };
    let how = if found.partial {
        " (part of the message)"
    } else {
        ""
    };
    let _ = writeln!(out, "\n{} at {place}{how}", s.kind);
    let _ = writeln!(
        out,
        "  message  {}",
        crate::report::human::elide(&s.template_text(), 160)
    );
    for (name, value) in &found.captures {
        let name = if name.is_empty() { "…" } else { name };
        let _ = writeln!(out, "  {{{name}}} = {value}");
    }
}

/// What to do: the shipped patches for this site whose kernel lies in the module of the
/// generators found, applied or refused, and whether the gate must stay closed.
fn advice(
    out: &mut String,
    site: &Site,
    kernels: &KernelIndex,
    target: Arch,
    generators: &[String],
    missing_kernel: bool,
) {
    let _ = writeln!(out);
    let modules: Vec<&str> = generators
        .iter()
        .filter_map(|g| g.split(':').next())
        .collect();
    let mut any_patch = false;
    if let Ok(set) = PatchSet::load(None) {
        for patch in &set.patches {
            let for_site = site.distributions.iter().any(|d| {
                d.name.eq_ignore_ascii_case(&patch.dist) && patch.admits_version(&d.version)
            });
            let related = patch.requires.iter().any(|r| match r {
                Requirement::Jit(id) => modules.iter().any(|m| id.split(':').next() == Some(m)),
                _ => false,
            });
            if !for_site || !related || !patch.admits_target(target) {
                continue;
            }
            any_patch = true;
            let missing: Vec<String> = patch
                .requires
                .iter()
                .filter(|r| !matches!(kernels.coverage(r, target, site), Answer::Covered { .. }))
                .map(|r| r.words())
                .collect();
            if missing.is_empty() {
                let _ = writeln!(
                    out,
                    "fix: patch {} applies here ({}): its kernel is present at {target}. \
                     Run: gatefix apply {target} --dry-run --patch {}",
                    patch.id, patch.summary, patch.id
                );
            } else {
                let _ = writeln!(
                    out,
                    "no fix: patch {} ({}) would open it, but is refused: no kernel at {target} for {}",
                    patch.id,
                    patch.summary,
                    missing.join(", ")
                );
            }
        }
    }
    if missing_kernel {
        let _ = writeln!(
            out,
            "verdict: no kernel for {target} exists behind the check that raised: the gates \
             that reach it must stay closed (do not force them open){}",
            if any_patch {
                ""
            } else {
                ", or install a release whose kernels list this GPU"
            }
        );
    } else if !any_patch {
        let _ = writeln!(
            out,
            "verdict: no shipped patch covers this path; the lines above name the check and its gate"
        );
    }
}
