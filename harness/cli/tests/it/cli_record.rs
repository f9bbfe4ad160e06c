//! `pi-harness record` end to end with a tiny fake "pi" (a bash script that really talks
//! to the scripted server over /dev/tcp), so no real pi is needed.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use assert_cmd::Command;
use pi_cassette::{Action, Cassette, OriginKind, TimingKind};
use pi_testkit::{World, MARKER_VAR};

use crate::util::repo;

const FAKE_PI: &str = r#"#!/usr/bin/env bash
set -euo pipefail
prompt="$(cat)"
case "${FAKE_PI_MODE:-}" in
  # pi failing before any model request, as it does without a key for its provider.
  norequest) echo 'Error: No API key found for openai.' >&2; exit 1 ;;
  # What the agent dir says, on stderr (recorded, redacted).
  agentdir) cat "$PI_CODING_AGENT_DIR/models.json" "$PI_CODING_AGENT_DIR/settings.json" >&2 ;;
esac
models="$PI_CODING_AGENT_DIR/models.json"
port=$(sed -n 's|.*"baseUrl": *"http://127\.0\.0\.1:\([0-9]*\)/v1".*|\1|p' "$models")
key=$(sed -n 's|.*"apiKey": *"\([^"]*\)".*|\1|p' "$models")
printf '{"type":"session","version":3,"id":"0199aaaa-bbbb-7ccc-8ddd-eeeeffff0000","timestamp":"2026-11-21T23:03:10.254Z","cwd":"%s"}\n' "$PWD"
body=$(printf '{"model":"fake-model","stream":true,"messages":[{"role":"user","content":"%s"}]}' "$prompt")
exec 3<>"/dev/tcp/127.0.0.1/$port"
printf 'POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s' "$key" "${#body}" "$body" >&3
resp=$(cat <&3)
text=$(printf '%s' "$resp" | grep -o '"content":"[^"]*"' | sed 's/"content":"\(.*\)"/\1/' | tr -d '\n')
printf '{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"%s"}],"timestamp":1795302190417}}\n' "$text"
echo "note: ran in $PWD against 127.0.0.1:$port" >&2
case "${FAKE_PI_MODE:-}" in
  twice)
    # pi retrying behind the caller's back: a second model request the script cannot answer.
    exec 4<>"/dev/tcp/127.0.0.1/$port"
    printf 'POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s' "$key" "${#body}" "$body" >&4
    cat <&4 >/dev/null ;;
  leak) printf '\xff raw key %s\n' "$key" ;;
  sigint)
    # Start the tool child first and wait until it is `sleep` (exec done), so the signal the
    # recorder sends 100 ms after the line below always finds it, however loaded the machine.
    setsid sleep 301 &
    while [ "$(cat /proc/$!/comm 2>/dev/null)" != sleep ]; do :; done
    printf '{"type":"tool_execution_start","toolCallId":"call_9","toolName":"bash","args":{"command":"sleep 301"}}\n'
    exec sleep 302 ;;
esac
exit 0
"#;

/// The LLM script of a recording of fake-pi (which replays a session and never calls the
/// model): no turns.
const NO_MODEL: &str = r#"{"turns":[]}"#;

pub(crate) struct Setup {
    pub(crate) world: World,
    pub(crate) pi: PathBuf,
    pub(crate) script: PathBuf,
}

impl Setup {
    pub(crate) fn path(&self) -> &Path {
        self.world.path()
    }
}

pub(crate) fn setup() -> Setup {
    let world = World::new("record");
    let pi = world.write("fake-pi", FAKE_PI);
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&pi, std::fs::Permissions::from_mode(0o755)).unwrap();
    let script = world.write(
        "script.json",
        r#"{"turns":[{"text":["Hello ","there"]}],"files":{"a.txt":"x"}}"#,
    );
    Setup { world, pi, script }
}

fn record(s: &Setup, out: &Path, mode: &str, extra: &[&str]) -> assert_cmd::assert::Assert {
    record_with(
        s,
        out,
        mode,
        extra,
        &[
            "--mode",
            "json",
            "--provider",
            "fake",
            "--model",
            "fake-model",
            "--no-session",
        ],
    )
}

