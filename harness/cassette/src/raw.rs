//! The on-disk JSON form of one record ([`RawRecord`]: every action field optional), the
//! one shape both the parser reads and the writer writes, so that they cannot drift apart.

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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) stdout_text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) stdout_b64: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) newline: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) stderr: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) stderr_b64: Option<String>,
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
