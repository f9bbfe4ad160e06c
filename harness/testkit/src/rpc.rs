//! A client that does what a two-way cassette's client did: it drives a process speaking
//! pi's RPC mode (fake-pi on that cassette, or real pi) by writing each recorded client
//! line once every stdout line recorded before it has arrived, closing stdin and sending
//! signals at the same points, and collects what the process wrote.
//!
//! The ids it sends are its own (`rpc-0`, `rpc-1`, ... by default), so a replay that only
//! echoed the recorded ids would fail; [`Driven::expected`] is the recorded stdout with
//! the responses carrying these ids.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use pi_cassette::{two_way, Action, Cassette, Record};
use serde_json::Value;

/// What a driven run produced.
#[derive(Debug)]
pub struct Driven {
    /// Everything the process wrote on stdout.
    pub stdout: Vec<u8>,
    /// What the cassette says it should have written, with the client's ids.
    pub expected: Vec<u8>,
    /// Everything the process wrote on stderr.
    pub stderr: Vec<u8>,
    /// How the process ended.
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
///
/// ```no_run
/// use pi_testkit::{rpc, World};
///
/// let world = World::new("rpc");
/// let path = world.path().join("session.cassette.jsonl"); // a two-way cassette
/// let cassette = pi_cassette::Cassette::load(&path).unwrap();
/// let mut cmd = world.fake_pi(&path);
/// cmd.args(["--mode", "rpc"]);
/// let run = rpc::drive(cmd, &cassette);
/// assert_eq!(run.stdout, run.expected);
/// world.assert_none_left();
/// ```
pub fn drive(mut cmd: Command, cassette: &Cassette) -> Driven {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("the process under test starts");
    let mut stderr = child.stderr.take().expect("piped");
    let err_thread = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = stderr.read_to_end(&mut v);
        v
    });
    let mut client = Client {
        pid: child.id() as i32,
        stdin: child.stdin.take(),
        output: Output::read(child.stdout.take().expect("piped")),
        expected: Vec::new(),
        expected_lines: 0,
        ids: Vec::new(),
        sent: Vec::new(),
    };
    for r in &cassette.records {
        client.follow(r);
    }
    client.output.read_rest(&mut child);
    drop(client.stdin.take());
    let status = child.wait().expect("the process is waited for");
    let _ = client.output.thread.join();
    let stderr = err_thread.join().unwrap_or_default();
    Driven {
        stdout: client.output.got,
        expected: client.expected,
        stderr,
        status,
        sent: client.sent,
    }
}

/// The process's stdout, read line by line on a thread of its own.
struct Output {
    rx: mpsc::Receiver<Vec<u8>>,
    thread: std::thread::JoinHandle<()>,
    /// What arrived so far.
    got: Vec<u8>,
    /// How many lines of it.
    lines: usize,
}

impl Output {
    /// Start reading `stdout`.
    fn read(stdout: ChildStdout) -> Output {
        let (tx, rx) = mpsc::channel::<Vec<u8>>();
        let thread = std::thread::spawn(move || {
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
        Output {
            rx,
            thread,
            got: Vec::new(),
            lines: 0,
        }
    }

    /// Wait until `n` lines have arrived; panics, naming the cassette `line` of the client
    /// action that waits, after [`PATIENCE`].
    fn wait_for(&mut self, n: usize, line: usize) {
        let deadline = Instant::now() + PATIENCE;
        while self.lines < n {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(l) => {
                    self.got.extend_from_slice(&l);
                    self.lines += 1;
                }
                Err(_) => panic!(
                    "cassette line {line}: the process wrote {} of the {n} stdout lines recorded before this client action:\n{}",
                    self.lines,
                    String::from_utf8_lossy(&self.got)
                ),
            }
        }
    }

    /// The rest of stdout, to its end; kills `child` and panics when it does not close
    /// stdout within [`PATIENCE`].
    fn read_rest(&mut self, child: &mut Child) {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(l) => self.got.extend_from_slice(&l),
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    let _ = child.kill();
                    panic!(
                        "the process did not close stdout within {PATIENCE:?} after the last client action"
                    );
                }
            }
        }
    }
}

/// The client's side of a driven run.
struct Client {
    pid: i32,
    /// The process's stdin, until the cassette's client closed it.
    stdin: Option<ChildStdin>,
    output: Output,
    /// The recorded stdout so far, with this client's ids in the responses.
    expected: Vec<u8>,
    /// How many stdout lines that is.
    expected_lines: usize,
    /// The id this client sent with each of its lines (`None`: the line had none).
    ids: Vec<Option<String>>,
    /// The lines it wrote.
    sent: Vec<String>,
}

impl Client {
    /// Do what record `r` says: note a recorded stdout line, or, once every stdout line
    /// recorded before it has arrived, write a line, close stdin or send a signal.
    fn follow(&mut self, r: &Record) {
        match &r.action {
            Action::Stdout(b) => {
                match r.reply {
                    Some(k) => {
                        let newline = b.data.ends_with(b"\n");
                        let body = b.data.strip_suffix(b"\n").unwrap_or(&b.data);
                        let id = self.ids.get(k as usize).cloned().flatten();
                        self.expected
                            .extend_from_slice(&two_way::with_id(body, id.as_deref()));
                        if newline {
                            self.expected.push(b'\n');
                        }
                    }
                    None => self.expected.extend_from_slice(&b.data),
                }
                self.expected_lines += 1;
            }
            Action::Stdin(line) => {
                self.output.wait_for(self.expected_lines, r.line);
                let mut v: Value = serde_json::from_str(&line.json).expect("a recorded JSON line");
                let k = self.ids.len();
                let id = match v.get_mut("id") {
                    Some(slot) => {
                        let own = own_id(k);
                        *slot = serde_json::from_str(&own).expect("an id is JSON");
                        Some(own)
                    }
                    None => None,
                };
                self.ids.push(id);
                let text = v.to_string();
                write_line(self.stdin.as_mut(), &text, r.line);
                self.sent.push(text);
            }
            Action::StdinText(t) => {
                self.output.wait_for(self.expected_lines, r.line);
                self.ids.push(None);
                write_line(self.stdin.as_mut(), t, r.line);
                self.sent.push(t.clone());
            }
            Action::StdinClose => {
                self.output.wait_for(self.expected_lines, r.line);
                drop(self.stdin.take());
            }
            Action::ClientSignal(name) => {
                self.output.wait_for(self.expected_lines, r.line);
                let sig: nix::sys::signal::Signal = name.parse().expect("a signal name");
                let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.pid), sig);
            }
            _ => {}
        }
    }
}

/// Write `text` and a newline to the process; panics (naming the cassette `line`) when its
/// stdin was closed before.
fn write_line(stdin: Option<&mut ChildStdin>, text: &str, line: usize) {
    let w = stdin
        .unwrap_or_else(|| panic!("cassette line {line}: a client line after stdin was closed"));
    // A process that exits before reading it is judged by its output, not here.
    let _ = w.write_all(text.as_bytes());
    let _ = w.write_all(b"\n");
    let _ = w.flush();
}
