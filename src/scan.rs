//! The audit pipeline: walk the site, prefilter raw bytes, parse the hits in parallel, resolve
//! their decision sites into gates, attribute each gate to its distribution. No policy here.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use sha2::{Digest, Sha256};

use crate::gate::chunks::{
    CHUNK_MIN_FILE_BYTES, MayDefine, may_define, relevant_ranges_at, whole_word_starts,
};
use crate::gate::exports;
use crate::gate::feed::{Ask, Lowering, feed_parameters};
use crate::gate::import_order::{Done, in_dependency_order};
use crate::gate::index::{ModuleIndex, ReadLog, module_name};
use crate::gate::ir::{ModuleIr, SharedModule, SiteKind};
use crate::gate::lower::lower_parsed;
use crate::gate::predicate::{Form, Pred, collapse_whitespace};
use crate::gate::resolve::Resolver;
use crate::gate::sites::resolve_module;
use crate::gate::tokens::{Tokens, def_parameter_starts, prefilter_tokens, resolve_tokens};
use crate::rules::Rules;
use crate::site::Site;
use crate::syntax::Tree;
use crate::syntax::{parse, parse_ranges};

/// One gate, placed in the site.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Gate {
    pub id: String,
    pub dist: Option<String>,
    pub dist_version: Option<String>,
    pub file: String,
    pub line: u32,
    pub column: u32,
    pub end_line: u32,
    pub end_column: u32,
    pub function: Option<String>,
    pub form: Form,
    pub text: String,
    pub predicate: Pred,
    /// Whether the gate is the condition of an `if`/`elif`/`while` or of a conditional
    /// expression, and so guards a branch that verdicts can follow.
    pub guards_branch: bool,
    /// For a parametric gate evaluated under a declared assumption (rules `[[parameter]]` or
    /// the parameter's annotation): the parameter assumed to be the device's value.
    pub assumes: Option<String>,
}

/// Something the user should know that did not stop the scan.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct Warning {
    pub file: String,
    pub line: Option<u32>,
    pub column: Option<u32>,
    pub message: String,
}

#[derive(Debug, Default, Clone, serde::Serialize, serde::Deserialize)]
pub struct Stats {
    pub python_files: usize,
    pub prefilter_hits: usize,
    /// Python files not scanned (unreadable, over the size cap, given up on by the parser);
    /// each has a warning.
    pub skipped_files: usize,
}

#[derive(Debug)]
pub struct ScanResult {
    pub gates: Vec<Gate>,
    /// The lowered modules the scan parsed, by file (relative, `/`), for later passes.
    pub modules: Vec<(String, SharedModule)>,
    pub warnings: Vec<Warning>,
    pub stats: Stats,
}

/// Every Python file under the root, relative, never through a symlink that leaves it.
/// Folders are read in parallel: on a big site the walk is otherwise the longest part of the
/// scan that runs on one core.
pub fn python_files(root: &Path, warnings: &mut Vec<Warning>) -> Vec<PathBuf> {
    let canonical_root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let walk = Walk {
        root,
        canonical_root: &canonical_root,
    };
    let (mut files, found_warnings) = walk.folder(root);
    warnings.extend(found_warnings);
    files.sort_unstable_by(|a, b| walk_order(a, b));
    files
}

struct Walk<'a> {
    root: &'a Path,
    canonical_root: &'a Path,
}

impl Walk<'_> {
    /// The Python files under one folder (relative to the root), with what could not be read.
    fn folder(&self, folder: &Path) -> (Vec<PathBuf>, Vec<Warning>) {
        let mut files = Vec::new();
        let mut warnings = Vec::new();
        let mut subfolders = Vec::new();
        let entries = match std::fs::read_dir(folder) {
            Ok(entries) => entries,
            Err(err) => {
                warnings.push(self.unreadable(folder, &err));
                return (files, warnings);
            }
        };
        for entry in entries {
            let entry = match entry {
                Ok(entry) => entry,
                Err(err) => {
                    warnings.push(self.unreadable(folder, &err));
                    continue;
                }
            };
            let path = entry.path();
            let Ok(file_type) = entry.file_type() else {
                warnings.push(self.unreadable(&path, &"no file type"));
                continue;
            };
            if file_type.is_dir() {
                if entry.file_name() != "__pycache__" {
                    subfolders.push(path);
                }
                continue;
            }
            let skip = |message: String| Warning {
                file: relative(self.root, &path),
                line: None,
                column: None,
                message,
            };
            if path.extension().is_none_or(|x| x != "py") {
                // A folder symlink: Python imports through it. One that stays in the site is
                // walked where it points; one that leads out is not followed, and said so.
                if file_type.is_symlink()
                    && std::fs::metadata(&path).is_ok_and(|m| m.is_dir())
                    && let Ok(target) = path.canonicalize()
                    && !target.starts_with(self.canonical_root)
                {
                    warnings.push(skip(format!(
                        "folder symlink points outside the site (to {}); not followed: gates in it are not reported",
                        target.display()
                    )));
                }
                continue;
            }
            if file_type.is_symlink() {
                match path.canonicalize() {
                    Ok(target) if target.starts_with(self.canonical_root) && target.is_file() => {}
                    Ok(target) if target.starts_with(self.canonical_root) => {
                        warnings.push(skip(
                            "skipped: symlink to something that is not a regular file".into(),
                        ));
                        continue;
                    }
                    Ok(_) => {
                        warnings.push(skip("symlink points outside the site; not followed".into()));
                        continue;
                    }
                    Err(err) => {
                        warnings.push(skip(format!(
                            "skipped: the symlink cannot be resolved: {err}"
                        )));
                        continue;
                    }
                }
            } else if !file_type.is_file() {
                warnings.push(skip("skipped: not a regular file".into()));
                continue;
            }
            if let Ok(rel) = path.strip_prefix(self.root) {
                files.push(rel.to_path_buf());
            }
        }
        let (sub_files, sub_warnings) = subfolders.par_iter().map(|sub| self.folder(sub)).reduce(
            || (Vec::new(), Vec::new()),
            |mut a, b| {
                a.0.extend(b.0);
                a.1.extend(b.1);
                a
            },
        );
        files.extend(sub_files);
        warnings.extend(sub_warnings);
        (files, warnings)
    }

    fn unreadable(&self, path: &Path, err: &dyn std::fmt::Display) -> Warning {
        Warning {
            file: relative(self.root, path),
            line: None,
            column: None,
            message: format!("cannot read: {err}"),
        }
    }
}

/// The order of a depth-first walk that visits siblings by file name: paths compared
/// component by component, which for normalised relative paths is their bytes compared
/// with the separator below every other byte (`a/b/x` < `a/b.py`, as `b` < `b.py`).
fn walk_order(a: &Path, b: &Path) -> std::cmp::Ordering {
    let key = |c: &u8| {
        if std::path::is_separator(*c as char) {
            0
        } else {
            u16::from(*c) + 1
        }
    };
    let (a, b) = (
        a.as_os_str().as_encoded_bytes(),
        b.as_os_str().as_encoded_bytes(),
    );
    match a.iter().zip(b).position(|(x, y)| x != y) {
        Some(i) => key(&a[i]).cmp(&key(&b[i])),
        None => a.len().cmp(&b.len()),
    }
}

fn relative(root: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(root).unwrap_or(path);
    let parts: Vec<String> = rel
        .components()
        .map(|c| crate::site::path_text(Path::new(c.as_os_str())))
        .collect();
    parts.join("/")
}

