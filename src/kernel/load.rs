//! Whether an image loads on a device, per `docs/fatbin.md` §5, and the per-container and
//! per-file coverage built on it.
//!
//! Coverage is per container because the CUDA runtime registers each container on its own:
//! one library can have kernels with SM120 SASS next to kernels with nothing for SM120.

use std::collections::BTreeMap;
use std::ops::AddAssign;
use std::path::{Path, PathBuf};

use serde::Serialize;

pub use super::model::Load;
use super::model::{Container, Entry, EntryKind, FileInventory, Location, PtxIsa};
use crate::arch::{Arch, Variant};

/// Rules table of §5. The device's own variant is ignored: a device *is* a plain arch.
pub fn image_load(kind: EntryKind, image: Arch, device: Arch) -> Load {
    let same_major = image.major == device.major;
    let family = same_major && device.minor >= image.minor;
    let exact = same_major && device.minor == image.minor;
    let later = (device.major, device.minor) >= (image.major, image.minor);
    let (ok, load) = match (kind, image.variant) {
        (EntryKind::Sass, Variant::A) => (exact, Load::Sass),
        (EntryKind::Sass, Variant::Plain | Variant::F) => (family, Load::Sass),
        (EntryKind::Ptx, Variant::A) => (exact, Load::PtxJit),
        (EntryKind::Ptx, Variant::F) => (family, Load::PtxJit),
        (EntryKind::Ptx, Variant::Plain) => (later, Load::PtxJit),
        (EntryKind::LtoIr | EntryKind::Concat | EntryKind::Unknown, _) => (false, Load::No),
    };
    if ok { load } else { Load::No }
}

/// Relocatable code is link input and never reaches the driver, whatever its arch.
pub fn entry_load(entry: &Entry, relocatable: bool, device: Arch) -> Load {
    if relocatable {
        return Load::No;
    }
    image_load(entry.kind, entry.target(), device)
}

/// The verdict for one container.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Coverage {
    Sass,
    PtxJit,
    None,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ContainerCoverage {
    pub offset: u64,
    pub section: Location,
    pub relocatable: bool,
    pub coverage: Coverage,
    /// For `ptx-jit`: the newest PTX ISA among the usable PTX, the driver version to check.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ptx_isa: Option<PtxIsa>,
    /// One verdict per image, in [`Container::leaves`] order.
    pub loads: Vec<Load>,
}

/// Containers by verdict. Relocatable containers are counted apart, never as `none`,
/// because a linked copy of their code normally sits in `.nv_fatbin` as well.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct CoverageCounts {
    pub sass: usize,
    pub ptx_jit: usize,
    pub none: usize,
    pub relocatable: usize,
}

impl CoverageCounts {
    fn count(&mut self, c: &ContainerCoverage) {
        match (c.relocatable, c.coverage) {
            (true, _) => self.relocatable += 1,
            (false, Coverage::Sass) => self.sass += 1,
            (false, Coverage::PtxJit) => self.ptx_jit += 1,
            (false, Coverage::None) => self.none += 1,
        }
    }
}

impl AddAssign for CoverageCounts {
    fn add_assign(&mut self, o: Self) {
        self.sass += o.sass;
        self.ptx_jit += o.ptx_jit;
        self.none += o.none;
        self.relocatable += o.relocatable;
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileCoverage {
    pub path: PathBuf,
    pub target: Arch,
    pub counts: CoverageCounts,
    pub containers: Vec<ContainerCoverage>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

pub fn container_coverage(container: &Container, device: Arch) -> ContainerCoverage {
    let loads: Vec<Load> = container
        .leaves()
        .map(|e| entry_load(e, container.relocatable, device))
        .collect();
    let jit_isa = container
        .leaves()
        .zip(&loads)
        .filter(|(_, l)| **l == Load::PtxJit)
        .filter_map(|(e, _)| e.ptx_isa)
        .max();
    let coverage = if loads.contains(&Load::Sass) {
        Coverage::Sass
    } else if loads.contains(&Load::PtxJit) {
        Coverage::PtxJit
    } else {
        Coverage::None
    };
    ContainerCoverage {
        offset: container.offset,
        section: container.section,
        relocatable: container.relocatable,
        coverage,
        ptx_isa: jit_isa.filter(|_| coverage == Coverage::PtxJit),
        loads,
    }
}

pub fn coverage(file: &FileInventory, target: Arch) -> FileCoverage {
    let device = target.plain();
    let containers: Vec<ContainerCoverage> = file
        .containers
        .iter()
        .map(|c| container_coverage(c, device))
        .collect();
    let mut counts = CoverageCounts::default();
    containers.iter().for_each(|c| counts.count(c));
    FileCoverage {
        path: file.path.clone(),
        target: device,
        counts,
        containers,
        error: file.error.clone(),
    }
}

/// Sums files by their top-level folder under `root` (in site-packages: the import package,
/// which is usually one distribution). Files directly in `root` are keyed by their own name.
pub fn coverage_by_folder(
    files: &[FileInventory],
    root: &Path,
    target: Arch,
) -> BTreeMap<PathBuf, CoverageCounts> {
    let mut out: BTreeMap<PathBuf, CoverageCounts> = BTreeMap::new();
    for file in files {
        let rel = file.path.strip_prefix(root).unwrap_or(&file.path);
        let key = rel
            .components()
            .next()
            .map(|c| PathBuf::from(c.as_os_str()))
            .unwrap_or_default();
        *out.entry(key).or_default() += coverage(file, target).counts;
    }
    out
}

impl FileInventory {
    /// Attaches per-target loadability to every entry, for reports that list several devices.
    pub fn annotate(&mut self, targets: &[Arch]) {
        for container in &mut self.containers {
            let relocatable = container.relocatable;
            for entry in &mut container.entries {
                annotate_entry(entry, relocatable, targets);
            }
        }
    }
}

fn annotate_entry(entry: &mut Entry, relocatable: bool, targets: &[Arch]) {
    for &target in targets {
        let load = entry_load(entry, relocatable, target);
        entry.load.insert(target.plain(), load);
    }
    for sub in &mut entry.sub_entries {
        annotate_entry(sub, relocatable, targets);
    }
}

#[cfg(test)]
mod tests;
