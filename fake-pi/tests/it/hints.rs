//! fake-pi's hints and the replay of an unverified release (newer than every pinned one):
//! by default each hint goes to `FAKE_PI_REPORT` only and stdout and stderr are the
//! recording's (or the CLI's own refusal) byte for byte; with `FAKE_PI_HINTS=1` it is said on
//! stderr too, after the imitated CLI's own message; `FAKE_PI_HINTS=0` is accepted and is the
//! default.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
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

/// How a run asks for hints.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Hints {
    /// Nothing set: hints in the report only.
    Default,
    /// `FAKE_PI_HINTS=1`: on stderr too.
    Stderr,
    /// `FAKE_PI_HINTS=0`: accepted, the default.
    Zero,
}

const EVERY: [Hints; 3] = [Hints::Default, Hints::Stderr, Hints::Zero];

/// `cmd` asking for hints as `h` says, its report at a new file in `world`.
fn hinting(world: &World, cmd: &mut Command, h: Hints) -> PathBuf {
    match h {
        Hints::Default => cmd.env_remove("FAKE_PI_HINTS"),
        Hints::Stderr => cmd.env("FAKE_PI_HINTS", "1"),
        Hints::Zero => cmd.env("FAKE_PI_HINTS", "0"),
    };
    let report = world
        .path()
        .join(format!("report-{}.jsonl", fastrand::u64(..)));
    cmd.env("FAKE_PI_REPORT", &report);
    report
}

