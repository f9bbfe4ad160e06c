//! What a cassette means, as `show` tells it: [`Facts`], the one model that both the text and
//! `--json` print. `--json` is this model serialized (through a `serde_json::Value`, so its
//! keys come sorted); the few fields marked `#[serde(skip)]` are what only the text needs.

use std::collections::BTreeMap;
use std::path::PathBuf;

use pi_cassette::matching;
use pi_cassette::two_way::{ClientAction, ClientStep};
use pi_cassette::{Dialect, EffectiveExpect, FlagRule, Origin, Secret, SessionUse, SignalAction};
use pi_grammar::Agent;
use serde::{Serialize, Serializer};
use serde_json::{json, Value};

use super::replay::Replay;
use super::setup::Setup;

/// Everything `show` says about a cassette.
#[derive(Debug, Clone, Serialize)]
pub struct Facts {
    /// The cassette's absolute path; `None` when it came on stdin.
    #[serde(serialize_with = "display_path")]
    pub file: Option<PathBuf>,
    /// The recorded scenario.
    pub scenario: Scenario,
    /// The program the cassette imitates (pi, or Claude Code).
    pub pi: Program,
    /// Where the cassette came from and whether its timing was measured.
    pub origin: Origin,
    /// What the caller must send.
    pub expects: Expects,
    /// How the run ends.
    pub ending: Ending,
    /// How the process answers SIGTERM, SIGINT and SIGHUP.
    pub signals: Signals,
    /// The processes it starts (like pi's bash tool), in order: the first ones, within
    /// `show`'s bounds ([`super::MAX_LISTED`]).
    pub processes: Vec<Process>,
    /// How many processes it starts past those listed.
    #[serde(skip)]
    pub processes_left_out: usize,
    /// Each placeholder in the data and what it replaced.
    pub placeholders: BTreeMap<String, String>,
    /// How much the process writes and how long the run takes.
    pub output: Output,
    /// A two-way cassette's client actions, in order; `None` for a json-mode cassette
    /// (`[]` in `--json`).
    /// Listed within `show`'s bounds, like the processes.
    #[serde(serialize_with = "client_json")]
    pub client: Option<Vec<ClientStep>>,
    /// How many client actions there are past those listed.
    #[serde(skip)]
    pub client_left_out: usize,
    /// A command line that replays the cassette with fake-pi.
    pub replay: Replay,
    /// What a test world sets up for the call (the test helpers read it from `--json`).
    pub setup: Setup,
    /// The bundled cassette's name, when the cassette was named so (`codex/codex_text.cx0169`).
    pub bundled: Option<String>,
}

/// The recorded scenario: what the run is about.
#[derive(Debug, Clone, Serialize)]
pub struct Scenario {
    /// Short identifier (`tool_bash`).
    pub name: String,
    /// What happens in the run, for a person.
    pub description: String,
    /// Feature tags.
    pub tags: Vec<String>,
}

/// The program a cassette imitates.
#[derive(Debug, Clone, Serialize)]
pub struct Program {
    /// Its version, as `--version` prints it.
    pub version: String,
    /// The shape of pi's `message_update` events.
    pub dialect: Dialect,
    /// fake-pi knows this version (always, for Claude Code; a pinned or newer Codex release).
    pub replayable: bool,
    /// The program the cassette imitates: `--json`'s `agent`, `pi`, `claude` or `codex`
    /// (the name a caller runs; the test helpers read it for a cassette they cannot
    /// decompress themselves, `.zst`).
    #[serde(serialize_with = "agent_name")]
    pub agent: Agent,
}

fn agent_name<S: Serializer>(agent: &Agent, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(agent.name())
}

/// What the caller must send, by meaning, and what was recorded.
#[derive(Debug, Clone, Serialize)]
pub struct Expects {
    /// Nothing is checked: the cassette has no expectations.
    pub any: bool,
    /// The effective values the call is compared on; `None` fields are not compared
    /// (`--json` lists every field, `null` for those).
    #[serde(serialize_with = "effective_json")]
    pub effective: EffectiveExpect,
    /// Effective fields not compared for this cassette.
    pub irrelevant: Vec<String>,
    /// The effective prompt (stdin and argv messages joined as pi joins them).
    pub prompt: Option<String>,
    /// Where the recording gave the prompt: `argv`, `stdin` or `stdin+argv`; `None` when
    /// the cassette does not say.
    pub prompt_delivery: Option<&'static str>,
    /// The follow-up prompts compared, if any.
    pub follow_ups: Option<Vec<String>>,
    /// Whether the call starts a session or continues one; `None`: not compared.
    pub session: Option<SessionUse>,
    /// Environment variables that must be set (non-empty).
    pub env: Vec<String>,
    /// Values that must never appear in argv.
    #[serde(serialize_with = "secrets_json")]
    pub never_in_argv: Vec<Secret>,
    /// The recorded flags and messages are also checked literally.
    pub syntax: bool,
    /// The recorded flags: a value, present (`true`) or absent (`false`).
    pub flags: BTreeMap<String, FlagRule>,
    /// The recorded positional messages, exactly.
    pub argv_messages: Option<Vec<String>>,
    /// The recorded flags and messages as the words of a command line.
    #[serde(skip)]
    pub recorded: Vec<Word>,
}

/// One word of the recorded command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Word {
    /// A flag, `--name`.
    Flag(String),
    /// A flag's value or a message, as recorded.
    Value(String),
    /// The value of a flag recorded only as present (a path, typically).
    Unrecorded,
}