/// `pi-harness record` of the bash "pi" (pi 0.87.1, the prompt on stdin) in `mode`, with
/// the recorder's `extra` options and pi's `pi_args`.
pub(crate) fn record_with(
    s: &Setup,
    out: &Path,
    mode: &str,
    extra: &[&str],
    pi_args: &[&str],
) -> assert_cmd::assert::Assert {
    let mut cmd = Command::cargo_bin("pi-harness").unwrap();
    cmd.env(MARKER_VAR, s.world.marker())
        .env("FAKE_PI_MODE", mode)
        .args(record_args(s, out, extra, pi_args))
        .timeout(Duration::from_secs(90));
    cmd.assert()
}

/// The arguments of [`record_with`]'s `pi-harness` command line.
fn record_args(s: &Setup, out: &Path, extra: &[&str], pi_args: &[&str]) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec!["record".into(), "--script".into(), s.script.clone().into()];
    args.extend([
        "--out".into(),
        out.into(),
        "--pi".into(),
        s.pi.clone().into(),
    ]);
    args.extend(
        [
            "--pi-version",
            "0.87.1",
            "--stdin",
            "say hi",
            "--timeout",
            "60",
        ]
        .map(OsString::from),
    );
    args.extend([
        "--request-log".into(),
        s.path().join("requests.jsonl").into(),
    ]);
    args.extend(extra.iter().map(OsString::from));
    args.push("--".into());
    args.extend(pi_args.iter().map(OsString::from));
    args
}

/// Nothing carrying the marker may be left, within a short deadline (exits are asynchronous).
pub(crate) fn assert_nothing_left(s: &Setup) {
    s.world.assert_none_left_within(Duration::from_secs(5));
}

#[test]
fn records_redacts_and_logs_the_prompt() {
    let s = setup();
    let out = s.path().join("out/hello.pi87.cassette.jsonl");
    record(&s, &out, "", &["--scenario", "hello"]).success();
    assert_nothing_left(&s);

    let c = Cassette::load(&out).unwrap();
    assert_eq!(c.header.origin.kind, OriginKind::Recorded);
    assert_eq!(c.header.origin.timing, TimingKind::Measured);
    assert_eq!(c.header.scenario.name, "hello");
    assert_eq!(c.header.pi.version, "0.87.1");
    assert_eq!(c.header.expect.prompt.as_deref(), Some("say hi"));
    let stdout = String::from_utf8(c.stdout_bytes()).unwrap();
    assert_eq!(
        stdout,
        concat!(
            r#"{"type":"session","version":3,"id":"<SESSION_ID>","timestamp":"<TS>","cwd":"<CWD>"}"#,
            "\n",
            r#"{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"Hello there"}],"timestamp":1700000000000}}"#,
            "\n"
        )
    );
    let stderr: Vec<u8> = c
        .records
        .iter()
        .filter_map(|r| match &r.action {
            Action::Stderr(b) => Some(b.data.clone()),
            _ => None,
        })
        .flatten()
        .collect();
    assert_eq!(
        String::from_utf8(stderr).unwrap(),
        "note: ran in <CWD> against 127.0.0.1:<PORT>\n"
    );
    assert_eq!(c.ending(), &Action::Exit(0));
    for p in ["<SESSION_ID>", "<CWD>", "<TS>", "1700000000000"] {
        assert!(
            c.header.redactions.contains_key(p),
            "{p} missing from {:?}",
            c.header.redactions
        );
    }
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(!text.contains("pi-harness-rec-"), "a temp path leaked");
    assert!(!text.contains("pih-key-"), "the key leaked");
    // The delivery proof: the prompt reached the model in request 1.
    let log = std::fs::read_to_string(s.path().join("requests.jsonl")).unwrap();
    let first: serde_json::Value = serde_json::from_str(log.lines().next().unwrap()).unwrap();
    assert_eq!(first["index"], 1);
    assert_eq!(first["messages"][0]["content"], "say hi");
    assert_eq!(first["has_api_key"], true);
}

