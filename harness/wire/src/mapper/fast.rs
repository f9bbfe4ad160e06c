//! The mapper's one-pass path for the lines that are not `message_update`:
//! `message_start`/`message_end`, tool events, `turn_end`/`agent_end` and the rest.
//!
//! It uses the validating scanner of `mapper/hot.rs` (RFC 8259 as `serde_json` checks it)
//! and fills the same [`Event`] the serde path fills, so both go through the same
//! handlers. It answers only when the serde path would accept the line and read the same
//! thing from it; on anything unusual (an error, invalid UTF-8, an escaped key, a field
//! of interest repeated, a `message` before the `type`, a `message` that is not an object,
//! an `assistantMessageEvent` outside `message_update`, a surrogate escape, deep nesting)
//! it answers `None` and the serde path gives the verdict. Values the serde path reads
//! leniently ([`Lv`]) are taken directly when they are plain (a string without escapes, an
//! unsigned integer without fraction or exponent, a literal); other numbers are handed to
//! `serde_json` itself, so they read exactly as they do on the serde path.
//!
//! The memo: pi repeats whole message bodies byte for byte: `turn_end` and `agent_end`
//! repeat the bodies of earlier `message_end` lines, and the `message_end` of a system,
//! user or custom message repeats its `message_start`. Message bodies validated here are
//! kept (a few, small ones); a value that starts with exactly those bytes is that same
//! object (an object ends at its closing brace), valid again, so it is compared with
//! `memcmp` instead of scanned. A repeated body whose role makes it nothing to the mapper
//! (not `assistant`, not `toolResult`) is not parsed again either: the handlers read only
//! its role.

use std::borrow::Cow;

use super::hot::{unescape, Fallback, Scanner, R};
use super::schema::{
    Block, Content, Event, Lv, MessageBody, MsgField, Obj, PiCost, PiUsage, RawJson,
};

/// Longest message body kept in the memo.
const BODY_MAX: usize = 64 << 10;
/// Bodies kept; when full (or past [`ARENA_MAX`] bytes) the memo starts over.
const BODIES: usize = 16;
/// Bytes kept in all.
const ARENA_MAX: usize = 1 << 20;

/// Message bodies already validated (see the module docs). Kept by the mapper between lines.
#[derive(Debug, Default)]
pub(super) struct Memo {
    /// The bodies, end to end (one allocation for all).
    arena: Vec<u8>,
    bodies: Vec<Body>,
    /// Set by the mapper before each line: a `toolResult` message is something to it (a
    /// tool's end waits for it). When false, a repeated `toolResult` body is inert too.
    pub(super) tool_results_matter: bool,
    /// The last two `usage` objects read in message bodies (their bytes) and what they
    /// read as: pi repeats them (every `message_start` of an assistant message carries the
    /// same zeros, between `message_end`s that differ), and an object that starts with
    /// those bytes is that object. The slot to replace next is the one not used last.
    usage: [(Vec<u8>, PiUsage<'static>); 2],
    usage_next: usize,
}

#[derive(Debug, Clone, Copy)]
struct Body {
    start: usize,
    len: usize,
    /// Where the role string (plain, without escapes) stands in the body, when the role
    /// may make the message nothing to the mapper.
    inert_role: Option<(usize, usize)>,
    /// The role is `toolResult`: inert only while no tool's end waits for its message.
    tool_result: bool,
}

impl Memo {
    /// A remembered body that `rest` starts with (the latest first).
    fn find(&self, rest: &[u8]) -> Option<Body> {
        self.bodies
            .iter()
            .rev()
            .find(|b| rest.starts_with(&self.arena[b.start..b.start + b.len]))
            .copied()
    }

    fn remember(&mut self, bytes: &[u8], inert_role: Option<(usize, usize)>, tool_result: bool) {
        if bytes.len() > BODY_MAX {
            return;
        }
        if self.bodies.len() >= BODIES || self.arena.len() + bytes.len() > ARENA_MAX {
            self.bodies.clear();
            self.arena.clear();
        }
        self.bodies.push(Body {
            start: self.arena.len(),
            len: bytes.len(),
            inert_role,
            tool_result,
        });
        self.arena.extend_from_slice(bytes);
    }
}

/// Read one line (without its `\n`) that is not a `message_update` into `ev` (a default
/// one), with a string `type`; `false` when the serde path is to decide (`ev` may then hold
/// part of the line).
pub(super) fn scan<'a>(raw: &'a [u8], memo: &mut Memo, ev: &mut Event<'a>) -> bool {
    let mut s = Scanner { b: raw, i: 0 };
    line(&mut s, ev, memo).is_ok()
}

/// A `toolCall` value (its raw text, already validated in its line) read as the serde path
/// reads it on its own (`Obj<ToolCallBlock>`), when it is an object read without fallback.
pub(super) fn tool_call(text: &str) -> Option<Block<'_>> {
    let mut s = Scanner {
        b: text.as_bytes(),
        i: 0,
    };
    s.ws();
    if s.peek() != Some(b'{') {
        return None;
    }
    // Read at depth 3 as in a content array: deeper than it stands here, so only more
    // cautious about nesting.
    let mut b = Block::default();
    block(&mut s, &mut b).ok()?;
    s.ws();
    (s.i == s.b.len()).then_some(b)
}

