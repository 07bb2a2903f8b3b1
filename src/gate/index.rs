//! The site's Python modules by dotted name, parsed and lowered at most once, on demand.
//! Files the prefilter selected are lowered up front; the rest (an `__init__.py` that only
//! re-exports, say) are lowered the first time name resolution needs them.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use super::chunks::{Skeleton, TopLevelNames, skeleton, skip_plain_bodies};
use super::ir::{Expr, SharedModule};
use super::lower::{lower_definitions, lower_module};
use super::tokens::Tokens;
use crate::syntax::{parse, parse_ranges};

pub struct ModuleFile {
    pub path: PathBuf,
    pub is_package: bool,
    /// What this index answers for the module: the scan's lowering when preloaded, else the
    /// whole parse.
    cell: OnceLock<Option<SharedModule>>,
    /// The whole-file parse, shared by every index made from this one with `sharing` (it
    /// depends on the file alone): `gate::feed` builds an index per round, and each would
    /// parse the same modules again (a sixth of the audit's time on sglang + flashinfer).
    whole: Arc<OnceLock<Option<SharedModule>>>,
    /// What the file binds to single names, with every function body skipped
    /// (`definitions`), shared as `whole` is.
    definitions: Arc<Definitions>,
    /// The names the file defines and assigns at top level, read from its text once (shared
    /// as `whole` is): resolution asks about a class, a function or an assignment the scan's
    /// partial parse left out for every name it cannot find.
    top_level: Arc<OnceLock<TopLevelNames>>,
}

/// A module's definitions read one name at a time (`ModuleIndex::definitions`).
#[derive(Default)]
struct Definitions {
    /// The file's skeleton, lexed once (`None`: it cannot be read).
    skeleton: OnceLock<Option<Skeleton>>,
    /// What each name asked for was found bound to, by name.
    by_name: std::sync::Mutex<rustc_hash::FxHashMap<String, Option<SharedModule>>>,
}

pub struct ModuleIndex {
    root: PathBuf,
    /// Edited text that stands in for files (relative path, `/`): apply's re-resolution
    /// check scans text that is not written anywhere, and a module read whole must see it.
    overlay: Arc<HashMap<String, Vec<u8>>>,
    modules: HashMap<String, ModuleFile>,
    tokens: Tokens,
    /// The scan's modules that call a name with an arch-dependent argument, by the called
    /// name (in module order): where a helper's parameters get device values from other
    /// modules. Set once, after the scan lowered every selected file and before resolving, so
    /// it never depends on what resolution happened to parse.
    callers: OnceLock<HashMap<String, Vec<SharedModule>>>,
    /// The scan's classes by the last name of each of their bases (`CudaPlatformBase(Platform)`
    /// under `Platform`), set with `callers`: where a method called on an interface finds the
    /// subclasses that override it, in any module.
    derived: OnceLock<HashMap<String, Vec<(SharedModule, String)>>>,
}

/// The site-relative file of the dotted module `a.b` in the site at `root`: `a/b.py`, else
/// `a/b/__init__.py`; `None` when neither is a file.
pub fn module_file(root: &Path, module: &str) -> Option<String> {
    let base = module.replace('.', "/");
    [format!("{base}.py"), format!("{base}/__init__.py")]
        .into_iter()
        .find(|relative| root.join(relative).is_file())
}

/// `a/b/c.py` is `a.b.c`; `a/b/__init__.py` is the package `a.b`.
pub fn module_name(relative: &Path) -> Option<(String, bool)> {
    // A non-UTF-8 name is kept (with `\xNN` escapes), not dropped: its gates are reported.
    let text = crate::site::path_text(relative);
    let stem = text.strip_suffix(".py")?;
    let parts: Vec<&str> = stem.split(['/', '\\']).collect();
    match parts.split_last() {
        Some((&"__init__", package)) if !package.is_empty() => Some((package.join("."), true)),
        Some(_) => Some((parts.join("."), false)),
        None => None,
    }
}

