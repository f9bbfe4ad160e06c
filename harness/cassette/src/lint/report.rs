//! What lint reports: one [`Problem`] (`file:line: what`), and the problems found in one file
//! so far ([`Report`]), the leaf every check adds to, given back in the order of their lines. What it keeps is bounded: at most
//! [`MAX_PROBLEMS`] problems (the rest counted, and said in one last problem), each message
//! cut at [`MAX_MESSAGE_BYTES`].

use std::fmt;
use std::path::{Path, PathBuf};

use crate::CassetteError;

/// The most problems reported for one file; past it, one last problem says how many more
/// were found.
pub const MAX_PROBLEMS: usize = 1000;
/// The longest message kept (bytes); a longer one (quoting a huge value, say) is cut there,
/// with `...`.
pub const MAX_MESSAGE_BYTES: usize = 1000;

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
    problems: Vec<Problem>,
    /// Problems found past [`MAX_PROBLEMS`], counted only.
    more: usize,
}

impl<'a> Report<'a> {
    pub(super) fn new(file: &'a Path) -> Self {
        Report {
            file,
            problems: Vec::new(),
            more: 0,
        }
    }

    pub(super) fn add(&mut self, line: usize, message: impl Into<String>) {
        if self.problems.len() >= MAX_PROBLEMS {
            self.more += 1;
            return;
        }
        let mut message = message.into();
        if message.len() > MAX_MESSAGE_BYTES {
            let mut cut = MAX_MESSAGE_BYTES;
            while !message.is_char_boundary(cut) {
                cut -= 1;
            }
            message.truncate(cut);
            message.push_str("...");
        }
        self.problems.push(Problem {
            file: self.file.to_path_buf(),
            line,
            message,
        });
    }

    pub(super) fn add_error(&mut self, e: CassetteError) {
        match e {
            CassetteError::Invalid { at, message } => self.add(at.line, message),
            CassetteError::Io { source, .. } => self.add(0, format!("cannot read: {source}")),
        }
    }

    /// The problems in the order of their lines (those of the whole file last), then one
    /// saying how many more were found past the cap.
    pub(super) fn finish(mut self) -> Vec<Problem> {
        self.problems
            .sort_by_key(|p| if p.line == 0 { usize::MAX } else { p.line });
        if self.more > 0 {
            let message = format!(
                "{} more problems not shown (lint shows the first {MAX_PROBLEMS})",
                self.more
            );
            self.problems.push(Problem {
                file: self.file.to_path_buf(),
                line: 0,
                message,
            });
        }
        self.problems
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn problems_and_messages_are_bounded_and_the_rest_is_counted() {
        let mut r = Report::new(Path::new("f"));
        for i in 0..MAX_PROBLEMS + 5 {
            r.add(i + 1, "x".repeat(if i == 0 { 5000 } else { 3 }));
        }
        let p = r.finish();
        assert_eq!(p.len(), MAX_PROBLEMS + 1);
        assert_eq!(p[0].message.len(), MAX_MESSAGE_BYTES + 3);
        assert!(p[0].message.ends_with("..."));
        assert_eq!(
            p[MAX_PROBLEMS].to_string(),
            "f: 5 more problems not shown (lint shows the first 1000)"
        );
        // A cut never splits a character.
        let mut r = Report::new(Path::new("f"));
        r.add(1, "é".repeat(MAX_MESSAGE_BYTES));
        assert!(r.finish()[0].message.ends_with("..."));
    }
}
