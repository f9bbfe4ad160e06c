//! The mapper: pi's private JSONL (`pi --mode json` stdout) to the normalized stream.
//!
//! A pure, synchronous state machine: bytes in (any chunking), [`Message`]s out. No
//! I/O, no clock. It owns the rules of `docs/normalized-stream.md`: dialect handling
//! (0.73.1 delta + lying snapshots, 0.87.1 and 1.x delta-only, snapshot-only producers),
//! snapshot-to-delta conversion, `message_end` reconciliation, thought buffering, tool
//! deduplication (nested calls of pi 1.x reported through their parent), terminal truth
//! and the collection of bad lines.
//!
//! Each line is deserialized into borrowed structs; the big snapshot copies pi 0.73.1
//! writes on every token are skipped with [`IgnoredAny`] unless the event has no delta,
//! so the work per line is one pass over its bytes and the allocation per line does not
//! grow with the snapshot. `message_update` lines, the hot ones, first go through a
//! hand-written validating scanner (`mapper/hot.rs`), and every other line through the same
//! scanner filling the same [`Event`] (`mapper/fast.rs`, with a memo of the message bodies
//! pi repeats in `message_end`, `turn_end` and `agent_end`); both answer only when this serde
//! path would accept the line and read the same from it, and leave it the line otherwise.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;
use serde_json::Value;

use crate::framing::{Line, LineSplitter};

mod fast;
mod hot;
use crate::json::Json;
use crate::message::{ExitInfo, Failure, FailureReason, InvalidLine, Message, RetrySource, Usage};

/// Default line cap: 16 MiB lets every real pi 0.73.1 line through (its snapshots grow quadratically).
pub const DEFAULT_MAX_LINE_BYTES: usize = 16 << 20;
/// Default number of bad lines kept for diagnostics.
pub const DEFAULT_MAX_INVALID_LINES: usize = 32;
/// Default total size of the kept excerpts.
pub const DEFAULT_MAX_INVALID_BYTES: usize = 16 << 10;
/// Longest excerpt kept of one bad line.
pub const EXCERPT_BYTES: usize = 200;

/// How a [`Mapper`] behaves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapperOptions {
    /// Longest stdout line (bytes, without `\n`) that is parsed; longer ones are skipped and reported.
    pub max_line_bytes: usize,
    /// How many bad lines are kept for `terminal.failed` diagnostics.
    pub max_invalid_lines: usize,
    /// Total bytes of excerpts kept for those diagnostics.
    pub max_invalid_bytes: usize,
    /// The caller asked to continue an existing session: emit `session.resumed` instead of `session.started`.
    pub resumed_session: bool,
}

impl Default for MapperOptions {
    fn default() -> Self {
        MapperOptions {
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
            max_invalid_lines: DEFAULT_MAX_INVALID_LINES,
            max_invalid_bytes: DEFAULT_MAX_INVALID_BYTES,
            resumed_session: false,
        }
    }
}

/// Counters, for summaries and benchmarks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MapperStats {
    /// Lines framed (complete, final unterminated and oversized ones).
    pub lines: u64,
    /// Bytes pushed.
    pub bytes: u64,
    /// Lines that were not a usable event: not JSON, not an object, no `type`, over the cap,
    /// or a known event missing what it needs.
    pub invalid_lines: u64,
    /// Events of a type the mapper does not know (not counted in `invalid_lines`).
    pub unknown_events: u64,
    /// Assistant messages whose `message_end` text did not continue what had been streamed.
    pub text_divergences: u64,
}

/// How the run ended, as the caller (the provider) saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamEnd {
    pub exit: Option<ExitInfo>,
    pub stderr_tail: Option<String>,
    pub cause: EndCause,
}

impl StreamEnd {
    /// stdout closed and the process ended this way.
    pub fn eof(exit: Option<ExitInfo>) -> Self {
        StreamEnd {
            exit,
            stderr_tail: None,
            cause: EndCause::Eof,
        }
    }

    /// The end a replay of a recording reaches: after EOF, pi's exit code (`Some(code)`)
    /// or death by a signal (`signal`); neither is a process that hung and that a caller
    /// ends by cancelling. `stderr` is what the process wrote there (none when empty).
    pub fn recorded(code: Option<i32>, signal: Option<&str>, stderr: &[u8]) -> Self {
        let stderr_tail =
            (!stderr.is_empty()).then(|| String::from_utf8_lossy(stderr).into_owned());
        let (exit, cause) = match (code, signal) {
            (None, None) => (None, EndCause::Cancelled),
            (code, signal) => (
                Some(ExitInfo {
                    code,
                    signal: signal.map(str::to_string),
                }),
                EndCause::Eof,
            ),
        };
        StreamEnd {
            exit,
            stderr_tail,
            cause,
        }
    }
}

/// Why the stream ended.
#[derive(Debug, Clone, PartialEq)]
pub enum EndCause {
    /// stdout closed, the process ended.
    Eof,
    /// The caller cancelled the run.
    Cancelled,
    /// Provider-side failure: spawn failed, timeout, output limit.
    Failed {
        reason: FailureReason,
        message: String,
    },
}

/// The state machine. See the module docs and `docs/normalized-stream.md`.
#[derive(Debug)]
pub struct Mapper {
    framer: LineSplitter,
    state: State,
}

impl Mapper {
    pub fn new(opts: MapperOptions) -> Self {
        Mapper {
            framer: LineSplitter::new(opts.max_line_bytes),
            state: State::new(opts),
        }
    }

