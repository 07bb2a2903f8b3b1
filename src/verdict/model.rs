//! What a verdict is: for one gate at one target, whether the gate admits the target combined
//! with whether a kernel for the target exists underneath the gated path.

use serde::{Deserialize, Serialize};

/// The six verdicts, worst first in the order a reader should look at them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VerdictKind {
    /// Admits the target, and no kernel for it exists: a latent crash today.
    Trap,
    /// Blocks the target, and a kernel for it exists: safe to open (patchable).
    Opportunity,
    /// Blocks the target, and no kernel for it exists: keep it closed.
    Wall,
    /// No kernel link was found, or the admission or the coverage is unknown.
    Unverified,
    /// Admits the target, and a kernel for it exists.
    Open,
    /// The code the gate decides was read whole and launches no kernel, whatever it admits:
    /// the gate changes Python behaviour only.
    NoKernel,
}

impl VerdictKind {
    pub const ALL: [VerdictKind; 6] = [
        VerdictKind::Trap,
        VerdictKind::Opportunity,
        VerdictKind::Wall,
        VerdictKind::Unverified,
        VerdictKind::Open,
        VerdictKind::NoKernel,
    ];

    pub fn name(self) -> &'static str {
        match self {
            VerdictKind::Trap => "trap",
            VerdictKind::Opportunity => "opportunity",
            VerdictKind::Wall => "wall",
            VerdictKind::Unverified => "unverified",
            VerdictKind::Open => "open",
            VerdictKind::NoKernel => "no-kernel",
        }
    }

    /// Whether the verdict asks something of the reader (a finding CI can fail on, a
    /// baseline can hold): every kind but `open` and `no-kernel`.
    pub fn is_finding(self) -> bool {
        !matches!(self, VerdictKind::Open | VerdictKind::NoKernel)
    }

    pub fn parse(text: &str) -> Option<VerdictKind> {
        VerdictKind::ALL.into_iter().find(|k| k.name() == text)
    }

    /// One line a person reads first.
    pub fn short(self) -> &'static str {
        match self {
            VerdictKind::Trap => {
                "the gate admits the target but no kernel for it exists underneath"
            }
            VerdictKind::Opportunity => {
                "the gate blocks the target although a kernel for it exists"
            }
            VerdictKind::Wall => "the gate blocks the target and no kernel for it exists",
            VerdictKind::Unverified => "no kernel could be linked to the gated path",
            VerdictKind::Open => "the gate admits the target and a kernel for it exists",
            VerdictKind::NoKernel => {
                "the code the gate decides was read whole and launches no kernel"
            }
        }
    }
}

/// One gate's verdict at one target, with the chain of evidence behind it: the admission,
/// how the gated path was linked to a kernel, and what coverage was found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    pub kind: VerdictKind,
    pub evidence: Vec<String>,
    /// The kernels the verdict rests on, each in one line a reviewer can check (the same
    /// facts as the evidence, without the chain that reached them).
    pub kernels: Vec<KernelInfo>,
}

/// One kernel a gated path needs, and what was found of it at the target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelInfo {
    /// The kernel: `JIT generator module:function`, `native op torch.ops.lib.op (lib/**/*.so)`,
    /// `CuTe DSL kernel module:Kernel`, `Triton kernel module:fn`, a launch feature.
    pub kernel: String,
    pub at_target: KernelState,
    /// How it was found present, or why it is unknown (empty when missing).
    pub how: String,
    /// Reached only under a condition of its own: one of the alternatives the path picks.
    pub alternative: bool,
    /// What was read of it, one fact a line: the arch list, each layer's answer (`L3 device
    /// guards yes: ...`), the library's SASS.
    pub found: Vec<String>,
}

/// What was found of a kernel at the target (`present`, `missing`, `unknown` in JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KernelState {
    Present,
    Missing,
    Unknown,
}

/// Verdicts for every gate of a scan (same order as `ScanResult::gates`), one per target (same
/// order as the report's targets).
pub type Verdicts = Vec<Vec<Verdict>>;
