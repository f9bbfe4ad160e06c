//! The cassette: a recorded pi run, format v1 (see `cassettes/FORMAT.md`).
//!
//! This module owns the data model (header and timed records), reading a cassette
//! from JSONL (plain or gzip) with `file:line: field: problem` errors, and writing one
//! back out so that a person can read and diff it. It does no replay and no I/O beyond
//! reading and writing the file.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::io::{BufRead, BufReader, Read, Write};

use crate::Limits;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// The value of the header's `format` field.
pub const FORMAT_NAME: &str = "pi-cassette";
/// The format version this code reads and writes.
pub const FORMAT_VERSION: u32 = 1;

/// The two-way format (`pi --mode rpc`): version 1 plus what the client sends (see
/// `cassettes/FORMAT.md`, "Version 2").
pub const FORMAT_VERSION_TWO_WAY: u32 = 2;

/// The two-way protocols a version 2 cassette may hold (its header's `mode`): `rpc` (pi's
/// `--mode rpc`) and `stream-json` (Claude Code's `--input-format stream-json
/// --output-format stream-json`).
pub const TWO_WAY_MODES: &[&str] = &["rpc", MODE_STREAM_JSON];

/// The mode of a Claude Code stream-json cassette. Its header names the CLI under
/// `claude` instead of `pi` (same fields: `version`, `dialect` `"stream-json"`).
pub const MODE_STREAM_JSON: &str = "stream-json";

/// The Claude Code versions pi-harness imitates (recorded, with a known command line).
pub const KNOWN_CLAUDE_VERSIONS: &[&str] = &["2.1.330"];

/// A whole cassette: header plus records in replay order.
#[derive(Debug, Clone, PartialEq)]
pub struct Cassette {
    pub header: Header,
    pub records: Vec<Record>,
}

/// First line of a cassette.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Header {
    /// Always `"pi-cassette"`.
    pub format: String,
    /// [`FORMAT_VERSION`], or [`FORMAT_VERSION_TWO_WAY`] for a two-way cassette.
    pub version: u32,
    /// Version 2 only: the two-way protocol, `"rpc"` (pi's `--mode rpc`) or
    /// `"stream-json"` (Claude Code).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// Which pi produced (or is imitated by) this cassette; for a `stream-json` cassette,
    /// which Claude Code (written under the key `claude`).
    #[serde(alias = "claude")]
    pub pi: PiSource,
    pub scenario: Scenario,
    /// What the caller must send; fake-pi checks it before replaying.
    #[serde(default, skip_serializing_if = "Expect::is_empty")]
    pub expect: Expect,
    /// How the process answers signals (real pi's behaviour when absent).
    #[serde(default, skip_serializing_if = "ProcessBehaviour::is_pi_default")]
    pub process: ProcessBehaviour,
    /// Placeholder -> what it replaced (for example `"<SESSION_ID>": "session uuid"`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub redactions: BTreeMap<String, String>,
    pub origin: Origin,
}

impl Header {
    /// True for a Claude Code cassette (`mode: "stream-json"`).
    pub fn is_claude(&self) -> bool {
        self.mode.as_deref() == Some(MODE_STREAM_JSON)
    }

    /// The name of the CLI the cassette imitates, for messages: `pi` or `claude`.
    pub fn agent_name(&self) -> &'static str {
        if self.is_claude() {
            "claude"
        } else {
            "pi"
        }
    }

    /// The header line (without its newline): the CLI's section is `pi`, or `claude` for
    /// a stream-json cassette.
    pub fn to_json(&self) -> String {
        let text = serde_json::to_string(self).expect("a header always serializes");
        if self.is_claude() {
            // `format`, `version` and `mode` come first and cannot contain this text: the
            // first occurrence is the top-level key.
            text.replacen(",\"pi\":{", ",\"claude\":{", 1)
        } else {
            text
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PiSource {
    /// pi's version, as `pi --version` prints it (`0.73.1`, `0.87.1`).
    pub version: String,
    pub dialect: Dialect,
}

/// The shape of `message_update` on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Dialect {
    /// pi 0.73.1: `delta` plus two full (shallow, possibly lagging or leading) snapshots.
    #[serde(rename = "snapshot+delta")]
    SnapshotDelta,
    /// pi 0.87.1: `delta` only.
    #[serde(rename = "delta-only")]
    DeltaOnly,
    /// Older pi and pi-provider extensions: snapshots without deltas.
    #[serde(rename = "snapshot-only")]
    SnapshotOnly,
    /// Claude Code's `--output-format stream-json` (a `stream-json` cassette).
    #[serde(rename = "stream-json")]
    StreamJson,
}

impl Dialect {
    /// The dialect real pi of this version speaks, when known.
    pub fn for_pi_version(version: &str) -> Option<Dialect> {
        let grammar = pi_grammar::Grammar::for_version(version)?;
        Some(match grammar.wire_dialect() {
            pi_grammar::WireDialect::SnapshotDelta => Dialect::SnapshotDelta,
            pi_grammar::WireDialect::DeltaOnly => Dialect::DeltaOnly,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Short identifier, usually the file stem without the version suffix (`tool_bash`).
    pub name: String,
    pub description: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
}

/// What the caller must send for this cassette to replay.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// Flag -> requirement. A string: present with that value; `true`: present
    /// (a switch); `false`: absent. Keys are the long flag name without its leading
    /// dashes (`"mode"`, `"session-id"`); a short alias on the command line (`-p`)
    /// satisfies the long name (`"print"`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub flags: BTreeMap<String, FlagRule>,
    /// The effective prompt: stdin (when piped) joined with the argv messages the way pi joins them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// The positional messages on the command line, exactly (`[]` means: prompt only on stdin).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argv_messages: Option<Vec<String>>,
    /// Environment variables that must be set (non-empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
    /// Values that must never appear inside any argv element.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub never_in_argv: Vec<Secret>,
    /// What pi actually ran with (flags, then the agent dir's settings, then pi's
    /// defaults): the values a call is compared on (see [`crate::matching`]). Absent in
    /// early v1 files, where they are derived from `flags`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effective: Option<EffectiveExpect>,
    /// The prompts pi sent after the first (argv messages after the first one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub follow_ups: Option<Vec<String>>,
    /// Whether the recording started a session or continued one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<SessionUse>,
    /// Effective fields not compared for this cassette (`"tools"`, `"thinking"`, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub irrelevant: Vec<String>,
    /// Also check `flags` and `argv_messages` literally (the exact syntax of the call).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub syntax: bool,
}

impl Expect {
    /// A Claude Code cassette's options as a command line (`--print --verbose
    /// --input-format stream-json ...`; see [`pi_grammar::claude::option_argv`]).
    pub fn claude_argv(&self) -> Vec<String> {
        let mut argv = Vec::new();
        for (flag, rule) in &self.flags {
            match rule {
                FlagRule::Present(true) => argv.extend(pi_grammar::claude::option_argv(flag, None)),
                FlagRule::Present(false) => {}
                FlagRule::Value(v) => argv.extend(pi_grammar::claude::option_argv(flag, Some(v))),
            }
        }
        argv
    }
}

/// The effective values of a recorded call; `None` fields are not compared.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EffectiveExpect {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// `--system-prompt`; `""`: none given (pi's own prompt).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub append_system_prompt: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_extensions: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skills: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_skills: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_templates: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_prompt_templates: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_context_files: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_mcp: Option<bool>,
}

impl EffectiveExpect {
    /// Every field of a resolved call (prompts and the model's source aside).
    pub fn from_effective(e: &pi_grammar::Effective) -> EffectiveExpect {
        EffectiveExpect {
            mode: Some(e.mode.clone()),
            provider: e.provider.clone(),
            model: e.model.clone(),
            thinking: Some(e.thinking.clone()),
            tools: Some(e.tools.clone()),
            // "" stands for no --system-prompt (pi's own prompt).
            system_prompt: Some(e.system_prompt.clone().unwrap_or_default()),
            append_system_prompt: Some(e.append_system_prompt.clone()),
            extensions: Some(e.extensions.clone()),
            no_extensions: Some(e.no_extensions),
            skills: Some(e.skills.clone()),
            no_skills: Some(e.no_skills),
            prompt_templates: Some(e.prompt_templates.clone()),
            no_prompt_templates: Some(e.no_prompt_templates),
            no_context_files: Some(e.no_context_files),
            no_mcp: Some(e.no_mcp),
        }
    }
}

/// How a run used its session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionUse {
    /// A fresh conversation: a new session, or none (`--no-session`).
    New,
    /// An existing session was continued (`--session`, `--continue`, `--session-id` of
    /// an existing session): pi sent its history to the model.
    Resumed,
}

impl SessionUse {
    pub fn describe(self) -> &'static str {
        match self {
            SessionUse::New => "a new session (or none)",
            SessionUse::Resumed => "an existing session continued",
        }
    }
}

