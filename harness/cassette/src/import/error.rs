//! Why an import failed ([`ImportError`]): the leaf the import and its option syntaxes both
//! step down to.

use std::path::{Path, PathBuf};

/// Why an import failed: a usage error, a bad input (naming its file and line) or an
/// output that could not be written (the CLI gives each its exit status).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ImportError {
    /// A bad option value (usage error).
    #[error("{0}")]
    Usage(String),
    /// The input cannot be read or does not fit the options (`line` 0: whole file).
    #[error("{}", at_line(.file, *.line, .message))]
    Input {
        /// The input file.
        file: PathBuf,
        /// 1-based line of the problem; 0 when the whole file is concerned.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// Writing or verifying the output failed.
    #[error("{}: {message}", .file.display())]
    Output {
        /// The output file.
        file: PathBuf,
        /// What failed.
        message: String,
    },
}

/// `file: message`, or `file:line: message` for a line of it.
fn at_line(file: &Path, line: usize, message: &str) -> String {
    match line {
        0 => format!("{}: {message}", file.display()),
        _ => format!("{}:{line}: {message}", file.display()),
    }
}