    /// Feed raw stdout bytes (any chunking). Appends normalized messages to `out`. Never emits a terminal.
    /// Bytes pushed after [`Mapper::finish`] are ignored.
    pub fn push(&mut self, chunk: &[u8], out: &mut Vec<Message>) {
        if self.state.finished {
            return;
        }
        self.state.stats.bytes += chunk.len() as u64;
        let state = &mut self.state;
        self.framer.push(chunk, &mut |line| state.line(line, out));
    }

    /// End of the run: flushes a final unterminated line, drains buffered thoughts, and appends exactly one terminal.
    /// Calling it twice appends nothing the second time.
    pub fn finish(&mut self, end: StreamEnd, out: &mut Vec<Message>) {
        if self.state.finished {
            return;
        }
        let state = &mut self.state;
        self.framer.finish(&mut |line| state.line(line, out));
        self.state.finish(end, out);
    }

    /// True once an event was seen after which pi cannot continue (`agent_settled`, or an
    /// `agent_end` that no retry can follow). A later `agent_start`, `auto_retry_start` or
    /// `compaction_start` clears it.
    pub fn is_settled(&self) -> bool {
        self.state.settled
    }

    /// Lines seen, bytes seen, invalid lines seen (for summaries and benchmarks).
    pub fn stats(&self) -> MapperStats {
        self.state.stats.clone()
    }

    /// Tests only: switch the one-pass paths (`mapper/hot.rs`, `mapper/fast.rs`) off or on,
    /// so that every line takes the serde path. The output must not depend on it.
    #[doc(hidden)]
    pub fn set_fast_paths(&mut self, on: bool) {
        self.state.fast = on;
    }
}

/// Convenience for tests, tools and benches: the whole stdout at once.
pub fn map_all(stdout: &[u8], end: StreamEnd, opts: MapperOptions) -> Vec<Message> {
    let mut mapper = Mapper::new(opts);
    let mut out = Vec::new();
    mapper.push(stdout, &mut out);
    mapper.finish(end, &mut out);
    out
}

// ---------------------------------------------------------------------------
// State

#[derive(Debug)]
struct State {
    opts: MapperOptions,
    stats: MapperStats,
    finished: bool,
    session: Option<String>,
    /// The assistant message being streamed.
    open: Option<OpenMessage>,
    /// `timestamp` (raw JSON) of the last assistant message closed by `message_end`.
    last_closed_ts: Option<Stamp>,
    /// The run-level text snapshot-only producers are compared against: the whole text
    /// of the previous assistant message as the producer gave it.
    kept: String,
    /// Thoughts waiting for a non-`toolUse` end, in order.
    pending_thoughts: Vec<String>,
    tools: HashMap<String, ToolState>,
    /// Ends of tools that made nested calls, waiting for their toolResult message (which
    /// carries `nestedCalls`), in the order they ended.
    held: Vec<Held>,
    last_stop: Option<String>,
    last_error: Option<String>,
    usage: Usage,
    end_seen: bool,
    settled: bool,
    /// The last `agent_settled` said `aborted: true` (pi 1.1.0+), and no `agent_start` since.
    aborted: bool,
    /// A text or thinking delta was seen in this run: snapshots are ignored from then on.
    sends_deltas: bool,
    /// `auto_retry_start` seen and no `agent_start` since.
    retry_pending: bool,
    invalid: Vec<InvalidLine>,
    invalid_dropped: u64,
    invalid_bytes: usize,
    /// The fast scanner's memo: the last small top-level object or array it validated.
    hot_memo: Vec<u8>,
    /// The one-pass path for the other lines (`mapper/fast.rs`) is used.
    fast: bool,
    /// Its memo: message bodies already validated, which pi repeats.
    fast_memo: fast::Memo,
}

#[derive(Debug, Default)]
struct OpenMessage {
    timestamp: Option<Stamp>,
    /// Text emitted for this message so far.
    emitted: String,
    /// Snapshot-only producers: the replayed previous text this message starts with,
    /// once decided (`Some("")` when it does not replay).
    replayed: Option<String>,
    /// Thinking blocks: content index and text so far.
    thoughts: Vec<(Option<u64>, String)>,
}

#[derive(Debug, Default)]
struct ToolState {
    announced: bool,
    last_partial: Option<String>,
    done: bool,
    /// Events of nested calls (`parentToolCallId` = this id) were seen.
    nested: bool,
}

/// A tool's end held back until its toolResult message.
#[derive(Debug)]
struct Held {
    id: String,
    failed: bool,
    result: Json,
}

/// Event types that are understood and deliberately produce nothing.
const IGNORED_EVENTS: &[&str] = &[
    "turn_start",
    "turn_end",
    "auto_retry_end",
    "compaction_end",
    "queue_update",
    "entry_appended",
    "session_info_changed",
    "thinking_level_changed",
    "summarization_retry_scheduled",
    "summarization_retry_attempt_start",
    "summarization_retry_finished",
    "bash_execution_update",
];

impl State {
    fn new(opts: MapperOptions) -> Self {
        State {
            opts,
            stats: MapperStats::default(),
            finished: false,
            session: None,
            open: None,
            last_closed_ts: None,
            kept: String::new(),
            pending_thoughts: Vec::new(),
            tools: HashMap::new(),
            held: Vec::new(),
            last_stop: None,
            last_error: None,
            usage: Usage::default(),
            end_seen: false,
            settled: false,
            aborted: false,
            sends_deltas: false,
            retry_pending: false,
            invalid: Vec::new(),
            invalid_dropped: 0,
            invalid_bytes: 0,
            hot_memo: Vec::new(),
            fast: true,
            fast_memo: fast::Memo::default(),
        }
    }