impl Expect {
    pub fn is_empty(&self) -> bool {
        *self == Expect::default()
    }
}

/// Requirement on one flag.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum FlagRule {
    /// `true`: the switch must be present; `false`: the flag must be absent.
    Present(bool),
    /// The flag must be present with exactly this value.
    Value(String),
}

/// A value that must not leak into argv.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Secret {
    /// The value of this environment variable at run time (the API key, typically).
    Env(String),
    /// A literal string.
    Literal(String),
}

/// How the replaying process answers signals. Defaults are real pi's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProcessBehaviour {
    #[serde(default = "SignalAction::pi_sigterm")]
    pub on_sigterm: SignalAction,
    #[serde(default = "SignalAction::pi_sigint")]
    pub on_sigint: SignalAction,
    #[serde(default = "SignalAction::pi_sighup")]
    pub on_sighup: SignalAction,
}

impl ProcessBehaviour {
    pub fn is_pi_default(&self) -> bool {
        *self == ProcessBehaviour::default()
    }
}

impl Default for ProcessBehaviour {
    fn default() -> Self {
        ProcessBehaviour {
            on_sigterm: SignalAction::pi_sigterm(),
            on_sigint: SignalAction::pi_sigint(),
            on_sighup: SignalAction::pi_sighup(),
        }
    }
}

/// One way of answering a signal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case", deny_unknown_fields)]
pub enum SignalAction {
    /// Default disposition: the process dies by the signal; spawned children are left alone.
    Die,
    /// The signal is ignored.
    Ignore,
    /// Kill every tracked child's process group with SIGKILL, then exit with `code`
    /// (pi: 143 for SIGTERM, 129 for SIGHUP). Children that escaped into their own
    /// session from a tracked child survive, as with real pi.
    CleanupExit { code: i32 },
    /// Exit with `code` without touching children.
    Exit { code: i32 },
}

impl SignalAction {
    pub fn pi_sigterm() -> Self {
        SignalAction::CleanupExit { code: 143 }
    }
    pub fn pi_sigint() -> Self {
        SignalAction::Die
    }
    pub fn pi_sighup() -> Self {
        SignalAction::CleanupExit { code: 129 }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Origin {
    pub kind: OriginKind,
    /// Where the data came from (a sample file, a recorder command line).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Whether `dt_ms` values were measured or made up (even spacing).
    pub timing: TimingKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OriginKind {
    /// Recorded from real pi by `pi-harness record`.
    Recorded,
    /// A captured real pi stdout turned into a cassette by `pi-harness cassette import`.
    Imported,
    /// Written by hand to reproduce a fault real pi shows only rarely.
    HandMade,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TimingKind {
    Measured,
    Synthetic,
}

/// One timed record: wait `dt_ms` after the previous record, then do `action`.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// Delay since the previous record (or since start), in milliseconds.
    pub dt_ms: f64,
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
    pub data: Vec<u8>,
    pub form: Form,
}

/// How a stdout/stderr payload is stored in the cassette.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// `stdout`: the line is a JSON value embedded verbatim; a newline follows unless `newline:false`.
    Json { newline: bool },
    /// `stdout_text` / `stderr`: UTF-8 text; for stdout a newline follows unless `newline:false`.
    Text { newline: bool },
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

/// Where a problem was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub file: PathBuf,
    /// 1-based line number; 0 when the whole file is concerned.
    pub line: usize,
}

/// Every way reading a cassette can fail.
#[derive(Debug, thiserror::Error)]
pub enum CassetteError {
    #[error("{path}: cannot read cassette: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}:{}: {message}", .at.file.display(), .at.line)]
    Invalid { at: Location, message: String },
}

impl CassetteError {
    fn invalid(file: &Path, line: usize, message: impl Into<String>) -> Self {
        CassetteError::Invalid {
            at: Location {
                file: file.to_path_buf(),
                line,
            },
            message: message.into(),
        }
    }
}

/// The on-disk form of one record: every action field optional, exactly one set.
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct RawRecord<'a> {
    #[serde(serialize_with = "write_ms")]
    dt_ms: Option<f64>,
    /// `"stdout": null` is the line `null`, so presence is kept apart from the value.
    #[serde(
        borrow,
        default,
        deserialize_with = "present_raw",
        skip_serializing_if = "Option::is_none"
    )]
    stdout: Option<&'a RawValue>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    stdout_text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    stdout_b64: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    newline: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    stderr: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    stderr_b64: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    exit: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    signal: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    hang: Option<bool>,
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    spawn: Option<&'a RawValue>,
    #[serde(
        borrow,
        default,
        deserialize_with = "present_raw",
        skip_serializing_if = "Option::is_none"
    )]
    stdin: Option<&'a RawValue>,
    #[serde(rename = "match", default, skip_serializing_if = "Option::is_none")]
    fields: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    stdin_text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    stdin_close: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    client_signal: Option<String>,
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    request: Option<&'a RawValue>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reap: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reply: Option<u32>,
}

/// A present field, whatever its JSON value (`null` included).
fn present_raw<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

/// Signals a cassette may name for `signal` records.
/// The longest wait a record may ask for: 10^9 ms, about 11.6 days.
pub const MAX_DT_MS: f64 = 1e9;

pub const SIGNAL_NAMES: &[&str] = &[
    "SIGHUP", "SIGINT", "SIGQUIT", "SIGABRT", "SIGKILL", "SIGSEGV", "SIGPIPE", "SIGALRM",
    "SIGTERM", "SIGUSR1", "SIGUSR2", "SIGBUS",
];

impl Cassette {
    /// Read a cassette from a file (gzip is recognised by its magic bytes, whatever the
    /// name), through the one reader every tool uses ([`CassetteReader`]).
    pub fn load(path: &Path) -> Result<Cassette, CassetteError> {
        let reader = CassetteReader::open(path)?;
        Cassette::collect(reader)
    }

    /// Parse cassette bytes (plain or gzip); `path` only names the source in errors.
    pub fn parse(path: &Path, data: &[u8]) -> Result<Cassette, CassetteError> {
        let input = crate::input::decompress(path, Box::new(data), &Limits::from_env())?;
        Cassette::collect(CassetteReader::new(path, input)?)
    }

    /// Read a cassette from a stream (plain or gzip; stdin, say); `name` only names the
    /// source in errors.
    pub fn read_from(name: &Path, raw: impl Read + Send) -> Result<Cassette, CassetteError> {
        let input = crate::input::decompress(name, Box::new(raw), &Limits::from_env())?;
        Cassette::collect(CassetteReader::new(name, input)?)
    }

