//! Lint's one pass over a file: lines read one at a time within the input limits, each
//! checked on its own with the parser's own functions, the rules across lines kept as it goes
//! (the header first, replies and spawns, one final record at the end), and every line handed
//! to the content checks. Holds one line and bounded state, whatever the file's size.

use std::io::{BufRead, ErrorKind};

use super::content::Content;
use super::report::Report;
use super::schema::check_schema_extras;
use super::NamedSecrets;
use crate::parse::{line_text, parse_header, parse_record_ref, Replies};
use crate::reader::read_line;
use crate::{ActionRef, CassetteError};

/// How reading a line ended.
enum Read {
    /// A line is in the buffer; `true` when a `\n` ended it.
    Line(bool),
    /// The end of the input.
    End,
    /// The input cannot be read on (reported): nothing after this is judged.
    Stop,
}

/// Read the next line into `buf`, reporting a line past the limit, a broken gzip stream or a
/// total past the limit as a problem at line `lineno`. `Err` for a failure that is not the
/// file's content (the caller's input error).
fn next_line(
    report: &mut Report,
    input: &mut dyn BufRead,
    buf: &mut Vec<u8>,
    lineno: usize,
    max_line: usize,
) -> Result<Read, CassetteError> {
    match read_line(input, buf, report.file, lineno, max_line) {
        Ok(Some(newline)) => Ok(Read::Line(newline)),
        Ok(None) => Ok(Read::End),
        Err(CassetteError::Io { source, .. })
            if matches!(
                source.kind(),
                ErrorKind::Other
                    | ErrorKind::InvalidInput
                    | ErrorKind::InvalidData
                    // A cut stream (`incomplete frame`, `incomplete deflate stream`) is the
                    // file's content too, as a bad checksum is: a problem (exit 1), not an
                    // input error (it was exit 2).
                    | ErrorKind::UnexpectedEof
            ) =>
        {
            report.add(
                lineno,
                format!("cannot be read as a cassette from here: {source}"),
            );
            Ok(Read::Stop)
        }
        Err(e @ CassetteError::Invalid { .. }) => {
            report.add_error(e);
            Ok(Read::Stop)
        }
        Err(e) => Err(e),
    }
}

/// Lint every line of `input` into `report`: lines of at most `max_line` bytes, and at most
/// `budget` bytes in all (past it, one problem names the budget and the rest is not read).
pub(super) fn walk(
    report: &mut Report,
    input: &mut dyn BufRead,
    (max_line, budget): (usize, u64),
    secrets: &NamedSecrets,
) -> Result<(), CassetteError> {
    let mut buf = Vec::new();
    let mut read = 0u64;
    // The header's line first: without it the rest cannot be read as records.
    let newline = match next_line(report, input, &mut buf, 1, max_line)? {
        Read::Line(newline) => newline,
        Read::End => {
            report.add(1, "empty file: a cassette starts with a header line");
            return Ok(());
        }
        Read::Stop => return Ok(()),
    };
    let header = match line_text(report.file, 1, &buf)
        .and_then(|text| parse_header(report.file, 1, text).map(|h| (h, text)))
    {
        Ok((header, text)) => {
            check_schema_extras(report, 1, text);
            header
        }
        Err(e) => {
            report.add_error(e);
            return Ok(());
        }
    };
    let mut content = Content::new(report, &header, secrets);
    content.line(report, 1, &buf, None);
    let mut lines = Lines {
        lineno: 1,
        newline,
        ending: None,
        unreadable_last: false,
        replies: Replies::default(),
    };
    loop {
        match next_line(report, input, &mut buf, lines.lineno + 1, max_line)? {
            Read::Line(newline) => {
                lines.lineno += 1;
                read += buf.len() as u64 + 1;
                if read > budget {
                    report.add(
                        lines.lineno,
                        format!(
                            "more than {budget} bytes to check (lint's budget; raise it with {}=BYTES): the rest is not checked",
                            super::LINT_MAX_BYTES_ENV
                        ),
                    );
                    return Ok(());
                }
                lines.newline = newline;
                lines.record(report, &mut content, &buf, header.version);
            }
            Read::End => break,
            Read::Stop => return Ok(()),
        }
    }
    lines.end(report);
    content.finish(report);
    Ok(())
}

/// The rules across record lines, kept as they are read.
struct Lines {
    /// The last line read (1: the header).
    lineno: usize,
    /// Whether a `\n` ended it.
    newline: bool,
    /// The first final record: its line and key.
    ending: Option<(usize, &'static str)>,
    /// The last line could not be read as a record (its problem says enough).
    unreadable_last: bool,
    replies: Replies,
}

impl Lines {
    /// Check one record line (`self.lineno`) and hand what parses to the content checks.
    fn record(&mut self, report: &mut Report, content: &mut Content, raw: &[u8], version: u32) {
        let lineno = self.lineno;
        self.unreadable_last = true;
        let record = line_text(report.file, lineno, raw)
            .and_then(|text| parse_record_ref(report.file, lineno, text, version));
        let r = match record {
            Ok(r) => r,
            Err(e) => {
                report.add_error(e);
                content.line(report, lineno, raw, None);
                return;
            }
        };
        self.unreadable_last = false;
        let (spawn, reap) = match &r.action {
            ActionRef::Spawn(s) => (Some(s), None),
            ActionRef::Reap(id) => (None, Some(id.as_str())),
            _ => (None, None),
        };
        if let Err(what) = self
            .replies
            .check(r.action.is_client_line(), spawn, reap, r.reply)
        {
            report.add(lineno, what);
        }
        if let Some((at, key)) = self.ending {
            report.add(
                lineno,
                format!("record after the final `{key}` record on line {at} (exit, signal and hang end a cassette)"),
            );
        }
        if r.action.is_final() && self.ending.is_none() {
            self.ending = Some((lineno, r.action.key()));
        }
        let payload = match &r.action {
            ActionRef::Stdout { body, .. } | ActionRef::Stderr { body, .. } => Some(&body[..]),
            _ => None,
        };
        content.line(report, lineno, raw, payload);
        content.record(report, &r);
    }

    /// The rules at the end of the file.
    fn end(&self, report: &mut Report) {
        if !self.newline {
            report.add(
                self.lineno,
                "the last line has no newline (every cassette line ends with \\n)",
            );
        }
        if self.lineno == 1 {
            report.add(
                1,
                "no records after the header: a cassette must at least say how the process ends",
            );
        } else if self.ending.is_none() && !self.unreadable_last {
            report.add(
                self.lineno,
                "the last record must be `exit`, `signal` or `hang` (how the process ends)",
            );
        }
    }
}
