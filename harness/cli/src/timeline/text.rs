//! Text that goes into a timeline page, made safe to show: [`Mask`] (the header's
//! `never_in_argv` values never reach the page, masked as every line of fake-pi's and the
//! tools' masks them: `pi_cassette::redact::mask`), [`shown`] (bytes as text a person can read:
//! invalid UTF-8 as `\xNN`, bidi and other invisible controls as `[U+202E]`, so a record
//! cannot reorder or hide what the page shows), bounded previews ([`Mask::preview`]), and
//! [`script_json`]: JSON that can sit inside `<script type="application/json">` whatever
//! its strings hold (`<`, `>`, `&`, U+2028 and U+2029 escaped).

use serde_json::Value;

/// What stands in the page for a masked secret (the one mask of fake-pi's lines and the
/// tools' messages).
pub const MASKED: &str = pi_cassette::redact::MASK;

/// The shortest piece of a secret masked at a preview's edge (a record that starts or ends
/// inside a secret, or a preview cut inside one).
const EDGE_MIN: usize = 3;

/// The secrets a page must not show: the header's `never_in_argv` literals, and the values
/// the caller's environment gives its `{"env": NAME}` entries
/// (`pi_cassette::matching::secret_values`). Each is masked as `pi_cassette::redact::mask`
/// masks it (raw and JSON-escaped; one shorter than `MASK_ANYWHERE_BYTES` only as a whole
/// word, so that a dummy key does not mask ordinary text).
#[derive(Debug, Clone, Default)]
pub struct Mask {
    secrets: Vec<String>,
}

impl Mask {
    /// Mask these values (empty ones are ignored; longest first, so a secret holding
    /// another is masked whole).
    pub fn new(secrets: impl IntoIterator<Item = String>) -> Mask {
        // Each also as the page shows it (a secret holding a control character).
        let mut secrets: Vec<String> = secrets
            .into_iter()
            .filter(|s| !s.is_empty())
            .flat_map(|s| [shown_str(&s), s])
            .collect();
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        secrets.dedup();
        Mask { secrets }
    }

    /// The longest secret's length in bytes (0 without any).
    fn longest(&self) -> usize {
        self.secrets.first().map_or(0, String::len)
    }

    /// `text` with every secret replaced by [`MASKED`] (`pi_cassette::redact::mask`).
    pub fn apply(&self, text: &str) -> String {
        pi_cassette::redact::mask(text, &self.secrets)
    }

    /// Every string in `v` (keys too) masked and [`shown`].
    pub fn value(&self, v: &Value) -> Value {
        match v {
            Value::String(s) => Value::String(shown_str(&self.apply(s))),
            Value::Array(items) => Value::Array(items.iter().map(|i| self.value(i)).collect()),
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| (shown_str(&self.apply(k)), self.value(v)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    /// A preview of `bytes` at most about `cap` bytes long: read as text ([`shown`]), masked,
    /// cut at a character boundary. Only the first `cap` bytes (plus the longest secret, so
    /// one that straddles the cut is still found) are read, whatever the record's size.
    pub fn preview(&self, bytes: &[u8], cap: usize) -> String {
        let look = cap.saturating_add(self.longest()).min(bytes.len());
        let text = shown(&bytes[..look]);
        let mut masked = self.apply(&text);
        if masked.len() > cap {
            let mut end = cap;
            while !masked.is_char_boundary(end) {
                end -= 1;
            }
            masked.truncate(end);
        }
        // A record that starts or ends inside a secret (a stderr chunk cut there), or a
        // preview cut inside one, shows none of it. (A secret masked only as a whole word is
        // too short for its pieces to be told from ordinary text.)
        for s in self
            .secrets
            .iter()
            .filter(|s| s.len() >= pi_cassette::redact::MASK_ANYWHERE_BYTES)
        {
            masked = mask_edges(&masked, s);
        }
        masked
    }
}

/// `text` with a start of `secret` at its end, or an end of `secret` at its start (at least
/// [`EDGE_MIN`] bytes, or the whole secret when shorter), masked.
fn mask_edges(text: &str, secret: &str) -> String {
    let text = mask_tail(text, secret);
    let min = EDGE_MIN.min(secret.len());
    for k in (min..secret.len()).rev() {
        let Some(suffix) = secret.get(secret.len() - k..) else {
            continue;
        };
        if let Some(rest) = text.strip_prefix(suffix) {
            return format!("{MASKED}{rest}");
        }
    }
    text
}

/// `text` with a start of `secret` at its end masked.
fn mask_tail(text: &str, secret: &str) -> String {
    let min = EDGE_MIN.min(secret.len());
    for k in (min..secret.len()).rev() {
        let Some(prefix) = secret.get(..k) else {
            continue;
        };
        if let Some(rest) = text.strip_suffix(prefix) {
            return format!("{rest}{MASKED}");
        }
    }
    text.to_string()
}

/// Bytes as text a person can read safely: UTF-8 as it is, an invalid byte as `\xNN`, and
/// every control or invisible formatting character but newline and tab as `[U+XXXX]`.
pub fn shown(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        out.push_str(&shown_str(chunk.valid()));
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02X}"));
        }
    }
    out
}