#[test]
fn refuses_to_keep_a_cassette_that_still_holds_the_key() {
    let s = setup();
    let out = s.path().join("leak.cassette.jsonl");
    // The key sits in a non-UTF-8 line, which redaction cannot touch: the final scan must catch it.
    record(&s, &out, "leak", &[])
        .failure()
        .stderr(predicates::str::contains("API key"));
    assert!(!out.exists());
    let leftovers: Vec<_> = std::fs::read_dir(s.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains("partial"))
        .collect();
    assert!(leftovers.is_empty(), "partial file left: {leftovers:?}");
    assert_nothing_left(&s);
}

#[test]
fn sigint_mid_tool_records_the_orphan_and_leaves_nothing() {
    let s = setup();
    let out = s.path().join("sigint.cassette.jsonl");
    record(
        &s,
        &out,
        "sigint",
        &["--signal", "SIGINT", "--at", "tool_execution_start+100"],
    )
    .success();
    // The recorder killed the orphan that survived the fake pi.
    assert_nothing_left(&s);
    let c = Cassette::load(&out).unwrap();
    let keys: Vec<&str> = c.records.iter().map(|r| r.action.key()).collect();
    let tail = &keys[keys.len() - 2..];
    assert_eq!(tail, ["spawn", "hang"], "{keys:?}");
    let Action::Spawn(sp) = &c.records[c.records.len() - 2].action else {
        unreachable!()
    };
    assert!(sp.own_session, "setsid child is in its own session");
    assert!(sp.hold_stdout, "the orphan inherited pi's stdout");
    let notes = c.header.origin.notes.as_deref().unwrap();
    assert!(
        notes.contains("SIGINT sent 100 ms after the first `tool_execution_start`"),
        "{notes}"
    );
    assert!(notes.contains("died by SIGINT"), "{notes}");
    assert!(
        notes.contains("survived pi: `sleep 301` (own session)"),
        "{notes}"
    );
}

/// Started as a non-interactive shell starts a background job (`pi-harness record ... &`, as a
/// CI step is), the recorder inherits SIGINT ignored; the CLI it records must not: it ran on
/// for 10 s after the SIGINT ("pi was still running 10 s after SIGINT", nothing written).
#[test]
fn a_recorder_started_with_sigint_ignored_still_records_the_cli_s_answer() {
    let s = setup();
    let out = s.path().join("sigint-bg.cassette.jsonl");
    let args = record_args(
        &s,
        &out,
        &["--signal", "SIGINT", "--at", "tool_execution_start+100"],
        &[
            "--mode",
            "json",
            "--provider",
            "fake",
            "--model",
            "fake-model",
            "--no-session",
        ],
    );
    // POSIX: an asynchronous list of a shell without job control ignores SIGINT and SIGQUIT.
    let o = std::process::Command::new("sh")
        .args([
            "-c",
            "grep '^SigIgn' /proc/self/status >&2 & wait $!; \"$@\" & wait $!",
            "sh",
        ])
        .arg(assert_cmd::cargo::cargo_bin("pi-harness"))
        .args(args)
        .env(MARKER_VAR, s.world.marker())
        .env("FAKE_PI_MODE", "sigint")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    // The premise: what sh's background job starts with (SIGINT is bit 2, SIGQUIT bit 3).
    let ignored = err
        .lines()
        .find_map(|l| l.strip_prefix("SigIgn:"))
        .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
        .unwrap_or_else(|| panic!("no SigIgn line: {err}"));
    assert_eq!(ignored & 0b110, 0b110, "{err}");
    assert!(o.status.success(), "{err}");
    assert_nothing_left(&s);
    let c = Cassette::load(&out).unwrap();
    let notes = c.header.origin.notes.as_deref().unwrap();
    assert!(notes.contains("died by SIGINT"), "{notes}");
}

#[test]
fn a_signal_point_that_never_comes_is_an_error() {
    let s = setup();
    let out = s.path().join("never.cassette.jsonl");
    record(
        &s,
        &out,
        "",
        &["--signal", "SIGTERM", "--at", "tool_execution_start+10"],
    )
    .failure()
    .stderr(predicates::str::contains(
        "pi never printed a `tool_execution_start` line",
    ));
    assert!(!out.exists());
    assert_nothing_left(&s);
}

