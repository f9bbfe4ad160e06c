//! `pi-harness run` as a real process against fake-pi: output shapes, exit statuses, user
//! errors, and cancellation (timer, SIGINT) proving by marker scan that no process survived.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use assert_cmd::Command;
use pi_testkit::messages::{terminal, text_of};
use pi_testkit::records::{conversation, out};
use pi_testkit::{fake_pi, World, MARKER_VAR};
use pi_wire::message::{FailureReason, Message};

use crate::util::{bin, messages, pih};

const ENDS_OK: &str = r#"{"dt_ms":0,"exit":0}"#;
const HANG: &str = r#"{"dt_ms":0,"hang":true}"#;

/// `pi-harness run` on fake-pi replaying `cassette`, every process carrying the world's marker.
fn run(w: &World, cassette: &Path, args: &[&str]) -> Command {
    let mut c = pih();
    c.arg("run")
        .arg("--pi")
        .arg(fake_pi())
        .args(["--provider", "fake", "--model", "fake-model"])
        .args(if args.contains(&"--pi-version") {
            &[][..]
        } else {
            &["--pi-version", "0.87.1"][..]
        })
        .args(args)
        .env(MARKER_VAR, w.marker())
        .env("FAKE_PI_CASSETTE", cassette)
        .env("FAKE_PI_SPEED", "0")
        .env_remove("NO_COLOR")
        .current_dir(w.path())
        .timeout(Duration::from_secs(60));
    c
}

/// `pi-harness run --json` on fake-pi replaying `cassette` at once, prompt `hi`, with the
/// world's marker, as a plain process: for the tests that signal it or read it as it goes.
fn run_process(w: &World, cassette: &Path) -> std::process::Command {
    let mut c = std::process::Command::new(bin());
    c.args(["run", "--json", "--pi-version", "0.87.1", "--pi"])
        .arg(fake_pi())
        .arg("hi")
        .env(MARKER_VAR, w.marker())
        .env("FAKE_PI_CASSETTE", cassette)
        .env("FAKE_PI_SPEED", "0");
    c
}

fn stderr_lines(err: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(err)
        .lines()
        .map(str::to_string)
        .collect()
}

/// A run that streams a little text, starts a tool child in its own session which forks a
/// grandchild into yet another session, then hangs until stopped.
fn hanging_tool(w: &World) -> std::path::PathBuf {
    let mut recs = conversation("working on it");
    recs.truncate(6);
    recs.push(out(
        0,
        r#"{"type":"tool_execution_start","toolCallId":"call_9","toolName":"bash","args":{"command":"sleep 300"}}"#,
    ));
    recs.push(
        r#"{"dt_ms":0,"spawn":{"id":"bash","own_session":true,"grandchild":{"own_session":true}}}"#
            .into(),
    );
    recs.push(HANG.into());
    w.cassette("hang")
        .version("0.87.1")
        .expect("{}")
        .process("{}")
        .records(&recs)
        .write()
}

