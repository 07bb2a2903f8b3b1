//! The §5 rules table, checked row by row against the five audit targets.

use super::*;

const TARGETS: [&str; 5] = ["sm_120", "sm_121", "sm_100", "sm_103", "sm_90"];

/// (image kind, image arch, targets it loads on). SASS rows load as `Sass`, PTX rows as `PtxJit`.
const ROWS: &[(EntryKind, &str, &str)] = &[
    // plain SASS: same major, equal or higher minor
    (EntryKind::Sass, "sm_120", "sm_120 sm_121"),
    (EntryKind::Sass, "sm_121", "sm_121"),
    (EntryKind::Sass, "sm_100", "sm_100 sm_103"),
    (EntryKind::Sass, "sm_103", "sm_103"),
    (EntryKind::Sass, "sm_90", "sm_90"),
    (EntryKind::Sass, "sm_80", ""),
    (EntryKind::Sass, "sm_110", ""),
    // family SASS: same device set as plain
    (EntryKind::Sass, "sm_120f", "sm_120 sm_121"),
    (EntryKind::Sass, "sm_121f", "sm_121"),
    (EntryKind::Sass, "sm_100f", "sm_100 sm_103"),
    (EntryKind::Sass, "sm_103f", "sm_103"),
    (EntryKind::Sass, "sm_110f", ""),
    // arch-specific SASS: exactly one device
    (EntryKind::Sass, "sm_120a", "sm_120"),
    (EntryKind::Sass, "sm_121a", "sm_121"),
    (EntryKind::Sass, "sm_100a", "sm_100"),
    (EntryKind::Sass, "sm_103a", "sm_103"),
    (EntryKind::Sass, "sm_90a", "sm_90"),
    // plain PTX: any later-or-equal arch, across majors
    (EntryKind::Ptx, "sm_75", "sm_120 sm_121 sm_100 sm_103 sm_90"),
    (EntryKind::Ptx, "sm_90", "sm_120 sm_121 sm_100 sm_103 sm_90"),
    (EntryKind::Ptx, "sm_100", "sm_120 sm_121 sm_100 sm_103"),
    (EntryKind::Ptx, "sm_103", "sm_120 sm_121 sm_103"),
    (EntryKind::Ptx, "sm_110", "sm_120 sm_121"),
    (EntryKind::Ptx, "sm_120", "sm_120 sm_121"),
    (EntryKind::Ptx, "sm_121", "sm_121"),
    // family PTX: same major only
    (EntryKind::Ptx, "sm_100f", "sm_100 sm_103"),
    (EntryKind::Ptx, "sm_103f", "sm_103"),
    (EntryKind::Ptx, "sm_120f", "sm_120 sm_121"),
    (EntryKind::Ptx, "sm_121f", "sm_121"),
    // arch-specific PTX: exactly one device
    (EntryKind::Ptx, "sm_90a", "sm_90"),
    (EntryKind::Ptx, "sm_100a", "sm_100"),
    (EntryKind::Ptx, "sm_103a", "sm_103"),
    (EntryKind::Ptx, "sm_120a", "sm_120"),
    (EntryKind::Ptx, "sm_121a", "sm_121"),
    // link input and group headers never load
    (EntryKind::LtoIr, "sm_120", ""),
    (EntryKind::LtoIr, "sm_90a", ""),
    (EntryKind::Concat, "sm_0", ""),
    (EntryKind::Unknown, "sm_120", ""),
];

fn arch(text: &str) -> Arch {
    if text == "sm_0" {
        return Arch::from_sm(0, Variant::Plain);
    }
    text.parse().unwrap()
}

#[test]
fn every_rules_row_at_every_target() {
    for &(kind, image, loads_on) in ROWS {
        for target in TARGETS {
            let expected = match (loads_on.split(' ').any(|t| t == target), kind) {
                (false, _) => Load::No,
                (true, EntryKind::Sass) => Load::Sass,
                (true, _) => Load::PtxJit,
            };
            let got = image_load(kind, arch(image), arch(target));
            assert_eq!(got, expected, "{kind:?} {image} on {target}");
        }
    }
}

