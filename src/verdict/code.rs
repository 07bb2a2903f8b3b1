//! Reading the code a gate guards, on demand: the gated branch of a gate, the bodies of the
//! functions it calls, and enough of each module's imports to follow a call into the site.
//! The audit's IR does not keep branch bodies (it is built for predicates), so this reads the
//! files a link search visits again, and parses only the statements it needs: the imports,
//! and the one definition or statement that holds a gate or a callee. No tree is kept.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use crate::syntax::{Node, Tree};

use super::site_text::SiteText;
use crate::gate::chunks::{definition_name, is_big_block, split_definition, top_level_statements};
use crate::gate::index::module_name;
use crate::scan::Gate;
use crate::site::site_path;
use crate::syntax::{line_starts_of, parse_ranges_in_lines};

/// What a piece of code can lead to: the functions it calls (as written, `a.b.c`) and the
/// short string constants it returns or assigns (backend names such as `"mnnvl"`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Facts {
    pub calls: Vec<String>,
    pub strings: Vec<String>,
    /// Flags the code sets (`self.enable_x = True`, `FLAG = True`, `os.environ["X"] = "1"`):
    /// the reads of each are followed too.
    pub stores: Vec<Store>,
    /// The branch starts by raising: the gate guards an error, and the path it protects is
    /// the code after it (`if not (is_sm90 or is_sm100): raise ...`).
    pub raises: bool,
    /// The exit is an early `return` (nothing, `None` or `False`), not a `raise`.
    pub returns_early: bool,
    /// The exit is a `return` of nothing (or `None`) and the code after it returns no value
    /// either: the function is a procedure, so its callers go on whether or not the gate
    /// holds, and a call of it is neither a check nor the read of a flag.
    pub returns_nothing: bool,
    /// Calls met only under a condition of their own inside this code (an `if` arm, a
    /// conditional expression, an `except`, the right side of `and`/`or`): alternatives the
    /// code picks on some other condition, not what it always runs.
    pub conditional_calls: BTreeSet<String>,
    /// The same for the strings.
    pub conditional_strings: BTreeSet<String>,
    /// For a call met only under conditions: the conditions every occurrence of it is under
    /// (byte ranges of the test in this file, and whether it runs where the test fails).
    pub call_conditions: HashMap<String, Vec<Condition>>,
    /// The first thing in this code, besides calls, that a kernel search cannot see through,
    /// in words: a call of a computed callee (`ops[name](x)`), a store into an object, an
    /// item or a global, code too big to read whole. A search that met one is no proof that
    /// the code reaches no kernel.
    pub opaque: Option<String>,
    /// Where this code hands a value out of its function (`return <value>`, `yield`).
    pub returns_value: Option<u32>,
    /// Where it binds a plain name (a module global, read in module-level code).
    pub binds_name: Option<u32>,
    /// The plain names it binds (`def` and `class` included), for telling whether a
    /// function declares one `global`.
    pub bound: BTreeSet<String>,
    /// Each binding statement's names and the names its value reads (`*`: any, for a
    /// definition whose body was not read): how a value moves from name to name.
    pub flows: Vec<(Vec<String>, BTreeSet<String>)>,
    /// The names the values it returns or yields read.
    pub returned_reads: BTreeSet<String>,
    /// Where it leaves its block early (`return`, `raise`, `break`, `continue`, an `assert`
    /// that may fail): what it skips is decided too.
    pub leaves: Option<u32>,
    /// The functions it defines inside itself (`def _per_expert(...)` in an `__init__`), by
    /// name, with the byte where each definition starts (`def`, or `async` before it): a
    /// call of one runs that body.
    pub local_functions: Vec<(String, usize)>,
}

/// The test of a branch a call is under: its byte range, and `negated` where the call runs
/// when the test fails (an `else`, a later `elif`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Condition {
    pub start: usize,
    pub end: usize,
    pub negated: bool,
}

impl Facts {
    /// Records a call under these tests: the conditions kept are those of every occurrence.
    fn add_call_under(&mut self, call: String, conditional: bool, conditions: &[Condition]) {
        let seen = self.calls.contains(&call);
        if !conditional {
            self.conditional_calls.remove(&call);
        }
        match self.call_conditions.get_mut(&call) {
            Some(kept) => kept.retain(|c| conditions.contains(c)),
            None if !seen && !conditions.is_empty() => {
                self.call_conditions
                    .insert(call.clone(), conditions.to_vec());
            }
            None => {}
        }
        if !seen {
            if conditional {
                self.conditional_calls.insert(call.clone());
            }
            self.calls.push(call);
        }
    }

    fn add_string(&mut self, word: String, conditional: bool) {
        if !conditional {
            self.conditional_strings.remove(&word);
        }
        if !self.strings.contains(&word) {
            if conditional {
                self.conditional_strings.insert(word.clone());
            }
            self.strings.push(word);
        }
    }

    /// Adds what `more` leads to (statements that run one after the other).
    pub(crate) fn extend(&mut self, more: Facts) {
        for call in more.calls {
            let conditional = more.conditional_calls.contains(&call);
            let conditions = more.call_conditions.get(&call).cloned().unwrap_or_default();
            self.add_call_under(call, conditional, &conditions);
        }
        for word in more.strings {
            let conditional = more.conditional_strings.contains(&word);
            self.add_string(word, conditional);
        }
        for store in more.stores {
            if !self.stores.contains(&store) {
                self.stores.push(store);
            }
        }
        self.opaque = self.opaque.take().or(more.opaque);
        self.returns_value = self.returns_value.or(more.returns_value);
        self.binds_name = self.binds_name.or(more.binds_name);
        self.bound.extend(more.bound);
        self.flows.extend(more.flows);
        self.returned_reads.extend(more.returned_reads);
        self.leaves = self.leaves.or(more.leaves);
        self.local_functions.extend(more.local_functions);
    }

    fn note_opaque(&mut self, why: impl FnOnce() -> String) {
        if self.opaque.is_none() {
            self.opaque = Some(why());
        }
    }
}

/// A flag a path can set, by how other code reads it back.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FlagKey {
    /// An attribute (`self.enable_x`, `server_args.enable_x`, a dataclass field): read as
    /// `.enable_x`. `path` is the file that stores it (empty until the store's module is
    /// known): a `self.enable_x` in another file that stores its own is another class's.
    Attr { name: String, path: String },
    /// A module global, read in its module and where it is imported from there.
    Global { module: String, name: String },
    /// An environment variable: `os.environ["X"]`, `os.environ.get("X")`, `os.getenv("X")`, `envs.X`.
    Env(String),
    /// A function or method that returns the flag: its calls are reads. `path` is the file
    /// that defines it: where several files define the name, a call reads this definition
    /// only in that file or where the name is imported from it.
    Func { name: String, path: String },
    /// A function that raises unless the gate does not hold: its callers go on past each call
    /// only where it passes. The call's value is the function's result, not the flag.
    Exit { name: String, path: String },
}

impl FlagKey {
    /// The identifier the site is searched for.
    pub fn name(&self) -> &str {
        match self {
            FlagKey::Attr { name: n, .. }
            | FlagKey::Env(n)
            | FlagKey::Func { name: n, .. }
            | FlagKey::Exit { name: n, .. } => n,
            FlagKey::Global { name, .. } => name,
        }
    }

    pub fn words(&self) -> String {
        match self {
            FlagKey::Attr { name, .. } => format!("attribute .{name}"),
            FlagKey::Global { module, name } => format!("global {module}.{name}"),
            FlagKey::Env(n) => format!("environment variable {n}"),
            FlagKey::Func { name, .. } => format!("the calls of {name}()"),
            FlagKey::Exit { name, .. } => format!("the code after the calls of {name}()"),
        }
    }
}

/// One flag set on a path, where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Store {
    pub key: FlagKey,
    pub line: u32,
}

/// Largest branch or body read for facts; bigger ones are not followed.
const MAX_BODY_BYTES: usize = 32 * 1024;
const MAX_FACTS: usize = 64;
/// Top-level `try:`/`if` blocks up to this size are read for imports.
const MAX_IMPORT_BLOCK_BYTES: usize = 4 * 1024;

