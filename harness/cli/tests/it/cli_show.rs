//! `pi-harness cassette show` as a user runs it: the facts of committed and hand-made
//! cassettes, the same facts as JSON, bad input, and the printed command line run with
//! `sh -c` (fake-pi on PATH as `fake-pi`), which must replay the cassette. Every process
//! carries the world's marker; nothing may be left.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use pi_testkit::{fake_pi, World, MARKER_VAR};
use serde_json::Value;

use crate::util::{cassettes, refused};

fn cassette(rel: &str) -> PathBuf {
    cassettes().join(rel)
}

/// pi-harness in the world (its marker, its dir), no backtrace, no colour question.
fn pih(w: &World) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pi-harness"));
    c.env(MARKER_VAR, w.marker())
        .env_remove("RUST_BACKTRACE")
        .env_remove("RUST_LIB_BACKTRACE")
        .current_dir(w.path())
        .stdin(Stdio::null());
    c
}

fn show(w: &World, file: &Path, json: bool) -> Output {
    let mut c = pih(w);
    c.args(["cassette", "show"]);
    if json {
        c.arg("--json");
    }
    c.arg(file).output().unwrap()
}

/// `show`'s text, which must have succeeded.
fn show_text(w: &World, file: &Path) -> String {
    let out = show(w, file, false);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stderr.is_empty());
    String::from_utf8(out.stdout).unwrap()
}

fn show_json(w: &World, file: &Path) -> Value {
    let out = show(w, file, true);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("--json prints one JSON object")
}

/// The printed command line: the line after `Replay with fake-pi`.
fn replay_line(text: &str) -> String {
    let mut lines = text.lines();
    lines
        .find(|l| *l == "Replay with fake-pi")
        .expect("a replay section");
    lines.next().expect("a command line").trim().to_string()
}

/// `sh -c COMMAND` in the world: fake-pi on PATH as `fake-pi`, temp dirs in the world,
/// nothing of the test runner's fake-pi or pi settings.
fn shell(w: &World, command: &str) -> Command {
    let bin = w.path().join("bin");
    if !bin.join("fake-pi").exists() {
        std::fs::create_dir_all(&bin).unwrap();
        std::os::unix::fs::symlink(fake_pi(), bin.join("fake-pi")).unwrap();
    }
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut c = Command::new("sh");
    c.arg("-c")
        .arg(command)
        .env("PATH", path)
        .env("TMPDIR", w.path())
        .env(MARKER_VAR, w.marker())
        .env_remove("FAKE_PI_CASSETTE")
        .env_remove("FAKE_PI_SPEED")
        .env_remove("FAKE_PI_VALUES")
        .env_remove("FAKE_PI_STATE")
        .env_remove("PI_CODING_AGENT_DIR")
        .env_remove("PI_CODING_AGENT_SESSION_DIR")
        .current_dir(w.path())
        .stdin(Stdio::null());
    c
}

/// Run a printed replay command; it must exit 0 (stderr shown if not).
fn replays(w: &World, line: &str) -> Output {
    let out = shell(w, line).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn contains_all(text: &str, parts: &[&str]) {
    for p in parts {
        assert!(text.contains(p), "missing {p:?} in:\n{text}");
    }
}

#[test]
fn text_only_shows_what_to_send_and_its_command_line_replays() {
    let w = World::new("show_text_only");
    let file = cassette("recorded/text_only.pi87.cassette.jsonl");
    let text = show_text(&w, &file);
    contains_all(
        &text,
        &[
            "text_only (pi 0.87.1, wire dialect delta-only)\n",
            "  plain text answer\n",
            "recorded from real pi, measured timing",
            "What the caller must send (by meaning",
            "  mode                  json\n",
            "  provider              fake\n",
            "  model                 fake-model\n",
            "  thinking              medium\n",
            "  tools                 bash, edit, read, write\n",
            "  system prompt         pi's own (no --system-prompt)\n",
            "  switches              off: --no-extensions, --no-skills, --no-prompt-templates, --no-context-files, --no-mcp\n",
            "  prompt                \"Say hello.\" (recorded as an argv message)\n",
            "  follow-ups            none\n",
            "  session               a new session (or none)\n",
            "  environment           nothing required\n",
            "  never in argv         nothing\n",
            "  recorded flags        --mode json --session-dir <path> 'Say hello.' (not checked: syntax is free)\n",
            "  ending                exits 0 after ",
            "  on SIGINT             dies by SIGINT at once; the processes it started keep running [pi's answer]\n",
            "Processes it starts: none\n",
            "  <SESSION_ID>          pi's session id\n",
        ],
    );
    assert!(!text.contains('\x1b'), "no colour when stdout is a pipe");
    let line = replay_line(&text);
    assert_eq!(
        line,
        format!(
            "FAKE_PI_CASSETTE={} FAKE_PI_SPEED=0 PI_CODING_AGENT_DIR=\"$(mktemp -d)\" fake-pi --mode json --provider fake --model fake-model 'Say hello.' </dev/null",
            std::path::absolute(&file).unwrap().display()
        )
    );
    let out = replays(&w, &line);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.lines().count(), 18, "{stdout}");
    assert!(stdout.contains("\"type\":\"agent_end\""));
    w.assert_none_left();
}

