//! fake-pi's command line, per pi version: accepted flags, pi's own errors, `-p`, `--`,
//! `=` forms, `--thinking`, `--version`/`--help` streams, the stdin join, and fake-pi's
//! own error classes (97/98/99/96).

use std::io::Write;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use crate::util::*;

const OK: &[&str] = &[
    r#"{"dt_ms":0,"stdout":{"type":"session"}}"#,
    r#"{"dt_ms":0,"exit":0}"#,
];

/// Run fake-pi on a cassette with no expectations; return (stdout, stderr, exit code).
fn run(version: &str, argv: &[&str], stdin: &str) -> (String, String, i32) {
    let sb = World::new(module_path!());
    let c = sb
        .cassette("ok")
        .version(version)
        .members("")
        .records(OK)
        .write();
    // pi's exact output, by default (fake-pi's hints go to its report: tests/it/hints.rs).
    let out = cmd(&sb, &c)
        .args(argv)
        .env_remove("FAKE_PI_HINTS")
        .write_stdin(stdin)
        .output()
        .unwrap();
    sb.assert_none_left();
    (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
        out.status.code().expect("exited"),
    )
}

fn replays(version: &str, argv: &[&str]) {
    let (stdout, stderr, code) = run(version, argv, "");
    assert_eq!(
        (stdout.as_str(), stderr.as_str(), code),
        ("{\"type\":\"session\"}\n", "", 0),
        "{version} {argv:?}"
    );
}

fn pi_error(version: &str, argv: &[&str], stderr: &str) {
    let (out, err, code) = run(version, argv, "");
    assert_eq!(
        (out.as_str(), err.as_str(), code),
        ("", stderr, 1),
        "{version} {argv:?}"
    );
}

#[test]
fn common_flags_are_accepted_by_both_versions() {
    for v in ["0.73.1", "0.87.1"] {
        replays(
            v,
            &[
                "--mode",
                "json",
                "-p",
                "--provider",
                "fake",
                "--model",
                "m",
                "--no-session",
                "--thinking",
                "high",
                "--tools",
                "read,bash",
                "--append-system-prompt",
                "x",
                "--system-prompt",
                "s",
                "--offline",
                "hello",
            ],
        );
        replays(
            v,
            &[
                "--session",
                "/tmp/s.jsonl",
                "-t",
                "read",
                "--no-tools",
                "-nt",
                "-nc",
                "-ne",
                "--verbose",
                "@file.md",
            ],
        );
    }
}

#[test]
fn flags_only_0_87_1_has() {
    for argv in [
        &["--exclude-tools", "bash"][..],
        &["-xt", "bash"],
        &["--name", "n"],
        &["--approve"],
        &["--thinking", "max"],
    ] {
        replays("0.87.1", argv);
    }
    pi_error(
        "0.73.1",
        &["--session-id", "abc"],
        "Error: Unknown option: --session-id\n",
    );
    pi_error(
        "0.73.1",
        &["--exclude-tools", "bash", "hi"],
        "Error: Unknown option: --exclude-tools\n",
    );
    pi_error("0.73.1", &["-xt", "bash"], "Error: Unknown option: -xt\n");
    pi_error(
        "0.73.1",
        &["--approve", "--session-id", "x"],
        "Error: Unknown options: --approve, --session-id\n",
    );
    // 0.73.1 warns about `max` and goes on.
    let (out, err, code) = run("0.73.1", &["--thinking", "max"], "");
    assert_eq!(code, 0);
    assert_eq!(out, "{\"type\":\"session\"}\n");
    assert_eq!(err, "Warning: Invalid thinking level \"max\". Valid values: off, minimal, low, medium, high, xhigh\n");
}

