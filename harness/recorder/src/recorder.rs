//! The recorder: run a real agent CLI (pi, Claude Code, Codex, Gemini CLI: the registry's
//! [`Agent`]) against the scripted LLM server and write what it did as a cassette.
//!
//! [`record`] owns one recording, step by step through its rooms:
//! - `options`: what the caller asks for ([`RecordOptions`]) and the `--at`, `--signal`,
//!   `--api` parsers;
//! - `install`: where the CLI is and which version it is (read as its row says);
//! - `sandbox`: the throwaway working directory, agent dir (`models.json`,
//!   `settings.json`), `HOME` and `TMPDIR`, the API key and marker, and the redactions
//!   that take these values out again;
//! - `process`: the CLI's command, the unrecorded prelude run, its output captured with
//!   timing, how it ended, and its leftovers killed (the recorder is a child subreaper, so
//!   orphans come back to it: a recording never leaves a process behind);
//! - json mode: `json_run` watches one run (a signal sent at a point of its output, what
//!   became of its children) and `json_cassette` turns it into a version 1 cassette (pure);
//! - two-way (RPC, Claude Code stream-json): `two_way_run` drives the CLI with a client
//!   script and `two_way_cassette` turns the timeline into a version 2 cassette (pure);
//! - `stand_in`: which provider and model the server stands in for (the caller's
//!   production names, or the fake ones), and the `models.json` that routes it (pure);
//! - `header`: the header's expectations, names and origin (pure);
//! - Codex (`codex exec --json`): `codex` holds the pure parts (the stand-in, the
//!   `config.toml`, the header's expectations, its ids) and `codex_run` the recording
//!   (sandbox, version, the run through `json_run`, the cassette);
//! - Gemini CLI (`gemini --output-format stream-json`): `gemini` holds the pure parts (the
//!   settings, the command line, the header's expectations, its ids and stamps) and
//!   `gemini_run` the recording;
//! - `write`: the cassette written (zstd when large) after checking it parses, replays
//!   the captured bytes and does not contain the API key.
//!
//! Errors are [`RecordError`]s; progress goes to the caller's [`Notices`].

use std::path::PathBuf;

use pi_cassette::{Action, Cassette};
use pi_grammar::Agent;

use crate::client_script::ClientScript;
use crate::llm_script::Script;
use crate::llm_server::{LlmServer, LoggedRequest, ServerOptions};
use crate::Notices;

mod codex;
mod codex_run;
mod error;
mod gemini;
mod gemini_run;
mod header;
mod install;
mod json_cassette;
mod json_run;
mod options;
mod process;
mod sandbox;
mod stand_in;
mod two_way_cassette;
mod two_way_run;
mod write;

pub use codex::{
    codex_expect, config_toml as codex_config_toml, parse_exec as parse_codex_exec,
    resolve_effective as resolve_codex_effective, CodexStandIn, ExecCall,
};
pub use error::RecordError;
pub use gemini::{
    gemini_expect, parse_call as parse_gemini_call, parse_setting as parse_gemini_setting,
    resolve_effective as resolve_gemini_effective, settings_json as gemini_settings_json,
    GeminiCall,
};
use header::mark_secrets;
pub use header::{expect_from_args, session_use};
pub use install::{pi_package_root, version_of};
pub use json_cassette::{behaviour_seen, build_records, event_type, spawns_for, ChildFate};
pub use options::{parse_api, parse_at, parse_signal, Prelude, RecordOptions, SignalPlan};
pub use process::{Captured, Ending};
pub use sandbox::{models_json, recording_settings};
pub use stand_in::{
    models_json_for, resolve as stand_in_for, served_providers, ModelName, StandIn, Wire,
    FAKE_MODEL, FAKE_PROVIDER,
};
pub use two_way_cassette::{rpc_transcript, Timed};

/// Environment variable carrying a per-recording marker into pi and everything it starts,
/// so leftovers can be found (and only they are killed).
pub const MARKER_VAR: &str = "PI_HARNESS_RECORDING";

/// Cassettes larger than this (uncompressed) are written zstd-compressed (`.zst`).
pub const COMPRESS_THRESHOLD: usize = 1024 * 1024;

