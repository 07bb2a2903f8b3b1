//! Device names that other modules import: the def-use step across `from m import name`.
//!
//! The scan lowers a file only where it holds an arch token, so a file that imports a flag
//! another module binds from the device is never read: sglang's
//! `kernels/ops/attention/fla/utils.py` binds `is_nvidia_hopper = is_nvidia and
//! (torch.cuda.get_device_capability()[0] >= 9 ...)`, and `chunk_o.py`, with no token of its
//! own, decides `NUM_WARPS = [2, 4] if is_nvidia_hopper else [2, 4, 8]` on it; vllm's
//! `sparse_attn_indexer.py` calls `mqa_logits_use_mx_scales()` from `utils/deep_gemm.py`.
//! Each lowered module's `device_exports` (module-level names bound from the device,
//! `ModuleIr::device_exports`) are looked up in the `from ... import` statements of the files
//! that import it; such a file is lowered with the local name taken as arch-dependent. Files
//! with a token are lowered in import order (`scan::lower_hits`), so they get their imports'
//! names on their one lowering; the rounds of `scan::lower_importers` then add what that
//! order cannot give (an import cycle, files without a token), what a file re-exports feeding
//! the next round. Which value the name holds is the resolver's business: it follows the
//! import as for any other name.
//!
//! Only `from m import name [as alias]` is followed (relative or absolute, also inside a
//! function), and a submodule imported from its package, `from pkg import m [as alias]` or
//! `import pkg.m [as alias]`, then `alias.name` or `pkg.m.name` (the file is lowered with the
//! dotted name as arch-dependent).

use std::collections::{BTreeMap, BTreeSet};

/// One `from MODULE import ...` statement's module (absolute) and `(member, local)` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FromImport {
    pub module: String,
    pub names: Vec<(String, String)>,
}

/// Rounds of lowering importers after the token files' import-order lowering: the second
/// follows a re-export (`from .utils import flag` in a package's `__init__.py`) one module
/// further. A third added 8 of 3,743 records on sglang 0.5.23 + flashinfer 0.7.2 (helper
/// calls of unknown value) for ~0.4 s, before the import order.
pub const MAX_ROUNDS: usize = 2;

/// The local names a file imports from `exports` (module → names it binds from the device),
/// sorted, given the file's `from` imports (`from_imports`). The scan reads those once, when
/// it first reads every file, and looks them up in each round instead of reading the site
/// again.
pub fn device_names_imported_by(
    statements: &[FromImport],
    exports: &BTreeMap<String, BTreeSet<String>>,
) -> Vec<String> {
    let mut locals: BTreeSet<String> = BTreeSet::new();
    for statement in statements {
        let names = exports.get(&statement.module);
        for (member, local) in &statement.names {
            if names.is_some_and(|names| names.contains(member)) {
                locals.insert(local.clone());
            }
            // `from .. import runtime as common`: a submodule, whose device names the file
            // reads as `common._arch_for(device)` (flashinfer's cuDNN Frost backends).
            if let Some(names) = exports.get(&submodule(&statement.module, member)) {
                locals.extend(names.iter().map(|name| format!("{local}.{name}")));
            }
        }
    }
    locals.into_iter().collect()
}

/// The module `from MODULE import member` binds where `member` is a submodule.
pub fn submodule(module: &str, member: &str) -> String {
    format!("{module}.{member}")
}

/// The `from ... import ...` statements of a file, read from its text: a line whose code
/// starts with `from `, continued through parentheses or a trailing backslash. Star imports
/// name nothing here (the resolver follows them). Then its `import pkg.m [as m]` statements
/// (`import_statements`), after all the `from` ones.
pub fn from_imports(source: &[u8], module: &str, is_package: bool) -> Vec<FromImport> {
    let mut out = Vec::new();
    // Where the next statement may start: past the end of the last one read.
    let mut at = 0;
    // Every file of the site is read for its imports: jump from one `from ` to the next
    // instead of walking every line, and keep those that begin their line's code.
    for from in memchr::memmem::find_iter(source, b"from ") {
        if from < at {
            continue;
        }
        if !begins_its_line(source, from) {
            continue;
        }
        let line_end = memchr::memchr(b'\n', &source[from..]).map_or(source.len(), |i| from + i);
        let statement_start = from + b"from ".len();
        let end = statement_end(source, statement_start);
        if let Some(statement) = parse_from(&source[statement_start..end], module, is_package) {
            out.push(statement);
        }
        at = end.max(line_end) + 1;
    }
    import_statements(source, &mut out);
    out
}

/// Whether only blanks stand before `at` on its line: a statement's first word.
fn begins_its_line(source: &[u8], at: usize) -> bool {
    let line_start = memchr::memrchr(b'\n', &source[..at]).map_or(0, |i| i + 1);
    source[line_start..at]
        .iter()
        .all(|b| matches!(b, b' ' | b'\t'))
}

