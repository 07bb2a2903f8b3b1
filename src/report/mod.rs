//! Printers. Machine formats go to stdout; nothing else in the crate prints results.

pub mod explain;
pub mod github;
pub mod html;
pub mod human;
pub mod json;
pub mod kernels;
pub mod patches;
pub mod sarif;

use crate::arch::Arch;
use crate::gate::predicate::{Admits, CudaVersion, evaluate};
use crate::scan::{Gate, ScanResult};
use crate::site::Site;
use crate::verdict::Verdicts;

/// With `--baseline`: the findings it accepts, as (gate index, target index). The human and
/// GitHub printers list the others, the new ones, first.
pub type Accepted = std::collections::HashSet<(usize, usize)>;

/// Everything a printer needs about one audit.
pub struct AuditReport<'a> {
    pub site: &'a Site,
    pub targets: &'a [Arch],
    pub cuda: Option<&'a CudaVersion>,
    pub result: &'a ScanResult,
    /// Per gate, per target; `None` when verdicts were not computed.
    pub verdicts: Option<&'a Verdicts>,
}

impl AuditReport<'_> {
    /// The gate's evaluation at every target, in target order.
    pub fn admits(&self, gate: &Gate) -> Vec<Admits> {
        self.targets
            .iter()
            .map(|t| evaluate(&gate.predicate, t.plain(), self.cuda))
            .collect()
    }
}