/// How much work the scan may skip. The defaults are what users run; tests turn both off to
/// prove that skipping never loses a gate.
#[derive(Debug, Clone, Copy)]
pub struct ScanOptions {
    /// Parse only files whose bytes contain a token.
    pub prefilter: bool,
    /// Parse only the statements of big files that can matter.
    pub chunking: bool,
    /// Also parse files that name JIT flag constants or cubin tables (`gatefix kernels`).
    pub kernel_sources: bool,
    /// Python files larger than this are skipped, with a warning (`--max-file-size`): a
    /// generated 200 MB module would otherwise cost gigabytes of syntax tree.
    pub max_file_bytes: u64,
}

/// The default `--max-file-size`: 16 MiB, some 40 times the largest module of the real wheels.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 16 << 20;

impl Default for ScanOptions {
    fn default() -> Self {
        ScanOptions {
            prefilter: true,
            chunking: true,
            kernel_sources: false,
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
        }
    }
}

/// A size as `--max-file-size` takes it: bytes, or with a `K`, `M` or `G` suffix (powers of
/// 1024; `KiB`, `MB` ... read the same).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let digits = t.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let unit = t[digits.len()..].to_ascii_lowercase();
    let shift = match unit.as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        _ => return Err(format!("`{text}`: unknown unit (use bytes, K, M or G)")),
    };
    let n: u64 = digits
        .trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a size (e.g. 16M)"))?;
    n.checked_mul(1 << shift)
        .ok_or_else(|| format!("`{text}` is too large"))
}

/// What the scan did with one file.
#[derive(Clone)]
enum FileOutcome {
    Parsed(String, SharedModule, Vec<Warning>),
    /// Not scanned: the warning says why.
    Skipped(Warning),
    /// Nothing to parse (no token, or tokens only in comments).
    Nothing,
    /// Nothing to parse, and something to say about the file (bytes that are not UTF-8).
    Noted(Warning),
}

/// What the first pass makes of a file: judged at once, or a file with a token, lowered
/// once the modules it imports from are (`lower_hits`), from the bytes read here.
#[derive(Clone)]
enum FirstPass {
    Done(FileOutcome),
    Hit {
        module: String,
        is_package: bool,
        bytes: std::sync::Arc<[u8]>,
    },
}

/// A file's `from ... import` statements (`exports::from_imports`), read in the first pass
/// for `lower_importers`; `None` where the file has no module name or could not be read.
type FileImports = Option<std::sync::Arc<[exports::FromImport]>>;

/// What `gatefix kernels` needs besides gates: fixed-arch flag constants and cubin tables.
const KERNEL_SOURCE_TOKENS: &[&str] = &["_nvcc_flags", "CUBIN_ARCHS"];

/// Scans a site for gates.
pub fn scan(site: &Site, rules: &Rules) -> ScanResult {
    scan_with(site, rules, ScanOptions::default())
}

/// Scans a site for gates, with explicit options.
pub fn scan_with(site: &Site, rules: &Rules, options: ScanOptions) -> ScanResult {
    scan_overlay(site, rules, options, &HashMap::new())
}

/// Scans a site as if the files named in `overlay` (relative, `/`) held those bytes: the
/// same pipeline on edited text that is not written anywhere (apply's re-resolution check).
pub fn scan_overlay(
    site: &Site,
    rules: &Rules,
    options: ScanOptions,
    overlay: &HashMap<String, Vec<u8>>,
) -> ScanResult {
    scan_overlay_with(site, rules, options, overlay, None)
}

/// Lowerings of files read from disk, kept across the scans of one site with one set of rules
/// and options: apply's re-resolution rounds scan the site again and again with a few files
/// edited in memory, and every other file reads and lowers to the same IR (the same `Arc`,
/// too) with the same names. Files in a scan's overlay never go through it, nor are they
/// kept in it. Nothing is written to the site while it lives (apply holds the site's lock,
/// or writes nothing).
#[derive(Default)]
pub struct LoweringMemo {
    /// The first pass over every file, by relative path.
    outcomes: std::sync::Mutex<HashMap<String, (FirstPass, FileImports)>>,
    /// Lowerings with extra names (importers of device names, fed parameters).
    lowered: std::sync::Mutex<HashMap<LoweringKey, Lowered>>,
    /// The index of the site as it is on disk: every scan's index shares its whole parses
    /// of the files that scan did not edit.
    index: std::sync::OnceLock<ModuleIndex>,
    /// Each file's last resolution, with what it read (see `Resolution`).
    resolved: std::sync::Mutex<HashMap<String, std::sync::Arc<Resolution>>>,
    /// `gate::feed`'s answers by caller module, with what they read (see `FedAnswers`).
    fed: std::sync::Mutex<HashMap<String, Vec<std::sync::Arc<FedAnswers>>>>,
    /// How many modules' resolutions were reused (for tests and `GATEFIX_TIMINGS`).
    reused: std::sync::atomic::AtomicUsize,
}

/// `FedAnswers` kept per caller module: `gate::feed` asks a caller at most once per round.
const FED_ANSWERS_KEPT: usize = crate::gate::feed::MAX_ROUNDS * 2;

/// Which of a caller module's arguments carry the device's value, as one round of
/// `gate::feed` answered: kept, like a `Resolution`, with the caller's IR, the asks (by the
/// address of the call and the argument in that IR) and what the resolver read.
struct FedAnswers {
    caller: SharedModule,
    asks: Vec<(usize, usize)>,
    reads: ReadLog,
    answers: Vec<bool>,
}

/// A module's gates as one scan resolved them, kept with the IR they were resolved from and
/// everything the resolution read of the index. Resolution is a function of those alone (its
/// memo tables and step budget are its own), so where another scan hands the same IR (the
/// same `Arc`) and the index answers every read the same, the gates are the same.
struct Resolution {
    module: SharedModule,
    reads: ReadLog,
    gates: Vec<Gate>,
}

