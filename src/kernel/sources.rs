//! The C++/CUDA sources a JIT generator compiles, read from its Python: the `sources` of the
//! `gen_jit_spec(...)` / `JitSpec(...)` call in the generator's function (a list, or a name
//! bound to lists in that function), each element a path built from a declared source folder
//! constant (`jit_env.FLASHINFER_CSRC_DIR / "trtllm_allreduce.cu"`). `#include`s are then
//! followed inside the site (quoted ones from the including folder first, `<...>` ones in the
//! declared include folders) (bounded, each file once, so cycles end). The declared folders
//! are the published package's; a fork or vendored copy under another name reads its own
//! (`beside`).
//!
//! Nothing is guessed: an element gatefix cannot resolve is listed as unresolved, and a
//! generator with no resolved source says so.

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use crate::syntax::{Node, Tree};

use super::layer_rules::LayerRules;

/// At most this many files are read for one generator (CUTLASS-sized include trees stop here).
pub const MAX_FILES: usize = 2_000;

/// The sources of one generator.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SourceSet {
    /// `file:line` of the spec call, when found.
    pub spec_at: Option<String>,
    /// The listed sources that exist, site-relative.
    pub roots: Vec<String>,
    /// Every file read: the roots and what they include, site-relative, in reading order.
    pub files: Vec<String>,
    /// Source list elements gatefix could not resolve, or resolved to missing files.
    pub unresolved: Vec<String>,
    /// `file:line "path"` of quoted includes found nowhere in the site.
    pub missing_includes: Vec<String>,
    /// Quoted includes resolved in a declared external folder (CUTLASS, spdlog): not read.
    pub external_includes: usize,
    /// `-D` flags written in the spec call.
    pub defines: Vec<String>,
    /// The file limit cut the include walk short.
    pub truncated: bool,
    /// Why nothing was found, when `roots` is empty.
    pub why_none: Option<String>,
}

/// A Python file holding JIT generators, read and parsed once for all of them (flashinfer's
/// `jit/gemm/core.py` holds seventeen).
pub struct GeneratorFile {
    parsed: Result<(String, Tree), String>,
    /// Function name → byte range of its definition: the outermost, and of those the last
    /// in the file (what a module that defines a name twice binds). Found in one walk: a file
    /// of many generators is asked for each, and for their helpers.
    functions: HashMap<String, (usize, usize)>,
}

impl std::fmt::Debug for GeneratorFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut names: Vec<&str> = self.functions.keys().map(String::as_str).collect();
        names.sort_unstable();
        f.debug_struct("GeneratorFile")
            .field("parsed", &self.parsed.as_ref().map(|(text, _)| text.len()))
            .field("functions", &names)
            .finish()
    }
}

impl GeneratorFile {
    pub fn read(root: &Path, file: &str) -> GeneratorFile {
        let parsed = (|| {
            let text = match std::fs::read(root.join(file)) {
                Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
                Err(e) => return Err(format!("cannot read {file}: {e}")),
            };
            // gatefix's own parser (ruff's, in tree-sitter-python's shapes: `crate::syntax`),
            // the one the scan and the verdicts use, not a second Python grammar.
            let tree = crate::syntax::parse(text.as_bytes());
            Ok((text, tree))
        })();
        let functions = match &parsed {
            Ok((text, tree)) => function_index(tree.root_node(), text.as_bytes()),
            Err(_) => HashMap::new(),
        };
        GeneratorFile { parsed, functions }
    }

    /// The definition of function `name` (see `functions`).
    fn function<'t>(&self, tree: &'t Tree, name: &str) -> Option<Node<'t>> {
        let &(start, end) = self.functions.get(name)?;
        let mut node = tree.root_node().descendant_for_byte_range(start, end)?;
        while node.kind() != "function_definition" {
            node = node.parent()?;
        }
        Some(node)
    }
}