fn line<'a>(s: &mut Scanner<'a>, ev: &mut Event<'a>, memo: &mut Memo) -> R<()> {
    s.ws();
    if s.peek() != Some(b'{') {
        return Err(Fallback);
    }
    let mut kind: Option<&'a str> = None;
    // An empty object has no `type`: it falls back below.
    members(s, |s, key| {
        Ok(match key {
            b"type" => {
                if s.peek() != Some(b'"') {
                    return Err(Fallback);
                }
                s.i += 1;
                let v = s.string()?;
                if v.escaped {
                    return Err(Fallback);
                }
                let t = s.str_at(v)?;
                if t == "message_update" {
                    return Err(Fallback); // the hot path's lines; unusual ones go to serde
                }
                kind = Some(t);
                ev.kind = Lv::Str(Cow::Borrowed(t));
                1
            }
            b"message" => {
                match kind {
                    Some(k @ ("message_start" | "message_end")) => {
                        ev.message = message(s, memo, k == "message_end")?;
                    }
                    Some(_) => skip(s, memo)?,
                    // Kept raw by the serde path until the type is known: left to it.
                    None => return Err(Fallback),
                }
                1 << 1
            }
            // Parsed by the serde path whatever the event: left to it.
            b"assistantMessageEvent" => return Err(Fallback),
            b"id" => {
                ev.id = lv(s, 1)?;
                1 << 2
            }
            b"toolCallId" => {
                ev.tool_call_id = lv(s, 1)?;
                1 << 3
            }
            b"toolName" => {
                ev.tool_name = lv(s, 1)?;
                1 << 4
            }
            b"args" => {
                ev.args = Some(raw(s, 1)?);
                1 << 5
            }
            b"partialResult" => {
                ev.partial_result = Some(raw(s, 1)?);
                1 << 6
            }
            b"result" => {
                ev.result = Some(raw(s, 1)?);
                1 << 7
            }
            b"isError" => {
                ev.is_error = lv(s, 1)?;
                1 << 8
            }
            b"willRetry" => {
                ev.will_retry = lv(s, 1)?;
                1 << 9
            }
            b"attempt" => {
                ev.attempt = lv(s, 1)?;
                1 << 10
            }
            b"maxAttempts" => {
                ev.max_attempts = lv(s, 1)?;
                1 << 11
            }
            b"delayMs" => {
                ev.delay_ms = lv(s, 1)?;
                1 << 12
            }
            b"errorMessage" => {
                ev.error_message = lv(s, 1)?;
                1 << 13
            }
            b"parentToolCallId" => {
                ev.parent_tool_call_id = lv(s, 1)?;
                1 << 14
            }
            b"aborted" => {
                ev.aborted = lv(s, 1)?;
                1 << 15
            }
            _ => {
                skip(s, memo)?;
                0
            }
        })
    })?;
    s.ws();
    if s.i != s.b.len() || kind.is_none() {
        return Err(Fallback);
    }
    Ok(())
}

/// An object key (plain: an escaped one falls back) and its colon; leaves `i` at the value.
#[inline(always)]
fn key<'a>(s: &mut Scanner<'a>) -> R<&'a [u8]> {
    s.eat(b'"')?;
    let k = s.string()?;
    if k.escaped {
        return Err(Fallback);
    }
    s.eat(b':')?;
    s.ws();
    Ok(&s.b[k.start..k.end])
}

/// After a member or element: `true` on a comma, `false` on the closing `close`.
#[inline(always)]
fn next(s: &mut Scanner<'_>, close: u8) -> R<bool> {
    s.ws();
    match s.peek() {
        Some(b',') => {
            s.i += 1;
            Ok(true)
        }
        Some(c) if c == close => {
            s.i += 1;
            Ok(false)
        }
        _ => Err(Fallback),
    }
}