impl LoweringMemo {
    /// How many modules' resolutions were reused from an earlier scan instead of redone.
    pub fn reused(&self) -> usize {
        self.reused.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// Module, whether a package, parameter names, fed names, imported device names.
type LoweringKey = (String, bool, Vec<String>, Vec<String>, Vec<String>);

/// `scan_overlay`, reusing and filling `memo` (see `LoweringMemo`) when one is given.
pub fn scan_overlay_with(
    site: &Site,
    rules: &Rules,
    options: ScanOptions,
    overlay: &HashMap<String, Vec<u8>>,
    memo: Option<&LoweringMemo>,
) -> ScanResult {
    let mut warnings = Vec::new();
    let files = python_files(&site.root, &mut warnings);
    // Every walk warning is a file (or a folder) left out.
    let walk_skips = warnings.len();
    let mut rule_names = rules.token_names();
    if options.kernel_sources {
        rule_names.extend(KERNEL_SOURCE_TOKENS.iter().map(|t| t.to_string()));
    }
    let prefilter = prefilter_tokens(&rule_names);
    let resolve = resolve_tokens(&rules.resolve_names());
    let parameter_names = rules.parameter_names();
    let index = match memo {
        Some(memo) => memo
            .index
            .get_or_init(|| ModuleIndex::new(&site.root, &files, resolve.clone()))
            .sharing_unedited(overlay.clone()),
        None => ModuleIndex::new(&site.root, &files, resolve.clone()).with_overlay(overlay.clone()),
    };
    let lowering = FileLowering {
        prefilter: &prefilter,
        resolve: &resolve,
        options: &options,
        memo,
    };

    let timings = std::env::var_os("GATEFIX_TIMINGS").is_some();
    let clock = std::time::Instant::now();
    // First every file is read once: what it imports, and whether it holds a token. The
    // files with one are lowered next, each after the modules it imports from
    // (`lower_hits`).
    let read_one = |file: &PathBuf| -> (FirstPass, FileImports) {
        with_read_buffer(|buffer| {
            let name = relative(Path::new(""), file);
            let skipped = |message: String| {
                FirstPass::Done(FileOutcome::Skipped(Warning {
                    file: name.clone(),
                    line: None,
                    column: None,
                    message,
                }))
            };
            // Edited text (apply's re-resolution) and file bytes go the same way.
            let judge = |bytes: &[u8]| -> FirstPass {
                if let Some(why) = not_source_text(bytes) {
                    return skipped(format!(
                        "skipped: {why}; Python cannot import it, and gates in it are not reported"
                    ));
                }
                let no_token = || !lowering.has_token(bytes, &parameter_names);
                let Some((module, is_package)) = module_name(file) else {
                    return if options.prefilter && no_token() {
                        FirstPass::Done(FileOutcome::Nothing)
                    } else {
                        skipped("skipped: not a Python module path".into())
                    };
                };
                if options.prefilter && no_token() {
                    // Not parsed, but not silently passed over: text that is not UTF-8
                    // is said as for a parsed file (`file_warnings`).
                    return FirstPass::Done(not_lowered(&name, bytes));
                }
                FirstPass::Hit {
                    module,
                    is_package,
                    bytes: bytes.into(),
                }
            };
            let imports_of = |bytes: &[u8]| -> FileImports {
                let (module, is_package) = module_name(file)?;
                Some(exports::from_imports(bytes, &module, is_package).into())
            };
            let edited = (!overlay.is_empty()).then(|| overlay.get(&name)).flatten();
            if let Some(bytes) = edited {
                return (judge(bytes), imports_of(bytes));
            }
            if let Some(memo) = memo
                && let Some(outcome) = memo.outcomes.lock().unwrap().get(&name)
            {
                return outcome.clone();
            }
            let mut from_disk = || -> (FirstPass, FileImports) {
                let len = match read_into(&site.root.join(file), buffer, options.max_file_bytes) {
                    Ok(len) => len,
                    Err(Unread::TooLarge(size)) => {
                        return (
                            skipped(format!(
                                "skipped: {size} bytes, over the {}-byte limit (--max-file-size); gates in it are not reported",
                                options.max_file_bytes
                            )),
                            None,
                        );
                    }
                    Err(Unread::Io(err)) => {
                        return (
                            skipped(format!(
                                "skipped: cannot read: {err}; gates in it are not reported"
                            )),
                            None,
                        );
                    }
                };
                let bytes = &buffer[..len];
                (judge(bytes), imports_of(bytes))
            };
            let outcome = from_disk();
            if let Some(memo) = memo {
                memo.outcomes
                    .lock()
                    .unwrap()
                    .insert(name.clone(), outcome.clone());
            }
            outcome
        })
    };
    let first: Vec<(FirstPass, FileImports)> =
        crate::process::with_reads_in_flight(|| files.par_iter().map(read_one).collect());
    if timings {
        eprintln!("scan: read {} files {:?}", files.len(), clock.elapsed());
    }
    let (outcomes, hit_names) = lower_hits(
        first,
        &files,
        overlay,
        &lowering,
        &index,
        &parameter_names,
        &resolve,
    );
    if timings {
        let parsed = outcomes
            .iter()
            .filter(|(o, _)| matches!(o, FileOutcome::Parsed(..)))
            .count();
        eprintln!(
            "scan: read, parse and lower ({parsed} of {} files, in import order) {:?}",
            files.len(),
            clock.elapsed()
        );
    }
    let mut lowered: Vec<(String, SharedModule, Vec<Warning>)> = Vec::new();
    let mut skipped_files = walk_skips;
    let mut imports: Vec<FileImports> = Vec::with_capacity(outcomes.len());
    for (outcome, file_imports) in outcomes {
        imports.push(file_imports);
        match outcome {
            FileOutcome::Parsed(file, module, file_warnings) => {
                lowered.push((file, module, file_warnings))
            }
            FileOutcome::Skipped(warning) => {
                skipped_files += 1;
                warnings.push(warning);
            }
            FileOutcome::Nothing => {}
            FileOutcome::Noted(warning) => warnings.push(warning),
        }
    }

    // Files that import a name another module binds from the device (`gate::exports`).
    let imported = lower_importers(
        &mut lowered,
        hit_names,
        &files,
        &imports,
        &site.root,
        overlay,
        &lowering,
        &parameter_names,
        &resolve,
        options.max_file_bytes,
    );
    if timings {
        eprintln!(
            "scan: importers of device names ({} modules) {:?}",
            imported.len(),
            clock.elapsed()
        );
    }

    // Parameters that callers feed device values: their modules are lowered again with those
    // parameters taken as the device's (`gate::feed`). Only then are modules
    // handed to the index, so resolution never sees the first lowering of a fed module.
    let mut fed_lowering = FedLowering {
        lowering: &lowering,
        site_root: &site.root,
        index: &index,
        rules,
        resolve: &resolve,
        parameter_names: &parameter_names,
        imported: &imported,
        overlay,
        max_file_bytes: options.max_file_bytes,
        last_index: None,
        may_define_memo: Default::default(),
        texts: Default::default(),
    };
    let mut by_module: BTreeMap<String, SharedModule> = lowered
        .iter()
        .map(|(_, module, _)| (module.module.clone(), module.clone()))
        .collect();
    let fed = feed_parameters(&mut by_module, &mut fed_lowering);
    let reusable = fed_lowering
        .last_index
        .take()
        .filter(|_| fed.last_ask_current);
    if !fed.relowered.is_empty() {
        let mut position: HashMap<String, usize> = HashMap::new();
        for (i, (_, module, _)) in lowered.iter().enumerate() {
            position.insert(module.module.clone(), i);
        }
        for name in &fed.relowered {
            let module = by_module[name].clone();
            match position.get(name) {
                Some(&i) => lowered[i].1 = module,
                None => {
                    if let Some(file) = index.file(name) {
                        lowered.push((relative(Path::new(""), &file.path), module, Vec::new()));
                    }
                }
            }
        }
        lowered.sort_by(|a, b| a.0.cmp(&b.0));
    }
    if timings {
        eprintln!(
            "scan: fed parameters ({} modules lowered again) {:?}",
            fed.relowered.len(),
            clock.elapsed()
        );
    }
    // The last round's index already holds the modules as they are now, and their callers.
    let index = match reusable {
        Some(reused) => {
            // The first index is done with: freed beside the resolution, not at the end.
            drop(fed_lowering);
            rayon::spawn(move || drop(index));
            reused
        }
        None => {
            for (_, module, _) in &lowered {
                index.preload(&module.module, module.clone());
            }
            index.set_callers(lowered.iter().map(|(_, module, _)| module));
            index
        }
    };

    // One resolver, and so one set of memo tables, per module: its sites are resolved in
    // order on one thread, so what a site sees cached never depends on how other modules were
    // scheduled. A shared cache made the audit depend on thread timing, because a value cut
    // short (depth, budget, cycle) for one site differs from the same value reached fresh.
    // The modules with the most sites go first: one resolver per module means a module is
    // resolved on one thread, and flashinfer's `prefill.py` (504 sites, a quarter of the
    // resolution's time on sglang + flashinfer) started late left one core idle at the end.
    // The results keep the modules' order.
    let order = costliest_first(&lowered, |(_, module, _)| module.sites.len());
    let mut by_module: Vec<(usize, Vec<Gate>)> = order
        .par_iter()
        .map(|&i| (i, &lowered[i]))
        .map(|(i, (file, module, _))| {
            let kept = memo.and_then(|memo| memo.resolved.lock().unwrap().get(file).cloned());
            if let Some(memo) = memo
                && let Some(kept) = kept
                && std::sync::Arc::ptr_eq(&kept.module, module)
                && kept.reads.holds(&index)
            {
                memo.reused
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                return (i, kept.gates.clone());
            }
            let resolver = match memo {
                Some(_) => Resolver::logging(&index, rules, resolve.clone()),
                None => Resolver::new(&index, rules, resolve.clone()),
            };
            let started = std::time::Instant::now();
            let resolved = resolve_module(&resolver, module);
            if timings && started.elapsed().as_millis() >= 100 {
                eprintln!("scan: resolving {file} took {:?}", started.elapsed());
            }
            let gates: Vec<Gate> = resolved
                .into_iter()
                .map(|resolved| {
                    let site_record = &module.sites[resolved.site_index];
                    let owner = site.owner(file);
                    Gate {
                        id: String::new(),
                        dist: owner.map(|d| d.name.clone()),
                        dist_version: owner.map(|d| d.version.clone()),
                        file: file.clone(),
                        line: site_record.start.0,
                        column: site_record.start.1,
                        end_line: site_record.end.0,
                        end_column: site_record.end.1,
                        function: site_record
                            .function
                            .map(|f| module.functions[f].qualname.clone()),
                        form: resolved.form,
                        text: site_record.text.clone(),
                        predicate: resolved.predicate,
                        guards_branch: matches!(
                            site_record.kind,
                            SiteKind::Test | SiteKind::ValueSelect
                        ),
                        assumes: resolved.assumes,
                    }
                })
                .collect();
            if let Some(memo) = memo {
                let kept = Resolution {
                    module: module.clone(),
                    reads: resolver.take_read_log(),
                    gates: gates.clone(),
                };
                memo.resolved
                    .lock()
                    .unwrap()
                    .insert(file.clone(), std::sync::Arc::new(kept));
            }
            (i, gates)
        })
        .collect();
    by_module.sort_unstable_by_key(|(i, _)| *i);
    let mut gates: Vec<Gate> = by_module.into_iter().flat_map(|(_, gates)| gates).collect();
    if timings {
        let reused = memo.map_or(String::new(), |memo| {
            format!(" ({} modules reused so far)", memo.reused())
        });
        eprintln!("scan: resolve {:?}{reused}", clock.elapsed());
    }
    gates.sort_by(|a, b| {
        (&a.file, a.line, a.column, a.form.specificity(), a.form).cmp(&(
            &b.file,
            b.line,
            b.column,
            b.form.specificity(),
            b.form,
        ))
    });
    gates.dedup_by(|a, b| {
        a.file == b.file
            && a.line == b.line
            && a.column == b.column
            && a.end_line == b.end_line
            && a.end_column == b.end_column
    });
    assign_ids(&mut gates);
    // Freeing every module the resolution lowered takes tens of milliseconds on a big site,
    // all on one core after the parallel work: hand it to the thread pool, nobody waits for
    // it. (Not a new thread per scan: one each time is a cost for callers that scan again and
    // again, and its exit raced LeakSanitizer in the fuzzer.) What the first pass found
    // (every file's imports, 8,000 on a big site) goes the same way.
    rayon::spawn(move || drop((index, imports, imported)));

    let stats = Stats {
        python_files: files.len(),
        prefilter_hits: lowered.len(),
        skipped_files,
    };
    let mut modules = Vec::with_capacity(lowered.len());
    for (file, module, file_warnings) in lowered {
        warnings.extend(file_warnings);
        modules.push((file, module));
    }
    modules.sort_by(|a, b| a.0.cmp(&b.0));
    // Asked last: the RECORD files are read on a thread of their own meanwhile.
    warnings.extend(
        site.record_warnings()
            .into_iter()
            .map(|(file, message)| Warning {
                file,
                line: None,
                column: None,
                message,
            }),
    );
    warnings.sort();
    ScanResult {
        gates,
        modules,
        warnings,
        stats,
    }
}

/// A file with a token that lowered to nothing (tokens only in comments or docstrings): not
/// parsed, but not silently passed over where its bytes are not UTF-8.
fn not_lowered(name: &str, bytes: &[u8]) -> FileOutcome {
    if std::str::from_utf8(bytes).is_err() {
        return FileOutcome::Noted(Warning {
            file: name.to_string(),
            line: None,
            column: None,
            message: NOT_UTF8.into(),
        });
    }
    FileOutcome::Nothing
}

/// What a lowered module binds from the device for its importers (`gate::exports`). Names
/// with a token are left out: the prefilter finds them in every file that uses them.
fn exports_of(module: &ModuleIr, resolve: &Tokens) -> BTreeSet<String> {
    module
        .device_exports
        .iter()
        .filter(|name| !resolve.hit(name.as_bytes()))
        .cloned()
        .collect()
}

/// By module, the device names of other modules it was lowered with (`gate::exports`).
type ImportedNames = HashMap<String, Vec<String>>;

/// One file with a token, lowered by `lower_hits`.
struct HitLowering {
    outcome: FileOutcome,
    /// The device names of other modules it was lowered with.
    names: Vec<String>,
    /// What it binds from the device for its importers.
    exports: BTreeSet<String>,
}

/// Lowers the files in which the first pass found a token, each after the modules it
/// imports from (`import_order`), with the names those bind from the device taken as
/// arch-dependent (`gate::exports`): such a file needs no second lowering for them. Modules
/// in an import cycle do not see each other's names here, nor does anyone see those of
/// modules without a token: `lower_importers` adds those after, in its rounds. Returns every
/// file's outcome in the files' order, and the names each module was lowered with (where
/// there were any).
fn lower_hits(
    first: Vec<(FirstPass, FileImports)>,
    files: &[PathBuf],
    overlay: &HashMap<String, Vec<u8>>,
    lowering: &FileLowering,
    index: &ModuleIndex,
    parameter_names: &[String],
    resolve: &Tokens,
) -> (Vec<(FileOutcome, FileImports)>, ImportedNames) {
    struct Hit<'a> {
        /// Position in `files`.
        file: usize,
        module: &'a str,
        is_package: bool,
        bytes: &'a [u8],
    }
    let hits: Vec<Hit> = first
        .iter()
        .enumerate()
        .filter_map(|(file, (pass, _))| match pass {
            FirstPass::Hit {
                module,
                is_package,
                bytes,
            } => Some(Hit {
                file,
                module,
                is_package: *is_package,
                bytes,
            }),
            FirstPass::Done(_) => None,
        })
        .collect();
    let by_module: HashMap<&str, usize> = hits
        .iter()
        .enumerate()
        .map(|(at, hit)| (hit.module, at))
        .collect();
    let statements = |hit: usize| first[hits[hit].file].1.as_deref().unwrap_or(&[]);
    let deps: Vec<Vec<usize>> = (0..hits.len())
        .map(|hit| {
            // A module, and the submodules imported from it (`from .. import runtime`).
            let mut on: Vec<usize> = statements(hit)
                .iter()
                .flat_map(|statement| {
                    let submodules = statement.names.iter().filter_map(|(member, _)| {
                        by_module
                            .get(exports::submodule(&statement.module, member).as_str())
                            .copied()
                    });
                    by_module
                        .get(statement.module.as_str())
                        .copied()
                        .into_iter()
                        .chain(submodules)
                })
                .filter(|&dep| dep != hit)
                .collect();
            on.sort_unstable();
            on.dedup();
            on
        })
        .collect();
    let lower_one = |hit: usize, known: &BTreeMap<String, BTreeSet<String>>| -> HitLowering {
        let Hit {
            file,
            module,
            is_package,
            bytes,
        } = hits[hit];
        let file = &files[file];
        let name = relative(Path::new(""), file);
        let names = exports::device_names_imported_by(statements(hit), known);
        let edited = overlay.contains_key(&name);
        let lowered = lowering.lower_file(
            bytes,
            edited,
            module,
            is_package,
            parameter_names,
            &[],
            &names,
        );
        let (outcome, exports) = match lowered {
            Lowered::Ir(ir) => {
                let file_warnings = file_warnings(file, bytes, &ir.parse_errors, &ir.too_deep);
                if index.file(module).is_none() {
                    let warning = Warning {
                        file: name,
                        line: None,
                        column: None,
                        message: format!(
                            "skipped: module `{module}` is not in the site's module index"
                        ),
                    };
                    (FileOutcome::Skipped(warning), BTreeSet::new())
                } else {
                    let exports = exports_of(&ir, resolve);
                    (FileOutcome::Parsed(name, ir, file_warnings), exports)
                }
            }
            Lowered::Nothing => (not_lowered(&name, bytes), BTreeSet::new()),
        };
        HitLowering {
            outcome,
            names,
            exports,
        }
    };
    let lowered: Vec<HitLowering> = in_dependency_order(
        &deps,
        // The largest files first: none left to start when the rest are done.
        |hit| hits[hit].bytes.len() as u64,
        |members, done: &Done<HitLowering>| {
            members
                .par_iter()
                .map(|&hit| {
                    // What the modules it imports from bind from the device: those outside
                    // its import cycle are lowered already.
                    let mut known: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
                    for &dep in &deps[hit] {
                        if let Some(done) = done.get(dep)
                            && !done.exports.is_empty()
                        {
                            known.insert(hits[dep].module.to_string(), done.exports.clone());
                        }
                    }
                    lower_one(hit, &known)
                })
                .collect()
        },
    );
    let mut names: HashMap<String, Vec<String>> = HashMap::new();
    let mut lowered = lowered.into_iter();
    let outcomes = first
        .into_iter()
        .map(|(pass, imports)| match pass {
            FirstPass::Done(outcome) => (outcome, imports),
            FirstPass::Hit { module, .. } => {
                let hit = lowered.next().expect("one lowering per hit");
                if !hit.names.is_empty() {
                    names.insert(module, hit.names);
                }
                (hit.outcome, imports)
            }
        })
        .collect();
    (outcomes, names)
}

/// Lowers, in rounds, the files that import a name another lowered module binds from the
/// device (`gate::exports`), with that name taken as arch-dependent; a file lowered before
/// (without that name) is lowered again in place. `imported`: the names each module was
/// lowered with already (`lower_hits`). Returns, by module, the names each was lowered with.
#[allow(clippy::too_many_arguments)]
fn lower_importers(
    lowered: &mut Vec<(String, SharedModule, Vec<Warning>)>,
    mut imported: HashMap<String, Vec<String>>,
    files: &[PathBuf],
    imports: &[FileImports],
    root: &Path,
    overlay: &HashMap<String, Vec<u8>>,
    lowering: &FileLowering,
    parameter_names: &[String],
    resolve: &Tokens,
    max_file_bytes: u64,
) -> HashMap<String, Vec<String>> {
    let exports_of = |module: &ModuleIr| exports_of(module, resolve);
    let mut known: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (_, module, _) in lowered.iter() {
        let names = exports_of(module);
        if !names.is_empty() {
            known.insert(module.module.clone(), names);
        }
    }
    let mut fresh = known.clone();
    for _round in 0..exports::MAX_ROUNDS {
        let words: BTreeSet<&str> = fresh.values().flatten().map(String::as_str).collect();
        if words.is_empty() {
            break;
        }
        let searched = std::time::Instant::now();
        // (file, module, is_package, every name it imports from the device). Only files that
        // import one of this round's new names can import more than an earlier round found.
        let found: Vec<(&PathBuf, String, bool, Vec<String>)> = files
            .par_iter()
            .zip(imports)
            .filter_map(|(file, statements)| {
                let statements = statements.as_deref()?;
                let imports_a_new_name = statements.iter().any(|statement| {
                    let new = fresh.get(&statement.module);
                    statement.names.iter().any(|(member, _)| {
                        new.is_some_and(|new| new.contains(member))
                            || fresh.contains_key(&exports::submodule(&statement.module, member))
                    })
                });
                if !imports_a_new_name {
                    return None;
                }
                let (module, is_package) = module_name(file)?;
                let names = exports::device_names_imported_by(statements, &known);
                let before = imported.get(&module);
                if names.iter().all(|n| before.is_some_and(|b| b.contains(n))) {
                    return None;
                }
                let mut all: BTreeSet<String> = names.into_iter().collect();
                all.extend(before.into_iter().flatten().cloned());
                Some((file, module, is_package, all.into_iter().collect()))
            })
            .collect();
        if std::env::var_os("GATEFIX_TIMINGS").is_some() {
            eprintln!(
                "scan: importers: {} names looked for, {} files import one ({:?})",
                words.len(),
                found.len(),
                searched.elapsed()
            );
        }
        if found.is_empty() {
            break;
        }
        let relowered: Vec<Relowered> = found
            .par_iter()
            .map(|(file, module, is_package, names)| {
                let Some(bytes) = read_for_lowering(root, file, overlay, max_file_bytes) else {
                    return Relowered::Nothing;
                };
                let before = imported.get(module);
                let unread = names
                    .iter()
                    .filter(|name| before.is_none_or(|b| !b.contains(name)))
                    .all(|name| {
                        name.contains('.') && whole_word_starts(&bytes, name).next().is_none()
                    });
                if unread {
                    return Relowered::Unread;
                }
                let edited = overlay.contains_key(&relative(Path::new(""), file));
                match lowering.lower_file(
                    &bytes,
                    edited,
                    module,
                    *is_package,
                    parameter_names,
                    &[],
                    names,
                ) {
                    Lowered::Ir(ir) => Relowered::Ir(ir),
                    Lowered::Nothing => Relowered::Nothing,
                }
            })
            .collect();
        fresh.clear();
        let mut position: HashMap<String, usize> = HashMap::new();
        for (i, (file, _, _)) in lowered.iter().enumerate() {
            position.insert(file.clone(), i);
        }
        for ((file, module, _, names), ir) in found.into_iter().zip(relowered) {
            let ir = match ir {
                Relowered::Ir(ir) => ir,
                Relowered::Unread => {
                    imported.insert(module, names);
                    continue;
                }
                Relowered::Nothing => continue,
            };
            let new: BTreeSet<String> = exports_of(&ir)
                .into_iter()
                .filter(|n| known.get(&module).is_none_or(|k| !k.contains(n)))
                .collect();
            if !new.is_empty() {
                known
                    .entry(module.clone())
                    .or_default()
                    .extend(new.iter().cloned());
                fresh.insert(module.clone(), new);
            }
            imported.insert(module, names);
            let file = relative(Path::new(""), file);
            match position.get(&file) {
                Some(&i) => lowered[i].1 = ir,
                None => lowered.push((file, ir, Vec::new())),
            }
        }
    }
    lowered.sort_by(|a, b| a.0.cmp(&b.0));
    imported
}

/// What an importers' round made of a file.
enum Relowered {
    Ir(SharedModule),
    /// Its new names are a submodule's (`common._arch_for`) that its text never reads:
    /// lowering it again would give what it gave.
    Unread,
    /// Unreadable, over the size limit, or no token left to lower.
    Nothing,
}

/// The positions of `items`, the costliest first (ties in their order): work handed to the
/// thread pool in this order leaves no long item to start when the rest is done.
fn costliest_first<T>(items: &[T], cost: impl Fn(&T) -> usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(cost(&items[i])));
    order
}

