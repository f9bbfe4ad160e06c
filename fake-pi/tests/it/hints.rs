//! fake-pi's hints and the replay of an unverified release (newer than every pinned one):
//! each hint is said on stderr only, after the imitated CLI's own message; `FAKE_PI_HINTS=0`
//! turns every one off, leaving stderr the recording's byte for byte.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::util::*;
use pi_cassette::Cassette;

/// A json-mode pi cassette of `version` (header `pi` section `pi`), the prompt in argv,
/// writing one stdout line and one stderr line.
fn pi_cassette(world: &World, name: &str, pi: &str) -> PathBuf {
    let text = format!(
        concat!(
            r#"{{"format":"pi-cassette","version":1,"pi":{pi},"scenario":{{"name":"{name}","description":"test"}},"#,
            r#""expect":{{"flags":{{"mode":"json"}},"prompt":"hi","argv_messages":["hi"]}},"#,
            r#""origin":{{"kind":"hand-made","timing":"synthetic"}}}}"#,
            "\n",
            r#"{{"dt_ms":0,"stdout":{{"type":"session"}}}}"#,
            "\n",
            r#"{{"dt_ms":0,"stderr":"recorded stderr line\n"}}"#,
            "\n",
            r#"{{"dt_ms":0,"exit":0}}"#,
            "\n"
        ),
        pi = pi,
        name = name
    );
    world.write(&format!("{name}.cassette.jsonl"), text)
}

const UNVERIFIED_160: &str =
    r#"{"version":"1.6.0","dialect":"delta-only","unverified":{"grammar":"1.5.2"}}"#;
const WARNING_160: &str = "fake-pi: warning: pi 1.6.0 is newer than every pinned release: unverified, read with pi 1.5.2's command-line grammar (`pi-harness drift` shows what changed; pinning it: docs/pinning.md)\n";