/// One module: its bytes, its imports and its top-level definitions.
pub struct Parsed {
    pub module: String,
    pub is_package: bool,
    pub src: Arc<Vec<u8>>,
    /// Local name → (module, member): `from m import x as y` gives y → (m, Some(x)),
    /// `import a.b as c` gives c → (a.b, None), `import a.b` gives a → (a, None).
    imports: OnceLock<HashMap<String, (String, Option<String>)>>,
    /// The top-level statements that hold imports; parsed on first use of `imports()`.
    import_ranges: Vec<(usize, usize)>,
    /// Top-level `def`/`class` name → byte range of the statement.
    pub defs: HashMap<String, (usize, usize)>,
    /// Byte ranges of the top-level statements.
    pub(crate) statements: Vec<(usize, usize)>,
    /// Byte offset of each line's start, computed on first use.
    line_starts: OnceLock<std::sync::Arc<[u32]>>,
    /// `split_definition` of the definitions split so far, by range: the gates and flag reads
    /// in one big class or function each ask for the same splits.
    splits: Mutex<HashMap<(usize, usize), Option<Split>>>,
}

/// A definition's header and body statements, as byte ranges (`split_definition`).
pub(crate) type Split = Arc<[(usize, usize)]>;

impl Parsed {
    fn line_starts(&self) -> &std::sync::Arc<[u32]> {
        self.line_starts.get_or_init(|| line_starts_of(&self.src))
    }

    /// The header and body statements of the definition at `range` (`split_definition`),
    /// split once.
    pub(crate) fn split(&self, range: (usize, usize)) -> Option<Split> {
        if let Some(known) = self.splits.lock().expect("splits").get(&range) {
            return known.clone();
        }
        let indent = self.src[range.0..]
            .iter()
            .take_while(|c| **c == b' ')
            .count();
        let parts: Option<Split> = split_definition(&self.src, range, indent).map(Arc::from);
        self.splits
            .lock()
            .expect("splits")
            .insert(range, parts.clone());
        parts
    }

    /// These byte ranges of the module parsed (`lower::parse_ranges`), rows from the
    /// module's line index: the verdicts parse a piece of a file per gate.
    pub(crate) fn parse(&self, ranges: &[(usize, usize)]) -> Tree {
        parse_ranges_in_lines(&self.src, ranges, self.line_starts())
    }

    /// The byte offset of a 1-based line and character column.
    pub fn byte_of(&self, line: u32, column: u32) -> Option<usize> {
        let starts = self.line_starts();
        let start = *starts.get((line as usize).checked_sub(1)?)? as usize;
        let line_end =
            memchr::memchr(b'\n', &self.src[start..]).map_or(self.src.len(), |i| start + i);
        let chars = column.saturating_sub(1) as usize;
        // Where the characters before the column are ASCII, each is one byte.
        if self.src[start..line_end]
            .get(..chars)
            .is_some_and(<[u8]>::is_ascii)
        {
            return Some(start + chars);
        }
        let offset: usize = String::from_utf8_lossy(&self.src[start..line_end])
            .chars()
            .take(chars)
            .map(char::len_utf8)
            .sum();
        Some(start + offset)
    }

    /// The bytes a gate spans.
    pub fn gate_bytes(&self, gate: &Gate) -> Option<(usize, usize)> {
        Some((
            self.byte_of(gate.line, gate.column)?,
            self.byte_of(gate.end_line, gate.end_column)?,
        ))
    }

    /// Local name → (module, member), read from the import statements the first time it is
    /// needed: most gate files only need their gated branch.
    pub fn imports(&self) -> &HashMap<String, (String, Option<String>)> {
        self.imports.get_or_init(|| {
            read_imports(
                &self.src,
                &self.import_ranges,
                &self.module,
                self.is_package,
            )
        })
    }
}

/// The site's modules, found and indexed on first use.
pub struct Code {
    root: PathBuf,
    cache: Mutex<HashMap<String, Option<Arc<Parsed>>>>,
    /// `module:function` → the facts of its body: many gates reach the same callees.
    bodies: Mutex<HashMap<String, Option<Arc<Facts>>>>,
    /// Whether a module name has a file: asked for every dotted prefix of every call.
    exists: Mutex<HashMap<String, bool>>,
    /// The site's files already read (`SiteText`), by site-relative path: a module among
    /// them is not read again.
    read: HashMap<String, Arc<Vec<u8>>>,
}

impl Code {
    pub fn new(root: &Path) -> Code {
        Code {
            root: root.to_path_buf(),
            cache: Mutex::new(HashMap::new()),
            bodies: Mutex::new(HashMap::new()),
            exists: Mutex::new(HashMap::new()),
            read: HashMap::new(),
        }
    }

    /// `Code` over the files `text` holds, which it takes from there instead of reading.
    pub fn with_text(root: &Path, text: &SiteText) -> Code {
        Code {
            read: text
                .files
                .iter()
                .map(|f| (f.path.clone(), f.src.clone()))
                .collect(),
            ..Code::new(root)
        }
    }