/// A file's bytes as the scan lowers them: the overlay's edited text, else the file's, unless
/// it is over the size limit (the scan skipped it with a warning) or unreadable.
fn read_for_lowering<'b>(
    root: &Path,
    file: &Path,
    overlay: &'b HashMap<String, Vec<u8>>,
    max_file_bytes: u64,
) -> Option<std::borrow::Cow<'b, [u8]>> {
    if let Some(bytes) = overlay.get(&relative(Path::new(""), file)) {
        return Some(std::borrow::Cow::Borrowed(bytes));
    }
    let path = root.join(file);
    if std::fs::metadata(&path).ok()?.len() > max_file_bytes {
        return None;
    }
    std::fs::read(path).ok().map(std::borrow::Cow::Owned)
}

/// How the scan turns a file's text into its IR: the prefilter, the chunking and the
/// lowering, with the parameter names taken as the device's.
struct FileLowering<'a> {
    prefilter: &'a Tokens,
    resolve: &'a Tokens,
    options: &'a ScanOptions,
    memo: Option<&'a LoweringMemo>,
}

#[derive(Clone)]
enum Lowered {
    /// Shared, so that the memo hands every scan the same `Arc` (what a `ReadLog` compares).
    Ir(SharedModule),
    /// No token (or tokens only in comments): nothing to parse.
    Nothing,
}

