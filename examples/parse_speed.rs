//! Parses every Python file of a site with both parsers, in alternating rounds, and prints
//! min / median / max for each and the ratio at the median (`bench/parsers.sh` runs it).
//! The files are read into memory first: what is timed is parsing alone.

use rayon::prelude::*;
use std::time::{Duration, Instant};

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(site) = args.next() else {
        eprintln!("usage: parse_speed SITE [ROUNDS]");
        std::process::exit(2);
    };
    let rounds: usize = args.next().and_then(|r| r.parse().ok()).unwrap_or(5);
    let mut warnings = Vec::new();
    let files = gatefix::scan::python_files(std::path::Path::new(&site), &mut warnings);
    let texts: Vec<Vec<u8>> = files
        .par_iter()
        .filter_map(|f| std::fs::read(std::path::Path::new(&site).join(f)).ok())
        .collect();
    let bytes: usize = texts.iter().map(Vec::len).sum();
    println!(
        "{} files, {:.0} MB, {} rounds, {} threads",
        texts.len(),
        bytes as f64 / 1e6,
        rounds,
        rayon::current_num_threads()
    );
    let tree_sitter = || {
        texts
            .par_iter()
            .map_init(
                || {
                    let mut parser = tree_sitter::Parser::new();
                    parser
                        .set_language(&tree_sitter_python::LANGUAGE.into())
                        .expect("grammar");
                    parser
                },
                |parser, text| {
                    parser
                        .parse(text, None)
                        .map_or(0, |t| t.root_node().end_byte())
                },
            )
            .sum::<usize>()
    };
    let syntax = || {
        texts
            .par_iter()
            .map(|text| gatefix::syntax::parse(text).root_node().end_byte())
            .sum::<usize>()
    };
    let (mut ts, mut ours) = (Vec::new(), Vec::new());
    for round in 0..=rounds {
        let clock = Instant::now();
        std::hint::black_box(tree_sitter());
        let a = clock.elapsed();
        let clock = Instant::now();
        std::hint::black_box(syntax());
        let b = clock.elapsed();
        // The first round warms the page cache and the allocator: not timed.
        if round > 0 {
            ts.push(a);
            ours.push(b);
        }
    }
    let stats = |mut v: Vec<Duration>| {
        v.sort();
        (v[0], v[v.len() / 2], v[v.len() - 1])
    };
    let (ts_min, ts_med, ts_max) = stats(ts);
    let (o_min, o_med, o_max) = stats(ours);
    println!(
        "tree-sitter-python  {ts_min:.2?} / {ts_med:.2?} / {ts_max:.2?}  (min / median / max)"
    );
    println!("gatefix::syntax     {o_min:.2?} / {o_med:.2?} / {o_max:.2?}");
    println!(
        "tree-sitter / syntax at the median: {:.1}x",
        ts_med.as_secs_f64() / o_med.as_secs_f64()
    );
}