#[test]
fn a_resumed_session_is_shown_and_its_command_line_seeds_one() {
    let w = World::new("show_session_resume");
    for version in ["pi152", "pi87", "pi73"] {
        let file = cassette(&format!("recorded/session_resume.{version}.cassette.jsonl"));
        let text = show_text(&w, &file);
        contains_all(
            &text,
            &[
                "session_resume (pi ",
                "  prompt                \"What was the word?\" (recorded as an argv message)\n",
                "  session               continues an existing session: resume one with --session PATH",
                "--session-id ID",
            ],
        );
        let line = replay_line(&text);
        assert!(
            line.starts_with("d=\"$(mktemp -d)\" && printf '{\"type\":\"session\",\"version\":3,"),
            "{line}"
        );
        assert!(
            line.contains("--session \"$d/session.jsonl\" 'What was the word?'"),
            "{line}"
        );
        let out = shell(&w, &line).output().unwrap();
        assert!(!refused(out.status.code()), "{version}: {out:?}");
        assert_eq!(
            out.status.code(),
            Some(0),
            "{version}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // pi resumed the seeded session: its first line is the stored header.
        let first: Value =
            serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().next().unwrap())
                .unwrap();
        assert_eq!(first["type"], "session");
        assert_eq!(first["cwd"], w.path().display().to_string());
        if version != "pi73" {
            assert_eq!(first["id"], "resume-demo");
        }
        let json = show_json(&w, &file);
        assert_eq!(json["expects"]["session"], "resumed");
        assert_eq!(json["replay"]["command"], line.as_str());
        assert!(json["replay"]["session_file"]
            .as_str()
            .unwrap()
            .contains("\"cwd\":\"CWD\""));
    }
    w.assert_none_left();
}

/// Wait until a marked process with exactly this command line is alive.
fn wait_for_command(w: &World, command: &str) -> i32 {
    wait_for(w, command, |c| c == command)
}

