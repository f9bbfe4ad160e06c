//! A cassette's header (its first line): which CLI and dialect it imitates, the scenario,
//! what a caller must send ([`Expect`], with the effective values of a recorded call), how
//! the process answers signals, and where the recording came from.

use std::collections::BTreeMap;
use std::fmt;

use pi_grammar::Agent;
use serde::{Deserialize, Serialize};

/// First line of a cassette. Its JSON (`header_json`) names the CLI's section for the agent
/// it imitates, and refuses unknown fields.
#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    /// Always `"pi-cassette"`.
    pub format: String,
    /// [`FORMAT_VERSION`](crate::FORMAT_VERSION), or
    /// [`FORMAT_VERSION_TWO_WAY`](crate::FORMAT_VERSION_TWO_WAY) for a two-way cassette.
    pub version: u32,
    /// Version 2 only: the two-way protocol, an agent's
    /// [`two_way`](pi_grammar::AgentSpec::two_way): `"rpc"` (pi's `--mode rpc`) or
    /// `"stream-json"` (Claude Code). Absent when it is empty.
    pub mode: Option<String>,
    /// Which CLI, at which version, produced (or is imitated by) this cassette, in which
    /// dialect: written under the key of its agent ([`Header::agent`]: `pi`, `claude`,
    /// `codex`, `gemini`).
    pub pi: PiSource,
    /// What the recording shows: its name, description and tags.
    pub scenario: Scenario,
    /// What the caller must send; fake-pi checks it before replaying. Absent when empty.
    pub expect: Expect,
    /// How the process answers signals (real pi's behaviour when absent).
    pub process: ProcessBehaviour,
    /// Placeholder -> what it replaced (for example `"<SESSION_ID>": "session uuid"`).
    /// Absent when empty.
    pub redactions: BTreeMap<String, String>,
    /// How the cassette was made (recorded, imported, by hand) and how its timing was.
    pub origin: Origin,
}

impl Header {
    /// The CLI the cassette imitates: the agent its dialect belongs to (Claude Code for
    /// `stream-json`, Codex for `exec-json`, pi for pi's). The reader checks that its
    /// section's key and its `mode` are that agent's.
    pub fn agent(&self) -> Agent {
        self.pi.dialect.agent()
    }

    /// The name of the CLI the cassette imitates, for messages: `pi`, `claude`, `codex` or
    /// `gemini`.
    pub fn agent_name(&self) -> &'static str {
        self.agent().name()
    }

    /// The header line (without its newline): the CLI's section is named for the agent
    /// (`pi`, `claude`, `codex`, `gemini`).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a header always serializes")
    }
}

/// The CLI a cassette imitates: its version and the dialect it writes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PiSource {
    /// pi's version, as `pi --version` prints it (`0.73.1`, `0.87.1`).
    pub version: String,
    /// The shape of its streamed updates on the wire.
    pub dialect: Dialect,
    /// Present when `version` is newer than every pinned release: the cassette is read with
    /// the newest pinned grammar, which it names (`pi-harness drift` tells what changed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unverified: Option<Unverified>,
}

/// The mark of a cassette of a release newer than every pinned one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Unverified {
    /// The pinned release whose command-line grammar the cassette is read with (`1.5.2`).
    pub grammar: String,
}

impl PiSource {
    /// The CLI at `version` writing `dialect` (Claude Code's for `stream-json`, Codex's for
    /// `exec-json`), marked [`Unverified`] with the grammar it borrows when the version is
    /// newer than every pinned one.
    pub fn new(version: &str, dialect: Dialect) -> PiSource {
        PiSource {
            version: version.to_string(),
            dialect,
            unverified: dialect.agent().borrowed_for(version).map(|g| Unverified {
                grammar: g.to_string(),
            }),
        }
    }

    /// pi's command-line grammar for this cassette: its pinned version's, or the one an
    /// unverified cassette borrows; `None` for another agent and for a version pi-harness
    /// does not read (the reader refuses those headers).
    pub fn grammar(&self) -> Option<pi_grammar::Grammar> {
        if self.dialect.agent() != Agent::Pi {
            return None;
        }
        pi_grammar::Grammar::pinned_or_newer(&self.version)
    }

    /// Claude Code's command line for a stream-json cassette (its release's, or the one an
    /// unverified cassette borrows).
    pub fn claude(&self) -> Option<pi_grammar::claude::Claude> {
        if self.dialect.agent() != Agent::Claude {
            return None;
        }
        pi_grammar::claude::Claude::measured_or_newer(&self.version)
    }

    /// Codex's release for an exec-json cassette (its own, or the one an unverified
    /// cassette borrows).
    pub fn codex(&self) -> Option<pi_grammar::codex::Codex> {
        if self.dialect.agent() != Agent::Codex {
            return None;
        }
        pi_grammar::codex::Codex::pinned_or_newer(&self.version)
    }