#[test]
fn unknown_options_get_pis_exact_error() {
    for v in ["0.73.1", "0.87.1"] {
        pi_error(v, &["--bogus"], "Error: Unknown option: --bogus\n");
        pi_error(v, &["-x"], "Error: Unknown option: -x\n");
        pi_error(v, &["-"], "Error: Unknown option: -\n");
        pi_error(v, &["--provider"], "Error: Unknown option: --provider\n");
        pi_error(v, &["-t"], "Error: Unknown option: -t\n");
        // `=` forms are not understood, even for known flags.
        pi_error(v, &["--model=x", "hi"], "Error: Unknown option: --model\n");
        pi_error(v, &["--bogus=1"], "Error: Unknown option: --bogus\n");
    }
    pi_error(
        "0.87.1",
        &["--mode"],
        "Error: --mode requires text, json, or rpc\n",
    );
    pi_error(
        "0.87.1",
        &["--mode", "bad"],
        "Error: Invalid mode \"bad\". Valid values: text, json, rpc\n",
    );
    pi_error("0.73.1", &["--mode"], "Error: Unknown option: --mode\n");
    pi_error("0.87.1", &["--session-id", "bad!id"], "Error: Session id must be non-empty, contain only alphanumeric characters, '-', '_', and '.', and start and end with an alphanumeric character\n");
    pi_error("0.87.1", &["--thinking", "x", "-q"], "Warning: Invalid thinking level \"x\". Valid values: off, minimal, low, medium, high, xhigh, max\nError: Unknown option: -q\n");
}

