//! `gatefix explain MESSAGE|LOGFILE`: where a message can be raised in the site, the gates and
//! JIT generators that lead there, their verdicts at the target, and what to do.

use std::io::Write as _;
use std::path::PathBuf;

use clap::Args;

use super::args::{ArchCheckArgs, CacheArgs, Format, SiteArgs, TargetArgs};
use super::audit::{Analysis, analyse};
use crate::arch::Arch;
use crate::error::{Error, Result, exit};
use crate::explain::{self, Match};
use crate::gate::predicate::{Admits, CudaVersion, collapse_whitespace, evaluate};
use crate::kernel::query::{Answer, KernelIndex};
use crate::kernel::requirement::Requirement;
use crate::patch::PatchSet;
use crate::report::explain::{
    Capture, Conclusion, Explanation, GateReach, GeneratorFinding, GuardFinding, PatchAdvice,
    RaiseSite, TransactionNote, render_human, render_json,
};
use crate::scan::{ScanOptions, ScanResult};
use crate::site::Site;
use crate::verdict::{VerdictKind, Verdicts};

#[derive(Args, Debug)]
pub struct ExplainArgs {
    /// The error message as printed (`RuntimeError: ...`; `...` stands for a part left out),
    /// or a log file: its last exception is taken. Without it, or with `-`, the message or
    /// log is read from standard input (`... 2>&1 | gatefix explain`).
    #[arg(value_name = "MESSAGE|LOGFILE")]
    pub message: Option<String>,
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
    #[command(flatten)]
    pub arch_check: ArchCheckArgs,
    /// CUDA version for `cuda >= X` atoms; default: from the site's torch/version.py.
    #[arg(long, value_name = "X.Y")]
    pub cuda: Option<String>,
    /// Output format: `json` holds every finding in full (gate text not elided).
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
    #[command(flatten)]
    pub cache: CacheArgs,
}

/// The message (exception and text) from standard input: a log's last exception, else
/// its one non-empty line. Refused on a terminal, where nothing was piped in.
fn from_stdin() -> Result<(String, String)> {
    use std::io::{IsTerminal, Read};
    if std::io::stdin().is_terminal() {
        return Err(Error::input(
            "explain needs the message: as an argument (`gatefix explain 'RuntimeError: ...'`), \
             a log file, or piped in (`python serve.py 2>&1 | gatefix explain`)",
        ));
    }
    let mut bytes = Vec::new();
    std::io::stdin()
        .read_to_end(&mut bytes)
        .map_err(|source| Error::Io {
            path: "<stdin>".into(),
            source,
        })?;
    let text = String::from_utf8_lossy(&bytes);
    if let Some(found) = explain::last_exception(&text) {
        return Ok(found);
    }
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    match lines.as_slice() {
        [line] => {
            Ok(explain::split_exception(line).unwrap_or_else(|| (String::new(), line.to_string())))
        }
        [] => Err(Error::input(
            "explain: standard input was empty; pipe in the error message or log",
        )),
        _ => Err(Error::input(
            "explain: no exception line (`SomeError: message`) in standard input, and more than one line to take as the message",
        )),
    }
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
    let (kind, message) = match args.message.as_deref() {
        None | Some("-") => from_stdin()?,
        Some(text) if std::path::Path::new(text).is_file() => {
            let path = std::path::Path::new(text);
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
        }
        Some(text) => match explain::split_exception(text.trim()) {
            Some(pair) => pair,
            None => (String::new(), text.trim().to_string()),
        },
    };
    eprintln!("gatefix: site {}, target {target}", root.display());
    let site = Site::open(&root)?;
    let matches = explain::find(&site.root, &message);
    let mut explanation = Explanation {
        exception: (!kind.is_empty()).then_some(kind),
        message,
        site: site.root.display().to_string(),
        target: target.to_string(),
        raises: Vec::new(),
        patches: Vec::new(),
        transactions: Vec::new(),
        conclusion: Conclusion::NotFound,
    };
    if matches.is_empty() {
        print(&explanation, args.format);
        eprintln!(
            "gatefix: no raise or check site in {} has this message; is it the site the \
             program ran with (--venv, --site, --python)?",
            site.root.display()
        );
        return Ok(exit::FINDINGS);
    }
    // The same analysis `gatefix audit --target T` makes: its cached result serves here.
    let targets = TargetArgs {
        arch_check: args.arch_check.clone(),
        targets: vec![target],
        cuda: args.cuda.clone(),
        rules: None,
    };
    let site_args = SiteArgs {
        path: Some(site.root.clone()),
    };
    let Analysis {
        site,
        cuda,
        result: scan,
        verdicts,
        jit,
        from_cache,
        rules,
    } = analyse(
        &site_args,
        &targets,
        ScanOptions {
            kernel_sources: true,
            ..ScanOptions::default()
        },
        Some(&args.cache),
    )?;
    if from_cache {
        eprintln!(
            "gatefix: the site is unchanged since an earlier audit at {target}: its analysis was \
             read from gatefix's cache"
        );
    }
    let verdicts = verdicts.unwrap_or_default();
    let kernels = KernelIndex::new(Vec::new(), jit);
    let context = Context {
        site: &site,
        scan: &scan,
        verdicts: &verdicts,
        kernels: &kernels,
        target,
        cuda: cuda.as_ref(),
        rules: &rules,
    };
    explanation.raises = matches.iter().map(|m| context.raise_site(m)).collect();
    let generators: Vec<&str> = explanation
        .raises
        .iter()
        .flat_map(|r| r.generators.iter().map(|g| g.id.as_str()))
        .collect();
    explanation.patches = context.patches(&generators);
    explanation.transactions = transactions(&site.root, &named_files(&explanation.raises));
    let guards_raising = || {
        explanation
            .raises
            .iter()
            .filter_map(|r| r.guard.as_ref())
            .filter(|g| g.raises == "yes")
    };
    let missing_kernel = explanation
        .raises
        .iter()
        .any(|r| r.generators.iter().any(|g| g.kernel == "missing"))
        || guards_raising()
            .any(|g| matches!(g.verdict, Some(VerdictKind::Wall | VerdictKind::Trap)));
    let can_open = guards_raising().any(|g| g.verdict == Some(VerdictKind::Opportunity));
    let unknown = guards_raising().any(|g| {
        !matches!(
            g.verdict,
            Some(VerdictKind::Wall | VerdictKind::Trap | VerdictKind::Opportunity)
        )
    });
    explanation.conclusion = if missing_kernel {
        Conclusion::NoKernel
    } else if can_open {
        Conclusion::CanOpen
    } else if !explanation.patches.is_empty() {
        Conclusion::SeePatches
    } else if unknown {
        Conclusion::Unverified
    } else {
        Conclusion::NoPatch
    };
    print(&explanation, args.format);
    // The scan's trees are large and the process ends here: leave them to the OS.
    std::mem::forget(scan);
    Ok(exit::OK)
}

