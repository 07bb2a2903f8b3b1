//! The syntax tree (`gatefix::syntax`, ruff's parser in tree-sitter-python's shape) against
//! tree-sitter-python's own tree, file by file, on real wheels: every node's kind, field and
//! byte range. The differences left are forms tree-sitter misreads (`src/syntax/mod.rs`).
//! Needs the wheels of `ci/fetch-wheels.sh`, so `#[ignore]`d in a plain `cargo test`.

mod common;

use std::collections::BTreeMap;

use common::fixture::wheel_site;
use rayon::prelude::*;

/// Compares every Python file of the wheels; returns (files compared, files that differ),
/// printing the first difference of each kind.
fn compare(prefixes: &[&str]) -> (usize, usize) {
    let site = wheel_site(prefixes);
    let files: Vec<std::path::PathBuf> = walkdir::WalkDir::new(site.path())
        .into_iter()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "py"))
        .map(|e| e.into_path())
        .collect();
    let results: Vec<Option<Option<String>>> = files
        .par_iter()
        .map(|file| {
            let src = std::fs::read(file).ok()?;
            let theirs = gatefix::syntax::ts::outline_of_text(&src)?;
            let ours = gatefix::syntax::outline(&gatefix::syntax::parse(&src));
            if ours == theirs {
                return Some(None);
            }
            let at = theirs
                .iter()
                .zip(&ours)
                .position(|(a, b)| a != b)
                .unwrap_or(theirs.len().min(ours.len()));
            let word = |line: Option<&String>| {
                line.map_or(String::new(), |l| {
                    l.split_whitespace().next().unwrap_or("").to_string()
                })
            };
            let relative = file.strip_prefix(site.path()).unwrap_or(file);
            Some(Some(format!(
                "{} / {}\t{}: {} | {}",
                word(theirs.get(at)),
                word(ours.get(at)),
                relative.display(),
                theirs.get(at).map_or("", |s| s.trim()),
                ours.get(at).map_or("", |s| s.trim()),
            )))
        })
        .collect();
    let compared = results.iter().flatten().count();
    let mut kinds: BTreeMap<String, (usize, String)> = BTreeMap::new();
    for difference in results.iter().flatten().flatten() {
        let (kind, example) = difference.split_once('\t').unwrap();
        let entry = kinds
            .entry(kind.to_string())
            .or_insert((0, example.to_string()));
        entry.0 += 1;
    }
    let differing: usize = kinds.values().map(|(n, _)| n).sum();
    eprintln!(
        "{}: {compared} files compared, {differing} differ",
        prefixes.join(" + ")
    );
    for (kind, (n, example)) in &kinds {
        eprintln!("  {n:5}  tree-sitter {kind}, e.g. {example}");
    }
    (compared, differing)
}

#[test]
#[ignore = "needs the real wheels (ci/fetch-wheels.sh)"]
fn the_tree_has_tree_sitters_shape_on_real_wheels() {
    for prefixes in [
        &["sglang-0.5.23-", "flashinfer_python-0.7.2-"][..],
        &[
            "vllm-0.33.0-",
            "flashinfer_python-0.7.2.post1-",
            "triton-3.5.1-",
        ][..],
    ] {
        let (compared, differing) = compare(prefixes);
        assert!(compared > 5_000, "{compared} files");
        // 11 of 8,097 and 17 of 6,568 on 2026-12-05, every one a form tree-sitter misreads.
        assert!(
            differing * 200 <= compared,
            "{differing} of {compared} files differ (more than 0.5%)"
        );
    }
}