/// What a recording produced.
#[derive(Debug, Clone)]
pub struct RecordOutcome {
    /// The file written (maybe with `.zst`).
    pub path: PathBuf,
    /// The cassette as written.
    pub cassette: Cassette,
    /// Size of the file on disk.
    pub bytes: u64,
    /// The model requests the scripted server received, in order.
    pub requests: Vec<LoggedRequest>,
    /// pi's descendants when the signal came, and whether each survived pi.
    pub children: Vec<ChildFate>,
    /// Processes left under the recorder after pi ended (all were killed).
    pub leftovers: Vec<String>,
}

/// Record one run; progress lines (when [`RecordOptions::progress`] asks for them) and
/// the LLM server's warnings go to `notices`. Becomes a child subreaper for the rest of
/// the process's life.
pub async fn record(opts: &RecordOptions, notices: &Notices) -> Result<RecordOutcome, RecordError> {
    opts.check_secrets().map_err(RecordError::Options)?;
    let script = Script::load(&opts.script_path)?;
    let capacity = script.capacity();
    let expects_no_request = script.expects_no_request();
    let client = match &opts.client_script {
        Some(p) => Some(ClientScript::load(p).map_err(RecordError::ClientScript)?),
        // A terminal on stdin: the host only waits (the prompt is in argv).
        None if opts.stdin_terminal => Some(ClientScript { steps: Vec::new() }),
        None => None,
    };
    pi_procs::become_subreaper().map_err(RecordError::Subreaper)?;
    install::check_exists(&opts.pi)?;
    let spec = opts.agent.spec();
    if client.is_some() && spec.two_way.is_none() {
        return Err(RecordError::Options(format!(
            "--agent {} records one-way runs ({} has no two-way protocol; the prompt is in argv): no client script",
            spec.name, spec.display_name
        )));
    }
    let claude = match opts.agent {
        Agent::Codex => return codex_run::record(opts, script, notices).await,
        Agent::Gemini => return gemini_run::record(opts, script, notices).await,
        Agent::Pi => false,
        Agent::Claude => true,
    };
    check_stdin_options(opts, client.as_ref())?;
    let pi_root = if claude {
        None
    } else {
        pi_package_root(&opts.pi)
    };
    let version = install::version(opts, notices)?;
    let stand_in = stand_in_of(opts, &version)?;
    let sandbox = sandbox::Sandbox::create(&opts.script_path, &script.files)?;
    let log_path = opts
        .request_log
        .clone()
        .unwrap_or_else(|| sandbox.tmp.join("requests.jsonl"));
    let server = LlmServer::start(
        script,
        ServerOptions {
            port: 0,
            log_path: Some(log_path.clone()),
            warnings: notices.clone(),
        },
    )
    .await
    .map_err(RecordError::Server)?;
    let port = server.addr().port();
    let key = format!("pih-key-{}", sandbox::random_token(24));
    sandbox.write_agent_dir(opts, &stand_in, &server.base_url(), &key)?;
    let claude_env = claude.then(|| {
        let base_url = server.base_url().trim_end_matches("/v1").to_string();
        (base_url, key.clone())
    });
    let env = sandbox.env(opts, pi_root.as_deref(), claude_env)?;
    if let Some(prelude) = &opts.prelude {
        let args = sandbox.substitute(&prelude.args);
        process::run_prelude(
            &opts.pi,
            &args,
            prelude.stdin.as_deref(),
            &env,
            opts.timeout,
        )
        .await
        .map_err(|e| RecordError::Prelude(Box::new(e)))?;
    }

    let args = sandbox.substitute(&opts.pi_args);
    let redactor = sandbox.redactor(&key, pi_root.as_deref(), port, &opts.secrets());
    let settings = recording_settings(&stand_in);
    let (cassette, requests, children, leftovers) = match &client {
        Some(client) => {
            let client = client.substituted(
                &sandbox.tmp.display().to_string(),
                &sandbox.work.display().to_string(),
            );
            let run = two_way_run::run(opts, &client, &args, &env).await;
            let requests = stop(server).await;
            let run = run?;
            check_exhausted(opts, &requests, capacity)?;
            let log = std::fs::read_to_string(&log_path).unwrap_or_default();
            let cassette =
                two_way_cassette::cassette(opts, &version, &args, &run, redactor, &log, &settings)?;
            (cassette, requests, Vec::new(), run.leftovers)
        }
        None => {
            let run = json_run::run(opts, &args, &env, notices).await;
            let requests = stop(server).await;
            let run = run?;
            check_exhausted(opts, &requests, capacity)?;
            if let (Some(plan), None) = (&opts.signal, &run.signalled) {
                return Err(RecordError::SignalPointMissed {
                    event: plan.event.clone(),
                    after_ms: plan.after_ms,
                });
            }
            let cassette =
                json_cassette::cassette(opts, &version, &args, &run, redactor, &settings)?;
            (cassette, requests, run.children, run.leftovers)
        }
    };
    if requests.is_empty() && !expects_no_request {
        return Err(no_request(opts, &stand_in, &cassette));
    }
    let mut cassette = cassette;
    cassette.header.expect.ignore(&opts.ignore);
    let secrets = opts.secrets();
    mark_secrets(&mut cassette.header.expect, &secrets);
    let path = write::write_checked(&cassette, &opts.out, &key, &secrets, &sandbox.tmp)?;
    let bytes = std::fs::metadata(&path)
        .map_err(RecordError::CassetteIo)?
        .len();
    drop(sandbox);
    Ok(RecordOutcome {
        path,
        cassette,
        bytes,
        requests,
        children,
        leftovers,
    })
}