    /// Gemini CLI's release for a gemini-stream-json cassette (its own, or the one an
    /// unverified cassette borrows).
    pub fn gemini(&self) -> Option<pi_grammar::gemini::Gemini> {
        if self.dialect.agent() != Agent::Gemini {
            return None;
        }
        pi_grammar::gemini::Gemini::pinned_or_newer(&self.version)
    }

    /// The pinned release whose grammar the cassette is read with when its own release is
    /// not pinned (what [`PiSource::unverified`] names); `None` for a pinned release, also
    /// when its header still carries the mark of the days before it was pinned.
    pub fn borrowed(&self) -> Option<&'static str> {
        self.dialect.agent().borrowed_for(&self.version)
    }

    /// The warning an unverified cassette gets, one line: which release, which grammar it
    /// borrowed, what to run. `None` for a pinned release.
    pub fn unverified_warning(&self) -> Option<String> {
        self.dialect.agent().unverified_warning(&self.version)
    }
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
    /// Codex CLI's `exec --json` (a version 1 cassette naming `codex`).
    #[serde(rename = "exec-json")]
    ExecJson,
    /// Gemini CLI's `--output-format stream-json` (a version 1 cassette naming `gemini`).
    #[serde(rename = "gemini-stream-json")]
    GeminiStreamJson,
}

impl Dialect {
    /// The agent that writes this dialect: Claude Code for `stream-json`, Codex for
    /// `exec-json`, Gemini CLI for `gemini-stream-json`, pi for the rest.
    pub fn agent(self) -> Agent {
        match self {
            Dialect::StreamJson => Agent::Claude,
            Dialect::ExecJson => Agent::Codex,
            Dialect::GeminiStreamJson => Agent::Gemini,
            Dialect::SnapshotDelta | Dialect::DeltaOnly | Dialect::SnapshotOnly => Agent::Pi,
        }
    }

    /// The dialect real pi of this version speaks, when known (a pinned version).
    pub fn for_pi_version(version: &str) -> Option<Dialect> {
        Some(Dialect::of_grammar(pi_grammar::Grammar::for_version(
            version,
        )?))
    }

    /// [`Dialect::for_pi_version`], or for a release newer than every pinned one the newest
    /// pinned one's (unverified: what it borrows).
    pub fn for_pi_version_or_newer(version: &str) -> Option<Dialect> {
        Some(Dialect::of_grammar(pi_grammar::Grammar::pinned_or_newer(
            version,
        )?))
    }

    fn of_grammar(grammar: pi_grammar::Grammar) -> Dialect {
        match grammar.wire_dialect() {
            pi_grammar::WireDialect::SnapshotDelta => Dialect::SnapshotDelta,
            pi_grammar::WireDialect::DeltaOnly => Dialect::DeltaOnly,
        }
    }
}

/// What a recording shows, in words.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Short identifier, usually the file stem without the version suffix (`tool_bash`).
    pub name: String,
    /// One sentence on what happens in the run.
    pub description: String,
    /// Free labels to select cassettes by (`tools`, `signals`, ...).
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
    /// What the CLI's stdin was when it was recorded; absent: a pipe (or nothing). A Claude
    /// Code host that gives a terminal gets answered at once, with a pipe the CLI reads it
    /// to its end first: fake-pi refuses the other kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdin: Option<StdinKind>,
    /// Effective fields not compared for this cassette (`"tools"`, `"thinking"`, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub irrelevant: Vec<String>,
    /// Also check `flags` and `argv_messages` literally (the exact syntax of the call).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub syntax: bool,
}

impl Expect {
    /// Add `fields` to [`Expect::irrelevant`], each once, in the order given; the names
    /// added (those not already there). `record --ignore` and `cassette relax` use it.
    pub fn ignore(&mut self, fields: &[String]) -> Vec<String> {
        let mut added = Vec::new();
        for f in fields {
            if !self.irrelevant.contains(f) {
                self.irrelevant.push(f.clone());
                added.push(f.clone());
            }
        }
        added
    }

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
    /// `--mode`: `text`, `json` or `rpc`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// `--provider`: the model provider pi called.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// `--model`: the model id pi called.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// `--thinking`: the reasoning level.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<String>,
    /// `--tools`: the built-in tools enabled, in pi's order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// `--system-prompt`; `""`: none given (pi's own prompt).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// `--append-system-prompt`, each in the order given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub append_system_prompt: Option<Vec<String>>,
    /// `--extension`: the extensions loaded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Vec<String>>,
    /// `--no-extensions`: extension discovery off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_extensions: Option<bool>,
    /// `--skill`: the skills loaded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skills: Option<Vec<String>>,
    /// `--no-skills`: skill discovery off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_skills: Option<bool>,
    /// `--prompt-template`: the prompt templates loaded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_templates: Option<Vec<String>>,
    /// `--no-prompt-templates`: template discovery off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_prompt_templates: Option<bool>,
    /// `--no-context-files`: `AGENTS.md` and the like not read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_context_files: Option<bool>,
    /// `--no-mcp`: MCP servers off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_mcp: Option<bool>,
    /// Codex: the sandbox the tools ran in (`sandbox_mode`: `read-only`, `workspace-write`,
    /// `danger-full-access`), from `--sandbox`, `-c`, `config.toml` or the default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<String>,
    /// Codex: when it asked before running a tool (`approval_policy`: `untrusted`,
    /// `on-request`, `never`, ...), from the same sources. Gemini CLI: its approval mode
    /// (`default`, `auto_edit`, `yolo`, `plan`), from `--approval-mode`/`--yolo` or its
    /// settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<String>,
    /// Gemini CLI: how many times a model call is tried before it gives up
    /// (`general.maxAttempts` in its settings, or its default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_attempts: Option<u32>,
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
            sandbox: None,
            approval: None,
            max_attempts: None,
        }
    }
}

