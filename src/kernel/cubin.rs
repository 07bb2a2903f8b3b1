//! Architecture of a bare cubin (`EM_CUDA` ELF), from its ELF header and `.nv.compat`.
//!
//! The SM field moved between the two cubin ABIs, so the layout is chosen by
//! `EI_ABIVERSION` and never by the SM value. CUDA 13 stopped setting the `a` bit in `e_flags`
//! and records it only as `.nv.compat` attribute 9, so both are consulted. The `f` variant
//! is not recorded in a cubin at all; such cubins read as plain, which loads identically.

use super::elf::{self, ET_REL, Header};
use super::error::ParseError;
use super::model::{Compression, Container, Entry, EntryKind, Location};
use crate::arch::Variant;

const SHT_NV_COMPAT: u32 = 0x7000_0086;
const ATTR_ARCH_SPECIFIC: u8 = 0x09;

/// The cubin as a one-entry pseudo-container, so coverage treats it like any container.
pub(crate) fn parse(data: &[u8], hdr: &Header) -> Result<Container, ParseError> {
    let (sm, accel_bit) = if hdr.abi_version >= 8 {
        ((hdr.flags >> 8) & 0xFF, hdr.flags & 0x8 != 0)
    } else {
        (hdr.flags & 0xFF, hdr.flags & 0x800 != 0)
    };
    let arch_specific = accel_bit || compat_attr(data, hdr, ATTR_ARCH_SPECIFIC)? == Some(1);
    let entry = Entry {
        offset: 0,
        kind: EntryKind::Sass,
        kind_code: 2,
        arch: sm,
        variant: if arch_specific {
            Variant::A
        } else {
            Variant::Plain
        },
        compression: Compression::None,
        ptx_isa: None,
        debug: false,
        sub_entries: Vec::new(),
        load: Default::default(),
    };
    Ok(Container {
        offset: 0,
        section: Location::File,
        in_section: None,
        relocatable: hdr.e_type == ET_REL,
        entries: vec![entry],
    })
}

/// Value byte of attribute `attr` in `.nv.compat`. Records are `{u8 fmt, u8 attr, ..}`:
/// fmt 4 carries a u16 length and a blob, the others are 4 bytes.
fn compat_attr(data: &[u8], hdr: &Header, attr: u8) -> Result<Option<u8>, ParseError> {
    let sections = elf::sections(data, hdr)?;
    let compat = sections
        .iter()
        .find(|s| s.name == b".nv.compat" || s.sh_type == SHT_NV_COMPAT)
        .and_then(|s| s.file_range());
    let Some((start, end)) = compat else {
        return Ok(None);
    };
    let list = &data[start..end];
    let mut i = 0usize;
    while i + 4 <= list.len() {
        if list[i] == 4 {
            i += 4 + usize::from(u16::from_le_bytes([list[i + 2], list[i + 3]]));
            continue;
        }
        if list[i + 1] == attr {
            return Ok(Some(list[i + 2]));
        }
        i += 4;
    }
    Ok(None)
}
