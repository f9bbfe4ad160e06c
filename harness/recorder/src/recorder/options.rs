//! What a recording is asked to do: [`RecordOptions`] (the LLM script, the CLI and its
//! arguments, a signal to send or a client script to follow, the limits), and the parsers
//! for the command line's `--at`, `--signal` and `--api` values (pure).

use std::path::PathBuf;
use std::time::Duration;

use nix::sys::signal::Signal;

use crate::llm_script::Api;

/// When to send a signal: `EVENT[+MS]`, counted from the first stdout line whose `type` is EVENT.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignalPlan {
    /// The signal sent to pi.
    pub signal: Signal,
    /// The pi event type (a stdout line's `type`) whose first line starts the count.
    pub event: String,
    /// How long after that line the signal is sent.
    pub after_ms: u64,
    /// Send it to the CLI's process group (the CLI then runs as the leader of a group of
    /// its own), as a supervisor that kills a job's group does; else to the CLI alone.
    pub to_group: bool,
}

/// Parse `--at EVENT[+MS]`.
pub fn parse_at(text: &str) -> Result<(String, u64), String> {
    let (event, ms) = match text.split_once('+') {
        Some((e, ms)) => (
            e,
            ms.trim_end_matches("ms")
                .parse::<u64>()
                .map_err(|_| format!("--at {text:?}: `{ms}` is not a number of milliseconds"))?,
        ),
        None => (text, 0),
    };
    if event.is_empty()
        || !event
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.')
    {
        return Err(format!(
            "--at {text:?}: expected EVENT[+MS] with EVENT an event type such as tool_execution_start (pi) or item.started (Codex)"
        ));
    }
    Ok((event.to_string(), ms))
}

/// Parse a signal name (`SIGINT`, `INT`, `TERM`, ...).
pub fn parse_signal(text: &str) -> Result<Signal, String> {
    let name = text.to_ascii_uppercase();
    let name = if name.starts_with("SIG") {
        name
    } else {
        format!("SIG{name}")
    };
    name.parse::<Signal>()
        .map_err(|_| format!("unknown signal {text:?} (try SIGINT, SIGTERM, SIGHUP)"))
}

/// Parse `--api` (`openai`, `anthropic`, `openai-responses`).
pub fn parse_api(text: &str) -> Result<Api, String> {
    match text {
        "openai" | "openai-completions" => Ok(Api::OpenAi),
        "anthropic" | "anthropic-messages" => Ok(Api::Anthropic),
        "openai-responses" | "responses" => Ok(Api::Responses),
        other => Err(format!(
            "unknown api {other:?} (openai, anthropic, openai-responses)"
        )),
    }
}

/// An unrecorded run of pi before the recorded one (to create a session to resume).
#[derive(Debug, Clone, Default)]
pub struct Prelude {
    /// pi's arguments for it (`{TMP}` and `{CWD}` replaced as for the recorded run).
    pub args: Vec<String>,
    /// Text written to its stdin, which is then closed; `None`: stdin is /dev/null.
    pub stdin: Option<String>,
}

/// Everything one recording needs.
#[derive(Debug, Clone)]
pub struct RecordOptions {
    /// The LLM script the scripted server plays (see [`crate::llm_script`]).
    pub script_path: PathBuf,
    /// Where to write; `.zst` is appended when the cassette is large (see
    /// [`COMPRESS_THRESHOLD`](super::COMPRESS_THRESHOLD)), unless the name already ends in
    /// `.zst` or `.gz` (then that compression, whatever the size).
    pub out: PathBuf,
    /// The `pi` executable.
    pub pi: PathBuf,
    /// pi's version; read from its `package.json` when `None`.
    pub pi_version: Option<String>,
    /// Arguments for pi; `{TMP}` and `{CWD}` are replaced by the run's temp and working dirs.
    pub pi_args: Vec<String>,
    /// Text written to pi's stdin, which is then closed; `None`: stdin is /dev/null.
    pub stdin: Option<String>,
    /// A signal to send pi at a point of its output (json mode).
    pub signal: Option<SignalPlan>,
    /// Write `settings.json` with `retry.baseDelayMs` set to this.
    pub retry_base_delay_ms: Option<u64>,
    /// Write `settings.json` with `defaultProvider`/`defaultModel` naming the scripted
    /// model (the fake one, or `model`), so pi needs no model flags (as clients that rely
    /// on settings call it).
    pub default_model_in_settings: bool,
    /// The production provider and model (`record --provider --model`) for a pi command
    /// line that names none: written to `settings.json` as `defaultProvider`/`defaultModel`,
    /// and stood in for by the server (see `stand_in`).
    pub model: Option<super::ModelName>,
    /// Header fields a replay does not compare (`expect.irrelevant`: `provider`, `model`,
    /// `thinking`, `tools`, `prompt`, `session`, `env`, ...).
    pub ignore: Vec<String>,
    /// An unrecorded run first (to create a session the recorded run resumes).
    pub prelude: Option<Prelude>,
    /// The cassette's scenario name; empty: the output file's name up to its first `.`.
    pub scenario: String,
    /// The scenario's description; empty: `recorded from pi VERSION`.
    pub description: String,
    /// The scenario's tags.
    pub tags: Vec<String>,
    /// Give up (and kill pi) after this long.
    pub timeout: Duration,
    /// Report progress (time, stdout lines, bytes) every couple of seconds on the
    /// [`Notices`](crate::Notices) given to [`record`](super::record).
    pub progress: bool,
    /// Also write the server's request log here.
    pub request_log: Option<PathBuf>,
    /// Directories to put first on PATH (node 22 for pi 0.87.1 is found on its own).
    pub path_prepend: Vec<PathBuf>,
    /// How the recording is described in `origin.source`.
    pub source: Option<String>,
    /// The wire protocol pi is configured to speak to the server.
    pub api: Api,
    /// Write the cassette even when pi asked the scripted LLM more often than the script
    /// answers (the extra requests got HTTP 500); by default that is an error.
    pub allow_exhausted: bool,
    /// Record an RPC session (`--mode rpc`) driven by this client script (see
    /// [`crate::client_script`]): a version 2 cassette.
    pub client_script: Option<PathBuf>,
    /// Which CLI `pi` is (the registry's agent): pi itself; Claude Code (stream-json, driven
    /// by the client script, against the scripted server as an Anthropic API); Codex
    /// (`codex exec --json`, one-way, against the server as a Responses API provider of a
    /// throwaway `CODEX_HOME/config.toml`); Gemini CLI (`gemini --output-format stream-json
    /// -p ...`, one-way, against the server as Google's Gemini API). Each but pi runs with a
    /// throwaway `HOME` and `TMPDIR` and nothing else from the environment but `PATH`.
    pub agent: pi_grammar::Agent,
    /// Give Claude Code a terminal on stdin (a pseudo-terminal, kept open and never
    /// written), as a bridge that runs it from its own terminal does: the CLI then answers
    /// the prompt in argv at once. The client script may only signal (none is needed).
    pub stdin_terminal: bool,
    /// Codex: the model request and stream retries its `config.toml` allows (both); `None`:
    /// Codex's defaults (4 and 5: 30 requests over about 25 s on a 5xx).
    pub retries: Option<u32>,
    /// Gemini CLI: the scenario's own settings (dotted key, JSON value:
    /// `general.maxAttempts` = 2), written into its `~/.gemini/settings.json` over the
    /// recorder's and expected of a replay.
    pub agent_settings: Vec<(String, serde_json::Value)>,
    /// Gemini CLI: the scenario's own environment variables (`GEMINI_CLI_NO_RELAUNCH=1`),
    /// given to the CLI and expected of a replay (`expect.env`).
    pub agent_env: Vec<(String, String)>,
    /// Variables whose values are secrets (`--secret-env NAME`, with the value the recorder
    /// has): given to the CLI, replaced by `<NAME>` in everything recorded, marked
    /// `never_in_argv` in the header, and a file that would still hold one is refused.
    pub secret_env: Vec<(String, String)>,
}