/// Wait until a marked process whose command line passes `test` is alive.
fn wait_for(w: &World, what: &str, test: impl Fn(&str) -> bool) -> i32 {
    let end = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(p) = w
            .alive()
            .into_iter()
            .find(|&p| test(&pi_testkit::process::cmdline(p)))
        {
            return p;
        }
        assert!(Instant::now() < end, "no {what:?} process appeared");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_sigint_cassette_shows_its_hang_processes_and_replays_until_sigint() {
    let w = World::new("show_sigint");
    let file = cassette("recorded/sigint_mid_tool.pi152.cassette.jsonl");
    let text = show_text(&w, &file);
    contains_all(
        &text,
        &[
            "sigint_mid_tool (pi 1.5.2, wire dialect delta-only)\n",
            "  ending                hangs after ",
            "until a signal ends it\n",
            "  on SIGTERM            SIGKILLs the process group of each process it started, then exits 143 [pi's answer]\n",
            "  on SIGINT             dies by SIGINT at once; the processes it started keep running [pi's answer]\n",
            "  on SIGHUP             SIGKILLs the process group of each process it started, then exits 129 [pi's answer]\n",
            "Processes it starts (like pi's bash tool",
            "  tool-1 at ",
            ": /bin/bash -c 'sleep 300; echo done'\n",
            "    its own session (setsid); SIGTERM ends it; stdio on /dev/null; lives until killed\n",
            "    grandchild: sleep 300; in the child's process group;",
            "note: the replay hangs like the recording",
        ],
    );
    let line = replay_line(&text);
    let stdout = w.path().join("stdout.jsonl");
    let mut child = shell(&w, &line)
        .stdout(std::fs::File::create(&stdout).unwrap())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The replay reaches the tool call and hangs with the tool's processes running.
    wait_for_command(&w, "sleep 300");
    let pi = wait_for(&w, "fake-pi", |c| c.starts_with("fake-pi --mode json"));
    pi_testkit::process::send(pi as u32, nix::sys::signal::Signal::SIGINT as i32);
    let status = child.wait().unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert!(
        status.signal() == Some(2) || status.code() == Some(130),
        "{status:?}"
    );
    assert!(std::fs::read_to_string(&stdout)
        .unwrap()
        .contains("\"type\":\"tool_execution_start\""));
    // As with real pi: SIGINT kills pi, its tool's processes survive it.
    let survivors: Vec<String> = w
        .alive()
        .into_iter()
        .map(pi_testkit::process::cmdline)
        .collect();
    assert!(
        survivors.contains(&"sleep 300".to_string())
            && survivors.contains(&"/bin/bash -c sleep 300; echo done".to_string()),
        "{survivors:?}"
    );
    w.kill_all();
    w.assert_none_left();
}

#[test]
fn a_fault_cassette_shows_its_child_and_replays_until_sigterm() {
    let w = World::new("show_fault_hang");
    let file = cassette("faults/hang_child_ignores_sigterm.pi87.cassette.jsonl");
    let text = show_text(&w, &file);
    contains_all(
        &text,
        &[
            "hang_child_ignores_sigterm (pi 0.87.1, wire dialect delta-only)\n",
            "  tags                  fault, hang, child-process, ignore-sigterm",
            "  origin                hand-made, synthetic timing\n",
            // A v1 cassette: the effective values derived from its flags.
            "  model                 fake-model\n",
            "  prompt                \"list files\"\n",
            "  follow-ups            any (not compared)\n",
            "  recorded flags        --mode json --model fake-model --provider fake (not checked: syntax is free)\n",
            "  ending                hangs after ",
            "  call_1 at ",
            ": /bin/bash -c 'echo hi; ls /srv/demo'\n",
            "    its own session (setsid); ignores SIGTERM (only SIGKILL ends it);",
            "Placeholders: none\n",
        ],
    );
    let line = replay_line(&text);
    assert!(
        line.ends_with(
            "fake-pi --mode json --provider fake --model fake-model 'list files' </dev/null"
        ),
        "{line}"
    );
    let mut child = shell(&w, &line)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let tool = wait_for_command(&w, "/bin/bash -c echo hi; ls /srv/demo");
    // pi's SIGTERM answer: SIGKILL the tool's process group, exit 143.
    let pi = wait_for(&w, "fake-pi", |c| c.starts_with("fake-pi --mode json"));
    pi_testkit::process::send(pi as u32, nix::sys::signal::Signal::SIGTERM as i32);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(143), "{status:?}");
    pi_testkit::process::wait_until(Duration::from_secs(5), || !pi_testkit::process::alive(tool));
    w.assert_none_left_within(Duration::from_secs(2));
}