fn out(o: std::process::Output) -> (Option<i32>, String, String) {
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn an_unverified_pi_release_replays_with_one_warning_line() {
    let world = World::new("hint_unverified_pi");
    let path = pi_cassette(&world, "newer", UNVERIFIED_160);
    let c = Cassette::load(&path).unwrap();
    let run = |args: &[&str], hints: bool| {
        let mut cmd = world.fake_pi(&path);
        cmd.args(args);
        if !hints {
            cmd.env("FAKE_PI_HINTS", "0");
        }
        out(cmd.output().unwrap())
    };
    // It answers as the release it stands for; the warning names the grammar it borrowed.
    assert_eq!(
        run(&["--version"], true),
        (Some(0), "1.6.0\n".into(), WARNING_160.into())
    );
    let replay = run(&["--mode", "json", "hi"], true);
    assert_eq!(replay.0, Some(0), "{}", replay.2);
    assert_eq!(replay.1.as_bytes(), c.stdout_bytes());
    assert_eq!(replay.2, format!("{WARNING_160}recorded stderr line\n"));
    // Hints off: stderr is the recording's, byte for byte; stdout is untouched either way.
    let quiet = run(&["--mode", "json", "hi"], false);
    assert_eq!(quiet.2.as_bytes(), c.stderr_bytes());
    assert_eq!(quiet.1, replay.1);
    // 1.5.2's grammar: a flag 1.5.2 lacks is pi's unknown option, as 1.5.2 says it.
    let (code, _, err) = run(&["--mode", "json", "--no-such-flag", "hi"], false);
    assert_eq!(
        (code, err.as_str()),
        (Some(1), "Error: Unknown option: --no-such-flag\n")
    );
    world.assert_none_left();
}

#[test]
fn a_newer_release_without_the_mark_or_an_older_one_is_refused() {
    let world = World::new("hint_unverified_refused");
    let unmarked = pi_cassette(
        &world,
        "unmarked",
        r#"{"version":"1.6.0","dialect":"delta-only"}"#,
    );
    let (code, _, err) = out(world.fake_pi(&unmarked).arg("--version").output().unwrap());
    assert_eq!(code, Some(98));
    assert_eq!(
        err,
        format!(
            "fake-pi: invalid cassette: {}:1: header field `pi.unverified`: pi 1.6.0 is newer than every pinned release (1.5.2); a cassette of it says so and names the grammar it is read with: \"unverified\":{{\"grammar\":\"1.5.2\"}}\n",
            unmarked.display()
        )
    );
    let wrong = pi_cassette(
        &world,
        "wrong",
        r#"{"version":"1.6.0","dialect":"delta-only","unverified":{"grammar":"0.87.1"}}"#,
    );
    let (code, _, err) = out(world.fake_pi(&wrong).arg("--version").output().unwrap());
    assert_eq!(code, Some(98));
    assert!(
        err.ends_with("header field `pi.unverified.grammar`: pi 1.6.0 borrows the newest pinned grammar, 1.5.2, not \"0.87.1\"\n"),
        "{err}"
    );
    // Older than the oldest pinned version: refused as before, mark or not.
    let older = pi_cassette(
        &world,
        "older",
        r#"{"version":"0.1.0","dialect":"delta-only","unverified":{"grammar":"1.5.2"}}"#,
    );
    let (code, _, err) = out(world.fake_pi(&older).arg("--version").output().unwrap());
    assert_eq!(code, Some(98));
    assert!(
        err.ends_with(
            "header field `pi.version`: pi-harness knows pi 0.73.1, 0.87.1, 1.5.2, not \"0.1.0\"\n"
        ),
        "{err}"
    );
    world.assert_none_left();
}

#[test]
fn a_flag_newer_than_the_cassettes_pi_names_the_release_that_has_it() {
    let world = World::new("hint_newer_flag");
    let path = pi_cassette(
        &world,
        "old",
        r#"{"version":"0.73.1","dialect":"snapshot+delta"}"#,
    );
    let run = |args: &[&str], hints: bool| {
        let mut cmd = world.fake_pi(&path);
        cmd.args(args);
        if !hints {
            cmd.env("FAKE_PI_HINTS", "0");
        }
        out(cmd.output().unwrap())
    };
    // A long flag: pi reports it after reading stdin.
    let args = ["--mode", "json", "--exclude-tools", "bash", "hi"];
    let quiet = run(&args, false);
    assert_eq!(
        quiet,
        (
            Some(1),
            String::new(),
            "Error: Unknown option: --exclude-tools\n".into()
        )
    );
    let hinted = run(&args, true);
    assert_eq!(
        hinted.2,
        format!("{}fake-pi: hint: the cassette is of pi 0.73.1, which has no --exclude-tools: pi 0.87.1 is the first release with it. Record the cassette on pi 0.87.1 (pinned), or drop the flag\n", quiet.2)
    );
    assert_eq!((hinted.0, hinted.1.as_str()), (quiet.0, ""));
    // A short one: refused while parsing; the first release to have it is not a pinned one.
    let quiet = run(&["--mode", "json", "-xt", "bash", "hi"], false);
    let hinted = run(&["--mode", "json", "-xt", "bash", "hi"], true);
    assert_eq!(quiet.0, Some(1));
    assert!(quiet.2.contains("Unknown option: -xt"), "{}", quiet.2);
    assert_eq!(
        hinted.2,
        format!("{}fake-pi: hint: the cassette is of pi 0.73.1, which has no -xt: pi 0.87.1 is the first release with it. Record the cassette on pi 0.87.1 (pinned), or drop the flag\n", quiet.2)
    );
    // A flag no release has: no hint.
    let (_, _, err) = run(&["--mode", "json", "--no-such-flag", "hi"], true);
    assert_eq!(err, "Error: Unknown option: --no-such-flag\n");
    // A release the changelog names between pinned ones: the pinned one to record on.
    let p87 = pi_cassette(
        &world,
        "p87",
        r#"{"version":"0.87.1","dialect":"delta-only"}"#,
    );
    let (_, _, err) = out(world
        .fake_pi(&p87)
        .args(["--mode", "json", "--no-mcp", "hi"])
        .output()
        .unwrap());
    assert_eq!(
        err,
        "Error: Unknown option: --no-mcp\nfake-pi: hint: the cassette is of pi 0.87.1, which has no --no-mcp: pi 1.0.4 is the first release with it. Record the cassette on pi 1.5.2 (pinned), or drop the flag\n"
    );
    world.assert_none_left();
}

fn claude_cassette(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../cassettes/claude");
    dir.join(format!("{name}.cassette.jsonl"))
}

#[test]
fn a_claude_cassette_run_as_pi_names_the_agent() {
    let world = World::new("hint_claude_as_pi");
    let path = claude_cassette("claude_text.cc21332");
    let run = |hints: bool| {
        let mut cmd = world.fake_pi(&path);
        cmd.args(["--mode", "json", "-p", "hi"])
            .env("ANTHROPIC_API_KEY", "k");
        if !hints {
            cmd.env("FAKE_PI_HINTS", "0");
        }
        out(cmd.output().unwrap())
    };
    let quiet = run(false);
    assert_eq!(
        quiet,
        (
            Some(1),
            String::new(),
            "error: unknown option '--mode'\n(Did you mean --model?)\n".into()
        )
    );
    let hinted = run(true);
    assert_eq!(
        hinted.2,
        "error: unknown option '--mode'\n(Did you mean --model?)\nfake-pi: hint: this command line is pi's (--mode), and the cassette is Claude Code's (Claude Code 2.1.332, claude_text): give it a pi cassette, or run the host as Claude Code\n"
    );
    assert_eq!((hinted.0, hinted.1.as_str()), (Some(1), ""));
    world.assert_none_left();
}

#[test]
fn pis_own_command_lines_get_no_agent_hint() {
    // `--model=x` is pi's own flag spelled another way, and 0.73.1's `--` an unknown flag
    // with an empty name: Claude Code reads both command lines, but they are not Claude's.
    let world = World::new("hint_not_claude");
    let path = pi_cassette(
        &world,
        "p73",
        r#"{"version":"0.73.1","dialect":"snapshot+delta"}"#,
    );
    for (args, err) in [
        (&["--model=x", "hi"][..], "Error: Unknown option: --model\n"),
        (&["--", "hello"][..], "Error: Unknown option: --\n"),
    ] {
        let (code, _, got) = out(world.fake_pi(&path).args(args).output().unwrap());
        assert_eq!((code, got.as_str()), (Some(1), err), "{args:?}");
    }
    world.assert_none_left();
}

#[test]
fn a_pi_cassette_run_as_claude_code_names_the_agent_before_stdin() {
    let world = World::new("hint_pi_as_claude");
    let path = pi_cassette(
        &world,
        "pi",
        r#"{"version":"1.5.2","dialect":"delta-only"}"#,
    );
    // A Claude Code host keeps stdin open: the hint comes before pi would read it.
    let mut child = world
        .fake_pi(&path)
        .args([
            "-p",
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
            "--verbose",
        ])
        .env("FAKE_PI_HINT_STDIN_MS", "60000")
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    assert_eq!(
        line,
        "fake-pi: hint: this command line is Claude Code's (--input-format), and the cassette is pi's (pi 1.5.2, pi): give it a Claude Code cassette (`mode: \"stream-json\"`), or run the host as pi\n"
    );
    drop(stdin);
    let mut rest = String::new();
    err.read_to_string(&mut rest).unwrap();
    let status = child.wait().unwrap();
    // Then pi's own answer, as without the hint.
    assert_eq!(
        rest,
        "Error: Unknown options: --input-format, --output-format\n"
    );
    assert_eq!(status.code(), Some(1));
    world.assert_none_left();
}

/// Read `from` until `want` has arrived or `within` is over; what was read.
fn read_until(from: &mut impl Read, want: &str, within: Duration) -> String {
    let start = Instant::now();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&got).contains(want) && start.elapsed() < within {
        match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
    String::from_utf8_lossy(&got).into_owned()
}

#[test]
fn stdin_left_open_gets_a_hint_after_the_delay_and_none_with_hints_off() {
    let world = World::new("hint_stdin_open");
    let path = pi_cassette(
        &world,
        "stdin",
        r#"{"version":"1.5.2","dialect":"delta-only"}"#,
    );
    let c = Cassette::load(&path).unwrap();
    let start = |hints: bool| {
        let mut cmd = world.fake_pi(&path);
        cmd.args(["--mode", "json", "hi"])
            .env("FAKE_PI_HINT_STDIN_MS", "300")
            .stdin(Stdio::piped());
        if !hints {
            cmd.env("FAKE_PI_HINTS", "0");
        }
        cmd.spawn().unwrap()
    };
    let mut child = start(true);
    let stdin = child.stdin.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let began = Instant::now();
    let hint = read_until(&mut err, "\n", Duration::from_secs(20));
    assert!(
        began.elapsed() >= Duration::from_millis(300),
        "said after the delay"
    );
    assert_eq!(
        hint,
        "fake-pi: hint: stdin is still open after 300 ms; pi reads piped stdin to its end before it runs, so it waits (the recording's prompt was on the command line: give pi </dev/null or close its stdin)\n"
    );
    drop(stdin);
    let mut rest = String::new();
    err.read_to_string(&mut rest).unwrap();
    let mut stdout = Vec::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_end(&mut stdout)
        .unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(0), "{rest}");
    assert_eq!(stdout, c.stdout_bytes(), "stdout is the recording's");
    assert_eq!(rest.as_bytes(), c.stderr_bytes());
    // Hints off: the same wait says nothing; stderr is the recording's byte for byte.
    let mut child = start(false);
    let mut stdin = child.stdin.take().unwrap();
    std::thread::sleep(Duration::from_millis(800));
    stdin.flush().unwrap();
    drop(stdin);
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(o.stderr, c.stderr_bytes());
    assert_eq!(o.stdout, c.stdout_bytes());
    // stdin closed in time: no hint.
    let mut child = start(true);
    drop(child.stdin.take());
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.stderr, c.stderr_bytes());
    world.assert_none_left();
}