/// How the run ends, and after how long (milliseconds since the start).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Ending {
    /// The process exits by itself.
    Exit {
        /// Its exit status.
        code: i32,
        /// When.
        after_ms: f64,
    },
    /// The process dies by a signal.
    Signal {
        /// The signal's name (`SIGKILL`).
        signal: String,
        /// When.
        after_ms: f64,
    },
    /// The process stays alive and silent, stdout open, until a signal ends it.
    Hang {
        /// When it falls silent.
        after_ms: f64,
    },
}

/// How the process answers each signal a caller sends.
#[derive(Debug, Clone, Serialize)]
pub struct Signals {
    /// The answer to SIGTERM.
    #[serde(rename = "SIGTERM")]
    pub sigterm: SignalAnswer,
    /// The answer to SIGINT.
    #[serde(rename = "SIGINT")]
    pub sigint: SignalAnswer,
    /// The answer to SIGHUP.
    #[serde(rename = "SIGHUP")]
    pub sighup: SignalAnswer,
}

impl Signals {
    /// Each signal's name and answer: SIGTERM, SIGINT, SIGHUP.
    pub fn each(&self) -> [(&'static str, &SignalAnswer); 3] {
        [
            ("SIGTERM", &self.sigterm),
            ("SIGINT", &self.sigint),
            ("SIGHUP", &self.sighup),
        ]
    }
}

/// The answer to one signal.
#[derive(Debug, Clone, Serialize)]
pub struct SignalAnswer {
    /// What the process does.
    #[serde(flatten)]
    pub action: SignalAction,
    /// It is what real pi does.
    pub pi_default: bool,
}

/// A process the run starts.
#[derive(Debug, Clone, Serialize)]
pub struct Process {
    /// Its name in the cassette (`fake-pi-child <id>` shows it when `argv` is absent).
    pub id: String,
    /// When it starts, milliseconds since the run's start.
    pub at_ms: f64,
    /// The command line it shows in `ps`.
    pub argv: Option<Vec<String>>,
    /// In its own session (setsid), as pi's bash tool starts it.
    pub own_session: bool,
    /// It ignores SIGTERM.
    pub ignore_sigterm: bool,
    /// It holds fake-pi's stdout open.
    pub hold_stdout: bool,
    /// It exits by itself after this long; it lives until killed when absent.
    pub lifetime_ms: Option<u64>,
    /// A process it forks in turn.
    pub grandchild: Option<Grandchild>,
}

/// A process forked by a started process.
#[derive(Debug, Clone, Serialize)]
pub struct Grandchild {
    /// The command line it shows in `ps` (its parent's when absent).
    pub argv: Option<Vec<String>>,
    /// It escapes into its own session.
    pub own_session: bool,
    /// It ignores SIGTERM.
    pub ignore_sigterm: bool,
    /// It keeps the inherited stdout open.
    pub hold_stdout: bool,
}

/// How much the process writes and how long the run takes.
#[derive(Debug, Clone, Serialize)]
pub struct Output {
    /// Lines on stdout.
    pub stdout_lines: usize,
    /// Bytes on stdout.
    pub stdout_bytes: usize,
    /// Bytes on stderr.
    pub stderr_bytes: usize,
    /// From the start to the ending, in milliseconds.
    pub duration_ms: f64,
}

fn display_path<S: Serializer>(path: &Option<PathBuf>, s: S) -> Result<S::Ok, S::Error> {
    path.as_ref().map(|p| p.display().to_string()).serialize(s)
}

/// Every effective field but the prompts and the session, `null` when not compared.
fn effective_json<S: Serializer>(want: &EffectiveExpect, s: S) -> Result<S::Ok, S::Error> {
    let want = serde_json::to_value(want).map_err(serde::ser::Error::custom)?;
    let effective: serde_json::Map<String, Value> = matching::FIELDS
        .iter()
        .filter(|k| !["prompt", "follow_ups", "session"].contains(k))
        .map(|field| {
            (
                field.to_string(),
                want.get(*field).cloned().unwrap_or(Value::Null),
            )
        })
        .collect();
    effective.serialize(s)
}

/// `{"env": NAME}` or `{"literal_chars": N}`: a literal secret is never printed.
fn secrets_json<S: Serializer>(secrets: &[Secret], s: S) -> Result<S::Ok, S::Error> {
    let shown: Vec<Value> = secrets
        .iter()
        .map(|secret| match secret {
            Secret::Env(v) => json!({"env": v}),
            Secret::Literal(l) => json!({"literal_chars": l.chars().count()}),
        })
        .collect();
    shown.serialize(s)
}

/// `{line, after_stdout_lines, action, value}` per client action.
fn client_json<S: Serializer>(steps: &Option<Vec<ClientStep>>, s: S) -> Result<S::Ok, S::Error> {
    let shown: Vec<Value> = steps
        .iter()
        .flatten()
        .map(|step| {
            let (kind, value) = match &step.action {
                ClientAction::Line(l) => ("line", json!(l)),
                ClientAction::Raw(l) => ("raw_line", json!(l)),
                ClientAction::Close => ("close_stdin", Value::Null),
                ClientAction::Signal(sig) => ("signal", json!(sig)),
            };
            json!({"line": step.line, "after_stdout_lines": step.after_stdout_lines, "action": kind, "value": value})
        })
        .collect();
    shown.serialize(s)
}
