//! Rules written for a package as it is published (`flashinfer.jit.fused_moe`,
//! `sglang/srt/arg_groups/fields/exec_.py`), applied to a fork or a copy of it published under
//! another top-level name (`flashinfer_fork`): where the site does not hold the package a
//! rule names, but one other top-level package of the site holds the modules and folders the
//! rules name in it at the same places below its root, the rules are read as if written for
//! that package. A layout, not a name, decides: a package that merely shares a module name
//! or two (`utils.py`) is no copy.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Paths the rules name below a package, counted as evidence only from two levels down
/// (`jit/fused_moe.py`, `srt/runtime_context.py`): one level (`utils.py`, `cuda.py`) is
/// common to unrelated packages.
const MIN_DEPTH: usize = 2;

/// A copy must hold at least this many of the paths, and at least this share of them.
const MIN_MATCHES: usize = 3;
const MIN_SHARE: f64 = 0.5;

/// `(published, copy)` top-level names: rules that name `published` apply to `copy` in this
/// site. Only for published names the site does not hold, each with the one package that
/// holds most of the rules' paths of it (and enough: `MIN_MATCHES`, `MIN_SHARE`).
pub fn relocations<'t>(
    texts: impl IntoIterator<Item = &'t str>,
    root: &Path,
) -> Vec<(String, String)> {
    let mut named: BTreeMap<String, BTreeSet<Vec<String>>> = BTreeMap::new();
    for text in texts {
        for (top, below) in named_paths(text) {
            if below.len() >= MIN_DEPTH {
                named.entry(top).or_default().insert(below);
            }
        }
    }
    let packages = top_level_packages(root);
    let mut out = Vec::new();
    for (top, paths) in named {
        if packages.contains(&top) || holds(root, std::slice::from_ref(&top)) {
            continue;
        }
        let mut scores: Vec<(usize, &String)> = packages
            .iter()
            .filter(|p| !out.iter().any(|(_, copy): &(String, String)| copy == *p))
            .map(|package| {
                let found = paths
                    .iter()
                    .filter(|below| {
                        let mut parts = vec![package.clone()];
                        parts.extend(below.iter().cloned());
                        holds(root, &parts)
                    })
                    .count();
                (found, package)
            })
            .filter(|(found, _)| {
                *found >= MIN_MATCHES && *found as f64 >= MIN_SHARE * paths.len() as f64
            })
            .collect();
        scores.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(b.1)));
        match scores.as_slice() {
            [(best, package), rest @ ..] if rest.first().is_none_or(|(next, _)| next < best) => {
                out.push((top, (*package).clone()));
            }
            _ => {}
        }
    }
    out
}

/// The rule text with every module path and site path that starts with a published name
/// written with the copy's (`flashinfer.jit` -> `flashinfer_fork.jit`, `flashinfer/data` ->
/// `flashinfer_fork/data`); other words that contain the name (`enable_flashinfer_x`,
/// `flashinfer-python`) are left as they are.
pub fn rewrite(text: &str, relocations: &[(String, String)]) -> String {
    let mut out = text.to_string();
    for (published, copy) in relocations {
        let mut next = String::with_capacity(out.len());
        let mut rest = out.as_str();
        while let Some(at) = rest.find(published.as_str()) {
            let before = rest[..at].chars().next_back();
            let after = rest[at + published.len()..].chars().next();
            next.push_str(&rest[..at]);
            let starts_a_path =
                !before.is_some_and(is_name_char) && after.is_some_and(|c| c == '.' || c == '/');
            next.push_str(if starts_a_path { copy } else { published });
            rest = &rest[at + published.len()..];
        }
        next.push_str(rest);
        out = next;
    }
    out
}

/// The distribution names the rules give for published packages (`dist =
/// "flashinfer-python"`: a name whose first word is the package's) that no distribution of
/// the site has, each with the name of the distribution that installs the package in this
/// site (`holder`: the package itself, or its copy under another name; `dist_of`: the
/// distribution whose RECORD has it), where that is another name: a fork that keeps the
/// package's name and publishes it as `sglang-custom` gets the rules for `sglang`.
pub fn dist_renames<'t>(
    texts: impl IntoIterator<Item = &'t str>,
    installed: impl Fn(&str) -> bool,
    holder: impl Fn(&str) -> Option<String>,
    dist_of: impl Fn(&str) -> Option<String>,
) -> Vec<(String, String)> {
    let mut named: BTreeSet<String> = BTreeSet::new();
    for text in texts {
        for line in text.lines() {
            let Some(rest) = line.trim_start().strip_prefix("dist") else {
                continue;
            };
            let Some(value) = rest.trim_start().strip_prefix('=') else {
                continue;
            };
            if let Some(name) = value
                .trim()
                .strip_prefix('"')
                .and_then(|v| v.split('"').next())
            {
                named.insert(name.to_string());
            }
        }
    }
    named
        .into_iter()
        .filter(|name| !installed(name))
        .filter_map(|name| {
            let package = name.split(['-', '_', '.']).next().unwrap_or(&name);
            let to = dist_of(&holder(package)?)?;
            (to != name).then_some((name, to))
        })
        .collect()
}

