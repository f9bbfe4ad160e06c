//! What lint reports: one [`Problem`] (`file:line: what`), and the problems found in one file
//! so far ([`Report`]), the leaf the format checks and the redaction scan both add to.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::CassetteError;

/// One problem found in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The file linted.
    pub file: PathBuf,
    /// 1-based line; 0 when the whole file is concerned.
    pub line: usize,
    /// What is wrong (`stdout: an API key (sk-...) ...`).
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file.display(), self.message)
        } else {
            write!(f, "{}:{}: {}", self.file.display(), self.line, self.message)
        }
    }
}

/// The problems found in one file so far.
pub(super) struct Report<'a> {
    pub(super) file: &'a Path,
    pub(super) problems: Vec<Problem>,
}

impl Report<'_> {
    pub(super) fn add(&mut self, line: usize, message: impl Into<String>) {
        self.problems.push(Problem {
            file: self.file.to_path_buf(),
            line,
            message: message.into(),
        });
    }

    pub(super) fn add_error(&mut self, e: CassetteError) {
        match e {
            CassetteError::Invalid { at, message } => self.add(at.line, message),
            CassetteError::Io { source, .. } => self.add(0, format!("cannot read: {source}")),
        }
    }
}