#[test]
fn json_has_the_same_facts() {
    let w = World::new("show_json");
    let cases = [
        ("recorded/text_only.pi87.cassette.jsonl", "exit", 0, "new"),
        (
            "recorded/session_resume.pi152.cassette.jsonl",
            "exit",
            0,
            "resumed",
        ),
        (
            "recorded/sigint_mid_tool.pi152.cassette.jsonl",
            "hang",
            1,
            "new",
        ),
        (
            "faults/hang_child_ignores_sigterm.pi87.cassette.jsonl",
            "hang",
            1,
            "",
        ),
    ];
    for (rel, ending, processes, session) in cases {
        let file = cassette(rel);
        let j = show_json(&w, &file);
        let text = show_text(&w, &file);
        let name = j["scenario"]["name"].as_str().unwrap();
        assert!(text.starts_with(&format!(
            "{name} (pi {}, wire dialect {})\n",
            j["pi"]["version"].as_str().unwrap(),
            j["pi"]["dialect"].as_str().unwrap()
        )));
        assert_eq!(j["pi"]["replayable"], true);
        assert_eq!(j["pi"]["agent"], "pi");
        assert_eq!(
            j["file"],
            std::path::absolute(&file).unwrap().display().to_string()
        );
        let eff = &j["expects"]["effective"];
        assert_eq!(
            (
                &eff["mode"],
                &eff["provider"],
                &eff["model"],
                &eff["thinking"]
            ),
            (
                &Value::from("json"),
                &Value::from("fake"),
                &Value::from("fake-model"),
                &Value::from("medium")
            ),
            "{rel}"
        );
        assert_eq!(
            eff["tools"],
            serde_json::json!(["bash", "edit", "read", "write"])
        );
        assert_eq!(
            j["expects"]["session"],
            if session.is_empty() {
                Value::Null
            } else {
                Value::from(session)
            }
        );
        assert_eq!(j["ending"]["kind"], ending, "{rel}");
        assert_eq!(j["ending"]["kind"] == "hang", j["replay"]["hangs"] == true);
        assert_eq!(j["processes"].as_array().unwrap().len(), processes, "{rel}");
        assert_eq!(j["signals"]["SIGINT"]["action"], "die");
        assert_eq!(j["signals"]["SIGTERM"]["code"], 143);
        assert_eq!(j["signals"]["SIGTERM"]["pi_default"], true);
        assert_eq!(j["replay"]["command"], replay_line(&text).as_str());
        assert_eq!(j["replay"]["env"]["FAKE_PI_SPEED"], "0");
        let argv: Vec<&str> = j["replay"]["argv"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        assert_eq!(
            &argv[..6],
            [
                "--mode",
                "json",
                "--provider",
                "fake",
                "--model",
                "fake-model"
            ]
        );
        assert_eq!(
            argv.last().copied(),
            j["expects"]["prompt"].as_str(),
            "{rel}"
        );
        for (p, what) in j["placeholders"].as_object().unwrap() {
            assert!(text.contains(&format!("  {p:<22}{}\n", what.as_str().unwrap())));
        }
    }
    let sigint = show_json(
        &w,
        &cassette("recorded/sigint_mid_tool.pi152.cassette.jsonl"),
    );
    let p = &sigint["processes"][0];
    assert_eq!(
        p["argv"],
        serde_json::json!(["/bin/bash", "-c", "sleep 300; echo done"])
    );
    assert_eq!(
        (p["own_session"].as_bool(), p["ignore_sigterm"].as_bool()),
        (Some(true), Some(false))
    );
    assert_eq!(p["grandchild"]["argv"], serde_json::json!(["sleep", "300"]));
    assert_eq!(p["grandchild"]["own_session"], false);
    w.assert_none_left();
}

#[test]
fn stdin_on_stdin_gzip_and_gz_files() {
    let w = World::new("show_stdin_gz");
    // The prompt on stdin: the command line pipes it.
    let file = cassette("recorded/prompt_on_stdin.pi87.cassette.jsonl");
    let text = show_text(&w, &file);
    assert!(text.contains("  prompt                \"List the files.\" (recorded on stdin)\n"));
    let line = replay_line(&text);
    assert!(
        line.starts_with("printf %s 'List the files.' | FAKE_PI_CASSETTE="),
        "{line}"
    );
    let out = shell(&w, &line).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");

    // `-`: the cassette on stdin, plain and gzipped.
    let data = std::fs::read(cassette("recorded/text_only.pi73.cassette.jsonl")).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, &data).unwrap();
    for input in [data.clone(), gz.finish().unwrap()] {
        let path = w.write("in.bin", &input);
        let out = pih(&w)
            .args(["cassette", "show", "-"])
            .stdin(std::fs::File::open(&path).unwrap())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.starts_with("text_only (pi 0.73.1, wire dialect snapshot+delta)\n"));
        assert!(text.contains("FAKE_PI_CASSETTE=CASSETTE "), "{text}");
        assert!(text.contains("note: the cassette came on stdin"));
    }

    // Committed compressed cassettes, zstd and gzip.
    for (file, name) in [
        (
            "recorded/long_answer.pi73.cassette.jsonl.zst",
            "long_answer (pi 0.73.1, ",
        ),
        (
            "faults/huge_line_4mib.pi87.cassette.jsonl.gz",
            "huge_line_4mib (pi 0.87.1, ",
        ),
    ] {
        let text = show_text(&w, &cassette(file));
        assert!(text.starts_with(name), "{text}");
        let out = shell(&w, &replay_line(&text)).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{out:?}");
    }
    w.assert_none_left();
}

