//! Gemini CLI's `gemini -p ... --output-format stream-json` stdout (measured on 0.61.0)
//! to the normalized stream: pure, synchronous, no I/O, no clock.
//!
//! The interface is the pi mapper's ([`crate::mapper`]): one process is one run; bytes in
//! with [`GeminiMapper::push`] (any chunking, framed by [`LineSplitter`], same line cap and
//! bad-line bounds), which never emits a terminal; [`GeminiMapper::finish`] with a
//! [`StreamEnd`] appends exactly one. The rules in short (`docs/normalized-stream.md`,
//! "Gemini CLI's stream-json", has them in full):
//!
//! - **Session.** `init` gives `session.started { session_id }` (`session.resumed` with
//!   [`MapperOptions::resumed_session`]).
//! - **Text.** Gemini writes each chunk of the answer as it arrives: `message` with
//!   `role: "assistant"` and `delta: true` gives one `assistant` piece with its `content`.
//!   The chunks between two tool events make one assistant message. The prompt's echo
//!   (`role: "user"`) gives nothing. An assistant `message` without `delta: true` is a whole
//!   message: only what continues the current message's text comes out.
//! - **Thoughts.** None: Gemini shows no thought parts in stream-json, although its
//!   requests ask for them.
//! - **Tools.** `tool_use` gives `tool.call { id: tool_id, name: tool_name, arguments:
//!   parameters }`; `tool_result` gives `tool.completed { result }`, or `tool.failed
//!   { error }` when its `status` is not `success` (the event without `type`, `timestamp`
//!   and `tool_id`).
//! - **Errors and retries.** Gemini's retries are on stderr only: nothing on stdout, no
//!   `retry.scheduled`. An `error` event (`severity` `warning` or `error`) gives nothing;
//!   its message is kept as the detail of a failure.
//! - **Usage and terminal.** `result` gives one `usage` (from its `stats`) and decides the
//!   run: `status: "success"` completes, anything else fails `model_error` with
//!   `error.message`, **whatever the exit code** (Gemini exits with the HTTP status & 255
//!   on a model error: 144 for a 400, 244 for a 500). A stdout without `result` fails
//!   even on exit 0: a signal to Gemini's process group ends it so. The exit statuses are
//!   read in one place, `gemini/exit.rs`.
//!
//! ```
//! use pi_wire::gemini::map_all;
//! use pi_wire::mapper::{MapperOptions, StreamEnd};
//! use pi_wire::message::{ExitInfo, Message};
//!
//! let stdout = br#"{"type":"init","timestamp":"T","session_id":"s-1","model":"m"}
//! {"type":"message","timestamp":"T","role":"user","content":"say hi"}
//! {"type":"message","timestamp":"T","role":"assistant","content":"Hel","delta":true}
//! {"type":"message","timestamp":"T","role":"assistant","content":"lo","delta":true}
//! {"type":"result","timestamp":"T","status":"success","stats":{"total_tokens":18,"input_tokens":11,"output_tokens":7,"cached":0,"input":11}}
//! "#;
//! let end = StreamEnd::eof(Some(ExitInfo { code: Some(0), signal: None }));
//! let messages = map_all(stdout, end, MapperOptions::default());
//! let kinds: Vec<&str> = messages.iter().map(Message::kind).collect();
//! assert_eq!(kinds, ["session.started", "assistant", "assistant", "usage", "terminal.completed"]);
//! assert_eq!(messages[1], Message::Assistant { text: "Hel".into() });
//! ```
//!
//! This module is the interface; the state machine behind it is `gemini/state.rs`, and
//! the reading of exit statuses `gemini/exit.rs`.

use crate::framing::LineSplitter;
use crate::mapper::{MapperOptions, StreamEnd};
use crate::message::Message;

mod exit;
mod state;
use state::State;

/// The state machine for one `gemini --output-format stream-json` process's stdout. See
/// the module docs.
#[derive(Debug)]
pub struct GeminiMapper {
    framer: LineSplitter,
    state: State,
}

impl GeminiMapper {
    /// A mapper at the start of a Gemini process's stdout.
    pub fn new(opts: MapperOptions) -> Self {
        GeminiMapper {
            framer: LineSplitter::new(opts.max_line_bytes),
            state: State::new(opts),
        }
    }

    /// Feed raw stdout bytes (any chunking); appends normalized messages to `out`. Never
    /// emits a terminal. Bytes pushed after [`GeminiMapper::finish`] are ignored.
    pub fn push(&mut self, chunk: &[u8], out: &mut Vec<Message>) {
        if self.state.finished {
            return;
        }
        let state = &mut self.state;
        self.framer.push(chunk, &mut |line| state.line(line, out));
    }

    /// End of stdout: flushes a final unterminated line, then appends exactly one
    /// terminal. Calling it twice appends nothing the second time.
    pub fn finish(&mut self, end: StreamEnd, out: &mut Vec<Message>) {
        if self.state.finished {
            return;
        }
        let state = &mut self.state;
        self.framer.finish(&mut |line| state.line(line, out));
        self.state.finish(end, out);
    }

    /// True once the `result` line was read: Gemini has nothing more to say and exits. A
    /// hint for a caller waiting on a stuck stdout; the terminal still comes from
    /// [`GeminiMapper::finish`].
    pub fn is_settled(&self) -> bool {
        self.state.outcome.is_some()
    }
}

/// Convenience for tests and tools: the whole stdout at once.
pub fn map_all(stdout: &[u8], end: StreamEnd, opts: MapperOptions) -> Vec<Message> {
    let mut mapper = GeminiMapper::new(opts);
    let mut out = Vec::new();
    mapper.push(stdout, &mut out);
    mapper.finish(end, &mut out);
    out
}
