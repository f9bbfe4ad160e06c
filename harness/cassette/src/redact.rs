//! Redaction: run-specific values in recorded output become stable placeholders.
//!
//! This module owns the pure text rewriting the recorder applies to every stdout line and
//! stderr chunk before it is written: known literal values (session id, cwd, temp paths, pi's
//! install path, the API key, the port) and two shapes found in pi's events (ISO-8601
//! timestamps inside strings, epoch-millisecond numbers under time-like keys). Every rewrite
//! keeps JSON valid: literals are replaced inside strings by placeholders that need no
//! escaping, ISO strings stay strings, numbers stay numbers.

use std::collections::BTreeMap;

/// Placeholder for ISO-8601 timestamps (inside JSON strings).
pub const TS: &str = "<TS>";
/// Replacement for epoch-millisecond numbers (kept numeric so typed parsers still work:
/// 2023-11-14T22:13:20Z).
pub const TS_MS: &str = "1700000000000";

/// The start of the fixed UUIDs a Claude Code recording writes where the CLI invented one
/// (`00000000-0000-4000-8000-000000000001`, ...); its header lists the family once as
/// `00000000-0000-4000-8000-<N>`.
pub const FIXED_UUID_PREFIX: &str = "00000000-0000-4000-8000-";

/// Literal and pattern redactions, applied in a fixed order.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    /// (value, placeholder, description), longest value first when applied.
    literals: Vec<(String, String, String)>,
    /// Placeholder -> description, for what was actually replaced.
    used: BTreeMap<String, String>,
}

impl Redactor {
    /// A redactor that replaces nothing yet.
    pub fn new() -> Redactor {
        Redactor::default()
    }

    /// Replace `value` by `placeholder` wherever it occurs (also in its JSON-escaped
    /// form). Empty values and values shorter than 4 bytes are ignored (too likely to
    /// hit innocent text).
    pub fn literal(&mut self, value: &str, placeholder: &str, description: &str) {
        if value.len() < 4 || self.literals.iter().any(|(v, _, _)| v == value) {
            return;
        }
        self.literals.push((
            value.to_string(),
            placeholder.to_string(),
            description.to_string(),
        ));
        // Longest first so `/tmp/x/work` wins over `/tmp/x`.
        self.literals.sort_by_key(|l| std::cmp::Reverse(l.0.len()));
    }

    /// Rewrite one line (or chunk) of output.
    pub fn apply(&mut self, text: &str) -> String {
        let mut out = text.to_string();
        for (value, placeholder, description) in &self.literals {
            let escaped = json_escaped(value);
            let mut hit = false;
            if out.contains(value.as_str()) {
                out = out.replace(value.as_str(), placeholder);
                hit = true;
            }
            if escaped != *value && out.contains(escaped.as_str()) {
                out = out.replace(escaped.as_str(), placeholder);
                hit = true;
            }
            if hit {
                self.used.insert(placeholder.clone(), description.clone());
            }
        }
        let (o, n) = redact_iso_timestamps(&out);
        if n > 0 {
            self.used
                .insert(TS.into(), "ISO-8601 timestamps (strings)".into());
        }
        let (o, n) = redact_epoch_ms(&o);
        if n > 0 {
            self.used.insert(
                TS_MS.into(),
                "epoch-millisecond timestamps (numbers under time keys; kept numeric)".into(),
            );
        }
        o
    }

    /// Placeholder -> what it replaced, for every redaction that happened (for `header.redactions`).
    pub fn used(&self) -> &BTreeMap<String, String> {
        &self.used
    }
}

/// `value` as it appears inside a JSON string.
fn json_escaped(value: &str) -> String {
    let s = serde_json::to_string(value).expect("a string serializes");
    s[1..s.len() - 1].to_string()
}

fn digits(b: &[u8], at: usize, n: usize) -> bool {
    at + n <= b.len() && b[at..at + n].iter().all(u8::is_ascii_digit)
}

