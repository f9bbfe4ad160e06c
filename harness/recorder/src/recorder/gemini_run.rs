//! One recording of Gemini CLI (`gemini --output-format stream-json -p ...`): its version
//! (`gemini --version`), the sandbox (throwaway `HOME` with the run's `.gemini/settings.json`,
//! `TMPDIR`), the scripted server as Google's API, the run watched by `json_run` (a signal
//! to the top process or to its group), and the version 1 cassette: redacted (paths, port,
//! key, the session id, the clock's stamps), the tools alive at a signal that ended the run
//! as `spawn` records, the header from `gemini`'s pure parts. A signal the top process
//! ignored (Gemini's relaunch parent) leaves the run whole: it is recorded to its end.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use pi_cassette::redact::Redactor;
use pi_cassette::{
    Action, Cassette, Dialect, Header, Origin, OriginKind, PiSource, Scenario, TimingKind,
    FORMAT_NAME, FORMAT_VERSION,
};
use pi_grammar::Agent;

use super::gemini;
use super::header::{description, json_source, mark_secrets, scenario_name};
use super::json_cassette::{build_records_after, ending_shape_of, spawns_for, JsonRun};
use super::process::{self, Captured, Ending, GeminiEnv};
use super::{json_run, sandbox, write, RecordError, RecordOptions, RecordOutcome};
use crate::llm_script::Script;
use crate::llm_server::{LlmServer, ServerOptions};
use crate::Notices;

/// The directory Gemini CLI is installed in: the parent of the `node_modules` its executable
/// (followed through links) lives in; `None` for a bare script.
fn install_root(gemini: &Path) -> Option<PathBuf> {
    let real = std::fs::canonicalize(gemini).ok()?;
    real.ancestors()
        .find(|d| d.file_name().is_some_and(|n| n == "node_modules"))
        .and_then(Path::parent)
        .map(Path::to_path_buf)
}

