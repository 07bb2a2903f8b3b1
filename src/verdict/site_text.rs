//! The site's Python text, held once for the searches that a link needs across files: where a
//! flag is read back, where a function is called, and which definitions carry a name (for
//! calls that imports alone cannot resolve: `self.m()`, `obj.m()`, a module held in a variable).

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use rayon::prelude::*;

use crate::gate::index::module_name;
use crate::kernel::dsl::DslIndex;
use crate::words::{is_word_byte, word_runs};

/// Files over this size are generated tables or vendored code; they are not searched.
const MAX_FILE_BYTES: usize = 2 * 1024 * 1024;

pub struct SiteText {
    pub files: Vec<TextFile>,
    /// Definition name → (file index, byte offset of its `def`), in file order.
    defs: HashMap<String, Vec<(usize, usize)>>,
}

pub struct TextFile {
    /// Relative, with `/`.
    pub path: String,
    pub module: Option<String>,
    /// Shared with the verdicts' modules (`Code`), which read the same files.
    pub src: Arc<Vec<u8>>,
    /// The file's words: a name it does not hold is not searched for in the file (flag
    /// flow searches hundreds of names a round; most are in few files).
    words: WordFilter,
}

/// A Bloom filter of a file's words (two probes into a table of about one bit per byte of
/// the file): a word it says is absent is absent; one it may hold is searched for, and the
/// search decides. Filling it is linear in the file, with no sort, because every Python file
/// of the site is filled while the scan runs.
struct WordFilter {
    bits: Vec<u64>,
    /// Bits in the table, less one (a power of two, less one).
    mask: u64,
}

impl WordFilter {
    /// An empty table for the words of `src`: about one bit per byte, a power of two.
    fn empty_for(src: &[u8]) -> WordFilter {
        let size = src.len().clamp(512, 1 << 24).next_power_of_two() as u64;
        WordFilter {
            bits: vec![0; (size / 64) as usize],
            mask: size - 1,
        }
    }

    fn of(src: &[u8]) -> WordFilter {
        let mut filter = WordFilter::empty_for(src);
        // Word by word, found 64 bytes at a time (`crate::words`).
        for (start, end) in word_runs(src) {
            filter.insert(word_hash(&src[start..end]));
        }
        filter
    }

    fn probes(&self, hash: u64) -> [u64; 2] {
        [hash & self.mask, (hash >> 32 ^ hash >> 13) & self.mask]
    }

    fn insert(&mut self, hash: u64) {
        for bit in self.probes(hash) {
            self.bits[(bit / 64) as usize] |= 1 << (bit % 64);
        }
    }

    fn may_hold(&self, hash: u64) -> bool {
        self.probes(hash)
            .iter()
            .all(|&bit| self.bits[(bit / 64) as usize] & (1 << (bit % 64)) != 0)
    }
}

/// One occurrence of a searched name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hit {
    pub file: usize,
    pub start: usize,
    pub end: usize,
}

/// The site's Python files as read, before their words and definitions are indexed
/// (`SiteText::index`): the CuTe DSL index reads them so.
pub struct SiteFiles {
    files: Vec<(String, Option<String>, Arc<Vec<u8>>)>,
}

impl SiteFiles {
    pub fn read(root: &Path) -> SiteFiles {
        let mut warnings = Vec::new();
        let paths = crate::scan::python_files(root, &mut warnings);
        let files = paths
            .par_iter()
            .filter_map(|relative| {
                let src = std::fs::read(root.join(relative)).ok()?;
                (src.len() <= MAX_FILE_BYTES).then(|| {
                    (
                        relative.to_string_lossy().replace('\\', "/"),
                        module_name(relative).map(|(m, _)| m),
                        Arc::new(src),
                    )
                })
            })
            .collect();
        SiteFiles { files }
    }

    /// The CuTe DSL ops and kernels of these files (L5, `kernel::dsl`).
    pub fn dsl_index(&self) -> DslIndex {
        DslIndex::from_files(
            self.files
                .iter()
                .map(|(path, module, src)| (path.as_str(), module.as_deref(), src.as_slice())),
        )
    }
}

impl SiteText {
    /// Each file's words and the site's definitions.
    pub fn index(files: SiteFiles) -> SiteText {
        let files: Vec<TextFile> = files
            .files
            .into_par_iter()
            .map(|(path, module, src)| TextFile {
                path,
                module,
                words: WordFilter::of(&src),
                src,
            })
            .collect();
        let per_file: Vec<Vec<(String, usize)>> =
            files.par_iter().map(|f| def_names(&f.src)).collect();
        let mut defs: HashMap<String, Vec<(usize, usize)>> = HashMap::new();
        for (index, names) in per_file.into_iter().enumerate() {
            for (name, offset) in names {
                defs.entry(name).or_default().push((index, offset));
            }
        }
        SiteText { files, defs }
    }

