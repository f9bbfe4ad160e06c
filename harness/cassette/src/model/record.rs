//! A cassette's records: one timed action per line after the header ([`Record`],
//! [`Action`]), the payload forms that make a cassette read and written again byte for byte
//! ([`Bytes`], [`Form`]), the child processes a record may start ([`Spawn`]), and the
//! borrowed form the streaming reader lends ([`RecordRef`]).

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// One timed record: wait `dt_ms` after the previous record, then do `action`.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// Delay since the previous record (or since start), in milliseconds.
    pub dt_ms: f64,
    /// What happens then.
    pub action: Action,
    /// Version 2, on a `stdout` JSON object: it answers the client line with this index
    /// (0-based, counting `stdin` and `stdin_text` records), so its `id` is the one the
    /// client sent with that line (or absent when the client sent none).
    pub reply: Option<u32>,
    /// 1-based line in the file it was read from (0 when built in memory).
    pub line: usize,
}

/// What a record does.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Write bytes to stdout. `bytes` is exactly what is written (line terminator included).
    Stdout(Bytes),
    /// Write bytes to stderr, exactly.
    Stderr(Bytes),
    /// Exit with this status code.
    Exit(i32),
    /// Die by this signal (for example `SIGKILL`).
    Signal(String),
    /// Stay alive and silent until a signal ends the process.
    Hang,
    /// Spawn a child process like pi's bash tool does.
    Spawn(Spawn),
    /// Version 2: the client writes this JSON line on stdin.
    Stdin(ClientLine),
    /// Version 2: the client writes this line on stdin, compared byte for byte (a line
    /// that is not one JSON value: a malformed command, an empty line).
    StdinText(String),
    /// Version 2: the client closes stdin.
    StdinClose,
    /// Version 2: the client sends this signal (`SIGTERM`, `SIGINT`, `SIGHUP`).
    ClientSignal(String),
    /// Version 2: what the model was sent in its next request (the scripted server's log
    /// entry, verbatim). Nothing is written; it is there to be asserted on.
    Request(String),
    /// Version 2: the child started by the `spawn` with this id is gone now (pi's tool
    /// ended or was aborted): its process group is killed if it is still there.
    Reap(String),
}

/// A JSON line the client must send.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientLine {
    /// The line as recorded (a JSON value, verbatim).
    pub json: String,
    /// The fields compared with what a client sends (`type` always); absent: every field
    /// but `id`.
    pub fields: Option<Vec<String>>,
}

/// The signals a client record may send: the ones pi answers.
pub const CLIENT_SIGNALS: &[&str] = &["SIGTERM", "SIGINT", "SIGHUP"];

impl Action {
    /// True for records after which nothing else can happen.
    pub fn is_final(&self) -> bool {
        matches!(self, Action::Exit(_) | Action::Signal(_) | Action::Hang)
    }

    /// True for what the client does (version 2), as opposed to what pi does.
    pub fn is_client(&self) -> bool {
        matches!(
            self,
            Action::Stdin(_) | Action::StdinText(_) | Action::StdinClose | Action::ClientSignal(_)
        )
    }
}

/// Bytes for stdout/stderr with the form they are stored in, so a cassette read and
/// written again is unchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bytes {
    /// Exactly the bytes written (the newline a form adds included).
    pub data: Vec<u8>,
    /// How the bytes are stored in the cassette.
    pub form: Form,
}

/// How a stdout/stderr payload is stored in the cassette.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// `stdout`: the line is a JSON value embedded verbatim; a newline follows unless `newline:false`.
    Json {
        /// A `\n` follows the line.
        newline: bool,
    },
    /// `stdout_text` / `stderr`: UTF-8 text; for stdout a newline follows unless `newline:false`.
    Text {
        /// A `\n` follows the text (stdout only).
        newline: bool,
    },
    /// `stdout_b64` / `stderr_b64`: raw bytes, written as they are.
    Base64,
}

/// A child process, like the one pi's bash tool starts for a command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spawn {
    /// Name used in messages and in the child's argv (`fake-pi-child <id>`).
    pub id: String,
    /// Start the child in its own session (`setsid`), as pi's bash tool does. Default true.
    #[serde(default = "yes")]
    pub own_session: bool,
    /// The child ignores SIGTERM.
    #[serde(default)]
    pub ignore_sigterm: bool,
    /// The child inherits our stdout and keeps it open (a reader sees no EOF while it lives).
    #[serde(default)]
    pub hold_stdout: bool,
    /// The child itself forks a grandchild.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grandchild: Option<Grandchild>,
    /// How long the child lives; forever (until killed) when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifetime_ms: Option<u64>,
    /// The command line the child shows in `ps` (what pi's tool really ran, as recorded:
    /// `["/bin/bash","-c","sleep 300; echo done"]`); `fake-pi-child <id>` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argv: Option<Vec<String>>,
}

