//! fake-pi as Codex CLI (`codex exec --json`): cassettes built from the real 0.169.0
//! captures (`harness/wire/tests/data/codex/`) replayed byte for byte, the call compared
//! by meaning (flags, `-c`, `config.toml`), the command-line errors as measured, the
//! signals mid-tool as recorded, and the process shape: the wrapper, its native child, the
//! orphan SIGKILL of the wrapper leaves and its bounded life.

use std::io::{BufRead, BufReader};
use std::os::unix::fs::FileTypeExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::*;

/// A real capture of Codex 0.169.0: (stdout, stderr).
fn capture(name: &str) -> (String, String) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../harness/wire/tests/data/codex");
    let read = |ext: &str| std::fs::read_to_string(dir.join(format!("{name}.{ext}"))).unwrap();
    (read("stdout.jsonl"), read("stderr"))
}

/// The expectations of the captures' command line and `config.toml`.
const EXPECT: &str = r#"{"flags":{"json":true,"skip-git-repo-check":true},"argv_messages":["say hi"],"prompt":"say hi","env":["FAKE_API_KEY"],"never_in_argv":[{"env":"FAKE_API_KEY"}],"effective":{"mode":"exec","provider":"fake","model":"fake-model","sandbox":"danger-full-access","approval":"never"},"session":"new"}"#;

/// What real Codex does with signals mid-tool: SIGTERM kills the tool and ends the run by
/// the signal; SIGINT kills the tool and exits 1.
const PROCESS: &str = r#"{"on_sigterm":{"action":"cleanup_die"},"on_sigint":{"action":"cleanup_exit","code":1},"on_sighup":{"action":"cleanup_die"}}"#;

/// The captures' `config.toml`.
const CONFIG: &str = r#"model = "fake-model"
model_provider = "fake"
approval_policy = "never"
sandbox_mode = "danger-full-access"

[model_providers.fake]
name = "fake"
base_url = "http://127.0.0.1:9/v1"
env_key = "FAKE_API_KEY"
wire_api = "responses"
"#;