/// The text of a value the scanner just read, `s.b[start..s.i]`.
#[inline(always)]
fn text<'a>(s: &Scanner<'a>, start: usize) -> R<&'a str> {
    let bytes = &s.b[start..s.i];
    debug_assert!(std::str::from_utf8(bytes).is_ok());
    // SAFETY: the scanner accepted every byte of the value: outside strings only ASCII
    // (structure, digits, literals, whitespace), inside strings ASCII or a body checked
    // with `std::str::from_utf8` (see `Scanner::string`); the value starts and ends on
    // ASCII bytes.
    Ok(unsafe { std::str::from_utf8_unchecked(bytes) })
}

/// A top-level value nothing reads: validated, through the memo when it is a remembered
/// body or an array of them (`turn_end`'s `message` and `toolResults`, `agent_end`'s
/// `messages`). Remembered bodies were validated at depth 1; here they stand at depth 1
/// or 2, far below serde_json's limit of 128.
fn skip(s: &mut Scanner<'_>, memo: &Memo) -> R<()> {
    match s.peek() {
        Some(b'{') => {
            if let Some(b) = memo.find(&s.b[s.i..]) {
                s.i += b.len;
                return Ok(());
            }
            s.value(1)
        }
        Some(b'[') => {
            s.i += 1;
            s.ws();
            if s.peek() == Some(b']') {
                s.i += 1;
                return Ok(());
            }
            loop {
                s.ws();
                match (s.peek() == Some(b'{'))
                    .then(|| memo.find(&s.b[s.i..]))
                    .flatten()
                {
                    Some(b) => s.i += b.len,
                    None => s.value(2)?,
                }
                if !next(s, b']')? {
                    return Ok(());
                }
            }
        }
        _ => s.value(1),
    }
}

/// A field the serde path reads as [`Lv`], at nesting `depth`.
#[inline]
fn lv<'a>(s: &mut Scanner<'a>, depth: u32) -> R<Lv<'a>> {
    match s.peek() {
        Some(b'"') => {
            s.i += 1;
            let v = s.string()?;
            let t = s.str_at(v)?;
            Ok(Lv::Str(if v.escaped {
                Cow::Owned(unescape(t).ok_or(Fallback)?)
            } else {
                Cow::Borrowed(t)
            }))
        }
        Some(b't') => s.literal(b"true").map(|_| Lv::Bool(true)),
        Some(b'f') => s.literal(b"false").map(|_| Lv::Bool(false)),
        Some(b'n') => s.literal(b"null").map(|_| Lv::Other),
        Some(b'0'..=b'9') => {
            let start = s.i;
            match s.plain_uint() {
                Ok(v) => Ok(Lv::U64(v)),
                Err(Fallback) => {
                    s.i = start;
                    number_lv(s)
                }
            }
        }
        Some(b'-') => number_lv(s),
        _ => s.container(depth).map(|_| Lv::Other),
    }
}

/// A number that is not a plain unsigned integer: read by serde_json itself (floats, negative
/// and big numbers, `-0`), so it reads as on the serde path; out of range falls back.
fn number_lv<'a>(s: &mut Scanner<'a>) -> R<Lv<'a>> {
    let start = s.i;
    s.number()?;
    serde_json::from_slice::<Lv<'a>>(&s.b[start..s.i]).map_err(|_| Fallback)
}

/// A value the serde path keeps as raw text (`&RawValue`): its bytes.
fn raw<'a>(s: &mut Scanner<'a>, depth: u32) -> R<RawJson<'a>> {
    let start = s.i;
    s.value(depth)?;
    text(s, start).map(RawJson)
}

/// `Option<&RawValue>` on the serde path: `null` is `None`.
fn opt_raw<'a>(s: &mut Scanner<'a>, depth: u32) -> R<Option<RawJson<'a>>> {
    if s.peek() == Some(b'n') {
        return s.literal(b"null").map(|_| None);
    }
    raw(s, depth).map(Some)
}