/// The files the findings name: the raise sites, their guards, the generators and the
/// gates that reach them.
fn named_files(raises: &[RaiseSite]) -> Vec<String> {
    let mut files: Vec<String> = Vec::new();
    for raise in raises {
        files.push(raise.file.clone());
        files.extend(raise.guard.iter().map(|g| g.file.clone()));
        for generator in &raise.generators {
            files.push(generator.file.clone());
            files.extend(generator.reached_from.iter().map(|g| g.file.clone()));
        }
    }
    files.sort();
    files.dedup();
    files
}

/// The applies still in effect in the site's ledger that wrote one of `files`, oldest
/// first. The ledger is only read (opened without the repairs a writing command makes); one
/// that cannot be read is said on stderr and left out.
fn transactions(root: &std::path::Path, files: &[String]) -> Vec<TransactionNote> {
    let history = match crate::ledger::history::History::read_only(root) {
        Ok(Some(history)) => history,
        Ok(None) => return Vec::new(),
        Err(error) => {
            eprintln!(
                "gatefix: the site's ledger could not be read ({error}); transactions are not shown"
            );
            return Vec::new();
        }
    };
    history
        .active_applies()
        .into_iter()
        .filter_map(|record| {
            let wrote: Vec<String> = record
                .files
                .iter()
                .filter(|f| files.contains(f))
                .cloned()
                .collect();
            (!wrote.is_empty()).then(|| TransactionNote {
                txn: record.txn,
                target: record.target.clone(),
                patches: record
                    .patches
                    .iter()
                    .map(|p| format!("{} ({})", p.id, p.class))
                    .collect(),
                files: wrote,
                revert: format!("gatefix revert {} --site {}", record.txn, root.display()),
            })
        })
        .collect()
}

fn print(explanation: &Explanation, format: Format) {
    let text = match format {
        Format::Human => render_human(explanation),
        Format::Json => render_json(explanation),
    };
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}

/// What the findings at one raise site are read from.
struct Context<'a> {
    site: &'a Site,
    scan: &'a ScanResult,
    verdicts: &'a Verdicts,
    kernels: &'a KernelIndex,
    target: Arch,
    cuda: Option<&'a CudaVersion>,
    /// The analysis's rules: the shipped patches are read as they are (on a fork, for the
    /// fork's files and distribution).
    rules: &'a crate::rules::Rules,
}

