//! The resolver fixture harness: every file of `testdata/resolve/` is one pattern, with the
//! expected gate written on its line (see `testdata/resolve/README.md`). A missing gate, an
//! extra gate, a wrong predicate and a wrong assumption all fail. Patterns the resolver does
//! not handle yet are listed in `EXPECTED_FAIL`; one of them that starts passing fails the
//! test too, so the list only ever shrinks and never hides a pattern.

use std::collections::BTreeMap;
use std::path::Path;

use gatefix::gate::index::{ModuleIndex, module_name};
use gatefix::gate::ir::SharedModule;
use gatefix::gate::resolve::Resolver;
use gatefix::gate::sites::resolve_module;
use gatefix::gate::tokens::resolve_tokens;
use gatefix::rules::Rules;
use gatefix::scan::{Gate, ScanOptions, python_files, scan_with};
use gatefix::site::Site;

const ROOT: &str = "testdata/resolve";

/// Patterns the resolver misses today, by file name. Shrink it; never grow it to hide a
/// regression.
const EXPECTED_FAIL: &[&str] = &[];

#[derive(Debug, Clone, PartialEq)]
struct Expect {
    assumes: Option<String>,
    predicate: String,
}

/// The expectations of one line: `Some(list)` when the line carries a `# gate` or `# no-gate`
/// annotation (an empty list for `# no-gate`), `None` when it carries none.
fn line_expectations(line: &str) -> Result<Option<Vec<Expect>>, String> {
    let mut marks: Vec<usize> = line
        .match_indices("# gate")
        .map(|(i, _)| i)
        .chain(line.match_indices("# no-gate").map(|(i, _)| i))
        .collect();
    if marks.is_empty() {
        return Ok(None);
    }
    marks.sort_unstable();
    let mut out = Vec::new();
    for (n, &start) in marks.iter().enumerate() {
        let end = marks.get(n + 1).copied().unwrap_or(line.len());
        let mark = line[start + 2..end].trim();
        if mark == "no-gate" {
            if marks.len() != 1 {
                return Err("`# no-gate` cannot be combined with `# gate`".into());
            }
            return Ok(Some(Vec::new()));
        }
        let (head, predicate) = mark
            .split_once(':')
            .ok_or_else(|| format!("`{mark}`: expected `gate: PRED`"))?;
        let assumes = match head.trim() {
            "gate" => None,
            other => Some(
                other
                    .strip_prefix("gate(assumes ")
                    .and_then(|r| r.strip_suffix(')'))
                    .ok_or_else(|| format!("`{other}`: expected `gate(assumes PHRASE)`"))?
                    .trim()
                    .to_string(),
            ),
        };
        out.push(Expect {
            assumes,
            predicate: predicate.trim().to_string(),
        });
    }
    Ok(Some(out))
}

/// `*` matches any text; everything else literally.
fn glob(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == text;
    }
    let (first, rest) = parts.split_first().expect("split gives one part");
    let Some(mut tail) = text.strip_prefix(first) else {
        return false;
    };
    for (i, part) in rest.iter().enumerate() {
        if i == rest.len() - 1 {
            return tail.ends_with(part);
        }
        match tail.find(part) {
            Some(at) => tail = &tail[at + part.len()..],
            None => return false,
        }
    }
    true
}

fn matches(expect: &Expect, gate: &Gate) -> bool {
    glob(&expect.predicate, &gate.predicate.to_string()) && expect.assumes == gate.assumes
}

fn describe(gate: &Gate) -> String {
    match &gate.assumes {
        Some(name) => format!("gate(assumes {name}): {}", gate.predicate),
        None => format!("gate: {}", gate.predicate),
    }
}

