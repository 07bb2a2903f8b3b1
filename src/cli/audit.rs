//! `gatefix audit`: every gate in a site, its predicate, and what it admits per target.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::Instant;

use clap::Args;

use super::args::{AuditFormat, CacheArgs, SiteArgs, TargetArgs};
use super::progress::Progress;
use crate::cache::Cache;
use crate::error::{Error, Result, exit};
use crate::gate::predicate::CudaVersion;
use crate::kernel::jit::JitIndex;
use crate::kernel::query::KernelIndex;
use crate::ledger::history::History;
use crate::policy::{Baseline, findings, parse_fail_on, should_fail};
use crate::process::{Beside, stage};
use crate::report::kernels::KernelsReport;
use crate::report::sarif::Anchor;
use crate::report::{AuditReport, github, html, human, json, sarif};
use crate::rules::Rules;
use crate::scan::{ScanOptions, scan_with};
use crate::site::{Site, discover};
use crate::verdict::{judge_prepared, prepare};

#[derive(Args, Debug)]
pub struct AuditArgs {
    #[command(flatten)]
    pub site: SiteArgs,
    #[command(flatten)]
    pub targets: TargetArgs,
    /// Output format.
    #[arg(long, value_enum, default_value_t = AuditFormat::Human)]
    pub format: AuditFormat,
    /// Verdicts that make the exit code 1, comma-separated: trap, wall, opportunity,
    /// unverified, new (not in --baseline), or none.
    #[arg(long, value_name = "LIST", default_value = "trap")]
    pub fail_on: String,
    /// Accepted findings (from --write-baseline): only findings not in it count.
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
    /// Write every current finding to FILE as the accepted baseline.
    #[arg(long, value_name = "FILE")]
    pub write_baseline: Option<PathBuf>,
    /// A file of the user's repository (requirements.txt, a lockfile) that SARIF and GitHub
    /// annotations point at, at the line of each finding's distribution.
    #[arg(long, value_name = "FILE")]
    pub anchor: Option<PathBuf>,
    /// Skip gate → kernel links and verdicts (only predicates and admissions).
    #[arg(long)]
    pub no_verdicts: bool,
    /// Parse every Python file whole, without the prefilter and chunking (slow; for checking
    /// that the fast path misses nothing on a given site).
    #[arg(long)]
    pub exhaustive: bool,
    /// Skip (with a warning) Python files larger than this: bytes, or K, M, G.
    #[arg(long, value_name = "SIZE", default_value = "16M", value_parser = crate::scan::parse_size)]
    pub max_file_size: u64,
    /// What the human format lists after the summary: each trap, opportunity and wall on
    /// one line, grouped by package and kernel (`brief`), each with its evidence chain
    /// (`findings`), or that and every gate (`all`). With `--format github`, `all` also
    /// annotates `unverified`.
    #[arg(long, value_enum, default_value_t = Show::Brief)]
    pub show: Show,
    /// The summary alone (human format).
    #[arg(short, long, conflicts_with = "show")]
    pub quiet: bool,
    #[command(flatten)]
    pub display: DisplayArgs,
    #[command(flatten)]
    pub cache: CacheArgs,
}

#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Show {
    Brief,
    Findings,
    All,
}

/// How terminal output looks; shared by the commands that print for a person.
#[derive(Args, Debug, Clone)]
pub struct DisplayArgs {
    /// Colour: `auto` follows NO_COLOR, CLICOLOR_FORCE, TERM=dumb and whether stdout is a
    /// terminal.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
    /// Columns a line may take; default: $COLUMNS, then the terminal's width, then 100.
    #[arg(long, value_name = "N")]
    pub width: Option<usize>,
}

#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

impl DisplayArgs {
    pub fn color(&self) -> bool {
        let choice = match self.color {
            ColorChoice::Auto => "auto",
            ColorChoice::Always => "always",
            ColorChoice::Never => "never",
        };
        human::color_wanted(choice, std::io::stdout().is_terminal(), &|name| {
            std::env::var(name).ok()
        })
    }

    pub fn width(&self) -> usize {
        self.width
            .or_else(|| std::env::var("COLUMNS").ok()?.trim().parse().ok())
            .or_else(terminal_columns)
            .unwrap_or(human::DEFAULT_WIDTH)
            .max(human::MIN_WIDTH)
    }
}

/// The width of the terminal on stdout, if it is one.
fn terminal_columns() -> Option<usize> {
    if !std::io::stdout().is_terminal() {
        return None;
    }
    // SAFETY: TIOCGWINSZ fills a winsize struct; a failure leaves it zeroed and returns -1.
    let mut size: libc::winsize = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut size) } == 0;
    (ok && size.ws_col > 0).then_some(usize::from(size.ws_col))
}

