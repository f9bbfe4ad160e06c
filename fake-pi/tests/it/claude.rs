//! fake-pi as Claude Code (a `stream-json` cassette): every recorded session replays to the
//! recorded bytes when a host does what the recording's host did, the permission answer is
//! checked (allow is not deny), the command line is read as the CLI reads it, and the
//! tool process of an allowed Bash call runs until the CLI's SIGTERM ends it.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use crate::util::*;
use pi_cassette::two_way::{client_steps, ClientAction};
use pi_cassette::{Action, Cassette};

const ARGS: &[&str] = &[
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

fn corpus() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../cassettes/claude");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().contains(".cassette.jsonl"))
        .collect();
    v.sort();
    v
}

fn claude(name: &str) -> PathBuf {
    corpus()
        .into_iter()
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with(name))
        .unwrap_or_else(|| panic!("no {name} cassette"))
}

/// The host's lines, written at once (fake-pi takes them in order as the replay reaches
/// them), and whether the host closes stdin at the end.
fn host_input(c: &Cassette) -> (Vec<u8>, bool, Option<String>) {
    let mut bytes = Vec::new();
    let mut close = false;
    let mut signal = None;
    for step in client_steps(&c.records) {
        match step.action {
            ClientAction::Line(l) | ClientAction::Raw(l) => {
                bytes.extend_from_slice(l.as_bytes());
                bytes.push(b'\n');
            }
            ClientAction::Close => close = true,
            ClientAction::Signal(s) => signal = Some(s),
        }
    }
    (bytes, close, signal)
}

#[test]
fn every_recorded_session_replays_byte_for_byte_to_the_same_host() {
    let world = World::new("claude_corpus");
    let cassettes = corpus();
    assert!(cassettes.len() >= 8, "the corpus has {}", cassettes.len());
    for path in cassettes {
        let c = Cassette::load(&path).unwrap();
        if c.header.expect.stdin == Some(pi_cassette::StdinKind::Terminal) {
            // A terminal's host: a_terminal_on_stdin_is_answered_at_once_...
            continue;
        }
        let (input, close, signal) = host_input(&c);
        // The recording's own options (the bridges' shapes have theirs).
        let mut child = world
            .fake_pi(&path)
            .args(c.header.expect.claude_argv())
            .env("FAKE_PI_VALUES", "recorded")
            .env("FAKE_PI_SPEED", "0")
            .env("ANTHROPIC_API_KEY", "k")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(&input).unwrap();
        if let Some(sig) = &signal {
            // The recording's host signalled once the tool ran: wait for the replay to
            // reach the signal (its spawn is running), then send it.
            std::thread::sleep(std::time::Duration::from_millis(300));
            let sig: nix::sys::signal::Signal = sig.parse().unwrap();
            nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), sig).unwrap();
        }
        if close {
            drop(stdin);
        } else {
            std::mem::forget(stdin);
        }
        let out = child.wait_with_output().unwrap();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&c.stdout_bytes()),
            "{name}: stdout"
        );
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&c.stderr_bytes()),
            "{name}: stderr"
        );
        match c.ending() {
            Action::Exit(code) => assert_eq!(out.status.code(), Some(*code), "{name}"),
            other => panic!("{name}: a recorded session ends with an exit, not {other:?}"),
        }
    }
    world.assert_none_left();
}

