//! The reference provider against fake-pi as a real subprocess: spawning, caps, cancellation
//! and the caller's retry. Every test carries its own marker and proves no process is left.

use std::time::{Duration, Instant};

use pi_provider::retry::{execute_with_retry, RetryPolicy};
use pi_provider::{collect, ApiKey, Provider, SessionRef};
use pi_testkit::messages::{terminal, text_of};
use pi_testkit::provider_options as opts;
use pi_testkit::records::{conversation, out};
use pi_testkit::{fake_pi, World};
use pi_wire::message::{FailureReason, Message, RetrySource};
use tokio_stream::StreamExt;
use tokio_util::sync::CancellationToken;

const PI_DEFAULTS: &str = "{}";
const ENDS_OK: &str = r#"{"dt_ms":0,"exit":0}"#;

fn failed(msgs: &[pi_wire::message::Message]) -> &pi_wire::message::Failure {
    match terminal(msgs) {
        Message::TerminalFailed(f) => f,
        other => panic!("expected terminal.failed, got {other:?}"),
    }
}

#[tokio::test]
async fn completes_and_leaves_nothing() {
    let w = World::new("ok");
    let mut recs = conversation("Hello there");
    recs.push(ENDS_OK.into());
    let c = w
        .cassette("ok")
        .version("0.87.1")
        .expect("{}")
        .process(PI_DEFAULTS)
        .records(&recs)
        .write();
    let msgs = collect(
        Provider::new(opts()).execute(w.request(&c, "0.87.1", "0"), CancellationToken::new()),
    )
    .await;
    assert!(
        matches!(terminal(&msgs), Message::TerminalCompleted { .. }),
        "{msgs:#?}"
    );
    assert_eq!(text_of(&msgs), "Hello there");
    w.assert_none_left();
}