/// The sources of the generator `function` (its last dotted component) in `generated`, the
/// site-relative Python file `file` read: its spec call's sources, their includes followed.
pub fn generator_sources(
    root: &Path,
    generated: &GeneratorFile,
    file: &str,
    function: &str,
    rules: &LayerRules,
    includes_of: &dyn Fn(&str) -> Arc<FileIncludes>,
) -> SourceSet {
    let mut set = SourceSet::default();
    let (text, tree) = match &generated.parsed {
        Ok((text, tree)) => (text, tree),
        Err(why) => {
            set.why_none = Some(why.clone());
            return set;
        }
    };
    let src = text.as_bytes();
    let name = function.rsplit('.').next().unwrap_or(function);
    let Some(def) = generated.function(tree, name) else {
        set.why_none = Some(format!("no function `{name}` in {file}"));
        return set;
    };
    // The spec call in the function, or in a function of the same file it calls (a helper
    // that builds the spec), one level deep.
    let mut calls = spec_calls(def, src, rules);
    if calls.is_empty() {
        for callee in called_names(def, src) {
            if callee == name {
                continue;
            }
            if let Some(helper) = generated.function(tree, &callee) {
                calls = spec_calls(helper, src, rules);
                if !calls.is_empty() {
                    break;
                }
            }
        }
    }
    if calls.is_empty() {
        set.why_none = Some(format!(
            "no {} call in `{name}` ({file})",
            rules.spec_calls.join(" / ")
        ));
        return set;
    }
    // A declared folder constant, where the module that defines it lies (a fork's own copy).
    let imports = crate::gate::index::module_name(Path::new(file))
        .map(|(module, is_package)| crate::gate::exports::from_imports(src, &module, is_package))
        .unwrap_or_default();
    let folder_of = |written: &str| -> Option<String> {
        let name = written.rsplit('.').next().unwrap_or(written);
        let (_, path) = rules.source_dirs.iter().find(|(n, _)| n == name)?;
        Some(beside(
            root,
            path,
            &defining_file(root, &imports, written, file),
        ))
    };
    let mut roots = BTreeSet::new();
    for (call, scope) in &calls {
        if set.spec_at.is_none() {
            set.spec_at = Some(format!("{file}:{}", call.start_position().row + 1));
        }
        collect_defines(*call, src, &mut set.defines);
        let Some(sources) = sources_arg(*call, src) else {
            set.unresolved.push(format!(
                "{file}:{}: no sources argument",
                call.start_position().row + 1
            ));
            continue;
        };
        let mut elements = Vec::new();
        expand(sources, *scope, src, &folder_of, &mut elements, 0);
        for element in elements {
            match element {
                Element::Path(path) => {
                    if root.join(&path).is_file() {
                        roots.insert(path);
                    } else {
                        set.unresolved
                            .push(format!("{path} (listed, not in the site)"));
                    }
                }
                Element::Unresolved(text) => set.unresolved.push(text),
            }
        }
    }
    set.roots = roots.into_iter().collect();
    if set.roots.is_empty() {
        set.why_none = Some(format!(
            "sources not found ({})",
            if set.unresolved.is_empty() {
                "the list is empty".to_string()
            } else {
                set.unresolved.join("; ")
            }
        ));
        return set;
    }
    follow_includes(includes_of, &mut set);
    set
}

fn node_text<'a>(node: Node, src: &'a [u8]) -> &'a str {
    node.utf8_text(src).unwrap_or("")
}

/// Every function definition's name with the byte range of the one `GeneratorFile::function`
/// gives: of the least deep, the first one a depth-first walk that takes the last child
/// first meets (the last in the file).
fn function_index(root: Node, src: &[u8]) -> HashMap<String, (usize, usize)> {
    let mut found: HashMap<String, (usize, (usize, usize))> = HashMap::new();
    let mut stack = vec![(root, 0usize)];
    while let Some((node, depth)) = stack.pop() {
        if node.kind() == "function_definition"
            && let Some(name) = node.child_by_field_name("name")
        {
            let range = (node.start_byte(), node.end_byte());
            match found.get_mut(node_text(name, src)) {
                Some(known) if depth < known.0 => *known = (depth, range),
                Some(_) => {}
                None => {
                    found.insert(node_text(name, src).to_string(), (depth, range));
                }
            }
        }
        let mut cursor = node.walk();
        stack.extend(node.children(&mut cursor).map(|child| (child, depth + 1)));
    }
    found
        .into_iter()
        .map(|(name, (_, range))| (name, range))
        .collect()
}

