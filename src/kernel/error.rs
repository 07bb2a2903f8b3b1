//! Typed errors for device-code parsing.
//!
//! Every error carries the byte offset of the structure that was found broken, so that a
//! report on a hostile or truncated file points at the exact place to look with a hex dump.

use std::path::PathBuf;

/// Why the bytes of one file could not be read as device code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// A structure claims bytes past the end of the range that must contain it.
    #[error(
        "{what} at offset {offset:#x} needs {need} bytes but its enclosing range ends at {end:#x}"
    )]
    Truncated {
        what: &'static str,
        offset: u64,
        need: u64,
        end: u64,
    },
    /// A field holds a value that no real toolchain writes.
    #[error("{what} at offset {offset:#x}: {detail}")]
    Malformed {
        what: &'static str,
        offset: u64,
        detail: String,
    },
    /// The first bytes match none of the formats we read (ELF, fatbin, PTX text).
    #[error("unrecognised format at offset 0x0: not ELF, fatbin or PTX text")]
    Unrecognized,
}

impl ParseError {
    /// The file offset the error points at.
    pub fn offset(&self) -> u64 {
        match self {
            ParseError::Truncated { offset, .. } | ParseError::Malformed { offset, .. } => *offset,
            ParseError::Unrecognized => 0,
        }
    }

    pub(crate) fn malformed(what: &'static str, offset: usize, detail: impl Into<String>) -> Self {
        ParseError::Malformed {
            what,
            offset: offset as u64,
            detail: detail.into(),
        }
    }
}

/// A per-file failure; the path is kept apart from the parse error so that callers can
/// still match on the typed cause.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: {source}", path.display())]
    Parse {
        path: PathBuf,
        #[source]
        source: ParseError,
    },
}
