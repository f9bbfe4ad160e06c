//! `pi-harness cassette import` and `pi-harness cassette lint` as a user runs them.

use std::path::Path;

use assert_cmd::Command;
use pi_cassette::{Action, Cassette, Dialect, FlagRule, OriginKind, Secret};

use crate::util::{cassettes, pi_harness, processes_with_marker};

fn stdout_of(committed: &str) -> Vec<u8> {
    Cassette::load(&cassettes().join(committed))
        .unwrap()
        .stdout_bytes()
}

fn sample_args(scenario: &str, version: &str) -> Vec<String> {
    [
        "--pi-version",
        version,
        "--scenario",
        scenario,
        "--flag",
        "mode=json",
        "--flag",
        "provider=fake",
        "--flag",
        "model=fake-model",
        "--spacing-ms",
        "5",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

#[test]
fn import_reproduces_the_committed_cassettes() {
    let cmd = || pi_harness("import_reproduces_the_committed_cassettes");
    let dir = tempfile::tempdir().unwrap();
    // tool_bash.pi87: same arguments as cassettes/import-samples.sh.
    let raw = dir.path().join("tool_bash.pi87.jsonl");
    std::fs::write(&raw, stdout_of("tool_bash.pi87.cassette.jsonl")).unwrap();
    let out = dir.path().join("tool_bash.pi87.cassette.jsonl");
    let committed = Cassette::load(&cassettes().join("tool_bash.pi87.cassette.jsonl")).unwrap();
    let assert = cmd()
        .args(["cassette", "import"])
        .arg(&raw)
        .arg("--out")
        .arg(&out)
        .args(sample_args("tool_bash", "0.87.1"))
        .args(["--description", &committed.header.scenario.description])
        .args([
            "--tag", "thinking", "--tag", "text", "--tag", "tool", "--tag", "bash",
        ])
        .args(["--prompt", "list files", "--exit", "0"])
        .args(["--source", "shared/samples/real-pi/tool_bash.pi87.jsonl"])
        .assert()
        .success();
    let said = String::from_utf8_lossy(&assert.get_output().stdout).into_owned();
    assert!(
        said.contains("48 records (29742 bytes of stdout), ends with exit"),
        "{said}"
    );
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        std::fs::read_to_string(cassettes().join("tool_bash.pi87.cassette.jsonl")).unwrap()
    );

    // sigint_mid_tool.pi73: spawn at the tool start with a same-group grandchild, then hang.
    let committed =
        Cassette::load(&cassettes().join("sigint_mid_tool.pi73.cassette.jsonl")).unwrap();
    let raw = dir.path().join("sigint.jsonl");
    std::fs::write(&raw, committed.stdout_bytes()).unwrap();
    let out = dir.path().join("sigint_mid_tool.pi73.cassette.jsonl");
    let mut c = cmd();
    c.args(["cassette", "import"])
        .arg(&raw)
        .arg("--out")
        .arg(&out)
        .args(sample_args("sigint_mid_tool", "0.73.1"))
        .args(["--description", &committed.header.scenario.description])
        .args([
            "--prompt",
            "go",
            "--hang",
            "--spawn-at-tool",
            "--spawn-grandchild",
        ])
        .args([
            "--source",
            "shared/samples/real-pi/sigint_mid_tool.pi73.jsonl",
        ])
        .args(["--notes", committed.header.origin.notes.as_deref().unwrap()]);
    for t in &committed.header.scenario.tags {
        c.args(["--tag", t]);
    }
    c.assert().success();
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        std::fs::read_to_string(cassettes().join("sigint_mid_tool.pi73.cassette.jsonl")).unwrap()
    );
    assert!(processes_with_marker("import_reproduces_the_committed_cassettes").is_empty());
}

