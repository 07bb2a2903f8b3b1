//! Errors that carry their exit code. `anyhow` stays at the binary's edge.

use std::path::PathBuf;

/// Exit codes, documented in the README and `--help`.
pub mod exit {
    pub const OK: i32 = 0;
    pub const FINDINGS: i32 = 1;
    pub const USAGE: i32 = 2;
    pub const REFUSED: i32 = 3;
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bad input: a missing site, a malformed rule file, an unreadable path.
    #[error("{message}")]
    Input { message: String },
    /// Refused for safety: a conflict, drift, a missing kernel, a held lock.
    #[error("{message}")]
    Refused { message: String },
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl Error {
    pub fn input(message: impl Into<String>) -> Error {
        Error::Input {
            message: message.into(),
        }
    }

    pub fn refused(message: impl Into<String>) -> Error {
        Error::Refused {
            message: message.into(),
        }
    }

    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Input { .. } | Error::Io { .. } => exit::USAGE,
            Error::Refused { .. } => exit::REFUSED,
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
