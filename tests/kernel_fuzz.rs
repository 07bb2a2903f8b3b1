//! Hostile-input properties of the kernel parser, seeded with the real samples: byte flips,
//! truncations at structure boundaries, and overwritten length fields must give `Ok` or a
//! typed `ParseError`, never a panic, and a truncated file must never invent device code.

use std::fs;
use std::path::Path;
use std::sync::OnceLock;

use gatefix::kernel::{
    Container, FileInventory, FileKind, ParseError, coverage, parse_bytes, parse_bytes_lenient,
};
use proptest::prelude::*;
use proptest::sample::Index;

struct Sample {
    name: String,
    data: Vec<u8>,
    /// Offsets of header fields that hold sizes, counts or offsets.
    fields: Vec<(usize, usize)>,
    /// Offsets where a structure starts or ends: good truncation points.
    cuts: Vec<usize>,
}

fn samples() -> &'static [Sample] {
    static SAMPLES: OnceLock<Vec<Sample>> = OnceLock::new();
    SAMPLES.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/fatbin-samples");
        let mut out = Vec::new();
        for dir in ["cubin129", "cubin13", "fatbin", "so", "obj"] {
            let mut paths: Vec<_> = fs::read_dir(root.join(dir))
                .unwrap()
                .map(|e| e.unwrap().path())
                .collect();
            paths.sort();
            for path in paths {
                let data = fs::read(&path).unwrap();
                let (fields, cuts) = landmarks(&data);
                out.push(Sample {
                    name: format!("{dir}/{}", path.file_name().unwrap().to_str().unwrap()),
                    data,
                    fields,
                    cuts,
                });
            }
        }
        out
    })
}

fn u16_at(d: &[u8], at: usize) -> usize {
    u16::from_le_bytes([d[at], d[at + 1]]) as usize
}

/// Length fields and boundaries, from the ELF header and section table and from a clean parse.
fn landmarks(data: &[u8]) -> (Vec<(usize, usize)>, Vec<usize>) {
    let mut fields = vec![];
    let mut cuts = vec![0, 16, 64, data.len()];
    if data.starts_with(b"\x7fELF") {
        fields.extend([(0x28, 8), (0x3A, 2), (0x3C, 2), (0x3E, 2)]);
        let shoff = u64::from_le_bytes(data[0x28..0x30].try_into().unwrap()) as usize;
        for i in 0..u16_at(data, 0x3C) {
            let sh = shoff + i * 64;
            fields.extend([(sh, 4), (sh + 24, 8), (sh + 32, 8)]);
            let off = u64::from_le_bytes(data[sh + 24..sh + 32].try_into().unwrap()) as usize;
            let size = u64::from_le_bytes(data[sh + 32..sh + 40].try_into().unwrap()) as usize;
            cuts.extend([sh, off, off + size]);
        }
    }
    for c in parse_bytes(data).unwrap().containers {
        let at = c.offset as usize;
        fields.extend([(at + 6, 2), (at + 8, 8)]);
        cuts.push(at);
        for e in c
            .entries
            .iter()
            .flat_map(|e| std::iter::once(e).chain(&e.sub_entries))
        {
            let at = e.offset as usize;
            fields.extend([
                (at + 4, 4),
                (at + 8, 8),
                (at + 0x14, 4),
                (at + 0x1C, 4),
                (at + 0x28, 8),
            ]);
            cuts.extend([at, at + 64]);
            if e.kind_code == 0x100 {
                let block = at
                    + u32::from_le_bytes(data[at + 0x14..at + 0x18].try_into().unwrap()) as usize;
                fields.extend([(block, 4), (block + 4, 4)]);
            }
        }
    }
    fields.retain(|&(at, width)| at + width <= data.len());
    cuts.retain(|&at| at <= data.len());
    (fields, cuts)
}

/// The properties every input must satisfy.
fn check(data: &[u8]) -> Result<(), TestCaseError> {
    let strict = parse_bytes(data);
    let (parsed, error) = parse_bytes_lenient(data);
    prop_assert_eq!(strict.is_ok(), error.is_none());
    if let Err(err) = &strict {
        typed(err)?;
    }
    for c in &parsed.containers {
        prop_assert!(c.offset as usize <= data.len());
        prop_assert!(c.leaves().all(|e| (e.offset as usize) < data.len()));
    }
    let inv = FileInventory {
        path: "x".into(),
        kind: parsed.kind,
        size: 0,
        containers: parsed.containers,
        error: None,
    };
    for target in ["sm_120", "sm_121", "sm_100", "sm_103", "sm_90"] {
        let cov = coverage(&inv, target.parse().unwrap());
        prop_assert_eq!(cov.containers.len(), inv.containers.len());
    }
    Ok(())
}

