//! The kernel inventory checked against oracles produced by other tools on the same bytes:
//! cuobjdump listings (`listings/`), and the reference dumper's decoded headers (`headers/`).
//! Expected values are parsed from those files, never restated here.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use gatefix::arch::{Arch, Variant};
use gatefix::kernel::{
    Compression, Container, Coverage, CoverageCounts, EntryKind, FileKind, Location, Parsed,
    coverage, inventory_path, parse_bytes,
};

const SAMPLE_DIRS: [&str; 5] = ["cubin129", "cubin13", "fatbin", "so", "obj"];

fn samples_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/fatbin-samples")
}

fn sample_files(dir: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(samples_root().join(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no samples in {dir}");
    files
}

fn parse_file(path: &Path) -> Parsed {
    let data = fs::read(path).unwrap();
    parse_bytes(&data).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `sm_120a` from cuobjdump names such as `multi.4.sm_120a.cubin` or `k.sm_90.ptx`.
fn listed_arch(name: &str) -> Arch {
    let stem = name.rsplit_once('.').unwrap().0;
    stem.rsplit('.').next().unwrap().parse().unwrap()
}

/// Listing blocks keyed by (`-all` given, "elf" or "ptx").
fn read_listing(path: &Path) -> BTreeMap<(bool, &'static str), Vec<Arch>> {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut out = BTreeMap::new();
    let mut key = None;
    for line in text.lines() {
        if let Some(cmd) = line.strip_prefix("$ cuobjdump ") {
            let kind = if cmd.contains("--list-elf") {
                "elf"
            } else {
                "ptx"
            };
            key = Some((cmd.starts_with("-all "), kind));
            out.entry(key.unwrap()).or_insert_with(Vec::new);
        } else if let Some((_, name)) = line
            .split_once(" file ")
            .and_then(|(_, rest)| rest.split_once(": "))
        {
            out.get_mut(&key.unwrap())
                .unwrap()
                .push(listed_arch(name.trim()));
        }
    }
    assert_eq!(
        out.len(),
        4,
        "{}: expected four cuobjdump blocks",
        path.display()
    );
    out
}

/// What cuobjdump would list: SASS `f` shows as plain (the cubin does not record it),
/// LTO-IR is never listed, concat members are listed individually.
fn listed_view(containers: &[&Container], kind: EntryKind) -> Vec<Arch> {
    let leaves = containers
        .iter()
        .flat_map(|c| c.leaves())
        .filter(|e| e.kind == kind);
    leaves
        .map(|e| match (e.kind, e.variant) {
            (EntryKind::Sass, Variant::F) => Arch::from_sm(e.arch, Variant::Plain),
            _ => e.target(),
        })
        .collect()
}

/// cuobjdump shows the executable fatbin, or the relocatable one when there is none; `-all`
/// shows both. Plain-data containers are ours alone.
fn cuobjdump_views(parsed: &Parsed) -> (Vec<&Container>, Vec<&Container>) {
    let walked: Vec<&Container> = parsed
        .containers
        .iter()
        .filter(|c| c.section != Location::PlainData)
        .collect();
    let executable: Vec<&Container> = walked.iter().copied().filter(|c| !c.relocatable).collect();
    let default = if executable.is_empty() {
        walked.clone()
    } else {
        executable
    };
    (default, walked)
}

#[test]
fn fatbins_and_host_elfs_match_cuobjdump_listings() {
    let mut checked = 0;
    for dir in ["fatbin", "so", "obj"] {
        for path in sample_files(dir) {
            let name = path.file_name().unwrap().to_str().unwrap();
            let listing = read_listing(&samples_root().join(format!("listings/{dir}_{name}.txt")));
            let parsed = parse_file(&path);
            let (default, all) = cuobjdump_views(&parsed);
            for ((with_all, kind), expected) in &listing {
                let view = if *with_all { &all } else { &default };
                let entry_kind = if *kind == "elf" {
                    EntryKind::Sass
                } else {
                    EntryKind::Ptx
                };
                let got = listed_view(view, entry_kind);
                assert_eq!(&got, expected, "{dir}/{name} {kind} (-all: {with_all})");
            }
            checked += 1;
        }
    }
    assert_eq!(checked, 22);
}

#[test]
fn cubins_match_cuobjdump_and_reference_headers() {
    let cuobjdump =
        fs::read_to_string(samples_root().join("listings/cubin_headers_cuobjdump.txt")).unwrap();
    let reference =
        fs::read_to_string(samples_root().join("headers/cubin_elf_headers.txt")).unwrap();
    let reference_archs: Vec<&str> = reference
        .lines()
        .filter_map(|l| l.split_once("-> "))
        .map(|(_, r)| r)
        .collect();
    let mut listed = BTreeMap::new();
    for line in cuobjdump.lines() {
        let (path, rest) = line.split_once(": ").unwrap();
        let sm = rest
            .split(", ")
            .chain(rest.split(' '))
            .find_map(|f| f.strip_prefix("sm="))
            .unwrap();
        listed.insert(
            path.to_string(),
            format!("sm_{}", sm.trim_end_matches(','))
                .parse::<Arch>()
                .unwrap(),
        );
    }
    let mut count = 0;
    for dir in ["cubin129", "cubin13"] {
        for path in sample_files(dir) {
            let key = format!("{dir}/{}", path.file_name().unwrap().to_str().unwrap());
            let parsed = parse_file(&path);
            assert_eq!(parsed.kind, FileKind::Cubin, "{key}");
            let [container] = parsed.containers.as_slice() else {
                panic!("{key}: one container")
            };
            let got = container.entries[0].target();
            assert_eq!(Some(&got), listed.get(&key), "{key} vs cuobjdump");
            assert!(
                reference_archs
                    .iter()
                    .any(|r| r.starts_with(&format!("{got} "))),
                "{key}: {got} not in reference"
            );
            assert!(!container.relocatable, "{key}");
            count += 1;
        }
    }
    assert_eq!(count, listed.len(), "every listed cubin is a sample");
}

/// One decoded line of `headers/fatbin_entry_headers.txt` (fbdump output).
#[derive(Debug, PartialEq)]
struct RefEntry {
    offset: u64,
    kind: u16,
    arch: String,
    version: String,
    codec: String,
    debug: bool,
}

fn field<'a>(line: &'a str, key: &str) -> &'a str {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(key))
        .unwrap_or_else(|| panic!("{key} in {line}"))
}

/// file -> [(section, container offset, entries)], sub-entries of concat groups flattened.
fn read_reference() -> BTreeMap<String, Vec<(String, u64, Vec<RefEntry>)>> {
    let text = fs::read_to_string(samples_root().join("headers/fatbin_entry_headers.txt")).unwrap();
    let mut out: BTreeMap<String, Vec<(String, u64, Vec<RefEntry>)>> = BTreeMap::new();
    let mut file = String::new();
    for line in text.lines() {
        if let Some(name) = line.strip_prefix("## ") {
            file = name.to_string();
            out.entry(file.clone()).or_default();
        } else if let Some(rest) = line.trim().strip_prefix("container in ") {
            let (section, at) = rest.split_once(" @0x").unwrap();
            let at = u64::from_str_radix(at.split(':').next().unwrap(), 16).unwrap();
            out.get_mut(&file)
                .unwrap()
                .push((section.to_string(), at, Vec::new()));
        } else if line.trim().starts_with("entry @+0x") {
            let base = out.get_mut(&file).unwrap().last_mut().unwrap();
            let flags = u64::from_str_radix(field(line, "flags=0x"), 16).unwrap();
            base.2.push(RefEntry {
                offset: base.1 + u64::from_str_radix(field(line, "@+0x"), 16).unwrap(),
                kind: field(line, "kind=")
                    .split('(')
                    .next()
                    .unwrap()
                    .parse()
                    .unwrap(),
                arch: field(line, "arch=").to_string(),
                version: field(line, "ver=").to_string(),
                codec: field(line, "codec=").to_string(),
                debug: flags & 2 != 0,
            });
        }
    }
    out
}

fn codec_name(c: Compression) -> &'static str {
    match c {
        Compression::None => "none",
        Compression::Zstd => "zstd",
        Compression::Lz4 => "lz4",
    }
}