impl FileLowering<'_> {
    /// Whether `token_starts` (with no fed names) finds any: the first match decides.
    fn has_token(&self, bytes: &[u8], parameter_names: &[String]) -> bool {
        self.prefilter.hit(bytes) || !def_parameter_starts(bytes, parameter_names).is_empty()
    }

    /// Where the tokens occur: the prefilter's answer, and what chunking starts from.
    fn token_starts(
        &self,
        bytes: &[u8],
        parameter_names: &[String],
        fed_names: &[String],
    ) -> Vec<usize> {
        let mut token_starts: Vec<usize> = self.prefilter.starts(bytes).collect();
        let mut params = def_parameter_starts(bytes, parameter_names);
        // A parameter fed the device's value is a token of its file: the chunking keeps what
        // reads it, also through the attribute it is stored in (`self.fp8_kv_dequant`).
        for name in fed_names {
            params.extend(whole_word_starts(bytes, name));
        }
        if !params.is_empty() {
            token_starts.extend(params);
            token_starts.sort_unstable();
            token_starts.dedup();
        }
        token_starts
    }

    /// `lower` of a file's bytes as read from disk (`edited` false) or from the overlay: the
    /// former go through the memo, when the scan has one.
    #[allow(clippy::too_many_arguments)]
    fn lower_file(
        &self,
        bytes: &[u8],
        edited: bool,
        module: &str,
        is_package: bool,
        parameter_names: &[String],
        fed_names: &[String],
        imported: &[String],
    ) -> Lowered {
        let lower = || {
            self.lower(
                bytes,
                module,
                is_package,
                parameter_names,
                fed_names,
                imported,
            )
        };
        let Some(memo) = self.memo.filter(|_| !edited) else {
            return lower();
        };
        let key = (
            module.to_string(),
            is_package,
            parameter_names.to_vec(),
            fed_names.to_vec(),
            imported.to_vec(),
        );
        if let Some(lowered) = memo.lowered.lock().unwrap().get(&key) {
            return lowered.clone();
        }
        let lowered = lower();
        memo.lowered.lock().unwrap().insert(key, lowered.clone());
        lowered
    }

    /// `fed_names`: parameters callers feed the device's value (`gate::feed`);
    /// `imported`: names the file imports that another module binds from the device
    /// (`gate::exports`). Both are tokens of the file.
    fn lower(
        &self,
        bytes: &[u8],
        module: &str,
        is_package: bool,
        parameter_names: &[String],
        fed_names: &[String],
        imported: &[String],
    ) -> Lowered {
        let mut token_starts = self.token_starts(bytes, parameter_names, fed_names);
        if !imported.is_empty() {
            for name in imported {
                token_starts.extend(whole_word_starts(bytes, name));
            }
            token_starts.sort_unstable();
            token_starts.dedup();
        }
        if self.options.prefilter && token_starts.is_empty() {
            return Lowered::Nothing;
        }
        let parsed = if self.options.chunking {
            parse_relevant(bytes, token_starts)
        } else {
            Some((parse(bytes), None))
        };
        let Some((tree, ranges)) = parsed else {
            return Lowered::Nothing;
        };
        Lowered::Ir(std::sync::Arc::new(lower_parsed(
            bytes,
            &tree,
            module,
            is_package,
            self.resolve,
            ranges.as_deref(),
            parameter_names,
            imported,
        )))
    }
}

