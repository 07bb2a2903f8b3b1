//! Bounds-checked little-endian reads.
//!
//! All parsers read untrusted files through these helpers so that a bad offset becomes a
//! [`ParseError::Truncated`] instead of a panic. The upper bound of a read is the length of the
//! slice passed in; callers shorten the slice (`&data[..end]`) to confine a structure to its
//! section or container while keeping absolute file offsets.

use super::error::ParseError;

/// `off + len`, failing as a truncation when it overflows or passes `data.len()`.
pub(crate) fn span(
    data: &[u8],
    off: usize,
    len: usize,
    what: &'static str,
) -> Result<usize, ParseError> {
    match off.checked_add(len) {
        Some(end) if end <= data.len() => Ok(end),
        _ => Err(ParseError::Truncated {
            what,
            offset: off as u64,
            need: len as u64,
            end: data.len() as u64,
        }),
    }
}

pub(crate) fn slice<'a>(
    data: &'a [u8],
    off: usize,
    len: usize,
    what: &'static str,
) -> Result<&'a [u8], ParseError> {
    let end = span(data, off, len, what)?;
    Ok(&data[off..end])
}

fn array<const N: usize>(
    data: &[u8],
    off: usize,
    what: &'static str,
) -> Result<[u8; N], ParseError> {
    let bytes = slice(data, off, N, what)?;
    let mut out = [0u8; N];
    out.copy_from_slice(bytes);
    Ok(out)
}

pub(crate) fn u8_at(data: &[u8], off: usize, what: &'static str) -> Result<u8, ParseError> {
    Ok(array::<1>(data, off, what)?[0])
}

pub(crate) fn u16_at(data: &[u8], off: usize, what: &'static str) -> Result<u16, ParseError> {
    array(data, off, what).map(u16::from_le_bytes)
}

pub(crate) fn u32_at(data: &[u8], off: usize, what: &'static str) -> Result<u32, ParseError> {
    array(data, off, what).map(u32::from_le_bytes)
}

pub(crate) fn u64_at(data: &[u8], off: usize, what: &'static str) -> Result<u64, ParseError> {
    array(data, off, what).map(u64::from_le_bytes)
}

/// Converts an untrusted 64-bit size or offset, reporting values this machine cannot address.
pub(crate) fn to_usize(value: u64, at: usize, what: &'static str) -> Result<usize, ParseError> {
    usize::try_from(value).map_err(|_| {
        ParseError::malformed(what, at, format!("value {value:#x} does not fit in memory"))
    })
}

/// `a + b` on untrusted values, as a typed error rather than an overflow panic.
pub(crate) fn add(a: usize, b: usize, at: usize, what: &'static str) -> Result<usize, ParseError> {
    a.checked_add(b)
        .ok_or_else(|| ParseError::malformed(what, at, "offset arithmetic overflows"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_past_the_end_are_errors() {
        let data = [1u8, 2, 3, 4];
        assert_eq!(u32_at(&data, 0, "x").unwrap(), 0x0403_0201);
        assert!(u32_at(&data, 1, "x").is_err());
        assert!(u16_at(&data, usize::MAX, "x").is_err());
        assert!(slice(&data, 4, 0, "x").unwrap().is_empty());
        assert!(add(usize::MAX, 1, 0, "x").is_err());
    }
}