/// Calls whose callee's last segment is a spec constructor, with the function they are in.
fn spec_calls<'t>(def: Node<'t>, src: &[u8], rules: &LayerRules) -> Vec<(Node<'t>, Node<'t>)> {
    let mut out = Vec::new();
    let mut stack = vec![def];
    while let Some(node) = stack.pop() {
        if node.kind() == "call" {
            let callee = node
                .child_by_field_name("function")
                .map(|f| node_text(f, src))
                .unwrap_or("");
            let last = callee.rsplit('.').next().unwrap_or(callee);
            if rules.spec_calls.iter().any(|c| c == last) {
                out.push((node, def));
                continue;
            }
        }
        let mut cursor = node.walk();
        stack.extend(node.children(&mut cursor));
    }
    out.sort_by_key(|(n, _)| n.start_byte());
    out
}

fn called_names(def: Node, src: &[u8]) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![def];
    while let Some(node) = stack.pop() {
        if node.kind() == "call"
            && let Some(f) = node.child_by_field_name("function")
            && f.kind() == "identifier"
        {
            let name = node_text(f, src).to_string();
            if !out.contains(&name) {
                out.push(name);
            }
        }
        let mut cursor = node.walk();
        stack.extend(node.children(&mut cursor));
    }
    out
}

/// The `sources` keyword, or the second positional argument (`gen_jit_spec(name, sources)`).
fn sources_arg<'t>(call: Node<'t>, src: &[u8]) -> Option<Node<'t>> {
    let args = call.child_by_field_name("arguments")?;
    let mut cursor = args.walk();
    let mut positional = Vec::new();
    for arg in args.named_children(&mut cursor) {
        if arg.kind() == "keyword_argument" {
            if arg
                .child_by_field_name("name")
                .is_some_and(|n| node_text(n, src) == "sources")
            {
                return arg.child_by_field_name("value");
            }
        } else if arg.kind() != "comment" {
            positional.push(arg);
        }
    }
    positional.get(1).copied()
}

/// `"-DNAME"` string literals anywhere in the call's arguments.
fn collect_defines(call: Node, src: &[u8], out: &mut Vec<String>) {
    let mut stack = vec![call];
    while let Some(node) = stack.pop() {
        if node.kind() == "string" {
            let text = node_text(node, src);
            let inner = text.trim_matches(|c| c == '"' || c == '\'');
            if inner.starts_with("-D") && !inner.contains('{') && !out.iter().any(|d| d == inner) {
                out.push(inner.to_string());
            }
            continue;
        }
        let mut cursor = node.walk();
        stack.extend(node.children(&mut cursor));
    }
}

enum Element {
    Path(String),
    Unresolved(String),
}

fn unresolved(node: Node, src: &[u8]) -> Element {
    let text: String = node_text(node, src)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let text = if text.len() > 80 {
        let mut end = 80;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}...", &text[..end])
    } else {
        text
    };
    Element::Unresolved(format!("line {}: `{text}`", node.start_position().row + 1))
}

