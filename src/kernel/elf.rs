//! Minimal, bounds-checked ELF32/ELF64 (little-endian) header and section-table reader.
//!
//! Only section headers are needed to find device code, so program headers, symbols and
//! relocations are never touched. Names borrow from the mapped file: copying them would let a
//! hostile table with many sections pointing at one huge name allocate far more than the file.

use super::bytes::{span, to_usize, u8_at, u16_at, u32_at, u64_at};
use super::error::ParseError;

pub const MAGIC: &[u8; 4] = b"\x7fELF";
pub const EM_CUDA: u16 = 190;
pub const ET_REL: u16 = 1;
pub const ET_EXEC: u16 = 2;
pub const ET_DYN: u16 = 3;
pub const SHT_NULL: u32 = 0;
pub const SHT_NOBITS: u32 = 8;
pub const SHF_EXECINSTR: u64 = 0x4;
const SHN_XINDEX: u16 = 0xffff;

/// The ELF header fields the inventory needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub is64: bool,
    pub osabi: u8,
    pub abi_version: u8,
    pub e_type: u16,
    pub machine: u16,
    pub flags: u32,
    shoff: u64,
    shentsize: u16,
    shnum: u16,
    shstrndx: u16,
}

/// One section header; `name` is empty when the file has no section-name table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Section<'a> {
    pub index: usize,
    pub name: &'a [u8],
    pub sh_type: u32,
    pub flags: u64,
    pub offset: u64,
    pub size: u64,
    link: u32,
    name_off: u32,
}

impl Section<'_> {
    /// The bytes the section occupies in the file, if it has any.
    pub fn file_range(&self) -> Option<(usize, usize)> {
        if self.sh_type == SHT_NOBITS || self.sh_type == SHT_NULL || self.size == 0 {
            return None;
        }
        // Checked against the file length in `sections`, so these conversions hold.
        let start = usize::try_from(self.offset).ok()?;
        Some((start, start.checked_add(usize::try_from(self.size).ok()?)?))
    }

    pub fn is_exec(&self) -> bool {
        self.flags & SHF_EXECINSTR != 0
    }
}

/// True when `data` starts like a little-endian ELF we can read.
pub fn sniff(data: &[u8]) -> bool {
    data.len() >= 6 && &data[..4] == MAGIC && matches!(data[4], 1 | 2) && data[5] == 1
}

pub fn header(data: &[u8]) -> Result<Header, ParseError> {
    if !sniff(data) {
        return Err(ParseError::malformed(
            "ELF header",
            0,
            "not a little-endian ELF32/ELF64 file",
        ));
    }
    let is64 = data[4] == 2;
    span(data, 0, if is64 { 64 } else { 52 }, "ELF header")?;
    let what = "ELF header";
    let (shoff, rest) = if is64 {
        (u64_at(data, 0x28, what)?, 0x30)
    } else {
        (u64::from(u32_at(data, 0x20, what)?), 0x24)
    };
    Ok(Header {
        is64,
        osabi: u8_at(data, 7, what)?,
        abi_version: u8_at(data, 8, what)?,
        e_type: u16_at(data, 0x10, what)?,
        machine: u16_at(data, 0x12, what)?,
        flags: u32_at(data, rest, what)?,
        shentsize: u16_at(data, rest + 10, what)?,
        shnum: u16_at(data, rest + 12, what)?,
        shstrndx: u16_at(data, rest + 14, what)?,
        shoff,
    })
}

/// Reads the section table. Every section with file bytes must lie inside the file.
pub fn sections<'a>(data: &'a [u8], hdr: &Header) -> Result<Vec<Section<'a>>, ParseError> {
    if hdr.shoff == 0 {
        return Ok(Vec::new());
    }
    let table = to_usize(hdr.shoff, 0x28, "ELF e_shoff")?;
    let entsize = usize::from(hdr.shentsize);
    if entsize < if hdr.is64 { 64 } else { 40 } {
        return Err(ParseError::malformed(
            "ELF e_shentsize",
            0,
            format!("{entsize} is too small"),
        ));
    }
    let first = raw_section(data, hdr.is64, table, 0)?;
    let count = match hdr.shnum {
        0 => to_usize(first.size, table, "ELF extended section count")?,
        n => usize::from(n),
    };
    let len = count
        .checked_mul(entsize)
        .ok_or_else(|| ParseError::malformed("ELF section table", table, "size overflows"))?;
    span(data, table, len, "ELF section table")?;
    let mut out = Vec::with_capacity(count);
    for index in 0..count {
        let sec = raw_section(data, hdr.is64, table + index * entsize, index)?;
        check_contents(data, &sec)?;
        out.push(sec);
    }
    let strndx = match hdr.shstrndx {
        SHN_XINDEX => first.link as usize,
        n => usize::from(n),
    };
    name_sections(data, &mut out, strndx, table)?;
    Ok(out)
}

fn check_contents(data: &[u8], sec: &Section) -> Result<(), ParseError> {
    if sec.sh_type == SHT_NOBITS || sec.sh_type == SHT_NULL || sec.size == 0 {
        return Ok(());
    }
    let what = "ELF section contents";
    let start = to_usize(sec.offset, 0, what)?;
    span(data, start, to_usize(sec.size, start, what)?, what).map(|_| ())
}

