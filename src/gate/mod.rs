//! Gates: recognising decision sites, resolving them into predicates, classifying forms.

pub mod chunks;
pub mod exports;
pub mod feed;
pub mod import_order;
pub mod index;
pub mod ir;
pub mod limits;
pub mod lower;
pub mod predicate;
pub mod resolve;
pub mod semantic;
pub mod sites;
pub mod tokens;
