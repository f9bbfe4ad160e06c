//! pi's event schema: one line of `pi --mode json` stdout as borrowed structs ([`Event`],
//! [`MessageBody`], [`Content`], [`PiUsage`]), read by serde ([`parse_event`]) or filled in
//! place by the one-pass path (`fast`). Lenient where the shape is not ours to enforce: a
//! field of an unexpected shape reads as [`Lv::Other`] or `Obj(None)`, not as an error. The
//! big snapshot copies pi 0.73.1 writes on every token are skipped with [`IgnoredAny`]
//! unless the event has no delta.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

use crate::message::Usage;

/// The text of one JSON value exactly as it stood in the line (what a `&RawValue` holds):
/// read by the serde path through `&RawValue`, by the fast path as the scanned bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct RawJson<'a>(pub(super) &'a str);

impl<'a> RawJson<'a> {
    pub(super) fn get(self) -> &'a str {
        self.0
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for RawJson<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        <&'de RawValue>::deserialize(d).map(|r| RawJson(r.get()))
    }
}

/// A scalar field read leniently: a value of an unexpected shape is not an error.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) enum Lv<'a> {
    #[default]
    Absent,
    Str(Cow<'a, str>),
    U64(u64),
    I64(i64),
    F64(f64),
    Bool(bool),
    /// null, an array or an object.
    Other,
}

impl<'a> Lv<'a> {
    pub(super) fn to_static(&self) -> Lv<'static> {
        match self {
            Lv::Absent => Lv::Absent,
            Lv::Str(t) => Lv::Str(Cow::Owned(t.to_string())),
            Lv::U64(v) => Lv::U64(*v),
            Lv::I64(v) => Lv::I64(*v),
            Lv::F64(v) => Lv::F64(*v),
            Lv::Bool(v) => Lv::Bool(*v),
            Lv::Other => Lv::Other,
        }
    }

    pub(super) fn as_str(&self) -> Option<&str> {
        match self {
            Lv::Str(s) => Some(s),
            _ => None,
        }
    }
    pub(super) fn as_u64(&self) -> Option<u64> {
        match *self {
            Lv::U64(v) => Some(v),
            Lv::F64(v) if v >= 0.0 && v.fract() == 0.0 && v < 1.8e19 => Some(v as u64),
            _ => None,
        }
    }
    pub(super) fn as_f64(&self) -> Option<f64> {
        match *self {
            Lv::U64(v) => Some(v as f64),
            Lv::I64(v) => Some(v as f64),
            Lv::F64(v) => Some(v),
            _ => None,
        }
    }
    pub(super) fn as_bool(&self) -> Option<bool> {
        match *self {
            Lv::Bool(b) => Some(b),
            _ => None,
        }
    }
    pub(super) fn is_present(&self) -> bool {
        !matches!(self, Lv::Absent)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Lv<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Lv<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Lv<'a>, E> {
                Ok(Lv::Str(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Lv<'a>, E> {
                Ok(Lv::Str(Cow::Owned(v.to_string())))
            }
            fn visit_string<E>(self, v: String) -> Result<Lv<'a>, E> {
                Ok(Lv::Str(Cow::Owned(v)))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Lv<'a>, E> {
                Ok(Lv::U64(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Lv<'a>, E> {
                Ok(if v >= 0 {
                    Lv::U64(v as u64)
                } else {
                    Lv::I64(v)
                })
            }
            fn visit_f64<E>(self, v: f64) -> Result<Lv<'a>, E> {
                Ok(Lv::F64(v))
            }
            fn visit_bool<E>(self, v: bool) -> Result<Lv<'a>, E> {
                Ok(Lv::Bool(v))
            }
            fn visit_unit<E>(self) -> Result<Lv<'a>, E> {
                Ok(Lv::Other)
            }
            fn visit_none<E>(self) -> Result<Lv<'a>, E> {
                Ok(Lv::Other)
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Lv<'a>, D::Error> {
                d.deserialize_any(self)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Lv<'a>, A::Error> {
                while a.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Lv::Other)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Lv<'a>, A::Error> {
                while a.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Lv::Other)
            }
        }
        d.deserialize_any(V(PhantomData))
    }
}