/// Shipped patches meant for this site's version of their distribution, for the human
/// report's "fix" and "next" lines: read as the rules are, so that on a fork they name the
/// fork's files and distribution, as `apply` does.
fn patch_hints(site: &Site, rules: &Rules) -> Vec<human::PatchHint> {
    let Ok(set) = crate::patch::PatchSet::load_for_site(None, rules) else {
        return Vec::new();
    };
    set.patches
        .iter()
        .filter(|p| {
            site.distributions
                .iter()
                .any(|d| same_name(&d.name, &p.dist) && p.admits_version(&d.version))
        })
        .map(|p| human::PatchHint {
            id: p.id.clone(),
            targets: p.targets.iter().map(|t| t.plain()).collect(),
            files: p.files().into_iter().map(str::to_string).collect(),
        })
        .collect()
}

/// A site scanned and judged: what every human-facing command reports from.
pub struct Analysis {
    pub site: Site,
    pub cuda: Option<CudaVersion>,
    pub result: crate::scan::ScanResult,
    pub verdicts: Option<crate::verdict::Verdicts>,
    /// The JIT sources the scan read (arch lists, fixed-arch builds, cubin tables).
    pub jit: JitIndex,
    /// Read from gatefix's cache: `result.modules` is empty.
    pub from_cache: bool,
    /// The rules the analysis read, followed to the site's forks (`Rules::load_for_site`):
    /// the shipped patches a report names are read the same way.
    pub rules: Rules,
}

/// What the cache keeps of an analysis: everything the reports read (the lowered modules,
/// which only later passes need, are left out).
#[derive(serde::Serialize)]
struct StoredAnalysis<'a> {
    gates: &'a [crate::scan::Gate],
    warnings: &'a [crate::scan::Warning],
    stats: &'a crate::scan::Stats,
    verdicts: Option<&'a crate::verdict::Verdicts>,
    jit: &'a JitIndex,
}

/// [`StoredAnalysis`] read back.
#[derive(serde::Deserialize)]
struct LoadedAnalysis {
    gates: Vec<crate::scan::Gate>,
    warnings: Vec<crate::scan::Warning>,
    stats: crate::scan::Stats,
    verdicts: Option<crate::verdict::Verdicts>,
    jit: JitIndex,
}

/// Everything besides the site's files that an analysis depends on, for the cache key.
fn analysis_context(
    targets: &TargetArgs,
    rules: &Rules,
    cuda: Option<&CudaVersion>,
    options: ScanOptions,
) -> Vec<u8> {
    let mut out = rules.digest().to_vec();
    out.extend_from_slice(format!("{:?}\n{:?}\n{:?}", targets.targets, cuda, options).as_bytes());
    out
}

/// The key of an analysis of the site at `root` with these inputs (`context`), and the
/// analysis the cache holds under it, if any.
fn lookup(
    cache: &Cache,
    root: &std::path::Path,
    context: &[u8],
) -> (crate::cache::Key, Option<LoadedAnalysis>) {
    let timings = std::env::var_os("GATEFIX_TIMINGS").is_some();
    let clock = Instant::now();
    let key = cache.key(root, context);
    if timings {
        eprintln!(
            "cache: key of the site's files ({} read) {:?}",
            key.files_read(),
            clock.elapsed()
        );
    }
    let clock = Instant::now();
    let loaded = cache.get::<LoadedAnalysis>(&key);
    if timings && loaded.is_some() {
        eprintln!("cache: result read {:?}", clock.elapsed());
    }
    (key, loaded)
}

/// The JIT sources of an earlier analysis of the site as it is now (same files, gatefix,
/// rules and options, at these targets), if the cache holds one: what `apply` needs of a scan
/// when it synthesizes nothing. Nothing is computed or written on a miss.
pub fn cached_jit(
    site: &Site,
    rules: &Rules,
    targets: &TargetArgs,
    options: ScanOptions,
    cache: &CacheArgs,
) -> Result<Option<JitIndex>> {
    let Some(cache) = Cache::open(&cache.settings(), &site.root)? else {
        return Ok(None);
    };
    if !cache.knows(&site.root) {
        return Ok(None);
    }
    let cuda = cuda_version(targets, site)?;
    let context = analysis_context(targets, rules, cuda.as_ref(), options);
    let (_, loaded) = lookup(&cache, &site.root, &context);
    Ok(loaded.map(|l| l.jit))
}