/// Record one Gemini CLI run as the options say (see [`super::record`]).
pub(crate) async fn record(
    opts: &RecordOptions,
    script: Script,
    notices: &Notices,
) -> Result<RecordOutcome, RecordError> {
    let capacity = script.capacity();
    let expects_no_request = script.expects_no_request();
    let version = super::install::version(opts, notices)?;
    // Read the command line before anything runs: one not understood is an error here.
    gemini::parse_call(&opts.pi_args).map_err(RecordError::Expect)?;
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
    let settings = gemini::settings_json(&opts.agent_settings);
    let settings_path = sandbox.home.join(".gemini/settings.json");
    std::fs::create_dir_all(sandbox.home.join(".gemini"))
        .and_then(|()| std::fs::write(&settings_path, format!("{settings:#}\n")))
        .map_err(RecordError::io("writing", &settings_path))?;
    let mut env = sandbox.env(opts, None, None)?;
    env.gemini = Some(GeminiEnv {
        base_url: server.base_url().trim_end_matches("/v1").to_string(),
        key: key.clone(),
        tmpdir: sandbox.tmpdir.clone(),
        extra: opts.agent_env.clone(),
        own_group: opts.signal.as_ref().is_some_and(|p| p.to_group),
    });
    if let Some(prelude) = &opts.prelude {
        process::run_prelude(
            &opts.pi,
            &sandbox.substitute(&prelude.args),
            prelude.stdin.as_deref(),
            &env,
            opts.timeout,
        )
        .await
        .map_err(|e| RecordError::Prelude(Box::new(e)))?;
    }
    let args = sandbox.substitute(&opts.pi_args);
    let root = install_root(&opts.pi);
    let redactor =
        sandbox.redactor_for(Agent::Gemini, &key, &opts.secrets(), port, root.as_deref());
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
    let mut cassette = cassette(opts, &version, &args, &run, redactor)?;
    if requests.is_empty() && !expects_no_request {
        return Err(RecordError::NoModelRequest {
            script: opts.script_path.clone(),
            cli: "Gemini CLI (the server stood in for Google's Gemini API)".into(),
            said: masked(&last_words(&run), &key, opts),
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

/// What a Gemini run said about why it stopped: its `result` or `error` message, else the
/// first line of its stderr (Gemini prints "Invalid auth method selected." and the trust
/// refusal there), else its exit status.
/// `text` with the run's key and every secret of the options masked (for a message).
fn masked(text: &str, key: &str, opts: &RecordOptions) -> String {
    let mut values: Vec<String> = opts.secrets().into_iter().map(|(_, v)| v).collect();
    values.push(key.to_string());
    pi_cassette::redact::mask(text, &values)
}

fn last_words(run: &JsonRun) -> String {
    let mut said = None;
    let mut stderr = String::new();
    for (_, c) in run.captured.iter().chain(&run.after_signal) {
        match c {
            Captured::Line(l, _) => {
                if let Ok(v) = serde_json::from_slice::<serde_json::Value>(l) {
                    let m = match v["type"].as_str() {
                        Some("result") => v["error"]["message"].as_str(),
                        Some("error") => v["message"].as_str(),
                        _ => None,
                    };
                    if let Some(m) = m {
                        said = Some(m.chars().take(200).collect::<String>());
                    }
                }
            }
            Captured::Stderr(b) => stderr.push_str(&String::from_utf8_lossy(b)),
        }
    }
    let last_err = stderr
        .lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty())
        .map(|l| l.chars().take(200).collect::<String>());
    said.or(last_err).unwrap_or_else(|| match run.ending {
        Ending::Code(c) => format!("it exited with {c}"),
        Ending::Signal(s) => format!("it died by {}", s.as_str()),
    })
}

/// The captured output with Gemini's clock stamps made stable ([`gemini::redact_ids_and_times`]),
/// and how many ISO times and epochs were replaced.
fn stamped(captured: &[(Duration, Captured)]) -> (Vec<(Duration, Captured)>, usize, usize) {
    let (mut iso, mut epochs) = (0, 0);
    let out = captured
        .iter()
        .map(|(t, c)| {
            let mut fix = |b: &[u8]| match std::str::from_utf8(b) {
                Ok(text) => {
                    let (text, i, e) = gemini::redact_ids_and_times(text);
                    iso += i;
                    epochs += e;
                    text.into_bytes()
                }
                Err(_) => b.to_vec(),
            };
            let c = match c {
                Captured::Line(l, nl) => Captured::Line(fix(l), *nl),
                Captured::Stderr(b) => Captured::Stderr(fix(b)),
            };
            (*t, c)
        })
        .collect();
    (out, iso, epochs)
}

/// The ids Gemini invents in a run, added to `redactor`: the session id (unless the command
/// line names it) and its shell tool's random temp dirs (in the tool's command line: spawns,
/// notes, output), numbered in order of appearance.
fn redact_run_ids(run: &JsonRun, args: &[String], redactor: &mut Redactor) {
    let session = run
        .captured
        .iter()
        .chain(&run.after_signal)
        .find_map(|(_, c)| match c {
            Captured::Line(l, _) => gemini::session_id(l),
            _ => None,
        });
    if let Some(id) = session.filter(|id| !args.iter().any(|a| a.contains(id.as_str()))) {
        let p = Agent::Gemini.spec().placeholders.session_id;
        redactor.literal(&id, p.text, p.means);
    }
    // The shell tool's random temp dir, in its command line (spawns, notes, output).
    let mut texts: Vec<String> = run
        .captured
        .iter()
        .chain(&run.after_signal)
        .map(|(_, c)| match c {
            Captured::Line(b, _) | Captured::Stderr(b) => String::from_utf8_lossy(b).into_owned(),
        })
        .collect();
    texts.extend(run.children.iter().map(|c| c.command.clone()));
    texts.extend(run.leftovers.iter().cloned());
    if let Some(sent) = &run.signalled {
        texts.extend(sent.tree.iter().map(|p| p.cmdline.join(" ")));
    }
    let mut dirs: Vec<String> = Vec::new();
    for d in texts.iter().flat_map(|t| gemini::shell_dirs(t)) {
        if !dirs.contains(&d) {
            dirs.push(d);
        }
    }
    for (k, dir) in dirs.iter().enumerate() {
        redactor.literal(
            dir,
            &format!("<SHELL_DIR_{}>", k + 1),
            "the temp dir Gemini CLI's shell tool made (a random name)",
        );
    }
}

/// The version 1 cassette of a Gemini run (pure): the session id and the clock's stamps
/// redacted; when a signal ended the run, the tools under the session's process (the relaunched
/// child, or the only process) as `spawn` records after the last `tool_use`; when the signal
/// was ignored (the run went on to its `result`), the whole run; the header naming Gemini CLI
/// under `gemini` (dialect `gemini-stream-json`).
pub(crate) fn cassette(
    opts: &RecordOptions,
    version: &str,
    args: &[String],
    run: &JsonRun,
    mut redactor: Redactor,
) -> Result<Cassette, RecordError> {
    redact_run_ids(run, args, &mut redactor);
    // A signal the top process ignored: the run finished, its output is the recording.
    let ignored = run.signalled.is_some()
        && run
            .after_signal
            .iter()
            .any(|(_, c)| matches!(c, Captured::Line(l, _) if gemini::is_result(l)));
    let whole: Vec<(Duration, Captured)>;
    let captured = if ignored {
        whole = run
            .captured
            .iter()
            .chain(&run.after_signal)
            .cloned()
            .collect();
        &whole
    } else {
        &run.captured
    };
    let (captured, iso, epochs) = stamped(captured);
    let mut process = gemini::measured_process();
    let (spawns, end, notes) = if ignored {
        let sent = run.signalled.as_ref().expect("signalled");
        let code = match run.ending {
            Ending::Code(c) => Action::Exit(c),
            Ending::Signal(s) => Action::Signal(s.as_str().to_string()),
        };
        let note = format!(
            "{} sent to the top process {:.0} ms after the first `{}`: ignored (Gemini CLI's relaunch parent); the run went on to its `result`",
            sent.signal.as_str(),
            sent.after_ms,
            sent.event
        );
        (Vec::new(), code, Some(note))
    } else {
        let (spawns, measured, end, notes) = ending_shape_of(run, "Gemini CLI", &|sent| {
            let rows: Vec<(i32, i32, i32, String)> = sent
                .tree
                .iter()
                .map(|p| {
                    let argv0 = p.cmdline.first().cloned().unwrap_or_default();
                    (p.pid, p.ppid, p.sid, argv0)
                })
                .collect();
            let (root, sid) = gemini::tool_root((sent.pi_pid, sent.pi_sid), &rows);
            spawns_for(root, sid, &sent.tree, &sent.holds_stdout)
        });
        match run.signalled.as_ref().map(|s| s.signal) {
            Some(nix::sys::signal::Signal::SIGTERM) => process.on_sigterm = measured.on_sigterm,
            Some(nix::sys::signal::Signal::SIGINT) => process.on_sigint = measured.on_sigint,
            Some(nix::sys::signal::Signal::SIGHUP) => process.on_sighup = measured.on_sighup,
            _ => {}
        }
        (spawns, end, notes)
    };
    let records = build_records_after(
        &captured,
        &mut redactor,
        &spawns,
        end,
        &gemini::is_tool_start,
    );
    // The notes name the tree's command lines: the install path and the run's paths go.
    let notes = notes.map(|n| redactor.apply(&n));
    let redacted_args: Vec<String> = args.iter().map(|a| redactor.apply(a)).collect();
    let mut redactions = redactor.used().clone();
    if iso > 0 {
        redactions.insert(
            pi_cassette::redact::TS.into(),
            "ISO-8601 timestamps (Gemini CLI's events, its error reports' file names)".into(),
        );
    }
    if epochs > 0 {
        redactions.insert(
            pi_cassette::redact::TS_MS.into(),
            "epoch milliseconds (inside Gemini CLI's tool ids)".into(),
        );
    }
    let env: BTreeMap<String, String> = opts.agent_env.iter().cloned().collect();
    let expect = gemini::gemini_expect(
        &redacted_args,
        &opts.agent_settings,
        &env,
        opts.stdin.as_deref(),
    )
    .map_err(RecordError::Expect)?;
    let header = Header {
        format: FORMAT_NAME.into(),
        version: FORMAT_VERSION,
        mode: None,
        pi: PiSource::new(version, Dialect::GeminiStreamJson),
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
    use crate::recorder::json_cassette::{ChildFate, SentSignal};
    use nix::sys::signal::Signal;
    use pi_procs::ProcInfo;

    const ID: &str = "406f5875-ab0a-4ef3-95ec-bd76026042eb";

    fn at(ms: u64, c: Captured) -> (Duration, Captured) {
        (Duration::from_millis(ms), c)
    }

    fn line(t: &str) -> Captured {
        Captured::Line(t.as_bytes().to_vec(), true)
    }

    fn proc(pid: i32, ppid: i32, sid: i32, argv: &[&str]) -> ProcInfo {
        ProcInfo {
            pid,
            ppid,
            pgid: 10,
            sid,
            state: 'S',
            cmdline: argv.iter().map(|a| a.to_string()).collect(),
        }
    }

    /// A run of `gemini -p go` up to its tool (started at 30 ms); `rest` after the signal.
    fn run(signal: Option<Signal>, rest: Vec<(Duration, Captured)>, ending: Ending) -> JsonRun {
        let shell = "/usr/bin/bash -c _bgpids_file=/tmp/x/gemini-shell-McIL34/bgpids.tmp sleep 2";
        let tree = vec![
            proc(11, 10, 10, &["/usr/bin/node", "--max-old-space-size=1"]),
            proc(12, 11, 12, &["/usr/bin/bash", "-c", shell]),
            proc(13, 12, 12, &["sleep", "2"]),
        ];
        JsonRun {
            captured: vec![
                at(5, Captured::Stderr(b"YOLO mode is enabled.\n".to_vec())),
                at(
                    10,
                    line(&format!(
                        r#"{{"type":"init","timestamp":"2026-11-26T05:52:19.792Z","session_id":"{ID}","model":"gemini-2.5-flash"}}"#
                    )),
                ),
                at(
                    30,
                    line(
                        r#"{"type":"tool_use","timestamp":"2026-11-26T05:52:19.954Z","tool_name":"run_shell_command","tool_id":"run_shell_command__run_shell_command_1795672339834_0","parameters":{"command":"sleep 2"}}"#,
                    ),
                ),
            ],
            ending,
            signalled: signal.map(|signal| SentSignal {
                signal,
                event: "tool_use".into(),
                after_ms: 500.0,
                pi_pid: 10,
                pi_sid: 10,
                tree: tree.clone(),
                holds_stdout: Default::default(),
                pi_gone_after_ms: 50.0,
            }),
            children: tree
                .iter()
                .map(|p| ChildFate {
                    pid: p.pid,
                    ppid: p.ppid,
                    command: p.command(),
                    own_session: p.sid != 10,
                    survived: p.pid != 11,
                })
                .collect(),
            lines_after_signal: rest.len(),
            stderr_after_signal: 0,
            after_signal: rest,
            leftovers: Vec::new(),
        }
    }

    fn opts() -> RecordOptions {
        let mut o = RecordOptions::new(
            "s.llm.json".into(),
            "out/g.cassette.jsonl".into(),
            "gemini".into(),
            vec![],
        );
        o.agent = pi_grammar::Agent::Gemini;
        o
    }

    fn args() -> Vec<String> {
        [
            "--output-format",
            "stream-json",
            "-m",
            "gemini-2.5-flash",
            "-y",
            "-p",
            "go",
        ]
        .map(String::from)
        .to_vec()
    }

    #[test]
    fn a_signal_that_ended_the_run_leaves_the_tools_as_spawns_and_a_hang() {
        let r = run(Some(Signal::SIGTERM), Vec::new(), Ending::Code(0));
        let mut o = opts();
        o.agent_settings = vec![("general.maxAttempts".into(), serde_json::json!(2))];
        o.agent_env = vec![("GEMINI_CLI_NO_RELAUNCH".into(), "1".into())];
        o.signal = Some(crate::recorder::SignalPlan {
            signal: Signal::SIGTERM,
            event: "tool_use".into(),
            after_ms: 500,
            to_group: false,
        });
        let c = cassette(&o, "0.61.0", &args(), &r, Redactor::new()).unwrap();
        let text = c.to_jsonl();
        assert!(text.starts_with(
            r#"{"format":"pi-cassette","version":1,"gemini":{"version":"0.61.0","dialect":"gemini-stream-json"}"#
        ), "{text}");
        assert!(!text.contains(ID) && text.contains(r#""session_id":"<SESSION_ID>""#));
        assert!(text.contains(r#""timestamp":"<TS>""#) && !text.contains("2026-11-26"));
        assert!(text.contains("run_shell_command_1700000000000_0"), "{text}");
        assert!(
            !text.contains("McIL34") && text.contains("<SHELL_DIR_1>"),
            "{text}"
        );
        let keys: Vec<&str> = c.header.redactions.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            ["1700000000000", "<SESSION_ID>", "<SHELL_DIR_1>", "<TS>"]
        );
        // The tool's shell (under the relaunched child, its own session) and its subshell.
        let spawns: Vec<&pi_cassette::Spawn> = c
            .records
            .iter()
            .filter_map(|r| match &r.action {
                Action::Spawn(s) => Some(s),
                _ => None,
            })
            .collect();
        assert_eq!(spawns.len(), 1, "{text}");
        assert!(spawns[0].own_session);
        assert!(spawns[0].grandchild.is_some());
        let at_spawn = c
            .records
            .iter()
            .position(|r| matches!(r.action, Action::Spawn(_)));
        assert!(
            matches!(&c.records[at_spawn.unwrap() - 1].action, Action::Stdout(b) if gemini::is_tool_start(&b.data))
        );
        assert!(matches!(c.records.last().unwrap().action, Action::Hang));
        assert_eq!(
            c.header.process.on_sigterm,
            pi_cassette::SignalAction::Exit { code: 0 }
        );
        assert_eq!(
            c.header.scenario.description,
            "recorded from Gemini CLI 0.61.0"
        );
    }

    #[test]
    fn a_signal_the_top_process_ignored_leaves_the_whole_run() {
        let rest = vec![
            at(
                2040,
                line(
                    r#"{"type":"tool_result","timestamp":"2026-11-26T05:52:21.954Z","tool_id":"x","status":"success","output":"done"}"#,
                ),
            ),
            at(
                2060,
                line(
                    r#"{"type":"result","timestamp":"2026-11-26T05:52:21.990Z","status":"success"}"#,
                ),
            ),
        ];
        let r = run(Some(Signal::SIGINT), rest, Ending::Code(0));
        let c = cassette(&opts(), "0.61.0", &args(), &r, Redactor::new()).unwrap();
        assert!(!c
            .records
            .iter()
            .any(|r| matches!(r.action, Action::Spawn(_))));
        assert!(matches!(c.records.last().unwrap().action, Action::Exit(0)));
        let results = c
            .records
            .iter()
            .filter(|r| matches!(&r.action, Action::Stdout(b) if gemini::is_result(&b.data)))
            .count();
        assert_eq!(results, 1, "the output after the signal is kept");
        assert!(c
            .header
            .origin
            .notes
            .as_deref()
            .unwrap()
            .contains("ignored"));
        assert_eq!(c.header.process, gemini::measured_process());
        // No signal at all: the run as it ended.
        let r = run(None, Vec::new(), Ending::Code(144));
        let c = cassette(&opts(), "0.61.0", &args(), &r, Redactor::new()).unwrap();
        assert!(matches!(
            c.records.last().unwrap().action,
            Action::Exit(144)
        ));
    }
}