    /// The module of a callee and the facts of its body, each read once.
    pub fn callee(&self, module: &str, function: &str) -> Option<(Arc<Parsed>, Arc<Facts>)> {
        let callee = self.module(module)?;
        let key = format!("{module}:{function}");
        if let Some(hit) = self.bodies.lock().expect("bodies").get(&key) {
            return Some((callee, hit.clone()?));
        }
        let facts = body_facts(&callee, function).map(Arc::new);
        self.bodies
            .lock()
            .expect("bodies")
            .insert(key, facts.clone());
        Some((callee, facts?))
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The module of a definition found by offset (a method, a nested function) and the
    /// facts of its body, each read once.
    pub fn callee_at(&self, module: &str, offset: usize) -> Option<(Arc<Parsed>, Arc<Facts>)> {
        let callee = self.module(module)?;
        let key = format!("{module}@{offset}");
        if let Some(hit) = self.bodies.lock().expect("bodies").get(&key) {
            return Some((callee, hit.clone()?));
        }
        let facts = body_facts_at(&callee, offset).map(Arc::new);
        self.bodies
            .lock()
            .expect("bodies")
            .insert(key, facts.clone());
        Some((callee, facts?))
    }

    /// `a.b` is `a/b.py` or `a/b/__init__.py`, never through a symlink that leaves the site.
    /// Also the site-relative path.
    fn file_of(&self, module: &str) -> Option<(PathBuf, bool, String)> {
        let base = module.replace('.', "/");
        [
            (format!("{base}.py"), false),
            (format!("{base}/__init__.py"), true),
        ]
        .into_iter()
        .find_map(|(relative, is_package)| {
            site_path(&self.root, &relative)
                .ok()
                .map(|path| (path, is_package, relative))
        })
    }

    pub fn has_module(&self, module: &str) -> bool {
        if let Some(hit) = self.cache.lock().expect("cache").get(module) {
            return hit.is_some();
        }
        if let Some(&known) = self.exists.lock().expect("exists").get(module) {
            return known;
        }
        let found = self.file_of(module).is_some();
        self.exists
            .lock()
            .expect("exists")
            .insert(module.to_string(), found);
        found
    }

    /// A module, kept for later lookups (callees are visited again and again).
    pub fn module(&self, module: &str) -> Option<Arc<Parsed>> {
        if let Some(hit) = self.cache.lock().expect("cache").get(module) {
            return hit.clone();
        }
        let parsed = self.load(module).map(Arc::new);
        self.cache
            .lock()
            .expect("cache")
            .insert(module.to_string(), parsed.clone());
        parsed
    }

    /// A module read once and not kept (the file of a group of gates).
    pub fn load(&self, module: &str) -> Option<Parsed> {
        if let Some(Some(hit)) = self.cache.lock().expect("cache").get(module) {
            return Some(Parsed {
                module: hit.module.clone(),
                is_package: hit.is_package,
                src: hit.src.clone(),
                imports: hit.imports.clone(),
                import_ranges: hit.import_ranges.clone(),
                defs: hit.defs.clone(),
                statements: hit.statements.clone(),
                line_starts: hit.line_starts.clone(),
                splits: Mutex::default(),
            });
        }
        let (path, is_package, relative) = self.file_of(module)?;
        let src = match self.read.get(&relative) {
            Some(src) => src.clone(),
            None => Arc::new(std::fs::read(path).ok()?),
        };
        Some(index_module(module, is_package, src))
    }

    /// The module a site-relative file is.
    pub fn module_of_file(file: &str) -> Option<String> {
        module_name(Path::new(file)).map(|(name, _)| name)
    }
}

/// Indexes a module from its top-level statements: definitions by their header line, and
/// where the imports are (statements, and small top-level blocks that hold some).
fn index_module(module: &str, is_package: bool, src: Arc<Vec<u8>>) -> Parsed {
    let mut defs = HashMap::new();
    let mut import_ranges = Vec::new();
    let statements = top_level_statements(&src);
    for &range in &statements {
        let head = first_code_line(&src[range.0..range.1]);
        if let Some((name, _)) = definition_name(&src, range) {
            defs.insert(name.to_string(), range);
        } else if is_import(head)
            || ((head.starts_with("try:") || head.starts_with("if "))
                && range.1 - range.0 <= MAX_IMPORT_BLOCK_BYTES
                && memchr::memmem::find(&src[range.0..range.1], b"import ").is_some())
        {
            import_ranges.push(range);
        }
    }
    Parsed {
        module: module.to_string(),
        is_package,
        src,
        imports: OnceLock::new(),
        import_ranges,
        defs,
        statements,
        line_starts: OnceLock::new(),
        splits: Mutex::default(),
    }
}

/// Parses only the import statements.
fn read_imports(
    src: &[u8],
    import_ranges: &[(usize, usize)],
    module: &str,
    is_package: bool,
) -> HashMap<String, (String, Option<String>)> {
    let mut imports = HashMap::new();
    if import_ranges.is_empty() {
        return imports;
    }
    let tree = parse_ranges_in_lines(src, import_ranges, &line_starts_of(src));
    let mut stack = vec![(tree.root_node(), 0)];
    while let Some((node, depth)) = stack.pop() {
        let mut cursor = node.walk();
        for child in node.named_children(&mut cursor) {
            match child.kind() {
                "import_statement" | "import_from_statement" => {
                    read_import(child, src, module, is_package, &mut imports)
                }
                "if_statement" | "try_statement" | "block" | "else_clause" | "except_clause"
                    if depth < 3 =>
                {
                    stack.push((child, depth + 1))
                }
                _ => {}
            }
        }
    }
    imports
}

fn is_import(line: &str) -> bool {
    line.starts_with("import ") || line.starts_with("from ")
}

/// The first line of a statement that is not a decorator or a comment.
fn first_code_line(statement: &[u8]) -> &str {
    std::str::from_utf8(statement)
        .unwrap_or("")
        .lines()
        .map(str::trim_start)
        .find(|l| !l.is_empty() && !l.starts_with('@') && !l.starts_with('#'))
        .unwrap_or("")
}

fn read_import(
    node: Node,
    src: &[u8],
    module: &str,
    is_package: bool,
    imports: &mut HashMap<String, (String, Option<String>)>,
) {
    let mut cursor = node.walk();
    if node.kind() == "import_statement" {
        for name in node.children_by_field_name("name", &mut cursor) {
            match name.kind() {
                "aliased_import" => {
                    let (Some(dotted), Some(alias)) = (
                        name.child_by_field_name("name"),
                        name.child_by_field_name("alias"),
                    ) else {
                        continue;
                    };
                    imports.insert(text(alias, src).into(), (text(dotted, src).into(), None));
                }
                _ => {
                    let dotted = text(name, src);
                    let head = dotted.split('.').next().unwrap_or(dotted);
                    imports.insert(head.into(), (head.into(), None));
                }
            }
        }
        return;
    }
    let Some(from) = node.child_by_field_name("module_name") else {
        return;
    };
    let from = absolute_module(text(from, src), module, is_package);
    for name in node.children_by_field_name("name", &mut cursor) {
        let (member, local) = match name.kind() {
            "aliased_import" => match (
                name.child_by_field_name("name"),
                name.child_by_field_name("alias"),
            ) {
                (Some(n), Some(a)) => (text(n, src), text(a, src)),
                _ => continue,
            },
            _ => (text(name, src), text(name, src)),
        };
        imports.insert(local.into(), (from.clone(), Some(member.into())));
    }
    // `from .parallel_state import *`: kept under a key no identifier can be (`*` and the
    // module), for `star_imports`.
    let mut cursor = node.walk();
    if node
        .named_children(&mut cursor)
        .any(|child| child.kind() == "wildcard_import")
    {
        imports.insert(format!("*{from}"), (from, None));
    }
}

/// The modules a module imports everything from (`from x import *`), from its imports.
pub(crate) fn star_imports(
    imports: &HashMap<String, (String, Option<String>)>,
) -> impl Iterator<Item = &str> {
    imports
        .iter()
        .filter(|(local, _)| local.starts_with('*'))
        .map(|(_, (from, _))| from.as_str())
}

/// `..x` inside `a.b.c` (a module, not a package) is `a.x`.
fn absolute_module(from: &str, module: &str, is_package: bool) -> String {
    let dots = from.chars().take_while(|&c| c == '.').count();
    if dots == 0 {
        return from.to_string();
    }
    let mut parts: Vec<&str> = module.split('.').collect();
    let drop = if is_package { dots - 1 } else { dots };
    parts.truncate(parts.len().saturating_sub(drop));
    let rest = &from[dots..];
    if !rest.is_empty() {
        parts.push(rest);
    }
    parts.join(".")
}

pub(crate) fn text<'a>(node: Node, src: &'a [u8]) -> &'a str {
    std::str::from_utf8(&src[node.byte_range()]).unwrap_or("")
}

/// What linking one file's gates reuses: where its lines start, and the parsed statements
/// around its gates (a function with ten gates is parsed once, not ten times). Kept only while
/// that file's gates are linked.
#[derive(Default)]
pub struct FileCache {
    line_starts: Option<std::sync::Arc<[u32]>>,
    trees: HashMap<Vec<(usize, usize)>, Tree>,
}

impl FileCache {
    /// The syntax tree of these ranges of the file, parsed the first time they are asked for.
    pub(super) fn tree(&mut self, src: &[u8], ranges: Vec<(usize, usize)>) -> &Tree {
        let starts = self.line_starts.get_or_insert_with(|| line_starts_of(src));
        self.trees
            .entry(ranges)
            .or_insert_with_key(|ranges| parse_ranges_in_lines(src, ranges, starts))
    }
}

/// The code a gate guards: the body of the `if`/`elif`/`while` whose condition it is, or the
/// value a conditional expression picks when it holds. Other gates (flags, returns) guard
/// code elsewhere and give `None`.
pub fn gated_branch(parsed: &Parsed, gate: &Gate, cache: &mut FileCache) -> Option<Facts> {
    let src = &parsed.src;
    let (start, end) = parsed.gate_bytes(gate)?;
    let Enclosing { around, after, .. } = enclosing_ranges(parsed, start);
    // Most branches are read from the statement alone; only an error exit needs the
    // statements after it, parsed then.
    let (_, branch) = branch_of(cache.tree(src, around.clone()), start, end)?;
    let returns_early = starts_with_falsy_return(branch, src);
    let bare_return = returns_early && starts_with_bare_return(branch, src);
    if !(returns_early || ends_with_raise(branch)) {
        return Some(facts(branch, src));
    }
    let tree = cache.tree(src, [around, after].concat());
    let (parent, _) = branch_of(tree, start, end)?;
    let mut found = raise_guarded(parent, src)?;
    found.returns_early = returns_early;
    found.returns_nothing = bare_return && !value_returned_after(parent, src);
    Some(found)
}

/// The value the branch's first statement returns: `None` when it is no `return`,
/// `Some(None)` for a bare `return`.
fn first_return(branch: Node) -> Option<Option<Node>> {
    let mut cursor = branch.walk();
    let first = branch
        .named_children(&mut cursor)
        .find(|n| n.kind() != "comment")?;
    (first.kind() == "return_statement").then(|| first.named_child(0))
}

fn is_none(value: Node, src: &[u8]) -> bool {
    value.kind() == "none" || text(value, src) == "None"
}

/// The branch starts with `return` or `return None`.
fn starts_with_bare_return(branch: Node, src: &[u8]) -> bool {
    first_return(branch).is_some_and(|value| value.is_none_or(|v| is_none(v, src)))
}

/// Whether a statement after `statement`, up to the end of its function, returns a value
/// (other than `None`); nested definitions return for themselves.
fn value_returned_after(statement: Node, src: &[u8]) -> bool {
    let mut current = statement;
    loop {
        let mut next = current.next_named_sibling();
        while let Some(sibling) = next {
            if returns_a_value(sibling, src) {
                return true;
            }
            next = sibling.next_named_sibling();
        }
        let Some(parent) = current.parent() else {
            return false;
        };
        if matches!(
            parent.kind(),
            "function_definition" | "class_definition" | "module" | "lambda"
        ) {
            return false;
        }
        current = parent;
    }
}