/// Opens the site, scans it with `options` and, unless `options.kernel_sources` is off,
/// judges every gate at the targets; warnings go to stderr. With a cache (`cache`), a site
/// whose files are as they were at an earlier analysis with the same gatefix, rules and
/// options gets that analysis back, without its lowered modules.
pub fn analyse(
    site: &SiteArgs,
    targets: &TargetArgs,
    options: ScanOptions,
    cache: Option<&CacheArgs>,
) -> Result<Analysis> {
    let root = discover(site.path.as_deref())?;
    let site = Site::open(&root)?;
    if let Some(warning) = History::interrupted_warning(&site.root) {
        eprintln!("gatefix: warning: {warning}");
    }
    let rules = Rules::load_for_site(targets.rules.as_deref(), &site)?;
    let cuda = cuda_version(targets, &site)?;
    let cache = match cache {
        Some(args) => Cache::open(&args.settings(), &site.root)?,
        None => None,
    };
    let context = analysis_context(targets, &rules, cuda.as_ref(), options);
    // The first audit of a site reads every file to hash it (0.4 s on sglang with flashinfer)
    // and can find nothing: that runs beside the scan instead of before it.
    let first_audit = cache.as_ref().filter(|cache| !cache.knows(&site.root));
    let (key, loaded) = match &cache {
        Some(cache) if first_audit.is_none() => {
            let (key, loaded) = lookup(cache, &site.root, &context);
            (Some(key), loaded)
        }
        _ => (None, None),
    };
    if let Some(loaded) = loaded {
        let result = crate::scan::ScanResult {
            gates: loaded.gates,
            modules: Vec::new(),
            warnings: loaded.warnings,
            stats: loaded.stats,
        };
        print_warnings(&result);
        return Ok(Analysis {
            site,
            cuda,
            result,
            verdicts: loaded.verdicts,
            jit: loaded.jit,
            from_cache: true,
            rules,
        });
    }
    let with_verdicts = options.kernel_sources;
    let progress = Progress::start(&format!("scanning {}", site.root.display()));
    // The verdicts' reading of the site's text and the first audit's hashing of every file
    // for the cache's key do not wait for the gates: they run beside the scan, on the cores
    // it leaves idle (`Beside`).
    let beside = (with_verdicts || first_audit.is_some()).then(Beside::for_this_machine);
    let beside = beside.as_ref();
    let (result, prepared, first_key) = std::thread::scope(|scope| {
        let prepared = with_verdicts.then(|| scope.spawn(|| prepare(&site.root, beside)));
        let first_key = first_audit
            .map(|cache| scope.spawn(|| stage(beside, || cache.key(&site.root, &context))));
        let result = scan_with(&site, &rules, options);
        if let Some(beside) = beside {
            beside.foreground_done();
        }
        let prepared = prepared.map(|p| p.join().expect("reading the site's text"));
        let first_key = first_key.map(|k| k.join().expect("hashing the site's files"));
        (result, prepared, first_key)
    });
    let key = key.or(first_key);
    if result.stats.python_files == 0 {
        progress.finish();
        return Err(Error::input(format!(
            "no Python file under {}: name a site-packages folder, a venv root or a folder of \
             Python files (`gatefix audit --help` says where it looks by default)",
            site.root.display()
        )));
    }
    progress.stage("linking gates to kernels");
    let verdicts = prepared.map(|prepared| {
        judge_prepared(
            &site,
            &result,
            &rules,
            &targets.targets,
            cuda.as_ref(),
            prepared,
        )
    });
    progress.finish();
    print_warnings(&result);
    let jit = JitIndex::build(&site, &result);
    if let (Some(cache), Some(key)) = (&cache, &key) {
        cache.put(
            key,
            &StoredAnalysis {
                gates: &result.gates,
                warnings: &result.warnings,
                stats: &result.stats,
                verdicts: verdicts.as_ref(),
                jit: &jit,
            },
        );
    }
    Ok(Analysis {
        site,
        cuda,
        result,
        verdicts,
        jit,
        from_cache: false,
        rules,
    })
}

fn print_warnings(result: &crate::scan::ScanResult) {
    for warning in &result.warnings {
        let location = match (warning.line, warning.column) {
            (Some(l), Some(c)) => format!("{}:{l}:{c}", warning.file),
            _ => warning.file.clone(),
        };
        eprintln!("gatefix: warning: {location}: {}", warning.message);
    }
}

