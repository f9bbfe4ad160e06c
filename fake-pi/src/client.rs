//! The client of an RPC replay (a version 2 cassette): what it writes on stdin, when it
//! closes stdin, the signals it sends, checked against what the recording's client did.
//!
//! A thread reads stdin line by line from the start, so a client never blocks on a full
//! pipe and commands sent early wait in order. The replay asks for the next client action
//! when it reaches a client record ([`Client::expect`]): it blocks until the client does
//! something (pi, idle, waits as long; `FAKE_PI_RPC_WAIT_MS` bounds the wait), and the
//! time the action arrived is when the records after it are timed from. A signal is the
//! client's action only while the replay waits at a `client_signal` record for that
//! signal ([`take_awaited`]); at any other time fake-pi answers it as pi does (the
//! cassette's `process` section), which is also what pi does when the client signals
//! sooner than the recording's client did.

use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use pi_cassette::two_way::{self, excerpt};
use pi_cassette::ActionRef;

/// What the client did, and when.
enum Event {
    Line(Vec<u8>, Instant),
    Eof(Instant),
    Signal(Instant),
}

/// The signal the replay waits for at a `client_signal` record (0: none).
static AWAITED: AtomicI32 = AtomicI32::new(0);
static FORWARD: OnceLock<Mutex<Sender<Event>>> = OnceLock::new();

/// Called by the signal thread: true when `sig` is the client action the replay waits
/// for (it is handed over and must not be answered otherwise).
pub fn take_awaited(sig: Signal) -> bool {
    if AWAITED
        .compare_exchange(sig as i32, 0, Ordering::SeqCst, Ordering::SeqCst)
        .is_err()
    {
        return false;
    }
    FORWARD.get().is_some_and(|tx| {
        tx.lock()
            .unwrap_or_else(|e| e.into_inner())
            .send(Event::Signal(Instant::now()))
            .is_ok()
    })
}

/// The client side of one replay.
pub struct Client {
    rx: Receiver<Event>,
    /// The `id` the client sent with each of its lines so far (JSON text), in order.
    ids: Vec<Option<String>>,
    wait: Option<Duration>,
    closed: bool,
    protocol: two_way::Protocol,
}

impl Client {
    /// Start reading stdin. `wait` bounds each wait for the client (`None`: as long as it
    /// takes, as pi waits).
    pub fn start(wait: Option<Duration>, protocol: two_way::Protocol) -> std::io::Result<Client> {
        let (tx, rx) = mpsc::channel();
        let _ = FORWARD.set(Mutex::new(tx.clone()));
        std::thread::Builder::new()
            .name("fake-pi-stdin".into())
            .spawn(move || read_stdin(tx))?;
        Ok(Client {
            rx,
            ids: Vec::new(),
            wait,
            closed: false,
            protocol,
        })
    }

    /// The protocol the client speaks (how its ids are read and echoed).
    pub fn protocol(&self) -> two_way::Protocol {
        self.protocol
    }

    /// The `id` the client sent with its `k`-th line (0-based), when it sent one.
    pub fn id_for(&self, k: u32) -> Option<&str> {
        self.ids.get(k as usize).and_then(|i| i.as_deref())
    }