    fn collect<R: BufRead>(mut reader: CassetteReader<R>) -> Result<Cassette, CassetteError> {
        let mut records = Vec::new();
        for r in reader.by_ref() {
            records.push(r?);
        }
        Ok(Cassette {
            header: reader.header,
            records,
        })
    }

    /// Write the cassette as JSONL: header line, then one line per record.
    pub fn write_to(&self, mut out: impl Write) -> std::io::Result<()> {
        out.write_all(self.header.to_json().as_bytes())?;
        out.write_all(b"\n")?;
        for record in &self.records {
            record.write_to(&mut out)?;
            out.write_all(b"\n")?;
        }
        Ok(())
    }

    /// Write the cassette to a file, gzip-compressed when the name ends in `.gz`
    /// (the form [`Cassette::load`] reads back).
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        let bytes = self.encoded(path.extension().is_some_and(|e| e == "gz"))?;
        crate::output::write(path, &bytes, &[]).map_err(std::io::Error::other)
    }

    /// The cassette's file bytes: JSONL, gzipped when `gzip`.
    pub fn encoded(&self, gzip: bool) -> std::io::Result<Vec<u8>> {
        let mut out = Vec::new();
        self.write_to(&mut out)?;
        if gzip {
            crate::output::gzip(&out)
        } else {
            Ok(out)
        }
    }

    /// Every byte the cassette writes to stderr, in order.
    pub fn stderr_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for r in &self.records {
            if let Action::Stderr(b) = &r.action {
                out.extend_from_slice(&b.data);
            }
        }
        out
    }

    /// The cassette as a string (see [`Cassette::write_to`]).
    pub fn to_jsonl(&self) -> String {
        let mut buf = Vec::new();
        self.write_to(&mut buf)
            .expect("writing to a Vec cannot fail");
        String::from_utf8(buf).expect("a cassette is written as UTF-8")
    }

    /// Every byte the cassette writes to stdout, in order.
    pub fn stdout_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for r in &self.records {
            if let Action::Stdout(b) = &r.action {
                out.extend_from_slice(&b.data);
            }
        }
        out
    }

    /// How the recorded process ends, as `(exit code, signal)`: `(Some(code), None)` for
    /// an exit, `(None, Some(name))` for a death by signal, `(None, None)` for a `hang`
    /// that a caller ends by cancelling. Feed it to `pi_wire::mapper::StreamEnd::recorded`.
    pub fn exit_status(&self) -> (Option<i32>, Option<&str>) {
        match self.ending() {
            Action::Exit(code) => (Some(*code), None),
            Action::Signal(sig) => (None, Some(sig.as_str())),
            _ => (None, None),
        }
    }

    /// How the recorded process ended.
    pub fn ending(&self) -> &Action {
        &self
            .records
            .last()
            .expect("a parsed cassette has a final record")
            .action
    }
}

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
        let form = match std::str::from_utf8(line) {
            Ok(text) if is_verbatim_json(text) => Form::Json { newline },
            Ok(_) => Form::Text { newline },
            Err(_) => Form::Base64,
        };
        let mut data = line.to_vec();
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

    pub fn new(dt_ms: f64, action: Action) -> Record {
        Record {
            dt_ms,
            action,
            reply: None,
            line: 0,
        }
    }

    fn write_to(&self, out: &mut impl Write) -> std::io::Result<()> {
        let mut raw = RawRecord {
            dt_ms: Some(self.dt_ms),
            reply: self.reply,
            ..RawRecord::default()
        };
        let b64 = base64::engine::general_purpose::STANDARD;
        let json_line;
        let spawn_json;
        let client_json;
        match &self.action {
            Action::Stdout(b) => match b.form {
                Form::Json { newline } => {
                    let body = strip_newline(&b.data, newline);
                    let text = std::str::from_utf8(body).map_err(std::io::Error::other)?;
                    json_line =
                        serde_json::from_str::<&RawValue>(text).map_err(std::io::Error::other)?;
                    raw.stdout = Some(json_line);
                    if !newline {
                        raw.newline = Some(false);
                    }
                }
                Form::Text { newline } => {
                    let body = strip_newline(&b.data, newline);
                    raw.stdout_text =
                        Some(String::from_utf8(body.to_vec()).map_err(std::io::Error::other)?);
                    if !newline {
                        raw.newline = Some(false);
                    }
                }
                Form::Base64 => raw.stdout_b64 = Some(b64.encode(&b.data)),
            },
            Action::Stderr(b) => match b.form {
                Form::Base64 => raw.stderr_b64 = Some(b64.encode(&b.data)),
                _ => {
                    raw.stderr =
                        Some(String::from_utf8(b.data.clone()).map_err(std::io::Error::other)?)
                }
            },
            Action::Exit(code) => raw.exit = Some(*code),
            Action::Signal(name) => raw.signal = Some(name.clone()),
            Action::Hang => raw.hang = Some(true),
            Action::Spawn(s) => {
                spawn_json = serde_json::value::to_raw_value(s).map_err(std::io::Error::other)?;
                raw.spawn = Some(&spawn_json);
            }
            Action::Stdin(c) => {
                client_json =
                    serde_json::from_str::<&RawValue>(&c.json).map_err(std::io::Error::other)?;
                raw.stdin = Some(client_json);
                raw.fields = c.fields.clone();
            }
            Action::StdinText(t) => raw.stdin_text = Some(t.clone()),
            Action::StdinClose => raw.stdin_close = Some(true),
            Action::ClientSignal(sig) => raw.client_signal = Some(sig.clone()),
            Action::Request(r) => {
                client_json =
                    serde_json::from_str::<&RawValue>(r).map_err(std::io::Error::other)?;
                raw.request = Some(client_json);
            }
            Action::Reap(id) => raw.reap = Some(id.clone()),
        }
        serde_json::to_writer(out, &raw).map_err(std::io::Error::other)
    }
}

/// Whole milliseconds are written without a fraction (`0`, not `0.0`) to keep diffs quiet.
fn write_ms<S: serde::Serializer>(ms: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    match ms {
        Some(v) if v.fract() == 0.0 && *v >= 0.0 && *v < 9.0e15 => s.serialize_u64(*v as u64),
        Some(v) => s.serialize_f64(*v),
        None => s.serialize_none(),
    }
}