#[test]
fn a_deny_where_the_recording_allowed_is_refused_naming_the_line() {
    let world = World::new("claude_deny_vs_allow");
    let path = claude("claude_tool_allowed");
    let c = Cassette::load(&path).unwrap();
    let (input, _, _) = host_input(&c);
    let input = String::from_utf8(input).unwrap().replace(
        r#""behavior":"allow""#,
        r#""behavior":"deny","message":"no""#,
    );
    let mut child = world
        .fake_pi(&path)
        .args(ARGS)
        .env("ANTHROPIC_API_KEY", "k")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(99), "{err}");
    let first = err.lines().next().unwrap();
    assert!(
        first.starts_with(&format!("fake-pi: client mismatch: {}:", path.display()))
            && first.contains("field `response`")
            && first.contains(r#""behavior":"allow""#)
            && first.contains(r#""behavior":"deny""#),
        "{first}"
    );
    world.assert_none_left();
}

#[test]
fn the_command_line_is_read_as_the_cli_reads_it() {
    let world = World::new("claude_argv");
    let path = claude("claude_text");
    let run = |args: &[&str], key: bool| {
        let mut cmd = world.fake_pi(&path);
        cmd.args(args).stdin(Stdio::null());
        if key {
            cmd.env("ANTHROPIC_API_KEY", "k");
        } else {
            cmd.env_remove("ANTHROPIC_API_KEY");
        }
        let out = cmd.output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    // The CLI's own checks, with its messages (measured on 2.1.330).
    assert_eq!(
        run(&["-p", "--output-format", "stream-json", "hi"], true),
        (
            Some(1),
            String::new(),
            "Error: When using --print, --output-format=stream-json requires --verbose\n".into()
        )
    );
    assert_eq!(
        run(&["--version"], true),
        (Some(0), "2.1.330 (Claude Code)\n".into(), String::new())
    );
    // A valid call the recording did not make: said so, exit 99.
    let mut fewer: Vec<&str> = ARGS.to_vec();
    fewer.truncate(ARGS.len() - 2);
    let (code, _, err) = run(&fewer, true);
    assert_eq!(code, Some(99), "{err}");
    assert!(
        err.contains("the recording ran with --permission-prompt-tool stdio; this call has none"),
        "{err}"
    );
    // No key: what the CLI says.
    assert_eq!(
        run(ARGS, false),
        (
            Some(1),
            "Not logged in · Please run /login\n".into(),
            String::new()
        )
    );
    world.assert_none_left();
}

/// A host that answers the permission prompt and signals at once (conform's steps do: both
/// after the same stdout line) has done the recording's host's actions: the replay takes the
/// SIGTERM as the recorded one, whether it comes before the replay reached it or while the
/// allow is still being read, and plays what the CLI wrote after it (the tool's
/// `Exit code 137`), then exits 143 with nothing left.
#[test]
fn a_sigterm_right_after_the_allow_is_the_recorded_hosts_signal() {
    use std::io::{BufRead, BufReader};
    let world = World::new("claude_early_sigterm");
    let path = claude("claude_sigterm_mid_tool");
    let c = Cassette::load(&path).unwrap();
    let steps = client_steps(&c.records);
    let line = |k: usize| match &steps[k].action {
        ClientAction::Line(l) => l.clone(),
        other => panic!("step {k}: {other:?}"),
    };
    for round in 0..5 {
        let mut child = world
            .fake_pi(&path)
            .args(ARGS)
            .env("FAKE_PI_VALUES", "recorded")
            .env("FAKE_PI_SPEED", "0")
            .env("ANTHROPIC_API_KEY", "k")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        writeln!(stdin, "{}", line(0)).unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut seen = Vec::new();
        loop {
            let mut l = String::new();
            assert!(
                out.read_line(&mut l).unwrap() > 0,
                "round {round}: stdout ended"
            );
            seen.extend_from_slice(l.as_bytes());
            if l.contains(r#""type":"control_request""#) {
                break;
            }
        }
        writeln!(stdin, "{}", line(1)).unwrap();
        stdin.flush().unwrap();
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(child.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        )
        .unwrap();
        let mut rest = Vec::new();
        std::io::Read::read_to_end(&mut out, &mut rest).unwrap();
        seen.extend_from_slice(&rest);
        let status = child.wait().unwrap();
        let mut err = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
        assert_eq!(status.code(), Some(143), "round {round}: {err}");
        assert_eq!(
            String::from_utf8_lossy(&seen),
            String::from_utf8_lossy(&c.stdout_bytes()),
            "round {round}: the records after the signal"
        );
    }
    world.assert_none_left();
}

/// The environment a recording needs beyond the key is checked too (before, only
/// `ANTHROPIC_API_KEY` was): without `CLAUDE_CODE_MAX_RETRIES` the real CLI retries ten times
/// instead of ending as recorded, so a call without it is refused, naming the variable; and a
/// secret the recording names is refused in argv without being shown.
#[test]
fn every_variable_the_recording_needs_is_checked() {
    let world = World::new("claude_env");
    let text = std::fs::read_to_string(claude("claude_text")).unwrap();
    let text = text.replacen(
        r#""env":["ANTHROPIC_API_KEY"]"#,
        r#""env":["ANTHROPIC_API_KEY","CLAUDE_CODE_MAX_RETRIES"],"never_in_argv":[{"env":"ANTHROPIC_API_KEY"}]"#,
        1,
    );
    assert!(text.contains("CLAUDE_CODE_MAX_RETRIES"));
    let path = world.write("env.cassette.jsonl", &text);
    let run = |args: &[&str], retries: Option<&str>| {
        let mut cmd = world.fake_pi(&path);
        cmd.args(args)
            .stdin(Stdio::null())
            .env("ANTHROPIC_API_KEY", "key-value-1234");
        match retries {
            Some(v) => cmd.env("CLAUDE_CODE_MAX_RETRIES", v),
            None => cmd.env_remove("CLAUDE_CODE_MAX_RETRIES"),
        };
        let out = cmd.output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, err) = run(ARGS, None);
    assert_eq!(code, Some(99), "{err}");
    assert!(
        err.starts_with("fake-pi: expectation mismatch: expect.env.CLAUDE_CODE_MAX_RETRIES: expected set and non-empty, got unset"),
        "{err}"
    );
    // The mismatch's line, then the next step's (record again, or ignore env at replay).
    assert_eq!(err.lines().count(), 2, "{err}");
    assert!(
        err.lines().nth(1).unwrap().starts_with("fake-pi: next: "),
        "{err}"
    );
    let (code, err) = run(ARGS, Some(""));
    assert_eq!(code, Some(99), "{err}");
    assert!(err.contains("got empty"), "{err}");
    let mut leaky: Vec<&str> = ARGS.to_vec();
    leaky.push("key-value-1234");
    let (code, err) = run(&leaky, Some("1"));
    assert_eq!(code, Some(99), "{err}");
    assert!(err.contains("expect.never_in_argv[0]"), "{err}");
    assert!(!err.contains("key-value-1234"), "{err}");
    world.assert_none_left();
}

/// A bridge keeps stdin open until the turn's `result`, then closes it; the recording's host
/// closed it right after its prompt. The real CLI finishes the turn either way: so does the
/// replay, which waits for the close before the exit, not where the recording had it (before,
/// it waited for the close first and the bridge for the result: both forever).
#[test]
fn a_host_that_closes_stdin_after_the_result_gets_the_recorded_turn() {
    use std::io::BufRead as _;
    let world = World::new("claude_late_close");
    for name in ["claude_text", "claude_api_error"] {
        // The recording as a host that closed stdin right after its prompt makes it.
        let text = std::fs::read_to_string(claude(name)).unwrap();
        let mut lines: Vec<&str> = text.lines().collect();
        let close = lines
            .iter()
            .position(|l| l.contains(r#""stdin_close":true"#))
            .unwrap();
        let record = lines.remove(close);
        lines.insert(2, record);
        let path = world.write(
            &format!("{name}.early-close.cassette.jsonl"),
            lines.join("\n") + "\n",
        );
        let c = Cassette::load(&path).unwrap();
        let (input, close, _) = host_input(&c);
        assert!(close, "{name}: the recording's host closes stdin");
        let mut child = world
            .fake_pi(&path)
            .args(ARGS)
            .env("FAKE_PI_VALUES", "recorded")
            .env("FAKE_PI_SPEED", "0")
            .env("FAKE_PI_RPC_WAIT_MS", "20000")
            .env("ANTHROPIC_API_KEY", "k")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = Some(child.stdin.take().unwrap());
        stdin.as_mut().unwrap().write_all(&input).unwrap();
        let mut out = Vec::new();
        let mut reader = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        while reader.read_line(&mut line).unwrap() > 0 {
            let v: serde_json::Value = serde_json::from_str(&line).unwrap();
            if v["type"] == "result" {
                drop(stdin.take());
            }
            out.extend_from_slice(line.as_bytes());
            line.clear();
        }
        let status = child.wait().unwrap();
        let mut err = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out),
            String::from_utf8_lossy(&c.stdout_bytes()),
            "{name}: {err}"
        );
        let Action::Exit(code) = c.ending() else {
            panic!("{name}: ends with an exit")
        };
        assert_eq!(status.code(), Some(*code), "{name}: {err}");
    }
    world.assert_none_left();
}

/// A bridge's default call: the prompt in argv and a terminal on stdin that it keeps open.
/// The recording (made with a pseudo-terminal) replays to such a host at once, never reading
/// the terminal; a pipe where the recording had a terminal is refused, naming stdin (the CLI
/// would read the pipe to its end first), and so is a terminal where it had a pipe, and
/// another prompt.
#[test]
fn a_terminal_on_stdin_is_answered_at_once_and_a_pipe_instead_is_refused() {
    let world = World::new("claude_terminal");
    let path = claude("claude_bridge_default");
    let c = Cassette::load(&path).unwrap();
    assert_eq!(
        c.header.expect.stdin,
        Some(pi_cassette::StdinKind::Terminal)
    );
    let argv = [
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",
        "--allowedTools",
        "Bash,Read,Edit,Write",
        "--",
        "say hi",
    ];
    let run = |path: &Path, args: &[&str], terminal: bool| {
        let pty = nix::pty::openpty(None, None).unwrap();
        let mut cmd = world.fake_pi(path);
        cmd.args(args)
            .env("FAKE_PI_VALUES", "recorded")
            .env("FAKE_PI_SPEED", "0")
            .env("ANTHROPIC_API_KEY", "k");
        if terminal {
            cmd.stdin(Stdio::from(pty.slave));
        } else {
            // A pipe the host keeps open (it never writes).
            cmd.stdin(Stdio::piped());
        }
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let _stdin = child.stdin.take();
        let out = child.wait_with_output().unwrap();
        drop(pty.master);
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, out, err) = run(&path, &argv, true);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(out, String::from_utf8_lossy(&c.stdout_bytes()), "{err}");
    let (code, out, err) = run(&path, &argv, false);
    assert_eq!((code, out.as_str()), (Some(99), ""), "{err}");
    assert!(
        err.contains("stdin: the recording's was a terminal, this call's is a pipe (or a file) (the CLI reads a pipe to its end before it answers)"),
        "{err}"
    );
    let mut other = argv;
    other[7] = "say bye";
    let (code, _, err) = run(&path, &other, true);
    assert_eq!(code, Some(99), "{err}");
    assert!(
        err.contains(r#"the prompt in argv: expected ["say hi"] (as recorded), got ["say bye"]"#),
        "{err}"
    );
    let (code, _, err) = run(&claude("claude_text"), ARGS, true);
    assert_eq!(code, Some(99), "{err}");
    assert!(
        err.contains("stdin: the recording's was a pipe (or a file), this call's is a terminal"),
        "{err}"
    );
    world.assert_none_left();
}

/// `--help` and `--version` print what the recorded release prints, byte for byte (bridges
/// probe `--help` for options: one adds `--include-hook-events` when it is listed).
#[test]
fn help_and_version_print_the_recorded_release_s_own_text() {
    let world = World::new("claude_help");
    let path = claude("claude_text");
    let version = Cassette::load(&path).unwrap().header.pi.version;
    let data = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../harness/grammar/data/claude")
        .join(&version);
    let help = std::fs::read(data.join("help.txt")).unwrap();
    assert!(String::from_utf8_lossy(&help).contains("  --include-hook-events "));
    for flag in ["--help", "-h"] {
        let out = world.fake_pi(&path).arg(flag).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{flag}");
        assert!(out.stderr.is_empty(), "{flag}");
        assert!(
            out.stdout == help,
            "{flag}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
    let out = world.fake_pi(&path).arg("--version").output().unwrap();
    assert_eq!(out.stdout, std::fs::read(data.join("version.txt")).unwrap());
    world.assert_none_left();
}

/// `--permission-mode default` is taken (the help does not list `default`, the parser
/// does): a recording made with it is replayed for a call that has it.
#[test]
fn permission_mode_default_is_taken() {
    let world = World::new("claude_permission_default");
    let text = std::fs::read_to_string(claude("claude_text")).unwrap();
    let (header, rest) = text.split_once('\n').unwrap();
    let mut header: serde_json::Value = serde_json::from_str(header).unwrap();
    header["expect"]["flags"]["permission-mode"] = "default".into();
    let path = world.write("claude_default.cassette.jsonl", format!("{header}\n{rest}"));
    let mut args: Vec<&str> = ARGS.to_vec();
    args.extend(["--permission-mode", "default"]);
    let out = world
        .fake_pi(&path)
        .args(&args)
        .env_remove("ANTHROPIC_API_KEY")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    // Read, matched with the recording, and then the CLI's own word on the missing key.
    assert_eq!(
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned()
        ),
        (
            Some(1),
            "Not logged in · Please run /login\n".into(),
            String::new()
        )
    );
    world.assert_none_left();
}

/// A bridge's two live calls (`--permission-mode default --permission-prompt-tool stdio`,
/// and the same with `--include-hook-events`, which it adds when `--help` lists it), recorded
/// from Claude Code with that argv: the bridge writes its prompt, answers the permission
/// prompt, keeps stdin open until the `result` and then closes it; it gets the recorded
/// stream and exit, on each pinned release.
#[test]
fn a_bridges_live_calls_replay_as_recorded() {
    use std::io::BufRead as _;
    let world = World::new("claude_bridge_live");
    let mut seen = 0;
    for path in corpus() {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !(name.starts_with("claude_bridge_live.") || name.starts_with("claude_bridge_hooks.")) {
            continue;
        }
        seen += 1;
        let c = Cassette::load(&path).unwrap();
        let argv = c.header.expect.claude_argv();
        assert!(
            argv.contains(&"--permission-mode".to_string())
                && argv.contains(&"default".to_string())
        );
        assert_eq!(
            argv.contains(&"--include-hook-events".to_string()),
            name.starts_with("claude_bridge_hooks."),
            "{name}"
        );
        let mut child = world
            .fake_pi(&path)
            .args(&argv)
            .env("FAKE_PI_VALUES", "recorded")
            .env("FAKE_PI_SPEED", "0")
            .env("FAKE_PI_RPC_WAIT_MS", "20000")
            .env("ANTHROPIC_API_KEY", "k")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = Some(child.stdin.take().unwrap());
        // The host's lines, each once the CLI asked for it (the prompt at once, the allow
        // when the permission prompt came), as a live bridge writes them.
        let mut lines = client_steps(&c.records)
            .into_iter()
            .filter_map(|s| match s.action {
                ClientAction::Line(l) => Some((s.after_stdout_lines, l)),
                _ => None,
            });
        let mut next = lines.next();
        let mut out = Vec::new();
        let mut reader = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut count = 0u64;
        let mut line = String::new();
        loop {
            while let Some((after, l)) = next.as_ref().filter(|(after, _)| *after <= count) {
                let _ = after;
                let w = stdin.as_mut().unwrap();
                w.write_all(l.as_bytes()).unwrap();
                w.write_all(b"\n").unwrap();
                next = lines.next();
            }
            line.clear();
            if reader.read_line(&mut line).unwrap() == 0 {
                break;
            }
            count += 1;
            let v: serde_json::Value = serde_json::from_str(&line).unwrap();
            if v["type"] == "result" {
                drop(stdin.take());
            }
            out.extend_from_slice(line.as_bytes());
        }
        let status = child.wait().unwrap();
        let mut err = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out),
            String::from_utf8_lossy(&c.stdout_bytes()),
            "{name}: {err}"
        );
        assert_eq!(status.code(), Some(0), "{name}: {err}");
    }
    assert_eq!(seen, 4, "two shapes on each pinned release");
    world.assert_none_left();
}

/// A Claude Code cassette that ignores `model` (`record --ignore model`, `cassette relax
/// --ignore model`) replays for a host that passes its own `--model`; one that does not
/// refuses it, naming the option.
#[test]
fn a_cassette_that_ignores_the_model_replays_under_another() {
    let world = World::new("claude_ignore_model");
    let text = std::fs::read_to_string(claude("claude_text")).unwrap();
    let strict = world.write("strict.cassette.jsonl", &text);
    let relaxed = text.replacen(
        r#""env":["ANTHROPIC_API_KEY"]"#,
        r#""env":["ANTHROPIC_API_KEY"],"irrelevant":["model"]"#,
        1,
    );
    assert_ne!(relaxed, text);
    let relaxed = world.write("relaxed.cassette.jsonl", &relaxed);
    let c = Cassette::load(&strict).unwrap();
    let (input, close, _) = host_input(&c);
    assert!(close);
    let replay = |path: &Path| {
        let mut child = world
            .fake_pi(path)
            .args(c.header.expect.claude_argv())
            .args(["--model", "claude-sonnet-4-5"])
            .env("FAKE_PI_SPEED", "0")
            .env("ANTHROPIC_API_KEY", "k")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        // The refusal may come before the host's line is read.
        let _ = stdin.write_all(&input);
        drop(stdin);
        let out = child.wait_with_output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, err) = replay(&strict);
    assert_eq!(code, Some(99), "{err}");
    assert!(
        err.contains("--model: the recording ran without it"),
        "{err}"
    );
    let (code, err) = replay(&relaxed);
    assert_eq!(code, Some(0), "{err}");
    world.assert_none_left();
}
