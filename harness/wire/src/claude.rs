//! Claude Code's `--output-format stream-json` stdout (measured on CLI 2.1.330) to the
//! normalized stream: pure, synchronous, no I/O, no clock.
//!
//! The interface is the pi mapper's ([`crate::mapper`]): bytes in with
//! [`ClaudeMapper::push`] (any chunking, framed by [`LineSplitter`], same line cap and
//! bad-line bounds), [`ClaudeMapper::finish`] with a [`StreamEnd`] saying how the process
//! ended. The difference is that one Claude process serves a whole session of turns, so
//! its stdout maps to several *runs* (see `docs/normalized-stream.md`, "Claude Code's
//! stream-json", for the contract in full):
//!
//! - **Runs.** One turn (a user message taken: `system/init` .. its `result`) is one run,
//!   and each run ends in exactly one terminal message. `push` emits a terminal at each
//!   `result` record and never otherwise; `finish` adds one only when a run is open
//!   (a record that belongs to a turn was seen after the last `result`), or when there was
//!   no run at all. A run is opened by `system/init`, `system/api_retry`, `result`, and
//!   the main agent's `stream_event`, `assistant` and `user` records; the other records
//!   (`system/status`, control messages, ...) and bad lines never open one. Bad lines are
//!   kept per run (those after a `result` go to the next run's `terminal.failed`).
//! - **Session.** `system/init` gives `session.started` (`session.resumed` with
//!   [`MapperOptions::resumed_session`]) when its `session_id` is not the one announced
//!   last: once per session, not once per turn.
//! - **Text.** Each `text_delta` of a `stream_event` is an `assistant` message at once.
//!   The `assistant` record of that block (Claude writes one record per content block)
//!   then adds only what the deltas did not stream: nothing normally, the whole text when
//!   partial messages are off, the unstreamed rest of an `aborted: true` record. A record
//!   whose text does not continue the streamed text adds nothing and is noted among the
//!   bad lines.
//! - **Thinking.** One `assistant.thought` per thinking block, its whole text (the
//!   record's `thinking`; the deltas only when the record never came), emitted when its
//!   API message ends: its `message_stop`, the start, a delta or a record of another API
//!   message, a `user` record (when the message was not streamed), `system/init`,
//!   `system/api_retry`, `result`, or `finish`. So thoughts come after the text of their own message.
//! - **Tools.** `tool_use` blocks of `assistant` records give `tool.call` (once per id,
//!   `arguments` = the model's `input`); `tool_result` blocks of `user` records give
//!   `tool.completed` / `tool.failed` (`is_error`), with `content` as it is (a string or
//!   an array). A result whose call was never seen announces the call first (`name: ""`,
//!   `arguments: null`); a second result for an id is ignored.
//! - **Retries.** `system/api_retry` gives `retry.scheduled` with `source: "pi"` (the
//!   agent CLI retried on its own; the v1 enum keeps its name).
//! - **Usage and terminal.** The `result` record gives one `usage` and the terminal:
//!   `terminal.completed` (`stop_reason`, the same usage) when `is_error` is false,
//!   `terminal.failed` `model_error` (API errors, `error_max_turns`, ...) or `aborted`
//!   (`error_during_execution`: an interrupt) otherwise. `cost_usd` is what
//!   `total_cost_usd` grew by since the previous `result` of the same stdout: Claude's
//!   figure is the process's running total (measured: the 2nd of two turns of 0.00042
//!   says 0.00084), so the first turn's is taken as it is.
//! - **Not mapped.** API error `assistant` records (`is_api_error_message: true`: their
//!   text is Claude's error text, which the `terminal.failed` message carries), records of
//!   subagents (`parent_tool_use_id` set: their work reaches the stream as the calling
//!   tool's result), replayed and plain-text `user` records, `system/status`,
//!   `system/thinking_tokens`, `system/task_*`, `system/permission_denied`,
//!   `tool_progress`, `control_*`, other `stream_event` types. Unknown record types and
//!   `system` subtypes are noted (shown only if the run fails), never an error.
//!
//! ```
//! use pi_wire::claude::map_all;
//! use pi_wire::mapper::{MapperOptions, StreamEnd};
//! use pi_wire::message::{ExitInfo, Message};
//!
//! let stdout = br#"{"type":"system","subtype":"init","session_id":"s-1"}
//! {"type":"stream_event","event":{"type":"message_start","message":{"id":"msg_1"}},"parent_tool_use_id":null,"api_message_id":"msg_1"}
//! {"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}},"parent_tool_use_id":null,"api_message_id":"msg_1"}
//! {"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"lo"}},"parent_tool_use_id":null,"api_message_id":"msg_1"}
//! {"type":"assistant","message":{"id":"msg_1","content":[{"type":"text","text":"Hello"}]},"parent_tool_use_id":null}
//! {"type":"stream_event","event":{"type":"message_stop"},"parent_tool_use_id":null,"api_message_id":"msg_1"}
//! {"type":"result","subtype":"success","is_error":false,"stop_reason":"end_turn","total_cost_usd":0.1,"usage":{"input_tokens":3,"output_tokens":2}}
//! "#;
//! let end = StreamEnd::eof(Some(ExitInfo { code: Some(0), signal: None }));
//! let messages = map_all(stdout, end, MapperOptions::default());
//! let kinds: Vec<&str> = messages.iter().map(Message::kind).collect();
//! assert_eq!(
//!     kinds,
//!     ["session.started", "assistant", "assistant", "usage", "terminal.completed"]
//! );
//! ```

//!
//! This module is the interface; the state machine behind it is `claude/state.rs`.

use crate::framing::LineSplitter;
use crate::mapper::{MapperOptions, StreamEnd};
use crate::message::Message;

mod state;
use state::State;

/// The state machine for one Claude Code process's stdout. See the module docs.
#[derive(Debug)]
pub struct ClaudeMapper {
    framer: LineSplitter,
    state: State,
}

impl ClaudeMapper {
    /// A mapper at the start of a Claude Code process's stdout.
    pub fn new(opts: MapperOptions) -> Self {
        ClaudeMapper {
            framer: LineSplitter::new(opts.max_line_bytes),
            state: State::new(opts),
        }
    }

    /// Feed raw stdout bytes (any chunking); appends normalized messages to `out`. Emits a
    /// terminal only at a `result` record (the end of a turn). Bytes pushed after
    /// [`ClaudeMapper::finish`] are ignored.
    pub fn push(&mut self, chunk: &[u8], out: &mut Vec<Message>) {
        if self.state.finished {
            return;
        }
        let state = &mut self.state;
        self.framer.push(chunk, &mut |line| state.line(line, out));
    }

    /// End of stdout: flushes a final unterminated line, then appends one terminal if a run
    /// is open (or there was no run at all), after that run's buffered thoughts. Calling it
    /// twice appends nothing the second time.
    pub fn finish(&mut self, end: StreamEnd, out: &mut Vec<Message>) {
        if self.state.finished {
            return;
        }
        let state = &mut self.state;
        self.framer.finish(&mut |line| state.line(line, out));
        self.state.finish(end, out);
    }

    /// How many `result` records (finished turns) were seen.
    pub fn turns_finished(&self) -> usize {
        self.state.turns
    }
}

/// Convenience for tests and tools: the whole stdout at once.
pub fn map_all(stdout: &[u8], end: StreamEnd, opts: MapperOptions) -> Vec<Message> {
    let mut mapper = ClaudeMapper::new(opts);
    let mut out = Vec::new();
    mapper.push(stdout, &mut out);
    mapper.finish(end, &mut out);
    out
}
