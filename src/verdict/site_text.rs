//! The site's Python text, held once for the searches that a link needs across files: where a
//! flag is read back, where a function is called, and which definitions carry a name (for
//! calls that imports alone cannot resolve: `self.m()`, `obj.m()`, a module held in a variable).

use std::collections::HashMap;
use std::path::Path;

use aho_corasick::{AhoCorasick, MatchKind};
use rayon::prelude::*;

use crate::gate::index::module_name;
use crate::kernel::dsl::DslIndex;

/// Files over this size are generated tables or vendored code; they are not searched.
const MAX_FILE_BYTES: usize = 2 * 1024 * 1024;

pub struct SiteText {
    pub files: Vec<TextFile>,
    /// Definition name → (file index, byte offset of its `def`).
    defs: HashMap<String, Vec<(usize, usize)>>,
}

pub struct TextFile {
    /// Relative, with `/`.
    pub path: String,
    pub module: Option<String>,
    pub src: Vec<u8>,
}

/// One occurrence of a searched name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hit {
    pub file: usize,
    pub start: usize,
    pub end: usize,
}

impl SiteText {
    /// The CuTe DSL ops and kernels of these files (L5, `kernel::dsl`).
    pub fn dsl_index(&self) -> DslIndex {
        DslIndex::from_files(
            self.files
                .iter()
                .map(|f| (f.path.as_str(), f.module.as_deref(), f.src.as_slice())),
        )
    }

    pub fn read(root: &Path) -> SiteText {
        let mut warnings = Vec::new();
        let paths = crate::scan::python_files(root, &mut warnings);
        let files: Vec<TextFile> = paths
            .par_iter()
            .filter_map(|relative| {
                let src = std::fs::read(root.join(relative)).ok()?;
                (src.len() <= MAX_FILE_BYTES).then(|| TextFile {
                    path: relative.to_string_lossy().replace('\\', "/"),
                    module: module_name(relative).map(|(m, _)| m),
                    src,
                })
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

    /// Every definition of a name in the site: (file index, offset of `def`).
    pub fn defs(&self, name: &str) -> &[(usize, usize)] {
        self.defs.get(name).map_or(&[], Vec::as_slice)
    }

    pub fn file_index(&self, path: &str) -> Option<usize> {
        self.files.iter().position(|f| f.path == path)
    }

    /// Every whole-word occurrence of each name, searched in one pass over the site.
    pub fn find_words(&self, names: &[String]) -> Vec<Vec<Hit>> {
        let mut found = vec![Vec::new(); names.len()];
        if names.is_empty() {
            return found;
        }
        let Ok(automaton) = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .build(names)
        else {
            return found;
        };
        let hits: Vec<Vec<(usize, Hit)>> = self
            .files
            .par_iter()
            .enumerate()
            .map(|(file, f)| {
                automaton
                    .find_iter(&f.src)
                    .filter(|m| {
                        let before = m.start().checked_sub(1).map(|i| f.src[i]);
                        let after = f.src.get(m.end()).copied();
                        !before.is_some_and(is_word_byte) && !after.is_some_and(is_word_byte)
                    })
                    .map(|m| {
                        (
                            m.pattern().as_usize(),
                            Hit {
                                file,
                                start: m.start(),
                                end: m.end(),
                            },
                        )
                    })
                    .collect()
            })
            .collect();
        for (pattern, hit) in hits.into_iter().flatten() {
            found[pattern].push(hit);
        }
        found
    }
}

pub fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80
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
        let index = SiteText::read(&root).dsl_index();
        let mut kernels: Vec<&str> = index.kernels.keys().map(String::as_str).collect();
        kernels.sort();
        // The SM80 kernel builds only an op with no declared admission: not a DSL kernel.
        assert_eq!(
            kernels,
            vec![
                "cutlass.utils.blackwell_helpers",
                "gemmlib.kernels.gemm_sm100",
                "gemmlib.kernels.gemm_sm120"
            ]
        );
        assert_eq!(
            index
                .admitted("gemmlib.kernels.gemm_sm120", crate::arch::Arch::new(12, 1))
                .map(|a| a.0),
            Some(crate::kernel::dsl::Admitted::None)
        );
    }

    #[test]
    fn definitions_are_found_at_line_starts_only() {
        let src = b"def f(x):\n    pass\nclass C:\n    async def g(self):\n        x = 'def h('\n";
        let names: Vec<String> = def_names(src).into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["f", "g"]);
    }
}