/// A source list expression to paths (site-relative), through names bound in `scope`.
fn expand(
    node: Node,
    scope: Node,
    src: &[u8],
    dirs: &dyn Fn(&str) -> Option<String>,
    out: &mut Vec<Element>,
    depth: usize,
) {
    if depth > 8 {
        out.push(unresolved(node, src));
        return;
    }
    match node.kind() {
        "list" | "tuple" => {
            let mut cursor = node.walk();
            for item in node.named_children(&mut cursor) {
                if item.kind() == "comment" {
                    continue;
                }
                if item.kind() == "list_splat" {
                    if let Some(inner) = item.named_child(0) {
                        expand(inner, scope, src, dirs, out, depth + 1);
                    }
                    continue;
                }
                expand(item, scope, src, dirs, out, depth + 1);
            }
        }
        "parenthesized_expression" => match node.named_child(0) {
            Some(inner) => expand(inner, scope, src, dirs, out, depth + 1),
            None => out.push(unresolved(node, src)),
        },
        "binary_operator" if operator(node, src) == Some("+") => {
            for field in ["left", "right"] {
                if let Some(side) = node.child_by_field_name(field) {
                    expand(side, scope, src, dirs, out, depth + 1);
                }
            }
        }
        "identifier" => {
            let name = node_text(node, src);
            let bound = bindings(scope, src, name, node.start_byte());
            if bound.is_empty() {
                match path_of(node, src, dirs, depth) {
                    Some(path) => out.push(Element::Path(path)),
                    None => out.push(unresolved(node, src)),
                }
            }
            for value in bound {
                expand(value, scope, src, dirs, out, depth + 1);
            }
        }
        "call" => {
            // Path(x) / str(x) keep x.
            let callee = node
                .child_by_field_name("function")
                .map(|f| node_text(f, src));
            let arg = node
                .child_by_field_name("arguments")
                .and_then(|a| a.named_child(0));
            match (callee, arg) {
                (Some("Path" | "pathlib.Path" | "str" | "os.fspath"), Some(arg)) => {
                    expand(arg, scope, src, dirs, out, depth + 1)
                }
                _ => out.push(unresolved(node, src)),
            }
        }
        _ => match path_of(node, src, dirs, depth) {
            Some(path) => out.push(Element::Path(path)),
            None => out.push(unresolved(node, src)),
        },
    }
}

fn operator<'a>(node: Node, src: &'a [u8]) -> Option<&'a str> {
    node.child_by_field_name("operator")
        .map(|o| node_text(o, src))
}

/// `DIR / "a" / "b.cu"` with DIR a declared folder constant (`dirs` gives its folder).
fn path_of(
    node: Node,
    src: &[u8],
    dirs: &dyn Fn(&str) -> Option<String>,
    depth: usize,
) -> Option<String> {
    if depth > 32 {
        return None;
    }
    match node.kind() {
        "binary_operator" if operator(node, src) == Some("/") => {
            let left = path_of(node.child_by_field_name("left")?, src, dirs, depth + 1)?;
            let right = node.child_by_field_name("right")?;
            let part = match right.kind() {
                "string" if !has_interpolation(right) => string_value(right, src)?,
                _ => return None,
            };
            Some(format!("{left}/{part}"))
        }
        "identifier" | "attribute" => dirs(node_text(node, src)),
        "parenthesized_expression" => path_of(node.named_child(0)?, src, dirs, depth + 1),
        _ => None,
    }
}

fn has_interpolation(string: Node) -> bool {
    let mut cursor = string.walk();
    string
        .children(&mut cursor)
        .any(|c| c.kind() == "interpolation")
}

fn string_value(node: Node, src: &[u8]) -> Option<String> {
    let mut cursor = node.walk();
    let content: String = node
        .children(&mut cursor)
        .filter(|c| c.kind() == "string_content")
        .map(|c| node_text(c, src))
        .collect();
    let prefix = node_text(node, src);
    if prefix.starts_with(['f', 'F', 'b', 'B']) {
        return None;
    }
    Some(content)
}

/// Values bound to `name` in `scope` before `before`: `name = v`, `name += v`,
/// `name.append(v)`, `name.extend(v)`.
fn bindings<'t>(scope: Node<'t>, src: &[u8], name: &str, before: usize) -> Vec<Node<'t>> {
    let mut out = Vec::new();
    let mut stack = vec![scope];
    while let Some(node) = stack.pop() {
        if node.start_byte() >= before {
            continue;
        }
        match node.kind() {
            "assignment" | "augmented_assignment" => {
                let left = node.child_by_field_name("left");
                if left.is_some_and(|l| l.kind() == "identifier" && node_text(l, src) == name)
                    && let Some(right) = node.child_by_field_name("right")
                {
                    if node.kind() == "assignment" {
                        out.clear();
                    }
                    out.push(right);
                }
            }
            "call" => {
                let callee = node
                    .child_by_field_name("function")
                    .map(|f| node_text(f, src));
                if let Some(callee) = callee
                    && let Some((object, method)) = callee.rsplit_once('.')
                    && object == name
                    && (method == "append" || method == "extend")
                    && let Some(arg) = node
                        .child_by_field_name("arguments")
                        .and_then(|a| a.named_child(0))
                {
                    out.push(arg);
                }
            }
            _ => {}
        }
        let mut cursor = node.walk();
        let mut children: Vec<Node> = node.children(&mut cursor).collect();
        children.reverse();
        stack.extend(children);
    }
    out
}