/// `import a.b.c as m` (and `import a.b.c`) of a file, read as `from a.b import c as m`
/// (`from a.b import c as a.b.c`): the submodule's device names are then read as `m.NAME`
/// (`a.b.c.NAME`). A module with no package (`import os`) binds nothing of another module.
fn import_statements(source: &[u8], out: &mut Vec<FromImport>) {
    for start in memchr::memmem::find_iter(source, b"import ") {
        if !begins_its_line(source, start) {
            continue;
        }
        let line_end = memchr::memchr(b'\n', &source[start..]).map_or(source.len(), |i| start + i);
        let Ok(line) = std::str::from_utf8(&source[start + b"import ".len()..line_end]) else {
            continue;
        };
        let code = line.split('#').next().unwrap_or_default();
        if code.contains(['(', '\\', ';']) {
            continue;
        }
        for item in code.split(',') {
            let mut words = item.split_whitespace();
            let Some(dotted) = words.next() else {
                continue;
            };
            let Some((package, member)) = dotted.rsplit_once('.') else {
                continue;
            };
            if !dotted.split('.').all(is_identifier) {
                continue;
            }
            let local = match (words.next(), words.next(), words.next()) {
                (Some("as"), Some(alias), None) if is_identifier(alias) => alias,
                (None, _, _) => dotted,
                _ => continue,
            };
            out.push(FromImport {
                module: package.to_string(),
                names: vec![(member.to_string(), local.to_string())],
            });
        }
    }
}

/// Where the statement starting at `from` ends: the end of its line, unless a `(` is open
/// there or the line ends in `\`.
fn statement_end(source: &[u8], from: usize) -> usize {
    let mut depth = 0usize;
    let mut i = from;
    while i < source.len() {
        match source[i] {
            b'(' => depth += 1,
            b')' => depth = depth.saturating_sub(1),
            b'#' => {
                // A comment runs to the end of the line; the statement may go on below it.
                i = memchr::memchr(b'\n', &source[i..]).map_or(source.len(), |j| i + j);
                continue;
            }
            b'\\' if source.get(i + 1) == Some(&b'\n') => i += 1,
            b'\n' if depth == 0 => return i,
            _ => {}
        }
        i += 1;
    }
    source.len()
}

/// `MODULE import a, b as c` (the text after `from `), or `None` when it is not an import.
fn parse_from(text: &[u8], module: &str, is_package: bool) -> Option<FromImport> {
    let text = std::str::from_utf8(text).ok()?;
    let mut code = String::with_capacity(text.len());
    for line in text.split('\n') {
        let line = line.split('#').next().unwrap_or_default();
        code.push_str(line.trim_end_matches('\\'));
        code.push(' ');
    }
    let (target, names) = code.split_once(" import ")?;
    let target = target.trim();
    let absolute = absolute_module(target, module, is_package)?;
    let names = names.trim().trim_start_matches('(');
    let names = names.trim_end().trim_end_matches(')');
    let mut out = Vec::new();
    for item in names.split(',') {
        let mut words = item.split_whitespace();
        let Some(member) = words.next() else {
            continue;
        };
        if member == "*" || !is_identifier(member) {
            continue;
        }
        let local = match (words.next(), words.next()) {
            (Some("as"), Some(alias)) if is_identifier(alias) => alias,
            (None, _) => member,
            _ => continue,
        };
        out.push((member.to_string(), local.to_string()));
    }
    Some(FromImport {
        module: absolute,
        names: out,
    })
}

fn is_identifier(word: &str) -> bool {
    let mut chars = word.chars();
    chars.next().is_some_and(|c| c == '_' || c.is_alphabetic())
        && chars.all(|c| c == '_' || c.is_alphanumeric())
}