pub fn run(args: AuditArgs) -> Result<i32> {
    let started = Instant::now();
    let options = if args.exhaustive {
        ScanOptions {
            prefilter: false,
            chunking: false,
            kernel_sources: false,
            max_file_bytes: args.max_file_size,
        }
    } else {
        ScanOptions {
            max_file_bytes: args.max_file_size,
            ..ScanOptions::default()
        }
    };
    let fail_on = parse_fail_on(&args.fail_on).map_err(Error::input)?;
    let baseline = args
        .baseline
        .as_deref()
        .map(Baseline::read)
        .transpose()
        .map_err(Error::input)?;
    let anchor = args.anchor.as_deref().map(read_anchor).transpose()?;
    let options = ScanOptions {
        kernel_sources: !args.no_verdicts,
        ..options
    };
    let Analysis {
        site,
        cuda,
        result,
        verdicts,
        jit,
        from_cache,
        rules,
    } = analyse(&args.site, &args.targets, options, Some(&args.cache))?;
    let report = AuditReport {
        site: &site,
        targets: &args.targets.targets,
        cuda: cuda.as_ref(),
        result: &result,
        verdicts: verdicts.as_ref(),
    };
    // The findings the baseline accepts, for the human report to list the new ones first.
    let accepted = baseline.as_ref().map(|baseline| {
        findings(&report, Some(baseline))
            .into_iter()
            .filter(|f| f.accepted)
            .map(|f| (f.gate_index, f.target_index))
            .collect()
    });
    let text = match args.format {
        AuditFormat::Json => json::render(&report),
        AuditFormat::Human => human::render(
            &report,
            &human::HumanOptions {
                color: args.display.color(),
                width: args.display.width(),
                layout: match (args.quiet, args.show) {
                    (true, _) => human::Layout::Quiet,
                    (false, Show::Brief) => human::Layout::Brief,
                    (false, Show::Findings) => human::Layout::Findings,
                    (false, Show::All) => human::Layout::All,
                },
                accepted,
                patches: patch_hints(&site, &rules),
            },
        ),
        AuditFormat::Sarif => sarif::render(&report, anchor.as_ref()),
        AuditFormat::Html => html::render(&report, &kernel_coverage(&site, jit, &args)),
        AuditFormat::Github => {
            if let Err(e) = github::append_step_summary(&report, accepted.as_ref()) {
                eprintln!("gatefix: warning: cannot append to $GITHUB_STEP_SUMMARY: {e}");
            }
            github::render(
                &report,
                anchor.as_ref(),
                args.show == Show::All,
                accepted.as_ref(),
            )
        }
    };
    let mut stdout = std::io::stdout().lock();
    // A closed pipe (`gatefix audit | head`) is not an error worth a panic.
    let _ = stdout.write_all(text.as_bytes());
    eprintln!(
        "gatefix: audited {} ({} Python files, {} parsed, {} skipped{}) in {:.2?}",
        site.root.display(),
        result.stats.python_files,
        result.stats.prefilter_hits,
        result.stats.skipped_files,
        if from_cache {
            "; unchanged since an earlier audit, read from gatefix's cache"
        } else {
            ""
        },
        started.elapsed()
    );
    if let Some(path) = &args.write_baseline {
        Baseline::from_report(&report)
            .write(path)
            .map_err(Error::input)?;
        eprintln!("gatefix: baseline written to {}", path.display());
    }
    let findings = findings(&report, baseline.as_ref());
    let code = if verdicts.is_some() && should_fail(&findings, &fail_on) {
        exit::FINDINGS
    } else {
        exit::OK
    };
    // The process ends next; freeing the lowered modules one by one would only delay that.
    std::mem::forget(result);
    Ok(code)
}

/// The site's CUDA binaries and JIT generators at each target, for the HTML page's chart.
fn kernel_coverage(site: &Site, jit: JitIndex, args: &AuditArgs) -> html::KernelCoverage {
    let index = KernelIndex::build_with_jit(site, jit);
    let targets = &args.targets.targets;
    let report = KernelsReport::new(Some(site), &site.root, &index, targets);
    // Generators whose arch list could not be read count at no target.
    let read: Vec<_> = index
        .jit
        .generators
        .iter()
        .filter(|g| g.unknown_because.is_none())
        .collect();
    let jit = targets
        .iter()
        .map(|target| {
            let admitting = read
                .iter()
                .filter(|g| {
                    g.majors
                        .as_ref()
                        .is_none_or(|m| m.contains(&i64::from(target.major)))
                })
                .count();
            (admitting, read.len())
        })
        .collect();
    html::KernelCoverage {
        libraries: report.distribution_coverage(),
        jit,
    }
}

/// Distribution names compare as PEP 503 normalises them (case, `-`, `_`, `.`).
fn same_name(a: &str, b: &str) -> bool {
    let norm = |s: &str| s.to_ascii_lowercase().replace(['_', '.'], "-");
    norm(a) == norm(b)
}

fn read_anchor(path: &std::path::Path) -> Result<Anchor> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::input(format!("--anchor {}: {e}", path.display())))?;
    Ok(Anchor {
        path: path.display().to_string(),
        text,
    })
}

fn cuda_version(args: &TargetArgs, site: &Site) -> Result<Option<CudaVersion>> {
    match &args.cuda {
        Some(text) => CudaVersion::parse(text).map(Some).ok_or_else(|| {
            Error::input(format!(
                "invalid --cuda `{text}`: expected X.Y such as 12.8"
            ))
        }),
        None => Ok(site.torch_cuda()),
    }
}
