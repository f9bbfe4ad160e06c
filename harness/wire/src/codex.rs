//! Codex CLI's `codex exec --json` stdout (measured on 0.169.0) to the normalized stream:
//! pure, synchronous, no I/O, no clock.
//!
//! The interface is the pi mapper's ([`crate::mapper`]): one process is one run; bytes in
//! with [`CodexMapper::push`] (any chunking, framed by [`LineSplitter`], same line cap and
//! bad-line bounds), which never emits a terminal; [`CodexMapper::finish`] with a
//! [`StreamEnd`] appends exactly one. The rules in short (`docs/normalized-stream.md`,
//! "Codex's exec --json", has them in full):
//!
//! - **Session.** `thread.started` gives `session.started { session_id: thread_id }`
//!   (`session.resumed` with [`MapperOptions::resumed_session`]: `codex exec resume`).
//! - **Text.** Codex streams no text: the whole answer is one `agent_message` item, written
//!   when the model's stream has ended. Each `agent_message` gives one `assistant` message
//!   with its text; were a later release to send the item's text growing in
//!   `item.started`/`item.updated`, only what continues the text already emitted for that
//!   item id comes out (text that does not continue is noted among the bad lines).
//! - **Thoughts.** A `reasoning` item gives one `assistant.thought` (its whole `text`) at
//!   its `item.completed`; one still open at `finish` gives its last text there.
//! - **Tools.** `command_execution`, `file_change`, `mcp_tool_call`, `web_search` and
//!   `collab_tool_call` items are tool calls: the first event naming an item id gives
//!   `tool.call { id: item.id, name: item.type, arguments }` (the item's request fields,
//!   `command` for a command); `item.updated` gives `tool.update { partial: item }` when
//!   the item changed; `item.completed` gives `tool.completed { result: item }`, or
//!   `tool.failed { error: item }` when its `status` is there and not `completed`
//!   (`failed`, `declined`).
//! - **Retries.** An `error` event `Reconnecting... N/M (reason)` is Codex retrying the
//!   model stream: `retry.scheduled { source: "pi", attempt: N, max_attempts: M,
//!   delay_ms: 0, error: reason }`. Any other `error` event is the turn's fatal error,
//!   kept for the terminal.
//! - **Usage and terminal.** `turn.completed` gives one `usage` (its `usage`; Codex's
//!   `input_tokens` count the cached ones too, so `input_tokens` here is the rest);
//!   `turn.failed` remembers its `error.message`. At `finish`: the caller's cancel or
//!   failure wins; then a turn that ended decides (`terminal.completed` with
//!   `stop_reason: "none"` and the usage summed, or `terminal.failed` `model_error`); then
//!   how the process ended (`process_signal`, `process_exit`, else
//!   `missing_terminal_event`). An interrupted turn writes no closing event at all.
//! - **Not mapped.** `turn.started` (it reopens a run that had ended), `todo_list` and
//!   `error` items (Codex's warnings, as "Model metadata for `M` not found"). Unknown
//!   event and item types are noted (shown only if the run fails), never an error.
//!
//! ```
//! use pi_wire::codex::map_all;
//! use pi_wire::mapper::{MapperOptions, StreamEnd};
//! use pi_wire::message::{ExitInfo, Message};
//!
//! let stdout = br#"{"type":"thread.started","thread_id":"t-1"}
//! {"type":"turn.started"}
//! {"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"Hello"}}
//! {"type":"turn.completed","usage":{"input_tokens":11,"cached_input_tokens":0,"output_tokens":7}}
//! "#;
//! let end = StreamEnd::eof(Some(ExitInfo { code: Some(0), signal: None }));
//! let messages = map_all(stdout, end, MapperOptions::default());
//! let kinds: Vec<&str> = messages.iter().map(Message::kind).collect();
//! assert_eq!(kinds, ["session.started", "assistant", "usage", "terminal.completed"]);
//! assert_eq!(messages[1], Message::Assistant { text: "Hello".into() });
//! ```
//!
//! This module is the interface; the state machine behind it is `codex/state.rs`.

use crate::framing::LineSplitter;
use crate::mapper::{MapperOptions, StreamEnd};
use crate::message::Message;

mod state;
use state::State;

/// The state machine for one `codex exec --json` process's stdout. See the module docs.
#[derive(Debug)]
pub struct CodexMapper {
    framer: LineSplitter,
    state: State,
}

impl CodexMapper {
    /// A mapper at the start of a Codex process's stdout.
    pub fn new(opts: MapperOptions) -> Self {
        CodexMapper {
            framer: LineSplitter::new(opts.max_line_bytes),
            state: State::new(opts),
        }
    }

    /// Feed raw stdout bytes (any chunking); appends normalized messages to `out`. Never
    /// emits a terminal. Bytes pushed after [`CodexMapper::finish`] are ignored.
    pub fn push(&mut self, chunk: &[u8], out: &mut Vec<Message>) {
        if self.state.finished {
            return;
        }
        let state = &mut self.state;
        self.framer.push(chunk, &mut |line| state.line(line, out));
    }

    /// End of stdout: flushes a final unterminated line, gives the thought of a reasoning
    /// item still open, then appends exactly one terminal. Calling it twice appends
    /// nothing the second time.
    pub fn finish(&mut self, end: StreamEnd, out: &mut Vec<Message>) {
        if self.state.finished {
            return;
        }
        let state = &mut self.state;
        self.framer.finish(&mut |line| state.line(line, out));
        self.state.finish(end, out);
    }

    /// True once the turn ended (`turn.completed` or `turn.failed`), until a later
    /// `turn.started`: Codex has nothing more to say and exits. A hint for a caller
    /// waiting on a stuck stdout; the terminal still comes from
    /// [`CodexMapper::finish`].
    pub fn is_settled(&self) -> bool {
        self.state.outcome.is_some()
    }
}

/// Convenience for tests and tools: the whole stdout at once.
pub fn map_all(stdout: &[u8], end: StreamEnd, opts: MapperOptions) -> Vec<Message> {
    let mut mapper = CodexMapper::new(opts);
    let mut out = Vec::new();
    mapper.push(stdout, &mut out);
    mapper.finish(end, &mut out);
    out
}
