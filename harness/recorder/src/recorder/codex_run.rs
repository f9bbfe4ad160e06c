//! One recording of Codex CLI (`codex exec --json`): its version (`codex --version`, read as
//! its row in the registry says), the
//! sandbox (throwaway `HOME`, `TMPDIR` and `CODEX_HOME` with the run's `config.toml`), the
//! scripted server standing in for the provider, an unrecorded prelude run in the same
//! `CODEX_HOME` (for `exec resume`), the run watched by `json_run` (a signal to the wrapper
//! or to its group), and the version 1 cassette: redacted (paths, port, key, the thread id,
//! stderr's timestamps), the tools seen at a signal as `spawn` records, the header from
//! `codex`'s pure parts.

use std::path::{Path, PathBuf};
use std::time::Duration;

use pi_cassette::redact::Redactor;
use pi_cassette::{
    Action, Cassette, Dialect, Header, Origin, OriginKind, PiSource, Scenario, TimingKind,
    FORMAT_NAME, FORMAT_VERSION,
};
use pi_grammar::Agent;

use super::codex::{self, CodexStandIn};
use super::header::{description, json_source, mark_secrets, scenario_name};
use super::json_cassette::{build_records_after, ending_shape_of, spawns_for, JsonRun};
use super::process::{self, CodexEnv, PiEnv};
use super::{json_run, sandbox, write, RecordError, RecordOptions, RecordOutcome};
use crate::llm_script::Script;
use crate::llm_server::{LlmServer, ServerOptions};
use crate::Notices;

/// The directory Codex is installed in: the parent of the `node_modules` its executable
/// (followed through links) lives in; `None` for a bare binary.
fn install_root(codex: &Path) -> Option<PathBuf> {
    let real = std::fs::canonicalize(codex).ok()?;
    real.ancestors()
        .find(|d| d.file_name().is_some_and(|n| n == "node_modules"))
        .and_then(Path::parent)
        .map(Path::to_path_buf)
}

/// Record one `codex exec` run as the options say (see [`super::record`]).
pub(crate) async fn record(
    opts: &RecordOptions,
    script: Script,
    notices: &Notices,
) -> Result<RecordOutcome, RecordError> {
    let capacity = script.capacity();
    let expects_no_request = script.expects_no_request();
    let version = super::install::version(opts, notices)?;
    let stand_in = CodexStandIn::new(
        opts.model.as_ref().map(|m| m.provider.as_str()),
        opts.model.as_ref().map(|m| m.id.as_str()),
    );
    // Read the command line before anything runs: one Codex would refuse is an error here.
    codex::parse_exec(&opts.pi_args).map_err(RecordError::Expect)?;
    let sandbox = sandbox::Sandbox::create(&opts.script_path, &script.files)?;
    let log_path = opts
        .request_log
        .clone()
        .unwrap_or_else(|| sandbox.tmp.join("requests.jsonl"));
    let server = LlmServer::start(
        script,
        ServerOptions {
            port: 0,
            log_path: Some(log_path),
            warnings: notices.clone(),
        },
    )
    .await
    .map_err(RecordError::Server)?;
    let port = server.addr().port();
    let key = format!("pih-key-{}", sandbox::random_token(24));
    // As OpenAI's own base URL, the API under `/v1`.
    let base_url = format!("{}/v1", server.base_url().trim_end_matches("/v1"));
    let config = codex::config_toml(&stand_in, &base_url, opts.retries);
    let config_path = sandbox.agent.join("config.toml");
    std::fs::write(&config_path, config).map_err(RecordError::io("writing", &config_path))?;
    let mut env = sandbox.env(opts, None, None)?;
    env.codex = Some(CodexEnv {
        key_var: stand_in.env_key.clone(),
        key: key.clone(),
        tmpdir: sandbox.tmpdir.clone(),
        own_group: opts.signal.as_ref().is_some_and(|p| p.to_group),
    });
    if let Some(prelude) = &opts.prelude {
        run_prelude(opts, &sandbox.substitute(&prelude.args), prelude, &env).await?;
    }
    let args = sandbox.substitute(&opts.pi_args);
    let root = install_root(&opts.pi);
    let redactor = sandbox.redactor_for(Agent::Codex, &key, &opts.secrets(), port, root.as_deref());
    let run = json_run::run(opts, &args, &env, notices).await;
    let requests = super::stop(server).await;
    let run = run?;
    super::check_exhausted(opts, &requests, capacity)?;
    if let (Some(plan), None) = (&opts.signal, &run.signalled) {
        return Err(RecordError::SignalPointMissed {
            event: plan.event.clone(),
            after_ms: plan.after_ms,
        });
    }
    let mut cassette = cassette(opts, &version, &args, &run, redactor, &stand_in)?;
    if requests.is_empty() && !expects_no_request {
        return Err(RecordError::NoModelRequest {
            script: opts.script_path.clone(),
            cli: format!(
                "Codex (the server stood in for provider `{}`, model `{}`)",
                stand_in.provider, stand_in.model
            ),
            said: last_words(&cassette),
        });
    }
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
        children: run.children,
        leftovers: run.leftovers,
    })
}