impl RecordOptions {
    /// Every secret of this recording, by name and value: [`RecordOptions::secret_env`], and
    /// each `agent_env` variable that one names or that the CLI's header marks secret (Gemini
    /// CLI's key): written nowhere, `origin.source` included.
    pub fn secrets(&self) -> Vec<(String, String)> {
        let mut out = self.secret_env.clone();
        for (k, v) in &self.agent_env {
            let marked =
                k == super::gemini::GEMINI_KEY_VAR || self.secret_env.iter().any(|(n, _)| n == k);
            if marked && !out.contains(&(k.clone(), v.clone())) {
                out.push((k.clone(), v.clone()));
            }
        }
        out
    }

    /// A secret too short to be told from other text is refused (it could not be kept out of
    /// the cassette reliably); so is an empty one.
    pub fn check_secrets(&self) -> Result<(), String> {
        for (name, value) in self.secrets() {
            if value.len() < pi_cassette::redact::MIN_SECRET_BYTES {
                return Err(format!(
                    "${name} is a secret of {} bytes: a secret shorter than {} bytes cannot be told from other text, so it cannot be kept out of the cassette",
                    value.len(),
                    pi_cassette::redact::MIN_SECRET_BYTES
                ));
            }
        }
        Ok(())
    }
}

impl RecordOptions {
    /// Options for recording `pi` with `pi_args` against the LLM script at `script_path`
    /// into `out`; everything else at its default (180 s timeout, OpenAI API, no signal,
    /// no client script, no progress).
    pub fn new(script_path: PathBuf, out: PathBuf, pi: PathBuf, pi_args: Vec<String>) -> Self {
        RecordOptions {
            script_path,
            out,
            pi,
            pi_version: None,
            pi_args,
            stdin: None,
            signal: None,
            retry_base_delay_ms: None,
            default_model_in_settings: false,
            model: None,
            ignore: Vec::new(),
            prelude: None,
            scenario: String::new(),
            description: String::new(),
            tags: Vec::new(),
            timeout: Duration::from_secs(180),
            progress: false,
            request_log: None,
            path_prepend: Vec::new(),
            source: None,
            allow_exhausted: false,
            api: Api::OpenAi,
            client_script: None,
            agent: pi_grammar::Agent::Pi,
            stdin_terminal: false,
            retries: None,
            agent_settings: Vec::new(),
            agent_env: Vec::new(),
            secret_env: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_and_signal_parse() {
        assert_eq!(
            parse_at("tool_execution_start+300").unwrap(),
            ("tool_execution_start".into(), 300)
        );
        assert_eq!(parse_at("agent_start").unwrap(), ("agent_start".into(), 0));
        assert_eq!(
            parse_at("item.started+200").unwrap(),
            ("item.started".into(), 200),
            "Codex's event types have a dot"
        );
        assert!(parse_at("x+y").unwrap_err().contains("not a number"));
        assert!(parse_at("+5").is_err());
        assert_eq!(parse_signal("int").unwrap(), Signal::SIGINT);
        assert_eq!(parse_signal("SIGTERM").unwrap(), Signal::SIGTERM);
        assert!(parse_signal("SIGNOPE").is_err());
    }
}