/// The `message` of `message_start`/`message_end`, at depth 1.
fn message<'a>(s: &mut Scanner<'a>, memo: &mut Memo, end: bool) -> R<MsgField<'a>> {
    if s.peek() != Some(b'{') {
        return Err(Fallback); // not an object: the serde path reports it
    }
    let start = s.i;
    let seen = memo.find(&s.b[start..]);
    if let Some(Body {
        len,
        inert_role: Some((rs, re)),
        tool_result,
        ..
    }) = seen
    {
        if !tool_result || !memo.tool_results_matter {
            let role = std::str::from_utf8(&s.b[start + rs..start + re]).map_err(|_| Fallback)?;
            s.i += len;
            let body = MessageBody {
                role: Lv::Str(Cow::Borrowed(role)),
                ..MessageBody::default()
            };
            return Ok(MsgField::Body(Some(Box::new(body))));
        }
    }
    // Filled in place: a `MessageBody` is big.
    let mut body = Box::<MessageBody>::default();
    let role_at = message_body(s, &mut body, memo)?;
    let at = role_at.map(|(a, b)| (a - start, b - start));
    let (inert, tool_result) = match body.role.as_str() {
        Some("assistant") | None => (None, false),
        Some("toolResult") => (at, true),
        Some(_) => (at, false),
    };
    // message_end bodies come back in turn_end and agent_end; inert ones (and tool
    // results) in their message_end.
    if seen.is_none() && (end || inert.is_some()) {
        memo.remember(&s.b[start..s.i], inert, tool_result);
    }
    Ok(MsgField::Body(Some(body)))
}

/// The members of an object, from its `{` to its `}`: `each` reads the value of every key
/// and answers the key's bit (0 for a key nothing reads, whose value it skipped). A bit seen
/// twice falls back, as a derived struct refuses a repeated field.
#[inline(always)]
fn members<'a>(
    s: &mut Scanner<'a>,
    mut each: impl FnMut(&mut Scanner<'a>, &'a [u8]) -> R<u32>,
) -> R<()> {
    s.i += 1;
    s.ws();
    if s.peek() == Some(b'}') {
        s.i += 1;
        return Ok(());
    }
    let mut seen = 0u32;
    loop {
        let k = key(s)?;
        let bit = each(s, k)?;
        field(&mut seen, bit)?;
        if !next(s, b'}')? {
            return Ok(());
        }
    }
}

/// A field of a struct read: its bit must not be seen yet (a derived struct refuses a
/// repeated field; so does the serde path's reading of the event).
#[inline(always)]
fn field(seen: &mut u32, bit: u32) -> R<()> {
    if *seen & bit != 0 {
        return Err(Fallback);
    }
    *seen |= bit;
    Ok(())
}

/// An agent message object (at `{`, depth 1), as the derived `MessageBody` reads it, into
/// `m` (a default one); returns where its role string stands when it is plain.
fn message_body<'a>(
    s: &mut Scanner<'a>,
    m: &mut MessageBody<'a>,
    memo: &mut Memo,
) -> R<Option<(usize, usize)>> {
    let mut role_at = None;
    members(s, |s, key| {
        Ok(match key {
            b"role" => {
                let at = s.i;
                m.role = lv(s, 2)?;
                if let Lv::Str(Cow::Borrowed(_)) = m.role {
                    role_at = Some((at + 1, s.i - 1));
                }
                1
            }
            b"content" => {
                // Only an assistant message's content is read by the handlers; another
                // role's (named before it, as pi writes it) is checked as the serde path
                // checks it, not kept.
                let keep = !matches!(&m.role, Lv::Str(r) if r != "assistant");
                content(s, &mut m.content, keep)?;
                1 << 1
            }
            b"stopReason" => {
                m.stop_reason = lv(s, 2)?;
                1 << 2
            }
            b"errorMessage" => {
                m.error_message = lv(s, 2)?;
                1 << 3
            }
            b"usage" => {
                usage(s, &mut m.usage, memo)?;
                1 << 4
            }
            b"timestamp" => {
                m.timestamp = opt_raw(s, 2)?;
                1 << 5
            }
            b"toolCallId" => {
                m.tool_call_id = lv(s, 2)?;
                1 << 6
            }
            b"nestedCalls" => {
                m.nested_calls = opt_raw(s, 2)?;
                1 << 7
            }
            _ => {
                s.value(2)?;
                0
            }
        })
    })?;
    Ok(role_at)
}

