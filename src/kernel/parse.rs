//! Format dispatch: decide from the first bytes what a file is and hand it to its parser.

use super::error::ParseError;
use super::fatbin::{self, Sink};
use super::model::{Container, FileKind, Location};
use super::{bytes, cubin, elf, host, ptx};

/// What the first bytes of a file say it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Elf,
    Fatbin,
    PtxText,
}

/// Cheap classification from the first 64+ bytes, used to reject non-device files before
/// mapping them.
pub fn sniff(head: &[u8]) -> Option<Format> {
    if elf::sniff(head) {
        Some(Format::Elf)
    } else if head.starts_with(&fatbin::MAGIC) {
        Some(Format::Fatbin)
    } else if ptx::sniff(head) {
        Some(Format::PtxText)
    } else {
        None
    }
}

/// The device code of one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parsed {
    pub kind: FileKind,
    pub containers: Vec<Container>,
}

/// Strict parse: any inconsistency anywhere is an error.
pub fn parse_bytes(data: &[u8]) -> Result<Parsed, ParseError> {
    match parse_bytes_lenient(data) {
        (parsed, None) => Ok(parsed),
        (_, Some(err)) => Err(err),
    }
}

/// Keeps every container that parsed completely, plus the first error met. A corrupt
/// container does not hide the intact ones around it.
pub fn parse_bytes_lenient(data: &[u8]) -> (Parsed, Option<ParseError>) {
    let mut sink = Sink::default();
    let kind = match sniff(data) {
        Some(Format::Elf) => elf_file(data, &mut sink),
        Some(Format::Fatbin) => record(raw_fatbin(data, &mut sink), FileKind::Fatbin, &mut sink),
        Some(Format::PtxText) => single(ptx::parse(data), FileKind::Ptx, &mut sink),
        None => {
            sink.note(ParseError::Unrecognized);
            FileKind::Unknown
        }
    };
    (
        Parsed {
            kind,
            containers: sink.containers,
        },
        sink.error,
    )
}

/// A raw `.fatbin`: containers from offset 0. The sniffed magic promises a full header.
fn raw_fatbin(data: &[u8], sink: &mut Sink) -> Result<(), ParseError> {
    bytes::span(data, 0, fatbin::CONTAINER_HEADER, "fatbin container header")?;
    fatbin::walk(data, (0, data.len()), (Location::File, false), sink)
}

fn elf_file(data: &[u8], sink: &mut Sink) -> FileKind {
    let hdr = match elf::header(data) {
        Ok(hdr) => hdr,
        Err(err) => return record(Err(err), FileKind::OtherElf, sink),
    };
    if hdr.machine == elf::EM_CUDA {
        return single(cubin::parse(data, &hdr), FileKind::Cubin, sink);
    }
    let kind = match hdr.e_type {
        elf::ET_DYN => FileKind::SharedLibrary,
        elf::ET_REL => FileKind::Object,
        elf::ET_EXEC => FileKind::Executable,
        _ => FileKind::OtherElf,
    };
    record(host::parse(data, &hdr, sink), kind, sink)
}

fn single(result: Result<Container, ParseError>, kind: FileKind, sink: &mut Sink) -> FileKind {
    let pushed = result.and_then(|c| sink.push(c));
    record(pushed, kind, sink)
}

fn record(result: Result<(), ParseError>, kind: FileKind, sink: &mut Sink) -> FileKind {
    if let Err(err) = result {
        sink.note(err);
    }
    kind
}