#[test]
fn import_with_every_option_and_gzip_output() {
    let cmd = || pi_harness("import_with_every_option_and_gzip_output");
    let dir = tempfile::tempdir().unwrap();
    let raw = dir.path().join("raw.jsonl");
    let body: &[u8] = b"{\"type\":\"session\"}\nstray\n\xff\n{\"type\":\"agent_end\"}";
    std::fs::write(&raw, body).unwrap();
    let stderr = dir.path().join("err.txt");
    std::fs::write(&stderr, "Killed\n").unwrap();
    let out = dir.path().join("x.cassette.jsonl.gz");
    cmd()
        .args(["cassette", "import"])
        .arg(&raw)
        .arg("--out")
        .arg(&out)
        .args(["--pi-version", "0.73.1", "--dialect", "snapshot-only"])
        .args(["--scenario", "x", "--description", "all options"])
        .args([
            "--flag=--mode=json",
            "--flag",
            "no-session",
            "--no-flag",
            "session-id",
        ])
        .args(["--argv-messages", "[]", "--prompt", "hi"])
        .args(["--env", "HOME", "--secret-env", "FAKE_API_KEY"])
        .args(["--redaction", "<SESSION_ID>=session uuid"])
        .arg("--stderr")
        .arg(&stderr)
        .args([
            "--signal",
            "9",
            "--on-sigterm",
            "ignore",
            "--spacing-ms",
            "2.5",
        ])
        .assert()
        .success();
    assert_eq!(
        &std::fs::read(&out).unwrap()[..2],
        b"\x1f\x8b",
        "gzip magic"
    );
    let c = Cassette::load(&out).unwrap();
    assert_eq!(c.stdout_bytes(), body);
    assert_eq!(c.stderr_bytes(), b"Killed\n");
    assert_eq!(c.ending(), &Action::Signal("SIGKILL".into()));
    let h = &c.header;
    assert_eq!(h.pi.dialect, Dialect::SnapshotOnly);
    assert_eq!(h.origin.kind, OriginKind::Imported);
    assert_eq!(h.expect.flags["mode"], FlagRule::Value("json".into()));
    assert_eq!(h.expect.flags["no-session"], FlagRule::Present(true));
    assert_eq!(h.expect.flags["session-id"], FlagRule::Present(false));
    assert_eq!(h.expect.argv_messages, Some(vec![]));
    assert_eq!(h.expect.never_in_argv, [Secret::Env("FAKE_API_KEY".into())]);
    assert_eq!(h.redactions["<SESSION_ID>"], "session uuid");
    assert!(!h.process.is_pi_default());
    assert!(c.records.iter().all(|r| r.dt_ms == 2.5));
    assert!(processes_with_marker("import_with_every_option_and_gzip_output").is_empty());
}

/// Runs the command, expects `code` and a stderr containing every `needle`, no panic.
fn fails_with(c: &mut Command, code: i32, needles: &[&str]) {
    let out = c.assert().code(code);
    let err = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    for n in needles {
        assert!(err.contains(n), "stderr {err:?} should contain {n:?}");
    }
    assert!(
        !err.contains("panicked") && !err.contains("backtrace"),
        "{err}"
    );
}

#[test]
fn import_errors_are_one_clear_line() {
    let cmd = || pi_harness("import_errors_are_one_clear_line");
    let dir = tempfile::tempdir().unwrap();
    let raw = dir.path().join("raw.jsonl");
    std::fs::write(&raw, "{\"type\":\"session\"}\n").unwrap();
    let out = dir.path().join("out.cassette.jsonl");
    let base = |extra: &[&str]| {
        let mut c = cmd();
        c.args(["cassette", "import"])
            .arg(&raw)
            .arg("--out")
            .arg(&out)
            .args([
                "--pi-version",
                "0.87.1",
                "--scenario",
                "s",
                "--description",
                "d",
            ])
            .args(extra);
        c
    };
    let one_line = |c: &mut Command, code: i32, needles: &[&str]| {
        fails_with(c, code, needles);
        let err = c.output().unwrap().stderr;
        assert_eq!(
            err.iter().filter(|&&b| b == b'\n').count(),
            1,
            "{}",
            String::from_utf8_lossy(&err)
        );
    };

    let missing = dir.path().join("missing.jsonl");
    let mut c = cmd();
    c.args(["cassette", "import"])
        .arg(&missing)
        .arg("--out")
        .arg(&out)
        .args([
            "--pi-version",
            "0.87.1",
            "--scenario",
            "s",
            "--description",
            "d",
            "--exit",
            "0",
        ]);
    one_line(&mut c, 2, &[&format!("{}: cannot read", missing.display())]);

    one_line(
        &mut base(&[]),
        2,
        &["one of --exit CODE, --signal SIG, --hang"],
    );
    one_line(
        &mut base(&["--exit", "0", "--argv-messages", "hi"]),
        2,
        &["--argv-messages expects a JSON array"],
    );
    one_line(
        &mut base(&["--exit", "0", "--spawn-at-tool"]),
        2,
        &[&format!("{}: --spawn-at-tool: no line", raw.display())],
    );
    fails_with(
        &mut base(&["--exit", "0", "--on-sigint", "explode"]),
        2,
        &["bad signal action \"explode\""],
    );
    one_line(
        &mut base(&["--signal", "SIGFOO"]),
        2,
        &["unknown signal \"SIGFOO\""],
    );
    let mut c = base(&["--exit", "0"]);
    c.args(["--pi-version", "0.50.0"]);
    fails_with(&mut c, 2, &["cannot be used multiple times"]);
    // Two endings: clap rejects the combination.
    fails_with(
        &mut base(&["--exit", "0", "--hang"]),
        2,
        &["cannot be used with"],
    );
    assert!(!out.exists(), "no output after failures");

    // Unknown version without --dialect.
    let mut c = cmd();
    c.args(["cassette", "import"])
        .arg(&raw)
        .arg("--out")
        .arg(&out)
        .args([
            "--pi-version",
            "0.50.0",
            "--scenario",
            "s",
            "--description",
            "d",
            "--exit",
            "0",
        ]);
    one_line(
        &mut c,
        2,
        &["--pi-version 0.50.0: not a pinned pi version (0.73.1, 0.87.1, 1.5.2)"],
    );

    // Output directory missing: an output error (exit 1) naming the output, no temp file left.
    let bad_out = dir.path().join("no-such-dir/out.cassette.jsonl");
    let mut c = cmd();
    c.args(["cassette", "import"])
        .arg(&raw)
        .arg("--out")
        .arg(&bad_out)
        .args([
            "--pi-version",
            "0.87.1",
            "--scenario",
            "s",
            "--description",
            "d",
            "--exit",
            "0",
        ]);
    one_line(
        &mut c,
        1,
        &[&format!("{}: cannot create a file in", bad_out.display())],
    );
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(left, ["raw.jsonl"], "only the input remains");
    assert!(processes_with_marker("import_errors_are_one_clear_line").is_empty());
}