/// pi asked more often than the script answers (it retried on the 500): before, the
/// cassette was written without a word; now nothing is written unless --allow-exhausted.
#[test]
fn an_exhausted_script_is_an_error_unless_allowed() {
    let s = setup();
    let out = s.path().join("twice.cassette.jsonl");
    let a = record(&s, &out, "twice", &[]).code(2);
    let err = String::from_utf8_lossy(&a.get_output().stderr).into_owned();
    assert!(
        err.contains("the script answers 1 model request(s), pi made 2 (1 got HTTP 500"),
        "{err}"
    );
    assert!(
        err.contains("nothing written (--allow-exhausted records it anyway)"),
        "{err}"
    );
    assert!(!out.exists());
    record(&s, &out, "twice", &["--allow-exhausted"]).success();
    assert!(out.exists());
    assert_nothing_left(&s);
}

/// A missing --bin is named first (before: "cannot find pi's package.json").
#[test]
fn a_missing_pi_is_named_first() {
    let s = setup();
    let out = s.path().join("x.cassette.jsonl");
    for (pi, want) in [
        ("/nope/pi", "error: --bin /nope/pi: no such file\n"),
        (
            "no-such-pi-anywhere",
            "error: --bin no-such-pi-anywhere: no such file (not on PATH either)\n",
        ),
    ] {
        let a = Command::cargo_bin("pi-harness")
            .unwrap()
            .env(MARKER_VAR, s.world.marker())
            .args(["record", "--script"])
            .arg(&s.script)
            .arg("--out")
            .arg(&out)
            .args(["--pi", pi, "--", "--mode", "json"])
            .assert()
            .code(2);
        assert_eq!(String::from_utf8_lossy(&a.get_output().stderr), want);
    }
    assert!(!out.exists());
}

/// `record --client-script` drives an RPC session and writes a two-way cassette. Here the
/// "pi" is fake-pi replaying a recorded RPC session, so the recorder's own output must give
/// back that session: the client's lines where the script put them, pi's stdout byte for
/// byte, the responses tied to their lines, the tool process modelled.
#[test]
fn client_script_records_an_rpc_session() {
    let w = World::new("cli_record_rpc");
    let source = repo().join("cassettes/rpc/rpc_abort_tool.pi152.cassette.jsonl");
    let scripts = repo().join("cassettes/scripts/rpc");
    let out = w.path().join("rpc.cassette.jsonl");
    let assert = Command::new(env!("CARGO_BIN_EXE_pi-harness"))
        .arg("record")
        // fake-pi replays the session: it never calls the model.
        .arg("--script")
        .arg(w.write("no_model.llm.json", NO_MODEL))
        .arg("--client-script")
        .arg(scripts.join("rpc_abort_tool.client.json"))
        .arg("--pi")
        .arg(pi_testkit::fake_pi())
        .args(["--pi-version", "1.5.2", "--scenario", "rpc_abort_tool"])
        .arg("--out")
        .arg(&out)
        .args([
            "--",
            "--mode",
            "rpc",
            "--no-session",
            "--provider",
            "fake",
            "--model",
            "fake-model",
        ])
        .env("FAKE_PI_CASSETTE", &source)
        .env("FAKE_PI_VALUES", "recorded")
        .env(MARKER_VAR, w.marker())
        .timeout(Duration::from_secs(60))
        .assert();
    let output = assert.get_output();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let got = Cassette::load(&out).unwrap();
    let want = Cassette::load(&source).unwrap();
    assert_eq!(got.header.version, 2);
    assert_eq!(got.header.mode.as_deref(), Some("rpc"));
    assert_eq!(got.header.origin.kind, OriginKind::Recorded);
    assert_eq!(
        got.stdout_bytes(),
        want.stdout_bytes(),
        "pi's stdout as replayed"
    );
    // The same client actions, spawns and reaps, and replies, in the same order (fake-pi
    // made no model request: no `request` records this time).
    let shape = |c: &Cassette| -> Vec<String> {
        c.records
            .iter()
            .filter(|r| !matches!(r.action, Action::Request(_)))
            .map(|r| match &r.action {
                Action::Stdout(_) => format!("stdout reply={:?}", r.reply),
                Action::Stdin(l) => format!("stdin {}", l.json),
                a => a.key().to_string(),
            })
            .collect()
    };
    assert_eq!(shape(&got), shape(&want));
    w.assert_none_left();
}

