//! Fatbin container and entry-header walker.
//!
//! The layout is undocumented by NVIDIA; see `docs/fatbin.md` §3 (shared notes) for how each
//! field was established. Only headers are read: payloads may be compressed and the verdict
//! never needs them. Each entry's own header size is honoured because it varies (64..232 bytes)
//! across toolkit versions.

use super::bytes::{add, span, to_usize, u16_at, u32_at, u64_at};
use super::error::ParseError;
use super::model::{Compression, Container, Entry, EntryKind, Location, PtxIsa};
use crate::arch::Variant;

/// Container magic plus version 1 and header size 16: what a plain-data scan looks for.
pub const MAGIC: [u8; 8] = [0x50, 0xED, 0x55, 0xBA, 0x01, 0x00, 0x10, 0x00];
const MAGIC_U32: [u8; 4] = [0x50, 0xED, 0x55, 0xBA];
pub(crate) const CONTAINER_HEADER: usize = 16;
const ENTRY_PREFIX: usize = 64;
const SUB_HEADER: usize = 0x50;

const FL_DEBUG: u64 = 0x2;
const FL_LZ4: u64 = 0x2000;
const FL_ZSTD: u64 = 0x8000;
const FL_ARCH_SPECIFIC: u64 = 0x10_0000;
const FL_FAMILY: u64 = 0x20_0000;

/// Caps on what one file may produce, so that a hostile file full of tiny containers cannot
/// make the inventory allocate gigabytes (real libraries have hundreds, not thousands).
pub const MAX_CONTAINERS: usize = 1 << 16;
pub const MAX_ENTRIES: usize = 1 << 18;

/// Collects containers of one file, enforcing the caps and keeping the first error.
#[derive(Debug, Default)]
pub(crate) struct Sink {
    pub containers: Vec<Container>,
    pub error: Option<ParseError>,
    entries: usize,
}

impl Sink {
    pub fn push(&mut self, container: Container) -> Result<(), ParseError> {
        let offset = container.offset as usize;
        self.entries += container
            .entries
            .iter()
            .map(|e| 1 + e.sub_entries.len())
            .sum::<usize>();
        if self.is_full() {
            return Err(ParseError::malformed(
                "fatbin container",
                offset,
                "too many containers or entries in one file",
            ));
        }
        self.containers.push(container);
        Ok(())
    }

    /// True once a cap was hit: later errors would only repeat it.
    pub fn is_full(&self) -> bool {
        self.containers.len() >= MAX_CONTAINERS || self.entries > MAX_ENTRIES
    }

    pub fn note(&mut self, error: ParseError) {
        self.error.get_or_insert(error);
    }
}

/// Walks containers laid back to back in `data[start..end]`, as in `.nv_fatbin` or a raw
/// `.fatbin`. Non-magic words are skipped 8 bytes at a time (containers are 8-aligned).
pub(crate) fn walk(
    data: &[u8],
    (start, end): (usize, usize),
    place: (Location, bool),
    sink: &mut Sink,
) -> Result<(), ParseError> {
    let region = data.get(..end).unwrap_or(data);
    let mut at = start;
    while at
        .checked_add(CONTAINER_HEADER)
        .is_some_and(|e| e <= region.len())
    {
        if region[at..at + 4] != MAGIC_U32 {
            at += 8;
            continue;
        }
        let (container, next) = container(region, at, place)?;
        sink.push(container)?;
        at = next;
    }
    Ok(())
}

/// Parses the container at `at`; it must end within `data`. Returns it and its end offset.
pub(crate) fn container(
    data: &[u8],
    at: usize,
    (section, relocatable): (Location, bool),
) -> Result<(Container, usize), ParseError> {
    let what = "fatbin container header";
    span(data, at, CONTAINER_HEADER, what)?;
    let version = u16_at(data, at + 4, what)?;
    let header_size = usize::from(u16_at(data, at + 6, what)?);
    if data[at..at + 4] != MAGIC_U32 || version != 1 || header_size < CONTAINER_HEADER {
        let detail = format!("unsupported magic/version {version}/header size {header_size}");
        return Err(ParseError::malformed(what, at, detail));
    }
    let fat_size = to_usize(u64_at(data, at + 8, what)?, at, what)?;
    let first = add(at, header_size, at, what)?;
    let end = span(data, first, fat_size, "fatbin container body")?;
    let entries = entries(&data[..end], first)?;
    let container = Container {
        offset: at as u64,
        section,
        in_section: None,
        relocatable,
        entries,
    };
    Ok((container, end))
}

