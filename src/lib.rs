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

/// `gatefix --version`: the crate version and the commit it was built from (build.rs).
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("GATEFIX_BUILD_COMMIT"),
    ")"
);