/// The rule text with each quoted distribution name `"from"` written `"to"`.
pub fn rewrite_dists(text: &str, renames: &[(String, String)]) -> String {
    renames.iter().fold(text.to_string(), |text, (from, to)| {
        text.replace(&format!("\"{from}\""), &format!("\"{to}\""))
    })
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Every quoted string of a rule file that is a dotted module path (`a.b.c`, `a.b:f`) or a
/// site path (`a/b/c.py`, `a/b/*.py`), as its top-level name and the parts below it; a
/// module path's parts stop before its last name, which may be a function or a constant.
fn named_paths(text: &str) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    for (i, quoted) in text.split('"').enumerate() {
        if i % 2 == 0 || quoted.is_empty() {
            continue;
        }
        let path: Vec<&str> = if quoted.contains('/') {
            quoted.split('/').collect()
        } else if quoted.contains('.') {
            let module = quoted.split(':').next().unwrap_or(quoted);
            let mut parts: Vec<&str> = module.split('.').collect();
            if !quoted.contains(':') {
                parts.pop();
            }
            parts
        } else {
            continue;
        };
        // Globs and placeholders stop the path: only literal parts are evidence.
        let literal: Vec<&str> = path
            .iter()
            .copied()
            .take_while(|p| !p.is_empty() && p.chars().all(|c| is_name_char(c) || c == '.'))
            .collect();
        let Some((top, below)) = literal.split_first() else {
            continue;
        };
        if !top.chars().all(is_name_char) {
            continue;
        }
        out.push((
            top.to_string(),
            below.iter().map(|p| p.to_string()).collect(),
        ));
    }
    out
}

/// The site's top-level folders that are Python packages (an `__init__.py`).
fn top_level_packages(root: &Path) -> BTreeSet<String> {
    std::fs::read_dir(root)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .filter(|e| e.path().join("__init__.py").is_file())
                .filter_map(|e| e.file_name().to_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Whether the site holds this path: a folder, a file, or a module (`.py`, a package).
fn holds(root: &Path, parts: &[String]) -> bool {
    let path = parts
        .iter()
        .fold(root.to_path_buf(), |p, part| p.join(part));
    path.exists() || path.with_extension("py").is_file()
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULES: &str = r#"
[[helper]]
name = "pkg.utils.version_at_least"
[[backend]]
needs = { jit = "pkg.jit.fused_moe:gen_module" }
module_imports = "pkg.comm"
switch = "--enable-pkg-fusion"
reads = "enable_pkg_fusion"
dist = "pkg-python"
[[link]]
file = "pkg/comm/mixed_comm.py"
include_dirs = ["pkg/data/include", "pkg/data/*.h"]
"#;

    fn site(packages: &[(&str, &[&str])]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (package, files) in packages {
            let top = dir.path().join(package);
            std::fs::create_dir_all(&top).unwrap();
            std::fs::write(top.join("__init__.py"), "").unwrap();
            for file in *files {
                let path = top.join(file);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                if file.ends_with('/') {
                    std::fs::create_dir_all(&path).unwrap();
                } else {
                    std::fs::write(path, "").unwrap();
                }
            }
        }
        dir
    }

    const LAYOUT: &[&str] = &[
        "utils.py",
        "jit/fused_moe.py",
        "comm/mixed_comm.py",
        "data/include/",
    ];

    #[test]
    fn a_package_with_the_published_layout_under_another_name_takes_its_rules() {
        let dir = site(&[("pkg_fork", LAYOUT), ("other", &["utils.py", "jit/x.py"])]);
        let found = relocations([RULES], dir.path());
        assert_eq!(found, [("pkg".to_string(), "pkg_fork".to_string())]);
        let text = rewrite(RULES, &found);
        for written in [
            "\"pkg_fork.utils.version_at_least\"",
            "\"pkg_fork.jit.fused_moe:gen_module\"",
            "\"pkg_fork.comm\"",
            "\"pkg_fork/comm/mixed_comm.py\"",
            "\"pkg_fork/data/include\"",
            // Words that only contain the name are not paths.
            "\"--enable-pkg-fusion\"",
            "\"enable_pkg_fusion\"",
            "\"pkg-python\"",
        ] {
            assert!(text.contains(written), "{written} in\n{text}");
        }
    }

    #[test]
    fn the_distribution_that_installs_the_package_takes_the_rules_of_the_published_one() {
        // The copy under another name, installed as `pkg-fork`.
        let renames = dist_renames(
            [RULES],
            |name| name == "pkg-other",
            |package| (package == "pkg").then(|| "pkg_fork".to_string()),
            |holder| (holder == "pkg_fork").then(|| "pkg-fork".to_string()),
        );
        assert_eq!(
            renames,
            [("pkg-python".to_string(), "pkg-fork".to_string())]
        );
        let text = rewrite_dists(RULES, &renames);
        assert!(text.contains("dist = \"pkg-fork\""), "{text}");
        // The package under its own name, published as `pkg-custom`.
        let renames = dist_renames(
            [RULES],
            |_| false,
            |package| Some(package.to_string()),
            |holder| (holder == "pkg").then(|| "pkg-custom".to_string()),
        );
        assert_eq!(
            renames,
            [("pkg-python".to_string(), "pkg-custom".to_string())]
        );
        // Installed under the published name, or not in the site: left as it is.
        let installed = dist_renames(
            [RULES],
            |n| n == "pkg-python",
            |p| Some(p.into()),
            |_| Some("x".into()),
        );
        assert!(installed.is_empty());
        let absent = dist_renames([RULES], |_| false, |_| None, |_| Some("x".into()));
        assert!(absent.is_empty());
    }

    #[test]
    fn no_copy_where_the_package_is_there_or_nothing_holds_its_layout() {
        // The published package itself: its rules stay its own.
        let dir = site(&[("pkg", LAYOUT), ("pkg_fork", LAYOUT)]);
        assert!(relocations([RULES], dir.path()).is_empty());
        // Shared one-level names (`utils.py`) and one deeper path are no layout.
        let dir = site(&[("other", &["utils.py", "comm/mixed_comm.py", "data/"])]);
        assert!(relocations([RULES], dir.path()).is_empty());
        // Two copies that hold as much: neither is picked.
        let dir = site(&[("fork_a", LAYOUT), ("fork_b", LAYOUT)]);
        assert!(relocations([RULES], dir.path()).is_empty());
    }
}
