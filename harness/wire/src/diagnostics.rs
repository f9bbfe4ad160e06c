//! The diagnostics a failed run carries, kept within bounds: the bad lines of its stdout
//! ([`InvalidLines`], handed to `terminal.failed`), the reading of one line as a JSON
//! object that reports why it is not one ([`parse_object`]), and the last line of its
//! stderr that a failure message quotes ([`last_line`]). Shared by pi's mapper, Claude
//! Code's, Codex's and Gemini's.

use serde::de::IgnoredAny;
use serde_json::{Map, Value};

use crate::message::InvalidLine;

/// Longest excerpt kept of one bad line.
pub const EXCERPT_BYTES: usize = 200;

/// The bad lines (and notes about lines) of a run: at most `max_lines` kept, with
/// excerpts of at most `max_bytes` in all; the others only counted.
#[derive(Debug)]
pub(crate) struct InvalidLines {
    max_lines: usize,
    max_bytes: usize,
    kept: Vec<InvalidLine>,
    dropped: u64,
    bytes: usize,
}

impl InvalidLines {
    pub(crate) fn new(max_lines: usize, max_bytes: usize) -> Self {
        InvalidLines {
            max_lines,
            max_bytes,
            kept: Vec::new(),
            dropped: 0,
            bytes: 0,
        }
    }

    /// Keep a bad line for diagnostics, within the bounds.
    pub(crate) fn record(&mut self, line: u64, bytes: u64, problem: String, raw: &[u8]) {
        if self.kept.len() >= self.max_lines {
            self.dropped += 1;
            return;
        }
        let room = self.max_bytes.saturating_sub(self.bytes).min(EXCERPT_BYTES);
        let excerpt = excerpt(raw, room);
        self.bytes += excerpt.len();
        self.kept.push(InvalidLine {
            line,
            bytes,
            problem,
            excerpt,
        });
    }

    /// A line over the framing's cap of `cap` bytes (`head`: its first bytes), the same
    /// way in every mapper.
    pub(crate) fn oversized(&mut self, line: u64, bytes: u64, cap: usize, head: &[u8]) {
        self.record(
            line,
            bytes,
            format!("over the line cap of {cap} bytes"),
            head,
        );
    }

    /// The lines kept so far, for a `terminal.failed` (the count of dropped ones stays).
    pub(crate) fn take(&mut self) -> Vec<InvalidLine> {
        std::mem::take(&mut self.kept)
    }

    /// How many bad lines were counted but not kept.
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Forget every line and count: a new run starts.
    pub(crate) fn clear(&mut self) {
        self.kept.clear();
        self.dropped = 0;
        self.bytes = 0;
    }
}

/// Line `n` (`raw`) as a JSON object, or `None` with the reason recorded in `invalid`:
/// `empty line`, `not JSON: ...`, `not a JSON object`. JSON whose strings hold invalid
/// UTF-8 is decoded lossily (U+FFFD), used, and recorded all the same.
pub(crate) fn parse_object(
    invalid: &mut InvalidLines,
    n: u64,
    raw: &[u8],
) -> Option<Map<String, Value>> {
    let mut bad = |problem: String| invalid.record(n, raw.len() as u64, problem, raw);
    match raw.iter().find(|b| !b.is_ascii_whitespace()) {
        None => {
            bad("empty line".into());
            return None;
        }
        Some(b'{') => {}
        Some(_) => {
            bad(match serde_json::from_slice::<IgnoredAny>(raw) {
                Ok(_) => "not a JSON object".to_string(),
                Err(e) => format!("not JSON: {e}"),
            });
            return None;
        }
    }
    match serde_json::from_slice::<Value>(raw) {
        Ok(Value::Object(map)) => Some(map),
        Ok(_) => {
            bad("not a JSON object".into());
            None
        }
        Err(e) => {
            if std::str::from_utf8(raw).is_err() {
                // JSON whose strings hold invalid UTF-8: still says what happened.
                let lossy = String::from_utf8_lossy(raw);
                if let Ok(Value::Object(map)) = serde_json::from_str::<Value>(&lossy) {
                    bad("invalid UTF-8, decoded lossily (U+FFFD); the record was used".into());
                    return Some(map);
                }
            }
            bad(format!("not JSON: {e}"));
            None
        }
    }
}

/// The last non-empty line of a stderr tail, trimmed and bounded.
pub(crate) fn last_line(tail: &str) -> Option<String> {
    last_line_except(tail, |_| false)
}

/// The last non-empty line of a stderr tail that `noise` does not reject, trimmed and
/// bounded.
pub(crate) fn last_line_except(tail: &str, noise: impl Fn(&str) -> bool) -> Option<String> {
    let line = tail
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty() && !noise(l))?;
    Some(cut(line, EXCERPT_BYTES).to_string())
}

/// The start of a line, lossily decoded, at most `max` bytes of UTF-8.
fn excerpt(raw: &[u8], max: usize) -> String {
    let head = &raw[..raw.len().min(max)];
    let mut s = String::from_utf8_lossy(head).into_owned();
    // Replacement characters can make it longer than `max`: cut on a char boundary.
    if s.len() > max {
        let end = cut(&s, max).len();
        s.truncate(end);
    }
    s
}

/// `s` cut to at most `max` bytes, on a char boundary.
fn cut(s: &str, max: usize) -> &str {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}