/// The supervisor is this test executable started again (no pi-supervisor binary is
/// involved), it runs in its own process group, and its switch variable never reaches pi.
#[tokio::test]
async fn embedded_supervisor_runs_pi_and_hides_its_switch() {
    use std::os::unix::fs::PermissionsExt as _;
    let w = World::new("embedded");
    let dump = w.path().join("pi-env.txt");
    let pi = w.write(
        "pi",
        format!(
            "#!/bin/sh\ncat >/dev/null\nenv > '{}'\nps -o pgid= -p $PPID >> '{}'\nps -o args= -p $PPID >> '{}'\n",
            dump.display(),
            dump.display(),
            dump.display()
        ),
    );
    std::fs::set_permissions(&pi, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut req = w.request(&pi, "0.87.1", "0");
    req.pi_path = Some(pi);
    let mut o = opts();
    o.supervisor = None;
    let msgs = collect(Provider::new(o).execute(req, CancellationToken::new())).await;
    let env = std::fs::read_to_string(&dump).unwrap();
    assert!(
        !env.contains(pi_provider::embedded::SUPERVISOR_ENV),
        "pi saw the switch: {env}"
    );
    assert!(
        env.contains(w.marker()),
        "pi got the request's environment: {env}"
    );
    let mut lines = env.lines().rev();
    let supervisor_args = lines.next().unwrap();
    let supervisor_pgid: u32 = lines.next().unwrap().trim().parse().unwrap();
    assert!(
        supervisor_args.starts_with("pi-supervisor --control-fd 3"),
        "{supervisor_args}"
    );
    let our_pgid = nix::unistd::getpgrp().as_raw() as u32;
    assert_ne!(
        supervisor_pgid, our_pgid,
        "the supervisor is in the caller's group"
    );
    assert!(
        matches!(terminal(&msgs), Message::TerminalFailed(_)),
        "{msgs:#?}"
    );
    w.assert_none_left();
}

#[tokio::test]
async fn argv_stdin_and_key_are_what_each_pi_version_accepts() {
    // fake-pi rejects what real pi rejects and checks the cassette's expectations:
    // the session flag of each version, the prompt on stdin only, the key only in the env.
    for (version, session_flag) in [
        ("0.87.1", r#""session-id":"abc""#),
        ("0.73.1", r#""session":"SESSION""#),
    ] {
        let w = World::new("argv");
        let session_path = w.path().join("abc.jsonl");
        let expect = format!(
            r#"{{"flags":{{"mode":"json","provider":"fake","model":"fake-model",{}}},"prompt":"-leading dash and @at","argv_messages":[],"env":["OPENAI_API_KEY"],"never_in_argv":[{{"env":"OPENAI_API_KEY"}}]}}"#,
            session_flag.replace("SESSION", &session_path.display().to_string())
        );
        let mut recs = conversation("ok");
        recs.push(ENDS_OK.into());
        let c = w
            .cassette("argv")
            .version(version)
            .expect(&expect)
            .process(PI_DEFAULTS)
            .records(&recs)
            .write();
        let mut req = w.request(&c, version, "0");
        req.prompt = "-leading dash and @at".into();
        req.session = Some(SessionRef {
            id: "abc".into(),
            dir: Some(w.path().to_path_buf()),
            resume: true,
        });
        req.api_key = Some(ApiKey {
            env_var: "OPENAI_API_KEY".into(),
            value: "sk-test-1234567890".into(),
        });
        let msgs = collect(Provider::new(opts()).execute(req, CancellationToken::new())).await;
        assert!(
            matches!(terminal(&msgs), Message::TerminalCompleted { .. }),
            "pi {version}: {msgs:#?}"
        );
        // The id the client chose is the one pi reports (0.87.1's --session-id); a new
        // session file named by path (0.73.1) keeps the recorded id.
        let want = if version == "0.87.1" { "abc" } else { "sess-1" };
        assert!(
            matches!(&msgs[0], Message::SessionResumed { session_id } if session_id == want),
            "{msgs:#?}"
        );
        w.assert_none_left();
    }
}

#[tokio::test]
async fn version_is_probed_when_not_given() {
    let w = World::new("probe");
    let mut recs = conversation("probed");
    recs.push(ENDS_OK.into());
    // A 0.73.1 cassette: were argv built for 0.87.1, fake-pi would still accept this simple
    // one, so the proof is the session flag, which only exists under one name per version.
    let c = w
        .cassette("probe")
        .version("0.73.1")
        .expect(r#"{"flags":{"session":true}}"#)
        .process(PI_DEFAULTS)
        .records(&recs)
        .write();
    let mut req = w.request(&c, "x", "0");
    req.pi_version = None;
    req.session = Some(SessionRef {
        id: "s1".into(),
        dir: Some(w.path().to_path_buf()),
        resume: false,
    });
    let msgs = collect(Provider::new(opts()).execute(req, CancellationToken::new())).await;
    assert!(
        matches!(terminal(&msgs), Message::TerminalCompleted { .. }),
        "{msgs:#?}"
    );
    w.assert_none_left();
}

#[tokio::test]
async fn missing_binary_is_a_failed_terminal_with_the_os_error() {
    let w = World::new("missing");
    let c = w
        .cassette("m")
        .version("0.87.1")
        .expect("{}")
        .process(PI_DEFAULTS)
        .records([ENDS_OK.to_string()])
        .write();
    let mut req = w.request(&c, "0.87.1", "0");
    req.pi_path = Some(w.path().join("no-such-pi"));
    let msgs = collect(Provider::new(opts()).execute(req, CancellationToken::new())).await;
    let f = failed(&msgs);
    assert_eq!(f.reason, FailureReason::SpawnFailed);
    assert!(
        f.message.contains("No such file or directory"),
        "{}",
        f.message
    );
    w.assert_none_left();
}

#[tokio::test]
async fn binary_without_exec_permission_is_a_failed_terminal() {
    let w = World::new("noexec");
    let c = w
        .cassette("m")
        .version("0.87.1")
        .expect("{}")
        .process(PI_DEFAULTS)
        .records([ENDS_OK.to_string()])
        .write();
    let pi = w.path().join("pi");
    std::fs::copy(fake_pi(), &pi).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&pi, std::fs::Permissions::from_mode(0o644)).unwrap();
    let mut req = w.request(&c, "0.87.1", "0");
    req.pi_path = Some(pi);
    let msgs = collect(Provider::new(opts()).execute(req, CancellationToken::new())).await;
    let f = failed(&msgs);
    assert_eq!(f.reason, FailureReason::SpawnFailed);
    assert!(f.message.contains("Permission denied"), "{}", f.message);
    w.assert_none_left();
}

#[tokio::test]
async fn invalid_request_never_spawns() {
    let w = World::new("invalid");
    let c = w
        .cassette("m")
        .version("0.73.1")
        .expect("{}")
        .process(PI_DEFAULTS)
        .records([ENDS_OK.to_string()])
        .write();
    let mut req = w.request(&c, "0.73.1", "0");
    req.thinking = Some("max".into()); // 0.87.1 only
    let msgs = collect(Provider::new(opts()).execute(req, CancellationToken::new())).await;
    let f = failed(&msgs);
    assert_eq!(f.reason, FailureReason::InvalidRequest);
    assert!(
        f.message.contains("\"max\" is not accepted by pi 0.73.1"),
        "{}",
        f.message
    );
    w.assert_none_left();
}

/// Every agent the provider does not run is refused before anything starts, by name, with
/// the ones it runs (from the registry).
#[tokio::test]
async fn an_agent_the_provider_does_not_run_is_refused_by_name() {
    let w = World::new("not_driven");
    let c = w
        .cassette("m")
        .version("0.87.1")
        .expect("{}")
        .process(PI_DEFAULTS)
        .records([ENDS_OK.to_string()])
        .write();
    let refused: Vec<_> = pi_provider::Agent::ALL
        .into_iter()
        .filter(|a| !pi_provider::drives(*a))
        .collect();
    assert!(!refused.is_empty(), "Claude Code is not run yet (issue 43)");
    assert_eq!(pi_provider::driven_names(), "pi, Codex and Gemini CLI");
    for agent in refused {
        let mut req = w.request(&c, "0.87.1", "0");
        req.agent = agent;
        let msgs = collect(Provider::new(opts()).execute(req, CancellationToken::new())).await;
        let f = failed(&msgs);
        assert_eq!(f.reason, FailureReason::InvalidRequest);
        assert_eq!(
            f.message,
            format!(
                "the provider runs pi, Codex and Gemini CLI, not {}",
                agent.display_name()
            )
        );
    }
    w.assert_none_left();
}

#[tokio::test]
async fn cli_error_exit_carries_code_and_redacted_stderr() {
    let w = World::new("exit1");
    let key = format!("sk-live-{}", w.marker());
    let recs = vec![
        format!(r#"{{"dt_ms":0,"stderr":"Error: request failed with key {key}\n"}}"#),
        r#"{"dt_ms":0,"exit":1}"#.to_string(),
    ];
    let c = w
        .cassette("exit1")
        .version("0.87.1")
        .expect("{}")
        .process(PI_DEFAULTS)
        .records(&recs)
        .write();
    let mut req = w.request(&c, "0.87.1", "0");
    req.api_key = Some(ApiKey {
        env_var: "OPENAI_API_KEY".into(),
        value: key.clone(),
    });
    let msgs = collect(Provider::new(opts()).execute(req, CancellationToken::new())).await;
    let f = failed(&msgs);
    assert_eq!(f.exit.as_ref().and_then(|e| e.code), Some(1));
    let tail = f.stderr_tail.as_deref().unwrap_or_default();
    assert!(
        tail.contains("request failed with key [REDACTED]"),
        "{tail:?}"
    );
    assert!(!tail.contains(&key));
    w.assert_none_left();
}

#[tokio::test]
async fn death_by_signal_mid_stream_is_reported() {
    let w = World::new("sigkill");
    let mut recs = conversation("partial");
    recs.truncate(6);
    recs.push(r#"{"dt_ms":0,"signal":"SIGKILL"}"#.into());
    let c = w
        .cassette("k")
        .version("0.87.1")
        .expect("{}")
        .process(PI_DEFAULTS)
        .records(&recs)
        .write();
    let msgs = collect(
        Provider::new(opts()).execute(w.request(&c, "0.87.1", "0"), CancellationToken::new()),
    )
    .await;
    let f = failed(&msgs);
    assert_eq!(
        f.exit.as_ref().and_then(|e| e.signal.as_deref()),
        Some("SIGKILL")
    );
    assert_eq!(text_of(&msgs), "partial");
    w.assert_none_left();
}

#[tokio::test]
async fn total_output_cap_stops_the_run() {
    let w = World::new("cap");
    let mut recs = conversation("x");
    recs.truncate(5);
    for _ in 0..400 {
        recs.push(out(1, r#"{"type":"message_update","assistantMessageEvent":{"type":"text_delta","contentIndex":0,"delta":"0123456789012345678901234567890123456789"}}"#));
    }
    recs.push(r#"{"dt_ms":0,"hang":true}"#.into());
    let c = w
        .cassette("cap")
        .version("0.87.1")
        .expect("{}")
        .process(PI_DEFAULTS)
        .records(&recs)
        .write();
    let mut o = opts();
    o.max_output_bytes = Some(8 * 1024);
    let msgs =
        collect(Provider::new(o).execute(w.request(&c, "0.87.1", "1"), CancellationToken::new()))
            .await;
    let f = failed(&msgs);
    assert_eq!(f.reason, FailureReason::OutputLimit);
    assert!(f.message.contains("8192"), "{}", f.message);
    w.assert_none_left();
}

#[tokio::test]
async fn timeout_fails_the_run_and_cleans_up() {
    let w = World::new("timeout");
    let mut recs = conversation("x");
    recs.truncate(3);
    recs.push(r#"{"dt_ms":0,"spawn":{"id":"tool","own_session":true}}"#.into());
    recs.push(r#"{"dt_ms":0,"hang":true}"#.into());
    let c = w
        .cassette("t")
        .version("0.87.1")
        .expect("{}")
        .process(PI_DEFAULTS)
        .records(&recs)
        .write();
    let mut req = w.request(&c, "0.87.1", "0");
    req.timeout = Some(Duration::from_millis(300));
    let msgs = collect(Provider::new(opts()).execute(req, CancellationToken::new())).await;
    let f = failed(&msgs);
    assert_eq!(f.reason, FailureReason::Timeout);
    w.assert_none_left();
}

// ---------------------------------------------------------------- cancellation

fn cancelled(msgs: &[Message]) {
    assert!(
        matches!(terminal(msgs), Message::TerminalCancelled { .. }),
        "{msgs:#?}"
    );
}

#[tokio::test]
async fn cancel_before_spawn_starts_nothing() {
    let w = World::new("prespawn");
    let c = w
        .cassette("p")
        .version("0.87.1")
        .expect("{}")
        .process(PI_DEFAULTS)
        .records([ENDS_OK.to_string()])
        .write();
    let token = CancellationToken::new();
    token.cancel();
    let msgs = collect(Provider::new(opts()).execute(w.request(&c, "0.87.1", "0"), token)).await;
    assert_eq!(msgs, vec![Message::TerminalCancelled { exit: None }]);
    w.assert_none_left();
}

/// Run until `ready` says so, cancel, and return everything plus the cancel-to-end time.
async fn run_and_cancel(
    w: &World,
    c: &std::path::Path,
    speed: &str,
    grace: Duration,
    mut ready: impl FnMut(&[Message], &World) -> bool,
) -> (Vec<Message>, Duration) {
    let mut o = opts();
    o.grace = grace;
    let token = CancellationToken::new();
    let mut stream =
        std::pin::pin!(Provider::new(o).execute(w.request(c, "0.87.1", speed), token.clone()));
    let mut msgs = Vec::new();
    let mut cancelled_at = None;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let next = tokio::time::timeout(Duration::from_millis(20), stream.next()).await;
        match next {
            Ok(Some(m)) => msgs.push(m),
            Ok(None) => break,
            Err(_) => {}
        }
        if cancelled_at.is_none() && ready(&msgs, w) {
            token.cancel();
            cancelled_at = Some(Instant::now());
        }
        assert!(Instant::now() < deadline, "run did not end: {msgs:#?}");
    }
    let took = cancelled_at.expect("the run was cancelled").elapsed();
    (msgs, took)
}

fn tool_start() -> String {
    out(
        0,
        r#"{"type":"tool_execution_start","toolCallId":"call_9","toolName":"bash","args":{"command":"sleep 300"}}"#,
    )
}

/// A run stopped mid-tool: some text, a tool start, the tool's child (`spawn` JSON), then silence.
fn mid_tool(spawn: &str) -> Vec<String> {
    let mut recs = conversation("running");
    recs.truncate(6);
    recs.push(tool_start());
    recs.push(format!(r#"{{"dt_ms":0,"spawn":{spawn}}}"#));
    recs.push(r#"{"dt_ms":0,"hang":true}"#.into());
    recs
}

#[tokio::test]
async fn cancel_before_the_first_line() {
    let w = World::new("prefirst");
    let recs = vec![r#"{"dt_ms":0,"hang":true}"#.to_string()];
    let c = w
        .cassette("p")
        .version("0.87.1")
        .expect("{}")
        .process(PI_DEFAULTS)
        .records(&recs)
        .write();
    // Ready once fake-pi is running (seen by its marker), before it wrote anything.
    let (msgs, _) = run_and_cancel(&w, &c, "0", Duration::from_secs(2), |m, w| {
        m.is_empty() && w.alive().len() >= 2
    })
    .await;
    cancelled(&msgs);
    assert_eq!(msgs.len(), 1);
    w.assert_none_left();
}

#[tokio::test]
async fn cancel_mid_text_keeps_what_came_before() {
    let w = World::new("midtext");
    let mut recs = conversation("first ");
    recs.truncate(6);
    recs.push(out(5000, r#"{"type":"message_update","assistantMessageEvent":{"type":"text_delta","contentIndex":0,"delta":"never"}}"#));
    recs.push(ENDS_OK.into());
    let c = w
        .cassette("mt")
        .version("0.87.1")
        .expect("{}")
        .process(PI_DEFAULTS)
        .records(&recs)
        .write();
    let (msgs, _) = run_and_cancel(&w, &c, "1", Duration::from_secs(2), |m, _| {
        text_of(m) == "first "
    })
    .await;
    cancelled(&msgs);
    assert_eq!(text_of(&msgs), "first ");
    assert!(matches!(msgs[0], Message::SessionStarted { .. }));
    w.assert_none_left();
}

#[tokio::test]
async fn cancel_mid_tool_reaches_a_child_in_its_own_session() {
    let w = World::new("midtool");
    let recs = mid_tool(r#"{"id":"bash","own_session":true,"grandchild":{"own_session":true}}"#);
    let c = w
        .cassette("mt")
        .version("0.87.1")
        .expect("{}")
        .process(PI_DEFAULTS)
        .records(&recs)
        .write();
    // supervisor + fake-pi + child + grandchild (escaped into its own session)
    let (msgs, took) = run_and_cancel(&w, &c, "0", Duration::from_secs(2), |_, w| {
        w.alive().len() >= 4
    })
    .await;
    cancelled(&msgs);
    w.assert_none_left();
    eprintln!("cancel mid-tool (pi honours SIGTERM): {took:?}");
}

#[tokio::test]
async fn cancel_when_pi_ignores_sigterm() {
    let w = World::new("ignoreterm");
    let recs = mid_tool(r#"{"id":"bash","own_session":true,"ignore_sigterm":true}"#);
    let process = r#"{"on_sigterm":{"action":"ignore"}}"#;
    let c = w
        .cassette("it")
        .version("0.87.1")
        .expect("{}")
        .process(process)
        .records(&recs)
        .write();
    let grace = Duration::from_millis(300);
    let (msgs, took) = run_and_cancel(&w, &c, "0", grace, |_, w| w.alive().len() >= 3).await;
    cancelled(&msgs);
    match terminal(&msgs) {
        Message::TerminalCancelled { exit: Some(e) } => {
            assert_eq!(e.signal.as_deref(), Some("SIGKILL"))
        }
        other => panic!("{other:?}"),
    }
    assert!(
        took >= grace,
        "SIGKILL came before the grace period ended: {took:?}"
    );
    w.assert_none_left();
    eprintln!("cancel (pi ignores SIGTERM, grace {grace:?}): {took:?}");
}

#[tokio::test]
async fn pi_exits_while_a_grandchild_holds_stdout() {
    let w = World::new("holdout");
    let mut recs = conversation("done");
    recs.insert(3, r#"{"dt_ms":0,"spawn":{"id":"bash","own_session":true,"hold_stdout":true,"grandchild":{"own_session":true,"hold_stdout":true}}}"#.into());
    recs.push(ENDS_OK.into());
    let c = w
        .cassette("h")
        .version("0.87.1")
        .expect("{}")
        .process(PI_DEFAULTS)
        .records(&recs)
        .write();
    let started = Instant::now();
    let msgs = collect(
        Provider::new(opts()).execute(w.request(&c, "0.87.1", "0"), CancellationToken::new()),
    )
    .await;
    assert!(
        matches!(terminal(&msgs), Message::TerminalCompleted { .. }),
        "{msgs:#?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the reader hung on the held stdout"
    );
    w.assert_none_left();
}

#[tokio::test]
async fn dropping_the_stream_stops_everything() {
    let w = World::new("drop");
    let recs = mid_tool(r#"{"id":"bash","own_session":true}"#);
    let c = w
        .cassette("d")
        .version("0.87.1")
        .expect("{}")
        .process(PI_DEFAULTS)
        .records(&recs)
        .write();
    {
        let mut stream = Box::pin(
            Provider::new(opts()).execute(w.request(&c, "0.87.1", "0"), CancellationToken::new()),
        );
        let first = stream.next().await;
        assert!(
            matches!(first, Some(Message::SessionStarted { .. })),
            "{first:?}"
        );
        assert!(
            w.wait_alive(3, Duration::from_secs(10)).len() >= 3,
            "the tool child never started"
        );
    } // dropped here
      // Nothing to await any more: wait (bounded) for the processes to go.
    let end = Instant::now() + Duration::from_secs(15);
    while !w.alive().is_empty() && Instant::now() < end {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    w.assert_none_left();
}

// ---------------------------------------------------------------- retry at the caller

/// A `pi` that plays attempt N's cassette on its Nth start: fake-pi behind a tiny wrapper.
fn attempts(w: &World, cassettes: &[std::path::PathBuf]) -> std::path::PathBuf {
    let wrapper = w.path().join("pi-attempts");
    let list: Vec<String> = cassettes
        .iter()
        .map(|c| format!("'{}'", c.display()))
        .collect();
    let script = format!(
        "#!/bin/sh\nn=$(cat '{dir}/count' 2>/dev/null || echo 0)\necho $((n+1)) > '{dir}/count'\nset -- \"$@\"\ni=0\nfor c in {list}; do\n  if [ $i -eq $n ]; then FAKE_PI_CASSETTE=$c; fi\n  i=$((i+1))\ndone\nexport FAKE_PI_CASSETTE\nexec '{fake}' \"$@\"\n",
        dir = w.path().display(),
        list = list.join(" "),
        fake = fake_pi().display()
    );
    std::fs::write(&wrapper, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    wrapper
}

fn fast_policy(max: u32) -> RetryPolicy {
    RetryPolicy {
        max_attempts: max,
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(50),
        jitter: 0.5,
    }
}

fn error_turn(msg: &str) -> Vec<String> {
    let m = serde_json::to_string(msg).unwrap();
    vec![
        out(
            0,
            r#"{"type":"session","version":3,"id":"s","timestamp":"T","cwd":"/w"}"#,
        ),
        out(0, r#"{"type":"agent_start"}"#),
        out(
            0,
            &format!(
                r#"{{"type":"message_end","message":{{"role":"assistant","content":[],"stopReason":"error","errorMessage":{m}}}}}"#
            ),
        ),
        out(0, r#"{"type":"agent_end","messages":[],"willRetry":false}"#),
        out(0, r#"{"type":"agent_settled"}"#),
        ENDS_OK.to_string(),
    ]
}

#[tokio::test]
async fn caller_retries_a_transient_failure_then_succeeds() {
    let w = World::new("retry");
    let mut dead = conversation("lost");
    dead.truncate(6);
    dead.push(r#"{"dt_ms":0,"signal":"SIGKILL"}"#.into());
    let mut ok = conversation("recovered");
    ok.push(ENDS_OK.into());
    let c1 = w
        .cassette("a1")
        .version("0.87.1")
        .expect("{}")
        .process(PI_DEFAULTS)
        .records(&dead)
        .write();
    let c2 = w
        .cassette("a2")
        .version("0.87.1")
        .expect("{}")
        .process(PI_DEFAULTS)
        .records(&ok)
        .write();
    let mut req = w.request(&c1, "0.87.1", "0");
    req.pi_path = Some(attempts(&w, &[c1.clone(), c2]));
    let msgs = collect(execute_with_retry(
        Provider::new(opts()),
        req,
        fast_policy(3),
        CancellationToken::new(),
    ))
    .await;
    assert!(
        matches!(terminal(&msgs), Message::TerminalCompleted { .. }),
        "{msgs:#?}"
    );
    let retries: Vec<_> = msgs
        .iter()
        .filter(|m| matches!(m, Message::RetryScheduled { .. }))
        .collect();
    assert_eq!(retries.len(), 1, "{msgs:#?}");
    match retries[0] {
        Message::RetryScheduled {
            source,
            attempt,
            max_attempts,
            delay_ms,
            ..
        } => {
            assert_eq!(
                (*source, *attempt, *max_attempts),
                (RetrySource::Caller, 2, 3)
            );
            assert!((5..=10).contains(delay_ms), "{delay_ms}");
        }
        _ => unreachable!(),
    }
    w.assert_none_left();
}

/// How many times the attempts wrapper started pi.
fn starts(w: &World) -> u32 {
    let count = std::fs::read_to_string(w.path().join("count")).unwrap();
    count.trim().parse().unwrap()
}

/// Every attempt ends with pi's `error` stop reason and `message`; run with up to 3 attempts.
async fn retry_on_repeated_error(w: &World, message: &str) -> Vec<Message> {
    let c = w
        .cassette("a")
        .version("0.87.1")
        .expect("{}")
        .process(PI_DEFAULTS)
        .records(error_turn(message))
        .write();
    let mut req = w.request(&c, "0.87.1", "0");
    req.pi_path = Some(attempts(w, &[c.clone(), c.clone(), c.clone()]));
    collect(execute_with_retry(
        Provider::new(opts()),
        req,
        fast_policy(3),
        CancellationToken::new(),
    ))
    .await
}

#[tokio::test]
async fn caller_does_not_retry_401() {
    let w = World::new("noretry");
    let msgs = retry_on_repeated_error(&w, "401 invalid api key").await;
    let f = failed(&msgs);
    assert_eq!(f.reason, FailureReason::ModelError);
    assert!(!msgs
        .iter()
        .any(|m| matches!(m, Message::RetryScheduled { .. })));
    assert_eq!(starts(&w), 1);
    w.assert_none_left();
}

#[tokio::test]
async fn caller_gives_up_after_max_attempts() {
    let w = World::new("exhaust");
    let msgs = retry_on_repeated_error(&w, "503 Service Unavailable").await;
    let f = failed(&msgs);
    assert!(f.message.contains("503"), "{}", f.message);
    let n = msgs
        .iter()
        .filter(|m| matches!(m, Message::RetryScheduled { .. }))
        .count();
    assert_eq!(n, 2);
    assert_eq!(starts(&w), 3);
    w.assert_none_left();
}

#[tokio::test]
async fn cancel_during_backoff_is_cancelled_not_failed() {
    let w = World::new("backoffcancel");
    let c = w
        .cassette("a")
        .version("0.87.1")
        .expect("{}")
        .process(PI_DEFAULTS)
        .records(error_turn("503 Service Unavailable"))
        .write();
    let mut req = w.request(&c, "0.87.1", "0");
    req.pi_path = Some(attempts(&w, &[c.clone(), c.clone()]));
    let policy = RetryPolicy {
        base_delay: Duration::from_secs(30),
        max_delay: Duration::from_secs(30),
        ..fast_policy(2)
    };
    let token = CancellationToken::new();
    let mut stream = std::pin::pin!(execute_with_retry(
        Provider::new(opts()),
        req,
        policy,
        token.clone()
    ));
    let mut msgs = Vec::new();
    while let Some(m) = stream.next().await {
        if matches!(m, Message::RetryScheduled { .. }) {
            token.cancel();
        }
        msgs.push(m);
    }
    cancelled(&msgs);
    assert_eq!(starts(&w), 1);
    w.assert_none_left();
}

#[tokio::test]
async fn sigint_to_the_supervisor_is_a_cancel_not_a_failure() {
    // A terminal's Ctrl-C reaches the whole foreground process group, the supervisor included,
    // possibly before the caller's own handler cancels the token.
    let w = World::new("supsigint");
    let recs = mid_tool(r#"{"id":"bash","own_session":true}"#);
    let c = w
        .cassette("s")
        .version("0.87.1")
        .expect("{}")
        .process(PI_DEFAULTS)
        .records(&recs)
        .write();
    let mut stream = std::pin::pin!(
        Provider::new(opts()).execute(w.request(&c, "0.87.1", "0"), CancellationToken::new())
    );
    let mut msgs = vec![stream.next().await.expect("a first message")];
    assert!(
        w.wait_alive(3, Duration::from_secs(10)).len() >= 3,
        "the tool child never started"
    );
    let supervisor = w
        .alive()
        .into_iter()
        .find(|&pid| {
            pi_procs::read_proc(pid).is_some_and(|p| p.command().contains("pi-supervisor"))
        })
        .expect("the supervisor carries the marker");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(supervisor),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    while let Some(m) = stream.next().await {
        msgs.push(m);
    }
    cancelled(&msgs);
    w.assert_none_left();
}

/// The supervisor itself killed with SIGKILL mid-tool (what an OOM killer or a careless
/// `kill -9` does): the run ends at once as failed, and neither pi nor its tool processes
/// (a child in its own session with a grandchild, as pi's bash tool makes them) survive.
/// Before the fix the run hung and pi and its tools were reparented to init.
#[tokio::test]
async fn a_killed_supervisor_ends_the_run_and_leaves_nothing() {
    let w = World::new("supkill");
    let recs = mid_tool(r#"{"id":"bash","own_session":true,"grandchild":{"own_session":false}}"#);
    let c = w
        .cassette("k")
        .version("0.87.1")
        .expect("{}")
        .process(PI_DEFAULTS)
        .records(&recs)
        .write();
    let mut stream = std::pin::pin!(
        Provider::new(opts()).execute(w.request(&c, "0.87.1", "0"), CancellationToken::new())
    );
    let mut msgs = vec![stream.next().await.expect("a first message")];
    // supervisor + fake-pi + child + grandchild
    assert!(
        w.wait_alive(4, Duration::from_secs(10)).len() >= 4,
        "the tool processes never started"
    );
    let supervisor = w
        .alive()
        .into_iter()
        .find(|&pid| {
            pi_procs::read_proc(pid).is_some_and(|p| p.command().contains("pi-supervisor"))
        })
        .expect("the supervisor carries the marker");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(supervisor),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let started = std::time::Instant::now();
    while let Some(m) = stream.next().await {
        msgs.push(m);
    }
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the run did not end after the supervisor died"
    );
    match terminal(&msgs) {
        Message::TerminalFailed(f) => {
            // In words: before, `the supervisor died (Ok(ExitStatus(unix_wait_status(9))))`.
            assert!(
                f.message
                    .contains("the supervisor died (killed by SIGKILL)")
                    && !f.message.contains("ExitStatus"),
                "{f:?}"
            )
        }
        other => panic!("expected terminal.failed, got {other:?}"),
    }
    eprintln!(
        "ended {:?} after the supervisor was killed",
        started.elapsed()
    );
    // pi's parent-death SIGTERM made it kill its tools; nothing is left.
    w.assert_none_left_within(Duration::from_secs(3));
}

/// A supervisor at its process's descriptor limit: it cannot start pi (the spawn needs a
/// pipe) and says so over the control socket, written through the descriptor it has.
/// Before the fix it duplicated that descriptor for each report, and at the limit the
/// duplicate failed and the supervisor panicked: the run ended as a lost supervisor.
#[tokio::test]
async fn a_supervisor_at_its_descriptor_limit_still_reports() {
    use std::os::unix::fs::PermissionsExt;
    let w = World::new("supfds");
    let c = w
        .cassette("ok")
        .version("0.87.1")
        .expect("{}")
        .process("{}")
        .records(conversation("never said"))
        .write();
    // stdin, stdout, stderr, the control socket (3) and the signalfd (4) fit under 5;
    // whatever else the test runner left open is closed first.
    let wrapper = w.path().join("tight-supervisor");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nexec 4>&- 5>&- 6>&- 7>&- 8>&- 9>&-\nulimit -n 5\nexec {} \"$@\"\n",
            env!("CARGO_BIN_EXE_pi-supervisor")
        ),
    )
    .unwrap();
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut o = opts();
    o.supervisor = Some(wrapper);
    let msgs =
        collect(Provider::new(o).execute(w.request(&c, "0.87.1", "0"), CancellationToken::new()))
            .await;
    match terminal(&msgs) {
        Message::TerminalFailed(f) => {
            assert_eq!(f.reason, FailureReason::SpawnFailed, "{f:?}");
            assert!(f.message.contains("Too many open files"), "{}", f.message);
        }
        other => panic!("expected a failed start, got {other:?}"),
    }
    w.assert_none_left();
}

/// A tool that starts a copy of itself and exits at once, SIGTERM ignored, left running by a
/// pi that exits: the supervisor's sweep stops each copy as it reads it and goes on until it
/// has no child left (before, a look that missed the copy of the moment ended the sweep and
/// the copies went on). Nothing carrying the marker is seen in many looks after the run.
#[tokio::test]
async fn a_tool_that_forks_and_exits_at_once_is_swept_when_pi_ends() {
    use std::os::unix::fs::PermissionsExt as _;
    let w = World::new("forker");
    let forker = w.write(
        "forker.sh",
        "trap '' TERM; sh \"$0\" </dev/null >/dev/null 2>&1 &\n",
    );
    let pi = w.write(
        "pi",
        format!(
            "#!/bin/sh\ncat >/dev/null\nsh '{}' </dev/null >/dev/null 2>&1 &\nsleep 0.1\n",
            forker.display()
        ),
    );
    std::fs::set_permissions(&pi, std::fs::Permissions::from_mode(0o755)).unwrap();
    for _ in 0..3 {
        let mut req = w.request(&pi, "0.87.1", "0");
        req.pi_path = Some(pi.clone());
        let _ = collect(Provider::new(opts()).execute(req, CancellationToken::new())).await;
        let end = Instant::now() + Duration::from_millis(300);
        while Instant::now() < end {
            let left = w.alive();
            if !left.is_empty() {
                w.kill_all();
                panic!("the tool's copies outlived the run: {left:?}");
            }
        }
    }
    w.assert_none_left();
}
