//! What GPU code is really installed: fatbin / cubin / ELF inventory and loadability.
//!
//! Python-level arch gates can only be judged against the device code a package ships, so
//! this module reads it from the bytes, headers only, without CUDA or a GPU. The byte layout
//! and the loadability rules follow the shared research note `docs/fatbin.md` (§3–§5).
//! Parsing never panics on hostile input: every read is bounds-checked (`bytes`), and one
//! bad file yields an error for that file only.

mod bytes;
pub mod cpp;
mod cpp_items;
mod cubin;
pub mod dsl;
mod elf;
mod error;
mod fatbin;
mod host;
mod inventory;
pub mod jit;
pub mod layer_rules;
pub mod layers;
pub mod load;
mod model;
mod parse;
pub mod preproc;
mod ptx;
pub mod query;
pub mod requirement;
pub mod sources;
pub mod triton;

pub use error::{FileError, ParseError};
pub use fatbin::{MAGIC as FATBIN_MAGIC, MAX_CONTAINERS, MAX_ENTRIES};
pub use inventory::{inventory_file, inventory_matching, inventory_path, is_candidate_name};
pub use load::{
    ContainerCoverage, Coverage, CoverageCounts, FileCoverage, Load, container_coverage, coverage,
    coverage_by_folder, entry_load, image_load,
};
pub use model::{
    Compression, Container, Entry, EntryKind, FileInventory, FileKind, Location, PtxIsa,
};
pub use parse::{Format, Parsed, parse_bytes, parse_bytes_lenient, sniff};