/// The site-relative file of the module that defines the constant `written` names
/// (`jit_env.FLASHINFER_CSRC_DIR` after `from . import env as jit_env`, or a name imported
/// from the module itself), read from the generator's `from` imports; the generator's own
/// file where they do not say.
fn defining_file(
    root: &Path,
    imports: &[crate::gate::exports::FromImport],
    written: &str,
    generator: &str,
) -> String {
    let (head, attribute) = match written.split_once('.') {
        Some((head, _)) => (head, true),
        None => (written, false),
    };
    imports
        .iter()
        .rev()
        .find_map(|statement| {
            let (member, _) = statement.names.iter().find(|(_, local)| local == head)?;
            // `from pkg import env as jit_env` then `jit_env.X`: the module `pkg.env`;
            // `from pkg.env import X`: the module `pkg.env`.
            let module = if attribute {
                format!("{}.{member}", statement.module)
            } else {
                statement.module.clone()
            };
            crate::gate::index::module_file(root, &module)
        })
        .unwrap_or_else(|| generator.to_string())
}

/// A folder a rule names in a package as published (`flashinfer/data/csrc`), as it lies
/// beside the site-relative `file`: in the published package (`file` under `flashinfer/`)
/// the rule's path; in a fork or a vendored copy under another name (`flashinfer_fork/`,
/// `vendor/third_party/flashinfer/`) the same folder below that copy's own root, the
/// nearest folder above `file` that holds it, so the copy's builds read the copy's sources
/// and headers; the rule's path where no such folder exists.
fn beside(root: &Path, rule_path: &str, file: &str) -> String {
    let Some((top, below)) = rule_path.split_once('/') else {
        return rule_path.to_string();
    };
    if file
        .strip_prefix(top)
        .is_some_and(|rest| rest.starts_with('/'))
    {
        return rule_path.to_string();
    }
    std::iter::successors(Path::new(file).parent(), |folder| folder.parent())
        .map(|folder| folder.join(below))
        .find(|candidate| root.join(candidate).is_dir())
        .and_then(|candidate| normalize(&candidate.to_string_lossy()))
        .unwrap_or_else(|| rule_path.to_string())
}

