//! What pi prints about a command line: a [`Diagnostic`] line (a warning or an error) and
//! the [`Rejection`] of a command line it refuses (its stderr and exit code).

use std::fmt;

/// One line pi prints about its command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// An error (pi stops) rather than a warning (pi goes on).
    pub error: bool,
    /// The text after pi's `Error: ` or `Warning: ` prefix.
    pub message: String,
}

impl Diagnostic {
    pub(crate) fn error(message: impl Into<String>) -> Self {
        Diagnostic {
            error: true,
            message: message.into(),
        }
    }
    pub(crate) fn warning(message: impl Into<String>) -> Self {
        Diagnostic {
            error: false,
            message: message.into(),
        }
    }
}

impl fmt::Display for Diagnostic {
    /// As pi prints it (without colour, which pi drops when stderr is not a terminal).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let prefix = if self.error { "Error" } else { "Warning" };
        write!(f, "{prefix}: {}", self.message)
    }
}

/// What pi prints when it rejects a command line: its stderr and its exit code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// Exactly what pi writes to stderr, newline-terminated lines.
    pub stderr: String,
    /// The status pi exits with (1 for every rejection measured).
    pub exit_code: i32,
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (exit {})", self.stderr.trim_end(), self.exit_code)
    }
}

impl std::error::Error for Rejection {}

/// Diagnostics as pi prints them, a line each.
pub(crate) fn render(diags: &[Diagnostic]) -> String {
    diags.iter().map(|d| format!("{d}\n")).collect()
}