/// The unrecorded first run (`codex exec` before an `exec resume`), in the same
/// `CODEX_HOME`, to its end; anything it leaves is killed.
async fn run_prelude(
    opts: &RecordOptions,
    args: &[String],
    prelude: &super::Prelude,
    env: &PiEnv,
) -> Result<(), RecordError> {
    process::run_prelude(&opts.pi, args, prelude.stdin.as_deref(), env, opts.timeout)
        .await
        .map_err(|e| RecordError::Prelude(Box::new(e)))
}

/// What a Codex run said about why it stopped: its last `turn.failed` or `error` message,
/// else its exit status.
fn last_words(cassette: &Cassette) -> String {
    let mut said = None;
    for r in &cassette.records {
        match &r.action {
            Action::Stdout(b) => {
                if let Ok(v) = serde_json::from_slice::<serde_json::Value>(&b.data) {
                    let m = match v["type"].as_str() {
                        Some("turn.failed") => v["error"]["message"].as_str(),
                        Some("error") => v["message"].as_str(),
                        _ => None,
                    };
                    if let Some(m) = m {
                        said = Some(m.chars().take(200).collect());
                    }
                }
            }
            Action::Exit(code) if said.is_none() => said = Some(format!("it exited with {code}")),
            _ => {}
        }
    }
    said.unwrap_or_else(|| "it said nothing".into())
}