#[test]
fn hand_made_expectations_are_shown_and_satisfied() {
    let w = World::new("show_hand_made");
    let file = w
        .cassette("strict")
        .description("every kind of expectation")
        .expect(
            r#"{"flags":{"mode":"json","provider":"fake","model":"fake-model","thinking":"high"},
                "prompt":"Hi there","argv_messages":["Hi there","and more"],"follow_ups":["and more"],
                "env":["FAKE_KEY"],"never_in_argv":[{"env":"FAKE_KEY"},{"literal":"sk-secret"}],
                "irrelevant":["tools"],"syntax":true}"#
                .replace('\n', "")
                .as_str(),
        )
        .process(r#"{"on_sigterm":{"action":"ignore"},"on_sigint":{"action":"exit","code":3}}"#)
        .member("redactions", r#"{"<HOME>":"the home directory"}"#)
        .records([
            r#"{"dt_ms":0,"stdout":{"type":"agent_start"}}"#,
            r#"{"dt_ms":0,"stderr":"warn\n"}"#,
            r#"{"dt_ms":0,"exit":0}"#,
        ])
        .write();
    let text = show_text(&w, &file);
    contains_all(
        &text,
        &[
            "strict (pi 0.87.1, wire dialect delta-only)\n",
            "(by meaning, and the recorded flags and messages literally (syntax: true))",
            "  thinking              high\n",
            "  tools                 any (irrelevant for this cassette)\n",
            "  prompt                \"Hi there\" (recorded as an argv message)\n",
            "  follow-ups            \"and more\"\n",
            "  environment           FAKE_KEY (set and non-empty)\n",
            "  never in argv         the value of $FAKE_KEY; a literal value (9 characters)\n",
            "  not compared          tools\n",
            "  literal flags         --mode json --model fake-model --provider fake --thinking high 'Hi there' 'and more' (checked as written)\n",
            "  output                1 stdout line (23 bytes), 5 bytes of stderr\n",
            "  on SIGTERM            ignored\n",
            "  on SIGINT             exits 3; the processes it started keep running\n",
            "  on SIGHUP             SIGKILLs the process group of each process it started, then exits 129 [pi's answer]\n",
            "  <HOME>                the home directory\n",
        ],
    );
    assert!(!text.contains("sk-secret"), "a secret is never printed");
    let line = replay_line(&text);
    assert!(line.contains(" FAKE_KEY=fake-value "), "{line}");
    let out = replays(&w, &line);
    assert_eq!(out.stdout, b"{\"type\":\"agent_start\"}\n");
    let j = show_json(&w, &file);
    assert_eq!(j["expects"]["syntax"], true);
    assert_eq!(
        j["expects"]["effective"]["tools"].as_array().unwrap().len(),
        4
    );
    assert_eq!(j["expects"]["irrelevant"], serde_json::json!(["tools"]));
    assert_eq!(
        j["expects"]["never_in_argv"],
        serde_json::json!([{"env": "FAKE_KEY"}, {"literal_chars": 9}])
    );
    assert_eq!(
        j["signals"]["SIGTERM"],
        serde_json::json!({"action": "ignore", "pi_default": false})
    );
    assert!(!j.to_string().contains("sk-secret"));

    // No expectations at all: anything goes, and a plain command replays it.
    let any = w
        .cassette("anything")
        .records([r#"{"dt_ms":0,"exit":5}"#])
        .write();
    let text = show_text(&w, &any);
    assert!(text.contains("What the caller must send: anything (the cassette has no expectations)"));
    assert!(text.contains("  ending                exits 5 after 0.00 s\n"));
    let out = shell(&w, &replay_line(&text)).output().unwrap();
    assert_eq!(out.status.code(), Some(5), "{out:?}");
    w.assert_none_left();
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let w = World::new("show_errors");
    let one_line = |out: &Output| -> String {
        assert_eq!(out.status.code(), Some(2), "{out:?}");
        assert!(out.stdout.is_empty());
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.starts_with("error: "), "{err}");
        err
    };
    let err = one_line(&show(&w, Path::new("missing.cassette.jsonl"), false));
    assert!(err.contains("missing.cassette.jsonl"), "{err}");
    let err = one_line(&show(&w, w.path(), false));
    assert!(err.contains("cannot read cassette"), "{err}");

    let good = std::fs::read_to_string(cassette("recorded/text_only.pi87.cassette.jsonl")).unwrap();
    let broken = good.replacen("{\"dt_ms\":", "{\"dt_ms\":\"x\",\"y\":", 2);
    w.write("broken.cassette.jsonl", broken);
    let err = one_line(&show(&w, Path::new("broken.cassette.jsonl"), true));
    assert!(err.starts_with("error: broken.cassette.jsonl:2: "), "{err}");

    let bad_expect = w
        .cassette("bad_expect")
        .expect(r#"{"flags":{"no-such-flag":"x"}}"#)
        .records([r#"{"dt_ms":0,"exit":0}"#])
        .write();
    let err = one_line(&show(&w, &bad_expect, false));
    assert!(
        err.contains("bad_expect.cassette.jsonl:1: header field `expect.flags.no-such-flag`: pi 0.87.1 has no flag --no-such-flag"),
        "{err}"
    );

    let out = pih(&w)
        .args(["cassette", "show", "-"])
        .stdin(std::fs::File::open(w.write("empty", "")).unwrap())
        .output()
        .unwrap();
    let err = one_line(&out);
    assert!(err.starts_with("error: <stdin>:1: empty file"), "{err}");

    let err = one_line(&pih(&w).args(["cassette", "show"]).output().unwrap());
    assert!(err.contains("FILE|-"), "{err}");
    w.assert_none_left();
}

/// A Claude Code cassette: `show` names the CLI and the options the host must run it with,
/// and its replay command (the host's lines piped) replays the session: the CLI's records,
/// ending with the turn's `result`, exit 0.
#[test]
fn a_claude_cassette_shows_the_cli_options_and_its_command_line_replays() {
    let w = World::new("show_claude");
    let file = cassette("claude/claude_text.cc21330.cassette.jsonl");
    // --json names the agent, so a test helper knows which name to give fake-pi.
    assert_eq!(show_json(&w, &file)["pi"]["agent"], "claude");
    let text = show_text(&w, &file);
    contains_all(
        &text,
        &[
            "claude_text (Claude Code 2.1.330, wire dialect stream-json)\n",
            "recorded from real Claude Code, measured timing",
            "What the host must run (the CLI's options exactly",
            "  command line          claude --include-partial-messages --input-format stream-json --output-format stream-json --permission-prompt-tool stdio --print --verbose\n",
            "  environment           ANTHROPIC_API_KEY (set and non-empty)\n",
            "  <SESSION_ID>          Claude Code's session id\n",
            "note: fake-pi answers to any name: put a `claude` symlink to it on the host's PATH",
        ],
    );
    let line = replay_line(&text);
    assert!(
        line.starts_with("printf '%s\\n' '{\"message\":{\"content\":\"say hi\""),
        "{line}"
    );
    let out = replays(&w, &line);
    let c = pi_cassette::Cassette::load(&file).unwrap();
    let types = |bytes: &[u8]| -> Vec<String> {
        bytes
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| {
                let v: Value = serde_json::from_slice(l).unwrap();
                v["type"].as_str().unwrap().to_string()
            })
            .collect()
    };
    let got = types(&out.stdout);
    assert_eq!(got, types(&c.stdout_bytes()));
    assert_eq!(got.last().map(String::as_str), Some("result"));
    w.assert_none_left();
}

/// The `type` of each stdout line.
fn event_types(bytes: &[u8]) -> Vec<String> {
    bytes
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| {
            let v: Value = serde_json::from_slice(l).unwrap();
            v["type"].as_str().unwrap_or_default().to_string()
        })
        .collect()
}

/// A Codex cassette: `show` names Codex and its release, what the host must run (`codex
/// exec ...`, the values however given, the key), and a replay command that writes the
/// `CODEX_HOME/config.toml` it needs and runs fake-pi as `codex exec`.
#[test]
fn a_codex_cassette_shows_codex_its_command_line_and_config() {
    let w = World::new("show_codex");
    let file = cassette("codex/codex_text.cx0169.cassette.jsonl");
    let text = show_text(&w, &file);
    contains_all(
        &text,
        &[
            "codex_text (Codex 0.169.0, wire dialect exec-json)\n",
            "  origin                recorded from real Codex, measured timing\n",
            "What the caller must send (by meaning: flags, -c overrides and CODEX_HOME/config.toml give one call",
            "  command line          codex exec --json --skip-git-repo-check 'Say hello.'\n",
            "  provider              openai\n",
            "  model                 gpt-5.5\n",
            "  sandbox               any (not compared)\n",
            "  prompt                \"Say hello.\" (recorded as the PROMPT argument)\n",
            "  session               a new session (`codex exec`)\n",
            "  environment           CODEX_API_KEY (set and non-empty)\n",
            "  never in argv         the value of $CODEX_API_KEY\n",
            "  with CODEX_HOME/config.toml (the command writes it into a fresh directory):\n    model = \"gpt-5.5\"\n    model_provider = \"openai\"\n",
            "note: fake-pi answers to any name: put a `codex` symlink to it on the host's PATH",
            // Measured: the tool's shell killed, the command it ran left running.
            "  on SIGTERM            SIGKILLs each process it started (not its group: what that process started keeps running), then dies by SIGTERM\n",
            "  on SIGINT             SIGKILLs the process group of each process it started, then exits 1\n",
        ],
    );
    for wrong in [
        "pi 0.169.0",
        "--mode json",
        "fake-pi cannot replay",
        "follow-ups",
    ] {
        assert!(!text.contains(wrong), "{wrong:?} in:\n{text}");
    }
    let line = replay_line(&text);
    assert!(
        line.starts_with("d=\"$(mktemp -d)\" && printf '%s\\n' 'model = \"gpt-5.5\"' 'model_provider = \"openai\"' > \"$d/config.toml\" && "),
        "{line}"
    );
    assert!(
        line.ends_with("CODEX_API_KEY=fake-value CODEX_HOME=\"$d\" fake-pi exec --json --skip-git-repo-check 'Say hello.' </dev/null"),
        "{line}"
    );
    let json = show_json(&w, &file);
    assert_eq!(json["pi"]["agent"], "codex");
    assert_eq!(json["pi"]["version"], "0.169.0");
    assert_eq!(json["pi"]["replayable"], true);
    assert_eq!(
        json["replay"]["argv"],
        serde_json::json!(["exec", "--json", "--skip-git-repo-check", "Say hello."])
    );
    assert_eq!(
        json["replay"]["codex_config"],
        serde_json::json!(["model = \"gpt-5.5\"", "model_provider = \"openai\""])
    );
    assert_eq!(json["replay"]["command"], line.as_str());
    w.assert_none_left();
}

/// Every Codex cassette of the corpus: `show` finds its command line satisfies the
/// recording (no note says otherwise), and the printed command, run by `sh`, replays it:
/// the recorded events and exit status (runs stopped mid-tool are left to the replay
/// tests: they hang until a signal).
#[test]
fn every_codex_cassette_s_command_line_replays() {
    let w = World::new("show_codex_all");
    let mut files: Vec<PathBuf> = std::fs::read_dir(cassette("codex"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    files.sort();
    assert!(files.len() >= 10, "{files:?}");
    for file in files {
        let text = show_text(&w, &file);
        assert!(!text.contains("does not satisfy"), "{text}");
        assert!(!text.contains("refuses"), "{text}");
        let c = pi_cassette::Cassette::load(&file).unwrap();
        let json = show_json(&w, &file);
        let resumed = c.header.expect.session == Some(pi_cassette::SessionUse::Resumed);
        assert_eq!(
            json["replay"]["argv"][1] == "resume",
            resumed,
            "{}",
            file.display()
        );
        if matches!(c.ending(), pi_cassette::Action::Hang) {
            assert!(text.contains("FAKE_PI_CODEX_ORPHAN_MS"), "{text}");
            continue;
        }
        let out = shell(&w, &replay_line(&text)).output().unwrap();
        let recorded = match c.ending() {
            pi_cassette::Action::Exit(code) => Some(*code),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            out.status.code(),
            recorded,
            "{}: {}",
            file.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            event_types(&out.stdout),
            event_types(&c.stdout_bytes()),
            "{}",
            file.display()
        );
        assert_eq!(out.stderr, c.stderr_bytes(), "{}", file.display());
    }
    w.assert_none_left();
}

/// Every Gemini CLI cassette of the corpus: `show` says what the caller must send (model,
/// approval mode, max attempts) and its printed command, run by `sh` in a fresh
/// GEMINI_CLI_HOME holding what only settings say, replays it: the recorded events, stderr's
/// lines and exit status (144 and 244 included). Runs stopped mid-tool hang until a signal and
/// name the orphans' bound instead.
#[test]
fn every_gemini_cassette_s_command_line_replays() {
    let w = World::new("show_gemini_all");
    let mut files: Vec<PathBuf> = std::fs::read_dir(cassette("gemini"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    files.sort();
    assert!(files.len() >= 10, "{files:?}");
    for file in files {
        let text = show_text(&w, &file);
        let c = pi_cassette::Cassette::load(&file).unwrap();
        let eff = c.header.expect.effective.clone().unwrap();
        contains_all(
            &text,
            &[
                "What the caller must send (by meaning: flags, GEMINI_MODEL and the settings give one call",
                &format!("  model                 {}\n", eff.model.unwrap()),
                &format!("  approval mode         {}\n", eff.approval.unwrap()),
                &format!(
                    "  max attempts          {} (general.maxAttempts in its settings)\n",
                    eff.max_attempts.unwrap()
                ),
                "note: fake-pi answers to any name: put a `gemini` symlink to it on the host's PATH",
            ],
        );
        assert!(!text.contains("follow-ups"), "{text}");
        if matches!(c.ending(), pi_cassette::Action::Hang) {
            assert!(text.contains("FAKE_PI_GEMINI_ORPHAN_MS"), "{text}");
            continue;
        }
        let out = shell(&w, &replay_line(&text)).output().unwrap();
        let recorded = match c.ending() {
            pi_cassette::Action::Exit(code) => Some(*code),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            out.status.code(),
            recorded,
            "{}: {}",
            file.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            event_types(&out.stdout),
            event_types(&c.stdout_bytes()),
            "{}",
            file.display()
        );
        // stderr holds placeholders (<TMP>, <TS>) that the replay fills with realistic
        // values: its lines, not its bytes.
        assert_eq!(
            String::from_utf8_lossy(&out.stderr).lines().count(),
            String::from_utf8_lossy(&c.stderr_bytes()).lines().count(),
            "{}",
            file.display()
        );
    }
    w.assert_none_left();
}

/// The printed command line is quoted word by word: a cassette in a path with `$(...)` and a
/// space, whose header wants a variable named `$(touch PWNED)`, replays as pasted into `sh`
/// and runs nothing else (before, the variable's name was printed bare as an assignment, and
/// the pasted line ran `touch PWNED`).
#[test]
fn a_hostile_cassette_s_command_line_runs_nothing_when_pasted() {
    let w = World::new("show-hostile-names");
    let file = w.write(
        "a b$(touch PWNED2).cassette.jsonl",
        r#"{"format":"pi-cassette","version":1,"pi":{"version":"0.87.1","dialect":"delta-only"},"scenario":{"name":"x","description":"d"},"expect":{"env":["$(touch PWNED)","OK_VAR"],"prompt":"hi"},"origin":{"kind":"hand-made","timing":"synthetic"}}
{"dt_ms":0,"exit":0}
"#,
    );
    let line = replay_line(&show_text(&w, &file));
    assert!(line.starts_with("env "), "{line}");
    // `env` gives fake-pi even a variable no shell could assign: the replay matches.
    replays(&w, &line);
    for f in ["PWNED", "PWNED2"] {
        assert!(!w.path().join(f).exists(), "{line} ran `touch {f}`");
    }
    w.assert_none_left();
}