#[test]
fn an_unverified_claude_release_replays_with_one_warning_line() {
    let world = World::new("hint_unverified_claude");
    let newest = pi_grammar::claude::Claude::latest().version();
    let mut parts: Vec<u32> = newest.split('.').map(|p| p.parse().unwrap()).collect();
    parts[2] += 8;
    let newer = format!("{}.{}.{}", parts[0], parts[1], parts[2]);
    // The newest measured release's session, relabelled.
    let source = claude_cassette(&format!("claude_text.cc{}", newest.replace('.', "")));
    let text = std::fs::read_to_string(source).unwrap();
    let (header, rest) = text.split_once('\n').unwrap();
    let mut h: serde_json::Value = serde_json::from_str(header).unwrap();
    h["claude"]["version"] = newer.clone().into();
    h["claude"]["unverified"] = serde_json::json!({ "grammar": newest });
    let path = world.write("newer.cassette.jsonl", format!("{h}\n{rest}"));
    let warning = format!("fake-pi: warning: Claude Code {newer} is newer than every pinned release: unverified, read with Claude Code {newest}'s command-line grammar (`pi-harness drift` shows what changed; pinning it: docs/pinning.md)\n");
    let run = |hints: bool| {
        let mut cmd = world.fake_pi(&path);
        cmd.arg("--version");
        if !hints {
            cmd.env("FAKE_PI_HINTS", "0");
        }
        out(cmd.output().unwrap())
    };
    assert_eq!(
        run(true),
        (Some(0), format!("{newer} (Claude Code)\n"), warning)
    );
    assert_eq!(
        run(false),
        (Some(0), format!("{newer} (Claude Code)\n"), String::new())
    );
    // The session replays to the recorded bytes with hints off.
    let c = Cassette::load(&path).unwrap();
    let mut input = Vec::new();
    for step in pi_cassette::two_way::client_steps(&c.records) {
        if let pi_cassette::two_way::ClientAction::Line(l) = step.action {
            input.extend_from_slice(l.as_bytes());
            input.push(b'\n');
        }
    }
    let mut child = world
        .fake_pi(&path)
        .args(c.header.expect.claude_argv())
        .env("FAKE_PI_VALUES", "recorded")
        .env("ANTHROPIC_API_KEY", "k")
        .env("FAKE_PI_HINTS", "0")
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&input).unwrap();
    drop(stdin);
    let o = child.wait_with_output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&c.stdout_bytes())
    );
    assert_eq!(o.stderr, c.stderr_bytes());
    assert_eq!(o.status.code(), Some(0));
    world.assert_none_left();
}
