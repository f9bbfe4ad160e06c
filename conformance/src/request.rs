//! The request document (version 1): what an implementation is asked to run for one case,
//! as `conformance/README.md` specifies it; the placeholders of a case's template filled in
//! for one run ([`instantiate`]); and the reference provider's request it stands for
//! ([`to_provider_request`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use pi_provider::{Request, SessionRef};

/// Version of the request document.
pub const REQUEST_VERSION: u32 = 1;

/// The request document, version 1: what an implementation is asked to run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestDoc {
    /// The document's version: [`REQUEST_VERSION`]; an implementation refuses others.
    pub version: u32,
    /// The case name (the cassette's path under `cassettes/` without `.cassette.jsonl[.zst|.gz]`).
    pub case: String,
    /// The prompt; give it to pi on stdin (or as a message argument).
    pub prompt: String,
    /// The pi the case runs (`pi` on `PATH`).
    pub pi: PiDoc,
    /// `--provider`.
    #[serde(default)]
    pub provider: Option<String>,
    /// `--model`.
    #[serde(default)]
    pub model: Option<String>,
    /// `--no-session`.
    #[serde(default)]
    pub no_session: bool,
    /// A session to continue.
    #[serde(default)]
    pub session: Option<SessionDoc>,
    /// `--thinking LEVEL` (absent: pi's default).
    #[serde(default)]
    pub thinking: Option<String>,
    /// `--tools a,b` (absent: pi's default set).
    #[serde(default)]
    pub tools: Option<Vec<String>>,
    /// Tools to leave out (`--exclude-tools` on pi >= 0.87, an allow-list without them before).
    #[serde(default)]
    pub exclude_tools: Vec<String>,
    /// Extra environment for pi (the run's `FAKE_PI_CASSETTE` and `FAKE_PI_SPEED` are here).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// pi's working directory.
    #[serde(default)]
    pub cwd: Option<String>,
    /// Cancel the run once no normalized message has come for this long (after the first
    /// one); the case then expects `terminal.cancelled`.
    #[serde(default)]
    pub cancel_after_idle_ms: Option<u64>,
    /// An RPC case (`pi --mode rpc`): what the client does, in order. Absent for a
    /// json-mode case.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rpc: Option<Vec<RpcStep>>,
    /// A Claude Code case: `"claude"`; a Codex case: `"codex"`; a Gemini CLI case:
    /// `"gemini"`; absent for pi. The CLI is `claude` (`codex`, `gemini`) on PATH, run with
    /// `argv`; Claude Code's driven by the `rpc` steps (stream-json lines instead of pi's
    /// commands), Codex's and Gemini CLI's given the prompt in `argv`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// A Claude Code, Codex or Gemini CLI case's command line (the recording's options, then
    /// `--` and the prompt when the recording had it in argv; a Codex case's ends in `-`
    /// instead when the prompt came on stdin: write `prompt` there; a Gemini CLI case's ends
    /// in `--prompt` and the prompt).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argv: Option<Vec<String>>,
    /// `"terminal"`: give the CLI a terminal on stdin (a pseudo-terminal, kept open and never
    /// written), as the recording's host did; absent: a pipe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdin: Option<String>,
    /// A Gemini CLI case: the approval mode the recording ran with (`--approval-mode`:
    /// `yolo`, `auto_edit`, `plan`); absent: the CLI's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<String>,
}

impl RequestDoc {
    /// The agent the case runs: the registered agent `agent` names (pi when absent); an
    /// error naming the registered ones otherwise.
    pub fn agent(&self) -> Result<pi_grammar::Agent, String> {
        match self.agent.as_deref() {
            None => Ok(pi_grammar::Agent::default()),
            Some(name) => pi_grammar::Agent::from_name(name).ok_or_else(|| {
                format!(
                    "request document field `agent`: {name:?} is not an agent pi-harness knows ({})",
                    pi_grammar::Agent::names()
                )
            }),
        }
    }
}

