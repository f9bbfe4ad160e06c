//! A client that does what a two-way cassette's client did: it drives a process speaking
//! pi's RPC mode (fake-pi on that cassette, or real pi) by writing each recorded client
//! line once every stdout line recorded before it has arrived, closing stdin and sending
//! signals at the same points, and collects what the process wrote.
//!
//! The ids it sends are its own (`rpc-0`, `rpc-1`, ... by default), so a replay that only
//! echoed the recorded ids would fail; [`Driven::expected`] is the recorded stdout with
//! the responses carrying these ids.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use pi_cassette::{two_way, Action, Cassette};
use serde_json::Value;

/// What a driven run produced.
#[derive(Debug)]
pub struct Driven {
    /// Everything the process wrote on stdout.
    pub stdout: Vec<u8>,
    /// What the cassette says it should have written, with the client's ids.
    pub expected: Vec<u8>,
    pub stderr: Vec<u8>,
    pub status: ExitStatus,
    /// The lines the client wrote, in order.
    pub sent: Vec<String>,
}

/// The id this client sends with its `k`-th line when the recorded line had one.
pub fn own_id(k: usize) -> String {
    format!("\"rpc-{k}\"")
}

/// How long to wait for any one thing before failing the test.
const PATIENCE: Duration = Duration::from_secs(30);

/// Start `cmd` (stdin, stdout and stderr are piped here) and drive it as `cassette`'s
/// client did. Panics with a message naming the cassette line when the process does not
/// write what comes before a client action within 30 s.
pub fn drive(mut cmd: Command, cassette: &Cassette) -> Driven {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("the process under test starts");
    let pid = child.id() as i32;
    let mut stdin = child.stdin.take();
    let stdout = child.stdout.take().expect("piped");
    let mut stderr = child.stderr.take().expect("piped");
    let (tx, rx) = mpsc::channel::<Vec<u8>>();
    let out_thread = std::thread::spawn(move || {
        let mut r = BufReader::new(stdout);
        loop {
            let mut line = Vec::new();
            match r.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {
                    if tx.send(line).is_err() {
                        return;
                    }
                }
            }
        }
    });
    let err_thread = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = stderr.read_to_end(&mut v);
        v
    });

    let mut got: Vec<u8> = Vec::new();
    let mut got_lines = 0usize;
    let mut expected: Vec<u8> = Vec::new();
    let mut expected_lines = 0usize;
    let mut ids: Vec<Option<String>> = Vec::new();
    let mut sent = Vec::new();
    let wait_for = |n: usize, got: &mut Vec<u8>, got_lines: &mut usize, line: usize| {
        let deadline = Instant::now() + PATIENCE;
        while *got_lines < n {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(l) => {
                    got.extend_from_slice(&l);
                    *got_lines += 1;
                }
                Err(_) => panic!(
                    "cassette line {line}: the process wrote {} of the {n} stdout lines recorded before this client action:\n{}",
                    got_lines,
                    String::from_utf8_lossy(got)
                ),
            }
        }
    };
    for r in &cassette.records {
        match &r.action {
            Action::Stdout(b) => {
                match r.reply {
                    Some(k) => {
                        let newline = b.data.ends_with(b"\n");
                        let body = b.data.strip_suffix(b"\n").unwrap_or(&b.data);
                        let id = ids.get(k as usize).cloned().flatten();
                        expected.extend_from_slice(&two_way::with_id(body, id.as_deref()));
                        if newline {
                            expected.push(b'\n');
                        }
                    }
                    None => expected.extend_from_slice(&b.data),
                }
                expected_lines += 1;
            }
            Action::Stdin(line) => {
                wait_for(expected_lines, &mut got, &mut got_lines, r.line);
                let mut v: Value = serde_json::from_str(&line.json).expect("a recorded JSON line");
                let k = ids.len();
                let id = match v.get_mut("id") {
                    Some(slot) => {
                        let own = own_id(k);
                        *slot = serde_json::from_str(&own).expect("an id is JSON");
                        Some(own)
                    }
                    None => None,
                };
                ids.push(id);
                let text = v.to_string();
                write_line(stdin.as_mut(), &text, r.line);
                sent.push(text);
            }
            Action::StdinText(t) => {
                wait_for(expected_lines, &mut got, &mut got_lines, r.line);
                ids.push(None);
                write_line(stdin.as_mut(), t, r.line);
                sent.push(t.clone());
            }
            Action::StdinClose => {
                wait_for(expected_lines, &mut got, &mut got_lines, r.line);
                drop(stdin.take());
            }
            Action::ClientSignal(name) => {
                wait_for(expected_lines, &mut got, &mut got_lines, r.line);
                let sig: nix::sys::signal::Signal = name.parse().expect("a signal name");
                let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), sig);
            }
            _ => {}
        }
    }
    // The rest of stdout, to its end.
    let deadline = Instant::now() + PATIENCE;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(l) => got.extend_from_slice(&l),
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let _ = child.kill();
                panic!(
                    "the process did not close stdout within {PATIENCE:?} after the last client action"
                );
            }
        }
    }
    drop(stdin);
    let status = child.wait().expect("the process is waited for");
    let _ = out_thread.join();
    let stderr = err_thread.join().unwrap_or_default();
    Driven {
        stdout: got,
        expected,
        stderr,
        status,
        sent,
    }
}

fn write_line(stdin: Option<&mut std::process::ChildStdin>, text: &str, line: usize) {
    let w = stdin
        .unwrap_or_else(|| panic!("cassette line {line}: a client line after stdin was closed"));
    // A process that exits before reading it is judged by its output, not here.
    let _ = w.write_all(text.as_bytes());
    let _ = w.write_all(b"\n");
    let _ = w.flush();
}