fn returns_a_value(node: Node, src: &[u8]) -> bool {
    match node.kind() {
        "function_definition" | "class_definition" | "lambda" | "decorated_definition" => false,
        "return_statement" => node.named_child(0).is_some_and(|v| !is_none(v, src)),
        _ => {
            let mut cursor = node.walk();
            node.named_children(&mut cursor)
                .any(|child| returns_a_value(child, src))
        }
    }
}

/// The branch starts with `return`, `return None` or `return False`: an early exit, so the
/// code after it runs only where the condition does not hold (`if cap not in (...): return
/// False` in a support check).
fn starts_with_falsy_return(branch: Node, src: &[u8]) -> bool {
    first_return(branch)
        .is_some_and(|value| value.is_none_or(|v| v.kind() == "false" || is_none(v, src)))
}

/// The code after a gated branch that falls through (it neither returns, raises, breaks nor
/// continues): a branch that only sets values (`q_stage = 1`, `tile = 128`) configures what
/// runs next, so the statements after its `if`, in its block and in the blocks around it up
/// to the function, are what the gate really decides. Nested branches there are alternatives.
pub fn code_after_branch(parsed: &Parsed, gate: &Gate, cache: &mut FileCache) -> Option<Facts> {
    let src = &parsed.src;
    let (start, end) = parsed.gate_bytes(gate)?;
    let Enclosing {
        around,
        after,
        after_cut,
    } = enclosing_ranges(parsed, start);
    let tree = cache.tree(src, [around, after].concat());
    let (parent, branch) = branch_of(tree, start, end)?;
    let picks_value = parent.kind() == "conditional_expression";
    if !(picks_value || matches!(parent.kind(), "if_statement" | "elif_clause")) || exits(branch) {
        return None;
    }
    let mut found = code_after_statement(parent, src);
    if after_cut {
        found.note_opaque(|| {
            format!(
                "the code after line {} is in a long function, not read",
                parent.start_position().row + 1
            )
        });
    }
    Some(found)
}

/// What runs after the statement that holds `node` (an `if`, an `elif`, a conditional
/// expression's statement): the statements after it in its block, then after the block's own
/// statement, up to the function (not past a `return` or `raise`), within `MAX_BODY_BYTES`.
pub(crate) fn code_after_statement(node: Node, src: &[u8]) -> Facts {
    let mut found = Facts::default();
    let mut budget = MAX_BODY_BYTES;
    let mut statement = node;
    loop {
        // Up to the statement that stands in a block (an `elif` stands in its `if`).
        while let Some(up) = statement.parent() {
            if matches!(up.kind(), "block" | "module") {
                break;
            }
            if matches!(up.kind(), "function_definition" | "class_definition") {
                return found;
            }
            statement = up;
        }
        let mut next = statement.next_named_sibling();
        while let Some(sibling) = next {
            next = sibling.next_named_sibling();
            if matches!(
                sibling.kind(),
                "function_definition" | "class_definition" | "decorated_definition" | "comment"
            ) {
                continue;
            }
            let size = sibling.byte_range().len();
            if size > budget {
                found.note_opaque(|| {
                    format!(
                        "the code after line {} is over {} KiB, read in part",
                        sibling.start_position().row + 1,
                        MAX_BODY_BYTES / 1024
                    )
                });
                return found;
            }
            budget -= size;
            found.extend(facts(sibling, src));
            if exits(sibling) {
                return found;
            }
        }
        // Out of this block: the code after the statement that holds it runs next.
        let Some(block) = statement.parent().filter(|b| b.kind() == "block") else {
            return found;
        };
        let Some(owner) = block.parent() else {
            return found;
        };
        if matches!(owner.kind(), "function_definition" | "class_definition") {
            return found;
        }
        statement = owner;
    }
}

/// Whether the definition at `start` (its `def` keyword or its first decorator) carries one of
/// `decorators` (`triton.jit`): read from the decorator lines right above the `def`.
pub fn decorated_with(src: &[u8], start: usize, decorators: &[String]) -> bool {
    let limit = src.len().min(start + 8192);
    let Some(def_at) = find_def(&src[start..limit]).map(|i| start + i) else {
        return false;
    };
    let line_start = |at: usize| memchr::memrchr(b'\n', &src[..at]).map_or(0, |i| i + 1);
    let def_line = line_start(def_at);
    let indent = |line: &[u8]| line.iter().take_while(|b| **b == b' ').count();
    let def_indent = indent(&src[def_line..def_at]);
    // Back from the `def` over its decorators; lines indented deeper (a decorator's arguments
    // over several lines) count only once an `@` line above them confirms them.
    let mut confirmed = def_line;
    let mut at = def_line;
    for _ in 0..200 {
        if at == 0 {
            break;
        }
        let previous = line_start(at - 1);
        let line = &src[previous..at - 1];
        let trimmed = line.trim_ascii_start();
        if trimmed.is_empty() {
            break;
        }
        let depth = indent(line);
        if depth == def_indent && trimmed.starts_with(b"@") {
            confirmed = previous;
        } else if !(depth > def_indent
            || depth == def_indent && matches!(trimmed[0], b')' | b']' | b'}'))
        {
            break;
        }
        at = previous;
    }
    // The walk must reach the definition's own first line: a class's docstring or body can
    // hold a decorated `def` (triton's `static_range` documents `@triton.jit def kernel`).
    if confirmed > line_start(start) {
        return false;
    }
    let region = &src[confirmed..def_at];
    decorators.iter().any(|name| {
        let marker = format!("@{name}");
        memchr::memmem::find_iter(region, marker.as_bytes()).any(|i| {
            let after = region.get(i + marker.len()).copied();
            !after.is_some_and(|b| b == b'_' || b == b'.' || b.is_ascii_alphanumeric())
        })
    })
}

/// The offset of the first `def ` keyword that starts a line's code.
fn find_def(text: &[u8]) -> Option<usize> {
    memchr::memmem::find_iter(text, b"def ").find(|&i| {
        let lead = &text[memchr::memrchr(b'\n', &text[..i]).map_or(0, |j| j + 1)..i];
        lead.iter().all(|b| *b == b' ') || lead.trim_ascii() == b"async"
    })
}

/// Whether a block (or a statement) ends by leaving it: `return`, `raise`, `break`, `continue`.
fn exits(node: Node) -> bool {
    let last = if node.kind() == "block" {
        let mut cursor = node.walk();
        let children: Vec<Node> = node
            .named_children(&mut cursor)
            .filter(|n| n.kind() != "comment")
            .collect();
        match children.last() {
            Some(last) => *last,
            None => return false,
        }
    } else {
        node
    };
    matches!(
        last.kind(),
        "return_statement" | "raise_statement" | "break_statement" | "continue_statement"
    )
}

/// The statement or expression a gate at `start..end` is the condition of, and its branch.
fn branch_of(tree: &Tree, start: usize, end: usize) -> Option<(Node<'_>, Node<'_>)> {
    let mut node = tree.root_node().descendant_for_byte_range(start, end)?;
    while let Some(parent) = node.parent() {
        if parent.byte_range() != node.byte_range() {
            break;
        }
        node = parent;
    }
    let parent = node.parent()?;
    let branch = match parent.kind() {
        "if_statement" | "elif_clause" | "while_statement"
            if parent.child_by_field_name("condition").map(|c| c.id()) == Some(node.id()) =>
        {
            parent
                .child_by_field_name("consequence")
                .or_else(|| parent.child_by_field_name("body"))?
        }
        "conditional_expression" if parent.named_child(1).map(|c| c.id()) == Some(node.id()) => {
            parent.named_child(0)?
        }
        _ => return None,
    };
    Some((parent, branch))
}

/// The branch is an exit (it raises, or returns early): what the gate protects is the code
/// after the statement, in its block and the blocks around it up to the function; branches
/// there are alternatives of their own.
pub(crate) fn raise_guarded(parent: Node, src: &[u8]) -> Option<Facts> {
    let mut found = code_after_statement(parent, src);
    found.raises = true;
    Some(found)
}

/// The branch ends in a `raise`: an error exit, whatever it computes first (`major =
/// get_device_capability()[0]` for the message, a log line). Every statement before the raise
/// only prepares the error: the branch never falls through to the code after it.
pub(crate) fn ends_with_raise(branch: Node) -> bool {
    if branch.kind() == "raise_statement" {
        return true;
    }
    let mut cursor = branch.walk();
    branch
        .named_children(&mut cursor)
        .filter(|n| n.kind() != "comment")
        .last()
        .is_some_and(|n| n.kind() == "raise_statement")
}