fn strip_newline(data: &[u8], newline: bool) -> &[u8] {
    if newline {
        data.strip_suffix(b"\n").unwrap_or(data)
    } else {
        data
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

pub(crate) fn parse_header(
    path: &Path,
    lineno: usize,
    text: &str,
) -> Result<Header, CassetteError> {
    // Check the format marker first so a wrong file gets a plain answer.
    let probe: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| CassetteError::invalid(path, lineno, format!("header is not JSON: {e}")))?;
    match probe.get("format").and_then(|v| v.as_str()) {
        Some(FORMAT_NAME) => {}
        Some(other) => {
            return Err(CassetteError::invalid(
                path,
                lineno,
                format!("header field `format`: expected \"{FORMAT_NAME}\", found \"{other}\""),
            ))
        }
        None => {
            return Err(CassetteError::invalid(
                path,
                lineno,
                format!("header field `format` missing: the first line must be a cassette header with \"format\":\"{FORMAT_NAME}\" (is this raw pi output? see `pi-harness cassette import`)"),
            ))
        }
    }
    match probe.get("version").and_then(|v| v.as_u64()) {
        Some(v)
            if (v == u64::from(FORMAT_VERSION) || v == u64::from(FORMAT_VERSION_TWO_WAY))
                && probe["version"].is_u64() => {}
        Some(v) => {
            return Err(CassetteError::invalid(
                path,
                lineno,
                format!("header field `version`: this reader knows format versions {FORMAT_VERSION} and {FORMAT_VERSION_TWO_WAY}, the file says {v}"),
            ))
        }
        None => {
            let found = probe
                .get("version")
                .map_or("nothing".to_string(), |v| v.to_string());
            return Err(CassetteError::invalid(
                path,
                lineno,
                format!("header field `version`: expected the integer {FORMAT_VERSION}, found {found}"),
            ));
        }
    }
    let two_way = probe["version"] == FORMAT_VERSION_TWO_WAY;
    match (two_way, probe.get("mode")) {
        (false, None) => {}
        (true, Some(serde_json::Value::String(m))) if TWO_WAY_MODES.contains(&m.as_str()) => {}
        (false, Some(_)) => {
            return Err(CassetteError::invalid(
                path,
                lineno,
                format!("header field `mode`: only a version {FORMAT_VERSION_TWO_WAY} (two-way) cassette has one"),
            ))
        }
        (true, found) => {
            return Err(CassetteError::invalid(
                path,
                lineno,
                format!(
                    "header field `mode`: a version {FORMAT_VERSION_TWO_WAY} cassette names its two-way protocol, one of {}; found {}",
                    TWO_WAY_MODES.join(", "),
                    found.map_or("nothing".to_string(), |v| v.to_string())
                ),
            ))
        }
    }
    crate::shape::check_header(&probe, text)
        .map_err(|what| CassetteError::invalid(path, lineno, format!("header {what}")))?;
    let header: Header = serde_json::from_str(text)
        .map_err(|e| CassetteError::invalid(path, lineno, format!("header: {e}")))?;
    if header.scenario.name.is_empty() {
        return Err(CassetteError::invalid(
            path,
            lineno,
            "header field `scenario.name` is empty",
        ));
    }
    // Both name files: conform's seeded session for a resumed recording.
    if !pi_grammar::is_file_safe_session_id(&header.scenario.name) {
        return Err(CassetteError::invalid(
            path,
            lineno,
            format!(
                "header field `scenario.name`: {} is not a short identifier (1 to {} of A-Z a-z 0-9 . _ -, starting and ending with a letter or digit)",
                shown(&header.scenario.name),
                pi_grammar::MAX_SESSION_ID_BYTES
            ),
        ));
    }
    if let Some(FlagRule::Value(id)) = header.expect.flags.get("session-id") {
        if !pi_grammar::is_file_safe_session_id(id) {
            return Err(CassetteError::invalid(
                path,
                lineno,
                format!(
                    "header field `expect.flags.session-id`: {} is not a session id pi accepts (1 to {} of A-Z a-z 0-9 . _ -, starting and ending with a letter or digit)",
                    shown(id),
                    pi_grammar::MAX_SESSION_ID_BYTES
                ),
            ));
        }
    }
    let claude = header.is_claude();
    let (want, other) = if claude {
        ("claude", "pi")
    } else {
        ("pi", "claude")
    };
    if probe.get(other).is_some() || probe.get(want).is_none() {
        return Err(CassetteError::invalid(
            path,
            lineno,
            if claude {
                "header field `claude`: a stream-json cassette names the Claude Code it imitates under `claude` (not `pi`)".to_string()
            } else {
                "header field `pi`: missing (only a `mode: \"stream-json\"` cassette names a `claude` instead)".to_string()
            },
        ));
    }
    if claude != (header.pi.dialect == Dialect::StreamJson) {
        return Err(CassetteError::invalid(
            path,
            lineno,
            format!(
                "header field `{want}.dialect`: {}",
                if claude {
                    "a stream-json cassette's dialect is \"stream-json\""
                } else {
                    "\"stream-json\" is Claude Code's dialect (a `mode: \"stream-json\"` cassette)"
                }
            ),
        ));
    }
    if claude {
        if !KNOWN_CLAUDE_VERSIONS.contains(&header.pi.version.as_str()) {
            return Err(CassetteError::invalid(
                path,
                lineno,
                format!(
                    "header field `claude.version`: pi-harness knows Claude Code {}, not {:?}",
                    KNOWN_CLAUDE_VERSIONS.join(", "),
                    header.pi.version
                ),
            ));
        }
    } else if pi_grammar::Grammar::for_version(&header.pi.version).is_none() {
        return Err(CassetteError::invalid(
            path,
            lineno,
            format!(
                "header field `pi.version`: pi-harness knows pi {}, not {:?}",
                pi_grammar::KNOWN_VERSIONS.join(", "),
                header.pi.version
            ),
        ));
    }
    for (signal, action) in [
        ("on_sigterm", &header.process.on_sigterm),
        ("on_sigint", &header.process.on_sigint),
        ("on_sighup", &header.process.on_sighup),
    ] {
        if let SignalAction::Exit { code } | SignalAction::CleanupExit { code } = action {
            if !(0..=255).contains(code) {
                return Err(CassetteError::invalid(
                    path,
                    lineno,
                    format!("header field `process.{signal}.code`: exit codes are 0..=255, found {code}"),
                ));
            }
        }
    }
    Ok(header)
}

pub(crate) fn parse_record(
    path: &Path,
    lineno: usize,
    text: &str,
    version: u32,
) -> Result<Record, CassetteError> {
    parse_record_ref(path, lineno, text, version).map(RecordRef::into_owned)
}

/// Read and check one record line; a `stdout` JSON payload borrows from `text`.
pub(crate) fn parse_record_ref<'a>(
    path: &Path,
    lineno: usize,
    text: &'a str,
    version: u32,
) -> Result<RecordRef<'a>, CassetteError> {
    let bad = |msg: String| CassetteError::invalid(path, lineno, msg);
    let raw: RawRecord = serde_json::from_str(text).map_err(|e| bad(format!("record: {e}")))?;
    let dt_ms = raw
        .dt_ms
        .ok_or_else(|| bad("record field `dt_ms` missing".into()))?;
    if !dt_ms.is_finite() || dt_ms < 0.0 {
        return Err(bad(format!(
            "record field `dt_ms`: must be a non-negative number, found {dt_ms}"
        )));
    }
    if dt_ms > MAX_DT_MS {
        return Err(bad(format!(
            "record field `dt_ms`: at most {MAX_DT_MS} ms (a wait of days is a `hang`), found {dt_ms:e}"
        )));
    }
    let mut present: Vec<&str> = Vec::new();
    if raw.stdout.is_some() {
        present.push("stdout");
    }
    if raw.stdout_text.is_some() {
        present.push("stdout_text");
    }
    if raw.stdout_b64.is_some() {
        present.push("stdout_b64");
    }
    if raw.stderr.is_some() {
        present.push("stderr");
    }
    if raw.stderr_b64.is_some() {
        present.push("stderr_b64");
    }
    if raw.exit.is_some() {
        present.push("exit");
    }
    if raw.signal.is_some() {
        present.push("signal");
    }
    if raw.hang.is_some() {
        present.push("hang");
    }
    if raw.spawn.is_some() {
        present.push("spawn");
    }
    let two_way = [
        ("stdin", raw.stdin.is_some()),
        ("stdin_text", raw.stdin_text.is_some()),
        ("stdin_close", raw.stdin_close.is_some()),
        ("client_signal", raw.client_signal.is_some()),
        ("request", raw.request.is_some()),
        ("reap", raw.reap.is_some()),
    ];
    for (key, set) in two_way {
        if set {
            present.push(key);
        }
    }
    if version < FORMAT_VERSION_TWO_WAY {
        let only_two_way = two_way
            .iter()
            .map(|(k, set)| (*k, *set))
            .chain([
                ("match", raw.fields.is_some()),
                ("reply", raw.reply.is_some()),
            ])
            .find(|(_, set)| *set);
        if let Some((key, _)) = only_two_way {
            return Err(bad(format!(
                "record field `{key}`: a two-way record; only a version {FORMAT_VERSION_TWO_WAY} cassette (\"version\":2,\"mode\":\"rpc\") has them"
            )));
        }
    }
    let key = match present.as_slice() {
        [one] => *one,
        [] if version >= FORMAT_VERSION_TWO_WAY => {
            return Err(bad(
                "record has no action: expected one of stdout, stdout_text, stdout_b64, stderr, stderr_b64, exit, signal, hang, spawn, stdin, stdin_text, stdin_close, client_signal, request, reap".into(),
            ))
        }
        [] => {
            return Err(bad(
                "record has no action: expected one of stdout, stdout_text, stdout_b64, stderr, stderr_b64, exit, signal, hang, spawn".into(),
            ))
        }
        many => return Err(bad(format!("record has several actions ({}); one per line", many.join(", ")))),
    };
    if raw.newline.is_some() && !matches!(key, "stdout" | "stdout_text") {
        return Err(bad(format!(
            "record field `newline` only applies to stdout and stdout_text, not `{key}`"
        )));
    }
    if raw.fields.is_some() && key != "stdin" {
        return Err(bad(format!(
            "record field `match` only applies to stdin, not `{key}`"
        )));
    }
    if raw.reply.is_some() && key != "stdout" {
        return Err(bad(format!(
            "record field `reply` only applies to stdout (a JSON response), not `{key}`"
        )));
    }
    if raw.reply.is_some() && !raw.stdout.is_some_and(|v| v.get().starts_with('{')) {
        return Err(bad(
            "record field `reply`: the stdout line must be a JSON object (a response)".into(),
        ));
    }
    let newline = raw.newline.unwrap_or(true);
    let b64 = base64::engine::general_purpose::STANDARD;
    let decode = |field: &str, s: &str| {
        b64.decode(s)
            .map_err(|e| bad(format!("record field `{field}`: invalid base64: {e}")))
    };
    let action = match key {
        "stdout" => ActionRef::Stdout {
            body: Cow::Borrowed(raw.stdout.unwrap().get().as_bytes()),
            form: Form::Json { newline },
        },
        "stdout_text" => ActionRef::Stdout {
            body: Cow::Owned(raw.stdout_text.unwrap().into_bytes()),
            form: Form::Text { newline },
        },
        "stdout_b64" => ActionRef::Stdout {
            body: Cow::Owned(decode("stdout_b64", raw.stdout_b64.as_deref().unwrap())?),
            form: Form::Base64,
        },
        "stderr" => ActionRef::Stderr {
            body: Cow::Owned(raw.stderr.unwrap().into_bytes()),
            form: Form::Text { newline: false },
        },
        "stderr_b64" => ActionRef::Stderr {
            body: Cow::Owned(decode("stderr_b64", raw.stderr_b64.as_deref().unwrap())?),
            form: Form::Base64,
        },
        "exit" => {
            let code = raw.exit.unwrap();
            if !(0..=255).contains(&code) {
                return Err(bad(format!(
                    "record field `exit`: exit codes are 0..=255, found {code}"
                )));
            }
            ActionRef::Exit(code)
        }
        "signal" => {
            let name = raw.signal.unwrap();
            if !SIGNAL_NAMES.contains(&name.as_str()) {
                return Err(bad(format!(
                    "record field `signal`: unknown signal {name:?}; expected one of {}",
                    SIGNAL_NAMES.join(", ")
                )));
            }
            ActionRef::Signal(name)
        }
        "hang" => {
            if raw.hang != Some(true) {
                return Err(bad("record field `hang`: must be true".into()));
            }
            ActionRef::Hang
        }
        "spawn" => {
            let spawn = crate::shape::spawn(raw.spawn.unwrap().get()).map_err(bad)?;
            ActionRef::Spawn(spawn)
        }
        "stdin" => {
            if let Some(fields) = &raw.fields {
                if let Some(f) = fields.iter().find(|f| f.is_empty() || *f == "id") {
                    return Err(bad(format!(
                        "record field `match`: {f:?} is not a field to compare (the client's own `id` is echoed, never compared)"
                    )));
                }
            }
            ActionRef::Stdin(ClientLine {
                json: raw.stdin.unwrap().get().to_string(),
                fields: raw.fields,
            })
        }
        "stdin_text" => {
            let t = raw.stdin_text.unwrap();
            if t.contains('\n') {
                return Err(bad(
                    "record field `stdin_text`: one line, without `\\n` (each stdin record is one line the client writes)".into(),
                ));
            }
            ActionRef::StdinText(t)
        }
        "stdin_close" => {
            if raw.stdin_close != Some(true) {
                return Err(bad("record field `stdin_close`: must be true".into()));
            }
            ActionRef::StdinClose
        }
        "client_signal" => {
            let name = raw.client_signal.unwrap();
            if !CLIENT_SIGNALS.contains(&name.as_str()) {
                return Err(bad(format!(
                    "record field `client_signal`: {name:?} is not one pi answers; expected one of {} (a client's SIGKILL is the end of a cassette that ends with `hang`)",
                    CLIENT_SIGNALS.join(", ")
                )));
            }
            ActionRef::ClientSignal(name)
        }
        "request" => {
            let r = raw.request.unwrap().get();
            if !r.starts_with('{') {
                return Err(bad(
                    "record field `request`: must be a JSON object (the model request's log entry)"
                        .into(),
                ));
            }
            ActionRef::Request(r.to_string())
        }
        "reap" => {
            let id = raw.reap.unwrap();
            if id.is_empty() {
                return Err(bad("record field `reap`: the id of a `spawn` record".into()));
            }
            ActionRef::Reap(id)
        }
        _ => unreachable!("every key is matched above"),
    };
    if let ActionRef::Stdout { body, .. } = &action {
        check_session_line(body).map_err(bad)?;
    }
    Ok(RecordRef {
        dt_ms,
        action,
        reply: raw.reply,
        line: lineno,
    })
}