/// The version 1 cassette of a Codex run (pure): the thread id and stderr's timestamps
/// redacted, the tools under the native binary at a signal as `spawn` records after the
/// last tool start, the header naming Codex under `codex` (dialect `exec-json`).
pub(crate) fn cassette(
    opts: &RecordOptions,
    version: &str,
    args: &[String],
    run: &JsonRun,
    mut redactor: Redactor,
    stand_in: &CodexStandIn,
) -> Result<Cassette, RecordError> {
    let thread = run.captured.iter().find_map(|(_, c)| match c {
        process::Captured::Line(l, _) => codex::thread_id(l),
        _ => None,
    });
    if let Some(id) = thread.filter(|id| !args.iter().any(|a| a.contains(id.as_str()))) {
        let p = Agent::Codex.spec().placeholders.session_id;
        redactor.literal(&id, p.text, p.means);
    }
    let mut stamped = 0;
    let captured: Vec<(Duration, process::Captured)> = run
        .captured
        .iter()
        .map(|(t, c)| match c {
            process::Captured::Stderr(b) => {
                let text = String::from_utf8_lossy(b);
                let (text, n) = pi_cassette::redact::redact_iso_timestamps(&text);
                stamped += n;
                (*t, process::Captured::Stderr(text.into_bytes()))
            }
            line => (*t, line.clone()),
        })
        .collect();
    // The native binary, whose children are the tools (at the signal).
    let native = std::cell::Cell::new(None);
    let (spawns, measured, end, notes) = ending_shape_of(run, "Codex", &|sent| {
        let rows: Vec<(i32, i32, i32, String)> = sent
            .tree
            .iter()
            .map(|p| {
                let argv0 = p.cmdline.first().cloned().unwrap_or_default();
                (p.pid, p.ppid, p.sid, argv0)
            })
            .collect();
        let (root, sid) = codex::tool_root((sent.pi_pid, sent.pi_sid), &rows);
        native.set(Some(root));
        spawns_for(root, sid, &sent.tree, &sent.holds_stdout)
    });
    let records = build_records_after(
        &captured,
        &mut redactor,
        &spawns,
        end,
        &codex::is_tool_start,
    );
    let mut process = codex::measured_process();
    let answer = |seen: &pi_cassette::SignalAction| {
        native.get().map_or(seen.clone(), |root| {
            codex::death_answer(seen, root, &run.children)
        })
    };
    match run.signalled.as_ref().map(|s| s.signal) {
        Some(nix::sys::signal::Signal::SIGTERM) => {
            process.on_sigterm = answer(&measured.on_sigterm)
        }
        Some(nix::sys::signal::Signal::SIGINT) => process.on_sigint = answer(&measured.on_sigint),
        Some(nix::sys::signal::Signal::SIGHUP) => process.on_sighup = answer(&measured.on_sighup),
        _ => {}
    }
    // The notes name the tree's command lines: the install path and the run's paths go.
    let notes = notes.map(|n| redactor.apply(&n));
    let redacted_args: Vec<String> = args.iter().map(|a| redactor.apply(a)).collect();
    let mut redactions = redactor.used().clone();
    if stamped > 0 {
        redactions.insert(
            pi_cassette::redact::TS.into(),
            "ISO-8601 timestamps (Codex's log lines on stderr)".into(),
        );
    }
    let expect = codex::codex_expect(&redacted_args, stand_in, opts.stdin.as_deref())
        .map_err(RecordError::Expect)?;
    let header = Header {
        format: FORMAT_NAME.into(),
        version: FORMAT_VERSION,
        mode: None,
        pi: PiSource::new(version, Dialect::ExecJson),
        scenario: Scenario {
            name: scenario_name(opts),
            description: description(opts, version),
            tags: opts.tags.clone(),
        },
        expect,
        process,
        redactions,
        origin: Origin {
            kind: OriginKind::Recorded,
            source: Some(json_source(opts, &redacted_args)),
            timing: TimingKind::Measured,
            notes,
        },
    };
    let mut cassette = Cassette { header, records };
    let body = {
        let mut probe = cassette.clone();
        probe.header.redactions.clear();
        probe.to_jsonl()
    };
    cassette
        .header
        .redactions
        .retain(|placeholder, _| body.contains(placeholder.as_str()));
    Ok(cassette)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recorder::process::{Captured, Ending};

    fn line(t: &str) -> Captured {
        Captured::Line(t.as_bytes().to_vec(), true)
    }

    #[test]
    fn codex_ids_paths_and_log_times_are_redacted_and_the_header_names_codex() {
        let id = "01a21667-79ea-74a2-ab80-9c1d9c921153";
        let captured = vec![
            (
                Duration::from_millis(10),
                Captured::Stderr(
                    b"2026-11-26T05:51:05.281250Z ERROR codex_core::session: thread x\n".to_vec(),
                ),
            ),
            (
                Duration::from_millis(20),
                line(&format!(
                    r#"{{"type":"thread.started","thread_id":"{id}"}}"#
                )),
            ),
            (
                Duration::from_millis(30),
                line(
                    r#"{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"in /tmp/rec-x/work"}}"#,
                ),
            ),
        ];
        let run = JsonRun {
            captured,
            ending: Ending::Code(0),
            signalled: None,
            children: Vec::new(),
            lines_after_signal: 0,
            stderr_after_signal: 0,
            after_signal: Vec::new(),
            leftovers: Vec::new(),
        };
        let mut redactor = Redactor::new();
        redactor.literal("/tmp/rec-x/work", "<CWD>", "Codex's working directory");
        let mut opts = RecordOptions::new(
            "s.llm.json".into(),
            "out/hi.cassette.jsonl".into(),
            "codex".into(),
            vec![],
        );
        opts.agent = pi_grammar::Agent::Codex;
        let args: Vec<String> = ["exec", "--json", "Say hi"].map(String::from).to_vec();
        let si = CodexStandIn::new(Some("openai"), Some("gpt-5.5"));
        let c = cassette(&opts, "0.169.0", &args, &run, redactor, &si).unwrap();
        let text = c.to_jsonl();
        assert!(!text.contains(id), "{text}");
        assert!(text.contains(r#""thread_id":"<THREAD_ID>""#), "{text}");
        assert!(text.contains("<TS> ERROR codex_core"), "{text}");
        assert!(text.contains(r#""text":"in <CWD>""#), "{text}");
        let keys: Vec<&str> = c.header.redactions.keys().map(String::as_str).collect();
        assert_eq!(keys, ["<CWD>", "<THREAD_ID>", "<TS>"]);
        assert!(text.starts_with(
            r#"{"format":"pi-cassette","version":1,"codex":{"version":"0.169.0","dialect":"exec-json"}"#
        ));
        assert_eq!(c.header.scenario.description, "recorded from Codex 0.169.0");
        assert_eq!(c.header.scenario.name, "hi");
        assert_eq!(c.header.process, codex::measured_process());
        assert!(matches!(c.records.last().unwrap().action, Action::Exit(0)));
        // The thread id a resume names on its command line stays (it is the caller's).
        let args: Vec<String> = ["exec", "resume", id, "--json"].map(String::from).to_vec();
        let c = cassette(&opts, "0.169.0", &args, &run, Redactor::new(), &si).unwrap();
        assert!(!c.header.redactions.contains_key("<THREAD_ID>"));
    }
}