/// What to parse to see the statement holding a gate in context.
pub(crate) struct Enclosing {
    /// The headers of the definitions around the statement, and the statement.
    pub around: Vec<(usize, usize)>,
    /// The statements after it in its block, up to `MAX_BODY_BYTES` (an error exit guards
    /// them); none in a block the scan splits too, where following every call of a
    /// thousand-line function costs more than it finds.
    pub after: Vec<(usize, usize)>,
    /// Statements after it were left out of `after` (a big block, the byte budget).
    pub after_cut: bool,
}

pub(crate) fn enclosing_ranges(parsed: &Parsed, byte: usize) -> Enclosing {
    enclosing_ranges_with(parsed, byte, false)
}

/// `enclosing_ranges`; with `whole_blocks`, the statements after it are kept in big blocks
/// too (a flag stored in a local is read further down a long function).
pub(crate) fn enclosing_ranges_with(parsed: &Parsed, byte: usize, whole_blocks: bool) -> Enclosing {
    let (src, statements) = (&parsed.src[..], &parsed.statements[..]);
    let holds = |&(s, e): &(usize, usize)| s <= byte && byte < e;
    // The top-level statements are in file order and do not overlap: bisect (a file of
    // 100,000 gated functions asks this once per gate).
    let index = statements
        .partition_point(|&(s, _)| s <= byte)
        .checked_sub(1)
        .filter(|&i| holds(&statements[i]));
    let Some(index) = index else {
        return Enclosing {
            around: vec![(0, src.len())],
            after: Vec::new(),
            after_cut: false,
        };
    };
    let mut around = Vec::new();
    let mut range = statements[index];
    let mut following: Vec<(usize, usize)> = Vec::new();
    let mut after_cut = false;
    while let Some(parts) = parsed.split(range) {
        let (header, body) = (parts[0], &parts[1..]);
        match body.iter().position(holds) {
            Some(i) if !holds(&header) => {
                around.push(header);
                following = body[i + 1..].to_vec();
                if is_big_block(src, range) && !whole_blocks {
                    after_cut = !following.is_empty();
                    following = Vec::new();
                }
                range = body[i];
            }
            _ => break,
        }
    }
    around.push(range);
    let mut after = Vec::new();
    let mut budget = MAX_BODY_BYTES;
    for next in following {
        let size = next.1 - next.0;
        if size > budget {
            after_cut = true;
            break;
        }
        budget -= size;
        after.push(next);
    }
    Enclosing {
        around,
        after,
        after_cut,
    }
}

/// The definition a node stands for: past its decorators (`@staticmethod def f`), or the
/// node itself.
pub(crate) fn undecorated(node: Node) -> Option<Node> {
    match node.kind() {
        "decorated_definition" => node.child_by_field_name("definition"),
        _ => Some(node),
    }
}

/// The site-relative file of a module.
pub(crate) fn file_of_module(parsed: &Parsed) -> String {
    let base = parsed.module.replace('.', "/");
    if parsed.is_package {
        format!("{base}/__init__.py")
    } else {
        format!("{base}.py")
    }
}

/// The spaces before the line that holds `offset`.
pub(crate) fn line_indent(src: &[u8], offset: usize) -> usize {
    let line_start = memchr::memrchr(b'\n', &src[..offset]).map_or(0, |i| i + 1);
    src[line_start..offset]
        .iter()
        .take_while(|b| **b == b' ')
        .count()
}

/// 1-based line of a byte offset.
pub(crate) fn line_of(src: &[u8], offset: usize) -> usize {
    memchr::memchr_iter(b'\n', &src[..offset.min(src.len())]).count() + 1
}

/// The facts of a top-level definition's body, or of a method of a top-level class
/// (`Class.method`).
pub fn body_facts(parsed: &Parsed, name: &str) -> Option<Facts> {
    if let Some((class, method)) = name.split_once('.') {
        return method_facts(parsed, class, method);
    }
    let &(start, end) = parsed.defs.get(name)?;
    if end - start > MAX_BODY_BYTES {
        return None;
    }
    let tree = parsed.parse(&[(start, end)]);
    let root = tree.root_node();
    let mut cursor = root.walk();
    let definition = root
        .named_children(&mut cursor)
        .find_map(|n| match n.kind() {
            "decorated_definition" => n.child_by_field_name("definition"),
            "function_definition" | "class_definition" => Some(n),
            _ => None,
        })?;
    let body = definition.child_by_field_name("body")?;
    Some(facts(body, &parsed.src))
}

/// The facts of the body of method `method` that top-level class `class` defines itself.
/// The class is split into its statements and only the method's is parsed.
fn method_facts(parsed: &Parsed, class: &str, method: &str) -> Option<Facts> {
    let &range = parsed.defs.get(class)?;
    let parts = parsed.split(range)?;
    let header = format!("def {method}(");
    let &statement = parts[1..].iter().find(|&&(start, end)| {
        let text = &parsed.src[start..end];
        // Past its decorators, the statement starts with the method's header.
        text.split(|b| *b == b'\n')
            .map(<[u8]>::trim_ascii_start)
            .find(|line| !line.starts_with(b"@"))
            .is_some_and(|line| {
                line.strip_prefix(b"async ")
                    .unwrap_or(line)
                    .starts_with(header.as_bytes())
            })
    })?;
    if statement.1 - statement.0 > MAX_BODY_BYTES {
        return None;
    }
    let tree = parsed.parse(&[parts[0], statement]);
    let first = statement.0
        + parsed.src[statement.0..statement.1]
            .iter()
            .take_while(|b| b.is_ascii_whitespace())
            .count();
    let node = tree
        .root_node()
        .descendant_for_byte_range(first, first + 1)?;
    let function = std::iter::successors(Some(node), |n| n.parent())
        .filter(|n| matches!(n.kind(), "function_definition" | "decorated_definition"))
        .find_map(undecorated)?;
    let body = function.child_by_field_name("body")?;
    Some(facts(body, &parsed.src))
}

pub(crate) fn facts(node: Node, src: &[u8]) -> Facts {
    facts_skipping(node, src, None)
}