fn section_name(c: &Container) -> &'static str {
    match c.section {
        Location::NvFatbin => ".nv_fatbin",
        Location::NvRelfatbin => "__nv_relfatbin",
        Location::PlainData => "plain-data",
        Location::File => "file",
    }
}

#[test]
fn entry_headers_match_reference_dump() {
    let reference = read_reference();
    assert_eq!(reference.len(), 22);
    for (file, containers) in &reference {
        let parsed = parse_file(&samples_root().join(file));
        assert_eq!(parsed.containers.len(), containers.len(), "{file}");
        for (ours, (section, at, entries)) in parsed.containers.iter().zip(containers) {
            assert_eq!(
                (section_name(ours), ours.offset),
                (section.as_str(), *at),
                "{file}"
            );
            assert_eq!(ours.relocatable, section == "__nv_relfatbin", "{file}");
            let mut flat = Vec::new();
            for e in &ours.entries {
                flat.push(e);
                flat.extend(&e.sub_entries);
            }
            let got: Vec<RefEntry> = flat
                .iter()
                .map(|e| RefEntry {
                    offset: e.offset,
                    kind: e.kind_code,
                    arch: format!("{}{}", e.arch, e.variant.suffix()),
                    version: e
                        .ptx_isa
                        .map(|v| v.to_string())
                        .unwrap_or_else(|| entries_version(entries, e.offset)),
                    codec: codec_name(e.compression).to_string(),
                    debug: e.debug,
                })
                .collect();
            assert_eq!(&got, entries, "{file} container @{at:#x}");
        }
    }
}