    fn line(&mut self, line: Line<'_>, out: &mut Vec<Message>) {
        self.stats.lines += 1;
        match line {
            Line::Oversized {
                number,
                bytes,
                head,
            } => {
                self.stats.invalid_lines += 1;
                let problem = format!("over the line cap of {} bytes", self.opts.max_line_bytes);
                self.record(number, bytes, problem, head);
            }
            Line::Complete { number, bytes } => self.event(number, bytes, out),
        }
    }

    /// Keep a bad line for diagnostics, within the bounds.
    fn record(&mut self, line: u64, bytes: u64, problem: String, raw: &[u8]) {
        if self.invalid.len() >= self.opts.max_invalid_lines {
            self.invalid_dropped += 1;
            return;
        }
        let room = self
            .opts
            .max_invalid_bytes
            .saturating_sub(self.invalid_bytes)
            .min(EXCERPT_BYTES);
        let excerpt = excerpt(raw, room);
        self.invalid_bytes += excerpt.len();
        self.invalid.push(InvalidLine {
            line,
            bytes,
            problem,
            excerpt,
        });
    }

    fn bad(&mut self, line: u64, raw: &[u8], problem: String) {
        self.stats.invalid_lines += 1;
        self.record(line, raw.len() as u64, problem, raw);
    }

    fn event(&mut self, n: u64, raw: &[u8], out: &mut Vec<Message>) {
        // The hot lines (`message_update`) in one pass; anything unusual takes the serde path.
        let hot = if self.fast {
            hot::scan(raw, &mut self.hot_memo)
        } else {
            None
        };
        if let Some(hot) = hot {
            self.open.get_or_insert_with(OpenMessage::default);
            match hot {
                hot::Hot::Delta {
                    thinking,
                    delta,
                    content_index,
                } => self.on_delta(thinking, &delta, content_index, out),
                hot::Hot::ToolCallEnd(tc) => self.on_toolcall_end(n, raw, RawJson(tc), out),
                hot::Hot::Nothing => {}
            }
            return;
        }
        // An `Event` is big: filled in place, never moved.
        let lossy: String;
        let mut ev = Event::default();
        // The other lines, in one pass too when nothing is unusual about them.
        if self.fast {
            self.fast_memo.tool_results_matter = !self.held.is_empty();
            if fast::scan(raw, &mut self.fast_memo, &mut ev) {
                if let Lv::Str(k) = &ev.kind {
                    let kind = k.clone();
                    return self.dispatch(n, raw, &kind, &mut ev, out);
                }
            }
            ev = Event::default();
        }
        let first = raw.iter().find(|b| !b.is_ascii_whitespace());
        if first != Some(&b'{') {
            let problem = match first {
                None => "empty line".to_string(),
                Some(_) => match serde_json::from_slice::<IgnoredAny>(raw) {
                    Ok(_) => "not a JSON object".to_string(),
                    Err(e) => format!("not JSON: {e}"),
                },
            };
            return self.bad(n, raw, problem);
        }
        if let Err(e) = parse_event(raw, &mut ev) {
            if std::str::from_utf8(raw).is_ok() {
                return self.bad(n, raw, format!("not JSON: {e}"));
            }
            // JSON whose strings hold invalid UTF-8: decoded lossily (U+FFFD) the line
            // still says what happened, so it is used, and reported.
            lossy = String::from_utf8_lossy(raw).into_owned();
            ev = Event::default();
            if parse_event(lossy.as_bytes(), &mut ev).is_err() {
                return self.bad(n, raw, format!("not JSON: {e}"));
            }
            self.bad(
                n,
                raw,
                "invalid UTF-8, decoded lossily (U+FFFD); the event was used".into(),
            );
        }
        let kind = match &ev.kind {
            Lv::Str(k) => k.clone(),
            Lv::Absent => return self.bad(n, raw, "no \"type\"".into()),
            _ => return self.bad(n, raw, "\"type\" is not a string".into()),
        };
        self.dispatch(n, raw, &kind, &mut ev, out);
    }

    /// One event, read by either path.
    fn dispatch(
        &mut self,
        n: u64,
        raw: &[u8],
        kind: &str,
        ev: &mut Event<'_>,
        out: &mut Vec<Message>,
    ) {
        match kind {
            "session" => self.on_session(n, raw, ev, out),
            "agent_start" => {
                self.end_seen = false;
                self.settled = false;
                self.aborted = false;
                self.retry_pending = false;
            }
            "agent_end" => self.on_agent_end(ev),
            "agent_settled" => {
                self.end_seen = true;
                self.settled = true;
                // pi 1.1.0+: `aborted: true` when the run ended because it was aborted.
                self.aborted = ev.aborted.as_bool() == Some(true);
            }
            "auto_retry_start" => {
                self.end_seen = false;
                self.settled = false;
                if self.retry_pending {
                    return; // this retry was announced already (a repeated line)
                }
                self.retry_pending = true;
                out.push(Message::RetryScheduled {
                    source: RetrySource::Pi,
                    attempt: ev.attempt.as_u64().unwrap_or(0).min(u32::MAX as u64) as u32,
                    max_attempts: ev.max_attempts.as_u64().unwrap_or(0).min(u32::MAX as u64) as u32,
                    delay_ms: ev.delay_ms.as_u64().unwrap_or(0),
                    error: ev.error_message.as_str().unwrap_or("").to_string(),
                });
            }
            "compaction_start" => self.settled = false,
            "message_start" => self.on_message_start(n, raw, ev, out),
            "message_update" => self.on_message_update(n, raw, ev, out),
            "message_end" => self.on_message_end(n, raw, ev, out),
            "tool_execution_start" | "tool_execution_update" | "tool_execution_end" => {
                self.on_tool(n, raw, kind, ev, out)
            }
            k if IGNORED_EVENTS.contains(&k) => {}
            k => {
                self.stats.unknown_events += 1;
                let problem = format!("unknown event type {k:?} (ignored)");
                self.record(n, raw.len() as u64, problem, raw);
            }
        }
    }

