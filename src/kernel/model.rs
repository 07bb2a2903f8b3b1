//! The inventory data model: what device code a file carries, independent of any target.
//!
//! Loadability depends on the device, so it is computed separately (`load.rs`) and only
//! attached to entries on request ([`FileInventory::annotate`]), keeping one scan reusable for
//! several targets.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use serde::{Serialize, Serializer};

use crate::arch::{Arch, Variant};

/// How one image can reach a device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Load {
    /// Machine code the device runs as is.
    Sass,
    /// PTX the driver must JIT; needs a driver that knows the entry's PTX ISA version.
    PtxJit,
    No,
}

/// What a scanned file is, decided from its first bytes rather than its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FileKind {
    SharedLibrary,
    Object,
    Executable,
    /// A host ELF of another `e_type` (core dump, unknown).
    OtherElf,
    Cubin,
    Fatbin,
    Ptx,
    /// The first bytes match no format we read.
    Unknown,
    /// The file could not be opened or read; see the error.
    Unreadable,
}

/// Where a container was found. Only `.nv_fatbin` is registered by the CUDA runtime.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum Location {
    #[serde(rename = ".nv_fatbin")]
    NvFatbin,
    #[serde(rename = "__nv_relfatbin")]
    NvRelfatbin,
    /// Embedded as data in another section (torch's `.lrodata`), loaded by explicit API calls.
    #[serde(rename = "plain-data")]
    PlainData,
    /// The whole file is the container: a raw `.fatbin`, a `.cubin` or a `.ptx`.
    #[serde(rename = "file")]
    File,
}

/// The kind field of a fatbin entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum EntryKind {
    Ptx,
    /// ELF cubin with machine code.
    Sass,
    LtoIr,
    /// `nvcc --concat` group; the real images are its `sub_entries`.
    Concat,
    Unknown,
}

impl EntryKind {
    pub(crate) fn from_code(code: u16) -> Self {
        match code {
            1 => EntryKind::Ptx,
            2 => EntryKind::Sass,
            8 => EntryKind::LtoIr,
            0x100 => EntryKind::Concat,
            _ => EntryKind::Unknown,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Compression {
    None,
    Zstd,
    Lz4,
}

/// A PTX ISA version: JIT needs a driver that knows it, so it is reported with `ptx-jit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PtxIsa {
    pub major: u16,
    pub minor: u16,
}

impl fmt::Display for PtxIsa {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

impl Serialize for PtxIsa {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// One image in a container (or one sub-entry of a concat group).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Entry {
    /// Absolute file offset of the entry (or sub-entry) header.
    pub offset: u64,
    pub kind: EntryKind,
    /// The raw kind field, kept because `Unknown` loses it.
    pub kind_code: u16,
    /// `major * 10 + minor` as stored; the a/f suffix is in `variant`.
    pub arch: u32,
    #[serde(serialize_with = "variant_suffix")]
    pub variant: Variant,
    pub compression: Compression,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ptx_isa: Option<PtxIsa>,
    pub debug: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sub_entries: Vec<Entry>,
    /// Filled by [`FileInventory::annotate`]; empty in a plain inventory.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub load: BTreeMap<Arch, Load>,
}

fn variant_suffix<S: Serializer>(variant: &Variant, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(variant.suffix())
}

impl Entry {
    pub fn target(&self) -> Arch {
        Arch::from_sm(self.arch, self.variant)
    }

    /// This entry, or its sub-entries when it is a concat group: the images a loader sees.
    pub fn leaves(&self) -> Box<dyn Iterator<Item = &Entry> + '_> {
        if self.sub_entries.is_empty() {
            Box::new(std::iter::once(self))
        } else {
            Box::new(self.sub_entries.iter().flat_map(Entry::leaves))
        }
    }
}

/// One fatbin container (or the pseudo-container of a bare cubin / PTX file).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Container {
    /// Absolute file offset of the container header.
    pub offset: u64,
    pub section: Location,
    /// For plain-data containers: the ELF section holding them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_section: Option<String>,
    /// Link input (`__nv_relfatbin`, `ET_REL` cubin): never loaded by the driver.
    pub relocatable: bool,
    pub entries: Vec<Entry>,
}

impl Container {
    /// Every image, with concat groups replaced by their sub-entries.
    pub fn leaves(&self) -> impl Iterator<Item = &Entry> {
        self.entries.iter().flat_map(Entry::leaves)
    }
}

/// The device code found in one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileInventory {
    #[serde(serialize_with = "crate::site::serialize_path")]
    pub path: PathBuf,
    pub kind: FileKind,
    pub size: u64,
    pub containers: Vec<Container>,
    /// Set when the file was cut short or hostile; `containers` holds what parsed before it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}
