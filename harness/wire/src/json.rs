//! [`Json`]: a JSON payload the normalized stream passes through without reading it (tool
//! arguments, partial results, results and errors).
//!
//! The mapper validates every line, so the payload's text is known to be JSON when a
//! message is made; it is kept as that text and parsed only when asked ([`Json::to_value`],
//! [`Json::parse`]) or when the message is serialized. Equality is JSON equality (key order
//! and whitespace do not count), and the serialized form is the parsed value's, so a
//! [`Json`] reads and writes exactly as the `serde_json::Value` it stands for.
//!
//! ```
//! use pi_wire::json::Json;
//! use serde_json::json;
//!
//! let args = Json::from_text(r#"{"command": "ls", "timeout": 5}"#).unwrap();
//! assert_eq!(args.to_value()["command"], "ls");
//! assert_eq!(args, Json::from(json!({"timeout": 5, "command": "ls"})));
//! assert_eq!(serde_json::to_string(&args).unwrap(), r#"{"command":"ls","timeout":5}"#);
//! assert!(Json::from_text("{").is_err());
//! ```

use std::fmt;

use serde::de::{DeserializeOwned, IgnoredAny};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// The text of one JSON value (RFC 8259, as `serde_json` validates it), not yet parsed.
#[derive(Clone)]
pub struct Json(Box<str>);

impl Json {
    /// `null`.
    pub fn null() -> Json {
        Json("null".into())
    }

    /// The text, validated: `Err` with serde_json's message when it is not one JSON value.
    pub fn from_text(text: &str) -> Result<Json, serde_json::Error> {
        serde_json::from_str::<IgnoredAny>(text)?;
        Ok(Json(text.into()))
    }

    /// Text the caller has already validated as one JSON value (the mapper's lines).
    pub(crate) fn validated(text: &str) -> Json {
        debug_assert!(serde_json::from_str::<IgnoredAny>(text).is_ok(), "{text}");
        Json(text.into())
    }

    /// The text as it stood in pi's line.
    pub fn text(&self) -> &str {
        &self.0
    }

    /// The value. A lone surrogate escape (`"\ud800"`: valid JSON, which JavaScript writes
    /// for a broken string, but no Rust string can hold it) reads as U+FFFD.
    pub fn to_value(&self) -> Value {
        self.parse::<Value>()
            .or_else(|_| serde_json::from_str(&lossy_surrogates(&self.0)))
            .unwrap_or_else(|e| {
                // Unreachable for validated text; never silently null: say what it was.
                Value::String(format!("unreadable JSON ({e}): {}", self.0))
            })
    }

    /// The value read as `T`.
    pub fn parse<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_str(&self.0)
    }

    /// True for `null`.
    pub fn is_null(&self) -> bool {
        self.0.trim() == "null"
    }
}

impl From<Value> for Json {
    fn from(v: Value) -> Json {
        Json::from(&v)
    }
}

impl From<&Value> for Json {
    fn from(v: &Value) -> Json {
        Json(v.to_string().into())
    }
}

impl PartialEq for Json {
    fn eq(&self, other: &Json) -> bool {
        self.0 == other.0 || self.to_value() == other.to_value()
    }
}

impl PartialEq<Value> for Json {
    fn eq(&self, other: &Value) -> bool {
        self.to_value() == *other
    }
}

impl fmt::Debug for Json {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Json({})", self.0)
    }
}