/// A recorder's placeholder (`<SESSION_ID>`): `<`, capitals, digits or `_`, `>`.
fn is_placeholder(s: &str) -> bool {
    s.len() > 2
        && s.starts_with('<')
        && s.ends_with('>')
        && s[1..s.len() - 1]
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
}

/// A stdout line that is pi's `session` line names the session file fake-pi writes: its
/// `id` is a placeholder or a file-safe session id ([`pi_grammar::is_file_safe_session_id`]),
/// never a path. Any other line passes untouched.
fn check_session_line(body: &[u8]) -> Result<(), String> {
    if !body.starts_with(b"{\"type\":\"session\"") {
        return Ok(());
    }
    #[derive(Deserialize)]
    struct SessionLine<'a> {
        #[serde(borrow, default)]
        id: Option<Cow<'a, str>>,
    }
    let Ok(line) = serde_json::from_slice::<SessionLine>(body.trim_ascii_end()) else {
        // Not JSON (a text record that merely starts like one): nothing names a file.
        return Ok(());
    };
    match line.id.as_deref() {
        None => Ok(()),
        Some(id) if is_placeholder(id) || pi_grammar::is_file_safe_session_id(id) => Ok(()),
        Some(id) => Err(format!(
            "record field `stdout`: the `session` line's `id` {} is not a session id (1 to {} of A-Z a-z 0-9 . _ -, starting and ending with a letter or digit); fake-pi names the session file after it",
            shown(id),
            pi_grammar::MAX_SESSION_ID_BYTES
        )),
    }
}

/// A value quoted for an error message, cut to its first 64 characters.
pub(crate) fn shown(s: &str) -> String {
    const MAX: usize = 64;
    match s.char_indices().nth(MAX) {
        None => format!("{s:?}"),
        Some((at, _)) => format!("{:?}... ({} bytes)", &s[..at], s.len()),
    }
}