/// `.utils` in `a.b.c` (a module) is `a.b.utils`; in `a.b` (a package) it is `a.b.utils`.
fn absolute_module(target: &str, module: &str, is_package: bool) -> Option<String> {
    let dots = target.bytes().take_while(|&b| b == b'.').count();
    if dots == 0 {
        return Some(target.to_string());
    }
    let mut parts: Vec<&str> = module.split('.').collect();
    // One dot is the package the file is in: the module itself for a package.
    let up = if is_package { dots - 1 } else { dots };
    if up >= parts.len() + usize::from(is_package) {
        return None;
    }
    parts.truncate(parts.len().checked_sub(up)?);
    let rest = &target[dots..];
    if !rest.is_empty() {
        parts.push(rest);
    }
    (!parts.is_empty()).then(|| parts.join("."))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exports(module: &str, names: &[&str]) -> BTreeMap<String, BTreeSet<String>> {
        BTreeMap::from([(
            module.to_string(),
            names.iter().map(|n| n.to_string()).collect(),
        )])
    }

    #[test]
    fn a_device_name_is_found_in_every_spelling_of_from_import() {
        let source = b"import os\n\
from a.fla.utils import check_shared_mem, is_nvidia_hopper\n\
from .utils import (\n    other,  # why\n    is_tf32_supported as tf32,\n)\n\
def f():\n    from ..fla.utils import \\\n        is_gather\n    return 1\n\
x = 'from a.fla.utils import not_an_import'\n";
        let names = device_names_imported_by(
            &from_imports(source, "a.fla.chunk_o", false),
            &exports(
                "a.fla.utils",
                &[
                    "is_nvidia_hopper",
                    "is_tf32_supported",
                    "is_gather",
                    "not_an_import",
                ],
            ),
        );
        assert_eq!(names, vec!["is_gather", "is_nvidia_hopper", "tf32"]);
    }

    /// `a.runtime` binds `_arch_for` from the device, `a.b.runtime` binds `flag`.
    fn two_runtimes() -> BTreeMap<String, BTreeSet<String>> {
        BTreeMap::from([
            (
                "a.runtime".to_string(),
                BTreeSet::from(["_arch_for".to_string()]),
            ),
            (
                "a.b.runtime".to_string(),
                BTreeSet::from(["flag".to_string()]),
            ),
        ])
    }

    #[test]
    fn a_submodule_imported_from_its_package_gives_its_names_dotted() {
        let source = b"from .. import runtime as common\nfrom . import runtime, other\n";
        let names =
            device_names_imported_by(&from_imports(source, "a.b.fma", false), &two_runtimes());
        assert_eq!(names, vec!["common._arch_for", "runtime.flag"]);
    }

    #[test]
    fn an_imported_submodule_gives_its_names_under_its_alias_or_its_path() {
        let source = b"import os\nimport a.runtime as rt, a.b.runtime  # why\n\
x = 'import a.runtime as no'\ndef f():\n    import a.runtime as inner\n";
        let names =
            device_names_imported_by(&from_imports(source, "a.b.fma", false), &two_runtimes());
        assert_eq!(
            names,
            vec!["a.b.runtime.flag", "inner._arch_for", "rt._arch_for"]
        );
    }

    #[test]
    fn a_name_of_another_module_or_not_exported_is_no_device_name() {
        let source = b"from a.other import is_nvidia_hopper\nfrom a.fla.utils import helper\n";
        let names = device_names_imported_by(
            &from_imports(source, "a.fla.chunk_o", false),
            &exports("a.fla.utils", &["is_nvidia_hopper"]),
        );
        assert!(names.is_empty(), "{names:?}");
    }

    /// `from_imports` as it was, walking every line: the jumping one must agree with it.
    fn from_imports_line_by_line(source: &[u8], module: &str, is_package: bool) -> Vec<FromImport> {
        let mut out = Vec::new();
        let mut at = 0;
        while at < source.len() {
            let line_end = memchr::memchr(b'\n', &source[at..]).map_or(source.len(), |i| at + i);
            let line = &source[at..line_end];
            let skip = line
                .iter()
                .take_while(|b| matches!(b, b' ' | b'\t'))
                .count();
            if let Some(rest) = line[skip..].strip_prefix(b"from ") {
                let statement_start = line_end - rest.len();
                let end = statement_end(source, statement_start);
                if let Some(statement) =
                    parse_from(&source[statement_start..end], module, is_package)
                {
                    out.push(statement);
                }
                at = end.max(line_end);
            } else {
                at = line_end;
            }
            at += 1;
        }
        out
    }

    #[test]
    fn jumping_to_each_from_reads_what_walking_every_line_reads() {
        let mut sources: Vec<Vec<u8>> = vec![
            b"from a import b\nx = 1  # from c import d\n  from .e import (\n f,\n from_g)\n"
                .to_vec(),
            b"s = '''\nfrom h import i\n'''\n\tfrom j import k as l\nfrom\nfrom m import\\\n n\n"
                .to_vec(),
            b"from p import q".to_vec(),
            b"x=1\r\nfrom r import s\r\n  y = from_t\nfrom  u import v\n".to_vec(),
            b"from (\nfrom w import x)\nfrom y import z\n".to_vec(),
        ];
        // And every Python file of the test data.
        sources.extend(crate::test_data::python_files());
        assert!(sources.len() > 100, "{} sources", sources.len());
        let mut statements = 0;
        for source in &sources {
            for (module, is_package) in [("a.b.c", false), ("a.b", true)] {
                let jumping = from_imports(source, module, is_package);
                let mut walking = from_imports_line_by_line(source, module, is_package);
                import_statements(source, &mut walking);
                assert_eq!(jumping, walking, "{}", String::from_utf8_lossy(source));
                statements += jumping.len();
            }
        }
        assert!(statements > 100, "{statements} statements");
    }

    #[test]
    fn relative_imports_resolve_from_a_package_and_from_a_module() {
        assert_eq!(
            absolute_module(".utils", "a.b", true).as_deref(),
            Some("a.b.utils")
        );
        assert_eq!(
            absolute_module(".utils", "a.b.c", false).as_deref(),
            Some("a.b.utils")
        );
        assert_eq!(
            absolute_module("..x", "a.b.c", false).as_deref(),
            Some("a.x")
        );
        assert_eq!(absolute_module(".", "a.b.c", false).as_deref(), Some("a.b"));
        assert_eq!(absolute_module("....x", "a.b", false), None);
    }
}