/// Every line the report at `path` holds (none when it was not written).
fn reported(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .flat_map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["lines"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_str().unwrap().to_string())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// (status, stdout, stderr, the report's lines) of `cmd` run with hints as `h` says.
fn run_hinted(
    world: &World,
    mut cmd: Command,
    h: Hints,
) -> (Option<i32>, String, String, Vec<String>) {
    let report = hinting(world, &mut cmd, h);
    let (code, stdout, stderr) = out(cmd.output().unwrap());
    (code, stdout, stderr, reported(&report))
}

/// The stderr a run with hints as `h` gives: the CLI's own `cli`, then `hint` (a line with
/// its newline) only on [`Hints::Stderr`].
fn with_hint(h: Hints, cli: &str, hint: &str) -> String {
    if h == Hints::Stderr {
        format!("{cli}{hint}")
    } else {
        cli.to_string()
    }
}

#[test]
fn an_unverified_pi_release_replays_with_one_warning_line() {
    let world = World::new("hint_unverified_pi");
    let path = pi_cassette(&world, "newer", UNVERIFIED_160);
    let c = Cassette::load(&path).unwrap();
    let run = |args: &[&str], h: Hints| {
        let mut cmd = world.fake_pi(&path);
        cmd.args(args);
        run_hinted(&world, cmd, h)
    };
    let warning = WARNING_160.trim_end().to_string();
    for h in EVERY {
        // It answers as the release it stands for; the warning names the grammar it borrowed.
        assert_eq!(
            run(&["--version"], h),
            (
                Some(0),
                "1.6.0\n".into(),
                with_hint(h, "", WARNING_160),
                vec![warning.clone()]
            ),
            "{h:?}"
        );
        let (code, stdout, stderr, report) = run(&["--mode", "json", "hi"], h);
        assert_eq!(code, Some(0), "{stderr}");
        assert_eq!(stdout.as_bytes(), c.stdout_bytes(), "{h:?}");
        // By default stderr is the recording's, byte for byte.
        let recorded = String::from_utf8_lossy(&c.stderr_bytes()).into_owned();
        assert_eq!(stderr, with_hint(h, "", WARNING_160) + &recorded, "{h:?}");
        assert_eq!(report, std::slice::from_ref(&warning), "{h:?}");
    }
    // 1.5.2's grammar: a flag 1.5.2 lacks is pi's unknown option, as 1.5.2 says it.
    let (code, _, err, _) = run(&["--mode", "json", "--no-such-flag", "hi"], Hints::Default);
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
    let run = |args: &[&str], h: Hints| {
        let mut cmd = world.fake_pi(&path);
        cmd.args(args);
        run_hinted(&world, cmd, h)
    };
    let hint = |flag: &str| {
        format!("fake-pi: hint: the cassette is of pi 0.73.1, which has no {flag}: pi 0.87.1 is the first release with it. Record the cassette on pi 0.87.1 (pinned), or drop the flag")
    };
    for h in EVERY {
        // A long flag: pi reports it after reading stdin.
        let (code, stdout, stderr, report) =
            run(&["--mode", "json", "--exclude-tools", "bash", "hi"], h);
        let cli = "Error: Unknown option: --exclude-tools\n";
        let line = hint("--exclude-tools");
        assert_eq!(
            (code, stdout.as_str(), stderr, report),
            (
                Some(1),
                "",
                with_hint(h, cli, &format!("{line}\n")),
                vec![line]
            ),
            "{h:?}"
        );
        // A short one: refused while parsing; the first release to have it is not a pinned one.
        let (code, _, stderr, report) = run(&["--mode", "json", "-xt", "bash", "hi"], h);
        assert_eq!(code, Some(1));
        let cli = stderr.strip_suffix(&with_hint(h, "", &format!("{}\n", hint("-xt"))));
        assert!(
            cli.is_some_and(|c| c.contains("Unknown option: -xt")),
            "{h:?}: {stderr}"
        );
        assert_eq!(report, [hint("-xt")], "{h:?}");
    }
    // A flag no release has: no hint.
    let (_, _, err, report) = run(&["--mode", "json", "--no-such-flag", "hi"], Hints::Stderr);
    assert_eq!(err, "Error: Unknown option: --no-such-flag\n");
    assert!(report.is_empty(), "{report:?}");
    // A release the changelog names between pinned ones: the pinned one to record on.
    let p87 = pi_cassette(
        &world,
        "p87",
        r#"{"version":"0.87.1","dialect":"delta-only"}"#,
    );
    let mut cmd = world.fake_pi(&p87);
    cmd.args(["--mode", "json", "--no-mcp", "hi"]);
    let (_, _, err, report) = run_hinted(&world, cmd, Hints::Default);
    assert_eq!(err, "Error: Unknown option: --no-mcp\n");
    assert_eq!(
        report,
        ["fake-pi: hint: the cassette is of pi 0.87.1, which has no --no-mcp: pi 1.0.4 is the first release with it. Record the cassette on pi 1.5.2 (pinned), or drop the flag"]
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
    let cli = "error: unknown option '--mode'\n(Did you mean --model?)\n";
    let hint = "fake-pi: hint: this command line is pi's (--mode), and the cassette is Claude Code's (Claude Code 2.1.332, claude_text): give it a pi cassette, or run the host as Claude Code";
    for h in EVERY {
        let mut cmd = world.fake_pi(&path);
        cmd.args(["--mode", "json", "-p", "hi"])
            .env("ANTHROPIC_API_KEY", "k");
        assert_eq!(
            run_hinted(&world, cmd, h),
            (
                Some(1),
                String::new(),
                with_hint(h, cli, &format!("{hint}\n")),
                vec![hint.to_string()]
            ),
            "{h:?}"
        );
    }
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
        let mut cmd = world.fake_pi(&path);
        cmd.args(args);
        let (code, _, got, report) = run_hinted(&world, cmd, Hints::Stderr);
        assert_eq!((code, got.as_str()), (Some(1), err), "{args:?}");
        assert!(report.is_empty(), "{report:?}");
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
    let args = [
        "-p",
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
        "--verbose",
    ];
    let mut cmd = world.fake_pi(&path);
    cmd.args(args)
        .env("FAKE_PI_HINT_STDIN_MS", "60000")
        .stdin(Stdio::piped());
    let report = hinting(&world, &mut cmd, Hints::Stderr);
    let mut child = cmd.spawn().unwrap();
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
    assert_eq!(reported(&report), [line.trim_end()]);
    // By default: stderr is pi's answer alone, the hint in the report.
    let mut cmd = world.fake_pi(&path);
    cmd.args(args);
    let (code, _, err, report) = run_hinted(&world, cmd, Hints::Default);
    assert_eq!(
        (code, err.as_str(), report),
        (
            Some(1),
            "Error: Unknown options: --input-format, --output-format\n",
            vec![line.trim_end().to_string()]
        )
    );
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
fn stdin_left_open_gets_a_hint_after_the_delay_in_the_report_and_on_stderr_when_asked() {
    let world = World::new("hint_stdin_open");
    let path = pi_cassette(
        &world,
        "stdin",
        r#"{"version":"1.5.2","dialect":"delta-only"}"#,
    );
    let c = Cassette::load(&path).unwrap();
    let hint = "fake-pi: hint: stdin is still open after 300 ms; pi reads piped stdin to its end before it runs, so it waits (the recording's prompt was on the command line: give pi </dev/null or close its stdin)";
    let start = |h: Hints| {
        let mut cmd = world.fake_pi(&path);
        cmd.args(["--mode", "json", "hi"])
            .env("FAKE_PI_HINT_STDIN_MS", "300")
            .stdin(Stdio::piped());
        let report = hinting(&world, &mut cmd, h);
        (cmd.spawn().unwrap(), report)
    };
    let (mut child, report) = start(Hints::Stderr);
    let stdin = child.stdin.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let began = Instant::now();
    let said = read_until(&mut err, "\n", Duration::from_secs(20));
    assert!(
        began.elapsed() >= Duration::from_millis(300),
        "said after the delay: {said:?} after {:?}",
        began.elapsed()
    );
    assert_eq!(said, format!("{hint}\n"));
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
    assert_eq!(reported(&report), [hint]);
    // By default (and with 0): the same wait says nothing on stderr, which is the
    // recording's byte for byte; the hint is in the report.
    for h in [Hints::Default, Hints::Zero] {
        let (mut child, report) = start(h);
        let mut stdin = child.stdin.take().unwrap();
        std::thread::sleep(Duration::from_millis(800));
        stdin.flush().unwrap();
        drop(stdin);
        let o = child.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(0));
        assert_eq!(o.stderr, c.stderr_bytes(), "{h:?}");
        assert_eq!(o.stdout, c.stdout_bytes(), "{h:?}");
        assert_eq!(reported(&report), [hint], "{h:?}");
    }
    // stdin closed in time: no hint.
    let (mut child, report) = start(Hints::Stderr);
    drop(child.stdin.take());
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.stderr, c.stderr_bytes());
    assert!(reported(&report).is_empty());
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
    for h in EVERY {
        let mut cmd = world.fake_pi(&path);
        cmd.arg("--version");
        assert_eq!(
            run_hinted(&world, cmd, h),
            (
                Some(0),
                format!("{newer} (Claude Code)\n"),
                with_hint(h, "", &warning),
                vec![warning.trim_end().to_string()]
            ),
            "{h:?}"
        );
    }
    // The session replays to the recorded bytes by default.
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

/// Codex's and Gemini CLI's hints (a command line of another agent) go to the report too; by
/// default their stderr is the CLI's own refusal alone.
#[test]
fn codex_and_gemini_hints_are_in_the_report_and_stderr_is_the_clis_refusal() {
    let world = World::new("hint_codex_gemini");
    let cases = [
        (
            "codex/codex_text.cx0169.cassette.jsonl",
            "fake-pi: hint: this command line is pi's, and the cassette is Codex's (Codex 0.169.0, codex_text): give it a cassette of that agent, or run the host as codex",
        ),
        (
            "gemini/gemini_text.gm061.cassette.jsonl",
            "fake-pi: hint: this command line is pi's, and the cassette is Gemini CLI's (Gemini CLI 0.61.0, gemini_text): give it a cassette of that agent, or run the host as gemini",
        ),
    ];
    for (cassette, hint) in cases {
        let run = |h: Hints| {
            let mut cmd = world.fake_pi(&repo_cassette(cassette));
            cmd.args(["--mode", "json", "-p", "hi"])
                .env("HOME", world.path());
            run_hinted(&world, cmd, h)
        };
        let (code, stdout, stderr, report) = run(Hints::Default);
        assert_ne!(code, Some(0), "{cassette}");
        assert_eq!(report, [hint], "{cassette}");
        assert!(!stderr.contains("fake-pi:"), "{cassette}: {stderr}");
        let asked = run(Hints::Stderr);
        assert_eq!(
            (asked.0, asked.1, asked.2, asked.3),
            (
                code,
                stdout,
                format!("{stderr}{hint}\n"),
                vec![hint.to_string()]
            ),
            "{cassette}"
        );
    }
    world.assert_none_left();
}
