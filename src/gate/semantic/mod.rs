//! One semantic model per module, built by one walk of its syntax tree (`bind`): scopes with
//! their parents, every binding of every name with the branch it sits in, and the control
//! flow of each scope, from which one query answers "which bindings of this name reach this
//! point, under which guards" (`SemanticModel::reaching`).
//!
//! The shape follows ruff's `ruff_python_semantic` (scopes, bindings and branches in arenas,
//! addressed by id) and pyright's binder and code-flow engine (reaching bindings are found by
//! walking the flow back from the read, so early returns, `try`/`except` and loops are flow,
//! not special cases). Unlike both, the flow is kept as the structured statement tree rather
//! than a graph of nodes: Python's control flow is structured, and a query walks one scope's
//! tree once, following only the name it asks about.
//!
//! Positions are byte offsets into the text the tree was parsed from; expressions are kept as
//! byte ranges, which a consumer maps back to the syntax nodes of the same tree. Nothing here
//! depends on another module: what crosses modules is built from this model, never fed back.

mod binder;
mod flow;
mod model;
#[cfg(test)]
mod tests;

pub use binder::bind;
pub use model::{
    Binding, BindingId, BindingKind, Branch, BranchId, BranchKind, Guard, GuardKind, MODULE_SCOPE,
    Range, Reach, Scope, ScopeId, ScopeKind, SemanticModel,
};
