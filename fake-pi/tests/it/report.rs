//! `FAKE_PI_REPORT`: fake-pi's own lines, the ones its caller's caller cannot read on
//! fake-pi's stderr, appended to a file as one JSON line per start that said any.

use std::io::Write as _;
use std::process::Stdio;

use serde_json::Value;

use crate::util::*;

/// The report's lines, each parsed.
fn entries(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// fake-pi's own stderr lines (`fake-pi: ...`).
fn own_lines(stderr: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stderr)
        .lines()
        .filter(|l| l.starts_with("fake-pi: "))
        .map(|l| Value::from(l.to_string()))
        .collect()
}

#[test]
fn a_mismatch_goes_to_the_report_as_on_stderr_once_per_start() {
    let w = World::new("report-mismatch");
    let cassette = repo_cassette("recorded/text_only.pi87.cassette.jsonl");
    let report = w.path().join("report.jsonl");
    let mut pids = Vec::new();
    for _ in 0..2 {
        let child = w
            .fake_pi(&cassette)
            .env("FAKE_PI_REPORT", &report)
            .args([
                "--mode",
                "json",
                "--provider",
                "fake",
                "--model",
                "other-model",
                "hi",
            ])
            .spawn()
            .unwrap();
        pids.push(child.id());
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(99));
        let said = own_lines(&out.stderr);
        assert!(!said.is_empty());
        let last = entries(&report).pop().unwrap();
        assert_eq!(last["lines"], Value::from(said));
    }
    let all = entries(&report);
    assert_eq!(all.len(), 2, "one line per start: {all:?}");
    for (e, pid) in all.iter().zip(&pids) {
        assert_eq!(e["fake_pi_report"], 1);
        assert_eq!(e["pid"], *pid);
        assert_eq!(e["exit"], 99);
        assert_eq!(e["cassette"], cassette.display().to_string());
        let line = e["lines"][0].as_str().unwrap();
        assert!(
            line.starts_with("fake-pi: expectation mismatch: expect.effective.model"),
            "{line}"
        );
    }
    w.assert_none_left();
}

#[test]
fn a_replay_that_matches_writes_nothing() {
    let w = World::new("report-quiet");
    let report = w.path().join("report.jsonl");
    let out = w
        .fake_pi(&repo_cassette("recorded/text_only.pi87.cassette.jsonl"))
        .env("FAKE_PI_REPORT", &report)
        .args([
            "--mode",
            "json",
            "--provider",
            "fake",
            "--model",
            "fake-model",
        ])
        .arg("Say hello.")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !report.exists(),
        "a start with nothing to say wrote a report"
    );
    w.assert_none_left();
}

#[test]
fn a_client_mismatch_mid_replay_is_reported() {
    let w = World::new("report-rpc");
    let report = w.path().join("report.jsonl");
    let mut child = w
        .fake_pi(&repo_cassette("rpc/rpc_malformed.pi152.cassette.jsonl"))
        .env("FAKE_PI_REPORT", &report)
        .args([
            "--mode",
            "rpc",
            "--provider",
            "fake",
            "--model",
            "fake-model",
        ])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"{\"type\":\"get_state\"}\n").unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(99));
    let e = &entries(&report)[0];
    assert_eq!(e["lines"], Value::from(own_lines(&out.stderr)));
    assert!(
        e["lines"][0]
            .as_str()
            .unwrap()
            .starts_with("fake-pi: client mismatch: "),
        "{e}"
    );
    w.assert_none_left();
}

#[test]
fn a_report_that_cannot_be_written_is_said_and_keeps_the_status() {
    let w = World::new("report-unwritable");
    let report = w.path().join("no-such-dir/report.jsonl");
    let out = w
        .fake_pi(&w.path().join("missing.cassette.jsonl"))
        .env("FAKE_PI_REPORT", &report)
        .args(["--mode", "json", "hi"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(97));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("fake-pi: FAKE_PI_REPORT ") && stderr.contains("cannot append the report"),
        "{stderr}"
    );
    w.assert_none_left();
}

/// A report that is a FIFO hung fake-pi's exit (the open waited for a reader), and one that
/// is a link was appended through: both are refused at once in one line, the exit status the
/// replay's own, nothing written through the link.
#[test]
fn a_report_that_is_a_fifo_or_a_link_is_refused_at_once_keeping_the_status() {
    let w = World::new("report-fifo");
    let fifo = w.path().join("report.fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    let victim = w.write("victim.txt", "the user's file\n");
    let link = w.path().join("report.link");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    for (report, kind) in [(&fifo, "a FIFO"), (&link, "a symbolic link")] {
        let mut child = w
            .fake_pi(&repo_cassette("recorded/text_only.pi87.cassette.jsonl"))
            .env("FAKE_PI_REPORT", report)
            .args([
                "--mode",
                "json",
                "--provider",
                "fake",
                "--model",
                "other-model",
                "hi",
            ])
            .spawn()
            .unwrap();
        let mut status = None;
        let end = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while status.is_none() && std::time::Instant::now() < end {
            status = child.try_wait().unwrap();
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        if status.is_none() {
            let _ = child.kill();
        }
        let out = child.wait_with_output().unwrap();
        assert!(status.is_some(), "{kind}: fake-pi did not end");
        assert_eq!(out.status.code(), Some(99), "{kind}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.starts_with("fake-pi: expectation mismatch: "),
            "{kind}: {stderr}"
        );
        assert!(
            stderr.ends_with(&format!(
                "fake-pi: FAKE_PI_REPORT {}: cannot append the report: {kind}, not a regular file\n",
                report.display()
            )),
            "{kind}: {stderr}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(&victim).unwrap(),
        "the user's file\n"
    );
    w.assert_none_left();
}
