//! gatefix: find, audit and safely open GPU architecture gates in Python inference stacks.
//!
//! The pipeline (see `docs/design.md`): `site` finds the site-packages tree and its
//! distributions, `scan` walks and prefilters files and parses the hits, `gate` recognises gate
//! forms and resolves them into predicates, `report` prints them. `kernel` knows which GPU code
//! is really installed.

pub mod arch;
pub mod cache;
pub mod cli;
pub mod error;
pub mod explain;
pub mod gate;
pub mod kernel;
pub mod ledger;
pub mod patch;
pub mod path;
pub mod policy;
pub mod process;
pub mod report;
pub mod rules;
pub mod scan;
pub mod site;
pub mod syntax;
pub mod verdict;
pub mod words;

/// `gatefix --version`: the crate version and the commit it was built from (build.rs).
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("GATEFIX_BUILD_COMMIT"),
    ")"
);

/// What unit tests of several modules share.
#[cfg(test)]
pub(crate) mod test_data {
    /// The bytes of every Python file under `testdata/`: the inputs of the tests that hold a
    /// fast path to the plain walk it replaced.
    pub fn python_files() -> Vec<Vec<u8>> {
        let mut files = Vec::new();
        let mut stack = vec![std::path::PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/testdata"
        ))];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.extension().is_some_and(|e| e == "py") {
                    files.push(std::fs::read(&path).unwrap());
                }
            }
        }
        files
    }
}