/// `facts`, leaving out the node at `skip` (a gate's own test, which runs either way).
fn facts_skipping(node: Node, src: &[u8], skip: Option<(usize, usize)>) -> Facts {
    let mut out = Facts::default();
    if node.byte_range().len() > MAX_BODY_BYTES {
        out.note_opaque(|| {
            format!(
                "the code at line {} is over {} KiB, not read",
                node.start_position().row + 1,
                MAX_BODY_BYTES / 1024
            )
        });
        return out;
    }
    // Each node with whether it runs only under a condition of its own inside `node`, and
    // the tests of the branches it is in.
    let mut stack: Vec<(Node, bool, Vec<Condition>)> = vec![(node, false, Vec::new())];
    // `op = a.f if c else g` then `op(...)`: a local that names functions (each value with
    // whether it is one arm of a choice).
    let mut aliases: Vec<(String, Vec<(String, bool)>)> = Vec::new();
    let squeeze = |n: Node| -> String {
        text(n, src)
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect()
    };
    while let Some((n, conditional, conditions)) = stack.pop() {
        if skip == Some((n.start_byte(), n.end_byte())) {
            continue;
        }
        if out.calls.len() + out.strings.len() >= MAX_FACTS {
            out.note_opaque(|| format!("more than {MAX_FACTS} calls and names, read in part"));
            break;
        }
        let line = n.start_position().row as u32 + 1;
        match n.kind() {
            "return_statement" => {
                if let Some(value) = n.named_child(0).filter(|v| !is_none(*v, src)) {
                    out.returns_value.get_or_insert(line);
                    out.returned_reads.extend(identifiers(value, src));
                }
                out.leaves.get_or_insert(line);
            }
            "yield" => {
                out.returns_value.get_or_insert(line);
                out.returned_reads.extend(identifiers(n, src));
            }
            "raise_statement" | "break_statement" | "continue_statement" | "assert_statement" => {
                out.leaves.get_or_insert(line);
            }
            // A definition binds its name where it stands (its body is its own).
            "function_definition" | "class_definition" => {
                if let Some(name) = n.child_by_field_name("name") {
                    out.binds_name.get_or_insert(line);
                    out.bound.insert(text(name, src).to_string());
                    if n.kind() == "function_definition" {
                        out.local_functions
                            .push((text(name, src).to_string(), n.start_byte()));
                    }
                    // Its body may read any name around it (a closure).
                    out.flows.push((
                        vec![text(name, src).to_string()],
                        BTreeSet::from(["*".to_string()]),
                    ));
                }
            }
            "global_statement" | "nonlocal_statement" => {
                out.note_opaque(|| format!("line {line} declares `{}`", squeeze(n)));
            }
            "assignment"
            | "augmented_assignment"
            | "delete_statement"
            | "for_statement"
            | "named_expression"
            | "import_statement"
            | "import_from_statement"
            | "as_pattern" => {
                note_targets(n, src, &mut out);
            }
            _ => {}
        }
        match n.kind() {
            "call" => {
                if let Some(function) = n.child_by_field_name("function")
                    && matches!(function.kind(), "identifier" | "attribute")
                {
                    let callee = squeeze(function);
                    // `functools.partial(f, ...)` calls f when it is called.
                    if matches!(callee.as_str(), "partial" | "functools.partial")
                        && let Some(first) = n
                            .child_by_field_name("arguments")
                            .and_then(|a| a.named_child(0))
                        && matches!(first.kind(), "identifier" | "attribute")
                    {
                        out.add_call_under(squeeze(first), conditional, &conditions);
                    }
                    out.add_call_under(callee, conditional, &conditions);
                } else if let Some(function) = n.child_by_field_name("function")
                    && function.kind() == "subscript"
                    && let Some(kernel) = function.child_by_field_name("value")
                    && matches!(kernel.kind(), "identifier" | "attribute")
                {
                    // `kernel[grid](...)`: a Triton launch calls the kernel.
                    out.add_call_under(squeeze(kernel), conditional, &conditions);
                } else if let Some(function) = n.child_by_field_name("function") {
                    // `ops[name](x)`, `getattr(m, f)(x)`, `make()(x)`: the callee is computed.
                    out.note_opaque(|| {
                        format!(
                            "line {line} calls a computed callee `{}`",
                            squeeze(function)
                        )
                    });
                }
            }
            "string" if is_value_position(n) => {
                if let Some(word) = plain_word(n, src) {
                    out.add_string(word, conditional);
                }
            }
            "assignment" => {
                if let (Some(left), Some(right)) = (
                    n.child_by_field_name("left"),
                    n.child_by_field_name("right"),
                ) && left.kind() == "identifier"
                {
                    let mut values = Vec::new();
                    let mut pending = vec![(right, false)];
                    while let Some((v, arm)) = pending.pop() {
                        match v.kind() {
                            "identifier" | "attribute" => values.push((squeeze(v), arm)),
                            "conditional_expression" => {
                                pending.extend(v.named_child(0).map(|c| (c, true)));
                                pending.extend(v.named_child(2).map(|c| (c, true)));
                            }
                            "parenthesized_expression" => {
                                pending.extend(v.named_child(0).map(|c| (c, arm)))
                            }
                            _ => {}
                        }
                    }
                    if !values.is_empty() {
                        aliases.push((text(left, src).to_string(), values));
                    }
                }
                if let Some(key) = stored_flag(n, src)
                    && out.stores.iter().all(|s| s.key != key)
                {
                    out.stores.push(Store {
                        key,
                        line: n.start_position().row as u32 + 1,
                    });
                }
            }
            "function_definition" | "class_definition" | "lambda" => continue,
            _ => {}
        }
        let mut cursor = n.walk();
        let children: Vec<Node> = n.named_children(&mut cursor).collect();
        stack.extend(children.into_iter().rev().map(|child| {
            let mut under = conditions.clone();
            under.extend(tests_of(n, child));
            (child, conditional || runs_on_condition(n, child), under)
        }));
    }
    for (name, values) in aliases {
        if out.calls.contains(&name) {
            // The functions the local names run where it is called: under that call's
            // tests (`elif arch // 10 in [10, 11]: cls = A if hd256 else B; cls(...)`).
            let called_on_condition = out.conditional_calls.contains(&name);
            let conditions = out.call_conditions.get(&name).cloned().unwrap_or_default();
            for (value, arm) in values {
                out.add_call_under(value, called_on_condition || arm, &conditions);
            }
        }
    }
    out
}

/// What a binding statement's targets do: a plain name is bound (`binds_name`); an
/// attribute or an item is stored into an object other code may read (`opaque`).
fn note_targets(statement: Node, src: &[u8], out: &mut Facts) {
    let line = statement.start_position().row as u32 + 1;
    let targets: Vec<Node> = match statement.kind() {
        "assignment" | "augmented_assignment" | "for_statement" => {
            statement.child_by_field_name("left").into_iter().collect()
        }
        "named_expression" => statement.child_by_field_name("name").into_iter().collect(),
        "delete_statement" | "as_pattern" => {
            let mut cursor = statement.walk();
            statement
                .named_children(&mut cursor)
                .skip(usize::from(statement.kind() == "as_pattern"))
                .collect()
        }
        // Imports bind names: an `import` statement's names are not told apart; `global`
        // declarations of them are not looked for, so they count as module-level.
        _ => {
            out.binds_name.get_or_insert(line);
            out.bound.insert("*".into());
            return;
        }
    };
    // What the bound names take their value from (an augmented target reads itself too).
    let value = match statement.kind() {
        "assignment" | "augmented_assignment" | "for_statement" => {
            statement.child_by_field_name("right")
        }
        "named_expression" => statement.child_by_field_name("value"),
        _ => None,
    };
    let mut reads = value.map_or_else(
        || BTreeSet::from(["*".to_string()]),
        |value| identifiers(value, src),
    );
    if statement.kind() == "augmented_assignment" {
        reads.extend(targets.iter().flat_map(|t| identifiers(*t, src)));
    }
    let mut names = Vec::new();
    let mut stack = targets;
    while let Some(target) = stack.pop() {
        match target.kind() {
            "identifier" => {
                out.binds_name.get_or_insert(line);
                out.bound.insert(text(target, src).to_string());
                names.push(text(target, src).to_string());
            }
            "attribute" | "subscript" => {
                out.note_opaque(|| {
                    format!(
                        "line {line} stores into `{}`",
                        String::from_utf8_lossy(&src[target.byte_range()])
                    )
                });
            }
            _ => {
                let mut cursor = target.walk();
                stack.extend(target.named_children(&mut cursor));
            }
        }
    }
    if !names.is_empty() {
        out.flows.push((names, reads));
    }
}

/// The names an expression reads (every identifier in it: attribute names too, which only
/// makes a name look read where it is not).
fn identifiers(node: Node, src: &[u8]) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut stack = vec![node];
    while let Some(n) = stack.pop() {
        if n.kind() == "identifier" {
            names.insert(text(n, src).to_string());
            continue;
        }
        let mut cursor = n.walk();
        stack.extend(n.named_children(&mut cursor));
    }
    names
}

/// Whether a value bound to one of `bound` may reach one of `read` through the bindings of
/// `flows` (each binding's names take the names its value reads).
pub fn may_flow(
    bound: &BTreeSet<String>,
    flows: &[(Vec<String>, BTreeSet<String>)],
    read: &BTreeSet<String>,
) -> bool {
    if read.is_empty() {
        return false;
    }
    if bound.contains("*") || read.contains("*") {
        return true;
    }
    let mut tainted = bound.clone();
    loop {
        let mut grew = false;
        for (names, reads) in flows {
            if reads.contains("*") || reads.iter().any(|r| tainted.contains(r)) {
                for name in names {
                    grew |= tainted.insert(name.clone());
                }
            }
        }
        if !grew {
            break;
        }
    }
    read.iter().any(|r| tainted.contains(r))
}

