//! The client of a two-way replay (a version 2 cassette: pi's RPC mode, Claude Code's
//! stream-json): what it writes on stdin, when it closes stdin, the signals it sends,
//! checked against what the recording's client did.
//!
//! A thread reads stdin line by line from the start, so a client never blocks on a full
//! pipe and lines sent early wait in order. The replay asks for the next client action
//! when it reaches a client record ([`Client::expect`]): it blocks until the client does
//! something (pi, idle, waits as long; `FAKE_PI_RPC_WAIT_MS` bounds it), and what follows
//! is timed from when the action arrived. A signal is the client's action when the replay
//! waits at a `client_signal` record for it, and also when it comes early but is the
//! client's next action, or the one after the line the replay waits for (a client that
//! writes a line and signals at once: [`take_awaited`]); the records before it then play
//! as recorded, as they do for a line sent early. Any other signal fake-pi answers as pi
//! does (the cassette's `process` section).

use std::io::{BufRead, Read, Write};
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
    /// A line longer than this many bytes (the reader's line limit): not read further.
    TooLong(usize),
}

/// The signal the replay waits for at a `client_signal` record (0: none).
static AWAITED: AtomicI32 = AtomicI32::new(0);
/// The signal of the next client action, when that action is a `client_signal` (0: none):
/// a client that sends it before the replay reached the record has done that action early
/// (the records before it then play as recorded, as for a line sent early).
static NEXT: AtomicI32 = AtomicI32::new(0);
static FORWARD: OnceLock<Mutex<Sender<Event>>> = OnceLock::new();