#[test]
fn client_script_and_rpc_mode_go_together() {
    let w = World::new("cli_record_rpc_usage");
    let scripts = repo().join("cassettes/scripts/rpc");
    let out = Command::new(env!("CARGO_BIN_EXE_pi-harness"))
        .arg("record")
        .arg("--script")
        .arg(scripts.join("rpc_steer.llm.json"))
        .arg("--client-script")
        .arg(scripts.join("rpc_steer.client.json"))
        .arg("--out")
        .arg(w.path().join("x.cassette.jsonl"))
        .args(["--", "--mode", "json", "hi"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--client-script and pi's `--mode rpc` go together"),
        "{err}"
    );
    let bad = w.write("bad.client.json", r#"[{"when":"start","sned":{}}]"#);
    let out = Command::new(env!("CARGO_BIN_EXE_pi-harness"))
        .arg("record")
        .arg("--script")
        .arg(scripts.join("rpc_steer.llm.json"))
        .arg("--client-script")
        .arg(&bad)
        .arg("--pi")
        .arg(pi_testkit::fake_pi())
        .args(["--pi-version", "1.5.2"])
        .arg("--out")
        .arg(w.path().join("y.cassette.jsonl"))
        .args(["--", "--mode", "rpc"])
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("{}: steps[0].sned: unknown field", bad.display())),
        "{err}"
    );
    w.assert_none_left();
}