    fn on_session(&mut self, n: u64, raw: &[u8], ev: &Event<'_>, out: &mut Vec<Message>) {
        let Some(id) = ev.id.as_str() else {
            return self.bad(n, raw, "`session` without a string `id`".into());
        };
        match &self.session {
            None => {
                self.session = Some(id.to_string());
                let session_id = id.to_string();
                out.push(if self.opts.resumed_session {
                    Message::SessionResumed { session_id }
                } else {
                    Message::SessionStarted { session_id }
                });
            }
            Some(first) if first == id => {}
            Some(_) => self.bad(
                n,
                raw,
                "a second `session` header with another id (ignored)".into(),
            ),
        }
    }

    fn on_agent_end(&mut self, ev: &Event<'_>) {
        match ev.will_retry.as_bool() {
            Some(true) => {
                self.end_seen = false;
                self.settled = false;
            }
            Some(false) => {
                self.end_seen = true;
                self.settled = true;
            }
            None => {
                // pi 0.73.1 does not say; a retry can only follow an error.
                self.end_seen = true;
                self.settled = self.last_stop.as_deref() != Some("error");
            }
        }
    }

    /// The `message` of an event, parsed (in place when the event type came first).
    fn take_message<'a>(
        &mut self,
        n: u64,
        raw: &[u8],
        field: MsgField<'a>,
        what: &str,
    ) -> Option<Box<MessageBody<'a>>> {
        let parsed = match field {
            MsgField::Absent => {
                self.bad(n, raw, "message event without `message`".into());
                return None;
            }
            MsgField::Body(body) => body,
            MsgField::Raw(text) => match serde_json::from_str::<Obj<MessageBody<'a>>>(text.get()) {
                Ok(Obj(body)) => body.map(Box::new),
                Err(e) => {
                    self.bad(n, raw, format!("{what}: {e}"));
                    return None;
                }
            },
        };
        if parsed.is_none() {
            self.bad(n, raw, format!("{what} is not an object"));
        }
        parsed
    }

    fn on_message_start(&mut self, n: u64, raw: &[u8], ev: &mut Event<'_>, out: &mut Vec<Message>) {
        let message = std::mem::take(&mut ev.message);
        let Some(m) = self.take_message(n, raw, message, "`message`") else {
            return;
        };
        match m.role.as_str() {
            Some("assistant") => self.release_all(out),
            Some("toolResult") => return self.release(&m, out),
            Some(_) => return, // user, system, custom: nothing to say
            None => return self.bad(n, raw, "`message_start` without `message.role`".into()),
        }
        let ts = m.timestamp.map(|t| Stamp::new(t.get()));
        if let Some(open) = &self.open {
            if ts.is_some() && open.timestamp == ts {
                return; // the same start again
            }
            self.close_unfinished();
        }
        // The content of message_start is a snapshot that may already lead the deltas
        // (pi 0.87.1 puts the first thinking chunk there; 1.x may put the first chunk there
        // and repeat it in the first delta): never used. Text comes from the deltas, and
        // what they miss from message_end.
        self.open = Some(OpenMessage {
            timestamp: ts,
            ..OpenMessage::default()
        });
    }

    /// An assistant message ended without its `message_end`: its text stays as streamed,
    /// its thoughts wait for the next drain.
    fn close_unfinished(&mut self) {
        if let Some(open) = self.open.take() {
            self.kept = format!("{}{}", open.replayed.unwrap_or_default(), open.emitted);
            self.pending_thoughts.extend(
                open.thoughts
                    .into_iter()
                    .map(|t| t.1)
                    .filter(|t| !t.is_empty()),
            );
        }
    }

    fn on_message_update(
        &mut self,
        n: u64,
        raw: &[u8],
        ev: &mut Event<'_>,
        out: &mut Vec<Message>,
    ) {
        self.open.get_or_insert_with(OpenMessage::default);
        let ame = ev.ame.0.take();
        let kind = ame.as_ref().and_then(|a| a.kind.as_str());
        match (kind, ame.as_ref()) {
            (Some("text_delta"), Some(a)) if a.delta.is_present() => {
                let Lv::Str(d) = &a.delta else {
                    return self.bad(n, raw, "`text_delta` whose `delta` is not a string".into());
                };
                self.on_delta(false, d, None, out);
            }
            (Some("thinking_delta"), Some(a)) if a.delta.is_present() => {
                let Lv::Str(d) = &a.delta else {
                    return self.bad(
                        n,
                        raw,
                        "`thinking_delta` whose `delta` is not a string".into(),
                    );
                };
                self.on_delta(true, d, a.content_index.as_u64(), out);
            }
            (Some("toolcall_end"), Some(a)) => {
                let Some(tc) = a.tool_call else {
                    return self.bad(n, raw, "`toolcall_end` without `toolCall`".into());
                };
                self.on_toolcall_end(n, raw, tc, out);
            }
            (Some("text_delta" | "thinking_delta"), _) | (None, _) => {
                // No delta: a snapshot-only producer.
                let partial = ame.and_then(|a| a.partial);
                let snapshot = match (partial, std::mem::take(&mut ev.message)) {
                    (Some(p), _) => Some(p),
                    (None, MsgField::Absent) => None,
                    (None, m) => Some(m),
                };
                if let Some(s) = snapshot {
                    self.on_snapshot(n, raw, s, out);
                }
            }
            // Update types without a delta by design, and unknown ones: nothing to take.
            _ => {}
        }
    }

    /// A `toolcall_end` update's `toolCall`.
    fn on_toolcall_end(&mut self, n: u64, raw: &[u8], tc: RawJson<'_>, out: &mut Vec<Message>) {
        let block = match self.fast.then(|| fast::tool_call(tc.get())).flatten() {
            Some(b) => Ok(Obj(Some(b))),
            None => serde_json::from_str::<Obj<ToolCallBlock<'_>>>(tc.get()),
        };
        match block {
            Ok(Obj(Some(b))) => match b.id.as_str() {
                Some(id) => self.announce(id, b.name.as_str(), b.arguments, out),
                None => self.bad(n, raw, "`toolcall_end` without `toolCall.id`".into()),
            },
            Ok(Obj(None)) => self.bad(n, raw, "`toolCall` is not an object".into()),
            Err(e) => self.bad(n, raw, format!("`toolCall`: {e}")),
        }
    }

    /// A `text_delta` or `thinking_delta` with its string `delta` (an assistant message is open).
    fn on_delta(&mut self, thinking: bool, d: &str, index: Option<u64>, out: &mut Vec<Message>) {
        self.sends_deltas = true;
        let open = self.open.get_or_insert_with(OpenMessage::default);
        if thinking {
            match open.thoughts.iter_mut().rev().find(|t| t.0 == index) {
                Some(t) => t.1.push_str(d),
                None => open.thoughts.push((index, d.to_string())),
            }
        } else if !d.is_empty() {
            open.emitted.push_str(d);
            out.push(Message::Assistant {
                text: d.to_string(),
            });
        }
    }

    fn on_snapshot(&mut self, n: u64, raw: &[u8], snapshot: MsgField<'_>, out: &mut Vec<Message>) {
        if self.sends_deltas {
            return; // this producer sends deltas: its snapshots lie, ignore them
        }
        let Some(body) = self.take_message(n, raw, snapshot, "snapshot") else {
            return;
        };
        let Some(content) = body.content else {
            return;
        };
        let open = self.open.get_or_insert_with(OpenMessage::default);
        let thoughts = content.thoughts();
        if !thoughts.is_empty() {
            open.thoughts = thoughts;
        }
        let text = content.text();
        let kept = &self.kept;
        if open.replayed.is_none() {
            if !open.emitted.is_empty() || kept.is_empty() || !kept.starts_with(text.as_ref()) {
                let replay =
                    !kept.is_empty() && open.emitted.is_empty() && text.starts_with(kept.as_str());
                open.replayed = Some(if replay { kept.clone() } else { String::new() });
            } else {
                return; // still (possibly) replaying the previous text: wait
            }
        }
        let replayed = open.replayed.as_deref().unwrap_or("");
        let own = text.strip_prefix(replayed).unwrap_or(&text);
        if let Some(new) = own.strip_prefix(open.emitted.as_str()) {
            if !new.is_empty() {
                open.emitted.push_str(new);
                out.push(Message::Assistant {
                    text: new.to_string(),
                });
            }
        }
        // Otherwise the snapshot lags (a prefix of what was emitted) or diverges: ignored.
    }

    fn on_message_end(&mut self, n: u64, raw: &[u8], ev: &mut Event<'_>, out: &mut Vec<Message>) {
        let message = std::mem::take(&mut ev.message);
        let Some(m) = self.take_message(n, raw, message, "`message`") else {
            return;
        };
        match m.role.as_str() {
            Some("assistant") => self.release_all(out),
            Some("toolResult") => return self.release(&m, out),
            Some(_) => return,
            None => return self.bad(n, raw, "`message_end` without `message.role`".into()),
        }
        let ts = m.timestamp.map(|t| Stamp::new(t.get()));
        // The message_end of the message closed last, again (same timestamp, same text),
        // while no message with that timestamp is open: ignored.
        let repeated = ts.is_some()
            && ts == self.last_closed_ts
            && self.open.as_ref().map_or(true, |o| o.timestamp != ts)
            && m.content
                .as_ref()
                .is_some_and(|c| c.text() == self.kept.as_str());
        if repeated {
            return;
        }
        if let (Some(open), Some(t)) = (&self.open, &ts) {
            if open.timestamp.as_ref().is_some_and(|o| o != t) {
                self.close_unfinished();
            }
        }
        let mut open = self.open.take().unwrap_or_default();

        if let Some(content) = &m.content {
            let text = content.text();
            // The replayed prefix is dropped when the final text repeats it too; some
            // producers give the message's own text here.
            let replayed_len = match &open.replayed {
                Some(r) if text.starts_with(r.as_str()) => r.len(),
                Some(_) => 0,
                None if !self.sends_deltas
                    && open.emitted.is_empty()
                    && !self.kept.is_empty()
                    && text.starts_with(self.kept.as_str()) =>
                {
                    self.kept.len()
                }
                None => 0,
            };
            let own = &text[replayed_len..];
            match own.strip_prefix(open.emitted.as_str()) {
                Some(rest) => {
                    if !rest.is_empty() {
                        out.push(Message::Assistant {
                            text: rest.to_string(),
                        });
                    }
                }
                None => {
                    self.stats.text_divergences += 1;
                    let problem = format!(
                        "`message_end` text does not continue the streamed text (streamed {} bytes, final {} bytes, equal for the first {}); nothing more emitted for this message",
                        open.emitted.len(),
                        own.len(),
                        common_prefix(own, &open.emitted)
                    );
                    self.record(n, raw.len() as u64, problem, raw);
                }
            }
            set_text(&mut self.kept, text);
            // message_end is authoritative for thoughts too.
            open.thoughts = content.thoughts();
            for call in content.tool_calls() {
                if let Some(id) = call.id.as_str() {
                    self.announce(id, call.name.as_str(), call.arguments, out);
                }
            }
        } else {
            self.kept = format!("{}{}", open.replayed.unwrap_or_default(), open.emitted);
        }
        self.pending_thoughts.extend(
            open.thoughts
                .into_iter()
                .map(|t| t.1)
                .filter(|t| !t.is_empty()),
        );
        let stop = m.stop_reason.as_str().map(str::to_string);
        if stop.as_deref() != Some("toolUse") {
            self.drain_thoughts(out);
        }
        let usage = m.usage.0.map(|u| u.to_usage()).unwrap_or_default();
        self.usage.add(&usage);
        out.push(Message::Usage(usage));
        self.last_error = m.error_message.as_str().map(str::to_string);
        self.last_stop = stop;
        self.last_closed_ts = ts;
    }

    fn drain_thoughts(&mut self, out: &mut Vec<Message>) {
        out.extend(
            self.pending_thoughts
                .drain(..)
                .map(|text| Message::AssistantThought { text }),
        );
    }

    /// Emit `tool.call` once per id.
    fn announce(
        &mut self,
        id: &str,
        name: Option<&str>,
        args: Option<RawJson<'_>>,
        out: &mut Vec<Message>,
    ) {
        // Most calls find the tool announced already: no key allocated for them.
        if !self.tools.contains_key(id) {
            self.tools.insert(id.to_string(), ToolState::default());
        }
        let Some(tool) = self.tools.get_mut(id) else {
            return;
        };
        if tool.announced {
            return;
        }
        tool.announced = true;
        out.push(Message::ToolCall {
            id: id.to_string(),
            name: name.unwrap_or("").to_string(),
            arguments: args.map(to_json).unwrap_or_else(Json::null),
        });
    }

    /// The toolResult message of a tool whose end is held: that end, with the message's
    /// `nestedCalls` added to the result.
    fn release(&mut self, m: &MessageBody<'_>, out: &mut Vec<Message>) {
        if self.held.is_empty() {
            return;
        }
        let Some(id) = m.tool_call_id.as_str() else {
            return;
        };
        if let Some(i) = self.held.iter().position(|h| h.id == id) {
            let mut held = self.held.remove(i);
            if let Some(nested) = m.nested_calls {
                if let Value::Object(mut result) = held.result.to_value() {
                    // pi's own result wins if it ever carries the field itself.
                    result
                        .entry("nestedCalls")
                        .or_insert_with(|| to_json(nested).to_value());
                    held.result = Json::from(Value::Object(result));
                }
            }
            out.push(held.into_message());
        }
    }

    /// Held ends whose toolResult message did not come (a damaged or cut stream): as
    /// they are, in the order the tools ended.
    fn release_all(&mut self, out: &mut Vec<Message>) {
        out.extend(self.held.drain(..).map(Held::into_message));
    }

    fn on_tool(&mut self, n: u64, raw: &[u8], kind: &str, ev: &Event<'_>, out: &mut Vec<Message>) {
        let Some(id) = ev.tool_call_id.as_str() else {
            return self.bad(n, raw, format!("`{kind}` without a string `toolCallId`"));
        };
        match &ev.parent_tool_call_id {
            Lv::Absent => {}
            // A nested call (pi 0.99+: codemode, `ctx.executeTool`): not a call of the
            // model, reported by its parent (its updates, its result, and `nestedCalls` on
            // its toolResult message). Nothing of its own; the parent's end waits for
            // that message.
            Lv::Str(parent) => {
                if let Some(p) = self.tools.get_mut(parent.as_ref()) {
                    p.nested = true;
                } else {
                    let p = ToolState {
                        nested: true,
                        ..ToolState::default()
                    };
                    self.tools.insert(parent.to_string(), p);
                }
                return;
            }
            _ => {
                return self.bad(
                    n,
                    raw,
                    format!("`{kind}` whose `parentToolCallId` is not a string"),
                )
            }
        }
        // A damaged stream may have lost the call: announce it from what this event says.
        self.announce(id, ev.tool_name.as_str(), ev.args, out);
        let tool = self.tools.get_mut(id).expect("announced above");
        if tool.done {
            return;
        }
        match kind {
            "tool_execution_update" => {
                if let Some(p) = ev.partial_result {
                    if tool.last_partial.as_deref() != Some(p.get()) {
                        let last = tool.last_partial.get_or_insert_with(String::new);
                        last.clear();
                        last.push_str(p.get());
                        out.push(Message::ToolUpdate {
                            id: id.to_string(),
                            partial: to_json(p),
                        });
                    }
                }
            }
            "tool_execution_end" => {
                tool.done = true;
                tool.last_partial = None;
                let end = Held {
                    id: id.to_string(),
                    failed: ev.is_error.as_bool() == Some(true),
                    result: ev.result.map(to_json).unwrap_or_else(Json::null),
                };
                if tool.nested {
                    // Its toolResult message, next, carries `nestedCalls`.
                    self.held.push(end);
                } else {
                    out.push(end.into_message());
                }
            }
            _ => {}
        }
    }

    fn finish(&mut self, end: StreamEnd, out: &mut Vec<Message>) {
        self.finished = true;
        self.close_unfinished();
        self.release_all(out);
        self.drain_thoughts(out);
        let StreamEnd {
            exit,
            stderr_tail,
            cause,
        } = end;
        let (reason, message) = match cause {
            EndCause::Cancelled => {
                out.push(Message::TerminalCancelled { exit });
                return;
            }
            EndCause::Failed { reason, message } => (reason, message),
            EndCause::Eof if self.end_seen => match self.last_stop.as_deref() {
                Some("aborted") => (
                    FailureReason::Aborted,
                    self.last_error
                        .clone()
                        .unwrap_or_else(|| "the run was aborted".into()),
                ),
                // pi 1.1.0+ says so in agent_settled, whatever the last message says (an
                // abort during a tool or a retry's wait leaves `toolUse` or `error` there).
                _ if self.aborted => (
                    FailureReason::Aborted,
                    match &self.last_error {
                        Some(e) => format!("the run was aborted (agent_settled.aborted): {e}"),
                        None => "the run was aborted (agent_settled.aborted)".into(),
                    },
                ),
                Some("error") => (
                    FailureReason::ModelError,
                    self.last_error
                        .clone()
                        .unwrap_or_else(|| "the model call failed (no errorMessage)".into()),
                ),
                stop => {
                    out.push(Message::TerminalCompleted {
                        stop_reason: stop.unwrap_or("none").to_string(),
                        usage: self.usage.clone(),
                    });
                    return;
                }
            },
            EndCause::Eof => {
                let last = stderr_tail.as_deref().and_then(last_line);
                let with_stderr = |s: String| match last {
                    Some(l) => format!("{s}: {l}"),
                    None => s,
                };
                match &exit {
                    Some(ExitInfo {
                        signal: Some(sig), ..
                    }) => (
                        FailureReason::ProcessSignal,
                        with_stderr(format!("pi was killed by {sig} before the run ended")),
                    ),
                    Some(ExitInfo {
                        code: Some(c), ..
                    }) if *c != 0 => (
                        FailureReason::ProcessExit,
                        with_stderr(format!("pi exited with code {c}")),
                    ),
                    _ => (
                        FailureReason::MissingTerminalEvent,
                        "pi's stdout ended without the event that ends a run (agent_end not followed by a retry, or agent_settled)".to_string(),
                    ),
                }
            }
        };
        out.push(Message::TerminalFailed(Failure {
            reason,
            message,
            exit,
            stderr_tail,
            invalid_lines: std::mem::take(&mut self.invalid),
            invalid_lines_dropped: self.invalid_dropped,
        }));
    }
}

