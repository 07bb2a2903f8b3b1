//! No import circles in `src/`: data flows one way (site → scan → gate → kernel → verdict →
//! patch → ledger → report), so no module may reach itself through the modules it uses.
//!
//! The graph is read from the sources, not from the compiler: the modules are the files that
//! `mod` declarations reach from `src/lib.rs` (test-only modules left out), and a module uses
//! another when a `crate::`, `super::` or `self::` path in its non-test code names it or an
//! item inside it. A path names the longest module prefix it has.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Ident(String),
    PathSep,
    Open,
    Close,
    Comma,
    Semi,
    Hash,
    Other(char),
}

/// Rust tokens that matter for paths; comments, strings, chars and lifetimes dropped.
fn tokens(src: &str) -> Vec<Token> {
    let chars: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if c == 'r'
            && (next == Some('"') || next == Some('#'))
            && raw_string_end(&chars, i).is_some()
        {
            i = raw_string_end(&chars, i).unwrap();
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
        } else if c == '\'' {
            // A char literal ('x', '\n', '\u{1F}') or a lifetime ('a).
            if next == Some('\\') {
                i += 2;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if chars.get(i + 2) == Some(&'\'') {
                i += 3;
            } else {
                i += 1;
            }
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push(Token::Ident(chars[start..i].iter().collect()));
        } else if c.is_whitespace() {
            i += 1;
        } else if c == ':' && next == Some(':') {
            out.push(Token::PathSep);
            i += 2;
        } else {
            out.push(match c {
                '{' => Token::Open,
                '}' => Token::Close,
                ',' => Token::Comma,
                ';' => Token::Semi,
                '#' => Token::Hash,
                c => Token::Other(c),
            });
            i += 1;
        }
    }
    out
}

/// End of a raw string starting at `i` (`r"..."`, `r#"..."#`), if it is one.
fn raw_string_end(chars: &[char], i: usize) -> Option<usize> {
    let mut j = i + 1;
    let mut hashes = 0;
    while chars.get(j) == Some(&'#') {
        hashes += 1;
        j += 1;
    }
    if chars.get(j) != Some(&'"') {
        return None;
    }
    j += 1;
    while j < chars.len() {
        if chars[j] == '"' && (1..=hashes).all(|k| chars.get(j + k) == Some(&'#')) {
            return Some(j + 1 + hashes);
        }
        j += 1;
    }
    Some(chars.len())
}

/// The tokens with every `#[cfg(test)]` item removed.
fn without_test_items(tokens: Vec<Token>) -> Vec<Token> {
    let is_cfg_test = |t: &[Token]| {
        matches!(t, [Token::Hash, Token::Other('['), Token::Ident(cfg), Token::Other('('), Token::Ident(test), Token::Other(')'), Token::Other(']'), ..]
            if cfg == "cfg" && test == "test")
    };
    let mut out = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        if !is_cfg_test(&tokens[i..]) {
            out.push(tokens[i].clone());
            i += 1;
            continue;
        }
        // Skip the item: up to its `;` or through its first brace block.
        i += 7;
        let mut depth = 0;
        while i < tokens.len() {
            match tokens[i] {
                Token::Open => depth += 1,
                Token::Close => {
                    depth -= 1;
                    if depth == 0 {
                        i += 1;
                        break;
                    }
                }
                Token::Semi if depth == 0 => {
                    i += 1;
                    break;
                }
                _ => {}
            }
            i += 1;
        }
    }
    out
}

/// `mod name;` declarations (test modules already removed).
fn declared_modules(tokens: &[Token]) -> Vec<String> {
    tokens
        .windows(3)
        .filter_map(|w| match w {
            [Token::Ident(m), Token::Ident(name), Token::Semi] if m == "mod" => Some(name.clone()),
            _ => None,
        })
        .collect()
}

