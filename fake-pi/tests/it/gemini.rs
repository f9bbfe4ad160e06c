//! fake-pi as Gemini CLI 0.61.0 (`gemini -p ... --output-format stream-json`): cassettes
//! built from the real captures (`harness/wire/tests/data/gemini/`) replayed byte for byte
//! with their exit codes (a model's HTTP 400 exits 144, a 500 exits 244), the call compared
//! by meaning, the command-line answers as measured, and the process shape: the relaunch
//! parent that ignores SIGTERM and SIGINT, the child that exits 0 on a signal to the group
//! and leaves its tool orphaned (ending within its bound), the single process of
//! `GEMINI_CLI_NO_RELAUNCH=1`, and a SIGKILLed parent's child ending within its bound.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::util::*;

/// A real capture of Gemini CLI 0.61.0: (stdout, stderr).
fn capture(name: &str) -> (String, String) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../harness/wire/tests/data/gemini");
    let read = |ext: &str| std::fs::read_to_string(dir.join(format!("{name}.{ext}"))).unwrap();
    (read("stdout.jsonl"), read("stderr"))
}

/// The expectations of the command line the tests give ([`ARGS`]).
const EXPECT: &str = r#"{"flags":{"output-format":"stream-json","model":"gemini-2.5-flash","yolo":true},"argv_messages":["say hi"],"prompt":"say hi","env":["GEMINI_API_KEY"],"never_in_argv":[{"env":"GEMINI_API_KEY"}],"effective":{"mode":"stream-json","model":"gemini-2.5-flash","approval":"yolo","max_attempts":10},"session":"new"}"#;

/// What real 0.61.0's session process does with SIGTERM and SIGINT: exit 0, tools untouched.
const PROCESS: &str = r#"{"on_sigterm":{"action":"exit","code":0},"on_sigint":{"action":"exit","code":0},"on_sighup":{"action":"exit","code":0}}"#;

const ARGS: &[&str] = &[
    "-p",
    "say hi",
    "-o",
    "stream-json",
    "-m",
    "gemini-2.5-flash",
    "-y",
];