#[test]
fn print_flag_and_double_dash() {
    let sb = World::new(module_path!());
    for v in ["0.73.1", "0.87.1"] {
        let c = sb
            .cassette("p")
            .version(v)
            .members(r#""expect":{"argv_messages":["---x","more"]}"#)
            .records(OK)
            .write();
        cmd(&sb, &c).args(["-p", "---x", "more"]).assert().success();
        let c = sb
            .cassette("p")
            .version(v)
            .members(r#""expect":{"argv_messages":[],"flags":{"print":true}}"#)
            .records(OK)
            .write();
        cmd(&sb, &c).args(["-p", "@f"]).assert().success();
    }
    pi_error("0.73.1", &["-p", "-x"], "Error: Unknown option: -x\n");
    let c = sb
        .cassette("dd")
        .version("0.87.1")
        .members(r#""expect":{"argv_messages":["-y","--model"],"flags":{"model":false}}"#)
        .records(OK)
        .write();
    cmd(&sb, &c)
        .args(["-p", "--", "-y", "--model"])
        .assert()
        .success();
    // 0.73.1 has no `--`: it is an unknown flag named "" (and -y an unknown option).
    pi_error("0.73.1", &["-p", "--", "-y"], "Error: Unknown option: -y\n");
    pi_error("0.73.1", &["--", "hello"], "Error: Unknown option: --\n");
    sb.assert_none_left();
}

#[test]
fn version_and_help_streams() {
    // stdin is a pipe here, so 0.73.1 is not interactive and prints on stderr.
    assert_eq!(
        run("0.73.1", &["--version"], ""),
        (String::new(), "0.73.1\n".into(), 0)
    );
    assert_eq!(
        run("0.87.1", &["--version"], ""),
        ("0.87.1\n".into(), String::new(), 0)
    );
    assert_eq!(
        run("0.87.1", &["-v", "--bogus"], ""),
        ("0.87.1\n".into(), String::new(), 0)
    );
    assert_eq!(
        run("0.73.1", &["-v"], ""),
        (String::new(), "0.73.1\n".into(), 0)
    );
    let (out, err, code) = run("0.87.1", &["--help"], "");
    assert!(
        code == 0 && err.is_empty() && out.contains("--exclude-tools, -xt <value>"),
        "{out}"
    );
    let (out, err, code) = run("0.87.1", &["--mode", "json", "-h"], "");
    assert!(
        code == 0 && out.is_empty() && err.contains("--session-id <value>"),
        "{err}"
    );
    let (out, err, code) = run("0.73.1", &["--help"], "");
    assert!(
        code == 0
            && out.is_empty()
            && err.contains("--tools, -t <value>")
            && !err.contains("--session-id")
    );
}

#[test]
fn version_is_the_cassettes_even_when_run_as_pi() {
    let sb = World::new(module_path!());
    let c = sb
        .cassette("v")
        .version("0.87.1")
        .members("")
        .records(OK)
        .write();
    let pi = sb.path().join("pi");
    std::os::unix::fs::symlink(assert_cmd::cargo::cargo_bin("fake-pi"), &pi).unwrap();
    let out = std::process::Command::new(&pi)
        .arg("--version")
        .env("FAKE_PI_CASSETTE", &c)
        .env(MARKER_VAR, sb.marker())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.stdout, b"0.87.1\n");
    sb.assert_none_left();
}

#[test]
fn stdin_is_joined_with_the_first_message() {
    let sb = World::new(module_path!());
    for v in ["0.73.1", "0.87.1"] {
        let both = sb
            .cassette("j")
            .version(v)
            .members(r#""expect":{"prompt":"hello world","argv_messages":[" world","second"]}"#)
            .records(OK)
            .write();
        cmd(&sb, &both)
            .args([" world", "second"])
            .write_stdin("  hello\n")
            .assert()
            .success();
        let stdin_only = sb
            .cassette("s")
            .version(v)
            .members(r#""expect":{"prompt":"line one\nline two","argv_messages":[]}"#)
            .records(OK)
            .write();
        cmd(&sb, &stdin_only)
            .write_stdin("\nline one\nline two\n\n")
            .assert()
            .success();
        let argv_only = sb
            .cassette("a")
            .version(v)
            .members(r#""expect":{"prompt":"just argv"}"#)
            .records(OK)
            .write();
        cmd(&sb, &argv_only)
            .arg("just argv")
            .write_stdin("  \n")
            .assert()
            .success();
        // And the mismatch names both sides.
        let out = cmd(&sb, &both)
            .args(["world"])
            .write_stdin("hello")
            .assert()
            .code(99)
            .get_output()
            .stderr
            .clone();
        let err = String::from_utf8(out).unwrap();
        assert!(
            err.contains("expect.prompt: expected \"hello world\", got \"helloworld\""),
            "{err}"
        );
    }
    sb.assert_none_left();
}

#[test]
fn unknown_long_flags_are_reported_only_after_stdin_closes() {
    let sb = World::new(module_path!());
    let c = sb
        .cassette("u")
        .version("0.87.1")
        .members("")
        .records(OK)
        .write();
    let mut child = sb
        .fake_pi(&c)
        .arg("--bogus")
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        child.try_wait().unwrap().is_none(),
        "fake-pi must wait for stdin EOF like pi"
    );
    child.stdin.take().unwrap().write_all(b"late").unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "Error: Unknown option: --bogus\n"
    );
    sb.assert_none_left();
}

#[test]
fn expectations_name_field_expected_and_actual() {
    let sb = World::new(module_path!());
    let c = sb.cassette("e").version("0.87.1").members(r#""expect":{"flags":{"model":"fake-model","tools":"read","no-session":true,"offline":false},"env":["PI_TEST_KEY"],"never_in_argv":[{"env":"PI_TEST_KEY"},{"literal":"sk-live"}]}"#).records(OK).write();
    // Satisfied, with a short alias standing in for --tools.
    cmd(&sb, &c)
        .args(["--model", "fake-model", "-t", "read", "--no-session"])
        .env("PI_TEST_KEY", "k-123")
        .assert()
        .success()
        .stdout("{\"type\":\"session\"}\n");
    // By meaning: the model and the tools differ; --offline and the session flags do not
    // change what pi does with the model.
    let mismatch = |c: &std::path::Path| -> Vec<String> {
        let out = cmd(&sb, c)
            .args([
                "--model",
                "gpt-4o",
                "--offline",
                "--api-key",
                "k-123",
                "sk-live",
            ])
            .env("PI_TEST_KEY", "k-123")
            .assert()
            .code(99)
            .get_output()
            .clone();
        assert!(out.stdout.is_empty());
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(!err.contains("k-123"), "a secret must never be printed");
        err.lines().map(str::to_string).collect()
    };
    let file = c.display().to_string();
    let agent = sb.agent_dir().display().to_string();
    assert_eq!(
        mismatch(&c),
        vec![
            format!("fake-pi: expectation mismatch: expect.effective.model: expected \"fake-model\", got \"gpt-4o\" (from --model; agent dir {agent}) (cassette {file})"),
            format!("fake-pi: expectation mismatch: expect.effective.tools: expected [\"read\"], got [\"bash\", \"edit\", \"read\", \"write\"] (cassette {file})"),
            format!("fake-pi: expectation mismatch: expect.never_in_argv[0]: expected the value of $PI_TEST_KEY nowhere in argv, got it in argv[5] (cassette {file})"),
            format!("fake-pi: expectation mismatch: expect.never_in_argv[1]: expected the literal secret (not shown) nowhere in argv, got it in argv[6] (cassette {file})"),
            // The next step names the fields a replay can ignore (not a secret in argv).
            "fake-pi: next: if the new call is right, record the cassette again (record mode all: --pi-record-mode all, recordMode: 'all' or PI_HARNESS_RECORD_MODE=all; then pi-harness cassette review); if model and tools do not matter, ignore them at replay (the test's ignore option, FAKE_PI_IGNORE=model,tools, or pi-harness cassette relax --ignore model tools)".to_string(),
        ]
    );
    // A cassette that opts in to syntax also checks every flag literally.
    let strict = sb.cassette("s").version("0.87.1").members(r#""expect":{"syntax":true,"flags":{"model":"fake-model","tools":"read","no-session":true,"offline":false},"env":["PI_TEST_KEY"],"never_in_argv":[{"env":"PI_TEST_KEY"},{"literal":"sk-live"}]}"#).records(OK).write();
    let file = strict.display().to_string();
    let lines = mismatch(&strict);
    for want in [
        format!("fake-pi: expectation mismatch: expect.flags.model: expected \"fake-model\", got \"gpt-4o\" (cassette {file})"),
        format!("fake-pi: expectation mismatch: expect.flags.no-session: expected present, got absent (cassette {file})"),
        format!("fake-pi: expectation mismatch: expect.flags.offline: expected absent, got present (cassette {file})"),
        format!("fake-pi: expectation mismatch: expect.flags.tools: expected \"read\", got absent (cassette {file})"),
    ] {
        assert!(lines.contains(&want), "{want}\nnot in {lines:#?}");
    }
    // Eight mismatches (one per field), then the next step.
    assert_eq!(lines.len(), 9, "{lines:#?}");
    assert!(lines[8].starts_with("fake-pi: next: "), "{lines:#?}");

    cmd(&sb, &c)
        .args(["--model", "fake-model", "-t", "read", "--no-session"])
        .env_remove("PI_TEST_KEY")
        .assert()
        .code(99)
        .stderr(predicates::str::contains(
            "expect.env.PI_TEST_KEY: expected set and non-empty, got unset",
        ));
    sb.assert_none_left();
}

#[test]
fn error_classes() {
    let sb = World::new(module_path!());
    // 97: no cassette set, or unreadable.
    let mut c = assert_cmd::Command::cargo_bin("fake-pi").unwrap();
    c.env_remove("FAKE_PI_CASSETTE")
        .env(MARKER_VAR, sb.marker());
    c.assert()
        .code(97)
        .stdout("")
        .stderr(predicates::str::starts_with(
            "fake-pi: no cassette: set FAKE_PI_CASSETTE",
        ));
    let missing = sb.path().join("missing.cassette.jsonl");
    cmd(&sb, &missing).assert().code(97).stderr(format!(
        "fake-pi: {}: cannot read cassette: No such file or directory (os error 2)\n",
        missing.display()
    ));
    // 98: invalid, with file and line.
    let bad = sb
        .cassette("bad")
        .version("0.87.1")
        .members("")
        .records([
            r#"{"dt_ms":0,"stdout":{}}"#,
            r#"{"dt_ms":0,"exit":0,"colour":1}"#,
        ])
        .write();
    let err = cmd(&sb, &bad).assert().code(98).get_output().stderr.clone();
    let err = String::from_utf8(err).unwrap();
    assert!(
        err.starts_with(&format!("fake-pi: invalid cassette: {}:3: ", bad.display())),
        "{err}"
    );
    assert!(err.contains("colour"), "{err}");
    let unknown = sb
        .cassette("v")
        .version("0.80.0")
        .members("")
        .records(OK)
        .write();
    cmd(&sb, &unknown).assert().code(98).stderr(format!(
        "fake-pi: invalid cassette: {}:1: header field `pi.version`: pi-harness knows pi 0.73.1, 0.87.1, 1.5.2, not \"0.80.0\"\n",
        unknown.display()
    ));
    let flag = sb
        .cassette("f")
        .version("0.73.1")
        .members(r#""expect":{"flags":{"exclude-tools":"bash"}}"#)
        .records(OK)
        .write();
    cmd(&sb, &flag).assert().code(98).stderr(format!(
        "fake-pi: invalid cassette: {}:1: header field `expect.flags.exclude-tools`: pi 0.73.1 has no flag --exclude-tools\n",
        flag.display()
    ));
    // 96: fake-pi misuse.
    let ok = sb
        .cassette("ok")
        .version("0.87.1")
        .members("")
        .records(OK)
        .write();
    cmd(&sb, &ok)
        .env("FAKE_PI_SPEED", "fast")
        .assert()
        .code(96)
        .stderr(predicates::str::contains("FAKE_PI_SPEED=\"fast\""));
    cmd(&sb, &ok)
        .args(["install", "npm:x"])
        .assert()
        .code(96)
        .stderr(predicates::str::contains("`pi install`"));
    sb.assert_none_left();
}

#[test]
fn gzipped_cassettes_replay() {
    let sb = World::new(module_path!());
    let plain = sb
        .cassette("gz")
        .version("0.87.1")
        .members("")
        .records([r#"{"dt_ms":0,"stdout":{"a":1}}"#, r#"{"dt_ms":0,"exit":4}"#])
        .write();
    let text = std::fs::read(&plain).unwrap();
    let gz = sb.path().join("gz.cassette.jsonl.gz");
    let mut enc = flate2::write::GzEncoder::new(
        std::fs::File::create(&gz).unwrap(),
        flate2::Compression::default(),
    );
    enc.write_all(&text).unwrap();
    enc.finish().unwrap();
    cmd(&sb, &gz).assert().code(4).stdout("{\"a\":1}\n");
    sb.assert_none_left();
}

/// A cassette compressed by `pzstd` (its frames each after a skippable frame that holds the
/// frame's size) was refused as "not UTF-8 at byte 8": it replays as any zstd cassette.
#[test]
fn a_pzstd_cassette_replays() {
    let sb = World::new(module_path!());
    let plain = sb
        .cassette("pz")
        .version("0.87.1")
        .members("")
        .records([r#"{"dt_ms":0,"stdout":{"a":1}}"#, r#"{"dt_ms":0,"exit":4}"#])
        .write();
    let frame = pi_cassette::output::zstd(&std::fs::read(&plain).unwrap()).unwrap();
    let mut pz = vec![0x50, 0x2a, 0x4d, 0x18, 4, 0, 0, 0];
    pz.extend_from_slice(&(frame.len() as u32).to_le_bytes());
    pz.extend_from_slice(&frame);
    let path = sb.write("pz.cassette.jsonl.zst", pz);
    cmd(&sb, &path).assert().code(4).stdout("{\"a\":1}\n");
    sb.assert_none_left();
}

/// A terminal on stdin: pi 0.73.1 is then interactive and prints `--version` on stdout,
/// and stdin is not read (no EOF needed).
#[test]
fn a_terminal_on_stdin() {
    let sb = World::new(module_path!());
    let pty = nix::pty::openpty(None, None).unwrap();
    let tty = || Stdio::from(pty.slave.try_clone().unwrap());
    let c73 = sb
        .cassette("t")
        .version("0.73.1")
        .members("")
        .records(OK)
        .write();
    let out = sb
        .fake_pi(&c73)
        .arg("--version")
        .stdin(tty())
        .output()
        .unwrap();
    assert_eq!(
        (out.stdout.as_slice(), out.stderr.as_slice()),
        (&b"0.73.1\n"[..], &b""[..])
    );
    // With -p pi is not interactive: back to stderr.
    let out = sb
        .fake_pi(&c73)
        .args(["-p", "--version"])
        .stdin(tty())
        .output()
        .unwrap();
    assert_eq!(
        (out.stdout.as_slice(), out.stderr.as_slice()),
        (&b""[..], &b"0.73.1\n"[..])
    );
    // The terminal is never read: the run goes on although nobody types anything.
    let c = sb
        .cassette("p")
        .version("0.87.1")
        .members(r#""expect":{"prompt":"from argv"}"#)
        .records(OK)
        .write();
    let out = sb
        .fake_pi(&c)
        .args(["-p", "from argv"])
        .stdin(tty())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.stdout, b"{\"type\":\"session\"}\n");
    sb.assert_none_left();
}

/// A cassette path that is a FIFO with no writer, or a device, used to block fake-pi (with
/// SIGTERM pending and ignored) or read /dev/zero until memory ran out. Now: refused at once.
#[test]
fn a_fifo_or_a_device_is_not_a_cassette() {
    let sb = World::new(module_path!());
    let fifo = sb.path().join("pipe.cassette.jsonl");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    for (path, kind) in [
        (fifo.as_path(), "a FIFO"),
        (Path::new("/dev/zero"), "a device"),
    ] {
        let start = std::time::Instant::now();
        let out = sb
            .fake_pi(path)
            .args(["--mode", "json", "hi"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(97), "{path:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            format!(
                "fake-pi: {}: cannot read cassette: {kind}, not a cassette file\n",
                path.display()
            )
        );
        assert!(start.elapsed() < Duration::from_secs(5), "{path:?} blocked");
    }
    sb.assert_none_left();
}

/// Every time placeholder of one run becomes the same time: the events of one pi message
/// carry one timestamp. Before, the clock was read per line, so a run that crossed a
/// millisecond gave `message_start` and `message_end` different timestamps and the mapper
/// counted the answer twice (the 0.73.1 long answer mapped to 2002 assistant pieces, not
/// 2001).
#[test]
fn one_run_has_one_time() {
    let w = pi_testkit::World::new("one-time");
    let c = w
        .cassette("t")
        .version("0.87.1")
        .expect("{}")
        .member("redactions", r#"{"1700000000000":"epoch ms","<TS>":"time"}"#)
        .records([
            r#"{"dt_ms":0,"stdout":{"type":"message_start","message":{"timestamp":1700000000000},"at":"<TS>"}}"#,
            r#"{"dt_ms":30,"stdout":{"type":"message_end","message":{"timestamp":1700000000000},"at":"<TS>"}}"#,
            r#"{"dt_ms":0,"exit":0}"#,
        ])
        .write();
    let out = w
        .fake_pi(&c)
        .env("FAKE_PI_SPEED", "1")
        .args(["--mode", "json", "hi"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    let t0 = &lines[0]["message"]["timestamp"];
    assert!(t0.as_u64().is_some_and(|t| t > 1_700_000_000_000), "{t0}");
    assert_eq!(t0, &lines[1]["message"]["timestamp"]);
    assert_eq!(lines[0]["at"], lines[1]["at"]);
    assert_ne!(lines[0]["at"], "<TS>");
    w.assert_none_left();
}