/// One record as the streaming reader reads it ([`CassetteReader::next_ref`]): a `stdout`
/// JSON payload borrows the reader's line instead of being copied. [`RecordRef::into_owned`]
/// gives the [`Record`] the other readers return; both come from the same checks.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordRef<'a> {
    /// Delay since the previous record (or since start), in milliseconds.
    pub dt_ms: f64,
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
    Stdout { body: Cow<'a, [u8]>, form: Form },
    Stderr { body: Cow<'a, [u8]>, form: Form },
    Exit(i32),
    Signal(String),
    Hang,
    Spawn(Spawn),
    Stdin(ClientLine),
    StdinText(String),
    StdinClose,
    ClientSignal(String),
    Request(String),
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

impl fmt::Display for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Dialect::SnapshotDelta => "snapshot+delta",
            Dialect::DeltaOnly => "delta-only",
            Dialect::SnapshotOnly => "snapshot-only",
            Dialect::StreamJson => "stream-json",
        })
    }
}

/// Read a file's lines lazily (used by tools that scan cassettes without parsing them all).
pub fn read_lines(path: &Path) -> std::io::Result<impl Iterator<Item = std::io::Result<String>>> {
    Ok(BufReader::new(std::fs::File::open(path)?).lines())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header_line() -> &'static str {
        r#"{"format":"pi-cassette","version":1,"pi":{"version":"0.87.1","dialect":"delta-only"},"scenario":{"name":"t","description":"d"},"origin":{"kind":"hand-made","timing":"synthetic"}}"#
    }

    fn parse(body: &str) -> Result<Cassette, CassetteError> {
        Cassette::parse(
            Path::new("x.cassette.jsonl"),
            format!("{}\n{}", header_line(), body).as_bytes(),
        )
    }

    #[test]
    fn round_trips_every_form_byte_for_byte() {
        let body = concat!(
            r#"{"dt_ms":0,"stdout":{"type":"agent_start"}}"#,
            "\n",
            r#"{"dt_ms":1.5,"stdout_text":"not json\r"}"#,
            "\n",
            r#"{"dt_ms":0,"stdout_b64":"/w=="}"#,
            "\n",
            r#"{"dt_ms":0,"stderr":"boom\n"}"#,
            "\n",
            r#"{"dt_ms":0,"spawn":{"id":"tool","own_session":true,"ignore_sigterm":true,"hold_stdout":false}}"#,
            "\n",
            r#"{"dt_ms":0,"stdout":{"type":"x"},"newline":false}"#,
            "\n",
            r#"{"dt_ms":2,"exit":1}"#,
            "\n",
        );
        let c = parse(body).unwrap();
        assert_eq!(c.records.len(), 7);
        assert_eq!(
            c.stdout_bytes(),
            b"{\"type\":\"agent_start\"}\nnot json\r\n\xff{\"type\":\"x\"}".to_vec()
        );
        assert_eq!(c.to_jsonl(), format!("{}\n{}", header_line(), body));
        assert_eq!(c.records[1].line, 3);
    }

    #[test]
    fn errors_name_file_line_and_field() {
        let e = parse(r#"{"dt_ms":0,"stdout":{"a":1},"exit":0}"#)
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "x.cassette.jsonl:2: record has several actions (stdout, exit); one per line"
        );
        let e = parse(r#"{"dt_ms":-1,"exit":0}"#).unwrap_err().to_string();
        assert!(
            e.starts_with("x.cassette.jsonl:2: record field `dt_ms`"),
            "{e}"
        );
        let e = parse("{\"dt_ms\":0,\"stdout\":{}}\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains(":2: the last record must be"), "{e}");
        let e = parse("{\"dt_ms\":0,\"exit\":0}\n{\"dt_ms\":0,\"stdout\":{}}")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(":3: record after the final `exit` record on line 2"),
            "{e}"
        );
        let e = parse(r#"{"dt_ms":0,"signal":"SIGFOO"}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown signal \"SIGFOO\""), "{e}");
        let e = parse(r#"{"dt_ms":0,"exit":0,"colour":"red"}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown field `colour`"), "{e}");
    }

    #[test]
    fn header_errors_are_specific() {
        let e = Cassette::parse(Path::new("f"), b"{\"type\":\"session\"}\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("f:1: header field `format` missing"), "{e}");
        let e = Cassette::parse(
            Path::new("f"),
            b"{\"format\":\"pi-cassette\",\"version\":3}\n",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("knows format versions 1 and 2, the file says 3"),
            "{e}"
        );
    }

    #[test]
    fn a_null_line_is_stored_as_json_null_and_read_back() {
        let r = Record::stdout_line(0.0, b"null", true);
        assert_eq!(r.action.key(), "stdout");
        let c = Cassette {
            header: parse("{\"dt_ms\":0,\"exit\":0}").unwrap().header,
            records: vec![r, Record::new(0.0, Action::Exit(0))],
        };
        let text = c.to_jsonl();
        assert!(text.contains("{\"dt_ms\":0,\"stdout\":null}\n"), "{text}");
        let back = Cassette::parse(Path::new("x"), text.as_bytes()).unwrap();
        assert_eq!(back.stdout_bytes(), b"null\n");
    }

    #[test]
    fn stdout_line_picks_the_readable_form() {
        assert_eq!(
            Record::stdout_line(0.0, br#"{"a":1}"#, true).action.key(),
            "stdout"
        );
        // Leading space: not verbatim JSON, kept as text so replay is exact.
        assert_eq!(
            Record::stdout_line(0.0, br#" {"a":1}"#, true).action.key(),
            "stdout_text"
        );
        assert_eq!(
            Record::stdout_line(0.0, b"\xff\xfe", true).action.key(),
            "stdout_b64"
        );
    }
}

// ---------------------------------------------------------------------------
// Streaming reading

/// Reads a cassette one line at a time, so a tool can walk a cassette of any size without
/// holding it in memory (`pi-harness map`). It applies the rules of [`Cassette::parse`] (header
/// first, one action per record, nothing after the final record, a final record at the end) and
/// reports problems the same way (`file:line: ...`); only one line is held at a time.
pub struct CassetteReader<R> {
    path: PathBuf,
    input: R,
    header: Header,
    lineno: usize,
    buf: Vec<u8>,
    /// Key and line of the previous record, and whether it was final.
    last: Option<(&'static str, usize, bool)>,
    replies: Replies,
    done: bool,
    max_line: usize,
    /// Bytes of the input's buffer holding the last line read in place (given back to the
    /// input before the next line is read).
    in_place: usize,
}

impl CassetteReader<Box<dyn BufRead + Send>> {
    /// Open a cassette file (gzip recognised by its magic bytes), within the size limits
    /// ([`Limits::from_env`]). `-` is stdin.
    pub fn open(path: &Path) -> Result<Self, CassetteError> {
        let input = crate::input::open(path, &Limits::from_env())?;
        CassetteReader::new(path, input)
    }
}

impl<'a> CassetteReader<Box<dyn BufRead + Send + 'a>> {
    /// Read a cassette from `raw` (an open file, say), as [`CassetteReader::open`] reads a
    /// path: gzip recognised by its magic bytes, within the size limits. Only the header
    /// line is read before this returns.
    pub fn from_read(path: &Path, raw: impl Read + Send + 'a) -> Result<Self, CassetteError> {
        let input = crate::input::decompress(path, Box::new(raw), &Limits::from_env())?;
        CassetteReader::new(path, input)
    }
}

impl<R: BufRead> CassetteReader<R> {
    /// Read and check the header line; `path` only names the source in errors.
    pub fn new(path: &Path, mut input: R) -> Result<Self, CassetteError> {
        let mut buf = Vec::new();
        let max_line = Limits::from_env().max_line_bytes;
        if !read_line(&mut input, &mut buf, path, 1, max_line)? {
            return Err(CassetteError::invalid(
                path,
                1,
                "empty file: a cassette starts with a header line",
            ));
        }
        let header = parse_header(path, 1, line_text(path, 1, &buf)?)?;
        Ok(CassetteReader {
            path: path.to_path_buf(),
            input,
            header,
            lineno: 1,
            buf,
            last: None,
            replies: Replies::default(),
            done: false,
            max_line,
            in_place: 0,
        })
    }

    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The next record, its payload borrowed from the reader's line where it can be (see
    /// [`RecordRef`]); the same checks, errors and end as the [`Iterator`] (which is this,
    /// made owned). After an error or the last record, `None`.
    pub fn next_ref(&mut self) -> Option<Result<RecordRef<'_>, CassetteError>> {
        self.read_record().transpose()
    }

    fn read_record(&mut self) -> Result<Option<RecordRef<'_>>, CassetteError> {
        if self.done {
            return Ok(None);
        }
        // Until a record is returned, the reader is done (errors and the end stop it).
        self.done = true;
        // The previous record's line, when it was read in place, is given back now.
        self.input.consume(std::mem::take(&mut self.in_place));
        // A whole line in the input's buffer is read in place; one that is cut by the end of
        // the buffer (or too long) is gathered in `buf` by `read_line`.
        let whole = match self.input.fill_buf() {
            Ok(chunk) => memchr::memchr(b'\n', chunk).filter(|&i| i <= self.max_line),
            Err(_) => None,
        };
        let line: &[u8] = match whole {
            Some(i) => {
                self.in_place = i + 1;
                // The same bytes as just looked at: nothing was consumed in between.
                let chunk = self.input.fill_buf().map_err(|source| CassetteError::Io {
                    path: self.path.clone(),
                    source,
                })?;
                &chunk[..i]
            }
            None => {
                if !read_line(
                    &mut self.input,
                    &mut self.buf,
                    &self.path,
                    self.lineno + 1,
                    self.max_line,
                )? {
                    return match self.last {
                        Some((_, _, true)) => Ok(None),
                        Some((_, line, false)) => Err(CassetteError::invalid(
                            &self.path,
                            line,
                            "the last record must be `exit`, `signal` or `hang` (how the process ends)",
                        )),
                        None => Err(CassetteError::invalid(
                            &self.path,
                            1,
                            "no records after the header: a cassette must at least say how the process ends",
                        )),
                    };
                }
                &self.buf
            }
        };
        self.lineno += 1;
        let record = parse_record_ref(
            &self.path,
            self.lineno,
            line_text(&self.path, self.lineno, line)?,
            self.header.version,
        )?;
        let (spawn, reap) = match &record.action {
            ActionRef::Spawn(s) => (Some(s.id.as_str()), None),
            ActionRef::Reap(id) => (None, Some(id.as_str())),
            _ => (None, None),
        };
        self.replies
            .check(record.action.is_client_line(), spawn, reap, record.reply)
            .map_err(|what| CassetteError::invalid(&self.path, self.lineno, what))?;
        if let Some((key, line, true)) = self.last {
            return Err(CassetteError::invalid(
                &self.path,
                self.lineno,
                format!(
                    "record after the final `{key}` record on line {line} (exit, signal and hang end a cassette)"
                ),
            ));
        }
        self.last = Some((record.action.key(), record.line, record.action.is_final()));
        self.done = false;
        Ok(Some(record))
    }
}

impl<R: BufRead> Iterator for CassetteReader<R> {
    type Item = Result<Record, CassetteError>;

    /// The next record; after an error or the last record, `None`.
    fn next(&mut self) -> Option<Self::Item> {
        self.next_ref().map(|r| r.map(RecordRef::into_owned))
    }
}

/// Read one line into `buf` without its `\n`; false at the end of the input. A line longer
/// than `max` bytes is an error naming the line (nothing past the cap is kept).
fn read_line(
    input: &mut impl BufRead,
    buf: &mut Vec<u8>,
    path: &Path,
    lineno: usize,
    max: usize,
) -> Result<bool, CassetteError> {
    buf.clear();
    let io = |source| CassetteError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut any = false;
    loop {
        let chunk = match input.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io(e)),
        };
        if chunk.is_empty() {
            return Ok(any);
        }
        any = true;
        let (take, done) = match memchr::memchr(b'\n', chunk) {
            Some(i) => (i, true),
            None => (chunk.len(), false),
        };
        if buf.len() + take > max {
            return Err(CassetteError::invalid(
                path,
                lineno,
                format!(
                    "line longer than {max} bytes (the limit; raise it with {}=BYTES)",
                    crate::input::MAX_LINE_ENV
                ),
            ));
        }
        buf.extend_from_slice(&chunk[..take]);
        input.consume(take + usize::from(done));
        if done {
            return Ok(true);
        }
    }
}

fn line_text<'a>(path: &Path, lineno: usize, line: &'a [u8]) -> Result<&'a str, CassetteError> {
    if lineno == 1 && line.starts_with(b"\xEF\xBB\xBF") {
        return Err(CassetteError::invalid(
            path,
            lineno,
            "starts with a byte order mark (a cassette is plain UTF-8 JSON lines)",
        ));
    }
    if line.ends_with(b"\r") {
        return Err(CassetteError::invalid(
            path,
            lineno,
            "line ends with \\r (CRLF line endings): a cassette ends lines with \\n only",
        ));
    }
    if line.is_empty() {
        return Err(CassetteError::invalid(
            path,
            lineno,
            "empty line (every line is one JSON object)",
        ));
    }
    std::str::from_utf8(line).map_err(|e| {
        CassetteError::invalid(
            path,
            lineno,
            format!(
                "not UTF-8 at byte {} (binary data belongs in a *_b64 field)",
                e.valid_up_to()
            ),
        )
    })
}