fn typed(err: &ParseError) -> Result<(), TestCaseError> {
    let text = err.to_string();
    prop_assert!(
        text.contains("offset 0x"),
        "error without an offset: {text}"
    );
    Ok(())
}

/// Every container of the truncated parse appears, unchanged, in the full parse.
fn no_invention(full: &[Container], cut: &[Container]) -> bool {
    cut.iter().all(|c| full.contains(c))
}

#[derive(Debug, Clone)]
enum Mutation {
    Flip(Index, u8),
    Truncate(Index, i8),
    Overwrite(Index, u64),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let value = prop_oneof![
        Just(0u64),
        Just(1),
        Just(7),
        Just(64),
        Just(0xFFFF),
        Just(u64::from(u32::MAX)),
        Just(u64::MAX),
        Just(1 << 40),
        any::<u64>(),
        0u64..0x10000,
    ];
    prop_oneof![
        (any::<Index>(), 1u8..=255).prop_map(|(i, x)| Mutation::Flip(i, x)),
        (any::<Index>(), -8i8..=8).prop_map(|(i, d)| Mutation::Truncate(i, d)),
        (any::<Index>(), value).prop_map(|(i, v)| Mutation::Overwrite(i, v)),
    ]
}

fn apply(sample: &Sample, data: &mut Vec<u8>, m: &Mutation) {
    match m {
        Mutation::Flip(i, x) if !data.is_empty() => {
            let at = i.index(data.len());
            data[at] ^= x;
        }
        Mutation::Truncate(i, d) => {
            let at = sample.cuts[i.index(sample.cuts.len())].saturating_add_signed(isize::from(*d));
            data.truncate(at);
        }
        Mutation::Overwrite(i, v) if !sample.fields.is_empty() => {
            let (at, width) = sample.fields[i.index(sample.fields.len())];
            if at + width <= data.len() {
                data[at..at + width].copy_from_slice(&v.to_le_bytes()[..width]);
            }
        }
        _ => {}
    }
}

fn env_cases() -> Option<u32> {
    std::env::var("PROPTEST_CASES").ok()?.parse().ok()
}

proptest! {
    // 512 cases keep a debug run well under a second; set PROPTEST_CASES for a deeper run.
    #![proptest_config(ProptestConfig { cases: env_cases().unwrap_or(512), failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn mutated_samples_never_panic(pick in any::<Index>(), muts in prop::collection::vec(mutation(), 1..6)) {
        let sample = &samples()[pick.index(samples().len())];
        let mut data = sample.data.clone();
        for m in &muts {
            apply(sample, &mut data, m);
        }
        check(&data).map_err(|e| TestCaseError::fail(format!("{}: {e}", sample.name)))?;
    }
}

#[test]
fn every_sample_parses_cleanly() {
    assert!(samples().len() >= 60);
    for s in samples() {
        let parsed = parse_bytes(&s.data).unwrap_or_else(|e| panic!("{}: {e}", s.name));
        assert!(!parsed.containers.is_empty(), "{}", s.name);
        assert_ne!(parsed.kind, FileKind::Unknown, "{}", s.name);
    }
}

#[test]
fn truncation_at_many_offsets_is_an_error_or_a_subset() {
    for s in samples() {
        let full = parse_bytes(&s.data).unwrap().containers;
        let stride = (s.data.len() / 97).max(1);
        let mut cuts: Vec<usize> = (0..s.data.len()).step_by(stride).collect();
        for &c in &s.cuts {
            cuts.extend(
                [0, 1, 7, 8, 15, 16, 63, 64]
                    .iter()
                    .flat_map(|d| [c.saturating_sub(*d), c + d]),
            );
        }
        cuts.retain(|&c| c < s.data.len());
        cuts.sort_unstable();
        cuts.dedup();
        for cut in cuts {
            let data = &s.data[..cut];
            if let Err(e) = check(data) {
                panic!("{} cut at {cut}: {e}", s.name);
            }
            let (parsed, _) = parse_bytes_lenient(data);
            assert!(
                no_invention(&full, &parsed.containers),
                "{} cut at {cut} invented a container",
                s.name
            );
        }
    }
}

#[test]
fn huge_counts_fail_fast() {
    let s = samples().iter().find(|s| s.name == "so/multi.so").unwrap();
    for (at, value) in [(0x3C, 0u64), (0x3A, 0xFFFF)] {
        let mut data = s.data.clone();
        data[at..at + 2].copy_from_slice(&value.to_le_bytes()[..2]);
        let shoff = u64::from_le_bytes(data[0x28..0x30].try_into().unwrap()) as usize;
        data[shoff + 32..shoff + 40].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(parse_bytes(&data).is_err());
    }
}