/// What the server stands in for: the fake names for Claude Code (it calls the server as
/// its Anthropic API, whatever `--model` says); for pi, the production names of its flags or
/// the options (see `stand_in`). An error when they disagree, when the options name a
/// model for Claude Code, or when the server does not speak the provider's wire.
fn stand_in_of(opts: &RecordOptions, version: &str) -> Result<StandIn, RecordError> {
    if opts.agent == Agent::Claude {
        if let Some(m) = &opts.model {
            return Err(RecordError::Options(format!(
                "record --provider {} --model {}: Claude Code takes its model from its own command line (`-- ... --model {}`)",
                m.provider, m.id, m.id
            )));
        }
        return Ok(StandIn {
            provider: FAKE_PROVIDER.into(),
            model: FAKE_MODEL.into(),
            wire: Wire::Served(crate::llm_script::Api::Anthropic),
            in_settings: false,
        });
    }
    let stand_in = stand_in::resolve(
        version,
        &opts.pi_args,
        opts.model.as_ref(),
        opts.default_model_in_settings,
        opts.api,
    )
    .map_err(RecordError::Options)?;
    if let Wire::NotServed(apis) = &stand_in.wire {
        return Err(RecordError::NotStoodIn {
            version: version.to_string(),
            provider: stand_in.provider.clone(),
            model: stand_in.model.clone(),
            apis: apis.clone(),
        });
    }
    Ok(stand_in)
}

/// The error of a recording in which the CLI never called the model: what it said last.
fn no_request(opts: &RecordOptions, stand_in: &StandIn, cassette: &Cassette) -> RecordError {
    let name = opts.agent.display_name();
    let cli = match opts.agent {
        Agent::Claude | Agent::Gemini => name.to_string(),
        Agent::Codex | Agent::Pi => format!(
            "{name} (the server stood in for provider `{}`, model `{}`)",
            stand_in.provider, stand_in.model
        ),
    };
    RecordError::NoModelRequest {
        script: opts.script_path.clone(),
        cli,
        said: last_words(cassette),
    }
}

/// What a run said about why it stopped: the last `errorMessage` of its stdout, else the
/// first line of its stderr (pi leads with the error, then its advice), else its exit
/// status; at most 200 bytes.
fn last_words(cassette: &Cassette) -> String {
    let (mut message, mut stderr, mut exit) = (None, None, None);
    for r in &cassette.records {
        match &r.action {
            Action::Stdout(b) => {
                if let Ok(v) = serde_json::from_slice::<serde_json::Value>(&b.data) {
                    message = find_error_message(&v).or(message);
                }
            }
            Action::Stderr(b) if stderr.is_none() => {
                stderr = String::from_utf8_lossy(&b.data)
                    .lines()
                    .map(str::trim)
                    .find(|l| !l.is_empty())
                    .map(str::to_string);
            }
            Action::Exit(code) => exit = Some(format!("it exited with {code}")),
            _ => {}
        }
    }
    let mut said = message
        .or(stderr)
        .or(exit)
        .unwrap_or_else(|| "it said nothing".into());
    if said.len() > 200 {
        let mut end = 200;
        while !said.is_char_boundary(end) {
            end -= 1;
        }
        said.truncate(end);
        said.push_str("...");
    }
    said
}

/// The first `errorMessage` string anywhere in a JSON value.
fn find_error_message(v: &serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::Object(map) => map
            .get("errorMessage")
            .and_then(|m| m.as_str().map(str::to_string))
            .or_else(|| map.values().find_map(find_error_message)),
        serde_json::Value::Array(items) => items.iter().find_map(find_error_message),
        _ => None,
    }
}