impl ModuleIndex {
    /// `files` are paths relative to `root`.
    pub fn new(root: &Path, files: &[PathBuf], tokens: Tokens) -> ModuleIndex {
        let mut modules = HashMap::new();
        for file in files {
            if let Some((name, is_package)) = module_name(file) {
                modules.insert(
                    name,
                    ModuleFile {
                        path: file.clone(),
                        is_package,
                        cell: OnceLock::new(),
                        whole: Arc::new(OnceLock::new()),
                        definitions: Arc::default(),
                        top_level: Arc::new(OnceLock::new()),
                    },
                );
            }
        }
        ModuleIndex {
            root: root.to_path_buf(),
            overlay: Arc::new(HashMap::new()),
            modules,
            tokens,
            callers: OnceLock::new(),
            derived: OnceLock::new(),
        }
    }

    /// The same index reading `overlay`'s text in place of those files (see `overlay`).
    pub fn with_overlay(mut self, overlay: HashMap<String, Vec<u8>>) -> ModuleIndex {
        self.overlay = Arc::new(overlay);
        self
    }

    /// Records which of the scan's modules call which names (see `callers`) and which of
    /// their classes derive from which names (see `derived`).
    pub fn set_callers<'m>(&self, modules: impl IntoIterator<Item = &'m SharedModule>) {
        let mut callers: HashMap<String, Vec<SharedModule>> = HashMap::new();
        let mut derived: HashMap<String, Vec<(SharedModule, String)>> = HashMap::new();
        let mut modules: Vec<&SharedModule> = modules.into_iter().collect();
        modules.sort_by(|a, b| a.module.cmp(&b.module));
        for module in modules {
            for callee in module.calls.keys() {
                callers
                    .entry(callee.clone())
                    .or_default()
                    .push(module.clone());
            }
            let mut classes: Vec<(&String, &Vec<Expr>)> = module.classes.iter().collect();
            classes.sort_by(|a, b| a.0.cmp(b.0));
            for (class, bases) in classes {
                for base in bases {
                    if let Some(name) = last_name(base) {
                        derived
                            .entry(name.to_string())
                            .or_default()
                            .push((module.clone(), class.clone()));
                    }
                }
            }
        }
        let _ = self.callers.set(callers);
        let _ = self.derived.set(derived);
    }

    /// The scan's classes with a base whose last name is `name` (module order, then
    /// qualname): candidates only, the caller checks the base is the class it means.
    pub fn derived_from(&self, name: &str) -> &[(SharedModule, String)] {
        self.derived
            .get()
            .and_then(|d| d.get(name))
            .map_or(&[], Vec::as_slice)
    }

    /// The scan's modules that call `name` with an arch-dependent argument.
    pub fn callers_of(&self, name: &str) -> &[SharedModule] {
        self.callers
            .get()
            .and_then(|c| c.get(name))
            .map_or(&[], Vec::as_slice)
    }

    pub fn file(&self, module: &str) -> Option<&ModuleFile> {
        self.modules.get(module)
    }

    /// Whether the dotted name is a module or package in the site.
    pub fn is_module(&self, module: &str) -> bool {
        self.modules.contains_key(module)
    }

    /// Stores a module lowered by the scan.
    pub fn preload(&self, module: &str, shared: SharedModule) -> Option<SharedModule> {
        let file = self.modules.get(module)?;
        let _ = file.cell.set(Some(shared));
        file.cell.get().cloned().flatten()
    }

    /// A fresh index of the same site (nothing preloaded, no callers) that shares this
    /// one's whole parses, made and to be made.
    pub fn sharing(&self) -> ModuleIndex {
        let modules = self
            .modules
            .iter()
            .map(|(name, file)| {
                let file = ModuleFile {
                    path: file.path.clone(),
                    is_package: file.is_package,
                    cell: OnceLock::new(),
                    whole: file.whole.clone(),
                    definitions: file.definitions.clone(),
                    top_level: file.top_level.clone(),
                };
                (name.clone(), file)
            })
            .collect();
        ModuleIndex {
            root: self.root.clone(),
            overlay: self.overlay.clone(),
            modules,
            tokens: self.tokens.clone(),
            callers: OnceLock::new(),
            derived: OnceLock::new(),
        }
    }

    /// A fresh index of the same site reading `overlay`'s text in place of those files: it
    /// shares this one's whole parses of every other file (this one must have no overlay).
    /// Scans of one site with different edits then answer the same `Arc` for a module
    /// nobody edited, which is what a `ReadLog` compares.
    pub fn sharing_unedited(&self, overlay: HashMap<String, Vec<u8>>) -> ModuleIndex {
        debug_assert!(
            self.overlay.is_empty(),
            "shared parses are of the files on disk"
        );
        let modules = self
            .modules
            .iter()
            .map(|(name, file)| {
                let edited = overlay.contains_key(&crate::site::path_text(&file.path));
                let file = ModuleFile {
                    path: file.path.clone(),
                    is_package: file.is_package,
                    cell: OnceLock::new(),
                    whole: if edited {
                        Arc::new(OnceLock::new())
                    } else {
                        file.whole.clone()
                    },
                    definitions: if edited {
                        Arc::default()
                    } else {
                        file.definitions.clone()
                    },
                    top_level: if edited {
                        Arc::new(OnceLock::new())
                    } else {
                        file.top_level.clone()
                    },
                };
                (name.clone(), file)
            })
            .collect();
        ModuleIndex {
            root: self.root.clone(),
            overlay: Arc::new(overlay),
            modules,
            tokens: self.tokens.clone(),
            callers: OnceLock::new(),
            derived: OnceLock::new(),
        }
    }

    /// The lowered module, parsing it now if nobody has.
    pub fn get(&self, module: &str) -> Option<SharedModule> {
        let file = self.modules.get(module)?;
        file.cell.get_or_init(|| self.whole(module, file)).clone()
    }

    /// The module with every statement lowered: the scan's partial parse is not enough to
    /// follow a class's bases, whose definitions may hold no arch token.
    pub fn get_whole(&self, module: &str) -> Option<SharedModule> {
        let ir = self.get(module)?;
        if !ir.partial {
            return Some(ir);
        }
        let file = self.modules.get(module)?;
        self.whole(module, file)
    }

    /// The whole-file parse alone (made now if no index sharing it has made it), leaving
    /// what this index answers for the module unset: a scan module preloaded later wins.
    pub fn whole_parse(&self, module: &str) -> Option<SharedModule> {
        let file = self.modules.get(module)?;
        self.whole(module, file)
    }

    /// What the module binds to `name` at top level (a function with its signature, a class
    /// with its methods' signatures, an import), bodies possibly left out: the whole parse when
    /// one was made, else a parse of the top-level statements that name it with every function
    /// body skipped (`chunks::Skeleton`), made once per name. `gate::feed` asks this of
    /// hundreds of modules for a few names each: parsing every statement of each cost a
    /// twelfth of the plain audit.
    pub fn definitions(&self, module: &str, name: &str) -> Option<SharedModule> {
        let file = self.modules.get(module)?;
        if let Some(whole) = file.whole.get() {
            return whole.clone();
        }
        let known = file.definitions.by_name.lock().expect("no poisoned lock");
        if let Some(found) = known.get(name) {
            return found.clone();
        }
        drop(known);
        // Made outside the lock: another thread may make the same meanwhile, to the same
        // result, and the first kept wins.
        let found = self.definitions_uncached(module, file, name);
        file.definitions
            .by_name
            .lock()
            .expect("no poisoned lock")
            .entry(name.to_string())
            .or_insert(found)
            .clone()
    }

    fn definitions_uncached(
        &self,
        module: &str,
        file: &ModuleFile,
        name: &str,
    ) -> Option<SharedModule> {
        let skeleton = file
            .definitions
            .skeleton
            .get_or_init(|| self.read(file).map(|bytes| skeleton(&bytes)))
            .as_ref()?;
        let tree = parse_ranges(&skeleton.text, &skeleton.ranges_naming(name));
        // A stub that made a syntax error the file does not have: the whole file.
        if tree.root_node().has_error() {
            return self.whole(module, file);
        }
        Some(Arc::new(lower_definitions(
            &skeleton.text,
            &tree,
            module,
            file.is_package,
            &self.tokens,
        )))
    }

    fn whole(&self, module: &str, file: &ModuleFile) -> Option<SharedModule> {
        file.whole
            .get_or_init(|| self.parse_whole(module, file))
            .clone()
    }

    /// Whether the module defines a top-level function of that name, read from its text
    /// without parsing it (`false` when it cannot tell).
    pub fn has_top_level_def(&self, module: &str, name: &str) -> bool {
        self.top_level(module)
            .is_some_and(|names| names.functions.contains(name))
    }

    /// Whether the module defines the class `name` at top level, read from its text.
    pub fn has_top_level_class(&self, module: &str, name: &str) -> bool {
        self.top_level(module)
            .is_some_and(|names| names.classes.contains(name))
    }

    /// Whether the module assigns `name` at top level, read from its text (`false` when it
    /// cannot tell).
    pub fn has_top_level_assignment(&self, module: &str, name: &str) -> bool {
        let Some(file) = self.modules.get(module) else {
            return false;
        };
        self.top_level(module)
            .is_some_and(|names| names.assigns(|| self.read(file), name))
    }

    /// The names the module defines and assigns at top level, read from its text once (none
    /// when it cannot be read).
    fn top_level(&self, module: &str) -> Option<&TopLevelNames> {
        let file = self.modules.get(module)?;
        Some(file.top_level.get_or_init(|| {
            self.read(file)
                .map(|bytes| TopLevelNames::of(&bytes))
                .unwrap_or_default()
        }))
    }

    /// The module's text: the overlay's edit, else the file's.
    fn read(&self, file: &ModuleFile) -> Option<Vec<u8>> {
        match self.overlay.get(&crate::site::path_text(&file.path)) {
            Some(bytes) => Some(bytes.clone()),
            None => std::fs::read(self.root.join(&file.path)).ok(),
        }
    }

    fn parse_whole(&self, module: &str, file: &ModuleFile) -> Option<SharedModule> {
        let bytes = self.read(file)?;
        // Resolution reads no body of a function without a token: do not parse them (unless
        // that made a syntax error the file does not have).
        let skipped = skip_plain_bodies(&bytes, &self.tokens).and_then(|skipped| {
            let tree = parse_ranges(&skipped.text, &skipped.ranges);
            (!tree.root_node().has_error()).then_some((skipped.text, tree))
        });
        let (bytes, tree) = match skipped {
            Some(parsed) => parsed,
            None => {
                let tree = parse(&bytes);
                (bytes, tree)
            }
        };
        Some(Arc::new(lower_module(
            &bytes,
            &tree,
            module,
            file.is_package,
            &self.tokens,
        )))
    }
}