/// One client action of an RPC case: once pi has written `after_stdout_lines` lines on
/// stdout (responses included, counted from its start), do exactly one of: send the
/// command `send` (add your own `id` if you like: fake-pi ignores ids), write `send_raw` as
/// it is, close stdin, or send pi `signal`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RpcStep {
    /// Lines pi must have written on stdout (counted from its start) before this step.
    pub after_stdout_lines: u64,
    /// A command to send, as one JSON line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send: Option<Value>,
    /// A line to write as it is (not necessarily JSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_raw: Option<String>,
    /// `true`: close pi's stdin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub close_stdin: Option<bool>,
    /// A signal to send pi, by name (`SIGTERM`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<String>,
}

/// The pi a request runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PiDoc {
    /// pi's version (`0.73.1`, `0.87.1`): pick the command line for it.
    pub version: String,
}

/// The session a request runs in: `--session-id ID` on pi >= 0.87, `--session DIR/ID.jsonl`
/// before; a Codex thread to resume (`exec resume ID`, or `exec resume --last` when the id is
/// `--last`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionDoc {
    /// The session's id.
    pub id: String,
    /// Where pi 0.73.1 keeps the session file (`--session DIR/ID.jsonl`).
    #[serde(default)]
    pub dir: Option<String>,
    /// Continue an existing session: the stream starts with `session.resumed`.
    #[serde(default)]
    pub resume: bool,
}

/// Replace the placeholders of a request template with this run's values.
pub fn instantiate(template: &RequestDoc, cassette: &Path, dir: &Path) -> RequestDoc {
    let fill = |s: &str| {
        s.replace("<CASSETTE>", &cassette.to_string_lossy())
            .replace("<DIR>", &dir.to_string_lossy())
    };
    let mut r = template.clone();
    r.env = r.env.iter().map(|(k, v)| (k.clone(), fill(v))).collect();
    r.cwd = r.cwd.as_deref().map(fill);
    if let Some(s) = &mut r.session {
        s.dir = s.dir.as_deref().map(fill);
    }
    r
}

/// The provider request for a request document (`pi` from `PATH`, version as given; for a
/// Codex case, `codex` from `PATH`, the provider building its own command line from the
/// prompt, provider, model and session); an error for an agent nobody registered.
pub fn to_provider_request(doc: &RequestDoc) -> Result<Request, String> {
    Ok(Request {
        agent: doc.agent()?,
        pi_path: None,
        pi_version: Some(doc.pi.version.clone()),
        prompt: doc.prompt.clone(),
        provider: doc.provider.clone(),
        model: doc.model.clone(),
        session: doc.session.as_ref().map(|s| SessionRef {
            id: s.id.clone(),
            dir: s.dir.as_ref().map(PathBuf::from),
            resume: s.resume,
        }),
        no_session: doc.no_session,
        thinking: doc.thinking.clone(),
        tools: doc.tools.clone(),
        exclude_tools: doc.exclude_tools.clone(),
        env: doc
            .env
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        cwd: doc.cwd.as_ref().map(PathBuf::from),
        approval: doc.approval.clone(),
        ..Request::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(agent: Option<&str>) -> RequestDoc {
        let mut v = serde_json::json!({
            "version": REQUEST_VERSION, "case": "c", "prompt": "hi", "pi": {"version": "0.87.1"}
        });
        if let Some(a) = agent {
            v["agent"] = a.into();
        }
        serde_json::from_value(v).unwrap()
    }

    /// A request's agent is a registered one, named; an unknown name is an error naming the
    /// registered ones (it ran pi before).
    #[test]
    fn a_request_names_a_registered_agent_or_is_refused() {
        assert_eq!(doc(None).agent(), Ok(pi_grammar::Agent::Pi));
        for a in pi_grammar::Agent::ALL {
            assert_eq!(doc(Some(a.name())).agent(), Ok(a));
            assert_eq!(to_provider_request(&doc(Some(a.name()))).unwrap().agent, a);
        }
        let e = to_provider_request(&doc(Some("opencode"))).unwrap_err();
        assert_eq!(
            e,
            format!(
                "request document field `agent`: \"opencode\" is not an agent pi-harness knows ({})",
                pi_grammar::Agent::names()
            )
        );
        let text = serde_json::to_string(&doc(Some("opencode"))).unwrap();
        let e =
            crate::conform::provider_run_main(None, text.as_bytes(), std::io::sink()).unwrap_err();
        assert!(e.contains("\"opencode\" is not an agent"), "{e}");
    }
}