impl Held {
    fn into_message(self) -> Message {
        let Held { id, failed, result } = self;
        if failed {
            Message::ToolFailed { id, error: result }
        } else {
            Message::ToolCompleted { id, result }
        }
    }
}

/// A message's `timestamp` (its raw JSON text), compared to tell one message from another:
/// held inline when short (pi writes a millisecond count), so keeping it costs no allocation.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Stamp {
    Short(u8, [u8; STAMP_INLINE]),
    Long(Box<str>),
}

const STAMP_INLINE: usize = 30;

impl Stamp {
    fn new(raw: &str) -> Stamp {
        let b = raw.as_bytes();
        if b.len() <= STAMP_INLINE {
            let mut buf = [0u8; STAMP_INLINE];
            buf[..b.len()].copy_from_slice(b);
            Stamp::Short(b.len() as u8, buf)
        } else {
            Stamp::Long(raw.into())
        }
    }
}

/// `dst` becomes `text`, reusing its buffer when `text` is borrowed.
fn set_text(dst: &mut String, text: Cow<'_, str>) {
    match text {
        Cow::Owned(s) => *dst = s,
        Cow::Borrowed(b) => {
            dst.clear();
            dst.push_str(b);
        }
    }
}

fn to_json(raw: RawJson<'_>) -> Json {
    // The text was validated as JSON when the line was parsed.
    Json::validated(raw.get())
}