/// Every path `crate::…`, `super::…`, `self::…` or `child::…` (a module declared here)
/// names, use trees expanded, as segments; a child's path comes back as `self::child::…`.
fn paths(tokens: &[Token], children: &[String]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        if matches!(&tokens[i], Token::Ident(u) if u == "use") {
            let mut trees = Vec::new();
            i = use_tree(tokens, i + 1, Vec::new(), &mut trees);
            for mut path in trees {
                if path.first().is_some_and(|first| children.contains(first)) {
                    path.insert(0, "self".to_string());
                }
                out.push(path);
            }
            continue;
        }
        if let Token::Ident(first) = &tokens[i]
            && (matches!(first.as_str(), "crate" | "super" | "self") || children.contains(first))
            && tokens.get(i + 1) == Some(&Token::PathSep)
            && (i == 0 || tokens[i - 1] != Token::PathSep)
        {
            let mut path = vec![first.clone()];
            if children.contains(first) {
                path.insert(0, "self".to_string());
            }
            let mut j = i + 1;
            while tokens.get(j) == Some(&Token::PathSep) {
                match tokens.get(j + 1) {
                    Some(Token::Ident(seg)) => path.push(seg.clone()),
                    _ => break,
                }
                j += 2;
            }
            out.push(path);
            i = j;
            continue;
        }
        i += 1;
    }
    out
}

/// Reads one use tree at `i` under `prefix`; returns the index after it.
fn use_tree(
    tokens: &[Token],
    mut i: usize,
    mut prefix: Vec<String>,
    out: &mut Vec<Vec<String>>,
) -> usize {
    loop {
        match tokens.get(i) {
            Some(Token::Ident(seg)) if seg != "as" => {
                prefix.push(seg.clone());
                i += 1;
                if tokens.get(i) == Some(&Token::PathSep) {
                    i += 1;
                    continue;
                }
                out.push(prefix);
                // `as name`, then the end of this tree.
                while !matches!(
                    tokens.get(i),
                    None | Some(Token::Comma | Token::Close | Token::Semi)
                ) {
                    i += 1;
                }
                return i;
            }
            Some(Token::Open) => {
                i += 1;
                loop {
                    i = use_tree(tokens, i, prefix.clone(), out);
                    match tokens.get(i) {
                        Some(Token::Comma) => i += 1,
                        Some(Token::Close) => return i + 1,
                        _ => return i,
                    }
                    if tokens.get(i) == Some(&Token::Close) {
                        return i + 1;
                    }
                }
            }
            Some(Token::Other('*')) => {
                out.push(prefix);
                return i + 1;
            }
            _ => return i,
        }
    }
}

/// Modules of the library, by path (`gate::lower`), with their files' tokens.
fn modules() -> BTreeMap<Vec<String>, Vec<Token>> {
    let mut out = BTreeMap::new();
    let mut todo: Vec<(Vec<String>, PathBuf)> = vec![(Vec::new(), PathBuf::from("src/lib.rs"))];
    while let Some((module, file)) = todo.pop() {
        let src =
            std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let tokens = without_test_items(tokens(&src));
        // Children of `a.rs` live in `a/`; of `lib.rs` and `a/mod.rs` beside them.
        let dir: PathBuf = match file.file_name().and_then(|n| n.to_str()) {
            Some("lib.rs" | "mod.rs") => file.parent().unwrap().to_path_buf(),
            _ => file.with_extension(""),
        };
        for child in declared_modules(&tokens) {
            let flat = dir.join(format!("{child}.rs"));
            let nested = dir.join(&child).join("mod.rs");
            let child_file = if flat.exists() { flat } else { nested };
            assert!(
                Path::new(&child_file).exists(),
                "module {child} of {}: no file",
                file.display()
            );
            let mut path = module.clone();
            path.push(child);
            todo.push((path, child_file));
        }
        out.insert(module, tokens);
    }
    out
}

