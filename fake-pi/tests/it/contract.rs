//! The matching contract, end to end: fake-pi says no (exit 99, naming the field) where
//! real pi would behave differently, and replays where only the syntax of the call
//! differs; sessions are created, named and found as pi does; sequences replay one
//! cassette per start; the cassette is found without any environment variable.

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use crate::util::*;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn recorded(name: &str) -> PathBuf {
    repo().join("cassettes/recorded").join(name)
}

/// The recording's agent dir: the scripted model is the default in settings.json.
fn settings(w: &World, extra: &str) {
    w.write(
        "agent/settings.json",
        format!(r#"{{"defaultProvider":"fake","defaultModel":"fake-model"{extra}}}"#),
    );
}

fn run(w: &World, cassette: &Path, argv: &[&str], stdin: &str) -> Output {
    let mut c = w.fake_pi(cassette);
    c.args(argv).stdin(Stdio::piped());
    let mut child = c.spawn().unwrap();
    use std::io::Write as _;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn mismatches(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter_map(|l| l.strip_prefix("fake-pi: expectation mismatch: "))
        .map(|l| l.split(" (").next().unwrap_or(l).to_string())
        .collect()
}

#[test]
fn a_difference_in_meaning_is_a_mismatch_naming_it() {
    let w = World::new("contract-meaning");
    settings(&w, "");
    let c = recorded("text_only.pi87.cassette.jsonl");
    let base = ["--mode", "json", "--no-session"];
    // (what the call adds, the one field it changes)
    let cases: &[(&[&str], &str)] = &[
        (&["--tools", "read"], "expect.effective.tools"),
        (&["--no-builtin-tools"], "expect.effective.tools"),
        (&["--no-tools"], "expect.effective.tools"),
        (&["--exclude-tools", "bash"], "expect.effective.tools"),
        (&["--thinking", "high"], "expect.effective.thinking"),
        (&["--model", "fake/other-model"], "expect.effective.model"),
        (
            &["--system-prompt", "You are terse."],
            "expect.effective.system_prompt",
        ),
        (
            &["--append-system-prompt", "Be brief."],
            "expect.effective.append_system_prompt",
        ),
        (&["-e", "./ext.ts"], "expect.effective.extensions"),
        (&["--no-extensions"], "expect.effective.no_extensions"),
        (&["--skill", "./skill"], "expect.effective.skills"),
        (&["--no-context-files"], "expect.effective.no_context_files"),
    ];
    for (extra, field) in cases {
        let mut argv: Vec<&str> = base.to_vec();
        argv.extend_from_slice(extra);
        argv.push("Say hello.");
        let out = run(&w, &c, &argv, "");
        assert_eq!(out.status.code(), Some(99), "{extra:?}");
        assert!(out.stdout.is_empty(), "{extra:?}");
        let m = mismatches(&out);
        assert_eq!(m.len(), 1, "{extra:?}: {m:?}");
        assert!(m[0].starts_with(&format!("{field}: expected ")), "{m:?}");
    }
    // A different prompt, a follow-up, and print mode instead of json.
    let out = run(&w, &c, &["--mode", "json", "Say hi."], "");
    assert_eq!(
        mismatches(&out),
        ["expect.prompt: expected \"Say hello.\", got \"Say hi.\""]
    );
    let out = run(&w, &c, &["--mode", "json", "Say hello.", "And more."], "");
    assert_eq!(
        mismatches(&out),
        ["expect.follow_ups: expected [], got [\"And more.\"]"]
    );
    let out = run(&w, &c, &["-p", "Say hello."], "");
    assert_eq!(
        mismatches(&out),
        ["expect.effective.mode: expected \"json\", got \"print\""]
    );
    w.assert_none_left();
}

#[test]
fn a_difference_in_the_agent_dir_is_a_mismatch_too() {
    let c = recorded("text_only.pi87.cassette.jsonl");
    let argv = ["--mode", "json", "Say hello."];
    let cases: &[(&str, &str)] = &[
        (
            r#","defaultThinkingLevel":"high""#,
            "expect.effective.thinking",
        ),
        (r#","defaultTools":["read"]"#, "expect.effective.tools"),
    ];
    for (extra, field) in cases {
        let w = World::new("contract-settings");
        settings(&w, extra);
        let out = run(&w, &c, &argv, "");
        assert_eq!(out.status.code(), Some(99), "{extra}");
        let m = mismatches(&out);
        assert!(m.len() == 1 && m[0].starts_with(field), "{extra}: {m:?}");
        w.assert_none_left();
    }
    // No settings and no model flags: pi would not pick the recorded model.
    let w = World::new("contract-nomodel");
    let out = run(&w, &c, &argv, "");
    let m = mismatches(&out);
    assert_eq!(m.len(), 2, "{m:?}");
    assert!(m[0].starts_with("expect.effective.model: expected \"fake-model\", got none"));
    assert!(m[1].starts_with("expect.effective.provider: expected \"fake\", got none"));
    w.assert_none_left();
}

#[test]
fn only_syntax_differs_so_it_replays() {
    let c = recorded("text_only.pi87.cassette.jsonl");
    let want = pi_cassette::Cassette::load(&c).unwrap();
    let text = |out: &Output| -> String {
        // The assistant's deltas, as a reader sees them.
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.contains("\"text_delta\""))
            .count()
            .to_string()
    };
    let calls: &[(&[&str], &str)] = &[
        // As recorded: sessions on, model from settings.
        (
            &["--mode", "json", "--session-dir", "sessions", "Say hello."],
            "",
        ),
        // Reordered, the prompt on stdin, sessions off.
        (&["--no-session", "--mode", "json"], "Say hello."),
        // Model flags instead of settings, and an alias.
        (
            &[
                "--provider",
                "fake",
                "--mode",
                "json",
                "--model",
                "fake-model",
                "-t",
                "read,bash,edit,write",
                "Say hello.",
            ],
            "",
        ),
        // The prompt split between stdin (trimmed) and argv, as pi joins them.
        (&["--mode", "json", " hello."], "Say \n"),
        // --offline and a theme do not change what pi does with the model.
        (
            &["--offline", "--mode", "json", "--theme", "x", "Say hello."],
            "",
        ),
    ];
    let deltas = want
        .stdout_bytes()
        .split(|&b| b == b'\n')
        .filter(|l| String::from_utf8_lossy(l).contains("\"text_delta\""))
        .count()
        .to_string();
    for (argv, stdin) in calls {
        let w = World::new("contract-syntax");
        settings(&w, "");
        let out = run(&w, &c, argv, stdin);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{argv:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(text(&out), deltas, "{argv:?}");
        w.assert_none_left();
    }
}

#[test]
fn equals_forms_are_refused_because_real_pi_refuses_them() {
    // Measured on real pi 0.73.1, 0.87.1 and 1.5.2 (and in real_pi_parity): pi has no
    // `--flag=value` syntax, so fake-pi must not accept it either.
    let w = World::new("contract-equals");
    settings(&w, "");
    let out = run(
        &w,
        &recorded("text_only.pi87.cassette.jsonl"),
        &["--mode=json", "Say hello."],
        "",
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "Error: Unknown option: --mode\n"
    );
    w.assert_none_left();
}

#[test]
fn sessions_are_made_named_reported_and_found_like_pi() {
    let w = World::new("contract-sessions");
    settings(&w, "");
    let c = recorded("text_only.pi152.cassette.jsonl");
    let out = run(
        &w,
        &c,
        &["--mode", "json", "--session-dir", "s", "Say hello."],
        "",
    );
    assert_eq!(out.status.code(), Some(0));
    let first = String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .unwrap()
        .to_string();
    let v: serde_json::Value = serde_json::from_str(&first).unwrap();
    let id = v["id"].as_str().unwrap().to_string();
    // A realistic id, the real cwd and a real timestamp: no placeholders.
    assert!(
        pi_grammar::is_valid_session_id(&id) && id.len() == 36,
        "{first}"
    );
    assert_eq!(v["cwd"], w.path().display().to_string());
    assert!(!first.contains('<'), "{first}");
    // The file is where pi puts it, named as pi names it, and holds the conversation.
    let files: Vec<PathBuf> = std::fs::read_dir(w.path().join("s"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let name = files[0].file_name().unwrap().to_string_lossy().into_owned();
    let ts = v["timestamp"].as_str().unwrap();
    assert_eq!(name, pi_grammar::session_file_name(ts, &id));
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&files[0])
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["type"], "session");
    assert_eq!(lines[0]["id"], id.as_str());
    assert_eq!(lines[1]["type"], "model_change");
    assert_eq!(lines[1]["modelId"], "fake-model");
    assert_eq!(lines[2]["type"], "thinking_level_change");
    let roles: Vec<&str> = lines[3..]
        .iter()
        .map(|e| e["message"]["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user", "assistant"]);
    assert_eq!(lines[4]["parentId"], lines[3]["id"]);
    // An id pi never made: pi's error, byte for byte, before anything else.
    let out = run(
        &w,
        &c,
        &[
            "--mode",
            "json",
            "--session-dir",
            "s",
            "--session",
            "no-such-id",
            "x",
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "No session found matching 'no-such-id'\n"
    );
    // The placeholder a naive replay would have printed is no id either.
    let out = run(
        &w,
        &c,
        &[
            "--mode",
            "json",
            "--session-dir",
            "s",
            "--session",
            "<SESSION_ID>",
            "x",
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(1));
    // A session id the client chose is the one reported.
    let out = run(
        &w,
        &c,
        &[
            "--mode",
            "json",
            "--session-dir",
            "s",
            "--session-id",
            "my-run-1",
            "Say hello.",
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout)
        .starts_with(r#"{"type":"session","version":3,"id":"my-run-1","#));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "Warning: No project session found with id 'my-run-1'; creating a new session with that id.\n"
    );
    w.assert_none_left();
}

#[test]
fn a_two_run_sequence_resumes_the_first_runs_session() {
    let w = World::new("contract-sequence");
    settings(&w, "");
    // First turn: a new session; second turn: the recording that continued one.
    let seq = w.write(
        "turns.sequence",
        format!(
            "{}\n{}\n",
            recorded("text_only.pi87.cassette.jsonl").display(),
            recorded("session_resume.pi87.cassette.jsonl").display()
        ),
    );
    let sessions = w.path().join("sessions");
    let call = |prompt: &str| {
        let mut c = w.fake_pi(&seq);
        c.args(["--mode", "json", "--session-dir"])
            .arg(&sessions)
            .args(["--session-id", "resume-demo"])
            .stdin(Stdio::piped());
        let mut child = c.spawn().unwrap();
        use std::io::Write as _;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(prompt.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    };
    let one = call("Say hello.");
    assert_eq!(
        one.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&one.stderr)
    );
    let two = call("What was the word?");
    assert_eq!(
        two.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&two.stderr)
    );
    // pi resumed: its session line is the stored header, byte for byte.
    let files: Vec<PathBuf> = std::fs::read_dir(&sessions)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "one session, where pi puts it: {files:?}");
    assert!(files[0]
        .file_name()
        .unwrap()
        .to_string_lossy()
        .ends_with("_resume-demo.jsonl"));
    let stored = std::fs::read_to_string(&files[0]).unwrap();
    let header = stored.lines().next().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&two.stdout).lines().next(),
        Some(header)
    );
    let users = stored.matches(r#""role":"user""#).count();
    assert_eq!(users, 2, "both turns are in the file: {stored}");
    // A third start is more than the recording has.
    let three = call("Again?");
    assert_eq!(three.status.code(), Some(99));
    let err = String::from_utf8_lossy(&three.stderr);
    assert!(
        err.contains("this is start 3 of pi, but only 2 run(s) are recorded (text_only.pi87.cassette.jsonl, session_resume.pi87.cassette.jsonl)"),
        "{err}"
    );
    w.assert_none_left();
}

#[test]
fn a_client_that_passes_no_environment_finds_the_cassette_beside_pi() {
    let w = World::new("contract-noenv");
    // fake-pi installed as `pi` in a bin dir, with its settings beside it.
    let bin = w.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    pi_testkit::bins::install_exe(&pi_testkit::fake_pi(), &bin.join("pi")).unwrap();
    std::fs::write(
        bin.join("fake-pi.conf"),
        format!(
            "# what `pi` replays\nFAKE_PI_CASSETTE={}\nFAKE_PI_SPEED=0\n",
            recorded("text_only.pi87.cassette.jsonl").display()
        ),
    )
    .unwrap();
    let out = std::process::Command::new(bin.join("pi"))
        .env_clear()
        .env(MARKER_VAR, w.marker())
        .current_dir(w.path())
        .args([
            "--mode",
            "json",
            "--no-session",
            "--provider",
            "fake",
            "--model",
            "fake-model",
            "Say hello.",
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("\"delta\":\"Hello\""));
    w.assert_none_left();
}

/// The text_only recording with its `session` line's id replaced by `id` (a concrete id, as
/// an imported capture has), written into the world.
fn with_recorded_id(w: &World, name: &str, id: &str) -> PathBuf {
    let text = std::fs::read_to_string(recorded("text_only.pi152.cassette.jsonl")).unwrap();
    let to = format!("\"id\":{}", serde_json::json!(id));
    let text = text.replacen("\"id\":\"<SESSION_ID>\"", &to, 1);
    assert!(text.contains(&to));
    w.write(name, text)
}

#[test]
fn a_recorded_session_id_that_names_a_path_is_refused_before_anything_is_written() {
    let w = World::new("contract-session-path");
    settings(&w, "");
    // A file outside the session dir that a crafted id would truncate and write.
    let victim = w.write("outside/victim.cassette.jsonl", "precious\n");
    let hostile = [
        "x/../../outside/victim.cassette".to_string(),
        format!("{}", w.path().join("outside/victim.cassette").display()),
        "a\u{0}b".to_string(),
        "a".repeat(pi_grammar::MAX_SESSION_ID_BYTES + 1),
        "..".to_string(),
    ];
    for (k, id) in hostile.iter().enumerate() {
        let c = with_recorded_id(&w, &format!("hostile{k}.cassette.jsonl"), id);
        let out = run(
            &w,
            &c,
            &["--mode", "json", "--session-dir", "s", "Say hello."],
            "",
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(98), "{id:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{id:?}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(
            stderr.contains(":2: record field `stdout`: the `session` line's `id`"),
            "{stderr}"
        );
        assert!(stderr.len() < 400, "the id is cut in the message: {stderr}");
    }
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious\n");
    assert!(!w.path().join("s").exists(), "nothing was created");
    w.assert_none_left();
}

/// An ISO time as pi writes it (JavaScript's `toISOString`), for epoch milliseconds.
fn iso(ms: u64) -> String {
    let out = std::process::Command::new("date")
        .args([
            "-u",
            &format!("-d@{}.{:03}", ms / 1000, ms % 1000),
            "+%Y-%m-%dT%H:%M:%S.%3NZ",
        ])
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

#[test]
fn a_symlink_waiting_at_the_session_files_name_is_never_written_through() {
    let w = World::new("contract-session-link");
    settings(&w, "");
    let victim = w.write("outside/victim.jsonl", "precious\n");
    let id = "0190aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee";
    let c = with_recorded_id(&w, "concrete.cassette.jsonl", id);
    // Links at every name the run could pick in the next few seconds.
    let s = w.path().join("s");
    std::fs::create_dir(&s).unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let stamps: Vec<String> = {
        // `date` per millisecond would be slow: one call per second, then the milliseconds.
        let mut v = Vec::new();
        for sec in 0..4 {
            let base = iso((now / 1000 + sec) * 1000);
            for ms in 0..1000 {
                v.push(format!("{}{ms:03}Z", &base[..20]));
            }
        }
        v
    };
    for ts in &stamps {
        std::os::unix::fs::symlink(&victim, s.join(pi_grammar::session_file_name(ts, id))).unwrap();
    }
    let out = run(
        &w,
        &c,
        &["--mode", "json", "--session-dir", "s", "Say hello."],
        "",
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious\n");
    // The session went to a new file of its own, named as pi names it.
    let files: Vec<PathBuf> = std::fs::read_dir(&s)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| !p.symlink_metadata().unwrap().is_symlink())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let text = std::fs::read_to_string(&files[0]).unwrap();
    assert!(text.starts_with(&format!(
        "{{\"type\":\"session\",\"version\":3,\"id\":\"{id}\""
    )));
    w.assert_none_left();
}

#[test]
fn parallel_replays_of_one_recorded_id_never_share_a_session_file() {
    let w = World::new("contract-session-parallel");
    settings(&w, "");
    let id = "0190aaaa-bbbb-7ccc-8ddd-ffffffffffff";
    let c = with_recorded_id(&w, "concrete.cassette.jsonl", id);
    const RUNS: usize = 100;
    let children: Vec<std::process::Child> = (0..RUNS)
        .map(|_| {
            let mut cmd = w.fake_pi(&c);
            cmd.args(["--mode", "json", "--session-dir", "s", "Say hello."])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped());
            cmd.spawn().unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let files: Vec<PathBuf> = std::fs::read_dir(w.path().join("s"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), RUNS, "one file per run");
    for f in &files {
        let lines: Vec<serde_json::Value> = std::fs::read_to_string(f)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        // One run's history: a header, then entries each pointing at the one before.
        assert_eq!(lines[0]["type"], "session", "{f:?}");
        assert_eq!(lines.len(), 6, "{f:?}: {lines:?}");
        assert!(lines[1..].iter().all(|l| l["type"] != "session"), "{f:?}");
        for pair in lines[1..].windows(2) {
            assert_eq!(pair[1]["parentId"], pair[0]["id"], "{f:?}");
        }
    }
    w.assert_none_left();
}