/// Lowerings for `gate::feed`, reading files (or the overlay's edited text) as the scan
/// does, and the resolver's answer on which arguments carry the device's value.
struct FedLowering<'a> {
    lowering: &'a FileLowering<'a>,
    site_root: &'a Path,
    index: &'a ModuleIndex,
    rules: &'a Rules,
    resolve: &'a Tokens,
    parameter_names: &'a [String],
    /// What `lower_importers` found each module imports from the device.
    imported: &'a HashMap<String, Vec<String>>,
    overlay: &'a HashMap<String, Vec<u8>>,
    max_file_bytes: u64,
    /// The index the last `device_arguments` built (kept for resolution when current).
    last_index: Option<ModuleIndex>,
    /// `may_define`'s answers by module and name: the pass asks about the same callee
    /// for every call site of it, and each answer costs reading the module's file.
    may_define_memo: std::sync::Mutex<rustc_hash::FxHashMap<(String, String), MayDefine>>,
    /// The files `may_define` read, by module (`None`: unreadable): it asks about many names
    /// of one module, and reading the file again for each was most of its cost.
    texts: std::sync::Mutex<rustc_hash::FxHashMap<String, Option<std::sync::Arc<[u8]>>>>,
}

impl FedLowering<'_> {
    /// What the module's file may define as `name` (`chunks::may_define`): all `true` when
    /// it cannot be read.
    fn may_define_in_file(&self, module: &str, name: &str) -> MayDefine {
        let unreadable = MayDefine {
            mentioned: true,
            function: true,
            class: true,
        };
        let Some(file) = self.index.file(module) else {
            return unreadable;
        };
        if let Some(bytes) = self.overlay.get(&relative(Path::new(""), &file.path)) {
            return may_define(bytes, name);
        }
        let known = self.texts.lock().unwrap().get(module).cloned();
        let text = match known {
            Some(text) => text,
            None => {
                // Read outside the lock: the pass asks from every thread.
                let text = std::fs::read(self.site_root.join(&file.path))
                    .ok()
                    .map(std::sync::Arc::<[u8]>::from);
                self.texts
                    .lock()
                    .unwrap()
                    .insert(module.to_string(), text.clone());
                text
            }
        };
        text.map_or(unreadable, |bytes| may_define(&bytes, name))
    }
}