/// The arms of the statement a gate is the test of, other than the one it selects: the
/// `elif` and `else` clauses after it; for a conditional expression, the whole statement it
/// stands in (the other value, and where the value goes). The gate
/// chooses between its branch and these. `None` where the gate is no such test (a `while`
/// condition, an operand): gatefix does not read what else it decides then.
pub fn other_arms(parsed: &Parsed, gate: &Gate, cache: &mut FileCache) -> Option<Facts> {
    let src = &parsed.src;
    let (start, end) = parsed.gate_bytes(gate)?;
    let Enclosing { around, .. } = enclosing_ranges(parsed, start);
    let tree = cache.tree(src, around);
    let (parent, branch) = branch_of(tree, start, end)?;
    let mut found = Facts::default();
    match parent.kind() {
        // The value the expression picks goes where its statement puts it (a name, a
        // call's argument, a `return`): the whole statement is what the gate decides.
        "conditional_expression" => {
            let mut statement = parent;
            while let Some(up) = statement.parent() {
                if matches!(up.kind(), "block" | "module") {
                    break;
                }
                statement = up;
            }
            // A default or a decorator: the value goes into a body gatefix did not read.
            if matches!(
                statement.kind(),
                "function_definition" | "class_definition" | "decorated_definition"
            ) {
                return None;
            }
            found.extend(facts_skipping(statement, src, Some((start, end))));
        }
        "if_statement" | "elif_clause" => {
            // An `elif`'s later clauses are its `if` statement's children after it.
            let (statement, after) = match parent.kind() {
                "elif_clause" => (parent.parent()?, parent.end_byte()),
                _ => (parent, branch.end_byte()),
            };
            let mut cursor = statement.walk();
            for clause in statement.named_children(&mut cursor) {
                if clause.start_byte() >= after
                    && matches!(clause.kind(), "elif_clause" | "else_clause")
                {
                    found.extend(facts(clause, src));
                }
            }
        }
        _ => return None,
    }
    Some(found)
}

/// Whether a `global` or `nonlocal` statement of the file declares one of `names` (`*`: any
/// name): a binding of it then outlives the function.
pub fn declared_outside(src: &[u8], names: &BTreeSet<String>) -> bool {
    // Most files declare nothing: no line to split them into.
    if memchr::memmem::find(src, b"global ").is_none()
        && memchr::memmem::find(src, b"nonlocal ").is_none()
    {
        return false;
    }
    let any = names.contains("*");
    src.split(|&b| b == b'\n').any(|line| {
        let line = line.trim_ascii_start();
        let rest = line
            .strip_prefix(b"global ")
            .or_else(|| line.strip_prefix(b"nonlocal "));
        rest.is_some_and(|rest| {
            let rest = rest.split(|&b| b == b'#').next().unwrap_or(rest);
            any || rest
                .split(|&b| b == b',')
                .any(|name| names.contains(String::from_utf8_lossy(name.trim_ascii()).as_ref()))
        })
    })
}

/// Whether the gate sits in a loop of its function (or of the module's code): what its
/// branch binds there may be read at the top of the next pass, before the branch.
pub fn in_loop(parsed: &Parsed, gate: &Gate, cache: &mut FileCache) -> bool {
    let src = &parsed.src;
    let Some((start, end)) = parsed.gate_bytes(gate) else {
        return true;
    };
    let Enclosing { around, .. } = enclosing_ranges(parsed, start);
    let tree = cache.tree(src, around);
    let Some(mut node) = tree.root_node().descendant_for_byte_range(start, end) else {
        return true;
    };
    while let Some(parent) = node.parent() {
        match parent.kind() {
            "for_statement" | "while_statement" => return true,
            "function_definition" | "class_definition" | "lambda" => return false,
            _ => node = parent,
        }
    }
    false
}

/// Whether `node` is the `field` child of `parent`.
pub(crate) fn field_is(parent: Node, field: &str, node: Node) -> bool {
    parent
        .child_by_field_name(field)
        .is_some_and(|c| c.id() == node.id())
}

/// The tests `child` of `parent` runs under: the `if`'s (or `elif`'s) test for its
/// consequence, every earlier test negated for an `elif` or an `else`, a conditional
/// expression's test for its two values.
fn tests_of(parent: Node, child: Node) -> Vec<Condition> {
    let range = |n: Node, negated| Condition {
        start: n.start_byte(),
        end: n.end_byte(),
        negated,
    };
    let condition = parent.child_by_field_name("condition");
    match parent.kind() {
        "if_statement" | "elif_clause" => {
            let Some(test) = condition else {
                return Vec::new();
            };
            if field_is(parent, "consequence", child) {
                return vec![range(test, false)];
            }
            if !matches!(child.kind(), "elif_clause" | "else_clause") {
                return Vec::new();
            }
            // Every test before this clause failed.
            let mut failed = vec![range(test, true)];
            let mut cursor = parent.walk();
            for clause in parent.named_children(&mut cursor) {
                if clause.id() == child.id() {
                    break;
                }
                if clause.kind() == "elif_clause"
                    && let Some(test) = clause.child_by_field_name("condition")
                {
                    failed.push(range(test, true));
                }
            }
            failed
        }
        "conditional_expression" => match (parent.named_child(1), parent.named_child(0)) {
            (Some(test), Some(value)) if value.id() == child.id() => vec![range(test, false)],
            (Some(test), _) if parent.named_child(2).is_some_and(|c| c.id() == child.id()) => {
                vec![range(test, true)]
            }
            _ => Vec::new(),
        },
        _ => Vec::new(),
    }
}

/// Whether `child` of `parent` runs only when a condition inside the code holds: the arms of
/// an `if` (not its test), of a conditional expression, of a `match`, an `except` handler, the
/// right side of `and`/`or`.
fn runs_on_condition(parent: Node, child: Node) -> bool {
    match parent.kind() {
        "if_statement" | "elif_clause" => !field_is(parent, "condition", child),
        "conditional_expression" => parent.named_child(1).map(|c| c.id()) != Some(child.id()),
        "boolean_operator" => field_is(parent, "right", child),
        "except_clause" | "case_clause" => true,
        _ => false,
    }
}

/// The flag an assignment sets to a true value: `x.attr = True` (an attribute),
/// `NAME = True` outside any function (a module global; its module is filled in by the
/// caller), `os.environ["X"] = <anything but "0" or "">` (an environment variable).
fn stored_flag(assignment: Node, src: &[u8]) -> Option<FlagKey> {
    let left = assignment.child_by_field_name("left")?;
    let right = assignment.child_by_field_name("right")?;
    match left.kind() {
        "attribute" if right.kind() == "true" => Some(FlagKey::Attr {
            name: text(left.child_by_field_name("attribute")?, src).to_string(),
            path: String::new(),
        }),
        "identifier" if right.kind() == "true" => {
            let mut up = assignment.parent();
            while let Some(node) = up {
                if node.kind() == "function_definition" {
                    return None;
                }
                up = node.parent();
            }
            Some(FlagKey::Global {
                module: String::new(),
                name: text(left, src).to_string(),
            })
        }
        "subscript" => {
            let value = text(left.child_by_field_name("value")?, src);
            let key = left.child_by_field_name("subscript")?;
            let falsy = right.kind() == "string"
                && matches!(plain_word(right, src).as_deref(), None | Some("0"));
            (value.ends_with("environ") && key.kind() == "string" && !falsy)
                .then(|| plain_word(key, src))
                .flatten()
                .map(FlagKey::Env)
        }
        _ => None,
    }
}

/// The facts of the body of the definition whose `def` keyword (or decorator) starts at
/// `byte`, at any depth (a method, a nested function).
pub fn body_facts_at(parsed: &Parsed, byte: usize) -> Option<Facts> {
    let around = enclosing_ranges(parsed, byte).around;
    let tree = parsed.parse(&around);
    let mut node = tree.root_node().descendant_for_byte_range(byte, byte + 1)?;
    loop {
        if node.kind() == "function_definition" {
            break;
        }
        node = node.parent()?;
    }
    let body = node.child_by_field_name("body")?;
    if body.byte_range().len() > MAX_BODY_BYTES {
        return None;
    }
    Some(facts(body, &parsed.src))
}

/// A string that is a value (returned, assigned, passed, chosen), not a message or a key.
fn is_value_position(node: Node) -> bool {
    let Some(parent) = node.parent() else {
        return false;
    };
    match parent.kind() {
        "return_statement"
        | "keyword_argument"
        | "conditional_expression"
        | "block"
        | "expression_statement" => true,
        "assignment" => parent.child_by_field_name("right").map(|r| r.id()) == Some(node.id()),
        _ => false,
    }
}