fn json(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

/// A Gemini cassette: the header with `expect`, then `records`.
fn cassette(sb: &World, name: &str, expect: &str, records: &[String]) -> PathBuf {
    let mut text = format!(
        r#"{{"format":"pi-cassette","version":1,"gemini":{{"version":"0.61.0","dialect":"gemini-stream-json"}},"scenario":{{"name":"{name}","description":"from a real capture"}},"expect":{expect},"process":{PROCESS},"origin":{{"kind":"hand-made","timing":"synthetic"}}}}"#
    );
    for r in records {
        text.push('\n');
        text.push_str(r);
    }
    text.push('\n');
    sb.write(&format!("{name}.gm061.cassette.jsonl"), text)
}

/// Each line of `stdout` as a record.
fn lines(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .map(|l| format!(r#"{{"dt_ms":1,"stdout_text":{},"newline":true}}"#, json(l)))
        .collect()
}

/// A capture's records: its stderr, then each stdout line, then `end`.
fn from_capture(name: &str, end: &str) -> Vec<String> {
    let (stdout, stderr) = capture(name);
    let mut r = vec![format!(r#"{{"dt_ms":0,"stderr":{}}}"#, json(&stderr))];
    r.extend(lines(&stdout));
    r.push(end.to_string());
    r
}

/// fake-pi as `gemini` in the world: HOME the world's (no settings unless a test writes
/// them), the key set.
fn gemini(sb: &World, c: &Path, args: &[&str]) -> Command {
    let mut cmd = sb.fake_pi(c);
    cmd.env("HOME", sb.path())
        .env("GEMINI_API_KEY", "x")
        .env_remove("GEMINI_MODEL")
        .env_remove("GEMINI_CLI_NO_RELAUNCH")
        .env_remove("SANDBOX")
        .current_dir(sb.path())
        .args(args);
    cmd
}

#[test]
fn real_captures_replay_byte_for_byte_with_their_exit_codes() {
    let sb = World::new(module_path!());
    for (name, code) in [("text", 0), ("tool", 0), ("FAIL400", 144), ("FAIL500", 244)] {
        let end = format!(r#"{{"dt_ms":0,"exit":{code}}}"#);
        let c = cassette(&sb, name, EXPECT, &from_capture(name, &end));
        let out = gemini(&sb, &c, ARGS).output().unwrap();
        let (stdout, stderr) = capture(name);
        assert_eq!(
            out.status.code(),
            Some(code),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(String::from_utf8_lossy(&out.stdout), stdout, "{name}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), stderr, "{name}");
    }
    sb.assert_none_left();
}

#[test]
fn the_call_is_compared_by_meaning_and_a_mismatch_names_its_field_and_source() {
    let sb = World::new(module_path!());
    let loose = EXPECT.replace(
        r#""flags":{"output-format":"stream-json","model":"gemini-2.5-flash","yolo":true},"#,
        "",
    );
    let c = cassette(
        &sb,
        "text",
        &loose,
        &from_capture("text", r#"{"dt_ms":0,"exit":0}"#),
    );
    // The same call by other syntax: the model from GEMINI_MODEL, the query positional,
    // yolo by its approval mode.
    let out = gemini(
        &sb,
        &c,
        &[
            "say hi",
            "--output-format=stream-json",
            "--approval-mode",
            "yolo",
        ],
    )
    .env("GEMINI_MODEL", "gemini-2.5-flash")
    .output()
    .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // ... or from the user's settings.
    sb.write(
        ".gemini/settings.json",
        r#"{"model":{"name":"gemini-2.5-flash"}}"#,
    );
    let out = gemini(&sb, &c, &["-yp", "say hi", "-o", "stream-json"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Another model: 99, naming the field, both values and where the call's came from.
    let out = gemini(
        &sb,
        &c,
        &[
            "-p",
            "say hi",
            "-o",
            "stream-json",
            "-m",
            "gemini-2.5-pro",
            "-y",
        ],
    )
    .output()
    .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(99), "{err}");
    assert!(out.stdout.is_empty());
    assert!(err.contains("fake-pi: expectation mismatch: expect.effective.model: expected \"gemini-2.5-flash\", got \"gemini-2.5-pro\" (from flag --model)"), "{err}");
    // Settings naming fewer attempts than recorded: the source is the settings file.
    sb.write(".gemini/settings.json", r#"{"general":{"maxAttempts":2}}"#);
    let out = gemini(&sb, &c, ARGS).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(99), "{err}");
    assert!(
        err.contains(
            "expect.effective.max_attempts: expected \"10\", got \"2\" (from settings.json ("
        ),
        "{err}"
    );
    // Stdin is joined before the prompt: another prompt than recorded.
    let mut child = gemini(&sb, &c, ARGS)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"context").unwrap();
    }
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(99), "{err}");
    assert!(
        err.contains("expect.prompt: expected \"say hi\", got \"context\\n\\nsay hi\""),
        "{err}"
    );
    // Stdin piped but silent: after 500 ms the CLI goes on without it, and so does fake-pi.
    sb.write(".gemini/settings.json", "{}");
    let mut child = gemini(&sb, &c, ARGS)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let held = child.stdin.take().unwrap();
    let started = Instant::now();
    let out = child.wait_with_output().unwrap();
    drop(held);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        started.elapsed() >= Duration::from_millis(450),
        "{:?}",
        started.elapsed()
    );
    sb.assert_none_left();
}

#[test]
fn version_help_and_bad_command_lines_answer_as_0_61_0() {
    let sb = World::new(module_path!());
    let c = cassette(
        &sb,
        "text",
        EXPECT,
        &from_capture("text", r#"{"dt_ms":0,"exit":0}"#),
    );
    let help = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../harness/grammar/data/gemini/0.61.0/help.txt"),
    )
    .unwrap();
    let out = gemini(&sb, &c, &["--version"]).output().unwrap();
    assert_eq!(
        (out.status.code(), out.stdout.as_slice()),
        (Some(0), &b"0.61.0\n"[..])
    );
    let out = gemini(&sb, &c, &["--bogus", "-h"]).output().unwrap();
    assert_eq!(
        (out.status.code(), String::from_utf8_lossy(&out.stdout)),
        (Some(0), help.as_str().into())
    );
    for (args, first) in [
        (&["--bogus"][..], "Unknown argument: bogus\n"),
        (&["-p"][..], "Not enough arguments following: p\n"),
        (&["-o", "xml"][..], "Invalid values:\n  Argument: output-format, Given: \"xml\", Choices: \"text\", \"json\", \"stream-json\"\n"),
    ] {
        let out = gemini(&sb, &c, args).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(out.stdout.is_empty());
        assert_eq!(String::from_utf8_lossy(&out.stderr), format!("{first}{help}"), "{args:?}");
    }
    // A command of the CLI's own is not imitated; said, not replayed.
    let out = gemini(&sb, &c, &["mcp", "list"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(96), "{err}");
    assert!(out.stdout.is_empty());
    assert!(err.contains("not `gemini mcp`"), "{err}");
    // pi's or Codex's command line, refused as Gemini refuses it, then the hint naming the agent.
    for (args, agent) in [
        (&["--mode", "json", "-p", "hi"][..], "pi's"),
        (
            &["exec", "--json", "--skip-git-repo-check", "hi"][..],
            "Codex's (codex exec)",
        ),
    ] {
        let out = gemini(&sb, &c, args)
            .env("FAKE_PI_HINTS", "1")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.ends_with(&format!("{help}fake-pi: hint: this command line is {agent}, and the cassette is Gemini CLI's (Gemini CLI 0.61.0, text): give it a cassette of that agent, or run the host as gemini\n")), "{err}");
    }
    // A newer release answers as itself, read with 0.61.0's grammar.
    let newer = sb.write(
        "newer.gm062.cassette.jsonl",
        std::fs::read_to_string(&c).unwrap().replacen(
            r#""gemini":{"version":"0.61.0","dialect":"gemini-stream-json"}"#,
            r#""gemini":{"version":"0.62.0","dialect":"gemini-stream-json","unverified":{"grammar":"0.61.0"}}"#,
            1,
        ),
    );
    let out = gemini(&sb, &newer, &["--version"]).output().unwrap();
    assert_eq!(
        (out.status.code(), out.stdout.as_slice()),
        (Some(0), &b"0.62.0\n"[..])
    );
    sb.assert_none_left();
}

/// The tool a mid-tool cassette starts: `bash -c 'sleep 300'`, in its own session.
const TOOL: &str = "bash -c sleep 300";

/// A run stopped mid-tool: the capture's lines up to the tool's `tool_use`, the tool
/// (`lifetime`: more fields of its `spawn`), then `after`.
fn mid_tool(sb: &World, name: &str, lifetime: &str, after: &[String]) -> PathBuf {
    let (stdout, stderr) = capture("SIGTERM-group-mid-tool");
    let mut r = vec![format!(r#"{{"dt_ms":0,"stderr":{}}}"#, json(&stderr))];
    r.extend(lines(&stdout));
    r.push(format!(
        r#"{{"dt_ms":0,"spawn":{{"id":"tool","own_session":true,"argv":["bash","-c","sleep 300"]{lifetime}}}}}"#
    ));
    r.extend(after.iter().cloned());
    let expect = EXPECT.replace("say hi", "TOOLSLEEP now");
    cassette(sb, name, &expect, &r)
}

const TOOL_ARGS: &[&str] = &[
    "-p",
    "TOOLSLEEP now",
    "-o",
    "stream-json",
    "-m",
    "gemini-2.5-flash",
    "-y",
];

/// Start `cmd` (in a process group of its own), read stdout up to the `tool_use`, wait for
/// the tool; returns the top process, the relaunched child's pid (0 without one) and the
/// tool's, and the stdout read so far with a reader of the rest.
fn started_mid_tool(
    sb: &World,
    mut cmd: Command,
    relaunched: bool,
) -> (
    std::process::Child,
    i32,
    i32,
    std::thread::JoinHandle<String>,
) {
    cmd.process_group(0)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    let mut top = cmd.spawn().unwrap();
    let mut out = BufReader::new(top.stdout.take().unwrap());
    let mut seen = String::new();
    while !seen.contains("\"tool_use\"") {
        let mut line = String::new();
        assert!(
            out.read_line(&mut line).unwrap() > 0,
            "stdout ended: {seen}"
        );
        seen.push_str(&line);
    }
    let rest = std::thread::spawn(move || {
        let mut s = seen;
        let _ = std::io::Read::read_to_string(&mut out, &mut s);
        s
    });
    let pid = top.id() as i32;
    let (mut child, mut tool) = (0, 0);
    let end = Instant::now() + Duration::from_secs(10);
    while Instant::now() < end && (tool == 0 || (child == 0 && relaunched)) {
        std::thread::sleep(Duration::from_millis(10));
        for p in sb.alive() {
            if stat(p).map(|s| s.1) == Some(pid) && comm(p) == "gemini" {
                child = p;
            }
            if cmdline(p) == TOOL {
                tool = p;
            }
        }
    }
    let shown: Vec<String> = sb
        .alive()
        .iter()
        .map(|&p| format!("{p} {:?} {} {}", stat(p), comm(p), cmdline(p)))
        .collect();
    assert!(
        tool != 0 && (child != 0 || !relaunched),
        "top {pid}: {shown:?}"
    );
    (top, child, tool, rest)
}

fn comm(pid: i32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .unwrap_or_default()
        .trim()
        .to_string()
}

#[test]
fn sigterm_and_sigint_to_the_top_process_are_ignored_and_the_run_completes() {
    let sb = World::new(module_path!());
    let (stdout, _) = capture("tool");
    let tail: Vec<String> = lines(&stdout)
        .into_iter()
        .skip_while(|l| !l.contains("tool_use"))
        .skip(1)
        .collect();
    // The tool ends by itself after 2 s; the answer goes on then.
    let mut after = tail.clone();
    after[0] = after[0].replacen(r#""dt_ms":1"#, r#""dt_ms":2100"#, 1);
    after.push(r#"{"dt_ms":0,"exit":0}"#.into());
    let c = mid_tool(&sb, "top", r#","lifetime_ms":2000"#, &after);
    for sig in [libc::SIGTERM, libc::SIGINT] {
        let mut cmd = gemini(&sb, &c, TOOL_ARGS);
        cmd.env("FAKE_PI_SPEED", "1");
        let (mut top, child, tool, rest) = started_mid_tool(&sb, cmd, true);
        // The relaunch shape: node parent, `gemini` child under it, the tool under that.
        assert_eq!(comm(top.id() as i32), "node");
        assert!(
            cmdline(child).starts_with("gemini -p TOOLSLEEP now"),
            "{}",
            cmdline(child)
        );
        assert_eq!(stat(tool).map(|s| s.1), Some(child));
        send(top.id(), sig);
        let status = top.wait().unwrap();
        assert_eq!(status.code(), Some(0), "signal {sig}");
        let out = rest.join().unwrap();
        for line in &tail {
            let text: serde_json::Value = serde_json::from_str(line).unwrap();
            assert!(
                out.contains(text["stdout_text"].as_str().unwrap()),
                "signal {sig}: {out}"
            );
        }
        sb.assert_none_left_within(Duration::from_secs(2));
    }
}

#[test]
fn a_signal_to_the_group_exits_0_and_leaves_the_tool_orphaned_within_its_bound() {
    let sb = World::new(module_path!());
    let c = mid_tool(
        &sb,
        "group",
        "",
        &[r#"{"dt_ms":0,"hang":true}"#.to_string()],
    );
    for sig in [libc::SIGTERM, libc::SIGINT] {
        let mut cmd = gemini(&sb, &c, TOOL_ARGS);
        cmd.env("FAKE_PI_GEMINI_ORPHAN_MS", "1500");
        let (mut top, child, tool, rest) = started_mid_tool(&sb, cmd, true);
        // SAFETY: kill takes no pointers.
        assert_eq!(unsafe { libc::kill(-(top.id() as i32), sig) }, 0);
        let status = top.wait().unwrap();
        let signalled = Instant::now();
        assert_eq!(status.code(), Some(0), "signal {sig}");
        let out = rest.join().unwrap();
        assert!(!out.contains("\"result\""), "{out}");
        wait_until(Duration::from_secs(2), || !alive(child));
        assert!(!alive(child));
        // The tool lives on, orphaned, carrying the caller's environment (the marker) ...
        std::thread::sleep(Duration::from_millis(200));
        assert_eq!(sb.alive(), [tool], "signal {sig}");
        assert_ne!(stat(tool).map(|s| s.1), Some(child));
        // ... and ends by itself within its bound.
        wait_until(Duration::from_secs(10), || sb.alive().is_empty());
        assert!(
            signalled.elapsed() >= Duration::from_millis(1400),
            "{:?}",
            signalled.elapsed()
        );
        sb.assert_none_left();
    }
}

#[test]
fn without_the_relaunch_one_process_answers_the_signal() {
    let sb = World::new(module_path!());
    let c = mid_tool(
        &sb,
        "single",
        "",
        &[r#"{"dt_ms":0,"hang":true}"#.to_string()],
    );
    let mut cmd = gemini(&sb, &c, TOOL_ARGS);
    cmd.env("GEMINI_CLI_NO_RELAUNCH", "1")
        .env("FAKE_PI_GEMINI_ORPHAN_MS", "1000");
    let (mut top, _, tool, _rest) = started_mid_tool(&sb, cmd, false);
    let pid = top.id() as i32;
    // One process: the tool is its child, nothing else of fake-pi's.
    assert_eq!(stat(tool).map(|s| s.1), Some(pid));
    assert_eq!(sb.alive().len(), 2, "{:?}", sb.alive());
    send(top.id(), libc::SIGTERM);
    assert_eq!(top.wait().unwrap().code(), Some(0));
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(sb.alive(), [tool]);
    wait_until(Duration::from_secs(10), || sb.alive().is_empty());
    sb.assert_none_left();
}

#[test]
fn sigkill_of_the_parent_leaves_the_child_no_longer_than_its_bound() {
    let sb = World::new(module_path!());
    let c = mid_tool(&sb, "kill", "", &[r#"{"dt_ms":0,"hang":true}"#.to_string()]);
    let mut cmd = gemini(&sb, &c, TOOL_ARGS);
    cmd.env("FAKE_PI_GEMINI_ORPHAN_MS", "1000");
    let (mut top, child, tool, _rest) = started_mid_tool(&sb, cmd, true);
    send(top.id(), libc::SIGKILL);
    top.wait().unwrap();
    let killed = Instant::now();
    std::thread::sleep(Duration::from_millis(300));
    let left = sb.alive();
    assert!(left.contains(&child) && left.contains(&tool), "{left:?}");
    wait_until(Duration::from_secs(10), || sb.alive().is_empty());
    assert!(
        killed.elapsed() >= Duration::from_millis(900),
        "{:?}",
        killed.elapsed()
    );
    sb.assert_none_left();
}

#[test]
fn the_settings_layers_are_the_cli_s_and_the_workspace_counts_only_when_trusted() {
    let sb = World::new(module_path!());
    let loose = EXPECT.replace(
        r#""flags":{"output-format":"stream-json","model":"gemini-2.5-flash","yolo":true},"#,
        "",
    );
    let c = cassette(
        &sb,
        "text",
        &loose,
        &from_capture("text", r#"{"dt_ms":0,"exit":0}"#),
    );
    let home = sb.write("home/.keep", "").parent().unwrap().to_path_buf();
    let work = sb
        .write(
            "work/.gemini/settings.json",
            r#"{"model":{"name":"gemini-2.5-flash"}}"#,
        )
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf();
    let system = sb.path().join("etc/settings.json");
    let args = &["-p", "say hi", "-o", "stream-json", "-y"];
    let run = |trust: Option<&str>, extra: &[&str]| {
        let mut cmd = gemini(&sb, &c, args);
        cmd.args(extra)
            .env("HOME", &home)
            .env("GEMINI_CLI_SYSTEM_SETTINGS_PATH", &system)
            .env_remove("GEMINI_CLI_TRUST_WORKSPACE")
            .current_dir(&work);
        if let Some(t) = trust {
            cmd.env("GEMINI_CLI_TRUST_WORKSPACE", t);
        }
        let out = cmd.output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    // Untrusted: the workspace's model does not count.
    let (code, err) = run(None, &[]);
    assert_eq!(code, Some(99), "{err}");
    assert!(err.contains("expect.effective.model: expected \"gemini-2.5-flash\", got \"auto\" (from Gemini CLI's default)"), "{err}");
    assert_eq!(run(Some("false"), &["--skip-trust"]).0, Some(99));
    // Trusted by the environment or by --skip-trust: it does.
    let (code, err) = run(Some("true"), &[]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(run(None, &["--skip-trust"]).0, Some(0));
    // The system settings are over everything.
    sb.write(
        "etc/settings.json",
        r#"{"model":{"name":"gemini-2.5-pro"}}"#,
    );
    let (code, err) = run(Some("true"), &[]);
    assert_eq!(code, Some(99), "{err}");
    assert!(
        err.contains(&format!(
            "got \"gemini-2.5-pro\" (from settings.json ({}))",
            system.display()
        )),
        "{err}"
    );
    sb.assert_none_left();
}

/// The user's settings are in GEMINI_CLI_HOME's `.gemini` when it is set (the CLI's home
/// directory, measured: HOME's are not read then), else HOME's.
#[test]
fn gemini_cli_home_stands_for_home_for_the_user_settings() {
    let sb = World::new(module_path!());
    let loose = EXPECT.replace(
        r#""flags":{"output-format":"stream-json","model":"gemini-2.5-flash","yolo":true},"#,
        "",
    );
    let c = cassette(
        &sb,
        "text",
        &loose,
        &from_capture("text", r#"{"dt_ms":0,"exit":0}"#),
    );
    let settings = r#"{"model":{"name":"gemini-2.5-flash"}}"#;
    let home = sb
        .write("home/.gemini/settings.json", settings)
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf();
    let cli_home = sb
        .write("cli-home/.keep", "")
        .parent()
        .unwrap()
        .to_path_buf();
    let run = |cli: Option<&std::path::Path>| {
        let mut cmd = gemini(&sb, &c, &["-p", "say hi", "-o", "stream-json", "-y"]);
        cmd.env("HOME", &home).current_dir(sb.path());
        match cli {
            Some(p) => cmd.env("GEMINI_CLI_HOME", p),
            None => cmd.env_remove("GEMINI_CLI_HOME"),
        };
        let out = cmd.output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    assert_eq!(run(None).0, Some(0), "HOME's settings name the model");
    let (code, err) = run(Some(&cli_home));
    assert_eq!(code, Some(99), "{err}");
    assert!(
        err.contains("got \"auto\" (from Gemini CLI's default)"),
        "{err}"
    );
    sb.write("cli-home/.gemini/settings.json", settings);
    assert_eq!(run(Some(&cli_home)).0, Some(0));
    sb.assert_none_left();
}

/// Gemini CLI strips `//` and `/* */` comments from its settings before it parses them (its
/// loader bundles `strip-json-comments`): a commented settings file is read, not refused as
/// "not JSON" (exit 96), and a `//` inside a string stays.
#[test]
fn settings_with_comments_are_read_as_the_cli_reads_them() {
    let sb = World::new(module_path!());
    let loose = EXPECT.replace(
        r#""flags":{"output-format":"stream-json","model":"gemini-2.5-flash","yolo":true},"#,
        "",
    );
    let c = cassette(
        &sb,
        "text",
        &loose,
        &from_capture("text", r#"{"dt_ms":0,"exit":0}"#),
    );
    sb.write(
        ".gemini/settings.json",
        "{\n  // the model the tests use\n  \"model\": { /* as recorded */ \"name\": \"gemini-2.5-flash\" },\n  \"ui\": {\"theme\": \"a//b\"} // the end\n}\n",
    );
    let out = gemini(&sb, &c, &["-p", "say hi", "-o", "stream-json", "-y"])
        .output()
        .unwrap();
    let (stdout, _) = capture("text");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), stdout);
    // What is still not JSON once the comments are gone is refused as before.
    let bad = sb.write(".gemini/settings.json", "{\"model\": {\"name\": \"x\",}}\n");
    let out = gemini(&sb, &c, &["-p", "say hi", "-o", "stream-json", "-y"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(96), "{err}");
    assert!(
        err.starts_with(&format!("fake-pi: {}: not JSON: ", bad.display())),
        "{err}"
    );
    sb.assert_none_left();
}