#[test]
fn import_help_has_an_example() {
    let cmd = || pi_harness("import_help_has_an_example");
    let out = cmd()
        .args(["cassette", "import", "--help"])
        .assert()
        .success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(
        text.contains("Example:\n  pi-harness cassette import"),
        "{text}"
    );
    assert!(text.contains("--spawn-at-tool"), "{text}");
}

#[test]
fn lint_passes_every_committed_cassette() {
    let cmd = || pi_harness("lint_passes_every_committed_cassette");
    let mut files = Vec::new();
    for dir in [cassettes(), cassettes().join("faults")] {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            if e.file_name().to_string_lossy().contains(".cassette.jsonl") {
                files.push(e.path());
            }
        }
    }
    assert!(
        files.len() >= 18,
        "7 imports and 11 faults at least: {files:?}"
    );
    let summary = format!("{} cassette(s) ok", files.len());
    let out = cmd()
        .args(["cassette", "lint"])
        .args(&files)
        .assert()
        .success();
    assert!(out.get_output().stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.get_output().stderr).contains(&summary));
}

#[test]
fn lint_reports_each_problem_as_file_line_what() {
    let cmd = || pi_harness("lint_reports_each_problem_as_file_line_what");
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.cassette.jsonl");
    let header = r#"{"format":"pi-cassette","version":1,"pi":{"version":"0.87.1","dialect":"delta-only"},"scenario":{"name":"b","description":"d"},"origin":{"kind":"recorded","timing":"measured"}}"#;
    std::fs::write(
        &bad,
        format!(
            "{header}\n{}\n{}\n{}\n",
            r#"{"dt_ms":3,"stdout":{"type":"session","cwd":"/home/alice/project"}}"#,
            r#"{"dt_ms":3,"stdout":{"type":"agent_start"},"exit":0}"#,
            r#"{"dt_ms":3,"stderr":"using key sk-ant-api03-abcdefghijklmnopqrstuv\n"}"#,
        ),
    )
    .unwrap();
    let raw_pi = dir.path().join("raw.jsonl");
    std::fs::write(&raw_pi, "{\"type\":\"session\"}\n").unwrap();
    let good = cassettes().join("auth_401.pi73.cassette.jsonl");
    let out = cmd()
        .args(["cassette", "lint"])
        .arg(&bad)
        .arg(&good)
        .arg(&raw_pi)
        .assert()
        .code(1);
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    let lines: Vec<&str> = text.lines().collect();
    let b = bad.display().to_string();
    let r = raw_pi.display().to_string();
    assert_eq!(lines.len(), 5, "{text}");
    // In the order of their lines.
    assert_eq!(lines[0], format!("{b}:2: stdout: absolute home path \"/home/alice\": replace it with a placeholder such as <HOME>"));
    assert_eq!(
        lines[1],
        format!("{b}:3: record has several actions (stdout, exit); one per line")
    );
    assert!(
        lines[2].starts_with(&format!("{b}:4: stderr: an API key (sk-...) sk-ant-a...")),
        "{}",
        lines[2]
    );
    assert_eq!(
        lines[3],
        format!("{b}:4: the last record must be `exit`, `signal` or `hang` (how the process ends)")
    );
    assert!(
        lines[4].starts_with(&format!("{r}:1: header field `format` missing")),
        "{}",
        lines[4]
    );
    let err = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(err.contains("5 problem(s) in 2 of 3 cassette(s)"), "{err}");

    // No file: a usage error.
    cmd().args(["cassette", "lint"]).assert().code(2);
    assert!(processes_with_marker("lint_reports_each_problem_as_file_line_what").is_empty());
}