/// What a CLI's stdin was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StdinKind {
    /// A pipe, a file or `/dev/null`.
    Pipe,
    /// A terminal (a pseudo-terminal when recorded), kept open and never written.
    Terminal,
}

impl StdinKind {
    /// The kind of this process's stdin.
    pub fn of_stdin() -> StdinKind {
        if std::io::IsTerminal::is_terminal(&std::io::stdin()) {
            StdinKind::Terminal
        } else {
            StdinKind::Pipe
        }
    }

    /// How a message names it.
    pub fn describe(self) -> &'static str {
        match self {
            StdinKind::Pipe => "a pipe (or a file)",
            StdinKind::Terminal => "a terminal",
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
    /// How a message names it (`a new session (or none)`).
    pub fn describe(self) -> &'static str {
        match self {
            SessionUse::New => "a new session (or none)",
            SessionUse::Resumed => "an existing session continued",
        }
    }
}

impl Expect {
    /// True when nothing is required (the header omits `expect`).
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
    /// What SIGTERM does.
    #[serde(default = "SignalAction::pi_sigterm")]
    pub on_sigterm: SignalAction,
    /// What SIGINT does.
    #[serde(default = "SignalAction::pi_sigint")]
    pub on_sigint: SignalAction,
    /// What SIGHUP does.
    #[serde(default = "SignalAction::pi_sighup")]
    pub on_sighup: SignalAction,
}

impl ProcessBehaviour {
    /// True when every signal is answered as real pi does (the header omits `process`).
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
    CleanupExit {
        /// The exit status, 0..=255.
        code: i32,
    },
    /// Kill every tracked child's process group with SIGKILL, then die by the signal
    /// (Codex CLI's SIGTERM: its tool killed, the wrapper ending by the forwarded signal).
    CleanupDie,
    /// Kill every tracked child's own process with SIGKILL (not its group), then die by the
    /// signal. What a tracked child started lives on, orphaned (Codex CLI's SIGTERM, as
    /// measured: the tool's shell killed, the `sleep` it ran left running).
    KillChildrenDie,
    /// Exit with `code` without touching children.
    Exit {
        /// The exit status, 0..=255.
        code: i32,
    },
}

impl SignalAction {
    /// Real pi's answer to SIGTERM: kill its tools' groups, exit 143.
    pub fn pi_sigterm() -> Self {
        SignalAction::CleanupExit { code: 143 }
    }
    /// Real pi's answer to SIGINT: die by it.
    pub fn pi_sigint() -> Self {
        SignalAction::Die
    }
    /// Real pi's answer to SIGHUP: kill its tools' groups, exit 129.
    pub fn pi_sighup() -> Self {
        SignalAction::CleanupExit { code: 129 }
    }
}

/// Where a cassette came from: how it was made and how its timing was.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Origin {
    /// How the cassette was made.
    pub kind: OriginKind,
    /// Where the data came from (a sample file, a recorder command line).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Whether `dt_ms` values were measured or made up (even spacing).
    pub timing: TimingKind,
    /// Anything a reader should know about the recording.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
}

/// How a cassette was made.
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

/// Whether a cassette's delays are real.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TimingKind {
    /// Taken from the recorded run's clock.
    Measured,
    /// Made up (even spacing), as in a hand-made or untimed import.
    Synthetic,
}

impl fmt::Display for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Dialect::SnapshotDelta => "snapshot+delta",
            Dialect::DeltaOnly => "delta-only",
            Dialect::SnapshotOnly => "snapshot-only",
            Dialect::StreamJson => "stream-json",
            Dialect::ExecJson => "exec-json",
            Dialect::GeminiStreamJson => "gemini-stream-json",
        })
    }
}
