//! The prefilter and chunked parsing may over-match, never under-match: on every fixture site,
//! the default scan finds exactly the gates (and predicates) that parsing every file whole
//! finds.

use gatefix::rules::Rules;
use gatefix::scan::{ScanOptions, scan_with};
use gatefix::site::Site;

fn summary(
    options: ScanOptions,
    root: &std::path::Path,
) -> Vec<(String, u32, u32, String, String)> {
    let site = Site::open(root).unwrap();
    let rules = Rules::load(None).unwrap();
    scan_with(&site, &rules, options)
        .gates
        .into_iter()
        .map(|g| {
            (
                g.file,
                g.line,
                g.column,
                g.form.name().to_string(),
                match g.assumes {
                    Some(name) => format!("(assumes {name}) {}", g.predicate),
                    None => g.predicate.to_string(),
                },
            )
        })
        .collect()
}

#[test]
fn every_fixture_gate_survives_the_prefilter_and_chunking() {
    let sites = std::fs::read_dir("testdata/sites")
        .unwrap()
        .map(|entry| entry.unwrap().path())
        // The resolver fixtures are one site too: every pattern the semantic model reads.
        .chain([std::path::PathBuf::from("testdata/resolve")]);
    for root in sites {
        let exhaustive = summary(
            ScanOptions {
                prefilter: false,
                chunking: false,
                kernel_sources: false,
                ..ScanOptions::default()
            },
            &root,
        );
        let fast = summary(ScanOptions::default(), &root);
        assert!(!exhaustive.is_empty(), "{} has gates", root.display());
        assert_eq!(fast, exhaustive, "{}", root.display());
    }
}
