//! SIMD JSON crates beside the mapper's own validating scanner (contenders only: the mapper
//! does not use them).
//!
//! - [`sonic_validate_lines`]: each line checked with `sonic_rs::from_slice::<IgnoredAny>`
//!   (sonic-rs skips ignored values "with full validation" and checks UTF-8 first), the
//!   analogue of [`crate::validate_lines`];
//! - [`simd_json_validate_lines`]: each line copied into a padded scratch buffer (simd-json
//!   parses in place) and turned into a tape with reused buffers
//!   (`simd_json::fill_tape_padded`);
//! - [`sonic_extract_lines`]: each line read with sonic-rs into borrowed structs holding
//!   what the mapper's one-pass path takes from a line (see [`Line`]): the event `type`;
//!   for `message_update` the update's `type`, `delta`, `contentIndex` and raw `toolCall`;
//!   for `message_start`/`message_end` the message's role, content blocks (type, text,
//!   thinking, id, name, raw arguments), stop reason, error, usage and raw timestamp; for
//!   tool events the ids, name, raw args/partial result/result and `isError`. Everything
//!   else (the snapshots pi 0.73.1 writes on every token, `turn_end`, `agent_end`) is
//!   skipped with validation. Strictly typed, without the mapper's leniency, fallbacks,
//!   memo or messages: if anything it is flattered.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use sonic_rs::LazyValue;

use crate::{split_lines, Validation};

/// Every line checked to be JSON by sonic-rs. Empty lines count as invalid.
pub fn sonic_validate_lines(stdout: &[u8]) -> Validation {
    let mut v = Validation::default();
    for line in split_lines(stdout) {
        v.lines += 1;
        if sonic_rs::from_slice::<IgnoredAny>(line).is_err() {
            v.invalid += 1;
        }
    }
    v
}

/// Every line checked to be JSON by simd-json (one padded copy of the line each, the
/// buffers and the tape reused). Empty lines count as invalid.
pub fn simd_json_validate_lines(stdout: &[u8]) -> Validation {
    let mut v = Validation::default();
    let mut scratch: Vec<u8> = Vec::new();
    let mut buffers = simd_json::Buffers::new(64 << 10);
    let mut tape = simd_json::Tape::null();
    for line in split_lines(stdout) {
        v.lines += 1;
        scratch.clear();
        scratch.extend_from_slice(line);
        scratch.resize(line.len() + simd_json::INPUT_PADDING, 0);
        let mut t = tape.reset();
        if simd_json::fill_tape_padded(&mut scratch, line.len(), &mut buffers, &mut t).is_err() {
            v.invalid += 1;
        }
        tape = t.reset();
    }
    v
}

/// What [`sonic_extract_lines`] read, summed so that none of it is optimised away.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Extracted {
    /// Lines read.
    pub lines: u64,
    /// Lines that are not JSON (or not of the expected shape).
    pub invalid: u64,
    /// Bytes of `text_delta` deltas (the answer text, as the mapper emits it).
    pub text_delta_bytes: u64,
    /// Content blocks of `message_start`/`message_end` bodies.
    pub blocks: u64,
    /// `tool_execution_end` events.
    pub tool_ends: u64,
    /// Bytes of raw values taken (tool calls, arguments, results, timestamps).
    pub raw_bytes: u64,
}

/// Every line read into [`Line`] by sonic-rs.
pub fn sonic_extract_lines(stdout: &[u8]) -> Extracted {
    let mut x = Extracted::default();
    for line in split_lines(stdout) {
        x.lines += 1;
        match sonic_rs::from_slice::<Line>(line) {
            Ok(l) => l.add_to(&mut x),
            Err(_) => x.invalid += 1,
        }
    }
    x
}

/// One stdout line: what the mapper's one-pass path takes from it.
#[derive(Debug, Default)]
pub struct Line<'a> {
    kind: Option<Text<'a>>,
    ame: Option<Ame<'a>>,
    message: Option<Body<'a>>,
    tool_call_id: Option<Text<'a>>,
    tool_name: Option<Text<'a>>,
    args: Option<LazyValue<'a>>,
    partial_result: Option<LazyValue<'a>>,
    result: Option<LazyValue<'a>>,
    is_error: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
struct Ame<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Text<'a>>,
    #[serde(rename = "contentIndex")]
    content_index: Option<u64>,
    #[serde(borrow)]
    delta: Option<Text<'a>>,
    #[serde(rename = "toolCall", borrow)]
    tool_call: Option<LazyValue<'a>>,
}

#[derive(Debug, Default, Deserialize)]
struct Body<'a> {
    #[serde(borrow)]
    role: Option<Text<'a>>,
    #[serde(borrow, default)]
    content: Content<'a>,
    #[serde(rename = "stopReason", borrow)]
    stop_reason: Option<Text<'a>>,
    #[serde(rename = "errorMessage", borrow)]
    error_message: Option<Text<'a>>,
    usage: Option<Usage>,
    #[serde(borrow)]
    timestamp: Option<LazyValue<'a>>,
    #[serde(rename = "toolCallId", borrow)]
    tool_call_id: Option<Text<'a>>,
}

/// A string, borrowed from the line unless it holds escapes.
#[derive(Debug, Default)]
struct Text<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Text<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Text<'a>, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Text<'a>, E> {
                Ok(Text(Cow::Owned(v.to_string())))
            }
        }
        d.deserialize_str(V(std::marker::PhantomData))
    }
}

