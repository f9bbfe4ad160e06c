//! `FAKE_PI_TIMELINE`: one JSON line per start the caller made, with what the call sent
//! (the header's secrets masked), the signals it received and how it ended; nothing without
//! the variable.

use std::io::{BufRead as _, BufReader};
use std::time::Duration;

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::Value;

use crate::util::*;

fn lines(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn a_start_is_written_with_its_call_its_signals_and_its_end_only_when_asked() {
    let w = World::new("timeline-starts");
    let file = w.path().join("timeline.jsonl");
    let text_only = repo_cassette("recorded/text_only.pi87.cassette.jsonl");
    let args = [
        "--mode",
        "json",
        "--provider",
        "fake",
        "--model",
        "fake-model",
        "Say hello.",
    ];

    // Not asked: nothing written, as before.
    let out = w.fake_pi(&text_only).args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(!file.exists());

    // A replay that matches, and one that does not.
    let out = w
        .fake_pi(&text_only)
        .env("FAKE_PI_TIMELINE", &file)
        .args(args)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let mut wrong = args;
    wrong[5] = "other-model";
    let out = w
        .fake_pi(&text_only)
        .env("FAKE_PI_TIMELINE", &file)
        .args(wrong)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(99));
    let all = lines(&file);
    assert_eq!(all.len(), 2, "{all:?}");
    assert_eq!(all[0]["fake_pi_timeline"], 1);
    assert_eq!(all[0]["argv"], serde_json::json!(args));
    assert_eq!(all[0]["ended"]["exit"], 0);
    assert_eq!(all[0]["cassette"], text_only.display().to_string());
    assert_eq!(all[1]["argv"][5], "other-model");
    assert_eq!(all[1]["ended"]["exit"], 99);
    assert!(
        all[1]["started_unix_ms"].as_f64().unwrap() >= all[0]["started_unix_ms"].as_f64().unwrap()
    );

    // A signal at a hang: received, answered (pi's SIGTERM: kill the tools, exit 143).
    let file2 = w.path().join("timeline2.jsonl");
    let sigterm = repo_cassette("sigterm_mid_tool.pi87.cassette.jsonl");
    let mut child = w
        .fake_pi(&sigterm)
        .env("FAKE_PI_TIMELINE", &file2)
        .args([
            "--mode",
            "json",
            "--provider",
            "fake",
            "--model",
            "fake-model",
            "go",
        ])
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    while stdout.read_line(&mut line).unwrap() > 0 && !line.contains("tool_execution_update") {
        line.clear();
    }
    // The tool's processes are started with the record before; give them a moment to exist.
    w.wait_alive(3, Duration::from_secs(5));
    kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(143));
    let [start] = &lines(&file2)[..] else {
        panic!("one line: {:?}", lines(&file2))
    };
    assert_eq!(start["signals"][0]["signal"], "SIGTERM");
    assert_eq!(start["signals"][0]["answer"], "cleanup_exit 143");
    assert_eq!(start["ended"]["exit"], 143);
    assert!(
        start["ended"]["t_ms"].as_f64().unwrap() >= start["signals"][0]["t_ms"].as_f64().unwrap()
    );
    w.assert_none_left_within(Duration::from_secs(5));
}

#[test]
fn a_secret_the_call_puts_in_argv_is_masked() {
    let w = World::new("timeline-secret");
    let file = w.path().join("timeline.jsonl");
    let cassette = w
        .cassette("secret.pi87.cassette.jsonl")
        .expect(r#"{"never_in_argv":[{"literal":"sk-literal-0123456789"},{"env":"TIMELINE_TEST_KEY"}]}"#)
        .record(r#"{"dt_ms":1,"stdout":{"type":"agent_start"}}"#)
        .record(r#"{"dt_ms":1,"exit":0}"#)
        .write();
    let out = w
        .fake_pi(&cassette)
        .env("FAKE_PI_TIMELINE", &file)
        .env("TIMELINE_TEST_KEY", "env-secret-value-42")
        .args([
            "--mode",
            "json",
            "--api-key",
            "sk-literal-0123456789",
            "key=env-secret-value-42",
            "hi",
        ])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(99),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        !text.contains("sk-literal-0123456789") && !text.contains("env-secret-value-42"),
        "{text}"
    );
    let [start] = &lines(&file)[..] else {
        panic!("{text}")
    };
    // Masked as every line of fake-pi's own masks it (its report, its mismatches).
    assert_eq!(start["argv"][3], "[REDACTED]");
    assert_eq!(start["argv"][4], "key=[REDACTED]");
    w.assert_none_left();
}

/// `FAKE_PI_TIMELINE` is appended to as `FAKE_PI_REPORT` is: only a regular file, never
/// through a symbolic link (it wrote through one, into whatever the link named) and never
/// waiting on a FIFO; what it could not write is said in one line and changes no status.
#[test]
fn the_timeline_is_never_written_through_a_link_or_into_a_fifo() {
    let w = World::new("timeline-link");
    let text_only = repo_cassette("recorded/text_only.pi87.cassette.jsonl");
    let target = w.path().join("target.txt");
    std::fs::write(&target, "mine\n").unwrap();
    let link = w.path().join("timeline.jsonl");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let fifo = w.path().join("fifo.jsonl");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    for (file, what) in [
        (&link, "a symbolic link, not a regular file"),
        (&fifo, "a FIFO, not a regular file"),
    ] {
        let out = w
            .fake_pi(&text_only)
            .env("FAKE_PI_TIMELINE", file)
            .args([
                "--mode",
                "json",
                "--provider",
                "fake",
                "--model",
                "fake-model",
                "Say hello.",
            ])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{what}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            err,
            format!(
                "fake-pi: FAKE_PI_TIMELINE {}: cannot append the timeline: {what}\n",
                file.display()
            )
        );
    }
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "mine\n");
    w.assert_none_left();
}
