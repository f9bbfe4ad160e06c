//! How the report words what it shows, for every module that shows it: a field difference
//! per line ([`diff_lines`], the first [`SHOWN_DIFFS`], a value cut to fit a line) and a word
//! of a command line to paste ([`shell_quote`]). Pure text, on nothing but [`FieldDiff`].

use serde_json::Value;

use crate::compare::FieldDiff;

/// Differences shown per case; the rest are counted.
pub const SHOWN_DIFFS: usize = 12;

/// A value in a difference line: its JSON, cut at 120 bytes; `(absent)` for none.
fn shown(v: &Option<Value>) -> String {
    match v {
        None => "(absent)".into(),
        Some(v) => {
            let s = v.to_string();
            if s.len() > 120 {
                let mut end = 117;
                while !s.is_char_boundary(end) {
                    end -= 1;
                }
                format!("{}...", &s[..end])
            } else {
                s
            }
        }
    }
}

/// A word for a shell command line, ready to paste: as it is when every character is plain
/// (letters, digits, `/._-=:,@%+`), else single-quoted (`'` as `'\''`), so that nothing in a
/// cassette's name or a path (`$(...)`, `;`, a space, a newline) is run or split when the
/// line is pasted; the empty word is `''`.
pub fn shell_quote(s: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-=:,@%+".contains(c);
    if !s.is_empty() && s.chars().all(plain) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// Differences as the report shows them: the first [`SHOWN_DIFFS`], one line each
/// (`      PATH: expected X, got Y`), then one line counting the rest (those past `diffs`,
/// `unlisted`, included).
pub fn diff_lines(diffs: &[FieldDiff], unlisted: usize) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    for d in diffs.iter().take(SHOWN_DIFFS) {
        writeln!(
            s,
            "      {}: expected {}, got {}",
            d.path,
            shown(&d.expected),
            shown(&d.actual)
        )
        .unwrap();
    }
    let more = diffs.len() + unlisted - diffs.len().min(SHOWN_DIFFS);
    if more > 0 {
        writeln!(s, "      ... {more} more differences").unwrap();
    }
    s
}