/// Parse one record line (`lineno` is 1-based; `path` only names the source in errors) of
/// a cassette of format `version`.
pub fn parse_record_line(
    path: &Path,
    lineno: usize,
    text: &str,
    version: u32,
) -> Result<Record, CassetteError> {
    parse_record(path, lineno, text, version)
}

/// The rules across lines of a two-way cassette: a `reply` names a client line that came
/// before it, a `reap` a `spawn` that came before it. Every reader applies them (the
/// streaming reader, lint).
#[derive(Debug, Default)]
pub(crate) struct Replies {
    client_lines: u32,
    spawned: std::collections::HashSet<String>,
}

impl Replies {
    /// Check one record: `client_line` (a `stdin` or `stdin_text`), the id it spawns or
    /// reaps, and its `reply`.
    pub(crate) fn check(
        &mut self,
        client_line: bool,
        spawn: Option<&str>,
        reap: Option<&str>,
        reply: Option<u32>,
    ) -> Result<(), String> {
        if client_line {
            self.client_lines += 1;
        }
        if let Some(id) = spawn {
            self.spawned.insert(id.to_string());
        }
        if let Some(id) = reap.filter(|id| !self.spawned.contains(*id)) {
            return Err(format!(
                "record field `reap`: no `spawn` with the id {id:?} before it"
            ));
        }
        match reply {
            Some(k) if k >= self.client_lines => Err(format!(
                "record field `reply`: {k} names no client line before it (client lines are counted from 0; {} came before)",
                self.client_lines
            )),
            _ => Ok(()),
        }
    }
}

/// True when `line` (one line, without its `\n`) looks like a cassette header: a JSON object
/// whose `format` is `"pi-cassette"`. Used to tell a cassette from raw pi stdout.
pub fn is_header_line(line: &[u8]) -> bool {
    #[derive(Deserialize)]
    struct Probe<'a> {
        #[serde(borrow)]
        format: Option<std::borrow::Cow<'a, str>>,
    }
    serde_json::from_slice::<Probe>(line).is_ok_and(|p| p.format.as_deref() == Some(FORMAT_NAME))
}