/// A process forked by a spawned child.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Grandchild {
    /// Escape into its own session (then pi's SIGTERM cleanup of the child's group misses it).
    #[serde(default)]
    pub own_session: bool,
    /// The grandchild ignores SIGTERM.
    #[serde(default)]
    pub ignore_sigterm: bool,
    /// Keep the inherited stdout open (only meaningful with the child's `hold_stdout`).
    #[serde(default)]
    pub hold_stdout: bool,
    /// The command line the grandchild shows in `ps` (`["sleep","300"]`); the child's when
    /// absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argv: Option<Vec<String>>,
}

fn yes() -> bool {
    true
}

/// The longest wait a record may ask for: 10^9 ms, about 11.6 days.
pub const MAX_DT_MS: f64 = 1e9;

/// Signals a cassette may name for `signal` records.
pub const SIGNAL_NAMES: &[&str] = &[
    "SIGHUP", "SIGINT", "SIGQUIT", "SIGABRT", "SIGKILL", "SIGSEGV", "SIGPIPE", "SIGALRM",
    "SIGTERM", "SIGUSR1", "SIGUSR2", "SIGBUS",
];

impl Action {
    /// The field name this action is stored under.
    pub fn key(&self) -> &'static str {
        match self {
            Action::Stdout(b) => match b.form {
                Form::Json { .. } => "stdout",
                Form::Text { .. } => "stdout_text",
                Form::Base64 => "stdout_b64",
            },
            Action::Stderr(b) => match b.form {
                Form::Base64 => "stderr_b64",
                _ => "stderr",
            },
            Action::Exit(_) => "exit",
            Action::Signal(_) => "signal",
            Action::Hang => "hang",
            Action::Spawn(_) => "spawn",
            Action::Stdin(_) => "stdin",
            Action::StdinText(_) => "stdin_text",
            Action::StdinClose => "stdin_close",
            Action::ClientSignal(_) => "client_signal",
            Action::Request(_) => "request",
            Action::Reap(_) => "reap",
        }
    }
}

impl Record {
    /// A stdout line in the most readable form that replays it byte for byte:
    /// embedded JSON when the line is exactly one compact-enough JSON value,
    /// text when it is UTF-8, base64 otherwise. `line` excludes the `\n`;
    /// `newline` says whether a `\n` followed it.
    pub fn stdout_line(dt_ms: f64, line: &[u8], newline: bool) -> Record {
        Record::stdout_owned(dt_ms, line.to_vec(), newline)
    }

    /// As [`Record::stdout_line`], taking the line (without its `\n`) instead of copying it.
    pub fn stdout_owned(dt_ms: f64, line: Vec<u8>, newline: bool) -> Record {
        let form = match std::str::from_utf8(&line) {
            Ok(text) if is_verbatim_json(text) => Form::Json { newline },
            Ok(_) => Form::Text { newline },
            Err(_) => Form::Base64,
        };
        let mut data = line;
        if newline {
            data.push(b'\n');
        }
        // Base64 stores the bytes as written, newline included.
        Record {
            dt_ms,
            action: Action::Stdout(Bytes { data, form }),
            reply: None,
            line: 0,
        }
    }

    /// A stderr chunk, as text when it is UTF-8.
    pub fn stderr_chunk(dt_ms: f64, chunk: &[u8]) -> Record {
        let form = if std::str::from_utf8(chunk).is_ok() {
            Form::Text { newline: false }
        } else {
            Form::Base64
        };
        Record {
            dt_ms,
            action: Action::Stderr(Bytes {
                data: chunk.to_vec(),
                form,
            }),
            reply: None,
            line: 0,
        }
    }

    /// A record doing `action` after `dt_ms`, not tied to a client line or a file line.
    pub fn new(dt_ms: f64, action: Action) -> Record {
        Record {
            dt_ms,
            action,
            reply: None,
            line: 0,
        }
    }
}

/// True when `text` is one JSON value with nothing around it, so it can be embedded
/// verbatim and written back identically.
pub fn is_verbatim_json(text: &str) -> bool {
    match serde_json::from_str::<&RawValue>(text) {
        Ok(raw) => raw.get() == text,
        Err(_) => false,
    }
}

/// One record as the streaming reader reads it
/// ([`CassetteReader::next_ref`](crate::CassetteReader::next_ref)): a `stdout` JSON payload
/// borrows the reader's line instead of being copied. [`RecordRef::into_owned`] gives the
/// [`Record`] the other readers return; both come from the same checks.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordRef<'a> {
    /// Delay since the previous record (or since start), in milliseconds.
    pub dt_ms: f64,
    /// What happens then.
    pub action: ActionRef<'a>,
    /// As [`Record::reply`].
    pub reply: Option<u32>,
    /// 1-based line in the file it was read from.
    pub line: usize,
}