/// An object parsed as `T`, or `None` when the value is not an object.
#[derive(Debug, Clone, Default)]
pub(super) struct Obj<T>(pub(super) Option<T>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Obj<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Obj<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, a: A) -> Result<Obj<T>, A::Error> {
                T::deserialize(de::value::MapAccessDeserializer::new(a)).map(|t| Obj(Some(t)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Obj<T>, A::Error> {
                while a.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Obj(None))
            }
            fn visit_str<E>(self, _: &str) -> Result<Obj<T>, E> {
                Ok(Obj(None))
            }
            fn visit_u64<E>(self, _: u64) -> Result<Obj<T>, E> {
                Ok(Obj(None))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Obj<T>, E> {
                Ok(Obj(None))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Obj<T>, E> {
                Ok(Obj(None))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Obj<T>, E> {
                Ok(Obj(None))
            }
            fn visit_unit<E>(self) -> Result<Obj<T>, E> {
                Ok(Obj(None))
            }
        }
        d.deserialize_any(V(PhantomData))
    }
}

/// One stdout line, with only the fields the mapper reads.
#[derive(Debug, Default)]
pub(super) struct Event<'a> {
    pub(super) kind: Lv<'a>,
    pub(super) id: Lv<'a>,
    pub(super) message: MsgField<'a>,
    pub(super) ame: Obj<Ame<'a>>,
    pub(super) tool_call_id: Lv<'a>,
    pub(super) tool_name: Lv<'a>,
    pub(super) args: Option<RawJson<'a>>,
    pub(super) partial_result: Option<RawJson<'a>>,
    pub(super) result: Option<RawJson<'a>>,
    pub(super) is_error: Lv<'a>,
    pub(super) will_retry: Lv<'a>,
    pub(super) attempt: Lv<'a>,
    pub(super) max_attempts: Lv<'a>,
    pub(super) delay_ms: Lv<'a>,
    pub(super) error_message: Lv<'a>,
    pub(super) parent_tool_call_id: Lv<'a>,
    pub(super) aborted: Lv<'a>,
}

/// `assistantMessageEvent`.
#[derive(Debug, Default)]
pub(super) struct Ame<'a> {
    pub(super) kind: Lv<'a>,
    pub(super) content_index: Lv<'a>,
    pub(super) delta: Lv<'a>,
    pub(super) tool_call: Option<RawJson<'a>>,
    pub(super) partial: Option<MsgField<'a>>,
}

/// A `message` (or `partial`) field.
#[derive(Debug, Default)]
pub(super) enum MsgField<'a> {
    #[default]
    Absent,
    /// Parsed where it stood (`None`: it was not an object). Boxed: events are moved
    /// around by value and most have no message.
    Body(Option<Box<MessageBody<'a>>>),
    /// Kept as text because the event's type was not known yet when it was read.
    Raw(RawJson<'a>),
}

impl Ame<'_> {
    /// The `partial` snapshot is needed only when this event carries no delta.
    pub(super) fn may_need_snapshot(&self) -> bool {
        !self.delta.is_present()
            && matches!(
                self.kind.as_str(),
                None | Some("text_delta" | "thinking_delta")
            )
    }
}

macro_rules! field_enum {
    ($name:ident { $($key:literal => $var:ident),* $(,)? }) => {
        #[derive(Debug, Clone, Copy)]
        enum $name { $($var,)* Other }
        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> Visitor<'de> for V {
                    type Value = $name;
                    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                        f.write_str("a field name")
                    }
                    fn visit_bytes<E>(self, v: &[u8]) -> Result<$name, E> {
                        Ok(match v { $($key => $name::$var,)* _ => $name::Other })
                    }
                    fn visit_str<E: de::Error>(self, v: &str) -> Result<$name, E> {
                        self.visit_bytes(v.as_bytes())
                    }
                }
                // Keys as strings, not raw bytes: serde_json's raw-bytes path skips the
                // checks for control characters and bad escapes, so a line serde_json
                // rejects would be taken as valid (tests: benches/tests/mapper_validates.rs).
                d.deserialize_str(V)
            }
        }
    };
}

field_enum!(EventField {
    b"type" => Type,
    b"id" => Id,
    b"message" => Message,
    b"assistantMessageEvent" => Ame,
    b"toolCallId" => ToolCallId,
    b"toolName" => ToolName,
    b"args" => Args,
    b"partialResult" => PartialResult,
    b"result" => Result,
    b"isError" => IsError,
    b"willRetry" => WillRetry,
    b"attempt" => Attempt,
    b"maxAttempts" => MaxAttempts,
    b"delayMs" => DelayMs,
    b"errorMessage" => ErrorMessage,
    b"parentToolCallId" => ParentToolCallId,
    b"aborted" => Aborted,
});

field_enum!(AmeField {
    b"type" => Type,
    b"contentIndex" => ContentIndex,
    b"delta" => Delta,
    b"toolCall" => ToolCall,
    b"partial" => Partial,
});

/// Parse one line into `ev`, in place (an `Event` is big: moving one per line costs).
pub(super) fn parse_event<'de>(raw: &'de [u8], ev: &mut Event<'de>) -> serde_json::Result<()> {
    let mut de = serde_json::Deserializer::from_slice(raw);
    de::DeserializeSeed::deserialize(EventSeed(ev), &mut de)?;
    de.end()
}

struct EventSeed<'a, 'de>(&'a mut Event<'de>);

