//! What a test world sets up so that a call means what the recording meant where the test
//! said nothing of its own: [`Setup`], `--json`'s `setup`, the one place the test helpers
//! (Python's `World` and pytest plugin, Node's `piWorld`, the Rust testkit's `World`) learn
//! it from. Read from the cassette's header and the agent's row in the registry:
//!
//! - `env`: a value for each variable the recording needed set (`expect.env`) and for the
//!   variable the CLI reads its key from (the row's `api_key_var`): a dummy key, or for a
//!   variable that makes the CLI one process (the row's process shape) the value the CLI
//!   gives it itself;
//! - `home_var` and `files`: the agent's home variable (`PI_CODING_AGENT_DIR`, `CODEX_HOME`,
//!   `GEMINI_CLI_HOME`) pointed at a fresh directory of the test's, holding the files that
//!   give the recorded values a wrapper may leave to configuration: pi's `settings.json`
//!   (`defaultProvider`, `defaultModel`, `defaultThinkingLevel`), Codex's `config.toml`
//!   (`model`, `model_provider`, ...), Gemini CLI's `.gemini/settings.json`
//!   (`general.maxAttempts`). Claude Code as recorded reads no file of its own: its key alone.
//!
//! A wrapper that passes its own flags or config is still compared exactly: flags win over
//! these files, and a value of its own that differs from the recording's is a mismatch.

use std::collections::BTreeMap;

use pi_cassette::{EffectiveExpect, Expect};
use pi_grammar::{Agent, DEFAULT_THINKING};
use serde::Serialize;

use super::replay::Replay;

/// The value a test world gives a key variable: never a real key.
pub const DUMMY_KEY: &str = "pi-harness-dummy-key";

/// What a test world gives the call (see the module docs).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Setup {
    /// Variable -> value, set unless the test sets it.
    pub env: BTreeMap<String, String>,
    /// The variable naming the agent's home, pointed at a fresh directory of the test's;
    /// `None`: the agent has none (Claude Code as recorded).
    pub home_var: Option<&'static str>,
    /// Files written into that directory, unless the test gives its own home.
    pub files: Vec<SetupFile>,
}

/// One file a test world writes into the agent's home.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SetupFile {
    /// Its path below the home directory (`config.toml`, `.gemini/settings.json`).
    pub path: String,
    /// Its content, whole.
    pub content: String,
}

/// The setup for a cassette of `agent` whose header expects `e`, whose call means `want`
/// (pi's effective values, derived where the header leaves them out), replayed by `replay`.
pub(super) fn setup(agent: Agent, e: &Expect, want: &EffectiveExpect, replay: &Replay) -> Setup {
    let spec = agent.spec();
    let mut env = BTreeMap::new();
    for var in e.env.iter().map(String::as_str).chain(spec.api_key_var) {
        env.insert(var.to_string(), value_for(agent, var).to_string());
    }
    let mut files = Vec::new();
    match agent {
        Agent::Pi => {
            if let Some(settings) = pi_settings(e, want) {
                files.push(SetupFile {
                    path: "settings.json".into(),
                    content: settings,
                });
            }
        }
        Agent::Codex => {
            if let Some(lines) = replay.codex_config.as_ref().filter(|l| !l.is_empty()) {
                files.push(SetupFile {
                    path: "config.toml".into(),
                    content: lines.iter().map(|l| format!("{l}\n")).collect(),
                });
            }
        }
        Agent::Gemini => {
            if let Some(s) = replay.gemini_settings.as_ref().filter(|s| *s != "{}") {
                files.push(SetupFile {
                    path: ".gemini/settings.json".into(),
                    content: format!("{s}\n"),
                });
            }
        }
        Agent::Claude => {}
    }
    Setup {
        env,
        home_var: spec.home_var,
        files,
    }
}

/// A variable's value: what the CLI sets it to itself when it makes the CLI one process,
/// `1` for another such variable, else a dummy key.
fn value_for(agent: Agent, var: &str) -> &'static str {
    let shape = agent.spec().process;
    match shape.parent.and_then(|p| p.child_env) {
        Some((name, value)) if name == var => value,
        _ if shape.one_process.contains(&var) => "1",
        _ => DUMMY_KEY,
    }
}

/// pi's `settings.json` giving the recorded provider, model and thinking level as defaults
/// (a wrapper that passes them as flags overrides them, as with real pi); `None` when the
/// recording had none of them.
fn pi_settings(e: &Expect, want: &EffectiveExpect) -> Option<String> {
    let mut s = serde_json::Map::new();
    let from_flag = |f: &str| e.flags.contains_key(f);
    if let Some(p) = &want.provider {
        s.insert("defaultProvider".into(), p.clone().into());
    }
    if let Some(m) = &want.model {
        s.insert("defaultModel".into(), m.clone().into());
    }
    if let Some(t) = want
        .thinking
        .as_ref()
        .filter(|t| *t != DEFAULT_THINKING && !from_flag("thinking"))
    {
        s.insert("defaultThinkingLevel".into(), t.clone().into());
    }
    (!s.is_empty()).then(|| format!("{}\n", serde_json::Value::Object(s)))
}