/// One question a resolution asked the index, with the answer it got. Modules are kept by
/// `Arc` (alive, so a pointer is never reused for another module while the log lives): on
/// another scan of the same site, an answer that is the same `Arc` is the same module.
#[derive(Clone)]
enum Read {
    Get(String, Option<SharedModule>),
    Whole(String, Option<SharedModule>),
    IsModule(String, bool),
    TopLevelDef(String, String, bool),
    TopLevelAssignment(String, String, bool),
    TopLevelClass(String, String, bool),
    Callers(String, Vec<SharedModule>),
    Derived(String, Vec<(SharedModule, String)>),
}

/// `Platform` of `Platform` or `interface.Platform`.
fn last_name(expr: &Expr) -> Option<&str> {
    match expr {
        Expr::Name(name) | Expr::Attr(_, name) => Some(name),
        _ => None,
    }
}

fn same_module(a: &Option<SharedModule>, b: &Option<SharedModule>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => Arc::ptr_eq(a, b),
        (None, None) => true,
        _ => false,
    }
}

impl Read {
    /// Whether `index` answers this question as it was answered.
    fn holds(&self, index: &ModuleIndex) -> bool {
        match self {
            Read::Get(module, got) => same_module(&index.get(module), got),
            Read::Whole(module, got) => same_module(&index.get_whole(module), got),
            Read::IsModule(module, got) => index.is_module(module) == *got,
            Read::TopLevelDef(module, name, got) => index.has_top_level_def(module, name) == *got,
            Read::TopLevelAssignment(module, name, got) => {
                index.has_top_level_assignment(module, name) == *got
            }
            Read::TopLevelClass(module, name, got) => {
                index.has_top_level_class(module, name) == *got
            }
            Read::Callers(name, got) => {
                let now = index.callers_of(name);
                now.len() == got.len() && now.iter().zip(got).all(|(a, b)| Arc::ptr_eq(a, b))
            }
            Read::Derived(name, got) => {
                let now = index.derived_from(name);
                now.len() == got.len()
                    && now
                        .iter()
                        .zip(got)
                        .all(|((a, x), (b, y))| Arc::ptr_eq(a, b) && x == y)
            }
        }
    }
}

