//! The fuzz targets, as plain functions: the libFuzzer wrappers in `fuzz_targets/` and the
//! stable-Rust `loop` harness call the same code. Each must return on any input: a panic or a
//! hang is a finding.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The targets, by name, with the folders (relative to the repository) their seeds come from.
pub const TARGETS: &[(&str, fn(&[u8]), &[&str])] = &[
    (
        "kernel_bytes",
        kernel_bytes,
        &[
            "testdata/fatbin-samples/cubin129",
            "testdata/fatbin-samples/cubin13",
            "testdata/fatbin-samples/fatbin",
            "testdata/fatbin-samples/so",
            "testdata/fatbin-samples/obj",
        ],
    ),
    ("python_scan", python_scan, &["testdata/sites", "testdata/resolve"]),
    (
        "cuda_source",
        cuda_source,
        &["testdata/kernel-layers", "testdata/fatbin-samples/src", "testdata/venvs/fusion"],
    ),
    ("rules_toml", rules_toml, &["rules"]),
    ("patch_toml", patch_toml, &["patches"]),
];

/// The ELF / fatbin / cubin / PTX reader: strict and lenient parses, and the loadability
/// summary of what the lenient one found.
pub fn kernel_bytes(data: &[u8]) {
    let _ = gatefix::kernel::parse_bytes(data);
    let _ = gatefix::kernel::parse_bytes_lenient(data);
    let _ = gatefix::kernel::sniff(data);
}

/// The Python scan: the bytes become the one module of a site, audited the default way and,
/// when the first byte is odd, exhaustively (every file parsed whole).
pub fn python_scan(data: &[u8]) {
    static RULES: OnceLock<gatefix::rules::Rules> = OnceLock::new();
    let rules = RULES.get_or_init(|| gatefix::rules::Rules::load(None).expect("embedded rules"));
    let site_dir = site_dir();
    std::fs::write(site_dir.join("pkg/mod.py"), data).expect("write the one module");
    let site = gatefix::site::Site::open(site_dir).expect("open the one-file site");
    let mut options = gatefix::scan::ScanOptions::default();
    if data.first().is_some_and(|b| b & 1 == 1) {
        options.prefilter = false;
        options.chunking = false;
    }
    let _ = gatefix::scan::scan_with(&site, rules, options);
}

/// The site folder, made once for the run (`pkg/mod.py` is rewritten each time). Held in a
/// static, not leaked from a thread-local: LeakSanitizer does not see thread-local roots and
/// reported the leaked path as a leak on every job.
fn site_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tempfile::tempdir().expect("temp dir").keep();
        std::fs::create_dir_all(dir.join("pkg")).expect("mkdir");
        std::fs::write(dir.join("pkg/__init__.py"), "").expect("write");
        dir
    })
}

/// The CUDA C++ reader of the kernel layers: blanking, directives, `__global__` bodies,
/// includes and host checks (`FileFacts::from_text`), then the preprocessor's liveness of every
/// line for a device pass at three architectures and variants, and for the host pass.
pub fn cuda_source(data: &[u8]) {
    use gatefix::arch::{Arch, Variant};
    use gatefix::kernel::preproc::{Env, liveness};
    let text = String::from_utf8_lossy(data);
    let rules = gatefix::kernel::layers::LayerRules::embedded();
    let facts = gatefix::kernel::layers::FileFacts::from_text("fuzz.cu", &text, rules);
    let envs = [
        Env::device(Arch::from_sm(90, Variant::A), Some(Variant::A), Some((12, 8))),
        Env::device(Arch::from_sm(120, Variant::Plain), Some(Variant::F), None),
        Env::device(Arch::from_sm(121, Variant::Plain), None, Some((13, 0))),
        Env::host(None),
    ];
    for env in &envs {
        let live = liveness(&facts.directives, facts.line_count, env);
        for line in 1..=facts.line_count.min(4096) {
            let _ = live.at(line);
            let _ = live.guard_of(line);
        }
    }
}

/// A rule file (`rules/*.toml`): TOML, then every expression in it.
pub fn rules_toml(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        let mut rules = gatefix::rules::Rules::default();
        let _ = rules.add_file(Path::new("fuzz.toml"), text);
    }
}

/// A patch file (`patches/*.toml`).
pub fn patch_toml(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = gatefix::patch::model::parse_patch(Path::new("fuzz.toml"), text);
    }
}