/// Length of an ISO-8601 date-time starting at `i` (`YYYY-MM-DDTHH:MM:SS[.fff][Z|±HH:MM]`), if any.
fn iso_len(b: &[u8], i: usize) -> Option<usize> {
    let fixed = digits(b, i, 4)
        && b.get(i + 4) == Some(&b'-')
        && digits(b, i + 5, 2)
        && b.get(i + 7) == Some(&b'-')
        && digits(b, i + 8, 2)
        && b.get(i + 10) == Some(&b'T')
        && digits(b, i + 11, 2)
        && b.get(i + 13) == Some(&b':')
        && digits(b, i + 14, 2)
        && b.get(i + 16) == Some(&b':')
        && digits(b, i + 17, 2);
    if !fixed {
        return None;
    }
    let mut j = i + 19;
    if b.get(j) == Some(&b'.') && b.get(j + 1).is_some_and(u8::is_ascii_digit) {
        j += 1;
        while b.get(j).is_some_and(u8::is_ascii_digit) {
            j += 1;
        }
    }
    match b.get(j) {
        Some(b'Z') => j += 1,
        Some(b'+' | b'-')
            if digits(b, j + 1, 2) && b.get(j + 3) == Some(&b':') && digits(b, j + 4, 2) =>
        {
            j += 6
        }
        _ => {}
    }
    Some(j - i)
}

/// Replace ISO-8601 date-times with [`TS`]; returns the text and how many were replaced.
pub fn redact_iso_timestamps(text: &str) -> (String, usize) {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    let mut n = 0;
    let mut i = 0;
    while i + 19 <= b.len() {
        // A timestamp does not start in the middle of a longer number.
        let boundary = i == 0 || !b[i - 1].is_ascii_alphanumeric();
        if boundary {
            if let Some(len) = iso_len(b, i) {
                out.push_str(&text[last..i]);
                out.push_str(TS);
                i += len;
                last = i;
                n += 1;
                continue;
            }
        }
        i += 1;
    }
    out.push_str(&text[last..]);
    (out, n)
}

/// True for JSON keys that hold a point in time.
pub fn is_time_key(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    k.contains("timestamp")
        || (key.len() > 2 && key.ends_with("At"))
        || k.ends_with("_at")
        || k.ends_with("time")
}

/// Replace epoch-millisecond integers (13 digits) that are the value of a time-like key
/// (`"timestamp":1795302190417`) with [`TS_MS`]. Only real keys match: inside a JSON string
/// the quotes would be escaped. Returns the text and the count.
pub fn redact_epoch_ms(text: &str) -> (String, usize) {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    let mut n = 0;
    let mut i = 0;
    while let Some(off) = memchr::memmem::find(&b[i..], b"\":") {
        let colon = i + off + 1;
        let value = colon + 1;
        i = value;
        let glued = b
            .get(value + 13)
            .is_some_and(|c| c.is_ascii_digit() || matches!(c, b'.' | b'e' | b'E'));
        if !digits(b, value, 13) || glued {
            continue;
        }
        // Find the key's opening quote (keys with escapes are not time keys).
        let close = colon - 1;
        let Some(open) = b[..close].iter().rposition(|&c| c == b'"') else {
            continue;
        };
        if open > 0 && b[open - 1] == b'\\' {
            continue;
        }
        let key = &text[open + 1..close];
        if key.contains('\\') || !is_time_key(key) {
            continue;
        }
        out.push_str(&text[last..value]);
        out.push_str(TS_MS);
        last = value + 13;
        n += 1;
    }
    out.push_str(&text[last..]);
    (out, n)
}

/// True when `secret` occurs in `data` (raw or JSON-escaped). Empty secrets never match.
pub fn contains_secret(data: &[u8], secret: &str) -> bool {
    if secret.is_empty() {
        return false;
    }
    let escaped = json_escaped(secret);
    memchr::memmem::find(data, secret.as_bytes()).is_some()
        || memchr::memmem::find(data, escaped.as_bytes()).is_some()
}