/// `record --agent claude` drives Claude Code in stream-json mode with a client script. Here
/// the CLI is fake-pi replaying a committed Claude Code session (found through `fake-pi.conf`
/// beside it: the recorder gives the CLI an empty environment), so the recording must give
/// back that session: the host's lines where the script put them, the permission answer
/// echoing the request id the CLI issued, the allowed tool's process, the CLI's records in
/// order, the clean environment's placeholders.
#[test]
fn agent_claude_records_a_stream_json_session() {
    let w = World::new("cli_record_claude");
    let source = repo().join("cassettes/claude/claude_tool_allowed.cc21330.cassette.jsonl");
    let scripts = repo().join("cassettes/scripts/claude");
    let bin = w.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    pi_testkit::bins::install_exe(&pi_testkit::fake_pi(), &bin.join("claude")).unwrap();
    std::fs::write(
        bin.join("fake-pi.conf"),
        format!("FAKE_PI_CASSETTE={}\nFAKE_PI_SPEED=0\n", source.display()),
    )
    .unwrap();
    let out = w.path().join("claude.cassette.jsonl");
    let args = [
        "-p",
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
        "--verbose",
        "--include-partial-messages",
        "--permission-prompt-tool",
        "stdio",
    ];
    let assert = Command::new(env!("CARGO_BIN_EXE_pi-harness"))
        .args(["record", "--agent", "claude", "--pi-version", "2.1.330"])
        .arg("--script")
        .arg(w.write("no_model.llm.json", NO_MODEL))
        .arg("--client-script")
        .arg(scripts.join("claude_tool_allowed.client.json"))
        .arg("--pi")
        .arg(bin.join("claude"))
        .arg("--out")
        .arg(&out)
        .arg("--")
        .args(args)
        .env(MARKER_VAR, w.marker())
        .timeout(Duration::from_secs(60))
        .assert();
    let output = assert.get_output();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let got = Cassette::load(&out).unwrap();
    let want = Cassette::load(&source).unwrap();
    assert_eq!(got.header.agent(), pi_grammar::Agent::Claude);
    assert_eq!(got.header.pi.version, "2.1.330");
    assert_eq!(
        got.header.expect, want.header.expect,
        "the options as expectations"
    );
    let source_text = got.header.origin.source.clone().unwrap_or_default();
    assert!(
        source_text.contains("record --agent claude"),
        "{source_text}"
    );
    // The scripts' absolute paths (this checkout) are not kept: their file names are.
    assert!(
        !source_text.contains(&repo().display().to_string())
            && source_text.contains("--client-script claude_tool_allowed.client.json"),
        "{source_text}"
    );
    // The same host lines (the allow answers the request id the CLI issued), spawns, reaps
    // and CLI record types, in the same order.
    let shape = |c: &Cassette| -> Vec<String> {
        c.records
            .iter()
            .filter(|r| !matches!(r.action, Action::Request(_)))
            .map(|r| match &r.action {
                Action::Stdout(b) => {
                    let v: serde_json::Value = serde_json::from_slice(&b.data).unwrap();
                    format!("stdout {} {}", v["type"], v["subtype"])
                }
                Action::Stdin(l) => format!("stdin {}", l.json),
                a => a.key().to_string(),
            })
            .collect()
    };
    assert_eq!(shape(&got), shape(&want));
    // The session id the CLI invented (fake-pi made a fresh one) is a placeholder again.
    let text = got.to_jsonl();
    assert!(text.contains(r#""session_id":"<SESSION_ID>""#));
    assert!(got.header.redactions.contains_key("<SESSION_ID>"));
    w.assert_none_left();
}

/// `record --agent claude --stdin-terminal` gives the CLI a pseudo-terminal on stdin, kept
/// open and never written, as a bridge run from a terminal does (before, the recorder could
/// only give a pipe: the real CLI then read EOF and exited 0 with no output). Here the CLI is
/// fake-pi replaying the committed bridge call, which refuses a pipe where its recording had
/// a terminal: the recording must give back that session and say `stdin: terminal`.
#[test]
fn agent_claude_records_with_a_terminal_on_stdin() {
    let w = World::new("cli_record_claude_terminal");
    let source = repo().join("cassettes/claude/claude_bridge_default.cc21330.cassette.jsonl");
    let bin = w.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    pi_testkit::bins::install_exe(&pi_testkit::fake_pi(), &bin.join("claude")).unwrap();
    std::fs::write(
        bin.join("fake-pi.conf"),
        format!("FAKE_PI_CASSETTE={}\nFAKE_PI_SPEED=0\n", source.display()),
    )
    .unwrap();
    let out = w.path().join("bridge.cassette.jsonl");
    let args: Vec<String> =
        std::fs::read_to_string(repo().join("cassettes/scripts/claude/claude_bridge_default.args"))
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect();
    assert_eq!(args[0], "--stdin-terminal");
    let assert = Command::new(env!("CARGO_BIN_EXE_pi-harness"))
        .args(["record", "--agent", "claude", "--pi-version", "2.1.330"])
        .arg("--script")
        .arg(w.write("no_model.llm.json", NO_MODEL))
        .arg("--pi")
        .arg(bin.join("claude"))
        .arg("--out")
        .arg(&out)
        .args(&args)
        .env(MARKER_VAR, w.marker())
        .timeout(Duration::from_secs(60))
        .assert();
    let output = assert.get_output();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let got = Cassette::load(&out).unwrap();
    let want = Cassette::load(&source).unwrap();
    assert_eq!(
        got.header.expect.stdin,
        Some(pi_cassette::StdinKind::Terminal)
    );
    assert_eq!(got.header.expect, want.header.expect);
    let kinds = |c: &Cassette| -> Vec<&'static str> {
        c.records
            .iter()
            .filter(|r| !matches!(r.action, Action::Request(_)))
            .map(|r| r.action.key())
            .collect()
    };
    assert_eq!(kinds(&got), kinds(&want));
    assert!(got
        .header
        .origin
        .source
        .unwrap_or_default()
        .contains("--stdin-terminal -- -p"));
    // Without --stdin-terminal and without a host's script there is nothing to drive the
    // CLI: refused at once, naming both ways.
    let pipe = Command::new(env!("CARGO_BIN_EXE_pi-harness"))
        .args(["record", "--agent", "claude", "--pi-version", "2.1.330"])
        .arg("--script")
        .arg(repo().join("cassettes/scripts/claude/claude_bridge_default.llm.json"))
        .arg("--pi")
        .arg(bin.join("claude"))
        .arg("--out")
        .arg(w.path().join("pipe.cassette.jsonl"))
        .args(&args[1..])
        .env(MARKER_VAR, w.marker())
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    assert_eq!(
        pipe.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&pipe.stderr)
    );
    assert!(
        String::from_utf8_lossy(&pipe.stderr).contains("--stdin-terminal"),
        "{}",
        String::from_utf8_lossy(&pipe.stderr)
    );
    w.assert_none_left();
}