/// Everything a resolution read from the index, in order (see `IndexReads`).
#[derive(Clone, Default)]
pub struct ReadLog(Vec<Read>);

impl ReadLog {
    /// Whether every question gets the same answer from `index`: then a resolution that
    /// depends on nothing but its module and these answers comes out the same on it.
    pub fn holds(&self, index: &ModuleIndex) -> bool {
        self.0.iter().all(|read| read.holds(index))
    }
}

/// The index as one resolution reads it, optionally logging every question and answer
/// (`ReadLog`): apply re-resolves a site many times with a few files edited, and a module
/// whose own IR and every answer it read are unchanged resolves to what it did before.
pub struct IndexReads<'a> {
    index: &'a ModuleIndex,
    log: Option<std::sync::Mutex<Vec<Read>>>,
}

impl<'a> IndexReads<'a> {
    pub fn plain(index: &'a ModuleIndex) -> Self {
        IndexReads { index, log: None }
    }

    pub fn logged(index: &'a ModuleIndex) -> Self {
        IndexReads {
            index,
            log: Some(std::sync::Mutex::new(Vec::new())),
        }
    }

    /// What was read so far (empty when not logging).
    pub fn take_log(&self) -> ReadLog {
        ReadLog(
            self.log
                .as_ref()
                .map(|log| std::mem::take(&mut *log.lock().unwrap()))
                .unwrap_or_default(),
        )
    }