/// A secret value shorter than this is not looked for: it would match innocent text.
pub const MIN_SECRET_BYTES: usize = 6;

/// The lines of `c` as it is written (1: the header, then one per record) that hold one of
/// the `secrets` (a name, and its value), with that secret's name: in the line's JSON text
/// (raw or JSON-escaped) or in a payload's bytes however the line stores them (text, JSON,
/// base64). Values shorter than [`MIN_SECRET_BYTES`] are skipped.
pub fn lines_holding(c: &crate::Cassette, secrets: &[(String, String)]) -> Vec<(usize, String)> {
    if !secrets.iter().any(|(_, v)| v.len() >= MIN_SECRET_BYTES) {
        return Vec::new();
    }
    let text = c.to_jsonl();
    let mut found = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let payload = i
            .checked_sub(1)
            .and_then(|r| c.records.get(r))
            .and_then(|r| payload(&r.action));
        for name in secrets_in_line(line.as_bytes(), payload, secrets) {
            found.push((i + 1, name.to_string()));
        }
    }
    found
}

/// The bytes a stdout or stderr record writes (the payload [`secrets_in_line`] looks in).
pub fn payload(action: &crate::Action) -> Option<&[u8]> {
    match action {
        crate::Action::Stdout(b) | crate::Action::Stderr(b) => Some(&b.data[..]),
        _ => None,
    }
}

/// The names of the `secrets` (a name, and its value) that one line of a cassette holds, in
/// their order: in its JSON text (raw or JSON-escaped) or in `payload`, the bytes its stdout
/// or stderr record writes, however the line stores them. Values shorter than
/// [`MIN_SECRET_BYTES`] are skipped.
pub fn secrets_in_line<'s>(
    line: &[u8],
    payload: Option<&[u8]>,
    secrets: &'s [(String, String)],
) -> Vec<&'s str> {
    secrets
        .iter()
        .filter(|(_, v)| v.len() >= MIN_SECRET_BYTES)
        .filter(|(_, v)| contains_secret(line, v) || payload.is_some_and(|p| contains_secret(p, v)))
        .map(|(name, _)| name.as_str())
        .collect()
}

/// What a message shows where a secret was ([`mask`]).
pub const MASK: &str = "[REDACTED]";

/// Shorter than this, a secret is masked only where it stands as a whole word (between
/// characters that are not letters, digits, `_` or `-`): a dummy key such as `x` is inside
/// `exec` and most prompts. Longer ones are masked wherever they are.
pub const MASK_ANYWHERE_BYTES: usize = 8;

/// `text` with every one of `secrets` (raw, and as it appears inside a JSON string) replaced
/// by [`MASK`]: for a message that may quote what a caller gave (a prompt, a flag's value,
/// a client's line), so that a value a cassette marks secret (`expect.never_in_argv`) never
/// reaches a terminal, a report or a CI log. Empty secrets mask nothing; see
/// [`MASK_ANYWHERE_BYTES`] for short ones.
pub fn mask(text: &str, secrets: &[String]) -> String {
    let mut out = text.to_string();
    for secret in secrets.iter().filter(|s| !s.is_empty()) {
        let escaped = json_escaped(secret);
        for form in [secret.as_str(), escaped.as_str()] {
            if out.contains(form) {
                out = mask_one(&out, form, secret.len() >= MASK_ANYWHERE_BYTES);
            }
        }
    }
    out
}