/// `a/b/../c` → `a/c`; `None` when it leaves the site.
pub fn normalize(path: &str) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    for component in Path::new(path).components() {
        match component {
            Component::Normal(p) => parts.push(p.to_str()?),
            Component::ParentDir => {
                parts.pop()?;
            }
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(parts.join("/"))
}

/// What one file's `#include`s resolve to, in order: read once however many generators
/// reach the file (the headers of a library are shared by most of its builds).
#[derive(Debug, Default)]
pub struct FileIncludes {
    /// Site-relative files, in include order (a file may repeat).
    found: Vec<String>,
    /// Quoted includes resolved in a declared external folder (not read).
    external: usize,
    /// `file:line "path"` of quoted includes found nowhere.
    missing: Vec<String>,
}

/// Resolves the includes of the site-relative `file`: a quoted include from the file's own
/// folder first, then the declared include folders; an unreadable file includes nothing.
pub fn file_includes(root: &Path, rules: &LayerRules, file: &str) -> FileIncludes {
    let mut out = FileIncludes::default();
    let Ok(bytes) = std::fs::read(root.join(file)) else {
        return out;
    };
    let text = String::from_utf8_lossy(&bytes);
    let code = super::cpp::blank(&text);
    let (dirs, _) = super::preproc::directives(&code);
    let folder = Path::new(file)
        .parent()
        .map(PathBuf::from)
        .unwrap_or_default();
    let include_dirs: Vec<String> = rules
        .include_dirs
        .iter()
        .map(|d| beside(root, d, file))
        .collect();
    let external_dirs: Vec<String> = rules
        .external_include_dirs
        .iter()
        .map(|d| beside(root, d, file))
        .collect();
    for include in super::cpp::includes(&text, &dirs) {
        let mut candidates = Vec::new();
        if !include.angled {
            candidates.push(folder.join(&include.path));
        }
        candidates.extend(
            include_dirs
                .iter()
                .map(|d| Path::new(d).join(&include.path)),
        );
        let found = candidates
            .iter()
            .filter_map(|c| normalize(&c.to_string_lossy()))
            .find(|c| root.join(c).is_file());
        match found {
            Some(path) => out.found.push(path),
            None => {
                let external = external_dirs.iter().any(|d| {
                    normalize(&Path::new(d).join(&include.path).to_string_lossy())
                        .is_some_and(|p| root.join(p).is_file())
                });
                if external {
                    out.external += 1;
                } else if include.angled {
                    // A system or toolkit header (`<cuda_fp16.h>`): not the site's.
                } else {
                    out.missing
                        .push(format!("{file}:{} \"{}\"", include.line, include.path));
                }
            }
        }
    }
    out
}

/// Every file the roots include, breadth first, each once, up to `MAX_FILES`.
fn follow_includes(includes_of: &dyn Fn(&str) -> Arc<FileIncludes>, set: &mut SourceSet) {
    let mut seen: HashSet<String> = HashSet::new();
    let mut queue: VecDeque<String> = set.roots.iter().cloned().collect();
    for r in &set.roots {
        seen.insert(r.clone());
    }
    while let Some(file) = queue.pop_front() {
        set.files.push(file.clone());
        if set.files.len() >= MAX_FILES {
            set.truncated = !queue.is_empty();
            break;
        }
        let includes = includes_of(&file);
        for path in &includes.found {
            if seen.insert(path.clone()) {
                queue.push_back(path.clone());
            }
        }
        set.external_includes += includes.external;
        set.missing_includes
            .extend(includes.missing.iter().cloned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The walk `function_index` replaced, asked once per name: the oracle.
    fn find_function<'t>(root: Node<'t>, src: &[u8], name: &str) -> Option<Node<'t>> {
        let mut stack = vec![root];
        let mut found = None;
        while let Some(node) = stack.pop() {
            if node.kind() == "function_definition"
                && node
                    .child_by_field_name("name")
                    .is_some_and(|n| node_text(n, src) == name)
            {
                let mut depth = 0;
                let mut at = node;
                while let Some(parent) = at.parent() {
                    depth += 1;
                    at = parent;
                }
                if found.is_none_or(|(d, _)| depth < d) {
                    found = Some((depth, node));
                }
                continue;
            }
            let mut cursor = node.walk();
            stack.extend(node.children(&mut cursor));
        }
        found.map(|(_, n)| n)
    }

    #[test]
    fn the_function_index_finds_what_a_walk_per_name_finds() {
        let mut sources: Vec<String> = vec![
            // Redefined at top level, nested in itself, a method and a nested function of the
            // same name, a decorated one.
            "def f():\n    def f():\n        pass\n\ndef g():\n    def h(): pass\n\n\
             class C:\n    def f(self):\n        def g(): pass\n\n@dec\ndef f(x): return x\n"
                .into(),
            "class A:\n    def m(self): pass\nclass B:\n    def m(self): pass\n".into(),
            "if x:\n    def k(): pass\nelse:\n    def k(): return 1\n".into(),
        ];
        sources.extend(
            crate::test_data::python_files()
                .iter()
                .map(|bytes| String::from_utf8_lossy(bytes).into_owned()),
        );
        let mut names = 0;
        for text in &sources {
            let tree = crate::syntax::parse(text.as_bytes());
            let file = GeneratorFile {
                functions: function_index(tree.root_node(), text.as_bytes()),
                parsed: Ok((text.clone(), tree)),
            };
            let (_, tree) = file.parsed.as_ref().unwrap();
            for name in file.functions.keys() {
                let indexed = file.function(tree, name).map(|n| n.byte_range());
                let walked =
                    find_function(tree.root_node(), text.as_bytes(), name).map(|n| n.byte_range());
                assert!(indexed.is_some());
                assert_eq!(indexed, walked, "{name} in\n{text}");
                names += 1;
            }
            assert!(file.function(tree, "no_such_function").is_none());
        }
        assert!(names > 400, "{names} names");
    }

    /// A generator of a fork (the package under another name) or of a vendored copy reads
    /// the copy's sources and headers, found below the copy's own root where the rules name
    /// them in the published package; the published package reads its own; with both in one
    /// site, each reads its own.
    #[test]
    fn a_renamed_or_vendored_copy_reads_its_own_sources_and_headers() {
        let site = tempfile::tempdir().unwrap();
        let root = site.path();
        let generator = "from . import env as jit_env\n\n\
                         def gen_k_module():\n    \
                         return gen_jit_spec(\"k\", [jit_env.KERNEL_DIR / \"k.cu\"])\n";
        for package in [
            "flashinfer",
            "flashinfer_fork",
            "vendor/third_party/flashinfer",
        ] {
            let write = |relative: &str, text: &str| {
                let path = root.join(package).join(relative);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(path, text).unwrap();
            };
            write("jit/gen.py", generator);
            write("jit/env.py", "KERNEL_DIR = _root / \"data\" / \"csrc\"\n");
            write(
                "data/csrc/k.cu",
                "#include \"lib/h.cuh\"\n#include \"cutlass/c.h\"\n",
            );
            write("data/include/lib/h.cuh", "// the header\n");
            write(
                "data/cutlass/include/cutlass/c.h",
                "// an external header\n",
            );
        }
        let rules = LayerRules {
            spec_calls: vec!["gen_jit_spec".into()],
            source_dirs: vec![("KERNEL_DIR".into(), "flashinfer/data/csrc".into())],
            include_dirs: vec!["flashinfer/data/include".into()],
            external_include_dirs: vec!["flashinfer/data/cutlass/include".into()],
            ..LayerRules::default()
        };
        let includes_of = |path: &str| std::sync::Arc::new(file_includes(root, &rules, path));
        for package in [
            "flashinfer",
            "flashinfer_fork",
            "vendor/third_party/flashinfer",
        ] {
            let file = format!("{package}/jit/gen.py");
            let generated = GeneratorFile::read(root, &file);
            let set = generator_sources(
                root,
                &generated,
                &file,
                "gen_k_module",
                &rules,
                &includes_of,
            );
            assert_eq!(set.roots, [format!("{package}/data/csrc/k.cu")], "{set:?}");
            assert_eq!(
                set.files,
                [
                    format!("{package}/data/csrc/k.cu"),
                    format!("{package}/data/include/lib/h.cuh")
                ],
                "{set:?}"
            );
            assert_eq!(set.external_includes, 1, "{set:?}");
            assert!(set.missing_includes.is_empty(), "{set:?}");
        }
        // Another package's generator that builds with flashinfer's constant reads
        // flashinfer's folder, not a folder of its own of the same name.
        std::fs::create_dir_all(root.join("other/jit")).unwrap();
        std::fs::create_dir_all(root.join("other/data/csrc")).unwrap();
        std::fs::write(root.join("other/data/csrc/k.cu"), "// not this one\n").unwrap();
        std::fs::write(
            root.join("other/jit/gen.py"),
            generator.replace("from . import env", "from flashinfer.jit import env"),
        )
        .unwrap();
        let file = "other/jit/gen.py";
        let generated = GeneratorFile::read(root, file);
        let set = generator_sources(root, &generated, file, "gen_k_module", &rules, &includes_of);
        assert_eq!(set.roots, ["flashinfer/data/csrc/k.cu"], "{set:?}");
        // No copy of the folder beside the generator: the rule's own path.
        std::fs::remove_dir_all(root.join("flashinfer_fork/data/csrc")).unwrap();
        let file = "flashinfer_fork/jit/gen.py";
        let generated = GeneratorFile::read(root, file);
        let set = generator_sources(root, &generated, file, "gen_k_module", &rules, &includes_of);
        assert_eq!(set.roots, ["flashinfer/data/csrc/k.cu"], "{set:?}");
    }
}