/// Called by the signal thread: true when `sig` is the client action the replay waits
/// for (it is handed over and must not be answered otherwise).
pub(crate) fn take_awaited(sig: Signal) -> bool {
    let take = |slot: &AtomicI32| {
        slot.compare_exchange(sig as i32, 0, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
    };
    if !(take(&AWAITED) || take(&NEXT)) {
        return false;
    }
    NEXT.store(0, Ordering::SeqCst);
    FORWARD.get().is_some_and(|tx| {
        tx.lock()
            .unwrap_or_else(|e| e.into_inner())
            .send(Event::Signal(Instant::now()))
            .is_ok()
    })
}

/// The client side of one replay.
pub(crate) struct Client {
    rx: Receiver<Event>,
    /// The `id` the client sent with each of its lines so far (JSON text), in order.
    ids: Vec<Option<String>>,
    wait: Option<Duration>,
    closed: bool,
    protocol: two_way::Protocol,
    /// Per client action of the cassette, in order: its signal when it is a
    /// `client_signal`; and how many actions were done.
    ahead: Vec<Option<Signal>>,
    done: usize,
    /// The next action's signal, sent while the replay still waited for the action before
    /// it (a line the client wrote just before signalling): when it came.
    early_signal: Option<Instant>,
}

impl Client {
    /// Start reading stdin. `wait` bounds each wait for the client (`None`: as long as it
    /// takes, as pi waits).
    /// `ahead`: the cassette's client actions in order, `Some(signal)` for a
    /// `client_signal` (see [`client_signals`]). `stdin`: read stdin (not when it is a
    /// terminal the CLI never reads: then the client acts by signals only).
    pub(crate) fn start(
        wait: Option<Duration>,
        protocol: two_way::Protocol,
        ahead: Vec<Option<Signal>>,
        stdin: bool,
    ) -> std::io::Result<Client> {
        let (tx, rx) = mpsc::channel();
        let _ = FORWARD.set(Mutex::new(tx.clone()));
        if stdin {
            crate::signals::spawn_thread("fake-pi-stdin", move || read_stdin(tx))?;
        }
        Ok(Client {
            rx,
            ids: Vec::new(),
            wait,
            closed: false,
            protocol,
            ahead,
            done: 0,
            early_signal: None,
        })
        .inspect(Client::arm_next)
    }

    /// Let the signal thread take the signal of the next client action, or of the one after
    /// it (a client that writes a line and signals at once), when one is a signal.
    fn arm_next(&self) {
        let next = (self.done..self.done + 2).find_map(|k| self.ahead.get(k).copied().flatten());
        NEXT.store(next.map_or(0, |s| s as i32), Ordering::SeqCst);
    }

    /// The protocol the client speaks (how its ids are read and echoed).
    pub(crate) fn protocol(&self) -> two_way::Protocol {
        self.protocol
    }

    /// The `id` the client sent with its `k`-th line (0-based), when it sent one.
    pub(crate) fn id_for(&self, k: u32) -> Option<&str> {
        self.ids.get(k as usize).and_then(|i| i.as_deref())
    }

    /// Wait for the client action `action` (a client record) and check it. Ok: when it
    /// arrived. Err: one line per way the client did something else.
    pub(crate) fn expect(&mut self, action: &ActionRef<'_>) -> Result<Instant, Vec<String>> {
        let result = self.expect_one(action);
        if result.is_ok() {
            self.done += 1;
            self.arm_next();
        }
        result
    }

    fn expect_one(&mut self, action: &ActionRef<'_>) -> Result<Instant, Vec<String>> {
        let wanted = describe(action);
        if self.closed && !matches!(action, ActionRef::ClientSignal(_)) {
            return Err(vec![format!(
                "the client closed stdin earlier; expected {wanted}"
            )]);
        }
        if let ActionRef::ClientSignal(name) = action {
            if let Some(at) = self.early_signal.take() {
                return Ok(at);
            }
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
                (_, Event::TooLong(max)) => {
                    AWAITED.store(0, Ordering::SeqCst);
                    return Err(vec![format!(
                        "the client sent a line longer than {max} bytes (the limit; raise it with {}=BYTES); expected {wanted}",
                        pi_cassette::input::MAX_LINE_ENV
                    )]);
                }
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
                // The following action's signal, sent right after this action's line: kept
                // for that action (only an armed signal reaches the channel).
                (_, Event::Signal(at))
                    if self.early_signal.is_none()
                        && self.ahead.get(self.done + 1).copied().flatten().is_some() =>
                {
                    self.early_signal = Some(at);
                    continue;
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

/// The client actions of the two-way cassette `file` (at `path`), in order: `Some(signal)`
/// for a `client_signal`. Read from the file's start; the caller reads it again to replay.
pub(crate) fn client_signals(
    path: &std::path::Path,
    file: &std::fs::File,
) -> Result<Vec<Option<Signal>>, pi_cassette::CassetteError> {
    let mut reader = crate::source::from_start(path, file)?;
    let mut out = Vec::new();
    while let Some(record) = reader.next_ref() {
        match record?.action {
            ActionRef::ClientSignal(name) => out.push(name.parse().ok()),
            ActionRef::Stdin(_) | ActionRef::StdinText(_) | ActionRef::StdinClose => out.push(None),
            _ => {}
        }
    }
    Ok(out)
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
    // A client line is held whole only up to the reader's line limit.
    let max = pi_cassette::Limits::from_env().max_line_bytes;
    loop {
        line.clear();
        match (&mut input)
            .take(max as u64 + 1)
            .read_until(b'\n', &mut line)
        {
            Ok(0) | Err(_) => {
                let _ = tx.send(Event::Eof(Instant::now()));
                return;
            }
            Ok(_) => {
                if line.last() == Some(&b'\n') {
                    line.pop();
                } else if line.len() > max {
                    let _ = tx.send(Event::TooLong(max));
                    return;
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
pub(crate) struct RequestLog(Option<std::fs::File>);

impl RequestLog {
    pub(crate) fn open(path: Option<&str>) -> std::io::Result<RequestLog> {
        match path {
            None => Ok(RequestLog(None)),
            Some(p) => std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .map(|f| RequestLog(Some(f))),
        }
    }

    pub(crate) fn write(&mut self, request: &str) -> std::io::Result<()> {
        match &mut self.0 {
            Some(f) => writeln!(f, "{request}"),
            None => Ok(()),
        }
    }
}
