//! Why reading a cassette failed: [`CassetteError`], which names the file and, for a
//! malformed cassette, the line and the field (`file:line: field: problem`).

use std::path::{Path, PathBuf};

/// Where a problem was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The file read (or the name the caller gave a stream).
    pub file: PathBuf,
    /// 1-based line number; 0 when the whole file is concerned.
    pub line: usize,
}

/// Every way reading a cassette can fail.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CassetteError {
    /// The file could not be opened or read (or decompressed).
    #[error("{path}: cannot read cassette: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the operating system (or the decoder) said.
        #[source]
        source: std::io::Error,
    },
    /// The bytes are not a valid cassette.
    #[error("{}:{}: {message}", .at.file.display(), .at.line)]
    Invalid {
        /// The file and line.
        at: Location,
        /// The field and the problem (`record field `dt_ms`: ...`).
        message: String,
    },
}

impl CassetteError {
    /// An [`CassetteError::Invalid`] at `file:line`.
    pub(crate) fn invalid(file: &Path, line: usize, message: impl Into<String>) -> Self {
        CassetteError::Invalid {
            at: Location {
                file: file.to_path_buf(),
                line,
            },
            message: message.into(),
        }
    }
}

/// A value quoted for an error message, cut to its first 64 characters.
pub(crate) fn shown(s: &str) -> String {
    const MAX: usize = 64;
    match s.char_indices().nth(MAX) {
        None => format!("{s:?}"),
        Some((at, _)) => format!("{:?}... ({} bytes)", &s[..at], s.len()),
    }
}