/// The mismatches of one fixture file against its gate records.
fn check_file(path: &Path, gates: &[&Gate]) -> Vec<String> {
    let source = std::fs::read_to_string(path).expect("fixture is UTF-8");
    let mut by_line: BTreeMap<u32, Vec<&Gate>> = BTreeMap::new();
    for gate in gates {
        by_line.entry(gate.line).or_default().push(gate);
    }
    let mut problems = Vec::new();
    let name = path.file_name().unwrap().to_string_lossy();
    for (index, text) in source.lines().enumerate() {
        let line = index as u32 + 1;
        let mut actual = by_line.remove(&line).unwrap_or_default();
        actual.sort_by_key(|g| g.column);
        let expected = match line_expectations(text) {
            Ok(expected) => expected.unwrap_or_default(),
            Err(why) => {
                problems.push(format!("{name}:{line}: bad expectation: {why}"));
                continue;
            }
        };
        if expected.len() != actual.len()
            || expected.iter().zip(&actual).any(|(e, g)| !matches(e, g))
        {
            let want: Vec<String> = expected
                .iter()
                .map(|e| match &e.assumes {
                    Some(n) => format!("gate(assumes {n}): {}", e.predicate),
                    None => format!("gate: {}", e.predicate),
                })
                .collect();
            let got: Vec<String> = actual.iter().map(|g| describe(g)).collect();
            problems.push(format!(
                "{name}:{line}: expected [{}], got [{}]   | {}",
                want.join(" ; "),
                got.join(" ; "),
                text.trim()
            ));
        }
    }
    for (line, rest) in by_line {
        for gate in rest {
            problems.push(format!(
                "{name}:{line}: a gate past the end of the file: {}",
                describe(gate)
            ));
        }
    }
    problems
}

fn scan(options: ScanOptions) -> Vec<Gate> {
    let site = Site::open(Path::new(ROOT)).unwrap();
    let rules = Rules::load(None).unwrap();
    scan_with(&site, &rules, options).gates
}

#[test]
fn the_parser_of_expectations() {
    assert_eq!(line_expectations("x = 1").unwrap(), None);
    assert_eq!(line_expectations("x = 1  # no-gate").unwrap(), Some(vec![]));
    assert_eq!(
        line_expectations("if a:  # gate: major >= 9 # gate(assumes arch): sm == 90").unwrap(),
        Some(vec![
            Expect {
                assumes: None,
                predicate: "major >= 9".into()
            },
            Expect {
                assumes: Some("arch".into()),
                predicate: "sm == 90".into()
            },
        ])
    );
    assert!(line_expectations("x  # gate major").is_err());
    assert!(glob(
        "unknown(*capability*)",
        "unknown(the `capability` parameter)"
    ));
    assert!(!glob("unknown(*capability*)", "major >= 9"));
    assert!(glob("major >= 9", "major >= 9"));
}

#[test]
fn every_resolver_pattern() {
    let gates = scan(ScanOptions::default());
    let mut by_file: BTreeMap<String, Vec<&Gate>> = BTreeMap::new();
    for gate in &gates {
        by_file.entry(gate.file.clone()).or_default().push(gate);
    }
    let mut files: Vec<_> = std::fs::read_dir(ROOT)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "py"))
        .collect();
    files.sort();
    assert!(files.len() >= 60, "at least 60 patterns");
    let mut unexpected = Vec::new();
    let mut expected_fail_seen = Vec::new();
    for path in &files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let problems = check_file(path, by_file.get(&name).map_or(&[][..], |v| v));
        let listed = EXPECTED_FAIL.contains(&name.as_str());
        if listed {
            expected_fail_seen.push(name.clone());
            if problems.is_empty() {
                unexpected.push(format!(
                    "{name} passes now: remove it from EXPECTED_FAIL in tests/resolve.rs"
                ));
            } else {
                eprintln!("expected to fail: {}", problems.join("\n    "));
            }
        } else {
            unexpected.extend(problems);
        }
    }
    for name in EXPECTED_FAIL {
        if !expected_fail_seen.iter().any(|n| n == name) {
            unexpected.push(format!(
                "EXPECTED_FAIL names {name}, which is not a fixture"
            ));
        }
    }
    assert!(unexpected.is_empty(), "\n{}\n", unexpected.join("\n"));
}