/// Length in bytes of the common prefix, on a char boundary.
fn common_prefix(a: &str, b: &str) -> usize {
    a.char_indices()
        .zip(b.chars())
        .find(|((_, x), y)| x != y)
        .map(|((i, _), _)| i)
        .unwrap_or_else(|| a.len().min(b.len()))
}

/// The last non-empty line of a stderr tail, trimmed and bounded.
fn last_line(tail: &str) -> Option<String> {
    let line = tail.lines().rev().map(str::trim).find(|l| !l.is_empty())?;
    let mut end = line.len().min(EXCERPT_BYTES);
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    Some(line[..end].to_string())
}

/// The start of a line, lossily decoded, at most `max` bytes of UTF-8.
fn excerpt(raw: &[u8], max: usize) -> String {
    let head = &raw[..raw.len().min(max)];
    let mut s = String::from_utf8_lossy(head).into_owned();
    // Replacement characters can make it longer than `max`: cut on a char boundary.
    if s.len() > max {
        let mut end = max;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
    }
    s
}

// ---------------------------------------------------------------------------
// Wire types: borrowed, lenient where the shape is not ours to enforce.

/// The text of one JSON value exactly as it stood in the line (what a `&RawValue` holds):
/// read by the serde path through `&RawValue`, by the fast path as the scanned bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
struct RawJson<'a>(&'a str);