/// `text` with `form` replaced by [`MASK`]: everywhere, or only as a whole word.
fn mask_one(text: &str, form: &str, anywhere: bool) -> String {
    if anywhere {
        return text.replace(form, MASK);
    }
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '-');
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for (at, _) in text.match_indices(form) {
        let before = text[..at].chars().next_back();
        let after = text[at + form.len()..].chars().next();
        if at < last || word(before) || word(after) {
            continue;
        }
        out.push_str(&text[last..at]);
        out.push_str(MASK);
        last = at + form.len();
    }
    out.push_str(&text[last..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_timestamps_become_ts_and_json_stays_valid() {
        let line = r#"{"type":"session","timestamp":"2026-11-21T23:03:10.254Z","x":"at 2026-01-02T03:04:05+01:00."}"#;
        let (out, n) = redact_iso_timestamps(line);
        assert_eq!(n, 2);
        assert_eq!(
            out,
            r#"{"type":"session","timestamp":"<TS>","x":"at <TS>."}"#
        );
        serde_json::from_str::<serde_json::Value>(&out).unwrap();
        // Not a timestamp: a date without time, or digits glued to letters.
        assert_eq!(
            redact_iso_timestamps("2026-11-21 and v2026-11-21T23:03:10").1,
            0
        );
    }

    #[test]
    fn epoch_ms_under_time_keys_only() {
        let line = r#"{"timestamp":1795302190417,"tokens":1795302190417,"createdAt":1795302190418,"s":"\"timestamp\":1795302190419"}"#;
        let (out, n) = redact_epoch_ms(line);
        assert_eq!(n, 2);
        assert_eq!(
            out,
            r#"{"timestamp":1700000000000,"tokens":1795302190417,"createdAt":1700000000000,"s":"\"timestamp\":1795302190419"}"#
        );
        serde_json::from_str::<serde_json::Value>(&out).unwrap();
        // 12 or 14 digits, or a float: left alone.
        assert_eq!(redact_epoch_ms(r#"{"timestamp":179530219041}"#).1, 0);
        assert_eq!(redact_epoch_ms(r#"{"timestamp":17953021904170}"#).1, 0);
        assert_eq!(redact_epoch_ms(r#"{"timestamp":1795302190417.5}"#).1, 0);
    }

    #[test]
    fn literals_longest_first_and_escaped_and_listed() {
        let mut r = Redactor::new();
        r.literal("/tmp/rec-abc", "<TMP>", "recorder temp dir");
        r.literal("/tmp/rec-abc/work", "<CWD>", "pi's working directory");
        r.literal("sk-\"weird\"", "<API_KEY>", "the API key");
        r.literal("ab", "<NO>", "too short to redact");
        let out = r.apply(
            r#"{"cwd":"/tmp/rec-abc/work","p":"/tmp/rec-abc/agent","k":"sk-\"weird\"","ab":1}"#,
        );
        assert_eq!(
            out,
            r#"{"cwd":"<CWD>","p":"<TMP>/agent","k":"<API_KEY>","ab":1}"#
        );
        let used: Vec<&str> = r.used().keys().map(String::as_str).collect();
        assert_eq!(used, ["<API_KEY>", "<CWD>", "<TMP>"]);
    }

    #[test]
    fn secret_scan_finds_raw_and_escaped() {
        assert!(contains_secret(b"xx sk-1 yy", "sk-1"));
        assert!(contains_secret(br#"{"k":"a\"b"}"#, "a\"b"));
        assert!(!contains_secret(b"sk-2", "sk-1"));
        assert!(!contains_secret(b"anything", ""));
    }

    #[test]
    fn mask_hides_long_secrets_anywhere_and_short_ones_as_words() {
        let secrets = vec!["sk-live-0123456789".to_string(), "x".to_string()];
        assert_eq!(
            mask("prompt \"say sk-live-0123456789!\" in exec x", &secrets),
            "prompt \"say [REDACTED]!\" in exec [REDACTED]"
        );
        // Inside a JSON string, escaped.
        let quoted = vec!["a\"b-0123456789".to_string()];
        assert_eq!(
            mask(r#"got "a\"b-0123456789""#, &quoted),
            r#"got "[REDACTED]""#
        );
        assert_eq!(
            mask("--api-key=x, -x, xx", &secrets),
            "--api-key=[REDACTED], -x, xx"
        );
        assert_eq!(mask("nothing here", &[String::new()]), "nothing here");
    }
}