/// The content of a plain string literal that looks like a name (`"trtllm"`, `"flashinfer_cutlass"`).
pub(crate) fn plain_word(node: Node, src: &[u8]) -> Option<String> {
    let raw = text(node, src);
    let inner = raw
        .trim_start_matches(|c: char| c.is_ascii_alphabetic())
        .trim_matches(|c| c == '"' || c == '\'');
    let word = !inner.is_empty()
        && inner.len() <= 48
        && inner
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    word.then(|| inner.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `byte_of` as it was before its ASCII fast path: the oracle.
    fn byte_of_by_chars(src: &[u8], line: u32, column: u32) -> Option<usize> {
        let starts = line_starts_of(src);
        let start = *starts.get((line as usize).checked_sub(1)?)? as usize;
        let line_end = memchr::memchr(b'\n', &src[start..]).map_or(src.len(), |i| start + i);
        let offset: usize = String::from_utf8_lossy(&src[start..line_end])
            .chars()
            .take(column.saturating_sub(1) as usize)
            .map(char::len_utf8)
            .sum();
        Some(start + offset)
    }

    #[test]
    fn a_column_becomes_the_byte_the_character_walk_finds() {
        let mut files = crate::test_data::python_files();
        // Characters of two to four bytes, an undecodable byte, a column past the line's end.
        files.push("x = 'é' if a else '✓'\nif 𝔵 == 9: y\n".as_bytes().to_vec());
        files.push(b"a = '\xff\xfe' or b\n\t\xffz\n".to_vec());
        let mut checked = 0;
        for src in files {
            let parsed = index_module("m", false, Arc::new(src.clone()));
            let lines = src.split(|&b| b == b'\n').count() as u32;
            for line in 0..=lines + 1 {
                let width = src
                    .split(|&b| b == b'\n')
                    .nth(line.saturating_sub(1) as usize)
                    .map_or(0, |l| l.len() as u32);
                for column in 0..=width + 2 {
                    assert_eq!(
                        parsed.byte_of(line, column),
                        byte_of_by_chars(&src, line, column),
                        "line {line} column {column}"
                    );
                    checked += 1;
                }
            }
        }
        assert!(checked > 10_000, "{checked} positions");
    }

    #[test]
    fn relative_imports_resolve_against_the_module() {
        assert_eq!(
            absolute_module(".core", "flashinfer.jit.comm", false),
            "flashinfer.jit.core"
        );
        assert_eq!(
            absolute_module(".core", "flashinfer.jit", true),
            "flashinfer.jit.core"
        );
        assert_eq!(absolute_module("..utils", "a.b.c", false), "a.utils");
        assert_eq!(absolute_module("os.path", "a.b", false), "os.path");
    }

    #[test]
    fn branches_are_read_from_the_enclosing_statement_and_what_follows_it() {
        let filler = "        pad = 1\n".repeat(20);
        let src = format!(
            "class Runner:\n    def pick(self, x):\n{filler}        if x:\n            return flashinfer.comm.run(1)\n        return \"trtllm\"\n\n    def check(self, y):\n        if not y:\n            raise RuntimeError(\"no\")\n        return backend.launch(y)\n"
        );
        let parsed = index_module("m", false, Arc::new(src.clone().into_bytes()));
        let at = |needle: &str| {
            let byte = src.find(needle).unwrap();
            let line = src[..byte].matches('\n').count() as u32 + 1;
            let column = (byte - src[..byte].rfind('\n').map_or(0, |i| i + 1)) as u32 + 1;
            (line, column)
        };
        let gate = |(line, column): (u32, u32), len: u32| Gate {
            id: String::new(),
            dist: None,
            dist_version: None,
            file: "m.py".into(),
            line,
            column,
            end_line: line,
            end_column: column + len,
            function: None,
            form: crate::gate::predicate::Form::HelperCall,
            text: String::new(),
            predicate: crate::gate::predicate::Pred::Const(true),
            guards_branch: true,
            assumes: None,
        };
        let mut cache = FileCache::default();
        let picked =
            gated_branch(&parsed, &gate(at("x:\n            return"), 1), &mut cache).unwrap();
        assert_eq!(picked.calls, ["flashinfer.comm.run"]);
        assert!(!picked.raises);
        let guarded = gated_branch(&parsed, &gate(at("not y"), 5), &mut cache).unwrap();
        assert!(guarded.raises);
        assert_eq!(
            guarded.calls,
            ["backend.launch"],
            "the statements after the raise"
        );
    }

    #[test]
    fn facts_of_a_branch() {
        let src = b"def f(x):\n    if x:\n        y = flashinfer.comm.run(1)\n        return \"mnnvl\"\n    return \"trtllm\"\n".to_vec();
        let parsed = index_module("m", false, Arc::new(src));
        let gate = Gate {
            id: String::new(),
            dist: None,
            dist_version: None,
            file: "m.py".into(),
            line: 2,
            column: 8,
            end_line: 2,
            end_column: 9,
            function: Some("f".into()),
            form: crate::gate::predicate::Form::HelperCall,
            text: "x".into(),
            predicate: crate::gate::predicate::Pred::Const(true),
            guards_branch: true,
            assumes: None,
        };
        let facts = gated_branch(&parsed, &gate, &mut FileCache::default()).unwrap();
        assert_eq!(facts.calls, ["flashinfer.comm.run"]);
        assert_eq!(
            facts.strings,
            ["mnnvl"],
            "the else path is not the gated branch"
        );
        assert_eq!(
            body_facts(&parsed, "f").unwrap().strings,
            ["mnnvl", "trtllm"]
        );
    }
}
#[cfg(test)]
mod conditional_tests {
    use super::*;

    #[test]
    fn calls_under_an_arm_are_alternatives() {
        let src = b"def f(backend):\n    x = setup()\n    if backend == 'a':\n        m = get_a()\n    elif backend == 'b':\n        m = get_b()\n    else:\n        m = get_c() or fallback()\n    return m\n".to_vec();
        let parsed = index_module("m", false, Arc::new(src));
        let facts = body_facts(&parsed, "f").unwrap();
        assert_eq!(
            facts.calls,
            ["setup", "get_a", "get_b", "get_c", "fallback"]
        );
        let conditional: Vec<&str> = facts.conditional_calls.iter().map(String::as_str).collect();
        assert_eq!(conditional, ["fallback", "get_a", "get_b", "get_c"]);
    }

    #[test]
    fn triton_decorators_are_read_above_the_def() {
        let decorators = vec!["triton.jit".to_string(), "triton.autotune".to_string()];
        let src = b"@triton.jit\ndef a(x):\n    return x\ndef b(x):\n    pass\n\n@triton.autotune(\n    configs=[],\n    key=['n'],\n)\n@other\ndef c(x):\n    pass\n\n@triton.jitter\ndef d():\n    pass\n";
        let at = |name: &str| {
            let needle = format!("def {name}(");
            memchr::memmem::find(src, needle.as_bytes()).unwrap()
        };
        assert!(decorated_with(src, at("a"), &decorators));
        assert!(
            !decorated_with(src, at("b"), &decorators),
            "the decorator above the previous def is not b's"
        );
        assert!(
            decorated_with(src, at("c"), &decorators),
            "over several lines"
        );
        assert!(!decorated_with(src, at("d"), &decorators), "a longer name");
        assert!(
            decorated_with(src, 0, &decorators),
            "from the decorator itself"
        );
        let class = b"class static_range(base):\n    \"\"\"\n    @triton.jit\n    def kernel():\n        pass\n    \"\"\"\n";
        assert!(
            !decorated_with(class, 0, &decorators),
            "a decorated def in a class's docstring is not the class's decorator"
        );
    }
}

#[cfg(test)]
mod method_tests {
    use super::*;

    /// `Class.method` reads the method the class defines itself: decorated, `async`, after
    /// a docstring and a nested class, not a method of the nested class or another class,
    /// and no method the class does not define.
    #[test]
    fn a_method_of_a_top_level_class_is_read_by_its_dotted_name() {
        let src = b"class Other:\n    def run(self):\n        other()\n\n\nclass Kernel(Base):\n    \"\"\"Docs.\"\"\"\n\n    class Config:\n        def run(self):\n            nested()\n\n    @staticmethod\n    def is_supported(\n        x,\n    ):\n        return check(x)\n\n    async def run(self):\n        launch()\n".to_vec();
        let parsed = index_module("m", false, Arc::new(src));
        let calls = |name: &str| body_facts(&parsed, name).map(|f| f.calls);
        assert_eq!(
            calls("Kernel.is_supported"),
            Some(vec!["check".to_string()])
        );
        assert_eq!(calls("Kernel.run"), Some(vec!["launch".to_string()]));
        assert_eq!(calls("Other.run"), Some(vec!["other".to_string()]));
        assert_eq!(calls("Kernel.missing"), None);
        assert_eq!(calls("Missing.run"), None);
    }
}