impl<'a> RawJson<'a> {
    fn get(self) -> &'a str {
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
enum Lv<'a> {
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
    fn to_static(&self) -> Lv<'static> {
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

    fn as_str(&self) -> Option<&str> {
        match self {
            Lv::Str(s) => Some(s),
            _ => None,
        }
    }
    fn as_u64(&self) -> Option<u64> {
        match *self {
            Lv::U64(v) => Some(v),
            Lv::F64(v) if v >= 0.0 && v.fract() == 0.0 && v < 1.8e19 => Some(v as u64),
            _ => None,
        }
    }
    fn as_f64(&self) -> Option<f64> {
        match *self {
            Lv::U64(v) => Some(v as f64),
            Lv::I64(v) => Some(v as f64),
            Lv::F64(v) => Some(v),
            _ => None,
        }
    }
    fn as_bool(&self) -> Option<bool> {
        match *self {
            Lv::Bool(b) => Some(b),
            _ => None,
        }
    }
    fn is_present(&self) -> bool {
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
struct Obj<T>(Option<T>);

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
struct Event<'a> {
    kind: Lv<'a>,
    id: Lv<'a>,
    message: MsgField<'a>,
    ame: Obj<Ame<'a>>,
    tool_call_id: Lv<'a>,
    tool_name: Lv<'a>,
    args: Option<RawJson<'a>>,
    partial_result: Option<RawJson<'a>>,
    result: Option<RawJson<'a>>,
    is_error: Lv<'a>,
    will_retry: Lv<'a>,
    attempt: Lv<'a>,
    max_attempts: Lv<'a>,
    delay_ms: Lv<'a>,
    error_message: Lv<'a>,
    parent_tool_call_id: Lv<'a>,
    aborted: Lv<'a>,
}

/// `assistantMessageEvent`.
#[derive(Debug, Default)]
struct Ame<'a> {
    kind: Lv<'a>,
    content_index: Lv<'a>,
    delta: Lv<'a>,
    tool_call: Option<RawJson<'a>>,
    partial: Option<MsgField<'a>>,
}