/// As [`shown`], for a string.
pub fn shown_str(s: &str) -> String {
    if !s.chars().any(hidden) {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if hidden(c) {
            out.push_str(&format!("[U+{:04X}]", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// A character that would change or hide what is shown around it: C0 and C1 controls
/// (newline and tab excepted), the bidi embeddings, overrides, isolates and marks,
/// zero-width characters, the line and paragraph separators and the byte order mark.
fn hidden(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{8}' | '\u{b}'..='\u{1f}' | '\u{7f}'..='\u{9f}'
        | '\u{061c}' | '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}'
        | '\u{2060}'..='\u{2069}' | '\u{feff}')
}

/// `v` as JSON that can be embedded in `<script type="application/json">`: `<`, `>` and `&`
/// (so no `</script>` or `<!--` can close or change the element) and U+2028/U+2029 written
/// as `\u` escapes. They can only stand inside strings, where the escape means the same.
pub fn script_json(v: &impl serde::Serialize) -> String {
    let text = serde_json::to_string(v).expect("a timeline's data serializes");
    escape_for_script(&text)
}

/// JSON text with the characters [`script_json`] escapes escaped.
pub fn escape_for_script(json: &str) -> String {
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_is_masked_whole_at_a_cut_and_at_a_record_edge() {
        let m = Mask::new(["sk-live-123456".to_string()]);
        assert_eq!(m.apply("key=sk-live-123456!"), format!("key={MASKED}!"));
        assert_eq!(
            m.preview(b"key=sk-live-123456!", 100),
            format!("key={MASKED}!")
        );
        // A record ending inside the secret, and the next one starting inside it.
        assert_eq!(m.preview(b"key=sk-li", 100), format!("key={MASKED}"));
        assert_eq!(m.preview(b"123456 and on", 100), format!("{MASKED} and on"));
        // A preview cut inside the secret shows none of it.
        let p = m.preview(b"0123456789sk-live-123456 tail", 14);
        assert!(!p.contains("sk-"), "{p}");
        assert!(p.starts_with("0123456789"), "{p}");
        // Nothing is masked where there is no secret, however short the pieces.
        assert_eq!(m.preview(b"sk is fine", 100), "sk is fine");
    }

    /// The page masks as fake-pi's lines do (`pi_cassette::redact::mask`): a secret inside a
    /// JSON record's text, where it stands escaped, is masked too (the page's own masker
    /// replaced only the raw form, so a key holding a quote or a backslash was shown), and a
    /// secret too short to be told from ordinary text only as a whole word.
    #[test]
    fn the_page_masks_as_fake_pis_lines_do() {
        let key = r#"sk-"quoted"\back"#.to_string();
        let m = Mask::new([key.clone(), "x".to_string()]);
        let record = serde_json::json!({"text": format!("the key {key} and x")}).to_string();
        assert!(record.contains(r#"sk-\"quoted\"\\back"#), "{record}");
        let shown = m.preview(record.as_bytes(), 1000);
        assert_eq!(
            shown,
            format!(r#"{{"text":"the key {MASKED} and {MASKED}"}}"#)
        );
        assert_eq!(
            m.apply("exec x"),
            pi_cassette::redact::mask("exec x", &[key, "x".into()])
        );
        assert_eq!(m.apply("exec x"), format!("exec {MASKED}"));
    }

    #[test]
    fn bidi_controls_and_invalid_bytes_are_shown_as_text() {
        assert_eq!(
            shown("a\u{202e}b\u{2066}c".as_bytes()),
            "a[U+202E]b[U+2066]c"
        );
        assert_eq!(shown(b"x\xffy\x1b[31m\n\t"), "x\\xFFy[U+001B][31m\n\t");
    }

    #[test]
    fn script_json_cannot_close_its_element() {
        let s =
            script_json(&serde_json::json!({"t": "</script><script>alert(1)</script>&\u{2028}"}));
        assert!(
            !s.contains('<') && !s.contains('>') && !s.contains('&'),
            "{s}"
        );
        assert!(!s.contains('\u{2028}'));
        let back: Value = serde_json::from_str(&s).unwrap();
        assert_eq!(back["t"], "</script><script>alert(1)</script>&\u{2028}");
    }
}