/// Non-PTX versions (cubin ABI, LTO, group) are not part of our model; take the reference's.
fn entries_version(entries: &[RefEntry], offset: u64) -> String {
    entries
        .iter()
        .find(|r| r.offset == offset)
        .map(|r| r.version.clone())
        .unwrap_or_default()
}

#[test]
fn ptx_isa_only_on_ptx_entries() {
    let parsed = parse_file(&samples_root().join("fatbin/big_concat.fatbin"));
    let leaves: Vec<_> = parsed.containers[0].leaves().collect();
    assert_eq!(leaves.len(), 4, "two ELF entries and two concat members");
    for e in leaves {
        assert_eq!(e.ptx_isa.is_some(), e.kind == EntryKind::Ptx);
        if let Some(isa) = e.ptx_isa {
            assert_eq!(isa.to_string(), "9.5");
            assert_eq!(
                e.compression,
                Compression::Zstd,
                "members inherit the group codec"
            );
        }
    }
}

fn counts_at(path: &str, target: &str) -> CoverageCounts {
    let files = inventory_path(&samples_root().join(path));
    assert_eq!(files.len(), 1, "{path}");
    coverage(&files[0], target.parse().unwrap()).counts
}

#[test]
fn coverage_of_selected_samples() {
    let c = |sass, ptx_jit, none, relocatable| CoverageCounts {
        sass,
        ptx_jit,
        none,
        relocatable,
    };
    assert_eq!(
        counts_at("so/multi_rdc_nodlink.so", "sm_120"),
        c(0, 0, 0, 1)
    );
    assert_eq!(counts_at("so/multi_rdc.so", "sm_120"), c(1, 0, 0, 1));
    assert_eq!(
        counts_at("so/multi_rdc.so", "sm_121"),
        c(0, 0, 1, 1),
        "sm_120a SASS is 12.0 only"
    );
    assert_eq!(
        counts_at("so/multi.so", "sm_103"),
        c(0, 1, 1, 0),
        "stub container has no PTX"
    );
    assert_eq!(counts_at("fatbin/lto.fatbin", "sm_120"), c(0, 0, 1, 0));
    assert_eq!(
        counts_at("fatbin/arch_sm_120a.fatbin", "sm_121"),
        c(0, 1, 0, 0)
    );
    assert_eq!(counts_at("fatbin/variants.fatbin", "sm_90"), c(0, 1, 0, 0));
    assert_eq!(
        counts_at("cubin13/k.sm_120f.cubin", "sm_121"),
        c(1, 0, 0, 0)
    );
    let files = inventory_path(&samples_root().join("fatbin/big_concat.fatbin"));
    let cov = coverage(&files[0], "sm_100".parse().unwrap());
    assert_eq!(
        (
            cov.containers[0].coverage,
            cov.containers[0].ptx_isa.map(|v| v.to_string())
        ),
        (Coverage::PtxJit, Some("9.5".into()))
    );
}

#[test]
fn inventory_of_the_sample_tree_is_complete_sorted_and_clean() {
    let root = samples_root();
    let start = Instant::now();
    let files = inventory_path(&root);
    eprintln!(
        "inventory of {} files took {:?}",
        files.len(),
        start.elapsed()
    );
    let mut expected: Vec<PathBuf> = SAMPLE_DIRS.iter().flat_map(|d| sample_files(d)).collect();
    expected.sort();
    let got: Vec<PathBuf> = files.iter().map(|f| f.path.clone()).collect();
    assert_eq!(got, expected);
    for f in &files {
        assert_eq!(f.error, None, "{}", f.path.display());
    }
    let json = serde_json::to_value(&files[0]).unwrap();
    assert!(json["containers"][0]["entries"][0]["variant"].is_string());
}