/// What is not pi's raw stdout is refused, gzip input is read like `map` reads it, `-` is
/// stdin, and the output may not overwrite an input (before: a cassette was wrapped as pi
/// stdout, an empty file imported, gzip bytes taken as text, the capture overwritten).
#[test]
fn import_refuses_what_is_not_a_capture_and_never_overwrites_its_input() {
    let cmd = || pi_harness("import_refuses_what_is_not_a_capture");
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "--pi-version",
        "0.87.1",
        "--scenario",
        "s",
        "--description",
        "d",
        "--exit",
        "0",
    ];
    let import = |input: &Path, out: &Path| {
        let mut c = cmd();
        c.args(["cassette", "import"])
            .arg(input)
            .arg("--out")
            .arg(out)
            .args(args);
        c
    };
    let out = dir.path().join("out.cassette.jsonl");
    let cassette = cassettes().join("tool_bash.pi87.cassette.jsonl");
    fails_with(&mut import(&cassette, &out), 2, &["is already a cassette"]);
    let empty = dir.path().join("empty.jsonl");
    std::fs::write(&empty, "").unwrap();
    fails_with(&mut import(&empty, &out), 2, &["is empty"]);
    assert!(!out.exists());
    // The same capture, gzipped, imports to the same cassette.
    let raw = dir.path().join("raw.jsonl");
    std::fs::write(&raw, "{\"type\":\"session\"}\n{\"type\":\"agent_end\"}\n").unwrap();
    import(&raw, &out).assert().success();
    let gz = dir.path().join("raw.jsonl.gz");
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut enc, &std::fs::read(&raw).unwrap()).unwrap();
    std::fs::write(&gz, enc.finish().unwrap()).unwrap();
    let out2 = dir.path().join("out2.cassette.jsonl");
    let mut c = import(&gz, &out2);
    c.args(["--source", &raw.display().to_string()]);
    c.assert().success();
    let a = Cassette::load(&out).unwrap();
    let b = Cassette::load(&out2).unwrap();
    assert_eq!(a.stdout_bytes(), b.stdout_bytes());
    // `-` reads stdin.
    let out3 = dir.path().join("out3.cassette.jsonl");
    let mut c = import(Path::new("-"), &out3);
    c.write_stdin(std::fs::read(&raw).unwrap())
        .assert()
        .success();
    assert_eq!(
        Cassette::load(&out3).unwrap().stdout_bytes(),
        a.stdout_bytes()
    );
    // The output is the input: refused, the capture intact.
    let before = std::fs::read(&raw).unwrap();
    fails_with(
        &mut import(&raw, &raw),
        1,
        &["is also an input of this command"],
    );
    assert_eq!(std::fs::read(&raw).unwrap(), before);
    // A device is written through, never replaced by a regular file.
    import(&raw, Path::new("/dev/null")).assert().success();
    assert!(!std::fs::metadata("/dev/null").unwrap().is_file());
}

/// A directory stands for every cassette below it; one with none is an input error.
#[test]
fn lint_takes_directories() {
    let corpus = cassettes();
    let expected = walk(&corpus);
    assert!(expected > 60, "{expected}");
    let out = pi_harness("lint-dir")
        .args(["cassette", "lint"])
        .arg(&corpus)
        .assert()
        .code(0)
        .get_output()
        .clone();
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!("{expected} cassette(s) ok\n")
    );
    let empty = tempfile::tempdir().unwrap();
    let out = pi_harness("lint-dir")
        .args(["cassette", "lint"])
        .arg(empty.path())
        .assert()
        .code(2)
        .get_output()
        .clone();
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "error: {}: no *.cassette.jsonl file below it\n",
            empty.path().display()
        )
    );
    assert!(processes_with_marker("lint-dir").is_empty());
}