/// Refuse what cannot be recorded: Claude Code without a host (a client script, or a
/// terminal on stdin); a terminal on stdin for pi, or with a host that writes to it.
fn check_stdin_options(
    opts: &RecordOptions,
    client: Option<&ClientScript>,
) -> Result<(), RecordError> {
    let claude = opts.agent == Agent::Claude;
    let problem = if claude && client.is_none() {
        Some("--agent claude records a stream-json session: give --client-script (the host's side), or --stdin-terminal")
    } else if opts.stdin_terminal && !claude {
        Some("--stdin-terminal records Claude Code (--agent claude) only")
    } else if opts.stdin_terminal
        && client.is_some_and(|c| {
            c.steps
                .iter()
                .any(|s| !matches!(s.act, crate::client_script::Act::Signal(_)))
        })
    {
        Some("--stdin-terminal: the client script may only send signals (nothing writes to or closes a terminal the CLI never reads)")
    } else {
        None
    };
    match problem {
        Some(p) => Err(RecordError::Options(p.into())),
        None => Ok(()),
    }
}

/// Stop the server; returns the requests it logged.
async fn stop(server: LlmServer) -> Vec<LoggedRequest> {
    let requests = server.requests();
    server.shutdown().await;
    requests
}

/// Refuse a recording in which pi asked the script for more answers than it has.
fn check_exhausted(
    opts: &RecordOptions,
    requests: &[LoggedRequest],
    capacity: Option<usize>,
) -> Result<(), RecordError> {
    let unanswered = requests.iter().filter(|r| r.exhausted).count();
    if unanswered > 0 && !opts.allow_exhausted {
        return Err(RecordError::ScriptExhausted {
            script: opts.script_path.clone(),
            answers: capacity.unwrap_or(0),
            made: requests
                .iter()
                .filter(|r| r.turn.is_some() || r.exhausted)
                .count(),
            unanswered,
        });
    }
    Ok(())
}

/// One paragraph describing a finished recording (for the terminal).
pub fn summary(o: &RecordOutcome) -> String {
    let lines = o
        .cassette
        .records
        .iter()
        .filter(|r| matches!(r.action, Action::Stdout(_)))
        .count();
    let mut s = format!(
        "wrote {} ({} bytes): {} stdout lines, {} records, {} LLM requests, ends with `{}`",
        o.path.display(),
        o.bytes,
        lines,
        o.cassette.records.len(),
        o.requests.len(),
        o.cassette.ending().key()
    );
    if let Some(n) = &o.cassette.header.origin.notes {
        s.push_str(&format!("\nnotes: {n}"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use pi_cassette::{Bytes, Form, Record};

    fn with(actions: Vec<Action>) -> Cassette {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../cassettes/auth_401.pi73.cassette.jsonl");
        let mut c = Cassette::load(&path).unwrap();
        c.records = actions
            .into_iter()
            .map(|action| Record {
                dt_ms: 0.0,
                action,
                reply: None,
                line: 0,
            })
            .collect();
        c
    }

    fn stderr(text: &str) -> Action {
        Action::Stderr(Bytes {
            data: text.as_bytes().to_vec(),
            form: Form::Text { newline: false },
        })
    }

    #[test]
    fn last_words_name_the_error_not_the_advice() {
        // pi 0.73.1 without a key for the provider it picked: the error, then its advice.
        let c = with(vec![
            stderr("No API key found for anthropic.\n\nUse /login ... See:\n  <PI_ROOT>/docs/models.md\n"),
            Action::Exit(1),
        ]);
        assert_eq!(last_words(&c), "No API key found for anthropic.");
        let line = br#"{"type":"message_end","message":{"stopReason":"error","errorMessage":"No API key found for openai."}}"#;
        let c = with(vec![
            Action::Stdout(Bytes {
                data: [&line[..], b"\n"].concat(),
                form: Form::Json { newline: true },
            }),
            stderr("warning: something else\n"),
            Action::Exit(0),
        ]);
        assert_eq!(last_words(&c), "No API key found for openai.");
        assert_eq!(last_words(&with(vec![Action::Exit(3)])), "it exited with 3");
        let long = "x".repeat(300);
        assert_eq!(last_words(&with(vec![stderr(&long)])).len(), 203);
    }
}
