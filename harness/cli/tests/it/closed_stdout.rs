//! A closed stdout (`pi-harness … | head -1` once head has gone) is not a crash: every
//! command that prints goes on to its own exit status without a panic, and fake-pi exits
//! 141 quietly, as its README says. Before, `provider-run --capabilities`, `fake-pi --help`
//! and `fake-pi --version` panicked with "failed printing to stdout" (exit 101).

use std::path::Path;
use std::process::{Command, Output, Stdio};

use pi_testkit::{fake_pi, World, MARKER_VAR};

const RECORDED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../cassettes/recorded");

/// Run `cmd` with a stdout pipe whose reading end is already closed.
fn with_closed_stdout(mut cmd: Command) -> Output {
    // Close-on-exec: a process another test starts meanwhile must not inherit the read end
    // (the pipe would then have a reader).
    let (reader, writer) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).expect("a pipe");
    drop(reader);
    cmd.stdout(Stdio::from(writer))
        .stderr(Stdio::piped())
        .stdin(Stdio::null())
        .env_remove("RUST_BACKTRACE")
        .env_remove("RUST_LIB_BACKTRACE");
    let child = cmd.spawn().expect("spawns");
    // The test process keeps no copy of the writer: `cmd` held the only one.
    drop(cmd);
    child.wait_with_output().expect("waits")
}

fn pih(w: &World, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pi-harness"));
    c.args(args)
        .env(MARKER_VAR, w.marker())
        .current_dir(w.path());
    c
}

/// `pi-harness run --json PROMPT` against fake-pi replaying `cassette` at full speed.
fn run_on_fake_pi(w: &World, cassette: &str, prompt: &str) -> Command {
    let mut run = pih(
        w,
        &[
            "run",
            "--pi-version",
            "0.87.1",
            "--provider",
            "fake",
            "--model",
            "fake-model",
            "--json",
            prompt,
        ],
    );
    run.arg("--pi")
        .arg(fake_pi())
        .env("FAKE_PI_CASSETTE", cassette)
        .env("FAKE_PI_SPEED", "0")
        .env("PI_CODING_AGENT_DIR", w.agent_dir());
    run
}

fn check(what: &str, out: &Output, code: i32) -> Option<String> {
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.code() == Some(code) && !stderr.contains("panicked") {
        None
    } else {
        Some(format!(
            "{what}: expected exit {code} without a panic, got {:?}; stderr: {}",
            out.status,
            stderr.lines().take(3).collect::<Vec<_>>().join(" | ")
        ))
    }
}

#[test]
fn every_printing_command_survives_a_closed_stdout() {
    let w = World::new("closed-stdout");
    let text = Path::new(RECORDED).join("text_only.pi87.cassette.jsonl");
    let text = text.to_str().unwrap();
    let long = Path::new(RECORDED).join("long_answer.pi87.cassette.jsonl");
    let long = long.to_str().unwrap();
    let mut failures = Vec::new();

    let cases: Vec<(&str, Vec<&str>, i32)> = vec![
        ("--help", vec!["--help"], 0),
        ("--version", vec!["--version"], 0),
        (
            "provider-run --capabilities",
            vec!["provider-run", "--capabilities"],
            0,
        ),
        ("cassette lint", vec!["cassette", "lint", text, long], 0),
        ("cassette show", vec!["cassette", "show", long], 0),
        (
            "cassette show --json",
            vec!["cassette", "show", "--json", long],
            0,
        ),
        ("map", vec!["map", long], 0),
        ("map --json", vec!["map", "--json", long], 0),
    ];
    for (what, args, code) in cases {
        let out = with_closed_stdout(pih(&w, &args));
        failures.extend(check(what, &out, code));
    }

    // A lint that finds problems reports them by its status even when nobody reads them.
    let broken = w.write(
        "broken.cassette.jsonl",
        std::fs::read_to_string(text)
            .unwrap()
            .replacen("\"dt_ms\":", "\"dt_ms\":-", 1),
    );
    let out = with_closed_stdout(pih(&w, &["cassette", "lint", broken.to_str().unwrap()]));
    failures.extend(check("cassette lint (problems)", &out, 1));

    // `run` against fake-pi: the stream has nowhere to go, so the run is cancelled and pi
    // stopped (the marker scan at the end proves it).
    let run = run_on_fake_pi(&w, long, "Write a lot.");
    // README: 130, "also when stdout is closed while the run goes on".
    let out = with_closed_stdout(run);
    failures.extend(check("run", &out, 130));

    // A short run can end before the writer finds stdout closed; the stream still did not
    // reach anyone: 130 all the same. (Before, a third of these runs said 0.)
    for _ in 0..12 {
        let out = with_closed_stdout(run_on_fake_pi(&w, text, "Say hello."));
        failures.extend(check("run (a short run)", &out, 130));
    }

    // fake-pi: a quiet 141 for help, version and replay alike.
    for args in [&["--help"][..], &["--version"][..]] {
        let mut c = w.fake_pi(Path::new(text));
        c.args(args);
        let out = with_closed_stdout(c);
        failures.extend(check(&format!("fake-pi {args:?}"), &out, 141));
        if !out.stderr.is_empty() {
            failures.push(format!(
                "fake-pi {args:?} is not quiet: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }

    w.assert_none_left();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A full stdout is not a closed one: `corpus list` into `/dev/full` could not write what was
/// asked, so it fails naming stdout (it exited 0 before), while a closed pipe stays quiet.
#[test]
fn a_full_stdout_fails_where_a_closed_one_does_not() {
    let w = World::new("full-stdout");
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = pih(&w, &["corpus", "list"])
        .stdout(Stdio::from(full))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(
        err,
        "error: stdout: No space left on device (os error 28)\n"
    );
    let out = with_closed_stdout(pih(&w, &["corpus", "list"]));
    assert_eq!(out.status.code(), Some(0));
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    w.assert_none_left();
}