fn walk(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| {
            let p = e.path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            if p.is_dir() {
                walk(&p)
            } else {
                usize::from(name.contains(".cassette.jsonl"))
            }
        })
        .sum()
}

/// `cassette import --mode rpc`: a client's transcript becomes a two-way cassette that keeps
/// pi's bytes (`--raw-stdout`) and the model requests; a bad transcript is one line naming
/// the file and line.
#[test]
fn import_rpc_takes_a_clients_transcript() {
    let dir = tempfile::tempdir().unwrap();
    let transcript = dir.path().join("t.jsonl");
    std::fs::write(
        &transcript,
        concat!(
            "{\"t_ms\": 1, \"note\": \"client started pi\"}\n",
            "{\"t_ms\": 2, \"stdin\": {\"id\": 7, \"type\": \"get_state\"}}\n",
            "{\"t_ms\": 9, \"stdout\": {\"id\": 7, \"type\": \"response\", \"command\": \"get_state\", \"success\": true}}\n",
            "{\"t_ms\": 10, \"stdin_raw\": \"nonsense\\n\"}\n",
            "{\"t_ms\": 11, \"stdout\": {\"type\": \"response\", \"command\": \"parse\", \"success\": false}}\n",
            "{\"t_ms\": 20, \"stdin_close\": true}\n",
            "{\"t_ms\": 50, \"exit\": 0}\n",
        ),
    )
    .unwrap();
    let raw = dir.path().join("stdout.raw");
    std::fs::write(
        &raw,
        "{\"id\":7,\"type\":\"response\",\"command\":\"get_state\",\"success\":true}\n{\"type\":\"response\",\"command\":\"parse\",\"success\":false}\n",
    )
    .unwrap();
    let out = dir.path().join("s.cassette.jsonl");
    pi_harness("import_rpc")
        .args(["cassette", "import", "--mode", "rpc"])
        .arg(&transcript)
        .arg("--raw-stdout")
        .arg(&raw)
        .args([
            "--pi-version",
            "1.5.2",
            "--scenario",
            "s",
            "--description",
            "d",
        ])
        .arg("--out")
        .arg(&out)
        .assert()
        .success();
    let c = Cassette::load(&out).unwrap();
    assert_eq!(c.header.mode.as_deref(), Some("rpc"));
    assert_eq!(c.stdout_bytes(), std::fs::read(&raw).unwrap());
    let keys: Vec<&str> = c.records.iter().map(|r| r.action.key()).collect();
    assert_eq!(
        keys,
        [
            "stdin",
            "stdout",
            "stdin_text",
            "stdout",
            "stdin_close",
            "exit"
        ]
    );
    assert_eq!(c.records[1].reply, Some(0));
    assert_eq!(c.records[3].reply, None);
    assert_eq!(c.records[5].dt_ms, 30.0);

    // A transcript line that is not one entry: refused, nothing written.
    std::fs::write(&transcript, "{\"stdin\": {}, \"stdout\": {}}\n").unwrap();
    let out2 = dir.path().join("bad.cassette.jsonl");
    fails_with(
        pi_harness("import_rpc")
            .args(["cassette", "import", "--mode", "rpc"])
            .arg(&transcript)
            .args([
                "--pi-version",
                "1.5.2",
                "--scenario",
                "s",
                "--description",
                "d",
                "--exit",
                "0",
            ])
            .arg("--out")
            .arg(&out2),
        2,
        &[&format!(
            "{}:1: several actions in one entry (stdin, stdout)",
            transcript.display()
        )],
    );
    assert!(!out2.exists());
    // The rpc-only options belong to --mode rpc.
    fails_with(
        pi_harness("import_rpc")
            .args(["cassette", "import"])
            .arg(&transcript)
            .arg("--raw-stdout")
            .arg(&raw)
            .args([
                "--pi-version",
                "1.5.2",
                "--scenario",
                "s",
                "--description",
                "d",
                "--exit",
                "0",
            ])
            .arg("--out")
            .arg(&out2),
        2,
        &["belong to --mode rpc"],
    );
}