/// What a [`RecordRef`] does; as [`Action`], with the payload of stdout and stderr as
/// `body` then, when [`Form::newline`] says so, a `\n`.
#[derive(Debug, Clone, PartialEq)]
pub enum ActionRef<'a> {
    /// As [`Action::Stdout`]: `body` is the stored payload, without the `\n` that `form`
    /// may add.
    Stdout {
        /// The payload (a `stdout` JSON line borrowed from the reader's line).
        body: Cow<'a, [u8]>,
        /// How it is stored, and whether a `\n` follows it.
        form: Form,
    },
    /// As [`Action::Stderr`].
    Stderr {
        /// The bytes written to stderr.
        body: Cow<'a, [u8]>,
        /// How they are stored.
        form: Form,
    },
    /// As [`Action::Exit`].
    Exit(i32),
    /// As [`Action::Signal`].
    Signal(String),
    /// As [`Action::Hang`].
    Hang,
    /// As [`Action::Spawn`].
    Spawn(Spawn),
    /// As [`Action::Stdin`].
    Stdin(ClientLine),
    /// As [`Action::StdinText`].
    StdinText(String),
    /// As [`Action::StdinClose`].
    StdinClose,
    /// As [`Action::ClientSignal`].
    ClientSignal(String),
    /// As [`Action::Request`].
    Request(String),
    /// As [`Action::Reap`].
    Reap(String),
}

impl Form {
    /// True when a `\n` is written after the stored payload (`stdout` and `stdout_text`
    /// unless `newline:false`).
    pub fn newline(self) -> bool {
        matches!(
            self,
            Form::Json { newline: true } | Form::Text { newline: true }
        )
    }
}

impl RecordRef<'_> {
    /// The owned record (payloads copied, the `\n` appended).
    pub fn into_owned(self) -> Record {
        let bytes = |body: Cow<'_, [u8]>, form: Form| {
            let mut data = body.into_owned();
            if form.newline() {
                data.push(b'\n');
            }
            Bytes { data, form }
        };
        let action = match self.action {
            ActionRef::Stdout { body, form } => Action::Stdout(bytes(body, form)),
            ActionRef::Stderr { body, form } => Action::Stderr(bytes(body, form)),
            ActionRef::Exit(code) => Action::Exit(code),
            ActionRef::Signal(name) => Action::Signal(name),
            ActionRef::Hang => Action::Hang,
            ActionRef::Spawn(s) => Action::Spawn(s),
            ActionRef::Stdin(c) => Action::Stdin(c),
            ActionRef::StdinText(t) => Action::StdinText(t),
            ActionRef::StdinClose => Action::StdinClose,
            ActionRef::ClientSignal(s) => Action::ClientSignal(s),
            ActionRef::Request(r) => Action::Request(r),
            ActionRef::Reap(id) => Action::Reap(id),
        };
        Record {
            dt_ms: self.dt_ms,
            action,
            reply: self.reply,
            line: self.line,
        }
    }
}

impl ActionRef<'_> {
    /// The field name this action is stored under (as [`Action::key`]).
    pub fn key(&self) -> &'static str {
        match self {
            ActionRef::Stdout { form, .. } => match form {
                Form::Json { .. } => "stdout",
                Form::Text { .. } => "stdout_text",
                Form::Base64 => "stdout_b64",
            },
            ActionRef::Stderr { form, .. } => match form {
                Form::Base64 => "stderr_b64",
                _ => "stderr",
            },
            ActionRef::Exit(_) => "exit",
            ActionRef::Signal(_) => "signal",
            ActionRef::Hang => "hang",
            ActionRef::Spawn(_) => "spawn",
            ActionRef::Stdin(_) => "stdin",
            ActionRef::StdinText(_) => "stdin_text",
            ActionRef::StdinClose => "stdin_close",
            ActionRef::ClientSignal(_) => "client_signal",
            ActionRef::Request(_) => "request",
            ActionRef::Reap(_) => "reap",
        }
    }

    /// True for records after which nothing else can happen.
    pub fn is_final(&self) -> bool {
        matches!(
            self,
            ActionRef::Exit(_) | ActionRef::Signal(_) | ActionRef::Hang
        )
    }

    /// True for a line the client writes on stdin (`stdin`, `stdin_text`): what a `reply`
    /// counts.
    pub fn is_client_line(&self) -> bool {
        matches!(self, ActionRef::Stdin(_) | ActionRef::StdinText(_))
    }
}
