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
//! writes on every token are skipped with `serde::de::IgnoredAny` unless the event has no
//! delta, so the work per line is one pass over its bytes and the allocation per line does
//! not grow with the snapshot. `message_update` lines, the hot ones, first go through a
//! hand-written validating scanner (`mapper/hot.rs`), and every other line through the same
//! scanner filling the same `Event` (`mapper/fast.rs`, with a memo of the message bodies
//! pi repeats in `message_end`, `turn_end` and `agent_end`); both answer only when the serde
//! path would accept the line and read the same from it, and leave it the line otherwise.
//!
//! The rooms, each depending only on rooms named after it (and none on this module, which
//! holds [`Mapper`] and re-exports the rest):
//!
//! - `terminal`: how the run ends, the one terminal message ([`Mapper::finish`]);
//! - `events`: one line to its handler, by the one-pass paths or serde; session and agent
//!   events ([`Mapper::push`]);
//! - `assistant`: the assistant's text, thoughts and the tool calls its messages carry;
//! - `tools`: tool calls, updates and ends, nested calls held for their parent;
//! - `state`: what is remembered between lines, and the report of a bad line;
//! - `fast` and `hot`: the one-pass readers of a line;
//! - `schema`: pi's event schema, borrowed structs read by serde;
//! - `options` and `end`: what a caller passes in ([`MapperOptions`], [`StreamEnd`]).

use crate::framing::LineSplitter;
use crate::message::Message;

mod assistant;
mod end;
mod events;
mod fast;
mod hot;
mod options;
mod schema;
mod state;
mod terminal;
mod tools;

pub use crate::diagnostics::EXCERPT_BYTES;
pub use end::{EndCause, StreamEnd};
pub use options::{
    MapperOptions, MapperStats, DEFAULT_MAX_INVALID_BYTES, DEFAULT_MAX_INVALID_LINES,
    DEFAULT_MAX_LINE_BYTES,
};
use state::State;

/// The state machine. See the module docs and `docs/normalized-stream.md`.
#[derive(Debug)]
pub struct Mapper {
    framer: LineSplitter,
    state: State,
}

impl Mapper {
    /// A mapper at the start of a run.
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