impl<'de> de::DeserializeSeed<'de> for EventSeed<'_, 'de> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for EventSeed<'_, 'de> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a pi event object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let ev = self.0;
        while let Some(key) = map.next_key::<EventField>()? {
            match key {
                EventField::Type => ev.kind = map.next_value()?,
                EventField::Id => ev.id = map.next_value()?,
                EventField::Message => {
                    // Parsed in place for message_start/message_end; the
                    // whole-message snapshot of message_update only when the update
                    // has no delta (snapshot-only producers); skipped otherwise
                    // (turn_end, ...). Kept as text if the type is not known yet.
                    let parse = match ev.kind.as_str() {
                        Some("message_start" | "message_end") => true,
                        Some("message_update") => ev
                            .ame
                            .0
                            .as_ref()
                            .map_or(true, |a| a.may_need_snapshot() && a.partial.is_none()),
                        Some(_) => false,
                        None => {
                            ev.message = MsgField::Raw(map.next_value()?);
                            continue;
                        }
                    };
                    if parse {
                        ev.message = MsgField::Body(map.next_value::<Obj<_>>()?.0.map(Box::new));
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                EventField::Ame => ev.ame = map.next_value()?,
                EventField::ToolCallId => ev.tool_call_id = map.next_value()?,
                EventField::ToolName => ev.tool_name = map.next_value()?,
                EventField::Args => ev.args = Some(map.next_value()?),
                EventField::PartialResult => ev.partial_result = Some(map.next_value()?),
                EventField::Result => ev.result = Some(map.next_value()?),
                EventField::IsError => ev.is_error = map.next_value()?,
                EventField::WillRetry => ev.will_retry = map.next_value()?,
                EventField::Attempt => ev.attempt = map.next_value()?,
                EventField::MaxAttempts => ev.max_attempts = map.next_value()?,
                EventField::DelayMs => ev.delay_ms = map.next_value()?,
                EventField::ErrorMessage => ev.error_message = map.next_value()?,
                EventField::ParentToolCallId => ev.parent_tool_call_id = map.next_value()?,
                EventField::Aborted => ev.aborted = map.next_value()?,
                EventField::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

impl<'de> Deserialize<'de> for Ame<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Ame<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an assistantMessageEvent object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Ame<'de>, A::Error> {
                let mut a = Ame::default();
                while let Some(key) = map.next_key::<AmeField>()? {
                    match key {
                        AmeField::Type => a.kind = map.next_value()?,
                        AmeField::ContentIndex => a.content_index = map.next_value()?,
                        AmeField::Delta => a.delta = map.next_value()?,
                        AmeField::ToolCall => a.tool_call = Some(map.next_value()?),
                        AmeField::Partial => {
                            // pi 0.73.1 writes the growing message here on every token:
                            // skipped when a delta (or a type that never has one) was seen.
                            if a.may_need_snapshot() {
                                a.partial = Some(MsgField::Body(
                                    map.next_value::<Obj<_>>()?.0.map(Box::new),
                                ));
                            } else {
                                map.next_value::<IgnoredAny>()?;
                            }
                        }
                        AmeField::Other => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(a)
            }
        }
        d.deserialize_map(V)
    }
}

/// An agent message (`message_start`/`message_end`, or a snapshot).
#[derive(Debug, Default, Deserialize)]
pub(super) struct MessageBody<'a> {
    #[serde(borrow, default)]
    pub(super) role: Lv<'a>,
    #[serde(borrow, default)]
    pub(super) content: Option<Content<'a>>,
    #[serde(rename = "stopReason", borrow, default)]
    pub(super) stop_reason: Lv<'a>,
    #[serde(rename = "errorMessage", borrow, default)]
    pub(super) error_message: Lv<'a>,
    #[serde(borrow, default)]
    pub(super) usage: Obj<PiUsage<'a>>,
    #[serde(borrow, default)]
    pub(super) timestamp: Option<RawJson<'a>>,
    /// toolResult messages: the tool call they answer.
    #[serde(rename = "toolCallId", borrow, default)]
    pub(super) tool_call_id: Lv<'a>,
    /// toolResult messages (pi 0.99+): pi's bounded record of the nested calls the tool made.
    #[serde(rename = "nestedCalls", borrow, default)]
    pub(super) nested_calls: Option<RawJson<'a>>,
}

/// `content`: an array of blocks, or (user/system messages) a string.
#[derive(Debug)]
pub(super) enum Content<'a> {
    Blocks(Vec<Block<'a>>),
    Text(Cow<'a, str>),
    Other,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct Block<'a> {
    #[serde(rename = "type", borrow, default)]
    pub(super) kind: Lv<'a>,
    #[serde(borrow, default)]
    pub(super) text: Lv<'a>,
    #[serde(borrow, default)]
    pub(super) thinking: Lv<'a>,
    #[serde(borrow, default)]
    pub(super) id: Lv<'a>,
    #[serde(borrow, default)]
    pub(super) name: Lv<'a>,
    #[serde(borrow, default)]
    pub(super) arguments: Option<RawJson<'a>>,
}

pub(super) type ToolCallBlock<'a> = Block<'a>;

impl<'a> Content<'a> {
    /// The answer text: the text blocks, concatenated in order.
    pub(super) fn text(&self) -> Cow<'_, str> {
        match self {
            Content::Text(t) => Cow::Borrowed(t),
            Content::Other => Cow::Borrowed(""),
            Content::Blocks(blocks) => {
                let mut texts = blocks
                    .iter()
                    .filter(|b| b.kind.as_str() == Some("text"))
                    .filter_map(|b| b.text.as_str());
                match (texts.next(), texts.next()) {
                    (None, _) => Cow::Borrowed(""),
                    (Some(one), None) => Cow::Borrowed(one),
                    (Some(a), Some(b)) => {
                        let mut s = format!("{a}{b}");
                        texts.for_each(|t| s.push_str(t));
                        Cow::Owned(s)
                    }
                }
            }
        }
    }

    pub(super) fn thoughts(&self) -> Vec<(Option<u64>, String)> {
        match self {
            Content::Blocks(blocks) => blocks
                .iter()
                .enumerate()
                .filter(|(_, b)| b.kind.as_str() == Some("thinking"))
                .filter_map(|(i, b)| b.thinking.as_str().map(|t| (Some(i as u64), t.to_string())))
                .collect(),
            _ => Vec::new(),
        }
    }

    pub(super) fn tool_calls(&self) -> impl Iterator<Item = &Block<'a>> {
        let blocks: &[Block<'a>] = match self {
            Content::Blocks(b) => b,
            _ => &[],
        };
        blocks
            .iter()
            .filter(|b| b.kind.as_str() == Some("toolCall"))
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Content<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Content<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("message content")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Content<'a>, A::Error> {
                let mut blocks = Vec::new();
                while let Some(Obj(b)) = a.next_element::<Obj<Block<'a>>>()? {
                    blocks.extend(b);
                }
                Ok(Content::Blocks(blocks))
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Content<'a>, E> {
                Ok(Content::Text(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Content<'a>, E> {
                Ok(Content::Text(Cow::Owned(v.to_string())))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Content<'a>, A::Error> {
                while a.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Content::Other)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Content<'a>, E> {
                Ok(Content::Other)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Content<'a>, E> {
                Ok(Content::Other)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Content<'a>, E> {
                Ok(Content::Other)
            }
            fn visit_bool<E>(self, _: bool) -> Result<Content<'a>, E> {
                Ok(Content::Other)
            }
            fn visit_unit<E>(self) -> Result<Content<'a>, E> {
                Ok(Content::Other)
            }
        }
        d.deserialize_any(V(PhantomData))
    }
}