/// `content`: blocks, or (user and system messages) a string.
#[derive(Debug, Default)]
struct Content<'a> {
    blocks: Vec<Block<'a>>,
    text: Option<Text<'a>>,
}

#[derive(Debug, Default, Deserialize)]
struct Block<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Text<'a>>,
    #[serde(borrow)]
    text: Option<Text<'a>>,
    #[serde(borrow)]
    thinking: Option<Text<'a>>,
    #[serde(borrow)]
    id: Option<Text<'a>>,
    #[serde(borrow)]
    name: Option<Text<'a>>,
    #[serde(borrow)]
    arguments: Option<LazyValue<'a>>,
}

#[derive(Debug, Default, Deserialize)]
struct Usage {
    input: Option<u64>,
    output: Option<u64>,
    #[serde(rename = "cacheRead")]
    cache_read: Option<u64>,
    #[serde(rename = "cacheWrite")]
    cache_write: Option<u64>,
    #[serde(rename = "totalTokens")]
    total_tokens: Option<u64>,
    cost: Option<Cost>,
}

#[derive(Debug, Default, Deserialize)]
struct Cost {
    total: Option<f64>,
}

impl Line<'_> {
    fn add_to(&self, x: &mut Extracted) {
        let raw = |v: &Option<LazyValue>| v.as_ref().map_or(0, |v| v.as_raw_str().len() as u64);
        let len = |s: &Option<Text>| s.as_ref().map_or(0, |s| s.0.len() as u64);
        if let Some(a) = &self.ame {
            if a.kind.as_ref().map(|k| &*k.0) == Some("text_delta") {
                x.text_delta_bytes += len(&a.delta);
            }
            x.raw_bytes += raw(&a.tool_call) + a.content_index.unwrap_or(0);
        }
        if let Some(m) = &self.message {
            x.blocks += m.content.blocks.len() as u64;
            for b in &m.content.blocks {
                x.raw_bytes += raw(&b.arguments)
                    + len(&b.kind)
                    + len(&b.text)
                    + len(&b.thinking)
                    + len(&b.id)
                    + len(&b.name);
            }
            let u = m.usage.as_ref();
            x.raw_bytes += raw(&m.timestamp)
                + len(&m.role)
                + len(&m.content.text)
                + len(&m.stop_reason)
                + len(&m.error_message)
                + len(&m.tool_call_id)
                + u.map_or(0, |u| {
                    [
                        u.input,
                        u.output,
                        u.cache_read,
                        u.cache_write,
                        u.total_tokens,
                    ]
                    .iter()
                    .map(|n| n.unwrap_or(0))
                    .sum::<u64>()
                        + u.cost
                            .as_ref()
                            .and_then(|c| c.total)
                            .map_or(0, |t| t as u64)
                });
        }
        if self.kind.as_ref().map(|k| &*k.0) == Some("tool_execution_end") {
            x.tool_ends += 1;
        }
        x.raw_bytes += raw(&self.args)
            + raw(&self.partial_result)
            + raw(&self.result)
            + len(&self.tool_call_id)
            + len(&self.tool_name)
            + u64::from(self.is_error.unwrap_or(false));
    }
}

/// The keys of a line the extraction reads.
#[derive(Deserialize)]
enum Key {
    #[serde(rename = "type")]
    Type,
    #[serde(rename = "assistantMessageEvent")]
    Ame,
    #[serde(rename = "message")]
    Message,
    #[serde(rename = "toolCallId")]
    ToolCallId,
    #[serde(rename = "toolName")]
    ToolName,
    #[serde(rename = "args")]
    Args,
    #[serde(rename = "partialResult")]
    PartialResult,
    #[serde(rename = "result")]
    Result,
    #[serde(rename = "isError")]
    IsError,
    #[serde(other)]
    Other,
}

impl<'de: 'a, 'a> Deserialize<'de> for Line<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Line<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a pi event object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Line<'a>, A::Error> {
                let mut l = Line::default();
                while let Some(key) = map.next_key::<Key>()? {
                    match key {
                        Key::Type => l.kind = map.next_value()?,
                        // A message body is read for message_start/message_end (pi writes
                        // the type first); elsewhere it is a snapshot or a repeat, skipped.
                        Key::Message
                            if matches!(
                                l.kind.as_ref().map(|k| &*k.0),
                                Some("message_start" | "message_end")
                            ) =>
                        {
                            l.message = map.next_value()?
                        }
                        Key::Ame => l.ame = map.next_value()?,
                        Key::ToolCallId => l.tool_call_id = map.next_value()?,
                        Key::ToolName => l.tool_name = map.next_value()?,
                        Key::Args => l.args = map.next_value()?,
                        Key::PartialResult => l.partial_result = map.next_value()?,
                        Key::Result => l.result = map.next_value()?,
                        Key::IsError => l.is_error = map.next_value()?,
                        Key::Message | Key::Other => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(l)
            }
        }
        d.deserialize_map(V(std::marker::PhantomData))
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Content<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Content<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("message content: blocks or a string")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Content<'a>, A::Error> {
                let mut blocks = Vec::new();
                while let Some(b) = a.next_element::<Block<'a>>()? {
                    blocks.push(b);
                }
                Ok(Content { blocks, text: None })
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Content<'a>, E> {
                Ok(Content {
                    blocks: Vec::new(),
                    text: Some(Text(Cow::Borrowed(v))),
                })
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Content<'a>, E> {
                Ok(Content {
                    blocks: Vec::new(),
                    text: Some(Text(Cow::Owned(v.to_string()))),
                })
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}