fn raw_section(
    data: &[u8],
    is64: bool,
    at: usize,
    index: usize,
) -> Result<Section<'static>, ParseError> {
    let what = "ELF section header";
    span(data, at, if is64 { 64 } else { 40 }, what)?;
    // ELF64 word fields sit at 8, 16, 24, 32 and ELF32 ones at 8, 12, 16, 20: `off / 2 + 4`.
    let word = |off: usize| -> Result<u64, ParseError> {
        if is64 {
            u64_at(data, at + off, what)
        } else {
            u32_at(data, at + off / 2 + 4, what).map(u64::from)
        }
    };
    Ok(Section {
        index,
        name: &[],
        name_off: u32_at(data, at, what)?,
        sh_type: u32_at(data, at + 4, what)?,
        flags: word(8)?,
        offset: word(24)?,
        size: word(32)?,
        link: u32_at(data, at + if is64 { 40 } else { 24 }, what)?,
    })
}

fn name_sections<'a>(
    data: &'a [u8],
    secs: &mut [Section<'a>],
    strndx: usize,
    table: usize,
) -> Result<(), ParseError> {
    if strndx == 0 || secs.is_empty() {
        return Ok(());
    }
    let strtab = match secs.get(strndx).map(Section::file_range) {
        Some(Some((start, end))) => &data[start..end],
        Some(None) => return Ok(()),
        None => {
            let detail = format!(
                "index {strndx} is not below the section count {}",
                secs.len()
            );
            return Err(ParseError::malformed("ELF e_shstrndx", table, detail));
        }
    };
    for sec in secs.iter_mut() {
        sec.name = name_at(strtab, sec.name_off as usize).ok_or_else(|| {
            ParseError::malformed(
                "ELF section name",
                table,
                format!("section {} has a bad name offset", sec.index),
            )
        })?;
    }
    Ok(())
}

fn name_at(strtab: &[u8], off: usize) -> Option<&[u8]> {
    let tail = strtab.get(off..)?;
    memchr::memchr(0, tail).map(|nul| &tail[..nul])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ELF32 with a NULL section, `.nv_fatbin` holding `payload`, and `.shstrtab`.
    fn elf32(payload: &[u8]) -> Vec<u8> {
        let names = b"\0.nv_fatbin\0.shstrtab\0";
        let mut out = vec![0u8; 56];
        out.extend_from_slice(payload);
        let strtab = out.len();
        out.extend_from_slice(names);
        out.resize(out.len().next_multiple_of(4), 0);
        let shoff = out.len();
        let section = |name: u32, kind: u32, off: usize, size: usize| {
            let mut h = [0u8; 40];
            for (i, v) in [name, kind, 0, 0, off as u32, size as u32]
                .into_iter()
                .enumerate()
            {
                h[i * 4..i * 4 + 4].copy_from_slice(&v.to_le_bytes());
            }
            h
        };
        out.extend_from_slice(&[0u8; 40]);
        out.extend_from_slice(&section(1, 1, 56, payload.len()));
        out.extend_from_slice(&section(12, 3, strtab, names.len()));
        out[..7].copy_from_slice(b"\x7fELF\x01\x01\x01");
        out[16..18].copy_from_slice(&ET_DYN.to_le_bytes());
        out[18..20].copy_from_slice(&3u16.to_le_bytes());
        out[0x20..0x24].copy_from_slice(&(shoff as u32).to_le_bytes());
        out[0x2E..0x30].copy_from_slice(&40u16.to_le_bytes());
        out[0x30..0x32].copy_from_slice(&3u16.to_le_bytes());
        out[0x32..0x34].copy_from_slice(&2u16.to_le_bytes());
        out
    }

    #[test]
    fn reads_elf32_sections() {
        let data = elf32(b"12345678");
        let hdr = header(&data).unwrap();
        assert!(!hdr.is64);
        let secs = sections(&data, &hdr).unwrap();
        let names: Vec<&[u8]> = secs.iter().map(|s| s.name).collect();
        assert_eq!(names, [&b""[..], b".nv_fatbin", b".shstrtab"]);
        assert_eq!(secs[1].file_range(), Some((56, 64)));
    }

    #[test]
    fn finds_fatbin_in_elf32_host() {
        let fatbin = include_bytes!("../../testdata/fatbin-samples/fatbin/variants.fatbin");
        let parsed = crate::kernel::parse_bytes(&elf32(fatbin)).unwrap();
        assert_eq!(parsed.containers.len(), 1);
        assert_eq!(parsed.containers[0].entries.len(), 11, "6 ELF + 5 PTX");
    }

    #[test]
    fn extended_section_numbering_is_bounded() {
        let mut data = elf32(b"12345678");
        data[0x30..0x32].copy_from_slice(&0u16.to_le_bytes());
        let shoff = u32::from_le_bytes(data[0x20..0x24].try_into().unwrap()) as usize;
        data[shoff + 20..shoff + 24].copy_from_slice(&u32::MAX.to_le_bytes());
        let hdr = header(&data).unwrap();
        assert!(matches!(
            sections(&data, &hdr),
            Err(ParseError::Truncated { .. })
        ));
        data[shoff + 20..shoff + 24].copy_from_slice(&3u32.to_le_bytes());
        assert_eq!(sections(&data, &hdr).unwrap().len(), 3);
    }

    #[test]
    fn rejects_bad_tables() {
        let mut data = elf32(b"12345678");
        data[0x32..0x34].copy_from_slice(&9u16.to_le_bytes());
        let hdr = header(&data).unwrap();
        assert!(matches!(
            sections(&data, &hdr),
            Err(ParseError::Malformed {
                what: "ELF e_shstrndx",
                ..
            })
        ));
        assert!(header(b"\x7fELF\x02\x02\x01").is_err(), "big-endian");
        assert!(header(b"\x7fELF\x02\x01\x01").is_err(), "short");
    }
}