impl Lowering for FedLowering<'_> {
    fn lower_fed(&self, module: &str, device_params: &[String]) -> Option<SharedModule> {
        let file = self.index.file(module)?;
        let name = relative(Path::new(""), &file.path);
        let edited = self.overlay.contains_key(&name);
        let bytes = match self.overlay.get(&name) {
            Some(bytes) => bytes.clone(),
            None => {
                let path = self.site_root.join(&file.path);
                if std::fs::metadata(&path).ok()?.len() > self.max_file_bytes {
                    return None;
                }
                std::fs::read(path).ok()?
            }
        };
        let mut names = self.parameter_names.to_vec();
        names.extend(device_params.iter().cloned());
        let imported = self.imported.get(module).map_or(&[][..], Vec::as_slice);
        match self.lowering.lower_file(
            &bytes,
            edited,
            module,
            file.is_package,
            &names,
            device_params,
            imported,
        ) {
            Lowered::Ir(ir) => Some(ir),
            Lowered::Nothing => None,
        }
    }

    fn definitions(&self, module: &str, name: &str) -> Option<SharedModule> {
        let edited = self.index.file(module).is_some_and(|file| {
            self.overlay
                .contains_key(&relative(Path::new(""), &file.path))
        });
        if edited {
            return self.lower_fed(module, &[]);
        }
        // Every body is skipped: the pass reads signatures, classes and imports only.
        self.index.definitions(module, name)
    }

    fn is_module(&self, module: &str) -> bool {
        self.index.file(module).is_some()
    }

    fn may_define(&self, module: &str, name: &str) -> MayDefine {
        let key = (module.to_string(), name.to_string());
        if let Some(&known) = self.may_define_memo.lock().unwrap().get(&key) {
            return known;
        }
        let found = self.may_define_in_file(module, name);
        self.may_define_memo.lock().unwrap().insert(key, found);
        found
    }

    fn already_device(&self, name: &str) -> bool {
        self.parameter_names.iter().any(|p| p == name) || self.resolve.hit(name.as_bytes())
    }

    fn device_arguments(
        &mut self,
        modules: &BTreeMap<String, SharedModule>,
        asks: &[Ask<'_>],
    ) -> Vec<bool> {
        let index = self.index.sharing();
        for (name, module) in modules {
            index.preload(name, module.clone());
        }
        index.set_callers(modules.values());
        // One resolver per caller module, as the scan resolves sites (see there why).
        let mut groups: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for (i, ask) in asks.iter().enumerate() {
            groups
                .entry(ask.caller.module.as_str())
                .or_default()
                .push(i);
        }
        let groups: Vec<Vec<usize>> = groups.into_values().collect();
        let memo = self.lowering.memo;
        let answered: Vec<Vec<(usize, bool)>> = groups
            .par_iter()
            .map(|group| {
                let caller = asks[group[0]].caller;
                let places: Vec<(usize, usize)> = group
                    .iter()
                    .map(|&i| {
                        let ask = &asks[i];
                        (
                            std::ptr::from_ref(ask.site) as usize,
                            std::ptr::from_ref(ask.argument) as usize,
                        )
                    })
                    .collect();
                let kept: Vec<std::sync::Arc<FedAnswers>> = memo
                    .and_then(|memo| memo.fed.lock().unwrap().get(&caller.module).cloned())
                    .unwrap_or_default();
                let reuse = kept.iter().find(|kept| {
                    std::sync::Arc::ptr_eq(&kept.caller, caller)
                        && kept.asks == places
                        && kept.reads.holds(&index)
                });
                if let Some(kept) = reuse {
                    return group.iter().copied().zip(kept.answers.clone()).collect();
                }
                let resolver = match memo {
                    Some(_) => Resolver::logging(&index, self.rules, self.resolve.clone()),
                    None => Resolver::new(&index, self.rules, self.resolve.clone()),
                };
                let answers: Vec<bool> = group
                    .iter()
                    .map(|&i| {
                        let ask = &asks[i];
                        resolver.passes_device_value(ask.caller, ask.site, ask.argument, ask.spread)
                    })
                    .collect();
                if let Some(memo) = memo {
                    let kept = FedAnswers {
                        caller: caller.clone(),
                        asks: places,
                        reads: resolver.take_read_log(),
                        answers: answers.clone(),
                    };
                    let mut fed = memo.fed.lock().unwrap();
                    let entries = fed.entry(caller.module.clone()).or_default();
                    // The pass asks a caller again in later rounds, with other modules
                    // lowered again: a few entries each, the oldest dropped.
                    if entries.len() >= FED_ANSWERS_KEPT {
                        entries.remove(0);
                    }
                    entries.push(std::sync::Arc::new(kept));
                }
                group.iter().copied().zip(answers).collect()
            })
            .collect();
        let mut answers = vec![false; asks.len()];
        for (i, device) in answered.into_iter().flatten() {
            answers[i] = device;
        }
        if let Some(old) = self.last_index.replace(index) {
            rayon::spawn(move || drop(old));
        }
        answers
    }
}

/// The warning for a file whose bytes are not UTF-8 (a Latin-1 comment, a stray binary).
const NOT_UTF8: &str = "not valid UTF-8; undecodable bytes are replaced in gate text";

/// Why a `.py` file's bytes are not source Python can read at all, if they are not: a NUL
/// byte (CPython refuses the file: "source code cannot contain null bytes").
fn not_source_text(bytes: &[u8]) -> Option<&'static str> {
    memchr::memchr(0, bytes)
        .is_some()
        .then_some("not source text (it holds NUL bytes)")
}

/// Runs `f` with this thread's file buffer. A fresh allocation per file (290 MB of sources on a
/// big site) keeps handing the kernel new pages to fault in and zero; one buffer per thread,
/// reused, stays mapped (system time -10% on the bench site). Taken out of its slot while in
/// use, so a nested call gets a buffer of its own.
fn with_read_buffer<T>(f: impl FnOnce(&mut Vec<u8>) -> T) -> T {
    thread_local! {
        static BUFFER: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
    }
    let mut buffer = BUFFER.with(|slot| slot.take());
    let result = f(&mut buffer);
    BUFFER.with(|slot| slot.set(buffer));
    result
}

/// Reads the file into the front of the buffer and returns its length: its size is asked
/// once and one `read` fills it. `File::read_to_end` asks the size again, seeks, reads in
/// growing steps and once more to meet the end: three or more system calls per file more,
/// 40,000 on a big site. The buffer keeps its length (the bytes past the file's are stale),
/// so its memory is initialised once, not per file.
fn read_into(path: &Path, buffer: &mut Vec<u8>, max: u64) -> Result<usize, Unread> {
    use std::io::Read;
    let mut file = std::fs::File::open(path)?;
    let size = file.metadata()?.len();
    if size > max {
        return Err(Unread::TooLarge(size));
    }
    let size = usize::try_from(size).unwrap_or(usize::MAX);
    if buffer.len() < size {
        buffer.resize(size, 0);
    }
    let mut filled = 0;
    while filled < size {
        match file.read(&mut buffer[filled..size]) {
            Ok(0) => break,
            Ok(read) => filled += read,
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
            Err(err) => return Err(err.into()),
        }
    }
    Ok(filled)
}

enum Unread {
    TooLarge(u64),
    Io(std::io::Error),
}

impl From<std::io::Error> for Unread {
    fn from(e: std::io::Error) -> Unread {
        Unread::Io(e)
    }
}

/// Byte ranges of the statements a partial parse covers.
type Ranges = Vec<(usize, usize)>;

/// Big files are parsed statement by statement (the relevant ones); if that parse reports an
/// error, the whole file is parsed again so chunking never invents a syntax error.
/// `None`: nothing in the file needs parsing.
fn parse_relevant(bytes: &[u8], token_starts: Vec<usize>) -> Option<(Tree, Option<Ranges>)> {
    if bytes.len() < CHUNK_MIN_FILE_BYTES {
        return Some((parse(bytes), None));
    }
    let ranges = relevant_ranges_at(bytes, token_starts);
    // Tokens only in comments and docstrings: nothing to parse. The module stays unloaded, so
    // resolution parses it whole if another module imports from it.
    if ranges.is_empty() {
        return None;
    }
    let tree = parse_ranges(bytes, &ranges);
    if tree.root_node().has_error() {
        return Some((parse(bytes), None));
    }
    Some((tree, Some(ranges)))
}

fn file_warnings(
    file: &Path,
    bytes: &[u8],
    errors: &[(u32, u32)],
    too_deep: &[(u32, u32)],
) -> Vec<Warning> {
    let name = relative(Path::new(""), file);
    let mut out = Vec::new();
    if file.to_str().is_none() {
        out.push(Warning {
            file: name.clone(),
            line: None,
            column: None,
            message: "file name is not valid UTF-8 (shown with \\xNN escapes); scanned".into(),
        });
    }
    if let Some(&(line, column)) = too_deep.first() {
        out.push(Warning {
            file: name.clone(),
            line: Some(line),
            column: Some(column),
            message: format!(
                "expression nested too deep to analyse ({} place{}); a gate inside it is not reported",
                too_deep.len(),
                if too_deep.len() == 1 { "" } else { "s" }
            ),
        });
    }
    if std::str::from_utf8(bytes).is_err() {
        out.push(Warning {
            file: name.clone(),
            line: None,
            column: None,
            message: NOT_UTF8.into(),
        });
    }
    if let Some(&(line, column)) = errors.first() {
        out.push(Warning {
            file: name,
            line: Some(line),
            column: Some(column),
            message: format!(
                "syntax error ({} region{}); gates in the well-formed parts are still reported",
                errors.len(),
                if errors.len() == 1 { "" } else { "s" }
            ),
        });
    }
    out
}