#[test]
fn the_fast_path_finds_what_parsing_everything_finds() {
    let summary = |gates: Vec<Gate>| -> Vec<(String, u32, u32, String, String)> {
        gates
            .into_iter()
            .map(|g| {
                (
                    g.file,
                    g.line,
                    g.column,
                    g.form.name().to_string(),
                    describe_owned(&g.predicate.to_string(), &g.assumes),
                )
            })
            .collect()
    };
    let fast = summary(scan(ScanOptions::default()));
    let exhaustive = summary(scan(ScanOptions {
        prefilter: false,
        chunking: false,
        kernel_sources: false,
        ..ScanOptions::default()
    }));
    assert_eq!(fast, exhaustive);
}

fn describe_owned(predicate: &str, assumes: &Option<String>) -> String {
    match assumes {
        Some(name) => format!("({name}) {predicate}"),
        None => predicate.to_string(),
    }
}

/// Every module of the fixtures resolved on a resolver of its own, as the scan resolves
/// them: each record as text (module, line, form, predicate, assumption), and how many
/// values each module's resolver computed afresh.
fn resolve_every_module(replay: bool) -> (Vec<String>, BTreeMap<String, u64>) {
    let root = Path::new(ROOT);
    let rules = Rules::load(None).unwrap();
    let files = python_files(root, &mut Vec::new());
    let tokens = resolve_tokens(&rules.resolve_names());
    let index = ModuleIndex::new(root, &files, tokens.clone());
    let modules: Vec<SharedModule> = files
        .iter()
        .filter_map(|file| module_name(file))
        .filter_map(|(module, _)| index.get(&module))
        .collect();
    index.set_callers(modules.iter());
    let mut records = Vec::new();
    let mut computations = BTreeMap::new();
    for module in &modules {
        let resolver = Resolver::new(&index, &rules, tokens.clone());
        let resolver = if replay {
            resolver
        } else {
            resolver.without_replays()
        };
        for site in resolve_module(&resolver, module) {
            records.push(format!(
                "{}:{} {:?} {} {:?}",
                module.module,
                module.sites[site.site_index].start.0,
                site.form,
                site.predicate,
                site.assumes
            ));
        }
        computations.insert(module.module.clone(), resolver.computations());
    }
    (records, computations)
}

/// Values cut short (by the depth limit, a cycle) are replayed from where they were computed
/// rather than worked out again (`resolve::Replay`): exact by construction, so every record of
/// every fixture is the same with and without, and the fixtures compute less with.
/// `cut_then_kept.py` reads a cut value again after what it needs was kept: a replay that
/// ignored what was kept since (`resolve::Stance`) gives the cut there, and this test fails.
#[test]
fn replaying_values_cut_short_changes_no_record() {
    let (replayed, fewer) = resolve_every_module(true);
    let (recomputed, more) = resolve_every_module(false);
    assert!(replayed.len() > 100, "{} records", replayed.len());
    assert_eq!(replayed, recomputed);
    // A chain of locals read past the depth limit: each link read twice per read of the
    // next, so without replays the links near the end are worked out ~2**n times.
    let chain = |counts: &BTreeMap<String, u64>| counts["deep_local_chain"];
    let total = |counts: &BTreeMap<String, u64>| counts.values().sum::<u64>();
    eprintln!(
        "computations with replays / without: deep_local_chain {} / {}, every fixture {} / {}",
        chain(&fewer),
        chain(&more),
        total(&fewer),
        total(&more)
    );
    assert!(
        chain(&fewer) * 10 < chain(&more),
        "deep_local_chain: {} computations with replays, {} without",
        chain(&fewer),
        chain(&more)
    );
    assert!(total(&fewer) < total(&more));
}
