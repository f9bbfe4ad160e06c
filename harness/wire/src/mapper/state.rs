//! What the mapper remembers between lines: [`State`] (the session, the open assistant
//! message, the tools, the held tool ends, the last stop reason, usage, the bad lines), the
//! smaller records it holds, and [`State::bad`], which every handler reports through. The
//! handlers that change it live beside it: `events` (a line to its event), `assistant`,
//! `tools` and `terminal`.

use std::collections::HashMap;

use super::fast;
use super::options::{MapperOptions, MapperStats};
use crate::diagnostics::InvalidLines;
use crate::json::Json;
use crate::message::{Message, Usage};

/// Everything the state machine knows between lines (see the module docs).
#[derive(Debug)]
pub(super) struct State {
    pub(super) opts: MapperOptions,
    pub(super) stats: MapperStats,
    pub(super) finished: bool,
    pub(super) session: Option<String>,
    /// The assistant message being streamed.
    pub(super) open: Option<OpenMessage>,
    /// `timestamp` (raw JSON) of the last assistant message closed by `message_end`.
    pub(super) last_closed_ts: Option<Stamp>,
    /// The run-level text snapshot-only producers are compared against: the whole text
    /// of the previous assistant message as the producer gave it.
    pub(super) kept: String,
    /// Thoughts waiting for a non-`toolUse` end, in order: at most
    /// [`MapperOptions::max_line_bytes`] in all (see [`State::keep_thoughts`]).
    pub(super) pending_thoughts: Vec<String>,
    pub(super) tools: HashMap<String, ToolState>,
    /// Ends of tools that made nested calls, waiting for their toolResult message (which
    /// carries `nestedCalls`), in the order they ended.
    pub(super) held: Vec<Held>,
    pub(super) last_stop: Option<String>,
    pub(super) last_error: Option<String>,
    pub(super) usage: Usage,
    pub(super) end_seen: bool,
    pub(super) settled: bool,
    /// The last `agent_settled` said `aborted: true` (pi 1.1.0+), and no `agent_start` since.
    pub(super) aborted: bool,
    /// A text or thinking delta was seen in this run: snapshots are ignored from then on.
    pub(super) sends_deltas: bool,
    /// `auto_retry_start` seen and no `agent_start` since.
    pub(super) retry_pending: bool,
    /// Bad lines kept for a `terminal.failed`, bounded.
    pub(super) invalid: InvalidLines,
    /// The fast scanner's memo: the last small top-level object or array it validated.
    pub(super) hot_memo: Vec<u8>,
    /// The one-pass path for the other lines (`mapper/fast.rs`) is used.
    pub(super) fast: bool,
    /// Its memo: message bodies already validated, which pi repeats.
    pub(super) fast_memo: fast::Memo,
}

/// The assistant message being streamed. What it keeps of its text and thinking is at most
/// [`MapperOptions::max_line_bytes`] in all (a `message_end` line could not hold more); the
/// bytes past that are emitted as they come but not kept, only counted.
#[derive(Debug, Default)]
pub(super) struct OpenMessage {
    pub(super) timestamp: Option<Stamp>,
    /// Text emitted for this message so far (its first bytes, when `text_cut`).
    pub(super) emitted: String,
    /// Bytes of text streamed past what `emitted` keeps.
    pub(super) text_cut: u64,
    /// Bytes of thinking streamed past what `thoughts` keeps.
    pub(super) thoughts_cut: u64,
    /// Snapshot-only producers: the replayed previous text this message starts with,
    /// once decided (`Some("")` when it does not replay).
    pub(super) replayed: Option<String>,
    /// Thinking blocks: content index and text so far.
    pub(super) thoughts: Vec<(Option<u64>, String)>,
}

/// What is known of one tool call, by id.
#[derive(Debug, Default)]
pub(super) struct ToolState {
    pub(super) announced: bool,
    pub(super) last_partial: Option<String>,
    pub(super) done: bool,
    /// Events of nested calls (`parentToolCallId` = this id) were seen.
    pub(super) nested: bool,
}

/// A tool's end held back until its toolResult message.
#[derive(Debug)]
pub(super) struct Held {
    pub(super) id: String,
    pub(super) failed: bool,
    pub(super) result: Json,
}

impl State {
    pub(super) fn new(opts: MapperOptions) -> Self {
        let invalid = InvalidLines::new(opts.max_invalid_lines, opts.max_invalid_bytes);
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
            invalid,
            hot_memo: Vec::new(),
            fast: true,
            fast_memo: fast::Memo::default(),
        }
    }

    /// A line that is not a usable event: counted, and kept for diagnostics.
    pub(super) fn bad(&mut self, line: u64, raw: &[u8], problem: String) {
        self.stats.invalid_lines += 1;
        self.invalid.record(line, raw.len() as u64, problem, raw);
    }
}

impl OpenMessage {
    /// Bytes of text and thinking kept.
    fn kept_bytes(&self) -> usize {
        self.emitted.len() + self.thoughts.iter().map(|t| t.1.len()).sum::<usize>()
    }

    /// Keep `d` (a text delta, or a thinking delta of block `index`) within `cap` bytes kept
    /// in all; what does not fit is counted. Returns false when something was not kept.
    pub(super) fn keep(&mut self, thinking: bool, d: &str, index: Option<u64>, cap: usize) -> bool {
        let room = cap.saturating_sub(self.kept_bytes());
        let fits = prefix_within(d, room);
        let cut = (d.len() - fits.len()) as u64;
        if thinking {
            self.thoughts_cut += cut;
            match self.thoughts.iter_mut().rev().find(|t| t.0 == index) {
                Some(t) => t.1.push_str(fits),
                None if !fits.is_empty() => self.thoughts.push((index, fits.to_string())),
                None => {}
            }
        } else {
            self.text_cut += cut;
            self.emitted.push_str(fits);
        }
        cut == 0
    }
}

impl State {
    /// Queue `thoughts` to be emitted at the next non-`toolUse` end, within
    /// [`MapperOptions::max_line_bytes`] queued in all; what does not fit is dropped and a
    /// note says how much.
    pub(super) fn keep_thoughts(&mut self, thoughts: impl IntoIterator<Item = String>) {
        let cap = self.opts.max_line_bytes;
        let mut queued: usize = self.pending_thoughts.iter().map(String::len).sum();
        let mut dropped = 0u64;
        for t in thoughts.into_iter().filter(|t| !t.is_empty()) {
            let fits = prefix_within(&t, cap.saturating_sub(queued)).len();
            dropped += (t.len() - fits) as u64;
            if fits > 0 {
                queued += fits;
                let mut t = t;
                t.truncate(fits);
                self.pending_thoughts.push(t);
            }
        }
        if dropped > 0 {
            self.note(format!(
                "{dropped} bytes of thinking dropped: past the {cap} bytes of thinking the mapper queues (its line cap)"
            ));
        }
    }

    /// A note in the bad lines a `terminal.failed` carries, at the line being read.
    pub(super) fn note(&mut self, problem: String) {
        self.invalid.record(self.stats.lines, 0, problem, b"");
    }
}

/// The longest prefix of `s` of at most `max` bytes that ends on a char boundary.
pub(super) fn prefix_within(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

impl Held {
    pub(super) fn into_message(self) -> Message {
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
pub(super) enum Stamp {
    Short(u8, [u8; STAMP_INLINE]),
    Long(Box<str>),
}

const STAMP_INLINE: usize = 30;

impl Stamp {
    pub(super) fn new(raw: &str) -> Stamp {
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