/// What is not a file is refused at once, naming what it is: a FIFO with no writer blocked
/// lint forever before, and `/dev/zero` never ends.
#[test]
fn lint_refuses_a_fifo_and_a_device_at_once() {
    let test = "lint_refuses_a_fifo_and_a_device_at_once";
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("x.cassette.jsonl");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    for (path, kind) in [
        (fifo.as_path(), "a FIFO"),
        (Path::new("/dev/zero"), "a device"),
    ] {
        let mut child = std::process::Command::new(crate::util::bin())
            .env("PI_HARNESS_TEST_MARKER", crate::util::marker(test))
            .args(["cassette", "lint"])
            .arg(path)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let end = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            if std::time::Instant::now() > end {
                let _ = child.kill();
                let _ = child.wait();
                panic!("lint {} still running after 60 s", path.display());
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        let mut err = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
        assert_eq!(status.code(), Some(2), "{err}");
        assert_eq!(
            err,
            format!(
                "error: {}: cannot read cassette: {kind}, not a cassette file (give a file, or `-` to read stdin)\n",
                path.display()
            )
        );
    }
    assert!(processes_with_marker(test).is_empty());
}

/// A secret named by its variable (`--secret-env`) is looked for by value, whatever its
/// shape: import refuses a capture that holds it (it wrote the passphrase into the cassette
/// and exited 0 before), and lint finds it, in a file it names by line, without showing it;
/// the variables a cassette's header names as secret are looked for without the flag.
#[test]
fn a_secret_named_by_its_variable_is_refused_by_import_and_found_by_lint() {
    let test = "a_secret_named_by_its_variable_is_refused_by_import_and_found_by_lint";
    let passphrase = "correct horse battery staple";
    let dir = tempfile::tempdir().unwrap();
    let raw = dir.path().join("raw.jsonl");
    std::fs::write(
        &raw,
        format!(
            "{{\"type\":\"session\",\"version\":3,\"id\":\"s-1\",\"timestamp\":\"<TS>\",\"cwd\":\"/w\"}}\n{{\"type\":\"agent_end\",\"note\":\"key {passphrase}\"}}\n"
        ),
    )
    .unwrap();
    let out = dir.path().join("out.cassette.jsonl");
    let import = |with_secret: bool| {
        let mut c = pi_harness(test);
        c.env("MY_PASSPHRASE", passphrase)
            .args(["cassette", "import"])
            .arg(&raw)
            .arg("--out")
            .arg(&out)
            .args([
                "--pi-version",
                "0.87.1",
                "--scenario",
                "s",
                "--description",
                "d",
            ])
            .args(["--exit", "0"]);
        if with_secret {
            c.args(["--secret-env", "MY_PASSPHRASE"]);
        }
        c.output().unwrap()
    };
    let o = import(true);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(
        err,
        format!(
            "error: {}: holds the value of $MY_PASSPHRASE (--secret-env), which would be line 3 of {}; put a placeholder in its place (with --redaction) and import again\n",
            raw.display(),
            out.display()
        )
    );
    assert!(!out.exists(), "nothing written");
    // Imported without the flag, the cassette holds it; lint finds it when told its name.
    assert_eq!(import(false).status.code(), Some(0));
    let lint = |secret: Option<&str>| {
        let mut c = pi_harness(test);
        c.env("MY_PASSPHRASE", passphrase)
            .args(["cassette", "lint"])
            .arg(&out);
        if let Some(s) = secret {
            c.args(["--secret-env", s]);
        }
        c.output().unwrap()
    };
    let o = lint(Some("MY_PASSPHRASE"));
    let text =
        String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{text}");
    assert!(
        text.contains(&format!(
            "{}:3: holds the value of $MY_PASSPHRASE (a secret): put a placeholder in its place",
            out.display()
        )),
        "{text}"
    );
    assert!(
        !text.contains(passphrase),
        "the value is never shown: {text}"
    );
    // Not named: a passphrase has no token shape, so lint passes it...
    assert_eq!(lint(None).status.code(), Some(0));
    // ...unless the cassette's own header names the variable as secret.
    let mut c = Cassette::load(&out).unwrap();
    c.header.expect.env.push("MY_PASSPHRASE".into());
    c.header
        .expect
        .never_in_argv
        .push(Secret::Env("MY_PASSPHRASE".into()));
    c.save(&out).unwrap();
    let o = lint(None);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stdout).contains(":3: holds the value of $MY_PASSPHRASE"));
    assert!(processes_with_marker(test).is_empty());
}