    fn note(&self, read: impl FnOnce() -> Read) {
        if let Some(log) = &self.log {
            log.lock().unwrap().push(read());
        }
    }

    pub fn get(&self, module: &str) -> Option<SharedModule> {
        let got = self.index.get(module);
        self.note(|| Read::Get(module.to_string(), got.clone()));
        got
    }

    pub fn get_whole(&self, module: &str) -> Option<SharedModule> {
        let got = self.index.get_whole(module);
        self.note(|| Read::Whole(module.to_string(), got.clone()));
        got
    }

    pub fn is_module(&self, module: &str) -> bool {
        let got = self.index.is_module(module);
        self.note(|| Read::IsModule(module.to_string(), got));
        got
    }

    pub fn has_top_level_def(&self, module: &str, name: &str) -> bool {
        let got = self.index.has_top_level_def(module, name);
        self.note(|| Read::TopLevelDef(module.to_string(), name.to_string(), got));
        got
    }

    pub fn has_top_level_assignment(&self, module: &str, name: &str) -> bool {
        let got = self.index.has_top_level_assignment(module, name);
        self.note(|| Read::TopLevelAssignment(module.to_string(), name.to_string(), got));
        got
    }

    pub fn has_top_level_class(&self, module: &str, name: &str) -> bool {
        let got = self.index.has_top_level_class(module, name);
        self.note(|| Read::TopLevelClass(module.to_string(), name.to_string(), got));
        got
    }