/// Ids hash the distribution, file, function and normalised gate text (not the line), plus
/// an occurrence number among identical gates, so they survive line shifts.
fn assign_ids(gates: &mut [Gate]) {
    let mut seen: HashMap<String, usize> = HashMap::new();
    for gate in gates.iter_mut() {
        let key = format!(
            "{}\0{}\0{}\0{}\0{}",
            gate.dist.as_deref().unwrap_or(""),
            gate.file,
            gate.function.as_deref().unwrap_or(""),
            gate.form.name(),
            collapse_whitespace(&gate.text)
        );
        let occurrence = seen.entry(key.clone()).or_insert(0);
        *occurrence += 1;
        let digest = Sha256::digest(format!("{key}\0{occurrence}").as_bytes());
        gate.id = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_files_come_in_walkdir_sorted_order() {
        let dir = tempfile::tempdir().expect("temp dir");
        let names = [
            "b.py",
            "b/x.py",
            "b/a/z.py",
            "b-c.py",
            "b_c.py",
            "B.py",
            "bb/y.py",
            "b.pyi/q.py",
            "a.py",
            "_a.py",
            "zz/__init__.py",
            "zz/a.py",
            "z.py",
            "b/__init__.py",
        ];
        for name in names {
            let path = dir.path().join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, "x = 1\n").unwrap();
        }
        let mut warnings = Vec::new();
        let ours = python_files(dir.path(), &mut warnings);
        let walkdir_order: Vec<PathBuf> = walkdir::WalkDir::new(dir.path())
            .sort_by_file_name()
            .into_iter()
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_file())
            .map(|e| e.path().strip_prefix(dir.path()).unwrap().to_path_buf())
            .collect();
        assert_eq!(ours, walkdir_order);
        assert_eq!(ours.len(), names.len());
    }
}

#[cfg(test)]
mod memo_tests {
    use super::*;

    /// What a scan found, as text to compare: every gate's place, form and predicate.
    fn found(scan: &ScanResult) -> Vec<String> {
        scan.gates
            .iter()
            .map(|g| {
                format!(
                    "{}:{}:{} {:?} {:?} {}",
                    g.file, g.line, g.column, g.form, g.function, g.predicate
                )
            })
            .collect()
    }

    /// The memo changes no scan: with it, the same gates as without it, the first time and
    /// again; an edit in the overlay shows (here, a new gate) exactly as a scan without the
    /// memo finds it; and the edited text never stays in the memo, so the next scan without
    /// the edit finds the site as it is.
    #[test]
    fn a_lowering_memo_changes_no_scan_and_keeps_no_edit() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/sites/mixed");
        let site = Site::open(&root).unwrap();
        let rules = Rules::load(None).unwrap();
        let options = ScanOptions {
            kernel_sources: true,
            ..ScanOptions::default()
        };
        let no_edits = HashMap::new();
        let plain = found(&scan_with(&site, &rules, options));
        assert!(!plain.is_empty());
        let memo = LoweringMemo::default();
        let memoised = |overlay: &HashMap<String, Vec<u8>>| {
            found(&scan_overlay_with(
                &site,
                &rules,
                options,
                overlay,
                Some(&memo),
            ))
        };
        assert_eq!(memoised(&no_edits), plain, "filling the memo");
        assert_eq!(memo.reused(), 0);
        assert_eq!(memoised(&no_edits), plain, "reading the memo");
        let modules = scan_with(&site, &rules, options).modules.len();
        assert_eq!(
            memo.reused(),
            modules,
            "an unchanged site resolves nothing again"
        );

        let file = "sglang/srt/big_module.py";
        let mut text = std::fs::read(root.join(file)).unwrap();
        text.extend_from_slice(
            b"\n\ndef _memo_probe():\n    return torch.cuda.get_device_capability()[0] == 12\n",
        );
        let edit = HashMap::from([(file.to_string(), text)]);
        let edited = found(&scan_overlay(&site, &rules, options, &edit));
        assert!(
            edited.len() > plain.len() && edited.iter().any(|g| g.contains("_memo_probe")),
            "{edited:#?}"
        );
        assert_eq!(memoised(&edit), edited, "an edit over the memo");
        assert_eq!(memoised(&no_edits), plain, "the edit did not stay");
    }

    /// A module whose gates depend on another's text is resolved again when that text is
    /// edited, and only then: `b` reads the flag `a` computes, and an edit of `a` that
    /// changes the flag changes `b`'s gate in a memoised scan as in a fresh one, while `c`,
    /// which reads nothing of `a`, is reused.
    #[test]
    fn an_edit_resolves_again_the_modules_that_read_the_edited_one() {
        let dir = tempfile::tempdir().unwrap();
        let pkg = dir.path().join("pkg");
        std::fs::create_dir(&pkg).unwrap();
        std::fs::write(pkg.join("__init__.py"), "").unwrap();
        let a = "import torch\n\nFAST = torch.cuda.get_device_capability()[0] == 9\n";
        std::fs::write(pkg.join("a.py"), a).unwrap();
        std::fs::write(
            pkg.join("b.py"),
            "from pkg.a import FAST\nfrom pkg.d import run\n\n\ndef pick():\n    if FAST:\n        return 1\n    return 0\n\n\ndef go():\n    return run(FAST)\n",
        )
        .unwrap();
        std::fs::write(
            pkg.join("d.py"),
            "def run(fast):\n    if fast:\n        return 1\n    return 0\n",
        )
        .unwrap();
        std::fs::write(
            pkg.join("c.py"),
            "import torch\n\n\ndef other():\n    if torch.cuda.get_device_capability() >= (10, 0):\n        return 1\n    return 0\n",
        )
        .unwrap();
        let site = Site::open(dir.path()).unwrap();
        let rules = Rules::load(None).unwrap();
        let options = ScanOptions::default();
        let memo = LoweringMemo::default();
        let memoised = |overlay: &HashMap<String, Vec<u8>>| {
            scan_overlay_with(&site, &rules, options, overlay, Some(&memo))
        };
        let before = memoised(&HashMap::new());
        let gate_in = |scan: &ScanResult, file: &str| -> String {
            let gate = scan.gates.iter().find(|g| g.file == file).unwrap();
            gate.predicate.to_string()
        };
        let b_gate = |scan: &ScanResult| gate_in(scan, "pkg/b.py");
        // d.py's parameter is fed FAST by b.py (`gate::feed`).
        let d_gate = |scan: &ScanResult| gate_in(scan, "pkg/d.py");
        assert!(b_gate(&before).contains('9'), "{}", b_gate(&before));
        assert!(d_gate(&before).contains('9'), "{}", d_gate(&before));
        let edit = HashMap::from([(
            "pkg/a.py".to_string(),
            a.replace("== 9", "== 12").into_bytes(),
        )]);
        let reused = memo.reused();
        let after = memoised(&edit);
        assert_eq!(
            found(&after),
            found(&scan_overlay(&site, &rules, options, &edit))
        );
        assert!(b_gate(&after).contains("12"), "{}", b_gate(&after));
        assert!(d_gate(&after).contains("12"), "{}", d_gate(&after));
        // c.py is reused; a.py (edited), b.py (reads a) and d.py (fed by b from a) are not.
        assert_eq!(memo.reused() - reused, 1);
    }
}
