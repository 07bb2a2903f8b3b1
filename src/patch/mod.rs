//! Declarative patches: the files (`model`), anchoring and editing on the syntax tree
//! (`syntax`, `edit`), and planning an apply before anything is written (`plan`).

pub mod edit;
pub mod model;
pub mod overrides;
pub mod plan;
pub mod syntax;
pub mod synth;

pub use model::{Action, Anchor, AnchorTarget, Edit, FixClass, Patch, PatchSet, SynthInfo};
pub use plan::{Alternative, Decision, FileChange, PatchPlan, Plan, plan};
