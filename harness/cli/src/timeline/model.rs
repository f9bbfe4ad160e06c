//! What a timeline page draws, as data: the rows of marks ([`Lane`]), the processes as bars
//! ([`Proc`]) and the signals as arrows ([`Arrow`]). The page ([`super::page`]) writes them;
//! the readers of a cassette, a replay's report or a normalized stream make them.

use serde::Serialize;

/// A row of marks on the time axis, in the order the page draws them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Lane {
    /// What the caller sent: a call's command line and environment (a replay's report).
    Call,
    /// Where a replay did not match its cassette.
    Mismatch,
    /// The client's actions on stdin (lines, close, signals).
    Client,
    /// What the model was sent (the request log).
    Request,
    /// The session's start and lifecycle (session, init, turns, the user's prompt).
    Session,
    /// The assistant's text.
    Text,
    /// The assistant's thinking.
    Thinking,
    /// Tool calls and their results.
    Tool,
    /// Retries after a failed model call.
    Retry,
    /// The run's result or terminal event.
    Result,
    /// Replies to the client's commands.
    Reply,
    /// Signals a replay received.
    Signal,
    /// Output of a kind the page does not know (never dropped).
    Other,
    /// stderr.
    Stderr,
    /// A process started (`spawn`) or gone (`reap`).
    Process,
    /// The ending: exit, death by a signal, or a hang.
    Ending,
    /// A replay's notes: what was left over, what fake-pi said.
    Note,
}

impl Lane {
    /// Every lane, in the page's order.
    pub const ALL: [Lane; 17] = [
        Lane::Call,
        Lane::Mismatch,
        Lane::Client,
        Lane::Request,
        Lane::Session,
        Lane::Text,
        Lane::Thinking,
        Lane::Tool,
        Lane::Retry,
        Lane::Result,
        Lane::Reply,
        Lane::Signal,
        Lane::Other,
        Lane::Stderr,
        Lane::Process,
        Lane::Ending,
        Lane::Note,
    ];

    /// The row's name on the page.
    pub fn label(self) -> &'static str {
        match self {
            Lane::Call => "the call",
            Lane::Mismatch => "mismatch",
            Lane::Client => "client → stdin",
            Lane::Request => "model requests",
            Lane::Session => "session",
            Lane::Text => "assistant text",
            Lane::Thinking => "thinking",
            Lane::Tool => "tool call / result",
            Lane::Retry => "retry",
            Lane::Result => "result / terminal",
            Lane::Reply => "reply to the client",
            Lane::Signal => "signals received",
            Lane::Other => "other stdout",
            Lane::Stderr => "stderr",
            Lane::Process => "spawn / reap",
            Lane::Ending => "ending",
            Lane::Note => "notes",
        }
    }
}

/// A process drawn as a bar from its start to its end.
#[derive(Debug, Clone, Serialize)]
pub struct Proc {
    /// Its name on the page (`pi`, `codex (node wrapper)`, `tool-1`, `tool-1's child`).
    pub name: String,
    /// The index of the process that started it.
    pub parent: Option<usize>,
    /// Its command line, when known (masked).
    pub argv: Option<Vec<String>>,
    /// When it starts (ms).
    pub start: f64,
    /// When it ends (ms); `None`: it is still running when the record ends.
    pub end: Option<f64>,
    /// How it ends, in words.
    pub how: String,
    /// `exited`, `killed`, `died`, `orphaned`, `running` or `reaped`: how the bar is drawn.
    pub state: &'static str,
    /// What else to know (`own session`, `ignores SIGTERM`, `holds stdout`).
    pub attrs: Vec<String>,
    /// The record lines that start and end it (a `spawn`, a `reap`).
    pub lines: Vec<usize>,
}

/// A signal drawn as an arrow at its time, with what it did (or would do).
#[derive(Debug, Clone, Serialize)]
pub struct Arrow {
    /// When (ms).
    pub t: f64,
    /// The signal's name.
    pub signal: String,
    /// Who sent it: `client` (a record), `ending` (the process died by it), `if sent` (what
    /// it would do at a hang), `received` (a replay's report).
    pub from: &'static str,
    /// The record line, when a record stands for it.
    pub line: Option<usize>,
    /// What it did, in words.
    pub what: String,
    /// The processes it touched: (index, what became of it).
    pub hits: Vec<(usize, String)>,
}