impl fmt::Display for Json {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for Json {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_value().serialize(s)
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Json, D::Error> {
        Value::deserialize(d).map(Json::from)
    }
}

/// `text` with every `\uXXXX` escape of a surrogate that has no partner replaced by
/// `\ufffd` (escapes inside strings only; backslashes do not occur outside them).
fn lossy_surrogates(text: &str) -> String {
    let b = text.as_bytes();
    let hex = |i: usize| -> Option<u16> {
        let h = b.get(i..i + 4)?;
        u16::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok()
    };
    // The code unit of a `\u` escape starting at `i` (the backslash).
    let unit = |i: usize| -> Option<u16> {
        (b.get(i) == Some(&b'\\') && b.get(i + 1) == Some(&b'u'))
            .then(|| hex(i + 2))
            .flatten()
    };
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let mut copied = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            i += 1;
            continue;
        }
        match unit(i) {
            Some(0xD800..=0xDBFF) => {
                if matches!(unit(i + 6), Some(0xDC00..=0xDFFF)) {
                    i += 12; // a pair
                } else {
                    out.push_str(&text[copied..i]);
                    out.push_str("\\ufffd");
                    i += 6;
                    copied = i;
                }
            }
            Some(0xDC00..=0xDFFF) => {
                out.push_str(&text[copied..i]);
                out.push_str("\\ufffd");
                i += 6;
                copied = i;
            }
            Some(_) => i += 6,
            // Any other escape is two bytes (`\\` included, so its second byte is skipped).
            None => i += 2,
        }
    }
    out.push_str(&text[copied..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    /// Any JSON value: strings with any character (quotes, backslashes, controls, astral).
    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            // Floats that print and read back exactly (serde_json's default float reading may
            // be one ulp off on others, with or without `Json`).
            (-1e4f64..1e4).prop_map(|f| Value::from((f * 8.0).round() / 8.0)),
            any::<String>().prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 32, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::btree_map(any::<String>(), inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// Written compact or pretty, a payload reads as the value it holds, equals it, and is
        /// written as that value is.
        #[test]
        fn a_payload_reads_and_writes_as_its_value(v in value(), pretty in any::<bool>()) {
            let text = if pretty {
                serde_json::to_string_pretty(&v).unwrap()
            } else {
                serde_json::to_string(&v).unwrap()
            };
            let j = Json::from_text(&text).unwrap();
            prop_assert_eq!(j.to_value(), v.clone());
            prop_assert_eq!(&j, &Json::from(&v));
            prop_assert_eq!(serde_json::to_string(&j).unwrap(), serde_json::to_string(&v).unwrap());
            let back: Json = serde_json::from_str(&serde_json::to_string(&j).unwrap()).unwrap();
            prop_assert_eq!(back, j);
        }

        /// Arbitrary text is either refused or read without a panic.
        #[test]
        fn any_text_is_refused_or_read(text in "\\PC{0,40}|[\\[\\]{}\":,0-9a-z\\\\ ]{0,40}") {
            if let Ok(j) = Json::from_text(&text) {
                let _ = j.to_value();
            }
        }
    }

    #[test]
    fn lone_surrogates_read_as_the_replacement_character() {
        let j =
            Json::from_text(r#"{"a":"x\ud800y","b":"\udc00","c":"\ud83d\ude00","d":"\\ud800"}"#)
                .unwrap();
        assert_eq!(
            j.to_value(),
            json!({"a": "x\u{fffd}y", "b": "\u{fffd}", "c": "\u{1f600}", "d": "\\ud800"})
        );
    }

    #[test]
    fn equality_is_json_equality() {
        let a = Json::from_text(r#"{ "a" : [1, 2], "b": null }"#).unwrap();
        assert_eq!(a, Json::from(json!({"b": null, "a": [1, 2]})));
        assert_ne!(a, Json::from(json!({"b": null, "a": [2, 1]})));
        assert_eq!(a, json!({"a": [1, 2], "b": null}));
    }

    #[test]
    fn reads_and_writes_as_the_value_it_stands_for() {
        let j = Json::from_text(r#"{"z":1,"a":{"y":"\u0041"}}"#).unwrap();
        let text = serde_json::to_string(&j).unwrap();
        assert_eq!(text, r#"{"a":{"y":"A"},"z":1}"#);
        let back: Json = serde_json::from_str(&text).unwrap();
        assert_eq!(back, j);
        assert!(Json::null().is_null());
        assert!(Json::from_text("[1,").is_err());
    }
}