#[test]
fn device_variant_is_ignored() {
    let image = arch("sm_120a");
    assert_eq!(
        image_load(EntryKind::Sass, image, arch("sm_120a")),
        Load::Sass
    );
    assert_eq!(
        image_load(EntryKind::Sass, image, arch("sm_120f")),
        Load::Sass
    );
}

fn entry(kind: EntryKind, image: &str, isa: Option<(u16, u16)>) -> Entry {
    let a = arch(image);
    Entry {
        offset: 0,
        kind,
        kind_code: 0,
        arch: a.sm(),
        variant: a.variant,
        compression: crate::kernel::Compression::None,
        ptx_isa: isa.map(|(major, minor)| PtxIsa { major, minor }),
        debug: false,
        sub_entries: Vec::new(),
        load: BTreeMap::new(),
    }
}

fn container(relocatable: bool, entries: Vec<Entry>) -> Container {
    Container {
        offset: 0,
        section: Location::NvFatbin,
        in_section: None,
        relocatable,
        entries,
    }
}

#[test]
fn relocatable_code_never_loads() {
    for target in TARGETS {
        let c = container(true, vec![entry(EntryKind::Sass, target, None)]);
        let cov = container_coverage(&c, arch(target));
        assert_eq!(
            (cov.coverage, cov.loads.as_slice()),
            (Coverage::None, &[Load::No][..])
        );
    }
}

#[test]
fn container_verdict_prefers_sass_then_ptx() {
    let sass_and_ptx = container(
        false,
        vec![
            entry(EntryKind::Sass, "sm_120a", None),
            entry(EntryKind::Ptx, "sm_90", Some((9, 5))),
        ],
    );
    let on = |c: &Container, t: &str| container_coverage(c, arch(t));
    assert_eq!(on(&sass_and_ptx, "sm_120").coverage, Coverage::Sass);
    let jit = on(&sass_and_ptx, "sm_121");
    assert_eq!(
        (jit.coverage, jit.ptx_isa.map(|i| i.to_string())),
        (Coverage::PtxJit, Some("9.5".into()))
    );
    let none = container(
        false,
        vec![
            entry(EntryKind::Sass, "sm_90a", None),
            entry(EntryKind::Ptx, "sm_100a", None),
        ],
    );
    assert_eq!(on(&none, "sm_120").coverage, Coverage::None);
}

#[test]
fn concat_members_are_judged_not_the_group() {
    let mut group = entry(EntryKind::Concat, "sm_0", None);
    group.sub_entries = vec![
        entry(EntryKind::Ptx, "sm_90", Some((9, 5))),
        entry(EntryKind::Ptx, "sm_120a", Some((9, 5))),
    ];
    let c = container(false, vec![group]);
    let cov = container_coverage(&c, arch("sm_120"));
    assert_eq!(cov.loads, vec![Load::PtxJit, Load::PtxJit]);
    assert_eq!(cov.coverage, Coverage::PtxJit);
}

#[test]
fn file_counts_and_folders() {
    let file = |path: &str, containers| FileInventory {
        path: PathBuf::from(path),
        kind: crate::kernel::FileKind::SharedLibrary,
        size: 0,
        containers,
        error: None,
    };
    let files = vec![
        file(
            "/sp/a/x.so",
            vec![container(
                false,
                vec![entry(EntryKind::Sass, "sm_120", None)],
            )],
        ),
        file(
            "/sp/a/y.so",
            vec![container(
                true,
                vec![entry(EntryKind::Sass, "sm_120", None)],
            )],
        ),
        file(
            "/sp/b.so",
            vec![
                container(false, vec![entry(EntryKind::Ptx, "sm_80", None)]),
                container(false, vec![]),
            ],
        ),
    ];
    let by = coverage_by_folder(&files, Path::new("/sp"), arch("sm_120"));
    let a = CoverageCounts {
        sass: 1,
        relocatable: 1,
        ..Default::default()
    };
    let b = CoverageCounts {
        ptx_jit: 1,
        none: 1,
        ..Default::default()
    };
    assert_eq!(by.get(Path::new("a")), Some(&a));
    assert_eq!(by.get(Path::new("b.so")), Some(&b));
}
