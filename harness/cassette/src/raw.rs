//! The on-disk JSON form of one record ([`RawRecord`]: every action field optional), the
//! one shape both the parser reads and the writer writes, so that they cannot drift apart.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// The on-disk form of one record: every action field optional, exactly one set.
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRecord<'a> {
    #[serde(serialize_with = "write_ms")]
    pub(crate) dt_ms: Option<f64>,
    /// `"stdout": null` is the line `null`, so presence is kept apart from the value.
    #[serde(
        borrow,
        default,
        deserialize_with = "present_raw",
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) stdout: Option<&'a RawValue>,
    /// Text fields are read with one copy at most (see [`text`]).
    #[serde(
        borrow,
        default,
        deserialize_with = "text",
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) stdout_text: Option<Cow<'a, str>>,
    #[serde(
        borrow,
        default,
        deserialize_with = "text",
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) stdout_b64: Option<Cow<'a, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) newline: Option<bool>,
    #[serde(
        borrow,
        default,
        deserialize_with = "text",
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) stderr: Option<Cow<'a, str>>,
    #[serde(
        borrow,
        default,
        deserialize_with = "text",
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) stderr_b64: Option<Cow<'a, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) exit: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) signal: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) hang: Option<bool>,
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub(crate) spawn: Option<&'a RawValue>,
    #[serde(
        borrow,
        default,
        deserialize_with = "present_raw",
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) stdin: Option<&'a RawValue>,
    #[serde(rename = "match", default, skip_serializing_if = "Option::is_none")]
    pub(crate) fields: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) stdin_text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) stdin_close: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) client_signal: Option<String>,
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub(crate) request: Option<&'a RawValue>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) reap: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) reply: Option<u32>,
}

/// A text field: borrowed from the line when it holds no escape, else unescaped into one new
/// string. (serde's own `String` goes through a scratch buffer and then a copy of it: with the
/// line itself, three copies of a line as long as the line limit.)
fn text<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Cow<'de, str>>, D::Error> {
    let raw = <&'de RawValue>::deserialize(d)?;
    unescape(raw.get())
        .map(Some)
        .map_err(serde::de::Error::custom)
}

/// The string a JSON string literal (`"..."`, valid JSON) stands for.
pub(crate) fn unescape(json: &str) -> Result<Cow<'_, str>, String> {
    let inner = json
        .strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .ok_or_else(|| format!("invalid type: {}, expected a string", kind(json)))?;
    if !inner.contains('\\') {
        return Ok(Cow::Borrowed(inner));
    }
    let mut out = String::with_capacity(inner.len());
    let mut rest = inner;
    while let Some(i) = rest.find('\\') {
        out.push_str(&rest[..i]);
        let escape = rest.as_bytes().get(i + 1).copied();
        rest = &rest[(i + 2).min(rest.len())..];
        out.push(match escape {
            Some(b'"') => '"',
            Some(b'\\') => '\\',
            Some(b'/') => '/',
            Some(b'b') => '\u{8}',
            Some(b'f') => '\u{c}',
            Some(b'n') => '\n',
            Some(b'r') => '\r',
            Some(b't') => '\t',
            Some(b'u') => {
                let (c, used) = unicode_escape(rest)?;
                rest = &rest[used..];
                c
            }
            _ => return Err("invalid escape".into()),
        });
    }
    out.push_str(rest);
    Ok(Cow::Owned(out))
}

/// The character of a `\u` escape whose hex digits start `s` (a surrogate pair takes the
/// `\uDC00`-`\uDFFF` escape after it), and how many bytes of `s` it used.
fn unicode_escape(s: &str) -> Result<(char, usize), String> {
    let hex = |at: usize| {
        s.get(at..at + 4)
            .and_then(|h| u32::from_str_radix(h, 16).ok())
            .ok_or_else(|| "invalid \\u escape".to_string())
    };
    let first = hex(0)?;
    let (code, used) = match first {
        0xD800..=0xDBFF => {
            let low = if s.get(4..6) == Some("\\u") {
                hex(6)?
            } else {
                0
            };
            if !(0xDC00..=0xDFFF).contains(&low) {
                return Err("lone leading surrogate in hex escape".into());
            }
            (0x10000 + ((first - 0xD800) << 10) + (low - 0xDC00), 10)
        }
        0xDC00..=0xDFFF => return Err("lone trailing surrogate in hex escape".into()),
        c => (c, 4),
    };
    char::from_u32(code)
        .map(|c| (c, used))
        .ok_or_else(|| "invalid \\u escape".into())
}

/// What a JSON value that is not a string is, as serde names it.
fn kind(json: &str) -> &'static str {
    match json.as_bytes().first() {
        Some(b'n') => "null",
        Some(b't' | b'f') => "boolean",
        Some(b'{') => "map",
        Some(b'[') => "sequence",
        _ => "number",
    }
}

/// A present field, whatever its JSON value (`null` included).
fn present_raw<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

/// Whole milliseconds are written without a fraction (`0`, not `0.0`) to keep diffs quiet.
fn write_ms<S: serde::Serializer>(ms: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    match ms {
        Some(v) if v.fract() == 0.0 && *v >= 0.0 && *v < 9.0e15 => s.serialize_u64(*v as u64),
        Some(v) => s.serialize_f64(*v),
        None => s.serialize_none(),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::unescape;

    proptest! {
        /// Any string, as serde_json writes it (escapes, `\u` escapes, surrogate pairs),
        /// comes back as serde_json reads it.
        #[test]
        fn unescape_reads_what_serde_json_reads(s in "\\PC*|[\"\\\\\n\t\u{1}\u{1F600}a-z]*") {
            let json = serde_json::to_string(&s).unwrap();
            prop_assert_eq!(unescape(&json).unwrap(), s);
        }
    }

    #[test]
    fn escapes_serde_json_accepts_and_refuses() {
        for json in [
            r#""\u00e9\/\b\f\r""#,
            r#""\ud83d\ude00 x""#,
            r#""plain""#,
            r#""""#,
        ] {
            let want: String = serde_json::from_str(json).unwrap();
            assert_eq!(unescape(json).unwrap(), want, "{json}");
        }
        assert!(unescape(r#""\ud83d x""#).is_err());
        assert!(unescape(r#""\ude00""#).is_err());
        assert_eq!(
            unescape("5").unwrap_err(),
            "invalid type: number, expected a string"
        );
        // Borrowed when there is nothing to unescape.
        assert!(matches!(
            unescape(r#""a b""#).unwrap(),
            std::borrow::Cow::Borrowed("a b")
        ));
    }
}