    /// Wait for the client action `action` (a client record) and check it. Ok: when it
    /// arrived. Err: one line per way the client did something else.
    pub fn expect(&mut self, action: &ActionRef<'_>) -> Result<Instant, Vec<String>> {
        let wanted = describe(action);
        if self.closed && !matches!(action, ActionRef::ClientSignal(_)) {
            return Err(vec![format!(
                "the client closed stdin earlier; expected {wanted}"
            )]);
        }
        if let ActionRef::ClientSignal(name) = action {
            let sig: Signal = name.parse().map_err(|_| vec![format!("unknown {name}")])?;
            AWAITED.store(sig as i32, Ordering::SeqCst);
        }
        loop {
            let event = match self.next(&wanted) {
                Ok(e) => e,
                Err(e) => {
                    AWAITED.store(0, Ordering::SeqCst);
                    return Err(e);
                }
            };
            let outcome = match (action, event) {
                (ActionRef::Stdin(line), Event::Line(got, at)) => {
                    two_way::match_line(self.protocol, line, &got).map(|m| (m.id, at))
                }
                (ActionRef::StdinText(text), Event::Line(got, at)) => {
                    two_way::match_text(text, &got).map(|m| (m.id, at))
                }
                (ActionRef::StdinClose, Event::Eof(at)) => return Ok(at),
                (ActionRef::ClientSignal(_), Event::Signal(at)) => return Ok(at),
                // Stdin closing while the replay waits for a signal: pi is shutting down
                // too; the signal decides.
                (ActionRef::ClientSignal(_), Event::Eof(_)) => continue,
                (_, Event::Line(got, _)) => {
                    AWAITED.store(0, Ordering::SeqCst);
                    return Err(vec![format!(
                        "the client sent the line {}; expected {wanted}",
                        excerpt(&got)
                    )]);
                }
                (_, Event::Eof(_)) => {
                    return Err(vec![format!("the client closed stdin; expected {wanted}")])
                }
                (_, Event::Signal(_)) => {
                    return Err(vec![format!("the client sent a signal; expected {wanted}")])
                }
            };
            return match outcome {
                Ok((id, at)) => {
                    self.ids.push(id);
                    Ok(at)
                }
                // A field names what differs; the recorded line shows the rest.
                Err(differences) => Err(differences
                    .iter()
                    .map(|d| match d.field {
                        Some(_) => format!("{d} (recorded: {wanted})"),
                        None => d.to_string(),
                    })
                    .collect()),
            };
        }
    }

    fn next(&mut self, wanted: &str) -> Result<Event, Vec<String>> {
        let event = match self.wait {
            None => self.rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
            Some(d) => self.rx.recv_timeout(d),
        };
        match event {
            Ok(e) => {
                if let Event::Eof(_) = e {
                    self.closed = true;
                }
                Ok(e)
            }
            Err(RecvTimeoutError::Timeout) => Err(vec![format!(
                "nothing came from the client in {} ms (FAKE_PI_RPC_WAIT_MS); expected {wanted}",
                self.wait.unwrap_or_default().as_millis()
            )]),
            Err(RecvTimeoutError::Disconnected) => {
                Err(vec![format!("the client closed stdin; expected {wanted}")])
            }
        }
    }
}

/// A client record, for a message.
fn describe(action: &ActionRef<'_>) -> String {
    match action {
        ActionRef::Stdin(line) => format!("the line {}", line.json),
        ActionRef::StdinText(t) => format!("the line {}", excerpt(t.as_bytes())),
        ActionRef::StdinClose => "stdin to be closed".into(),
        ActionRef::ClientSignal(s) => format!("the signal {s}"),
        _ => "nothing".into(),
    }
}

fn read_stdin(tx: Sender<Event>) {
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let mut line = Vec::new();
    loop {
        line.clear();
        match input.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => {
                let _ = tx.send(Event::Eof(Instant::now()));
                return;
            }
            Ok(_) => {
                if line.last() == Some(&b'\n') {
                    line.pop();
                }
                if tx
                    .send(Event::Line(std::mem::take(&mut line), Instant::now()))
                    .is_err()
                {
                    return;
                }
            }
        }
    }
}

/// Where `request` records go on replay (`FAKE_PI_REQUEST_LOG`), one JSON line each, so a
/// test can check what the model would have been sent.
pub struct RequestLog(Option<std::fs::File>);

impl RequestLog {
    pub fn open(path: Option<&str>) -> std::io::Result<RequestLog> {
        match path {
            None => Ok(RequestLog(None)),
            Some(p) => std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .map(|f| RequestLog(Some(f))),
        }
    }

    pub fn write(&mut self, request: &str) -> std::io::Result<()> {
        match &mut self.0 {
            Some(f) => writeln!(f, "{request}"),
            None => Ok(()),
        }
    }
}