fn json(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

/// A Codex cassette: the header with `expect`, then `records`.
fn cassette(sb: &World, name: &str, expect: &str, records: &[String]) -> PathBuf {
    let mut text = format!(
        r#"{{"format":"pi-cassette","version":1,"codex":{{"version":"0.169.0","dialect":"exec-json"}},"scenario":{{"name":"{name}","description":"from a real capture"}},"expect":{expect},"process":{PROCESS},"origin":{{"kind":"hand-made","timing":"synthetic"}}}}"#
    );
    for r in records {
        text.push('\n');
        text.push_str(r);
    }
    text.push('\n');
    sb.write(&format!("{name}.cx0169.cassette.jsonl"), text)
}

/// A capture's records: its stderr, then each stdout line, then `end`.
fn from_capture(name: &str, end: &str) -> Vec<String> {
    let (stdout, stderr) = capture(name);
    let mut r = vec![format!(r#"{{"dt_ms":0,"stderr":{}}}"#, json(&stderr))];
    for line in stdout.lines() {
        r.push(format!(
            r#"{{"dt_ms":1,"stdout_text":{},"newline":true}}"#,
            json(line)
        ));
    }
    r.push(end.to_string());
    r
}

/// fake-pi as `codex` in the world, with the captures' CODEX_HOME (unless `config` is
/// `None`: an empty one) and key.
fn codex(sb: &World, c: &Path, config: Option<&str>, args: &[&str]) -> Command {
    let home = sb.write("codex-home/config.toml", config.unwrap_or(""));
    let mut cmd = sb.fake_pi(c);
    cmd.env("CODEX_HOME", home.parent().unwrap())
        .env("FAKE_API_KEY", "sk-test")
        .args(args);
    cmd
}

const ARGS: &[&str] = &["exec", "--json", "--skip-git-repo-check", "say hi"];

#[test]
fn real_captures_replay_byte_for_byte_as_codex() {
    let sb = World::new(module_path!());
    for (name, end, code) in [
        ("text", r#"{"dt_ms":0,"exit":0}"#, 0),
        ("tool", r#"{"dt_ms":0,"exit":0}"#, 0),
        ("FAIL400", r#"{"dt_ms":0,"exit":1}"#, 1),
    ] {
        let c = cassette(&sb, name, EXPECT, &from_capture(name, end));
        let out = codex(&sb, &c, Some(CONFIG), ARGS).output().unwrap();
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
fn version_and_help_are_codex_s() {
    let sb = World::new(module_path!());
    let c = cassette(
        &sb,
        "text",
        EXPECT,
        &from_capture("text", r#"{"dt_ms":0,"exit":0}"#),
    );
    let out = codex(&sb, &c, None, &["--version"]).output().unwrap();
    assert_eq!(
        (out.status.code(), out.stdout.as_slice()),
        (Some(0), &b"codex-cli 0.169.0\n"[..])
    );
    let help = std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../harness/grammar/data/codex/0.169.0/exec-help.txt"),
    )
    .unwrap();
    let out = codex(&sb, &c, None, &["exec", "--help"]).output().unwrap();
    assert_eq!((out.status.code(), out.stdout), (Some(0), help));
    // A release newer than the pinned ones answers as itself, read with 0.169.0's grammar.
    let newer = sb.write(
        "newer.cx0170.cassette.jsonl",
        std::fs::read_to_string(&c).unwrap().replacen(
            r#""codex":{"version":"0.169.0","dialect":"exec-json"}"#,
            r#""codex":{"version":"0.170.0","dialect":"exec-json","unverified":{"grammar":"0.169.0"}}"#,
            1,
        ),
    );
    let out = codex(&sb, &newer, None, &["--version"]).output().unwrap();
    assert_eq!(
        (out.status.code(), String::from_utf8_lossy(&out.stdout)),
        (Some(0), "codex-cli 0.170.0\n".into()),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    sb.assert_none_left();
}

/// The mismatch lines fake-pi printed, and its status.
fn refused(cmd: &mut Command) -> (Option<i32>, String) {
    let out = cmd.output().unwrap();
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_call_that_means_something_else_is_exit_99_naming_the_difference() {
    let sb = World::new(module_path!());
    let c = cassette(
        &sb,
        "text",
        EXPECT,
        &from_capture("text", r#"{"dt_ms":0,"exit":0}"#),
    );
    let (code, err) = refused(&mut codex(
        &sb,
        &c,
        Some(CONFIG),
        &[
            "exec",
            "--json",
            "--skip-git-repo-check",
            "-m",
            "gpt-5",
            "say hi",
        ],
    ));
    assert_eq!(code, Some(99));
    assert!(err.contains("fake-pi: expectation mismatch: expect.effective.model: expected \"fake-model\", got \"gpt-5\" (from flag --model)"), "{err}");
    let (code, err) = refused(&mut codex(
        &sb,
        &c,
        Some(&CONFIG.replace("model_provider = \"fake\"\n", "")),
        ARGS,
    ));
    assert_eq!(code, Some(99));
    assert!(
        err.contains(
            "expect.effective.provider: expected \"fake\", got \"openai\" (from Codex's default)"
        ),
        "{err}"
    );
    let (code, err) = refused(&mut codex(
        &sb,
        &c,
        Some(CONFIG),
        &[
            "exec",
            "--json",
            "--skip-git-repo-check",
            "-s",
            "read-only",
            "say hi",
        ],
    ));
    assert_eq!(code, Some(99));
    assert!(err.contains("expect.effective.sandbox: expected \"danger-full-access\", got \"read-only\" (from flag --sandbox)"), "{err}");
    let (code, err) = refused(&mut codex(
        &sb,
        &c,
        Some(&CONFIG.replace(
            "sandbox_mode = \"danger-full-access\"",
            "sandbox_mode = \"workspace-write\"",
        )),
        ARGS,
    ));
    assert_eq!(code, Some(99));
    assert!(err.contains("expect.effective.sandbox: expected \"danger-full-access\", got \"workspace-write\" (from config.toml ("), "{err}");
    // The key in argv: never shown, its position named.
    let (code, err) = refused(&mut codex(
        &sb,
        &c,
        Some(CONFIG),
        &[
            "exec",
            "--json",
            "--skip-git-repo-check",
            "-c",
            "x=sk-test",
            "say hi",
        ],
    ));
    assert_eq!(code, Some(99));
    assert!(err.contains("expect.never_in_argv[0]: expected the value of $FAKE_API_KEY nowhere in argv, got it in argv[5]"), "{err}");
    assert!(!err.contains("sk-test"), "{err}");
    let (code, err) = refused(codex(&sb, &c, Some(CONFIG), ARGS).env_remove("FAKE_API_KEY"));
    assert_eq!(code, Some(99));
    assert!(
        err.contains("expect.env.FAKE_API_KEY: expected set and non-empty, got unset"),
        "{err}"
    );
    let (code, err) = refused(&mut codex(
        &sb,
        &c,
        Some(CONFIG),
        &["exec", "--json", "--skip-git-repo-check", "say bye"],
    ));
    assert_eq!(code, Some(99));
    assert!(
        err.contains("expect.prompt: expected \"say hi\", got \"say bye\""),
        "{err}"
    );
    let (code, err) = refused(&mut codex(
        &sb,
        &c,
        Some(CONFIG),
        &[
            "exec",
            "resume",
            "--last",
            "--json",
            "--skip-git-repo-check",
            "say hi",
        ],
    ));
    assert_eq!(code, Some(99));
    assert!(
        err.contains(
            "expect.session: expected a new session (or none), got an existing session continued"
        ),
        "{err}"
    );
    sb.assert_none_left();
}

#[test]
fn flags_overrides_and_config_mean_the_same() {
    let sb = World::new(module_path!());
    let c = cassette(
        &sb,
        "text",
        EXPECT,
        &from_capture("text", r#"{"dt_ms":0,"exit":0}"#),
    );
    let bare = "[model_providers.fake]\nenv_key = \"FAKE_API_KEY\"\n";
    let ok = |config: &str, args: &[&str]| {
        let out = codex(&sb, &c, Some(config), args).output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    // The captures' config.toml.
    ok(CONFIG, ARGS);
    // The same values as flags and overrides, with no config values.
    ok(
        bare,
        &[
            "exec",
            "--json",
            "--skip-git-repo-check",
            "-m",
            "fake-model",
            "-c",
            "model_provider=\"fake\"",
            "-s",
            "danger-full-access",
            "-c",
            "approval_policy=never",
            "say hi",
        ],
    );
    ok(
        bare,
        &[
            "-c",
            "model=fake-model",
            "exec",
            "--json",
            "--skip-git-repo-check",
            "--dangerously-bypass-approvals-and-sandbox",
            "-c",
            "model_provider='fake'",
            "say hi",
        ],
    );
    // A profile's values (`[profiles.p]`, selected by `--profile`).
    let profiled = format!("{bare}\n[profiles.p]\nmodel = \"fake-model\"\nmodel_provider = \"fake\"\nsandbox_mode = \"danger-full-access\"\n");
    ok(
        &profiled,
        &[
            "exec",
            "--json",
            "--skip-git-repo-check",
            "-p",
            "p",
            "say hi",
        ],
    );
    // The prompt on stdin (`-`) is the same prompt.
    let out = codex(
        &sb,
        &c,
        Some(CONFIG),
        &["exec", "--json", "--skip-git-repo-check", "-"],
    )
    .stdin(Stdio::piped())
    .spawn()
    .and_then(|mut child| {
        use std::io::Write;
        child.stdin.take().unwrap().write_all(b"say hi")?;
        child.wait_with_output()
    })
    .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    sb.assert_none_left();
}

#[test]
fn command_line_errors_are_codex_s_as_measured() {
    let sb = World::new(module_path!());
    let c = cassette(
        &sb,
        "text",
        EXPECT,
        &from_capture("text", r#"{"dt_ms":0,"exit":0}"#),
    );
    let (code, err) = refused(&mut codex(
        &sb,
        &c,
        Some(CONFIG),
        &["exec", "--bogus", "hi"],
    ));
    assert_eq!(code, Some(2));
    assert_eq!(err, "error: unexpected argument '--bogus' found\n\n  tip: to pass '--bogus' as a value, use '-- --bogus'\n\nUsage: codex exec [OPTIONS] [PROMPT]\n       codex exec [OPTIONS] <COMMAND> [ARGS]\n\nFor more information, try '--help'.\n");
    let (code, err) = refused(&mut codex(&sb, &c, Some(CONFIG), &["exec", "-m"]));
    assert_eq!((code, err.as_str()), (Some(2), "error: a value is required for '--model <MODEL>' but none was supplied\n\nFor more information, try '--help'.\n"));
    let (code, err) = refused(&mut codex(&sb, &c, Some(CONFIG), &["exec", "-c", "hi"]));
    assert_eq!(
        (code, err.as_str()),
        (
            Some(1),
            "Error parsing -c overrides: Invalid override (missing '='): hi\n"
        )
    );
    // No prompt and stdin at its end (/dev/null).
    let (code, err) = refused(&mut codex(&sb, &c, Some(CONFIG), &["exec", "--json"]));
    assert_eq!(
        (code, err.as_str()),
        (
            Some(1),
            "Reading prompt from stdin...\nNo prompt provided via stdin.\n"
        )
    );
    let (code, err) = refused(&mut codex(
        &sb,
        &c,
        Some(CONFIG),
        &["exec", "-c", "sandbox_mode=bogus", "hi"],
    ));
    assert_eq!(code, Some(1));
    assert!(err.starts_with("Error loading config.toml: unknown variant `bogus`, expected one of `read-only`, `workspace-write`, `danger-full-access`\nin `sandbox_mode`\n"), "{err}");
    let (code, err) = refused(&mut codex(
        &sb,
        &c,
        Some(CONFIG),
        &["exec", "-c", "model_provider=nope", "hi"],
    ));
    assert_eq!(
        (code, err.as_str()),
        (Some(1), "Error: Model provider `nope` not found\n")
    );
    // Outside a Git repository (the world's dir) without --skip-git-repo-check.
    let (code, err) = refused(&mut codex(
        &sb,
        &c,
        Some(CONFIG),
        &["exec", "--json", "say hi"],
    ));
    assert_eq!((code, err.as_str()), (Some(1), "Reading additional input from stdin...\nNot inside a trusted directory and --skip-git-repo-check was not specified.\n"));
    sb.assert_none_left();
}

#[test]
fn a_cassette_of_the_other_agent_is_named() {
    let sb = World::new(module_path!());
    let c = cassette(
        &sb,
        "text",
        EXPECT,
        &from_capture("text", r#"{"dt_ms":0,"exit":0}"#),
    );
    let (code, err) = refused(
        codex(&sb, &c, Some(CONFIG), &["--mode", "json", "-p", "hi"]).env("FAKE_PI_HINTS", "1"),
    );
    assert_eq!(code, Some(2));
    assert!(err.contains("fake-pi: hint: this command line is pi's, and the cassette is Codex's (Codex 0.169.0, text)"), "{err}");
    let pi = sb
        .cassette("pi")
        .members("")
        .records([r#"{"dt_ms":0,"exit":0}"#])
        .write();
    let out = sb
        .fake_pi(&pi)
        .args(ARGS)
        .env("FAKE_PI_HINTS", "1")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0));
    assert!(err.contains("fake-pi: hint: this command line is Codex's (codex exec), and the cassette is pi's (pi 0.87.1, pi)"), "{err}");
    sb.assert_none_left();
}

/// A run stopped mid-tool: the capture's lines up to the tool's `item.started`, the tool
/// (`/bin/bash -lc 'sleep 300'`, in its own session), then nothing until a signal.
fn mid_tool(sb: &World) -> PathBuf {
    let (stdout, stderr) = capture("SIGTERM-mid-tool");
    let mut r = vec![format!(r#"{{"dt_ms":0,"stderr":{}}}"#, json(&stderr))];
    for line in stdout.lines() {
        r.push(format!(
            r#"{{"dt_ms":0,"stdout_text":{},"newline":true}}"#,
            json(line)
        ));
    }
    r.push(r#"{"dt_ms":0,"spawn":{"id":"tool","own_session":true,"argv":["/bin/bash","-lc","sleep 300"]}}"#.into());
    r.push(r#"{"dt_ms":0,"hang":true}"#.into());
    cassette(sb, "mid-tool", EXPECT, &r)
}

/// Start `cmd`, read stdout up to the tool's `item.started`, wait for the tool; returns
/// the child, the native child's pid and the tool's.
fn started_mid_tool(sb: &World, mut cmd: Command) -> (std::process::Child, i32, i32) {
    let mut child = cmd.spawn().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut seen = String::new();
    while !seen.contains("\"item.started\"") {
        let mut line = String::new();
        assert!(
            out.read_line(&mut line).unwrap() > 0,
            "stdout ended: {seen}"
        );
        seen.push_str(&line);
    }
    std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
    let wrapper = child.id() as i32;
    let mut native = 0;
    let mut tool = 0;
    wait_until(Duration::from_secs(10), || {
        for p in sb.alive() {
            let ppid = stat(p).map(|s| s.1).unwrap_or(0);
            if ppid == wrapper && cmdline(p).starts_with("codex exec") {
                native = p;
            }
            if cmdline(p) == "/bin/bash -lc sleep 300" {
                tool = p;
            }
        }
        native != 0 && tool != 0
    });
    (child, native, tool)
}

fn comm(pid: i32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .unwrap_or_default()
        .trim()
        .to_string()
}

#[test]
fn sigterm_and_sigint_mid_tool_end_as_recorded_with_the_tool_killed() {
    let sb = World::new(module_path!());
    let c = mid_tool(&sb);
    for (sig, signal, code) in [(15, Some(15), None), (2, None, Some(1))] {
        let mut cmd = codex(&sb, &c, Some(CONFIG), ARGS);
        cmd.env("FAKE_PI_SPEED", "1");
        let (mut child, native, tool) = started_mid_tool(&sb, cmd);
        // The shape of the real CLI: node wrapper, native `codex` under it, the tool under that.
        assert_eq!(comm(child.id() as i32), "node");
        assert_eq!(comm(native), "codex");
        assert_eq!(stat(tool).map(|s| s.1), Some(native));
        send(child.id(), sig);
        let status = child.wait().unwrap();
        assert_eq!(
            (status.signal(), status.code()),
            (signal, code),
            "signal {sig}"
        );
        sb.assert_none_left_within(Duration::from_secs(2));
    }
}

#[test]
fn sigkill_of_the_wrapper_orphans_the_native_child_which_ends_within_its_bound() {
    let sb = World::new(module_path!());
    let c = mid_tool(&sb);
    let mut cmd = codex(&sb, &c, Some(CONFIG), ARGS);
    cmd.env("FAKE_PI_SPEED", "1")
        .env("FAKE_PI_CODEX_ORPHAN_MS", "1500");
    let (mut child, native, tool) = started_mid_tool(&sb, cmd);
    send(child.id(), 9);
    child.wait().unwrap();
    let killed = Instant::now();
    // Orphaned, as with the real CLI: the native child and its tool run on, marked.
    std::thread::sleep(Duration::from_millis(300));
    let left = sb.alive();
    assert!(left.contains(&native) && left.contains(&tool), "{left:?}");
    // And gone by themselves within the bound (with slack for a loaded machine).
    wait_until(Duration::from_secs(10), || sb.alive().is_empty());
    assert!(
        killed.elapsed() >= Duration::from_millis(1400),
        "{:?}",
        killed.elapsed()
    );
    sb.assert_none_left();
}

#[test]
fn stdin_left_open_gets_a_hint_naming_codex() {
    let sb = World::new(module_path!());
    let c = cassette(
        &sb,
        "text",
        EXPECT,
        &from_capture("text", r#"{"dt_ms":0,"exit":0}"#),
    );
    let mut child = codex(&sb, &c, Some(CONFIG), ARGS)
        .env("FAKE_PI_HINT_STDIN_MS", "100")
        .env("FAKE_PI_HINTS", "1")
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    std::thread::sleep(Duration::from_millis(500));
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("fake-pi: hint: stdin is still open after 100 ms; codex reads piped stdin to its end before it runs, so it waits (the recording's prompt was on the command line: give codex </dev/null or close its stdin)"), "{err}");
    sb.assert_none_left();
}

/// Real Codex's SIGTERM mid-tool, as recorded (`cassettes/codex/codex_sigterm_mid_tool`):
/// the tool's shell is killed, the `sleep` it ran survives it, orphaned. With
/// `kill_children_die` the replay leaves exactly that: the wrapper dies by SIGTERM, the
/// native child and the shell are gone, the `sleep` lives on (carrying the caller's
/// environment) and ends by itself within its bound (`FAKE_PI_CHILD_MAX_MS`).
#[test]
fn sigterm_kills_the_tools_shell_and_leaves_the_command_it_ran_orphaned() {
    let sb = World::new(module_path!());
    let (stdout, stderr) = capture("SIGTERM-mid-tool");
    let mut r = vec![format!(r#"{{"dt_ms":0,"stderr":{}}}"#, json(&stderr))];
    for line in stdout.lines() {
        r.push(format!(
            r#"{{"dt_ms":0,"stdout_text":{},"newline":true}}"#,
            json(line)
        ));
    }
    r.push(r#"{"dt_ms":0,"spawn":{"id":"tool","own_session":true,"argv":["/bin/bash","-c","sleep 300; echo done"],"grandchild":{"own_session":false,"argv":["sleep","300"]}}}"#.into());
    r.push(r#"{"dt_ms":0,"hang":true}"#.into());
    let text = std::fs::read_to_string(cassette(&sb, "kill-children", EXPECT, &r))
        .unwrap()
        .replacen(
            PROCESS,
            r#"{"on_sigterm":{"action":"kill_children_die"},"on_sigint":{"action":"cleanup_exit","code":1},"on_sighup":{"action":"kill_children_die"}}"#,
            1,
        );
    let c = sb.write("kill-children.cx0169.cassette.jsonl", text);
    let bound = Duration::from_millis(2_000);
    let mut cmd = codex(&sb, &c, Some(CONFIG), ARGS);
    cmd.env("FAKE_PI_CHILD_MAX_MS", bound.as_millis().to_string());
    let mut child = cmd.spawn().unwrap();
    let find = |line: &str| {
        sb.alive()
            .into_iter()
            .find(|&p| cmdline(p) == line)
            .unwrap_or(0)
    };
    let (mut shell, mut sleep) = (0, 0);
    wait_until(Duration::from_secs(5), || {
        shell = find("/bin/bash -c sleep 300; echo done");
        sleep = find("sleep 300");
        shell != 0 && sleep != 0
    });
    assert!(shell != 0 && sleep != 0, "{:?}", sb.alive());
    let started = Instant::now();
    send(child.id(), libc::SIGTERM);
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(libc::SIGTERM));
    // The shell killed, the command it ran left, orphaned, carrying the marker.
    wait_until(Duration::from_secs(2), || sb.alive() == [sleep]);
    assert_eq!(
        sb.alive(),
        [sleep],
        "left: {:?}",
        sb.alive().iter().map(|&p| cmdline(p)).collect::<Vec<_>>()
    );
    assert_ne!(stat(sleep).map(|s| s.1), Some(shell), "reparented");
    // And gone by itself within its bound.
    wait_until(Duration::from_secs(10), || sb.alive().is_empty());
    assert!(started.elapsed() < bound + Duration::from_secs(5));
    sb.assert_none_left();
}

/// The `thread_id` of each `thread.started` line of a run's stdout.
fn thread_ids(stdout: &[u8]) -> Vec<String> {
    stdout
        .split(|&b| b == b'\n')
        .filter_map(|l| serde_json::from_slice::<serde_json::Value>(l).ok())
        .filter(|e| e["type"] == "thread.started")
        .filter_map(|e| e["thread_id"].as_str().map(str::to_string))
        .collect()
}

/// `codex exec resume` continues the thread it names, or with `--last` the thread of the
/// last run in this CODEX_HOME: real Codex announces that thread's id again (measured), so
/// fake-pi does too (it gave every run a new one, and a host that checks it resumed the
/// thread it started saw another).
#[test]
fn exec_resume_announces_the_thread_it_continues() {
    let sb = World::new(module_path!());
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../cassettes/codex");
    let config = "model = \"gpt-5.5\"\nmodel_provider = \"openai\"\n";
    let run = |cassette: &str, args: &[&str]| {
        let out = codex(&sb, &corpus.join(cassette), Some(config), args)
            .env("CODEX_API_KEY", "sk-test")
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        thread_ids(&out.stdout)
    };
    let first = run(
        "codex_text.cx0169.cassette.jsonl",
        &["exec", "--json", "--skip-git-repo-check", "Say hello."],
    );
    assert_eq!(first.len(), 1);
    assert_ne!(first[0], "<THREAD_ID>");
    let resume = "codex_resume.cx0169.cassette.jsonl";
    let prompt = "Which word did I ask you to remember?";
    let again = run(
        resume,
        &[
            "exec",
            "resume",
            "--last",
            "--json",
            "--skip-git-repo-check",
            prompt,
        ],
    );
    assert_eq!(again, first, "resume --last continues the last thread");
    let named = run(
        resume,
        &[
            "exec",
            "resume",
            "--json",
            "--skip-git-repo-check",
            "0199a213-81c0-7800-8aa1-bbab2a035a53",
            prompt,
        ],
    );
    assert_eq!(named, ["0199a213-81c0-7800-8aa1-bbab2a035a53"]);
    // A new run starts a new thread.
    let other = run(
        "codex_text.cx0169.cassette.jsonl",
        &["exec", "--json", "--skip-git-repo-check", "Say hello."],
    );
    assert_ne!(other, first);
    sb.assert_none_left();
}

/// A run of the corpus's `cassette` as `codex` with `args`, CODEX_HOME as `home` says
/// (`None`: unset, HOME the world's with `.codex/config.toml`); (stdout's thread ids, what
/// fake-pi said of its own: the lines of its report, its stderr holding none of them).
fn corpus_run(
    sb: &World,
    cassette: &str,
    home: Option<&Path>,
    args: &[&str],
) -> (Vec<String>, String) {
    let config = "model = \"gpt-5.5\"\nmodel_provider = \"openai\"\n";
    let c = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../cassettes/codex")
        .join(cassette);
    let mut cmd = sb.fake_pi(&c);
    cmd.env("CODEX_API_KEY", "sk-test").args(args);
    match home {
        Some(h) => {
            std::fs::write(h.join("config.toml"), config).unwrap();
            cmd.env("CODEX_HOME", h);
        }
        None => {
            sb.write(".codex/config.toml", config);
            cmd.env_remove("CODEX_HOME").env("HOME", sb.path());
        }
    }
    let report = sb
        .path()
        .join(format!("report-{}.jsonl", fastrand::u64(..)));
    let out = cmd.env("FAKE_PI_REPORT", &report).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!err.contains("fake-pi:"), "{err}");
    let said: String = std::fs::read_to_string(&report)
        .unwrap_or_default()
        .lines()
        .flat_map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let lines: Vec<String> = v["lines"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| format!("{}\n", s.as_str().unwrap()))
                .collect();
            lines
        })
        .collect();
    (thread_ids(&out.stdout), said)
}

const NEW: &[&str] = &["exec", "--json", "--skip-git-repo-check", "Say hello."];
const LAST: &[&str] = &[
    "exec",
    "resume",
    "--last",
    "--json",
    "--skip-git-repo-check",
    "Which word did I ask you to remember?",
];

/// The last thread is fake-pi's own file in CODEX_HOME: a link there is replaced, never
/// written through (the file it named was truncated to a UUID).
#[test]
fn the_last_thread_is_never_written_through_a_link() {
    let sb = World::new(module_path!());
    let home = sb.path().join("codex-home");
    std::fs::create_dir_all(&home).unwrap();
    let victim = sb.write("victim.txt", "the user's file\n");
    std::os::unix::fs::symlink(&victim, home.join("fake-pi-last-thread")).unwrap();
    let (first, _) = corpus_run(&sb, "codex_text.cx0169.cassette.jsonl", Some(&home), NEW);
    assert_eq!(
        std::fs::read_to_string(&victim).unwrap(),
        "the user's file\n"
    );
    let kept = std::fs::symlink_metadata(home.join("fake-pi-last-thread")).unwrap();
    assert!(kept.is_file(), "{kept:?}");
    let (again, _) = corpus_run(&sb, "codex_resume.cx0169.cassette.jsonl", Some(&home), LAST);
    assert_eq!(again, first);
    sb.assert_none_left();
}

/// A FIFO there, or a link to /dev/zero, is refused at once (`exec resume --last` waited for
/// a writer forever, or read 1 GB first): a new thread, and a warning naming the file.
#[test]
fn a_fifo_or_a_device_as_the_last_thread_is_refused_at_once() {
    let sb = World::new(module_path!());
    let home = sb.path().join("codex-home");
    std::fs::create_dir_all(&home).unwrap();
    let last = home.join("fake-pi-last-thread");
    for what in ["a FIFO", "a symbolic link"] {
        let _ = std::fs::remove_file(&last);
        if what == "a FIFO" {
            nix::unistd::mkfifo(&last, nix::sys::stat::Mode::S_IRWXU).unwrap();
        } else {
            std::os::unix::fs::symlink("/dev/zero", &last).unwrap();
        }
        let started = Instant::now();
        let (ids, err) = corpus_run(&sb, "codex_resume.cx0169.cassette.jsonl", Some(&home), LAST);
        assert!(started.elapsed() < Duration::from_secs(10));
        assert_eq!(ids.len(), 1);
        assert!(
            err.contains(&format!(
                "fake-pi: warning: {}: {what}, not a regular file: `codex exec resume --last` cannot continue the last thread (remove it)\n",
                last.display()
            )),
            "{err}"
        );
        // And a new run leaves the FIFO alone (it is not a file fake-pi may replace).
        if what == "a FIFO" {
            let (_, err) = corpus_run(&sb, "codex_text.cx0169.cassette.jsonl", Some(&home), NEW);
            assert!(err.contains("a FIFO, not a regular file"), "{err}");
            assert!(std::fs::symlink_metadata(&last)
                .unwrap()
                .file_type()
                .is_fifo());
        }
    }
    sb.assert_none_left();
}

/// With CODEX_HOME unset, nothing is written in HOME's `.codex` (the user's own: real Codex
/// would write its sessions there, a test double has nothing to keep there); `--last` then
/// announces a new thread and a hint says why.
#[test]
fn without_codex_home_nothing_is_written_in_the_users_codex_dir() {
    let sb = World::new(module_path!());
    let (first, _) = corpus_run(&sb, "codex_text.cx0169.cassette.jsonl", None, NEW);
    let dot = sb.path().join(".codex");
    let names: Vec<_> = std::fs::read_dir(&dot)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["config.toml"]);
    let (again, err) = corpus_run(&sb, "codex_resume.cx0169.cassette.jsonl", None, LAST);
    assert_eq!(again.len(), 1);
    assert_ne!(again, first);
    assert!(err.contains("fake-pi: hint: `codex exec resume --last` with CODEX_HOME unset: fake-pi keeps the last thread only in a CODEX_HOME it is given (never in ~/.codex), so this run announces a new thread; set CODEX_HOME to a directory of the test's own\n"), "{err}");
    sb.assert_none_left();
}