#[test]
fn completed_run_human_output() {
    let w = World::new("cli-ok");
    let mut recs = conversation("Hello there");
    recs.push(ENDS_OK.into());
    let c = w
        .cassette("ok")
        .version("0.87.1")
        .expect(r#"{"prompt":"say hello"}"#)
        .process("{}")
        .records(&recs)
        .write();
    let a = run(&w, &c, &["say hello"]).assert().code(0);
    let stdout = String::from_utf8_lossy(&a.get_output().stdout).into_owned();
    assert!(stdout.contains("Hello there\n"), "{stdout}");
    assert!(
        stdout.lines().last().unwrap().starts_with("== completed"),
        "{stdout}"
    );
    assert!(!stdout.contains('\x1b'), "colour on a pipe: {stdout:?}");
    w.assert_none_left();
}

#[test]
fn completed_run_json_output() {
    let w = World::new("cli-json");
    let mut recs = conversation("Hello there");
    recs.push(ENDS_OK.into());
    let c = w
        .cassette("ok")
        .version("0.87.1")
        .expect("{}")
        .process("{}")
        .records(&recs)
        .write();
    let a = run(&w, &c, &["--json", "hi"]).assert().code(0);
    let msgs = messages(&a.get_output().stdout);
    assert!(
        matches!(terminal(&msgs), Message::TerminalCompleted { .. }),
        "{msgs:#?}"
    );
    assert_eq!(text_of(&msgs), "Hello there");
    assert!(matches!(&msgs[0], Message::SessionStarted { session_id } if session_id == "sess-1"));
    w.assert_none_left();
}

#[test]
fn version_is_probed_and_prompt_read_from_stdin() {
    let w = World::new("cli-probe");
    let mut recs = conversation("ok");
    recs.push(ENDS_OK.into());
    let c = w
        .cassette("p")
        .version("0.87.1")
        .expect(r#"{"prompt":"-dash first","argv_messages":[]}"#)
        .process("{}")
        .records(&recs)
        .write();
    let mut cmd = pih();
    cmd.args([
        "run",
        "--json",
        "--provider",
        "fake",
        "--model",
        "fake-model",
        "--pi",
    ])
    .arg(fake_pi())
    .arg("-")
    .write_stdin("-dash first")
    .env(MARKER_VAR, w.marker())
    .env("FAKE_PI_CASSETTE", &c)
    .env("FAKE_PI_SPEED", "0")
    .timeout(Duration::from_secs(60));
    let a = cmd.assert().code(0);
    assert!(matches!(
        terminal(&messages(&a.get_output().stdout)),
        Message::TerminalCompleted { .. }
    ));
    w.assert_none_left();
}

#[test]
fn api_key_travels_only_in_its_variable() {
    let w = World::new("cli-key");
    let mut recs = conversation("ok");
    recs.push(ENDS_OK.into());
    let expect = r#"{"env":["MY_TEST_KEY"],"never_in_argv":[{"env":"MY_TEST_KEY"}]}"#;
    let c = w
        .cassette("k")
        .version("0.87.1")
        .expect(expect)
        .process("{}")
        .records(&recs)
        .write();
    run(&w, &c, &["--api-key-env", "MY_TEST_KEY", "--json", "hi"])
        .env("MY_TEST_KEY", "sk-test-abcdef")
        .assert()
        .code(0);
    // Unset: one line naming the flag and the variable, nothing started.
    let a = run(&w, &c, &["--api-key-env", "MY_TEST_KEY", "hi"])
        .env_remove("MY_TEST_KEY")
        .assert()
        .code(2);
    assert_eq!(
        stderr_lines(&a.get_output().stderr),
        ["error: --api-key-env MY_TEST_KEY: the variable is not set in pi-harness's environment"]
    );
    w.assert_none_left();
}

/// pi echoes the key it was given (a 401 error message quotes it): `run` prints it
/// nowhere, text or `--json`, however pi splits it. Before, the failure message, the text
/// and bad-line excerpts carried it; only the stderr tail was redacted.
#[test]
fn an_echoed_api_key_is_never_printed() {
    let w = World::new("cli-key-echo");
    let key = "sk-ant-api03-echoedKEY_123";
    let o = |json: &str| format!(r#"{{"dt_ms":0,"stdout":{json}}}"#);
    let recs = vec![
        o(r#"{"type":"session","version":3,"id":"sess-1","timestamp":"T","cwd":"/w"}"#),
        o(r#"{"type":"agent_start"}"#),
        o(
            r#"{"type":"message_start","message":{"role":"assistant","content":[],"stopReason":"pending"}}"#,
        ),
        o(
            r#"{"type":"message_update","assistantMessageEvent":{"type":"text_delta","contentIndex":0,"delta":"you sent sk-ant-api"}}"#,
        ),
        o(
            r#"{"type":"message_update","assistantMessageEvent":{"type":"text_delta","contentIndex":0,"delta":"03-echoedKEY_123."}}"#,
        ),
        format!(r#"{{"dt_ms":0,"stdout_text":"not json {key}"}}"#),
        format!(r#"{{"dt_ms":0,"stderr":"401 {{\"error\":\"invalid x-api-key {key}\"}}\n"}}"#),
        o(&format!(
            r#"{{"type":"message_end","message":{{"role":"assistant","content":[{{"type":"text","text":"you sent {key}."}}],"stopReason":"error","errorMessage":"401 invalid api key {key}"}}}}"#
        )),
        o(r#"{"type":"agent_end","messages":[]}"#),
        ENDS_OK.into(),
    ];
    let c = w
        .cassette("echo")
        .version("0.87.1")
        .expect(r#"{"env":["MY_TEST_KEY"]}"#)
        .process("{}")
        .records(&recs)
        .write();
    for json in [false, true] {
        let mut args = vec!["--api-key-env", "MY_TEST_KEY", "hi"];
        if json {
            args.insert(0, "--json");
        }
        let a = run(&w, &c, &args).env("MY_TEST_KEY", key).assert().code(1);
        let out = a.get_output();
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!all.contains("echoedKEY"), "json={json}: {all}");
        assert!(
            all.contains("invalid api key [REDACTED]"),
            "json={json}: {all}"
        );
        assert!(
            all.contains("invalid x-api-key [REDACTED]"),
            "json={json}: {all}"
        );
        let text: String = if json {
            messages(&out.stdout)
                .into_iter()
                .filter_map(|m| match m {
                    Message::Assistant { text } => Some(text),
                    _ => None,
                })
                .collect()
        } else {
            all.clone()
        };
        assert!(text.contains("you sent [REDACTED]."), "json={json}: {all}");
    }
    w.assert_none_left();
}

#[test]
fn failed_run_exits_1_with_exit_code_and_stderr() {
    let w = World::new("cli-fail");
    let recs = vec![
        r#"{"dt_ms":0,"stderr":"Error: Unknown model: nope\n"}"#.to_string(),
        r#"{"dt_ms":0,"exit":1}"#.to_string(),
    ];
    let c = w
        .cassette("f")
        .version("0.87.1")
        .expect("{}")
        .process("{}")
        .records(&recs)
        .write();
    let a = run(&w, &c, &["hi"]).assert().code(1);
    let stdout = String::from_utf8_lossy(&a.get_output().stdout).into_owned();
    assert!(stdout.contains("== failed: "), "{stdout}");
    assert!(stdout.contains("pi exited with code 1"), "{stdout}");
    assert!(stdout.contains("| Error: Unknown model: nope"), "{stdout}");
    let a = run(&w, &c, &["--json", "hi"]).assert().code(1);
    match terminal(&messages(&a.get_output().stdout)) {
        Message::TerminalFailed(f) => assert_eq!(f.exit.as_ref().and_then(|e| e.code), Some(1)),
        other => panic!("{other:?}"),
    }
    w.assert_none_left();
}

#[test]
fn timeout_exits_1_with_reason_timeout() {
    let w = World::new("cli-timeout");
    let c = hanging_tool(&w);
    let a = run(
        &w,
        &c,
        &["--timeout", "300ms", "--grace", "500ms", "--json", "hi"],
    )
    .assert()
    .code(1);
    let msgs = messages(&a.get_output().stdout);
    match terminal(&msgs) {
        Message::TerminalFailed(f) => assert_eq!(f.reason, FailureReason::Timeout),
        other => panic!("{other:?}"),
    }
    assert_eq!(text_of(&msgs), "working on it");
    w.assert_none_left();
}

/// A missing supervisor named by PI_HARNESS_SUPERVISOR is a usage error (exit 2, before
/// anything starts), not a failed run (exit 1, as before).
#[test]
fn a_missing_supervisor_is_a_usage_error() {
    let w = World::new("cli-no-supervisor");
    let c = w
        .cassette("s")
        .version("0.87.1")
        .expect("{}")
        .process("{}")
        .records([r#"{"dt_ms":0,"exit":0}"#])
        .write();
    let a = run(&w, &c, &["hi"])
        .env("PI_HARNESS_SUPERVISOR", "/nonexistent/pi-supervisor")
        .assert()
        .code(2);
    let err = String::from_utf8_lossy(&a.get_output().stderr).into_owned();
    assert_eq!(
        err,
        "error: PI_HARNESS_SUPERVISOR=/nonexistent/pi-supervisor: no such file (unset it to use the supervisor built into pi-harness)\n"
    );
    assert!(a.get_output().stdout.is_empty());
    w.assert_none_left();
}

/// Durations past 30 days are refused when parsed (before: `--cancel-after` of 1e19 s
/// panicked adding it to the clock, `--timeout` and `--grace` failed the run).
#[test]
fn absurd_durations_are_usage_errors() {
    let w = World::new("cli-durations");
    let c = w
        .cassette("d")
        .version("0.87.1")
        .expect("{}")
        .process("{}")
        .records([r#"{"dt_ms":0,"exit":0}"#])
        .write();
    for flag in ["--cancel-after", "--timeout", "--grace"] {
        let a = run(&w, &c, &[flag, "10000000000000000000s", "hi"])
            .assert()
            .code(2);
        let err = String::from_utf8_lossy(&a.get_output().stderr).into_owned();
        assert!(err.contains("longer than 30 days"), "{flag}: {err}");
        assert!(!err.contains("panicked"), "{flag}: {err}");
    }
    w.assert_none_left();
}

#[test]
fn request_this_pi_rejects_exits_2() {
    let w = World::new("cli-invalid");
    let c = w
        .cassette("i")
        .version("0.73.1")
        .expect("{}")
        .process("{}")
        .records([ENDS_OK.to_string()])
        .write();
    let a = run(
        &w,
        &c,
        &["--pi-version", "0.73.1", "--thinking", "max", "hi"],
    )
    .assert()
    .code(2);
    let stdout = String::from_utf8_lossy(&a.get_output().stdout).into_owned();
    assert!(
        stdout.contains(
            "== failed: invalid_request: thinking level \"max\" is not accepted by pi 0.73.1"
        ),
        "{stdout}"
    );
    w.assert_none_left();
}

#[test]
fn cancel_after_stops_a_tool_tree_in_its_own_session() {
    let w = World::new("cli-cancelafter");
    let c = hanging_tool(&w);
    let mut child = std::process::Command::new(bin());
    child
        .args([
            "run",
            "--json",
            "--cancel-after",
            "300ms",
            "--pi-version",
            "0.87.1",
            "--pi",
        ])
        .arg(fake_pi())
        .arg("hi")
        .env(MARKER_VAR, w.marker())
        .env("FAKE_PI_CASSETTE", &c)
        .env("FAKE_PI_SPEED", "0")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let started = Instant::now();
    let proc = child.spawn().unwrap();
    // pi-harness, supervisor, fake-pi, the tool child and its grandchild: see all five alive.
    let seen = w.wait_alive(5, Duration::from_secs(10)).len();
    let out = wait_output(proc, Duration::from_secs(30));
    assert_eq!(seen, 5, "the tool tree never ran in full before the cancel");
    assert_eq!(
        out.status.code(),
        Some(130),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(started.elapsed() >= Duration::from_millis(300));
    let msgs = messages(&out.stdout);
    assert!(
        matches!(terminal(&msgs), Message::TerminalCancelled { .. }),
        "{msgs:#?}"
    );
    assert_eq!(text_of(&msgs), "working on it");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--cancel-after: cancelling"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    w.assert_none_left();
}

#[test]
fn sigint_cancels_in_order_and_exits_130() {
    let w = World::new("cli-sigint");
    let c = hanging_tool(&w);
    let mut proc = run_process(&w, &c)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Messages are flushed one by one: the text arrives while the run is still going.
    let mut stdout = BufReader::new(proc.stdout.take().unwrap());
    let mut first = Vec::new();
    let mut line = String::new();
    while stdout.read_line(&mut line).unwrap() > 0 {
        let m: Message = serde_json::from_str(&line).unwrap();
        line.clear();
        let is_text = matches!(m, Message::Assistant { .. });
        first.push(m);
        if is_text {
            break;
        }
    }
    assert_eq!(text_of(&first), "working on it", "{first:#?}");
    assert_eq!(
        w.wait_alive(5, Duration::from_secs(10)).len(),
        5,
        "the tool tree did not start"
    );
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(proc.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    let out = wait_output(proc, Duration::from_secs(30));
    assert_eq!(
        out.status.code(),
        Some(130),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let msgs = messages(rest.as_bytes());
    assert!(
        matches!(msgs.last(), Some(Message::TerminalCancelled { .. })),
        "{msgs:#?}"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("SIGINT: cancelling"));
    w.assert_none_left();
}

/// Wait (bounded) for a child and collect what is left of its output; kill it on the deadline.
fn wait_output(mut p: std::process::Child, within: Duration) -> std::process::Output {
    let end = Instant::now() + within;
    loop {
        if let Some(_status) = p.try_wait().unwrap() {
            return p.wait_with_output().unwrap();
        }
        if Instant::now() > end {
            let _ = p.kill();
            let out = p.wait_with_output().unwrap();
            panic!(
                "pi-harness did not exit: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

// ---------------------------------------------------------------- user errors: one line, exit 2

fn one_error_line(a: &assert_cmd::assert::Assert) -> String {
    let lines = stderr_lines(&a.get_output().stderr);
    assert_eq!(lines.len(), 1, "expected one line: {lines:#?}");
    assert!(lines[0].starts_with("error: "), "{lines:?}");
    assert!(!lines[0].contains("panicked"), "{lines:?}");
    assert!(a.get_output().stdout.is_empty());
    lines[0].clone()
}

#[test]
fn pi_missing_is_one_line() {
    let w = World::new("cli-nopi");
    let missing = w.path().join("no-such-pi");
    let a = pih()
        .args(["run", "--pi"])
        .arg(&missing)
        .arg("hi")
        .assert()
        .code(2);
    assert_eq!(
        one_error_line(&a),
        format!("error: --bin {}: no such file", missing.display())
    );
    // Not on PATH either.
    let a = pih()
        .args(["run", "hi"])
        .env("PATH", w.path())
        .assert()
        .code(2);
    assert_eq!(
        one_error_line(&a),
        "error: pi not found on PATH (install pi or give --bin PATH)"
    );
    w.assert_none_left();
}

#[test]
fn bad_flags_are_one_line_naming_the_flag() {
    let a = pih().args(["run", "--bogus", "hi"]).assert().code(2);
    let line = one_error_line(&a);
    assert!(
        line.contains("'--bogus'") && line.contains("pi-harness run --help"),
        "{line}"
    );
    let a = pih()
        .args(["run", "--timeout", "5x", "hi"])
        .assert()
        .code(2);
    let line = one_error_line(&a);
    assert!(
        line.contains("--timeout") && line.contains("\"5x\""),
        "{line}"
    );
    let a = pih()
        .args(["run", "--env", "NOEQUALS", "hi"])
        .assert()
        .code(2);
    assert!(one_error_line(&a).contains("expected NAME=VALUE"));
    let a = pih().args(["run"]).assert().code(2);
    assert!(one_error_line(&a).contains("<PROMPT>"));
}

#[test]
fn no_backtrace_even_with_rust_backtrace_set() {
    // RUST_BACKTRACE=1 is common in CI: an input error is still one line (before: 20 frames).
    for set in [false, true] {
        let mut c = pih();
        c.args(["run", "--pi", "/nonexistent/pi", "hi"]);
        if set {
            c.env("RUST_BACKTRACE", "1").env("RUST_LIB_BACKTRACE", "1");
        }
        let a = c.assert().code(2);
        assert_eq!(
            String::from_utf8_lossy(&a.get_output().stderr),
            "error: --bin /nonexistent/pi: no such file\n"
        );
    }
}

#[test]
fn help_has_examples_and_exit_codes() {
    for cmd in [&["run", "--help"][..], &["map", "--help"][..]] {
        let a = pih().args(cmd).assert().code(0);
        let help = String::from_utf8_lossy(&a.get_output().stdout).into_owned();
        assert!(help.contains("Examples:"), "{cmd:?}: {help}");
        assert!(help.contains("Exit status:"), "{cmd:?}: {help}");
    }
}

#[test]
fn second_sigint_waits_for_cleanup_and_leaks_nothing() {
    let w = World::new("cli-sigint2");
    let mut recs = conversation("working");
    recs.truncate(6);
    recs.push(
        r#"{"dt_ms":0,"spawn":{"id":"bash","own_session":true,"ignore_sigterm":true}}"#.into(),
    );
    recs.push(HANG.into());
    // pi ignores SIGTERM: only the SIGKILL after the grace period ends it.
    let c = w
        .cassette("i")
        .version("0.87.1")
        .expect("{}")
        .process(r#"{"on_sigterm":{"action":"ignore"}}"#)
        .records(&recs)
        .write();
    let mut proc = std::process::Command::new(bin())
        .args([
            "run",
            "--json",
            "--grace",
            "800ms",
            "--pi-version",
            "0.87.1",
            "--pi",
        ])
        .arg(fake_pi())
        .arg("hi")
        .env(MARKER_VAR, w.marker())
        .env("FAKE_PI_CASSETTE", &c)
        .env("FAKE_PI_SPEED", "0")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // pi-harness, supervisor, fake-pi, tool child.
    assert_eq!(w.wait_alive(4, Duration::from_secs(10)).len(), 4);
    let pid = nix::unistd::Pid::from_raw(proc.id() as i32);
    let mut stderr = BufReader::new(proc.stderr.take().unwrap());
    let int = nix::sys::signal::Signal::SIGINT;
    nix::sys::signal::kill(pid, int).unwrap();
    let first_sigint = Instant::now();
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    assert!(line.contains("SIGINT: cancelling"), "{line}");
    nix::sys::signal::kill(pid, int).unwrap();
    line.clear();
    stderr.read_line(&mut line).unwrap();
    assert!(line.contains("SIGINT: still stopping"), "{line}");
    let out = wait_output(proc, Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(130));
    assert!(
        first_sigint.elapsed() >= Duration::from_millis(800),
        "exited before the grace period"
    );
    match terminal(&messages(&out.stdout)) {
        Message::TerminalCancelled { exit: Some(e) } => {
            assert_eq!(e.signal.as_deref(), Some("SIGKILL"))
        }
        other => panic!("{other:?}"),
    }
    w.assert_none_left();
}

/// A `pi` that replays the Nth cassette on its Nth start (fake-pi behind a shell wrapper).
fn attempts(w: &World, cassettes: &[std::path::PathBuf]) -> std::path::PathBuf {
    let wrapper = w.path().join("pi-attempts");
    let mut script = format!(
        "#!/bin/sh\nn=$(cat '{dir}/count' 2>/dev/null || echo 0)\nn=$((n+1))\necho $n > '{dir}/count'\n",
        dir = w.path().display()
    );
    for (i, c) in cassettes.iter().enumerate() {
        script.push_str(&format!(
            "[ $n -eq {} ] && export FAKE_PI_CASSETTE='{}'\n",
            i + 1,
            c.display()
        ));
    }
    script.push_str(&format!("exec '{}' \"$@\"\n", fake_pi().display()));
    std::fs::write(&wrapper, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    wrapper
}

#[test]
fn retry_is_announced_and_the_second_attempt_completes() {
    let w = World::new("cli-retry");
    let mut dead = conversation("lost");
    dead.truncate(6);
    dead.push(r#"{"dt_ms":0,"signal":"SIGKILL"}"#.into());
    let mut ok = conversation("recovered");
    ok.push(ENDS_OK.into());
    let c1 = w
        .cassette("a1")
        .version("0.87.1")
        .expect("{}")
        .process("{}")
        .records(&dead)
        .write();
    let c2 = w
        .cassette("a2")
        .version("0.87.1")
        .expect("{}")
        .process("{}")
        .records(&ok)
        .write();
    let pi = attempts(&w, &[c1.clone(), c2]);
    let a = pih()
        .args([
            "run",
            "--retry",
            "2",
            "--retry-delay",
            "10ms",
            "--pi-version",
            "0.87.1",
            "--pi",
        ])
        .arg(&pi)
        .arg("hi")
        .env(MARKER_VAR, w.marker())
        .env("FAKE_PI_SPEED", "0")
        .timeout(Duration::from_secs(60))
        .assert()
        .code(0);
    let stdout = String::from_utf8_lossy(&a.get_output().stdout).into_owned();
    assert!(
        stdout.contains("~~ retrying (the answer above is discarded): attempt 2/3 in "),
        "{stdout}"
    );
    assert!(stdout.contains("recovered\n== completed"), "{stdout}");
    assert_eq!(
        std::fs::read_to_string(w.path().join("count"))
            .unwrap()
            .trim(),
        "2"
    );
    w.assert_none_left();
}

/// Ctrl-C at a terminal: SIGINT goes to the whole foreground process group, so pi-supervisor
/// gets it as well as pi-harness. The outcome is still `cancelled` (130) with nothing left.
#[test]
fn ctrl_c_to_the_process_group_is_a_cancel() {
    use std::os::unix::process::CommandExt;
    for round in 0..5 {
        let w = World::new("cli-ctrlc");
        let c = hanging_tool(&w);
        let proc = run_process(&w, &c)
            .process_group(0)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        assert_eq!(
            w.wait_alive(5, Duration::from_secs(10)).len(),
            5,
            "the tool tree did not start"
        );
        let group = nix::unistd::Pid::from_raw(-(proc.id() as i32));
        nix::sys::signal::kill(group, nix::sys::signal::Signal::SIGINT).unwrap();
        let out = wait_output(proc, Duration::from_secs(30));
        let msgs = messages(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(130),
            "round {round}: {:?} stderr: {}",
            msgs.last(),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            matches!(terminal(&msgs), Message::TerminalCancelled { .. }),
            "{msgs:#?}"
        );
        w.assert_none_left();
    }
}

/// A reader that never reads: pi-harness stops reading the stream (backpressure reaches pi),
/// and Ctrl-C still cancels in order and ends the process, nothing left behind.
#[test]
fn ctrl_c_works_while_stdout_is_not_read() {
    let w = World::new("cli-stuck");
    let mut recs = conversation("x");
    recs.truncate(5);
    let chunk = "y".repeat(1000);
    for _ in 0..3000 {
        recs.push(out(
            0,
            &format!(r#"{{"type":"message_update","assistantMessageEvent":{{"type":"text_delta","contentIndex":0,"delta":"{chunk}"}}}}"#),
        ));
    }
    recs.push(HANG.into());
    let c = w
        .cassette("stuck")
        .version("0.87.1")
        .expect("{}")
        .process("{}")
        .records(&recs)
        .write();
    let mut proc = run_process(&w, &c)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = proc.stdout.take().unwrap(); // held open, never read
    assert_eq!(w.wait_alive(3, Duration::from_secs(10)).len(), 3);
    // Wait until the output pipe is full and stays so: pi-harness is blocked on stdout.
    let end = Instant::now() + Duration::from_secs(10);
    let mut last = -1;
    loop {
        let mut queued: nix::libc::c_int = 0;
        // FIONREAD: bytes waiting in the pipe.
        let rc = unsafe {
            nix::libc::ioctl(
                std::os::fd::AsRawFd::as_raw_fd(&stdout),
                nix::libc::FIONREAD,
                &mut queued,
            )
        };
        assert_eq!(rc, 0);
        if queued > 0 && queued == last {
            break;
        }
        last = queued;
        assert!(
            Instant::now() < end,
            "the output never filled the pipe ({queued} bytes)"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let started = Instant::now();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(proc.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let out = wait_output(proc, Duration::from_secs(20));
    drop(stdout);
    assert_eq!(
        out.status.code(),
        Some(130),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    w.assert_none_left();
}

/// A CI job's timeout SIGKILLs the job's whole process group: `pi-harness run` and
/// everything in its group die at once. The supervisor runs in its own group, sees the
/// control socket close and stops pi and its tool tree in order: nothing is left. Before
/// the fix fake-pi and its tool processes survived (3 of 3).
#[test]
fn sigkill_of_the_whole_process_group_leaves_nothing() {
    use std::os::unix::process::CommandExt;
    let w = World::new("cli-groupkill");
    let c = hanging_tool(&w);
    let mut proc = run_process(&w, &c)
        .process_group(0)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // pi-harness + supervisor + fake-pi + child + grandchild
    assert_eq!(
        w.wait_alive(5, Duration::from_secs(10)).len(),
        5,
        "the tool tree did not start"
    );
    let group = nix::unistd::Pid::from_raw(-(proc.id() as i32));
    nix::sys::signal::kill(group, nix::sys::signal::Signal::SIGKILL).unwrap();
    let _ = proc.wait();
    // The supervisor's orderly stop: SIGTERM, at most the 2 s grace, then SIGKILL.
    w.assert_none_left_within(Duration::from_secs(8));
}

fn rpc_cassette(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../cassettes/rpc")
        .join(format!("{name}.cassette.jsonl"))
}

/// `run --rpc`: the prompt through an RPC session (fake-pi checks it is sent as the
/// recorded client sent it), the same normalized stream as json mode.
#[test]
fn rpc_run_streams_the_prompts_run() {
    let w = World::new("cli_run_rpc");
    let out = run(
        &w,
        &rpc_cassette("rpc_two_prompts.pi152"),
        &["--rpc", "--json", "--pi-version", "1.5.2", "first prompt"],
    )
    .output()
    .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let msgs = messages(&out.stdout);
    assert_eq!(text_of(&msgs), "First answer.");
    assert!(matches!(terminal(&msgs), Message::TerminalCompleted { .. }));
    w.assert_none_left();
}

/// `run --rpc --cancel-after` while pi's bash tool runs: the session is shut down, the run
/// ends cancelled (exit 130), and the tool's process is gone with pi.
#[test]
fn rpc_run_cancelled_mid_tool_leaves_nothing() {
    let w = World::new("cli_run_rpc_cancel");
    let out = run(
        &w,
        &rpc_cassette("rpc_eof_mid_tool.pi152"),
        &[
            "--rpc",
            "--json",
            "--pi-version",
            "1.5.2",
            "--cancel-after",
            "1500ms",
            "run the tool",
        ],
    )
    .env("FAKE_PI_SPEED", "1")
    .output()
    .unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let msgs = messages(&out.stdout);
    assert!(msgs.iter().any(|m| matches!(m, Message::ToolCall { .. })));
    assert!(matches!(terminal(&msgs), Message::TerminalCancelled { .. }));
    w.assert_none_left();
}

#[test]
fn rpc_run_refuses_what_it_cannot_do() {
    let w = World::new("cli_run_rpc_usage");
    let out = run(
        &w,
        &rpc_cassette("rpc_two_prompts.pi152"),
        &["--rpc", "--retry", "2", "hi"],
    )
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--retry") && err.contains("--rpc"), "{err}");
    w.assert_none_left();
}

/// The marked process whose name (`/proc/PID/comm`) is `pi-supervisor`: the supervisor
/// `run` forked before its runtime started (one executed again is named after its file).
fn preforked_supervisor(w: &World) -> Option<pi_procs::ProcInfo> {
    w.alive().into_iter().find_map(|pid| {
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
        (comm.trim() == "pi-supervisor")
            .then(|| pi_procs::read_proc(pid))
            .flatten()
    })
}

/// A stand-in pi (a shell script) that reports what it was given: its working directory,
/// three variables and the prompt, as the text of one answer.
fn reporting_pi(w: &World) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let pi = w.path().join("reporting-pi");
    std::fs::write(
        &pi,
        r#"#!/bin/sh
prompt=$(cat)
t="cwd=$(pwd) host=$FROM_HOST flag=$FROM_FLAG key=$MY_TEST_KEY hook=${PI_PROVIDER_RUN_SUPERVISOR-unset} prompt=$prompt"
echo '{"type":"session","version":3,"id":"s-1","timestamp":"T","cwd":"/w"}'
printf '{"type":"message_update","assistantMessageEvent":{"type":"text_delta","contentIndex":0,"delta":"%s"}}\n' "$t"
printf '{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"%s"}],"stopReason":"stop"}}\n' "$t"
echo '{"type":"agent_end","messages":[]}'
"#,
    )
    .unwrap();
    std::fs::set_permissions(&pi, std::fs::Permissions::from_mode(0o755)).unwrap();
    pi
}

/// The supervisor `run` forks ahead of time gets pi's whole start from the run, not from
/// the moment of the fork: the environment (the host's, `--env` over it, the key), the
/// working directory (`--cwd`), stdin with the prompt; and the variable that makes an
/// executed host a supervisor never reaches pi.
#[test]
fn a_preforked_supervisor_starts_pi_as_the_run_asks() {
    let w = World::new("cli-prefork-env");
    let pi = reporting_pi(&w);
    let cwd = w.path().join("work dir");
    std::fs::create_dir(&cwd).unwrap();
    let out = pih()
        .args(["run", "--json", "--pi-version", "0.87.1", "--pi"])
        .arg(&pi)
        .args(["--env", "FROM_FLAG=flag", "--env", "FROM_HOST=over"])
        .args(["--api-key-env", "MY_TEST_KEY", "--cwd"])
        .arg(&cwd)
        .arg("the prompt")
        .env(MARKER_VAR, w.marker())
        .env("FROM_HOST", "host")
        .env("FROM_FLAG", "host")
        .env("MY_TEST_KEY", "sk-test-prefork-0123456789")
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let msgs = messages(&out.stdout);
    assert_eq!(
        text_of(&msgs),
        format!(
            "cwd={} host=over flag=flag key=[REDACTED] hook=unset prompt=the prompt",
            cwd.display()
        )
    );
    // A second variable of the host's, untouched by any flag, arrives as it is.
    let out = pih()
        .args(["run", "--json", "--pi-version", "0.87.1", "--pi"])
        .arg(&pi)
        .arg("again")
        .env(MARKER_VAR, w.marker())
        .env("FROM_HOST", "host")
        .env_remove("FROM_FLAG")
        .env_remove("MY_TEST_KEY")
        .current_dir(&cwd)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    assert_eq!(
        text_of(&messages(&out.stdout)),
        format!(
            "cwd={} host=host flag= key= hook=unset prompt=again",
            cwd.display()
        )
    );
    w.assert_none_left();
}

/// A preforked supervisor that no run took (here the version probe fails, so pi never
/// starts) ends with `run`, even one stopped so that it cannot notice `run`'s exit: `run`
/// kills and reaps it before it exits. (Without that, the kernel's SIGHUP to an orphaned,
/// stopped process group ends it a moment after `run`, so this test does not tell the two
/// apart; it guards the outcome: nothing of `run`'s outlives it.)
#[test]
fn an_unused_preforked_supervisor_ends_with_run() {
    use std::os::unix::fs::PermissionsExt;
    let w = World::new("cli-prefork-unused");
    let pi = w.path().join("slow-failing-pi");
    std::fs::write(
        &pi,
        "#!/bin/sh\nsleep 1\necho 'no version here' >&2\nexit 1\n",
    )
    .unwrap();
    std::fs::set_permissions(&pi, std::fs::Permissions::from_mode(0o755)).unwrap();
    let proc = std::process::Command::new(bin())
        .args(["run", "--json", "--pi"])
        .arg(&pi)
        .arg("hi")
        .env(MARKER_VAR, w.marker())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let end = Instant::now() + Duration::from_secs(10);
    let supervisor = loop {
        if let Some(p) = preforked_supervisor(&w) {
            break p;
        }
        assert!(Instant::now() < end, "no preforked supervisor appeared");
        std::thread::sleep(Duration::from_millis(5));
    };
    assert_eq!(supervisor.ppid, proc.id() as i32, "forked by run itself");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(supervisor.pid),
        nix::sys::signal::Signal::SIGSTOP,
    )
    .unwrap();
    let out = wait_output(proc, Duration::from_secs(30));
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        matches!(terminal(&messages(&out.stdout)), Message::TerminalFailed(f) if f.reason == FailureReason::SpawnFailed),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    w.assert_none_left();
}

/// SIGKILL of the supervisor `run` forked, while a tool runs: `run` ends at once as failed
/// and neither pi nor its tool processes survive (the provider's test covers the executed
/// supervisor).
#[test]
fn sigkill_of_the_preforked_supervisor_ends_the_run_and_leaves_nothing() {
    let w = World::new("cli-prefork-kill");
    let mut recs = conversation("working on it");
    recs.truncate(6);
    recs.push(
        r#"{"dt_ms":0,"spawn":{"id":"bash","own_session":true,"grandchild":{"own_session":false}}}"#
            .into(),
    );
    recs.push(HANG.into());
    let c = w
        .cassette("hang")
        .version("0.87.1")
        .expect("{}")
        .process("{}")
        .records(&recs)
        .write();
    let proc = run_process(&w, &c)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // pi-harness, supervisor, fake-pi, the tool child and its grandchild.
    assert_eq!(w.wait_alive(5, Duration::from_secs(10)).len(), 5);
    let supervisor = preforked_supervisor(&w).expect("run forks its supervisor");
    assert_eq!(supervisor.ppid, proc.id() as i32);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(supervisor.pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let started = Instant::now();
    let out = wait_output(proc, Duration::from_secs(30));
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let msgs = messages(&out.stdout);
    assert!(
        matches!(terminal(&msgs), Message::TerminalFailed(f) if f.reason == FailureReason::ProcessSignal),
        "{msgs:#?}"
    );
    w.assert_none_left_within(Duration::from_secs(8));
}

/// `run` writes a pipe on its stdout without a blocking thread, through a file description
/// of its own (the pipe opened again, non-blocking): the description it was given stays
/// blocking for everyone who shares it, and a reader that drains slowly, far behind a
/// pipe's capacity, still gets every byte.
#[test]
fn a_pipe_on_stdout_stays_as_given_and_a_slow_reader_gets_everything() {
    use std::io::Read;
    use std::os::fd::AsRawFd;
    let w = World::new("cli-stdout-pipe");
    let text = "0123456789abcdefghij ".repeat(25_000); // 525 KB, eight times a pipe's 64 KiB
    let mut recs = conversation(&text);
    recs.push(ENDS_OK.into());
    let c = w
        .cassette("big")
        .version("0.87.1")
        .expect("{}")
        .process("{}")
        .records(&recs)
        .write();
    let (read_end, write_end) = nix::unistd::pipe().unwrap();
    let ours = write_end.try_clone().unwrap();
    let mut proc = run_process(&w, &c)
        .stdout(Stdio::from(write_end))
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut reader = std::fs::File::from(read_end);
    let mut got = Vec::new();
    let mut chunk = [0u8; 4096];
    let end = Instant::now() + Duration::from_secs(60);
    // Slowly, until the terminal line is in (our copy of the write end keeps the pipe open).
    while !got.ends_with(b"\n") || !String::from_utf8_lossy(&got).contains("\"terminal.") {
        assert!(Instant::now() < end, "the output never ended");
        let n = reader.read(&mut chunk).unwrap();
        assert!(n > 0, "the pipe ended before the terminal message");
        got.extend_from_slice(&chunk[..n]);
        std::thread::sleep(Duration::from_micros(300));
    }
    assert_eq!(proc.wait().unwrap().code(), Some(0));
    let msgs = messages(&got);
    assert_eq!(text_of(&msgs), text);
    assert!(matches!(terminal(&msgs), Message::TerminalCompleted { .. }));
    let flags = nix::fcntl::fcntl(ours.as_raw_fd(), nix::fcntl::FcntlArg::F_GETFL).unwrap();
    assert_eq!(
        flags & nix::libc::O_NONBLOCK,
        0,
        "run left the shared pipe non-blocking"
    );
    w.assert_none_left();
}

/// `pi-harness ARGS` under `ulimit LIMIT` (`-n N`: soft and hard; `-S -n N`: soft only), with
/// the world's marker and a replayable fake-pi cassette in its environment.
fn under_ulimit(w: &World, limit: &str, args: &[&str]) -> std::process::Output {
    let c = w
        .cassette("fds")
        .records(conversation("Hello"))
        .record(r#"{"dt_ms":0,"exit":0}"#)
        .write();
    std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit {limit} && exec \"$0\" \"$@\""))
        .arg(bin())
        .args(args)
        .env(MARKER_VAR, w.marker())
        .env("FAKE_PI_CASSETTE", &c)
        .env("FAKE_PI_SPEED", "0")
        .env("PI_CODING_AGENT_DIR", w.agent_dir())
        .env_remove("RUST_BACKTRACE")
        .current_dir(w.path())
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// With almost no descriptors left, `run` and `serve-llm` stop with one line saying how many
/// they have and need (they panicked inside tokio's signal set-up before); a soft limit below
/// what they need is raised toward the hard one, and the run goes on.
#[test]
fn too_few_descriptors_is_one_line_not_a_panic() {
    let w = World::new("run-fds");
    let pi = fake_pi().display().to_string();
    for (limit, args) in [
        (
            "-n 8",
            vec!["run", "--pi", pi.as_str(), "--no-session", "hi"],
        ),
        ("-n 6", vec!["serve-llm", "--script", "/nonexistent.json"]),
    ] {
        let out = under_ulimit(&w, limit, &args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "{err}");
        if args[0] == "run" {
            assert_eq!(out.status.code(), Some(1), "{err}");
            assert_eq!(err.lines().count(), 1, "{err}");
            assert!(
                err.starts_with("error: too few file descriptors: ")
                    && err.contains("this command needs 32 more"),
                "{err}"
            );
        } else {
            // The script is read first: its error comes before any runtime.
            assert_eq!(out.status.code(), Some(2), "{err}");
        }
    }
    let script = w.write("s.json", r#"{"turns":[{"text":["hi"]}]}"#);
    let out = under_ulimit(
        &w,
        "-n 6",
        &["serve-llm", "--script", &script.display().to_string()],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.starts_with("error: too few file descriptors: "),
        "{err}"
    );
    // Only the soft limit low: raised, and the run replays to its end.
    let out = under_ulimit(&w, "-S -n 8", &["run", "--pi", &pi, "--no-session", "hi"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("too few file descriptors"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    w.assert_none_left();
}

/// A supervisor that stops answering (SIGSTOP) while a run's timeout passes: the run ends
/// promptly with the timeout's outcome (`terminal.failed`, reason timeout, exit 1), and the
/// tool child that left pi's group for its own session (with its grandchild) is killed too,
/// not left running. Before, the run waited for the stopped supervisor's report for grace +
/// kill wait + 2 s (about 9 s with the defaults) and killed only pi's group and the supervisor.
#[test]
fn a_stopped_supervisor_past_the_timeout_ends_the_run_promptly_and_leaves_nothing() {
    let w = World::new("cli-stopped-supervisor");
    let mut recs = conversation("working on it");
    recs.truncate(6);
    recs.push(
        r#"{"dt_ms":0,"spawn":{"id":"bash","own_session":true,"grandchild":{"own_session":false}}}"#
            .into(),
    );
    recs.push(HANG.into());
    let c = w
        .cassette("hang")
        .version("0.87.1")
        .expect("{}")
        .process("{}")
        .records(&recs)
        .write();
    let started = Instant::now();
    let proc = run_process(&w, &c)
        .args(["--timeout", "2s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // pi-harness, supervisor, fake-pi, the tool child and its grandchild.
    assert_eq!(w.wait_alive(5, Duration::from_secs(10)).len(), 5);
    let supervisor = preforked_supervisor(&w).expect("run forks its supervisor");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(supervisor.pid),
        nix::sys::signal::Signal::SIGSTOP,
    )
    .unwrap();
    let out = wait_output(proc, Duration::from_secs(60));
    let elapsed = started.elapsed();
    let err = String::from_utf8_lossy(&out.stderr);
    let msgs = messages(&out.stdout);
    assert!(
        matches!(terminal(&msgs), Message::TerminalFailed(f) if f.reason == FailureReason::Timeout),
        "{msgs:#?}"
    );
    assert_eq!(out.status.code(), Some(1), "{err}");
    // Not a benchmark: a bound on the behaviour. The documented bound is the timeout plus
    // about half a second once the supervisor is seen stopped; 5 s leaves room for a loaded
    // machine and still fails the old wait of grace + kill wait + 2 s (about 9 s).
    assert!(
        elapsed < Duration::from_secs(5),
        "run --timeout 2s took {elapsed:?} with a stopped supervisor"
    );
    // Everything is gone when run returns, not a moment later.
    w.assert_none_left();
}