#[cfg(test)]
mod streaming_tests {
    use super::*;

    const HEADER: &str = r#"{"format":"pi-cassette","version":1,"pi":{"version":"0.87.1","dialect":"delta-only"},"scenario":{"name":"t","description":"d"},"origin":{"kind":"hand-made","timing":"synthetic"}}"#;

    fn both(body: &str) -> (Result<Cassette, String>, Result<Vec<Record>, String>) {
        let data = format!("{HEADER}\n{body}");
        let path = Path::new("s.cassette.jsonl");
        let whole = Cassette::parse(path, data.as_bytes()).map_err(|e| e.to_string());
        let streamed = CassetteReader::new(path, data.as_bytes())
            .map_err(|e| e.to_string())
            .and_then(|r| r.collect::<Result<Vec<_>, _>>().map_err(|e| e.to_string()));
        (whole, streamed)
    }

    #[test]
    fn agrees_with_the_whole_file_parser() {
        let cases = [
            "{\"dt_ms\":0,\"stdout\":{\"type\":\"a\"}}\n{\"dt_ms\":0,\"stderr\":\"x\"}\n{\"dt_ms\":1,\"exit\":0}\n",
            "{\"dt_ms\":0,\"stdout\":{\"type\":\"a\"}}\n{\"dt_ms\":1,\"exit\":0}",
            "{\"dt_ms\":0,\"stdout\":{}}\n",
            "{\"dt_ms\":0,\"exit\":0}\n{\"dt_ms\":0,\"stdout\":{}}\n",
            "{\"dt_ms\":0,\"stdout\":{}}\n\n{\"dt_ms\":0,\"exit\":0}\n",
            "{\"dt_ms\":0,\"stdout\":{},\"exit\":0}\n",
            "",
            "{\"dt_ms\":0,\"signal\":\"SIGKILL\"}\n",
        ];
        for body in cases {
            // Lines read in place (all in one buffer) and gathered (a 5-byte buffer): the same.
            let data = format!("{HEADER}\n{body}");
            let path = Path::new("s.cassette.jsonl");
            fn read<R: BufRead>(
                r: Result<CassetteReader<R>, CassetteError>,
            ) -> Result<Vec<Record>, String> {
                r.map_err(|e| e.to_string())
                    .and_then(|r| r.collect::<Result<Vec<_>, _>>().map_err(|e| e.to_string()))
            }
            assert_eq!(
                read(CassetteReader::new(path, data.as_bytes())),
                read(CassetteReader::new(
                    path,
                    BufReader::with_capacity(5, data.as_bytes())
                )),
                "{body:?}"
            );
            let (whole, streamed) = both(body);
            match (whole, streamed) {
                (Ok(c), Ok(recs)) => assert_eq!(c.records, recs, "{body:?}"),
                (Err(a), Err(b)) => assert_eq!(a, b, "{body:?}"),
                (a, b) => panic!("{body:?}: whole {a:?} vs streamed {b:?}"),
            }
        }
    }

    #[test]
    fn next_ref_borrows_json_lines_and_reads_as_the_iterator_does() {
        let body = concat!(
            "{\"dt_ms\":0,\"stdout\":{\"type\":\"a\"}}\n",
            "{\"dt_ms\":1,\"stdout\":[1],\"newline\":false}\n",
            "{\"dt_ms\":0,\"stdout_text\":\"t\\u0041\"}\n",
            "{\"dt_ms\":0,\"stdout_b64\":\"/w==\"}\n",
            "{\"dt_ms\":0,\"stderr\":\"e\\n\"}\n",
            "{\"dt_ms\":0,\"spawn\":{\"id\":\"tool\"}}\n",
            "{\"dt_ms\":2,\"exit\":3}\n",
        );
        let data = format!("{HEADER}\n{body}");
        let path = Path::new("s.cassette.jsonl");
        let owned: Vec<Record> = CassetteReader::new(path, data.as_bytes())
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let mut reader = CassetteReader::new(path, data.as_bytes()).unwrap();
        let mut n = 0;
        while let Some(r) = reader.next_ref() {
            let r = r.unwrap();
            if n == 0 {
                assert!(
                    matches!(&r.action, ActionRef::Stdout { body: Cow::Borrowed(b), .. } if *b == b"{\"type\":\"a\"}"),
                    "{r:?}"
                );
            }
            assert_eq!(r.into_owned(), owned[n]);
            n += 1;
        }
        assert_eq!(n, 7);
        assert!(reader.next_ref().is_none());
        // A late bad record: the records before it, then the error, then nothing.
        let bad = format!(
            "{HEADER}\n{{\"dt_ms\":0,\"stdout\":{{}}}}\n{{\"dt_ms\":0,\"exit\":0,\"x\":1}}\n"
        );
        let mut reader = CassetteReader::new(path, bad.as_bytes()).unwrap();
        assert!(reader.next_ref().unwrap().is_ok());
        let e = reader.next_ref().unwrap().unwrap_err().to_string();
        assert!(
            e.starts_with("s.cassette.jsonl:3: record: unknown field `x`"),
            "{e}"
        );
        assert!(reader.next_ref().is_none());
    }

    #[test]
    fn the_header_is_read_without_the_lines_after_it() {
        // A body line past the line limit is not read until a record is asked for.
        let huge = "x".repeat((64 << 10) * 3);
        let data = format!("{HEADER}\n{huge}\n");
        let mut reader = CassetteReader::from_read(Path::new("h"), data.as_bytes()).unwrap();
        assert_eq!(reader.header().scenario.name, "t");
        let e = reader.next_ref().unwrap().unwrap_err().to_string();
        assert!(e.starts_with("h:2: record: "), "{e}");
    }

    #[test]
    fn opens_plain_and_gzip_files() {
        let dir = tempfile::tempdir().unwrap();
        let body = format!(
            "{HEADER}\n{{\"dt_ms\":0,\"stdout\":{{\"type\":\"a\"}}}}\n{{\"dt_ms\":0,\"exit\":3}}\n"
        );
        let plain = dir.path().join("c.cassette.jsonl");
        std::fs::write(&plain, &body).unwrap();
        let gz = dir.path().join("c.cassette.jsonl.gz");
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(body.as_bytes()).unwrap();
        std::fs::write(&gz, enc.finish().unwrap()).unwrap();
        for path in [&plain, &gz] {
            let reader = CassetteReader::open(path).unwrap();
            assert_eq!(reader.header().scenario.name, "t");
            let recs: Vec<Record> = reader.collect::<Result<_, _>>().unwrap();
            assert_eq!(recs.len(), 2);
            assert_eq!(recs[1].action, Action::Exit(3));
            assert_eq!(recs[1].line, 3);
        }
        let e = CassetteReader::open(&dir.path().join("nope"))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("nope: cannot read cassette"), "{e}");
    }

    #[test]
    fn header_problems_and_probe() {
        let e = CassetteReader::new(Path::new("f"), &b""[..])
            .err()
            .unwrap()
            .to_string();
        assert_eq!(e, "f:1: empty file: a cassette starts with a header line");
        let e = CassetteReader::new(Path::new("f"), &b"{\"type\":\"session\"}\n"[..])
            .err()
            .unwrap()
            .to_string();
        assert!(e.starts_with("f:1: header field `format` missing"), "{e}");
        assert!(is_header_line(HEADER.as_bytes()));
        assert!(!is_header_line(br#"{"type":"session","format":"x"}"#));
        assert!(!is_header_line(b"not json"));
    }
}
