//! Verdicts: each gate linked to the kernel behind it (declared `[[link]]` rules, or followed in
//! the code), and judged per target as open, opportunity, wall, trap or unverified.

pub mod code;
pub mod flow;
pub mod judge;
pub mod link;
pub mod model;
pub mod registry;
pub mod site_text;

pub use judge::{judge, judge_prepared, prepare};
pub use model::{Verdict, VerdictKind, Verdicts};