    /// Every definition of a name in the site: (file index, offset of `def`), in file order.
    pub fn defs(&self, name: &str) -> &[(usize, usize)] {
        self.defs.get(name).map_or(&[], Vec::as_slice)
    }

    /// Every whole-word occurrence of each name, in file order. A name that is one word is
    /// searched only in the files whose word set holds it; any other name in every file.
    pub fn find_words(&self, names: &[String]) -> Vec<Vec<Hit>> {
        let wanted: Vec<Option<u64>> = names
            .iter()
            .map(|n| {
                let is_word = !n.is_empty() && n.bytes().all(is_word_byte);
                is_word.then(|| word_hash(n.as_bytes()))
            })
            .collect();
        let finders: Vec<memchr::memmem::Finder> = names
            .iter()
            .map(|n| memchr::memmem::Finder::new(n.as_bytes()))
            .collect();
        let per_file: Vec<Vec<(usize, Hit)>> = self
            .files
            .par_iter()
            .enumerate()
            .map(|(file, f)| {
                let mut hits = Vec::new();
                for (pattern, hash) in wanted.iter().enumerate() {
                    if names[pattern].is_empty() || hash.is_some_and(|h| !f.words.may_hold(h)) {
                        continue;
                    }
                    let len = names[pattern].len();
                    for start in finders[pattern].find_iter(&f.src) {
                        let end = start + len;
                        let before = start.checked_sub(1).map(|i| f.src[i]);
                        let after = f.src.get(end).copied();
                        if !before.is_some_and(is_word_byte) && !after.is_some_and(is_word_byte) {
                            hits.push((pattern, Hit { file, start, end }));
                        }
                    }
                }
                hits
            })
            .collect();
        let mut found = vec![Vec::new(); names.len()];
        for (pattern, hit) in per_file.into_iter().flatten() {
            found[pattern].push(hit);
        }
        found
    }
}

/// A word's hash from its length and its first and last eight bytes: constant time per word,
/// and a collision only makes a file a candidate it need not be.
fn word_hash(word: &[u8]) -> u64 {
    let n = word.len();
    let head = low_bytes(&word[..n.min(8)]);
    let tail = if n > 8 { low_bytes(&word[n - 8..]) } else { 0 };
    let mixed = head.wrapping_mul(0x9e37_79b9_7f4a_7c15)
        ^ tail.rotate_left(29).wrapping_mul(0xc2b2_ae3d_27d4_eb4f)
        ^ n as u64;
    mixed ^ (mixed >> 31)
}

/// Up to eight bytes as a little-endian number, zeros above: two overlapping loads instead of
/// a copy of variable length (a call to memcpy per word of the site).
fn low_bytes(bytes: &[u8]) -> u64 {
    let n = bytes.len();
    if n >= 4 {
        let low = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) as u64;
        let high =
            u32::from_le_bytes([bytes[n - 4], bytes[n - 3], bytes[n - 2], bytes[n - 1]]) as u64;
        low | high << (8 * (n - 4))
    } else if n > 0 {
        bytes[0] as u64
            | (bytes[n / 2] as u64) << (8 * (n / 2))
            | (bytes[n - 1] as u64) << (8 * (n - 1))
    } else {
        0
    }
}