    pub fn callers_of(&self, name: &str) -> &'a [SharedModule] {
        let got = self.index.callers_of(name);
        self.note(|| Read::Callers(name.to_string(), got.to_vec()));
        got
    }

    pub fn derived_from(&self, name: &str) -> &'a [(SharedModule, String)] {
        let got = self.index.derived_from(name);
        self.note(|| Read::Derived(name.to_string(), got.to_vec()));
        got
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `gate::feed` reads of a module for one top-level name: whether it defines it,
    /// what it imports as it, and each function and class under it with its parameters.
    fn bound_to(ir: &crate::gate::ir::ModuleIr, name: &str) -> String {
        let under = |qualname: &str| {
            qualname == name
                || qualname
                    .strip_prefix(name)
                    .is_some_and(|rest| rest.starts_with('.'))
        };
        let mut lines = vec![format!("import {:?}", ir.imports.get(name))];
        for function in ir.functions.iter().filter(|f| under(&f.qualname)) {
            let params: Vec<&str> = function.params.iter().map(|p| p.name.as_str()).collect();
            lines.push(format!(
                "def {} class={:?} top={} ({})",
                function.qualname,
                function.class,
                function.parent.is_none(),
                params.join(", ")
            ));
        }
        let mut classes: Vec<&String> = ir.classes.keys().filter(|c| under(c)).collect();
        classes.sort();
        lines.extend(classes.iter().map(|c| format!("class {c}")));
        lines.join("\n")
    }

    /// Reading one name's statements finds what reading every statement of the skeleton
    /// finds for that name: on every test-data file, for every name bound at top level
    /// there, and for a name bound nowhere.
    #[test]
    fn the_definitions_of_one_name_are_those_a_whole_skeleton_has() {
        let tokens = Tokens::new(["is_sm", "capabilit"]);
        let mut compared = 0;
        for bytes in crate::test_data::python_files() {
            let file = skeleton(&bytes);
            let tree = parse_ranges(&file.text, &file.ranges);
            if tree.root_node().has_error() {
                continue; // `definitions` reads such a file whole
            }
            let all = lower_definitions(&file.text, &tree, "pkg.m", false, &tokens);
            let mut names: Vec<&str> = all
                .functions
                .iter()
                .map(|f| f.qualname.as_str())
                .chain(all.classes.keys().map(String::as_str))
                .chain(all.imports.keys().map(String::as_str))
                .map(|q| q.split('.').next().unwrap_or(q))
                .collect();
            names.sort_unstable();
            names.dedup();
            names.push("name_bound_nowhere");
            for name in names {
                let tree = parse_ranges(&file.text, &file.ranges_naming(name));
                if tree.root_node().has_error() {
                    continue; // read whole too
                }
                let one = lower_definitions(&file.text, &tree, "pkg.m", false, &tokens);
                assert_eq!(
                    bound_to(&one, name),
                    bound_to(&all, name),
                    "`{name}` in:\n{}",
                    String::from_utf8_lossy(&bytes)
                );
                compared += 1;
            }
        }
        assert!(compared > 500, "only {compared} names compared");
    }

    #[test]
    fn a_module_read_whole_reads_the_overlay_in_place_of_the_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("pkg")).unwrap();
        std::fs::write(dir.path().join("pkg/m.py"), "def before():\n    pass\n").unwrap();
        let files = vec![PathBuf::from("pkg/m.py")];
        let tokens = Tokens::new(["is_sm"]);
        let plain = ModuleIndex::new(dir.path(), &files, tokens.clone());
        let edited = ModuleIndex::new(dir.path(), &files, tokens).with_overlay(HashMap::from([(
            "pkg/m.py".to_string(),
            b"def after():\n    pass\n".to_vec(),
        )]));
        assert!(plain.has_top_level_def("pkg.m", "before"));
        assert!(!edited.has_top_level_def("pkg.m", "before"));
        assert!(edited.has_top_level_def("pkg.m", "after"));
        let names = |index: &ModuleIndex| -> Vec<String> {
            let ir = index.whole_parse("pkg.m").unwrap();
            ir.functions.iter().map(|f| f.qualname.clone()).collect()
        };
        assert_eq!(names(&plain), vec!["before"]);
        assert_eq!(names(&edited), vec!["after"]);
        // An index made from the edited one shares its parses, and so its text.
        assert_eq!(names(&edited.sharing()), vec!["after"]);
    }

    #[test]
    fn module_names_from_paths() {
        assert_eq!(
            module_name(Path::new("sglang/srt/utils/common.py")),
            Some(("sglang.srt.utils.common".into(), false))
        );
        assert_eq!(
            module_name(Path::new("sglang/srt/utils/__init__.py")),
            Some(("sglang.srt.utils".into(), true))
        );
        assert_eq!(
            module_name(Path::new("six.py")),
            Some(("six".into(), false))
        );
        assert_eq!(module_name(Path::new("x.so")), None);
    }
}
