//! Device code inside a host ELF (`.so`, `.o`): the two fatbin sections, then containers
//! embedded as plain data elsewhere.
//!
//! The plain-data scan exists because torch keeps dozens of containers in `.lrodata` that
//! cuobjdump never lists. It reads only non-executable sections that were not walked already:
//! host machine code could hold the magic by chance, and a walked section must not be
//! counted twice. A plain-data container must end inside the bytes that were scanned.

use memchr::memmem;

use super::elf::{self, Header, Section};
use super::error::ParseError;
use super::fatbin::{self, MAGIC, Sink};
use super::model::Location;

/// Longest section name copied into a report; longer names are cut (hostile tables).
const NAME_LIMIT: usize = 64;

type Range = (usize, usize);

pub(crate) fn parse(data: &[u8], hdr: &Header, sink: &mut Sink) -> Result<(), ParseError> {
    let sections = elf::sections(data, hdr)?;
    let mut barred = Vec::new();
    let mut data_sections = Vec::new();
    for sec in &sections {
        let Some(range) = sec.file_range() else {
            continue;
        };
        match fatbin_place(sec) {
            Some(place) => {
                barred.push(range);
                walk_section(data, range, place, sink)?;
            }
            None if sec.is_exec() => barred.push(range),
            None => data_sections.push(*sec),
        }
    }
    scan_plain(data, &data_sections, &barred, sink)
}

/// The sections the CUDA toolchain writes containers into, and whether they are link input.
fn fatbin_place(sec: &Section) -> Option<(Location, bool)> {
    match sec.name {
        b".nv_fatbin" => Some((Location::NvFatbin, false)),
        b"__nv_relfatbin" => Some((Location::NvRelfatbin, true)),
        _ => None,
    }
}

/// A broken section is noted and the file goes on: other sections may still be intact.
/// Only hitting the size caps stops the file.
fn walk_section(
    data: &[u8],
    range: Range,
    place: (Location, bool),
    sink: &mut Sink,
) -> Result<(), ParseError> {
    match fatbin::walk(data, range, place, sink) {
        Err(err) if sink.is_full() => Err(err),
        Err(err) => {
            sink.note(err);
            Ok(())
        }
        Ok(()) => Ok(()),
    }
}

fn scan_plain(
    data: &[u8],
    sections: &[Section],
    barred: &[Range],
    sink: &mut Sink,
) -> Result<(), ParseError> {
    let mut sections: Vec<Section> = sections.to_vec();
    sections.sort_by_key(|s| (s.offset, s.index));
    let wanted: Vec<Range> = sections.iter().filter_map(Section::file_range).collect();
    let finder = memmem::Finder::new(&MAGIC);
    for (start, end) in subtract(&merge(wanted), &merge(barred.to_vec())) {
        let mut pos = start;
        while let Some(hit) = finder.find(&data[pos..end]) {
            let at = pos + hit;
            pos = match fatbin::container(&data[..end], at, (Location::PlainData, false)) {
                Ok((mut container, next)) => {
                    container.in_section = section_name(&sections, at);
                    sink.push(container)?;
                    next
                }
                Err(err) => {
                    sink.note(err);
                    at + MAGIC.len()
                }
            };
        }
    }
    Ok(())
}

/// The (first-starting) data section holding `at`, for the report only.
fn section_name(sections: &[Section], at: usize) -> Option<String> {
    let idx = sections
        .partition_point(|s| s.offset <= at as u64)
        .checked_sub(1)?;
    let sec = &sections[idx];
    let (_, end) = sec.file_range()?;
    (at < end)
        .then(|| String::from_utf8_lossy(&sec.name[..sec.name.len().min(NAME_LIMIT)]).into_owned())
}

/// Sorted, disjoint union of ranges.
fn merge(mut ranges: Vec<Range>) -> Vec<Range> {
    ranges.sort_unstable();
    let mut out: Vec<Range> = Vec::with_capacity(ranges.len());
    for (start, end) in ranges {
        match out.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => out.push((start, end)),
        }
    }
    out
}

/// `keep` minus `drop`, both sorted and disjoint; linear so hostile tables stay cheap.
fn subtract(keep: &[Range], drop: &[Range]) -> Vec<Range> {
    let mut out = Vec::new();
    let mut j = 0;
    for &(mut start, end) in keep {
        while j < drop.len() && drop[j].1 <= start {
            j += 1;
        }
        let mut k = j;
        while start < end {
            match drop.get(k) {
                Some(&(ds, de)) if ds < end => {
                    if ds > start {
                        out.push((start, ds));
                    }
                    start = start.max(de);
                    k += 1;
                }
                _ => {
                    out.push((start, end));
                    break;
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subtracts_ranges() {
        let keep = merge(vec![(0, 10), (20, 30), (5, 12)]);
        assert_eq!(keep, vec![(0, 12), (20, 30)]);
        let drop = merge(vec![(2, 4), (8, 22), (28, 40)]);
        assert_eq!(subtract(&keep, &drop), vec![(0, 2), (4, 8), (22, 28)]);
        assert_eq!(subtract(&keep, &[]), keep);
        assert!(subtract(&keep, &[(0, 100)]).is_empty());
    }
}