/// `content` (depth 2): `null` is `None`, a string is the text, an array holds blocks
/// (other elements ignored), anything else is `Other`. Without `keep`, blocks are read
/// (and checked) one at a time and not kept: the array reads as no blocks.
fn content<'a>(s: &mut Scanner<'a>, c: &mut Option<Content<'a>>, keep: bool) -> R<()> {
    *c = match s.peek() {
        Some(b'n') => return s.literal(b"null"),
        Some(b'"') => match lv(s, 2)? {
            Lv::Str(t) => Some(Content::Text(t)),
            _ => return Err(Fallback),
        },
        Some(b'[') => {
            s.i += 1;
            let mut blocks = Vec::new();
            s.ws();
            if s.peek() == Some(b']') {
                s.i += 1;
            } else {
                loop {
                    s.ws();
                    if s.peek() == Some(b'{') {
                        if keep {
                            blocks.push(Block::default());
                            let last = blocks.last_mut().ok_or(Fallback)?;
                            block(s, last)?;
                        } else {
                            block(s, &mut Block::default())?;
                        }
                    } else {
                        s.value(3)?;
                    }
                    if !next(s, b']')? {
                        break;
                    }
                }
            }
            Some(Content::Blocks(blocks))
        }
        _ => {
            s.value(2)?;
            Some(Content::Other)
        }
    };
    Ok(())
}

/// One content block (at `{`, depth 3), into `b` (a default one).
fn block<'a>(s: &mut Scanner<'a>, b: &mut Block<'a>) -> R<()> {
    members(s, |s, key| {
        Ok(match key {
            b"type" => {
                b.kind = lv(s, 4)?;
                1
            }
            b"text" => {
                b.text = lv(s, 4)?;
                1 << 1
            }
            b"thinking" => {
                b.thinking = lv(s, 4)?;
                1 << 2
            }
            b"id" => {
                b.id = lv(s, 4)?;
                1 << 3
            }
            b"name" => {
                b.name = lv(s, 4)?;
                1 << 4
            }
            b"arguments" => {
                b.arguments = opt_raw(s, 4)?;
                1 << 5
            }
            _ => {
                s.value(4)?;
                0
            }
        })
    })
}

/// `usage` (depth 2): an object read as `PiUsage` into `u` (left `None` for anything else).
fn usage<'a>(s: &mut Scanner<'a>, u: &mut Obj<PiUsage<'a>>, memo: &mut Memo) -> R<()> {
    if s.peek() != Some(b'{') {
        return s.value(2);
    }
    let start = s.i;
    let rest = &s.b[start..];
    if let Some(i) =
        (0..2).find(|&i| !memo.usage[i].0.is_empty() && rest.starts_with(&memo.usage[i].0))
    {
        s.i += memo.usage[i].0.len();
        u.0 = Some(memo.usage[i].1.clone());
        memo.usage_next = 1 - i;
        return Ok(());
    }
    let read = u.0.insert(PiUsage::default());
    usage_object(s, read)?;
    if s.i - start <= USAGE_MAX {
        let slot = &mut memo.usage[memo.usage_next];
        slot.0.clear();
        slot.0.extend_from_slice(&s.b[start..s.i]);
        slot.1 = read.to_static();
        memo.usage_next = 1 - memo.usage_next;
    }
    Ok(())
}

/// Longest `usage` object kept in the memo.
const USAGE_MAX: usize = 1024;

/// The members of a `usage` object (at its `{`).
fn usage_object<'a>(s: &mut Scanner<'a>, u: &mut PiUsage<'a>) -> R<()> {
    members(s, |s, key| {
        Ok(match key {
            b"input" => {
                u.input = lv(s, 3)?;
                1
            }
            b"output" => {
                u.output = lv(s, 3)?;
                1 << 1
            }
            b"cacheRead" => {
                u.cache_read = lv(s, 3)?;
                1 << 2
            }
            b"cacheWrite" => {
                u.cache_write = lv(s, 3)?;
                1 << 3
            }
            b"totalTokens" => {
                u.total_tokens = lv(s, 3)?;
                1 << 4
            }
            b"cost" => {
                cost(s, &mut u.cost)?;
                1 << 5
            }
            _ => {
                s.value(3)?;
                0
            }
        })
    })
}

/// `usage.cost` (depth 3): an object read as `PiCost` into `c` (left `None` for anything else).
fn cost<'a>(s: &mut Scanner<'a>, c: &mut Obj<PiCost<'a>>) -> R<()> {
    if s.peek() != Some(b'{') {
        return s.value(3);
    }
    let c = c.0.insert(PiCost::default());
    members(s, |s, key| {
        Ok(match key {
            b"total" => {
                c.total = lv(s, 4)?;
                1
            }
            _ => {
                s.value(4)?;
                0
            }
        })
    })
}