/// pi's `usage` object.
#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct PiUsage<'a> {
    #[serde(borrow, default)]
    pub(super) input: Lv<'a>,
    #[serde(borrow, default)]
    pub(super) output: Lv<'a>,
    #[serde(rename = "cacheRead", borrow, default)]
    pub(super) cache_read: Lv<'a>,
    #[serde(rename = "cacheWrite", borrow, default)]
    pub(super) cache_write: Lv<'a>,
    #[serde(rename = "totalTokens", borrow, default)]
    pub(super) total_tokens: Lv<'a>,
    #[serde(borrow, default)]
    pub(super) cost: Obj<PiCost<'a>>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct PiCost<'a> {
    #[serde(borrow, default)]
    pub(super) total: Lv<'a>,
}

impl PiUsage<'_> {
    /// The same, owning its strings (kept between lines).
    pub(super) fn to_static(&self) -> PiUsage<'static> {
        PiUsage {
            input: self.input.to_static(),
            output: self.output.to_static(),
            cache_read: self.cache_read.to_static(),
            cache_write: self.cache_write.to_static(),
            total_tokens: self.total_tokens.to_static(),
            cost: Obj(self.cost.0.as_ref().map(|c| PiCost {
                total: c.total.to_static(),
            })),
        }
    }
}

impl PiUsage<'_> {
    pub(super) fn to_usage(&self) -> Usage {
        let n = |v: &Lv| v.as_u64().unwrap_or(0);
        Usage {
            input_tokens: n(&self.input),
            output_tokens: n(&self.output),
            cache_read_tokens: n(&self.cache_read),
            cache_write_tokens: n(&self.cache_write),
            total_tokens: n(&self.total_tokens),
            cost_usd: self
                .cost
                .0
                .as_ref()
                .and_then(|c| c.total.as_f64())
                .unwrap_or(0.0),
        }
    }
}