/// A minimal ELF64 shared object with the given `(name, sh_type, sh_flags, bytes)` sections.
fn build_elf(sections: &[(&str, u32, u64, &[u8])]) -> Vec<u8> {
    let mut out = vec![0u8; 64];
    let mut names = vec![0u8];
    let mut headers = vec![[0u8; 64]];
    let add = |out: &mut Vec<u8>,
               names: &mut Vec<u8>,
               (name, kind, flags, bytes): (&str, u32, u64, &[u8])| {
        out.resize(out.len().next_multiple_of(8), 0);
        let mut h = [0u8; 64];
        h[0..4].copy_from_slice(&(names.len() as u32).to_le_bytes());
        h[4..8].copy_from_slice(&kind.to_le_bytes());
        h[8..16].copy_from_slice(&flags.to_le_bytes());
        h[24..32].copy_from_slice(&(out.len() as u64).to_le_bytes());
        h[32..40].copy_from_slice(&(bytes.len() as u64).to_le_bytes());
        names.extend_from_slice(name.as_bytes());
        names.push(0);
        out.extend_from_slice(bytes);
        h
    };
    for &s in sections {
        headers.push(add(&mut out, &mut names, s));
    }
    let mut strtab = names.clone();
    strtab.extend_from_slice(b".shstrtab\0");
    headers.push(add(&mut out, &mut names, (".shstrtab", 3, 0, &strtab)));
    out.resize(out.len().next_multiple_of(8), 0);
    let shoff = out.len() as u64;
    headers.iter().for_each(|h| out.extend_from_slice(h));
    out[..7].copy_from_slice(b"\x7fELF\x02\x01\x01");
    out[16..18].copy_from_slice(&3u16.to_le_bytes());
    out[18..20].copy_from_slice(&62u16.to_le_bytes());
    out[0x28..0x30].copy_from_slice(&shoff.to_le_bytes());
    out[0x3A..0x3C].copy_from_slice(&64u16.to_le_bytes());
    out[0x3C..0x3E].copy_from_slice(&(headers.len() as u16).to_le_bytes());
    out[0x3E..0x40].copy_from_slice(&((headers.len() - 1) as u16).to_le_bytes());
    out
}

#[test]
fn plain_data_containers_are_found_outside_code_and_walked_sections() {
    let variants = fs::read(samples_root().join("fatbin/variants.fatbin")).unwrap();
    let multi = fs::read(samples_root().join("fatbin/multi.fatbin")).unwrap();
    let mut lrodata = vec![0u8; 24];
    lrodata.extend_from_slice(&variants);
    let elf = build_elf(&[
        (".text", 1, 0x6, &multi),
        (".nv_fatbin", 1, 0x2, &multi),
        (".lrodata", 1, 0x2, &lrodata),
    ]);
    let parsed = parse_bytes(&elf).unwrap();
    assert_eq!(parsed.kind, FileKind::SharedLibrary);
    let places: Vec<_> = parsed
        .containers
        .iter()
        .map(|c| (c.section, c.in_section.as_deref()))
        .collect();
    assert_eq!(
        places,
        vec![
            (Location::NvFatbin, None),
            (Location::PlainData, Some(".lrodata"))
        ]
    );
    let expected = parse_file(&samples_root().join("fatbin/variants.fatbin")).containers[0]
        .entries
        .len();
    assert_eq!(parsed.containers[1].entries.len(), expected);
}

#[test]
fn plain_data_container_may_not_reach_into_code() {
    let multi = fs::read(samples_root().join("fatbin/multi.fatbin")).unwrap();
    let (head, tail) = multi.split_at(4096);
    let elf = build_elf(&[(".rodata", 1, 0x2, head), (".text", 1, 0x6, tail)]);
    let err = parse_bytes(&elf).unwrap_err();
    assert!(err.to_string().contains("needs"), "{err}");
}

#[test]
fn ptx_files_are_inventoried_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let text = "//\n// Generated by NVIDIA NVVM Compiler\n.version 8.8\n.target sm_90a\n";
    fs::write(dir.path().join("k.ptx"), text).unwrap();
    fs::write(dir.path().join("notes.txt"), text).unwrap();
    fs::create_dir(dir.path().join("__pycache__")).unwrap();
    fs::copy(
        samples_root().join("cubin13/k.sm_120.cubin"),
        dir.path().join("__pycache__/k.cubin"),
    )
    .unwrap();
    fs::write(dir.path().join("broken.so"), b"\x7fELF\x02\x01\x01").unwrap();
    let files = inventory_path(dir.path());
    let names: Vec<_> = files
        .iter()
        .map(|f| f.path.file_name().unwrap().to_str().unwrap())
        .collect();
    assert_eq!(names, ["broken.so", "k.ptx"]);
    assert!(files[0].error.as_deref().unwrap().contains("broken.so"));
    let e = &files[1].containers[0].entries[0];
    assert_eq!(
        (e.target().to_string(), e.ptx_isa.unwrap().to_string()),
        ("sm_90a".into(), "8.8".into())
    );
}