/// `def name(` at the start of a line (after indentation, `async`), with its offset.
fn def_names(src: &[u8]) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    for at in memchr::memmem::find_iter(src, b"def ") {
        let line_start = memchr::memrchr(b'\n', &src[..at]).map_or(0, |i| i + 1);
        let lead = &src[line_start..at];
        let lead = lead.trim_ascii_start();
        if !(lead.is_empty() || lead == b"async ") {
            continue;
        }
        let rest = &src[at + 4..];
        let len = rest.iter().take_while(|b| is_word_byte(**b)).count();
        if len == 0 || rest.get(len) != Some(&b'(') {
            continue;
        }
        if let Ok(name) = std::str::from_utf8(&rest[..len]) {
            out.push((name.to_string(), at));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn the_dsl_index_of_a_site_finds_its_ops_and_kernels() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/sites/dsl");
        let index = SiteFiles::read(&root).dsl_index();
        let mut kernels: Vec<&str> = index.kernels.keys().map(String::as_str).collect();
        kernels.sort();
        // The SM80 kernel builds only an op with no declared admission: not a DSL kernel.
        assert_eq!(
            kernels,
            vec![
                "cutlass.utils.blackwell_helpers",
                "gemmlib.kernels.gemm_any",
                "gemmlib.kernels.gemm_sm100",
                "gemmlib.kernels.gemm_sm120",
                // Its kernel class through the wrappers of tcgen05 intrinsics, and the
                // wrappers themselves.
                "rawlib.prefill",
                "rawlib.tmem",
            ]
        );
        assert_eq!(
            index
                .admitted("gemmlib.kernels.gemm_sm120", crate::arch::Arch::new(12, 1))
                .map(|a| a.0),
            Some(crate::kernel::dsl::Admitted::None)
        );
    }

    /// The filter as a walk over every byte makes it: the oracle of the block-wise one.
    fn filter_of_a_byte_walk(src: &[u8]) -> WordFilter {
        let mut filter = WordFilter::empty_for(src);
        for (start, end) in crate::words::runs_of_a_byte_walk(src, is_word_byte) {
            filter.insert(word_hash(&src[start..end]));
        }
        filter
    }

    #[test]
    fn low_bytes_reads_what_copying_into_a_zeroed_word_reads() {
        let text: Vec<u8> = (0..40u8)
            .map(|i| i.wrapping_mul(37).wrapping_add(200))
            .collect();
        for start in 0..16 {
            for len in 0..=8 {
                let bytes = &text[start..start + len];
                let mut buf = [0u8; 8];
                buf[..len].copy_from_slice(bytes);
                assert_eq!(low_bytes(bytes), u64::from_le_bytes(buf), "{bytes:?}");
            }
        }
    }

    #[test]
    fn filling_the_word_filter_by_blocks_fills_what_a_byte_walk_does() {
        let mut sources: Vec<Vec<u8>> = vec![
            Vec::new(),
            b"a".to_vec(),
            b" a".to_vec(),
            b"a ".to_vec(),
            "x".repeat(64).into_bytes(),
            "x".repeat(65).into_bytes(),
            format!("{} y", "x".repeat(128)).into_bytes(),
            format!("{}\n", " ".repeat(127)).into_bytes(),
            "caf\u{e9} = na\u{ef}ve_\u{1f600}(x)".repeat(9).into_bytes(),
        ];
        // Every byte value, next to word bytes and not, at every offset in a block.
        for shift in 0..64 {
            let mut bytes = vec![b' '; shift];
            for b in 0..=255u8 {
                bytes.extend_from_slice(&[b, b'a', b, b' ', b, b]);
            }
            sources.push(bytes);
        }
        // Words starting, ending and running across block boundaries at every offset.
        for shift in 0..130 {
            sources.push(
                format!(
                    "{}{} {}.b",
                    " ".repeat(shift),
                    "w".repeat(70),
                    "q".repeat(shift)
                )
                .into_bytes(),
            );
        }
        // And every Python file of the test data.
        sources.extend(crate::test_data::python_files());
        assert!(sources.len() > 250, "{} sources", sources.len());
        for source in &sources {
            let blocks = WordFilter::of(source);
            let walk = filter_of_a_byte_walk(source);
            assert_eq!(
                (blocks.mask, &blocks.bits),
                (walk.mask, &walk.bits),
                "{}",
                String::from_utf8_lossy(source)
            );
        }
    }

    #[test]
    fn the_word_filter_holds_every_word_and_few_others() {
        let words: Vec<String> = (0..2000).map(|i| format!("name_{i}")).collect();
        let src = words.join(" + ");
        let filter = WordFilter::of(src.as_bytes());
        assert!(
            words
                .iter()
                .all(|w| filter.may_hold(word_hash(w.as_bytes())))
        );
        let others = (2000..12000)
            .filter(|i| filter.may_hold(word_hash(format!("name_{i}").as_bytes())))
            .count();
        // About one bit per byte, two probes: a few percent of absent words pass.
        assert!(others < 500, "{others} of 10,000 absent words may be held");
        // A small file gets the smallest table, and still says no.
        let small = WordFilter::of(b"x = 1");
        assert!(small.may_hold(word_hash(b"x")));
        assert!(!small.may_hold(word_hash(b"enable_fusion")));
    }

    #[test]
    fn words_are_found_whole_in_file_order_and_other_names_everywhere() {
        let file = |path: &str, src: &str| TextFile {
            path: path.into(),
            module: None,
            words: WordFilter::of(src.as_bytes()),
            src: Arc::new(src.as_bytes().to_vec()),
        };
        let text = SiteText {
            files: vec![
                file("a.py", "x.enable_fusion = True\nenable_fusion_x = 1\n"),
                file("b.py", "if args.enable_fusion:\n    env['A.B'] = 1\n"),
                file("c.py", "_enable_fusion\n"),
            ],
            defs: HashMap::new(),
        };
        let names = ["enable_fusion".to_string(), "A.B".into(), "absent".into()];
        let found = text.find_words(&names);
        let places: Vec<Vec<(usize, usize)>> = found
            .iter()
            .map(|hits| hits.iter().map(|h| (h.file, h.start)).collect())
            .collect();
        assert_eq!(places, vec![vec![(0, 2), (1, 8)], vec![(1, 32)], vec![]]);
    }

    #[test]
    fn definitions_are_found_at_line_starts_only() {
        let src = b"def f(x):\n    pass\nclass C:\n    async def g(self):\n        x = 'def h('\n";
        let names: Vec<String> = def_names(src).into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["f", "g"]);
    }
}