fn entries(data: &[u8], first: usize) -> Result<Vec<Entry>, ParseError> {
    let mut out = Vec::new();
    let mut at = first;
    while at < data.len() {
        too_many(out.len(), at)?;
        let (entry, next) = entry(data, at)?;
        out.push(entry);
        at = next;
    }
    Ok(out)
}

/// One entry header; `data` ends at the container end. Returns the entry and the next offset.
fn entry(data: &[u8], at: usize) -> Result<(Entry, usize), ParseError> {
    let what = "fatbin entry header";
    span(data, at, ENTRY_PREFIX, what)?;
    let header_size = u32_at(data, at + 4, what)? as usize;
    if header_size < ENTRY_PREFIX {
        return Err(ParseError::malformed(
            what,
            at,
            format!("header size {header_size} is below 64"),
        ));
    }
    let header_end = span(data, at, header_size, what)?;
    let payload = to_usize(u64_at(data, at + 8, what)?, at, what)?;
    let next = span(data, header_end, payload, "fatbin entry payload")?;
    let mut entry = image(data, at, None)?;
    if entry.kind == EntryKind::Concat {
        entry.sub_entries = concat_members(&data[..header_end], at, entry.compression)?;
    }
    Ok((entry, next))
}

/// The fields shared by entry headers and concat sub-headers. Sub-entries inherit the group's
/// codec because their payloads live inside the group's single compressed blob.
fn image(data: &[u8], at: usize, codec: Option<Compression>) -> Result<Entry, ParseError> {
    let what = "fatbin entry header";
    let code = u16_at(data, at, what)?;
    let flags = u64_at(data, at + 0x28, what)?;
    let kind = EntryKind::from_code(code);
    let isa = PtxIsa {
        minor: u16_at(data, at + 0x18, what)?,
        major: u16_at(data, at + 0x1A, what)?,
    };
    Ok(Entry {
        offset: at as u64,
        kind,
        kind_code: code,
        arch: u32_at(data, at + 0x1C, what)?,
        variant: variant(flags),
        compression: codec.unwrap_or(compression(flags)),
        ptx_isa: (kind == EntryKind::Ptx).then_some(isa),
        debug: flags & FL_DEBUG != 0,
        sub_entries: Vec::new(),
        load: Default::default(),
    })
}

/// Sub-headers of a `--concat` group: `u32 count, u32 size` at `[0x14]`, then 0x50-byte
/// records. They must lie inside the group's own header (`data` ends there).
fn concat_members(data: &[u8], at: usize, codec: Compression) -> Result<Vec<Entry>, ParseError> {
    let what = "fatbin concat group";
    let block = u32_at(data, at + 0x14, what)? as usize;
    if block == 0 {
        return Err(ParseError::malformed(what, at, "no sub-header block"));
    }
    let block = add(at, block, at, what)?;
    let count = u32_at(data, block, what)? as usize;
    let mut out = Vec::new();
    let mut sub = add(block, 8, at, what)?;
    for _ in 0..count {
        too_many(out.len(), sub)?;
        span(data, sub, SUB_HEADER, "fatbin concat sub-header")?;
        out.push(image(data, sub, Some(codec))?);
        sub += SUB_HEADER;
    }
    Ok(out)
}

fn too_many(count: usize, at: usize) -> Result<(), ParseError> {
    if count >= MAX_ENTRIES {
        return Err(ParseError::malformed(
            "fatbin entry header",
            at,
            "too many entries in one container",
        ));
    }
    Ok(())
}

fn variant(flags: u64) -> Variant {
    if flags & FL_ARCH_SPECIFIC != 0 {
        Variant::A
    } else if flags & FL_FAMILY != 0 {
        Variant::F
    } else {
        Variant::Plain
    }
}

fn compression(flags: u64) -> Compression {
    if flags & FL_ZSTD != 0 {
        Compression::Zstd
    } else if flags & FL_LZ4 != 0 {
        Compression::Lz4
    } else {
        Compression::None
    }
}