impl Context<'_> {
    fn raise_site(&self, found: &Match) -> RaiseSite {
        let s = &found.site;
        let mut raise = RaiseSite {
            kind: s.kind.clone(),
            file: s.file.clone(),
            line: s.line,
            function: s.function.clone(),
            distribution: self
                .site
                .owner(&s.file)
                .map(|d| format!("{} {}", d.name, d.version)),
            partial: found.partial,
            template: s.template_text(),
            captures: found
                .captures
                .iter()
                .map(|(name, value)| Capture {
                    name: name.clone(),
                    value: value.clone(),
                })
                .collect(),
            native_condition: s.condition.clone(),
            generators: Vec::new(),
            generator_list: None,
            guard: None,
        };
        if raise.native_condition.is_some() {
            return raise;
        }
        // JIT generators that call the function raising: the placeholder naming the arch
        // list (captured from the message) picks those whose list it printed.
        let lists: Vec<&String> = found
            .captures
            .iter()
            .filter(|(_, v)| v.starts_with('['))
            .map(|(_, v)| v)
            .collect();
        raise.generators = self.generators(s.function.as_deref().unwrap_or_default(), &lists);
        if !raise.generators.is_empty() {
            raise.generator_list = lists.first().map(|l| l.to_string());
            return raise;
        }
        raise.guard = self.guard(s);
        raise
    }

    fn generators(&self, function: &str, lists: &[&String]) -> Vec<GeneratorFinding> {
        if function.is_empty() {
            return Vec::new();
        }
        let call = format!("{function}(");
        let target = self.target;
        self.kernels
            .jit
            .generators
            .iter()
            .filter(|g| g.text.contains(&call))
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
            .map(|g| {
                let answer =
                    self.kernels
                        .coverage(&Requirement::Jit(g.id.clone()), target, self.site);
                let (kernel, why) = match answer {
                    Answer::Covered { .. } => ("present", None),
                    Answer::NotCovered { .. } => ("missing", None),
                    Answer::Unknown { why } => ("unknown", Some(why)),
                };
                GeneratorFinding {
                    id: g.id.clone(),
                    file: g.file.clone(),
                    line: g.line,
                    kernel,
                    why,
                    reached_from: self.reached_from(g),
                }
            })
            .collect()
    }

    /// The gates whose path needs the generator, outside the generator's own file.
    fn reached_from(&self, g: &crate::kernel::jit::Generator) -> Vec<GateReach> {
        let needle = format!("JIT generator {}:", g.id);
        self.scan
            .gates
            .iter()
            .zip(self.verdicts)
            .filter_map(|(gate, per_target)| {
                let verdict = per_target.first()?;
                if gate.file == g.file || !verdict.evidence.iter().any(|e| e.contains(&needle)) {
                    return None;
                }
                Some(GateReach {
                    distribution: gate.dist.clone(),
                    file: gate.file.clone(),
                    line: gate.line,
                    text: collapse_whitespace(&gate.text),
                    verdict: verdict.kind,
                })
            })
            .collect()
    }

    /// The gate guarding the raise: nearest above it in the same function.
    fn guard(&self, s: &explain::Site) -> Option<GuardFinding> {
        let (index, gate) = self
            .scan
            .gates
            .iter()
            .enumerate()
            .filter(|(_, g)| {
                g.file == s.file
                    && g.line <= s.line
                    && g.line + 20 >= s.line
                    && g.function.as_deref().and_then(|f| f.rsplit('.').next())
                        == s.function.as_deref()
            })
            .max_by_key(|(_, g)| g.line)?;
        let verdict = self
            .verdicts
            .get(index)
            .and_then(|v| v.first())
            .map(|v| v.kind);
        let (raises, why) = match evaluate(&gate.predicate, self.target.plain(), self.cuda) {
            Admits::Yes => ("yes", Vec::new()),
            Admits::No => ("no", Vec::new()),
            Admits::Unknown(why) => ("unknown", why),
        };
        Some(GuardFinding {
            file: gate.file.clone(),
            line: gate.line,
            text: collapse_whitespace(&gate.text),
            predicate: gate.predicate.to_string(),
            verdict,
            raises,
            why,
        })
    }

    /// The shipped patches for this site whose kernel lies in the module of the generators
    /// found, applied or refused.
    fn patches(&self, generators: &[&str]) -> Vec<PatchAdvice> {
        let modules: Vec<&str> = generators
            .iter()
            .filter_map(|g| g.split(':').next())
            .collect();
        let Ok(set) = PatchSet::load_for_site(None, self.rules) else {
            return Vec::new();
        };
        let target = self.target;
        set.patches
            .iter()
            .filter(|patch| {
                let for_site = self.site.distributions.iter().any(|d| {
                    d.name.eq_ignore_ascii_case(&patch.dist) && patch.admits_version(&d.version)
                });
                let related = patch.requires.iter().any(|r| match r {
                    Requirement::Jit(id) => modules.iter().any(|m| id.split(':').next() == Some(m)),
                    _ => false,
                });
                for_site && related && patch.admits_target(target)
            })
            .map(|patch| {
                let missing: Vec<String> = patch
                    .requires
                    .iter()
                    .filter(|r| {
                        !matches!(
                            self.kernels.coverage(r, target, self.site),
                            Answer::Covered { .. }
                        )
                    })
                    .map(|r| r.words())
                    .collect();
                let applies = missing.is_empty();
                PatchAdvice {
                    id: patch.id.clone(),
                    summary: patch.summary.clone(),
                    applies,
                    missing,
                    command: applies
                        .then(|| format!("gatefix apply {target} --dry-run --patch {}", patch.id)),
                }
            })
            .collect()
    }
}
