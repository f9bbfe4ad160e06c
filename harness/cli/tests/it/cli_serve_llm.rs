//! `pi-harness serve-llm` as a real process: user errors are one line and exit 2, a closed
//! stdout ends it quietly, SIGTERM stops it; every process carries the world's marker and
//! none is left behind.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use pi_testkit::World;

use crate::util::bin;

/// `pi-harness serve-llm ARGS` with the world's marker and no backtrace asked for.
fn serve_llm(w: &World, args: &[&str]) -> Command {
    let (k, v) = w.marker_env();
    let mut c = Command::new(bin());
    c.arg("serve-llm")
        .args(args)
        .env(k, v)
        .env_remove("RUST_BACKTRACE")
        .env_remove("RUST_LIB_BACKTRACE")
        .stdin(Stdio::null());
    c
}

/// Wait (bounded) for a child; kill it on the deadline and fail.
fn wait_exit(p: &mut Child, within: Duration) -> std::process::ExitStatus {
    let end = Instant::now() + within;
    loop {
        if let Some(status) = p.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > end {
            let _ = p.kill();
            let _ = p.wait();
            panic!("pi-harness serve-llm did not exit");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Run to the end (bounded); the exit code, stdout and the stderr lines.
fn run(mut c: Command) -> (Option<i32>, String, Vec<String>) {
    let mut p = c
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let status = wait_exit(&mut p, Duration::from_secs(30));
    let mut out = String::new();
    p.stdout.take().unwrap().read_to_string(&mut out).unwrap();
    let mut err = String::new();
    p.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    (
        status.code(),
        out,
        err.lines().map(str::to_string).collect(),
    )
}

fn assert_one_error_line(code: Option<i32>, out: &str, err: &[String]) -> String {
    assert_eq!(code, Some(2), "stderr: {err:#?}");
    assert!(out.is_empty(), "stdout: {out:?}");
    assert_eq!(err.len(), 1, "expected one line: {err:#?}");
    assert!(err[0].starts_with("error: "), "{err:?}");
    assert!(!err[0].contains("panicked"), "{err:?}");
    err[0].clone()
}

#[test]
fn a_bad_script_is_one_error_line_and_exit_2() {
    let w = World::new("serve-llm-bad-script");
    let bad = w.write("bad.json", r#"{"turns":[{"status":200}]}"#);
    let (code, out, err) = run(serve_llm(&w, &["--script", bad.to_str().unwrap()]));
    let line = assert_one_error_line(code, &out, &err);
    assert_eq!(
        line,
        format!(
            "error: {}: turns[0].status: 200 is not an HTTP error status (use 4xx or 5xx; omit it for a stream)",
            bad.display()
        )
    );
    let missing = w.path().join("missing.json");
    let (code, out, err) = run(serve_llm(&w, &["--script", missing.to_str().unwrap()]));
    let line = assert_one_error_line(code, &out, &err);
    assert!(
        line.starts_with(&format!("error: {}: cannot read: ", missing.display())),
        "{line}"
    );
    w.assert_none_left();
}

#[test]
fn a_port_that_cannot_be_bound_is_one_error_line_and_exit_2() {
    let w = World::new("serve-llm-port");
    let script = w.write("s.json", r#"{"turns":[{"text":["ok"]}]}"#);
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let (code, out, err) = run(serve_llm(
        &w,
        &["--script", script.to_str().unwrap(), "--port", &port],
    ));
    let line = assert_one_error_line(code, &out, &err);
    assert!(
        line.starts_with(&format!("error: cannot listen on 127.0.0.1:{port}: ")),
        "{line}"
    );
    // A request log that cannot be opened, likewise.
    let log = w.path().join("no-such-dir").join("log.jsonl");
    let (code, out, err) = run(serve_llm(
        &w,
        &[
            "--script",
            script.to_str().unwrap(),
            "--log",
            log.to_str().unwrap(),
        ],
    ));
    let line = assert_one_error_line(code, &out, &err);
    assert!(
        line.starts_with(&format!(
            "error: cannot open the request log {}: ",
            log.display()
        )),
        "{line}"
    );
    w.assert_none_left();
}

#[test]
fn a_closed_stdout_exits_0_quietly() {
    let w = World::new("serve-llm-epipe");
    let script = w.write("s.json", r#"{"turns":[{"text":["ok"]}]}"#);
    // stdout is a pipe nobody reads: its read end is closed before the server starts. Both
    // ends close on exec: a process another test starts meanwhile must not keep the read
    // end open (the server would then write into a pipe with a reader and never stop).
    let (read_end, write_end) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).unwrap();
    drop(read_end);
    let mut c = serve_llm(&w, &["--script", script.to_str().unwrap()]);
    let mut p = c
        .stdout(Stdio::from(write_end))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(c);
    let status = wait_exit(&mut p, Duration::from_secs(30));
    let mut err = String::new();
    p.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert_eq!(status.code(), Some(0), "stderr: {err}");
    assert!(err.is_empty(), "nothing on stderr, no panic: {err}");
    w.assert_none_left();
}

#[test]
fn serves_until_sigterm_and_exits_0() {
    let w = World::new("serve-llm-sigterm");
    let script = w.write("s.json", r#"{"turns":[{"text":["Hello"]}]}"#);
    let log = w.path().join("requests.jsonl");
    let mut p = serve_llm(
        &w,
        &[
            "--script",
            script.to_str().unwrap(),
            "--log",
            log.to_str().unwrap(),
        ],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let mut url = String::new();
    BufReader::new(p.stdout.take().unwrap())
        .read_line(&mut url)
        .unwrap();
    let addr = url
        .trim()
        .strip_prefix("http://")
        .unwrap_or_else(|| panic!("not a URL: {url:?}"))
        .to_string();
    let body =
        r#"{"model":"fake-model","stream":true,"messages":[{"role":"user","content":"hi"}]}"#;
    let mut s = std::net::TcpStream::connect(&addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "POST /v1/chat/completions HTTP/1.1\r\nHost: {addr}\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    assert!(reply.starts_with("HTTP/1.1 200 OK\r\n"), "{reply}");
    assert!(reply.contains(r#""content":"Hello""#) && reply.contains("data: [DONE]"));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(p.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let status = wait_exit(&mut p, Duration::from_secs(30));
    let mut err = String::new();
    p.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert_eq!(status.code(), Some(0), "stderr: {err}");
    assert!(err.is_empty(), "{err}");
    let logged = std::fs::read_to_string(&log).unwrap();
    assert_eq!(logged.lines().count(), 1, "{logged}");
    w.assert_none_left();
}