/// Module → the modules it uses (itself, its ancestors' re-export paths aside).
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let modules = modules();
    let name = |m: &[String]| {
        if m.is_empty() {
            "crate".to_string()
        } else {
            m.join("::")
        }
    };
    let mut out = BTreeMap::new();
    for (module, tokens) in &modules {
        let mut uses = BTreeSet::new();
        let children: Vec<String> = declared_modules(tokens);
        for path in paths(tokens, &children) {
            let mut absolute: Vec<String> = Vec::new();
            let mut segments = path.iter().peekable();
            match segments.peek().map(|s| s.as_str()) {
                Some("crate") => {
                    segments.next();
                }
                Some("self" | "super") => {
                    absolute = module.clone();
                    while let Some(s) = segments.next_if(|s| *s == "self" || *s == "super") {
                        if s == "super" {
                            absolute.pop();
                        }
                    }
                }
                _ => continue,
            }
            absolute.extend(segments.cloned());
            let target = (0..=absolute.len())
                .rev()
                .map(|n| &absolute[..n])
                .find(|prefix| modules.contains_key(*prefix))
                .unwrap_or(&[]);
            // A module names its ancestors' items (`super::Error`) without depending on its
            // siblings; the root's items are no module's concern here.
            if !target.is_empty() && target != module.as_slice() {
                uses.insert(name(target));
            }
        }
        out.insert(name(module), uses);
    }
    out
}

/// One cycle through each strongly connected component of more than one module.
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    let mut seen_in_cycle = BTreeSet::new();
    for start in graph.keys() {
        if seen_in_cycle.contains(start) {
            continue;
        }
        // Shortest path from a successor of `start` back to `start`.
        let mut parent: BTreeMap<&String, &String> = BTreeMap::new();
        let mut queue: std::collections::VecDeque<&String> = graph[start].iter().collect();
        for next in &graph[start] {
            parent.insert(next, start);
        }
        while let Some(node) = queue.pop_front() {
            if node == start {
                let mut cycle = vec![start.clone()];
                let mut at = parent[start];
                while at != start {
                    cycle.push(at.clone());
                    at = parent[at];
                }
                cycle.push(start.clone());
                cycle.reverse();
                seen_in_cycle.extend(cycle.iter().cloned());
                found.push(cycle);
                break;
            }
            for next in graph.get(node).into_iter().flatten() {
                if !parent.contains_key(next) {
                    parent.insert(next, node);
                    queue.push_back(next);
                }
            }
        }
    }
    found
}

#[test]
fn src_has_no_import_circles() {
    let graph = graph();
    assert!(
        graph.len() > 50,
        "the modules were found: {:?}",
        graph.keys()
    );
    assert!(
        graph["gate::lower"].contains("gate::chunks"),
        "paths are read: {:?}",
        graph["gate::lower"]
    );
    let cycles = cycles(&graph);
    let shown: Vec<String> = cycles.iter().map(|c| c.join(" -> ")).collect();
    assert!(
        cycles.is_empty(),
        "import circles in src/:\n{}",
        shown.join("\n")
    );
}

#[test]
fn a_circle_is_found_and_named() {
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("a", vec!["b"]),
        ("b", vec!["c"]),
        ("c", vec!["a", "d"]),
        ("d", vec![]),
    ]
    .into_iter()
    .map(|(m, uses)| (m.to_string(), uses.into_iter().map(String::from).collect()))
    .collect();
    assert_eq!(cycles(&graph), vec![vec!["a", "b", "c", "a"]]);
}

#[test]
fn use_trees_test_items_and_literals_are_read_as_rust_reads_them() {
    let src = r##"
        use super::{a::{B, C as D}, e};
        use crate::f::*;
        // use crate::comment;
        const S: &str = "crate::string";
        const R: &str = r#"crate::raw"#;
        fn x<'a>(c: char) { let _ = '"'; crate::g::h(); }
        #[cfg(test)]
        mod tests { use crate::test_only; }
        #[cfg(test)]
        mod more;
    "##;
    let tokens = without_test_items(tokens(src));
    let shown: Vec<String> = paths(&tokens, &[]).iter().map(|p| p.join("::")).collect();
    assert_eq!(
        shown,
        [
            "super::a::B",
            "super::a::C",
            "super::e",
            "crate::f",
            "crate::g::h"
        ]
    );
    assert!(declared_modules(&tokens).is_empty());
}