/// A `message` (or `partial`) field.
#[derive(Debug, Default)]
enum MsgField<'a> {
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
    fn may_need_snapshot(&self) -> bool {
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
fn parse_event<'de>(raw: &'de [u8], ev: &mut Event<'de>) -> serde_json::Result<()> {
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
struct MessageBody<'a> {
    #[serde(borrow, default)]
    role: Lv<'a>,
    #[serde(borrow, default)]
    content: Option<Content<'a>>,
    #[serde(rename = "stopReason", borrow, default)]
    stop_reason: Lv<'a>,
    #[serde(rename = "errorMessage", borrow, default)]
    error_message: Lv<'a>,
    #[serde(borrow, default)]
    usage: Obj<PiUsage<'a>>,
    #[serde(borrow, default)]
    timestamp: Option<RawJson<'a>>,
    /// toolResult messages: the tool call they answer.
    #[serde(rename = "toolCallId", borrow, default)]
    tool_call_id: Lv<'a>,
    /// toolResult messages (pi 0.99+): pi's bounded record of the nested calls the tool made.
    #[serde(rename = "nestedCalls", borrow, default)]
    nested_calls: Option<RawJson<'a>>,
}

/// `content`: an array of blocks, or (user/system messages) a string.
#[derive(Debug)]
enum Content<'a> {
    Blocks(Vec<Block<'a>>),
    Text(Cow<'a, str>),
    Other,
}

#[derive(Debug, Default, Deserialize)]
struct Block<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Lv<'a>,
    #[serde(borrow, default)]
    text: Lv<'a>,
    #[serde(borrow, default)]
    thinking: Lv<'a>,
    #[serde(borrow, default)]
    id: Lv<'a>,
    #[serde(borrow, default)]
    name: Lv<'a>,
    #[serde(borrow, default)]
    arguments: Option<RawJson<'a>>,
}

type ToolCallBlock<'a> = Block<'a>;

impl<'a> Content<'a> {
    /// The answer text: the text blocks, concatenated in order.
    fn text(&self) -> Cow<'_, str> {
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

    fn thoughts(&self) -> Vec<(Option<u64>, String)> {
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

    fn tool_calls(&self) -> impl Iterator<Item = &Block<'a>> {
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
struct PiUsage<'a> {
    #[serde(borrow, default)]
    input: Lv<'a>,
    #[serde(borrow, default)]
    output: Lv<'a>,
    #[serde(rename = "cacheRead", borrow, default)]
    cache_read: Lv<'a>,
    #[serde(rename = "cacheWrite", borrow, default)]
    cache_write: Lv<'a>,
    #[serde(rename = "totalTokens", borrow, default)]
    total_tokens: Lv<'a>,
    #[serde(borrow, default)]
    cost: Obj<PiCost<'a>>,
}

#[derive(Debug, Clone, Default, Deserialize)]
struct PiCost<'a> {
    #[serde(borrow, default)]
    total: Lv<'a>,
}

impl PiUsage<'_> {
    /// The same, owning its strings (kept between lines).
    fn to_static(&self) -> PiUsage<'static> {
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
    fn to_usage(&self) -> Usage {
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
