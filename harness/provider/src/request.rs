//! What a run is asked to do ([`Request`], [`SessionRef`], [`ApiKey`]) and how the provider
//! runs pi ([`ProviderOptions`]): plain data, shared by a json-mode run and an RPC session.

use std::path::PathBuf;
use std::time::Duration;

/// What to run.
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// The agent CLI to run: pi (the default), Codex (`codex exec --json`; see
    /// [`crate::codex_argv`] for what a Codex request may ask) or Gemini CLI (`gemini
    /// --output-format stream-json`; see [`crate::gemini_argv`]).
    pub agent: pi_grammar::Agent,
    /// The agent's executable (pi, `codex` or `gemini`); the agent's name on `PATH` when
    /// absent.
    pub pi_path: Option<PathBuf>,
    /// pi's version; probed once per binary with `pi --version` when absent.
    pub pi_version: Option<String>,
    /// The prompt, delivered on stdin (never in argv: a leading `@` or `-` would be misread).
    pub prompt: String,
    /// The model provider (`--provider`); pi's default from its settings when absent.
    pub provider: Option<String>,
    /// The model (`--model`); pi's default from its settings when absent.
    pub model: Option<String>,
    /// A session to create or continue; pi's own choice when absent.
    pub session: Option<SessionRef>,
    /// `--no-session`: keep nothing on disk.
    pub no_session: bool,
    /// Thinking level, checked against the levels this pi version accepts.
    pub thinking: Option<String>,
    /// Allow-list of tools (`--tools`); pi's defaults when absent.
    pub tools: Option<Vec<String>>,
    /// Tools to disable: `--exclude-tools` on pi >= 0.87, an allow-list without them before.
    pub exclude_tools: Vec<String>,
    /// A system prompt replacing pi's (`--system-prompt`).
    pub system_prompt: Option<String>,
    /// Text appended to the system prompt, one `--append-system-prompt` each.
    pub append_system_prompt: Vec<String>,
    /// Gemini CLI's approval mode (`--approval-mode`: `default`, `auto_edit`, `yolo`,
    /// `plan`); the CLI's settings decide when absent. pi and Codex refuse it (Codex reads
    /// its approval policy from `CODEX_HOME/config.toml`).
    pub approval: Option<String>,
    /// The API key, passed only in this environment variable.
    pub api_key: Option<ApiKey>,
    /// Extra environment for pi.
    pub env: Vec<(String, String)>,
    /// pi's working directory; this process's when absent.
    pub cwd: Option<PathBuf>,
    /// End the run with `terminal.failed` (`timeout`) after this long.
    pub timeout: Option<Duration>,
}

/// A session to create or continue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRef {
    /// Session id: `--session-id ID` on pi >= 0.87; on 0.73.1 the file `DIR/ID.jsonl` via `--session`.
    pub id: String,
    /// Where pi 0.73.1 keeps the session file (required there, ignored on 0.87.1).
    pub dir: Option<PathBuf>,
    /// The caller continues an existing session: the stream starts with `session.resumed`.
    pub resume: bool,
}

/// The provider's API key and the variable it travels in (never in argv; its `Debug`
/// hides the value).
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey {
    /// The provider's variable, for example `OPENAI_API_KEY`.
    pub env_var: String,
    /// The key itself: kept out of every message and the stderr tail.
    pub value: String,
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ApiKey {{ env_var: {:?}, value: <redacted> }}",
            self.env_var
        )
    }
}

/// How the provider runs pi.
#[derive(Debug, Clone)]
pub struct ProviderOptions {
    /// A `pi-supervisor` binary to use. When absent (the default), `$PI_HARNESS_SUPERVISOR`,
    /// else the supervisor embedded in this executable (see [`crate::embedded`]): no second
    /// binary to install.
    pub supervisor: Option<PathBuf>,
    /// Time pi gets after SIGTERM before everything is SIGKILLed.
    pub grace: Duration,
    /// Time allowed for SIGKILLed processes to disappear.
    pub kill_wait: Duration,
    /// Longest stdout line kept; longer ones are skipped and reported (default 16 MiB).
    pub max_line_bytes: usize,
    /// Optional cap on all stdout bytes of a run. Keep it large on pi 0.73.1: every token
    /// re-sends the whole answer twice, so output grows quadratically (2000 deltas = 34 MB).
    pub max_output_bytes: Option<u64>,
    /// Bytes of stderr kept (the end of it).
    pub stderr_tail_bytes: usize,
    /// Set `PI_OFFLINE=1` so pi makes no start-up network calls.
    pub offline: bool,
}

impl Default for ProviderOptions {
    fn default() -> Self {
        ProviderOptions {
            supervisor: None,
            grace: Duration::from_secs(2),
            kill_wait: Duration::from_secs(5),
            max_line_bytes: 16 << 20,
            max_output_bytes: None,
            stderr_tail_bytes: 64 << 10,
            offline: true,
        }
    }
}
