//! Replaying a cassette's records in time, streamed from the file.
//!
//! Each record waits `dt_ms / speed` after the previous one (measured against one start
//! time, so small sleeps do not add up to drift), then acts. Records are read one at a
//! time ([`CassetteReader::next_ref`]: a `stdout` JSON payload is not copied out of the
//! line it was read from), so memory is bounded by the longest line, not by the file.
//!
//! Stdout is written in batches: records that are already due (at `FAKE_PI_SPEED=0`, all
//! of them) are gathered into one buffer, written with one `write` when the next record is
//! not due yet (before sleeping), when the buffer holds [`BATCH`] bytes, before anything
//! goes to stderr (so the order of the two streams is kept), before a child is started or
//! the session file is written, and before the ending (`exit`, `signal`, `hang`). So every
//! record still reaches the reader when its time comes. Stderr is written at once, with no
//! buffering. When stdout's reader has gone (EPIPE or any other write error on stdout),
//! fake-pi stops quietly with exit status 141 (128 + SIGPIPE, what a shell shows for a
//! program killed by SIGPIPE) and leaves its children alone.

use std::fs::File;
use std::io::{BufRead, Write};
use std::mem::ManuallyDrop;
use std::os::fd::FromRawFd;
use std::path::Path;
use std::str::FromStr;
use std::time::{Duration, Instant};

use std::borrow::Cow;
use std::ops::ControlFlow::{self, Break, Continue};

use nix::sys::signal::Signal;
use pi_cassette::{ActionRef, CassetteError, CassetteReader, Form, Spawn};

use crate::session::{Session, SessionMeta};
use crate::values::Values;
use crate::{child, exit, signals};

/// Stdout bytes gathered before one `write` (more when one record is longer).
pub(crate) const BATCH: usize = 128 << 10;

/// How fast to replay.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Speed {
    /// No waiting at all (`FAKE_PI_SPEED=0`).
    Instant,
    /// Recorded delays divided by this factor (`1` = as recorded).
    Factor(f64),
}

/// The slowest replay: a million times slower than recorded.
pub(crate) const MIN_SPEED: f64 = 1e-6;

impl Speed {
    /// Parse `FAKE_PI_SPEED` (absent = 1).
    pub(crate) fn parse(value: Option<&str>) -> Result<Speed, String> {
        let Some(text) = value else {
            return Ok(Speed::Factor(1.0));
        };
        match text.trim().parse::<f64>() {
            Ok(0.0) => Ok(Speed::Instant),
            Ok(v) if v.is_finite() && v >= MIN_SPEED => Ok(Speed::Factor(v)),
            _ => Err(format!(
                "FAKE_PI_SPEED={text:?}: expected 0 (instant) or a number from {MIN_SPEED} up (1 = recorded timing, 10 = ten times faster)"
            )),
        }
    }

    fn scale(self, ms: f64) -> Duration {
        match self {
            Speed::Instant => Duration::ZERO,
            // The reader caps a delay at 1e9 ms and parse caps the slow-down at
            // 1/MIN_SPEED, so this fits; saturate rather than trust it.
            Speed::Factor(f) => {
                Duration::try_from_secs_f64(ms / f / 1000.0).unwrap_or(Duration::MAX)
            }
        }
    }
}

/// fd 1 / fd 2 as unbuffered files that are never closed.
fn fd(n: i32) -> ManuallyDrop<File> {
    // SAFETY: fds 1 and 2 belong to the process for its whole life; ManuallyDrop never closes them.
    ManuallyDrop::new(unsafe { File::from_raw_fd(n) })
}

/// What replay does besides writing the records: the session (its `session` line and its
/// file) and the realistic values for placeholders.
pub(crate) struct Hooks {
    pub(crate) session: Session,
    pub(crate) meta: SessionMeta,
    pub(crate) values: Option<Values>,
    /// The id the recording's `session` line shows, when concrete.
    pub(crate) recorded_session_id: Option<String>,
    /// The `session` line was written (or is to be left as recorded).
    pub(crate) session_line_done: bool,
    /// A two-way (RPC) replay: the client whose lines are checked and whose ids are echoed.
    pub(crate) client: Option<crate::client::Client>,
    /// Where `request` records go (`FAKE_PI_REQUEST_LOG`).
    pub(crate) requests: crate::client::RequestLog,
}

impl Hooks {
    /// Append the bytes to write for a recorded stdout payload (`body`, then `\n` when
    /// `newline`) to `out`.
    fn stdout_into(&mut self, body: &[u8], newline: bool, out: &mut Vec<u8>) {
        if !self.session_line_done && body.starts_with(b"{\"type\":\"session\"") {
            let mut data = body.to_vec();
            if newline {
                data.push(b'\n');
            }
            out.extend_from_slice(&self.session_line(&data));
            return;
        }
        match &self.values {
            Some(v) => {
                v.apply_into(body, true, out);
            }
            None => out.extend_from_slice(body),
        }
        if newline {
            out.push(b'\n');
        }
    }

    /// The recording's `session` line (`data`, its `\n` included) as this run shows it.
    fn session_line(&mut self, data: &[u8]) -> Vec<u8> {
        self.session_line_done = true;
        if let Some(h) = self.session.resumed_header() {
            let mut line = h.as_bytes().to_vec();
            if data.ends_with(b"\n") {
                line.push(b'\n');
            }
            return line;
        }
        let mut line = data.to_vec();
        if let Some(rec) = &self.recorded_session_id {
            if *rec != self.session.id {
                let from = format!("\"id\":{}", serde_json::json!(rec));
                let to = format!("\"id\":{}", serde_json::json!(self.session.id));
                line = String::from_utf8_lossy(&line)
                    .replacen(&from, &to, 1)
                    .into_bytes();
            }
        }
        // The session's own start time, so the file name and the line agree.
        let ts = self.session.timestamp.clone();
        let line = String::from_utf8_lossy(&line)
            .replacen(
                "\"timestamp\":\"<TS>\"",
                &format!("\"timestamp\":\"{ts}\""),
                1,
            )
            .into_bytes();
        match self.values.as_ref().and_then(|v| v.apply(&line, true)) {
            Some(l) => l,
            None => line,
        }
    }

    fn stderr<'a>(&self, data: &'a [u8]) -> std::borrow::Cow<'a, [u8]> {
        match self.values.as_ref().and_then(|v| v.apply(data, false)) {
            Some(l) => std::borrow::Cow::Owned(l),
            None => std::borrow::Cow::Borrowed(data),
        }
    }
}

/// Stdout waiting to be written.
struct Pending {
    buf: Vec<u8>,
}

impl Pending {
    /// Write what is pending in one go; false when stdout's reader is gone.
    fn flush(&mut self, out: &mut File) -> bool {
        if self.buf.is_empty() {
            return true;
        }
        let ok = out.write_all(&self.buf).is_ok();
        self.buf.clear();
        ok
    }
}

/// The cassette is read as it is replayed: a final record (exit, signal, hang) is acted on
/// only once the rest of the input is known to be empty, so a record after it, or bytes
/// after the last gzip member, get the verdict every other tool gives.
fn nothing_after<R: BufRead>(records: &mut CassetteReader<R>) -> Result<(), CassetteError> {
    match records.next_ref() {
        None => Ok(()),
        Some(Err(e)) => Err(e),
        // The reader refuses any record after a final one; nothing else can come.
        Some(Ok(_)) => Ok(()),
    }
}

/// Play every record from `records` (the header already read). Returns only for a final
/// `exit` record's code, or for a problem (the cassette changed since it was checked: 98,
/// or 97 when it can no longer be read); `signal` and `hang` never return.
pub(crate) fn run<R: BufRead>(
    records: &mut CassetteReader<R>,
    path: &Path,
    speed: Speed,
    hooks: &mut Hooks,
) -> i32 {
    crate::played::mark(path);
    let mut player = Player {
        out: fd(1),
        err: fd(2),
        pending: Pending {
            buf: Vec::with_capacity(BATCH),
        },
        start: Instant::now(),
        due: Duration::ZERO,
        path,
        deferred_close: None,
    };
    loop {
        let record = match records.next_ref() {
            Some(Ok(r)) => r,
            // The reader ends only after a final record (a missing one is an error).
            None => break,
            Some(Err(e)) => return player.stop_at(e),
        };
        // A client record is waited for, not timed: its delay is the recording's client's
        // pace, and what follows is timed from when this client acts (never before the
        // records ahead of it were due).
        let client_record = matches!(
            record.action,
            ActionRef::Stdin(_)
                | ActionRef::StdinText(_)
                | ActionRef::StdinClose
                | ActionRef::ClientSignal(_)
        );
        if !client_record {
            player.due = player.due.saturating_add(speed.scale(record.dt_ms));
        }
        if let Break(code) = player.wait() {
            return code;
        }
        let line = record.line;
        let reply = record.reply;
        // A deferred stdin close is waited for before the client's next action or the end.
        if let Some(at) = player.deferred_close {
            if client_record || record.action.is_final() {
                player.deferred_close = None;
                if let Break(code) = player.await_client(&ActionRef::StdinClose, at, hooks) {
                    return code;
                }
            }
        }
        let flow = match record.action {
            ActionRef::Stdout { body, form } => player.stdout(body, form, reply, line, hooks),
            ActionRef::Stderr { body, .. } => player.stderr(&body, hooks),
            ActionRef::Spawn(spec) => player.spawn(&spec, line),
            ref client_action @ (ActionRef::Stdin(_)
            | ActionRef::StdinText(_)
            | ActionRef::StdinClose
            | ActionRef::ClientSignal(_)) => player.client(client_action, line, hooks),
            ActionRef::Reap(id) => player.reap(&id, line),
            ActionRef::Request(request) => player.request(&request, line, hooks),
            ActionRef::Exit(code) => player.end(records, Ending::Exit(code)),
            ActionRef::Signal(name) => {
                let sig = Signal::from_str(&name).unwrap_or(Signal::SIGKILL);
                player.end(records, Ending::Signal(sig))
            }
            ActionRef::Hang => player.end(records, Ending::Hang),
        };
        if let Break(code) = flow {
            return code;
        }
    }
    match player.flush() {
        Break(code) => code,
        Continue(()) => exit::SUCCESS,
    }
}

/// How a replay ends: the cassette's final record.
enum Ending {
    Exit(i32),
    Signal(Signal),
    Hang,
}

/// The replay under way: stdout (with what waits to be written) and stderr, the clock, and
/// the cassette's path for messages. Each action says `Break(status)` when fake-pi exits.
struct Player<'p> {
    out: ManuallyDrop<File>,
    err: ManuallyDrop<File>,
    pending: Pending,
    start: Instant,
    /// When the current record is due, counted from `start`.
    due: Duration,
    path: &'p Path,
    /// The line of a Claude Code host's stdin close not waited for yet (see [`Player::client`]).
    deferred_close: Option<usize>,
}

impl Player<'_> {
    /// Write what is pending; stdout's reader gone is a quiet [`exit::STDOUT_CLOSED`].
    fn flush(&mut self) -> ControlFlow<i32> {
        if self.pending.flush(&mut self.out) {
            Continue(())
        } else {
            Break(exit::STDOUT_CLOSED)
        }
    }

    /// Wait until the record is due; what is due goes out before the wait.
    fn wait(&mut self) -> ControlFlow<i32> {
        if let Some(wait) = self.due.checked_sub(self.start.elapsed()) {
            if !wait.is_zero() {
                // Not due yet: what is due goes out before the wait.
                self.flush()?;
                std::thread::sleep(wait);
            }
        }
        Continue(())
    }

    /// A line of fake-pi's own on stderr, kept for the report too ([`crate::report`]).
    fn own(&mut self, line: &str) {
        let line = exit::masked(line);
        let _ = writeln!(self.err, "{line}");
        crate::report::note(&line);
    }

    /// A record that cannot be read: what came before it has been replayed; stop here,
    /// loudly, and take the children fake-pi started along.
    fn stop_at(&mut self, e: CassetteError) -> i32 {
        if let Break(code) = self.flush() {
            return code;
        }
        signals::kill_children();
        let (code, what) = exit::cassette_problem(&e);
        self.own(&format!("fake-pi: {what} (the replay stopped there)"));
        code
    }

    /// A `stdout` record: gathered for one `write` with the records due with it; the
    /// session's lines reach the reader before the session file has them.
    fn stdout(
        &mut self,
        body: Cow<'_, [u8]>,
        form: Form,
        reply: Option<u32>,
        line: usize,
        hooks: &mut Hooks,
    ) -> ControlFlow<i32> {
        let from = self.pending.buf.len();
        let body = match (reply, &hooks.client) {
            (Some(k), Some(client)) => Cow::Owned(client.protocol().echo(&body, client.id_for(k))),
            _ => body,
        };
        hooks.stdout_into(&body, form.newline(), &mut self.pending.buf);
        if hooks.session.observes(&self.pending.buf[from..]) {
            // The line reaches the reader before the session file has it, as before.
            let data = self.pending.buf[from..].to_vec();
            self.flush()?;
            if let Err(e) = hooks.session.observe(&data, &hooks.meta) {
                self.own(&format!(
                    "fake-pi: cannot write the session file ({}:{line}): {e}",
                    self.path.display(),
                ));
                return Break(exit::MISUSE);
            }
        } else if self.pending.buf.len() >= BATCH {
            self.flush()?;
        }
        Continue(())
    }

    /// A `stderr` record: written at once, after what is due on stdout.
    fn stderr(&mut self, body: &[u8], hooks: &Hooks) -> ControlFlow<i32> {
        self.flush()?;
        let _ = self.err.write_all(&hooks.stderr(body));
        Continue(())
    }

    /// A `spawn` record: a real child, tracked for cleanup.
    fn spawn(&mut self, spec: &Spawn, line: usize) -> ControlFlow<i32> {
        self.flush()?;
        let mut children = signals::CHILDREN.lock().unwrap_or_else(|e| e.into_inner());
        match child::spawn(spec) {
            Ok(c) => children.push(signals::Tracked {
                id: spec.id.clone(),
                child: c,
                own_group: spec.own_session,
                reaped: false,
            }),
            Err(e) => {
                self.own(&format!(
                    "fake-pi: cannot start child `{}` ({}:{line}): {e}",
                    spec.id,
                    self.path.display(),
                ));
                return Break(exit::MISUSE);
            }
        }
        Continue(())
    }

    /// A client record: wait for the client to do that, check it, and time what follows
    /// from when it did.
    fn client(
        &mut self,
        client_action: &ActionRef<'_>,
        line: usize,
        hooks: &mut Hooks,
    ) -> ControlFlow<i32> {
        self.flush()?;
        let Some(client) = hooks.client.as_mut() else {
            // main only replays a two-way cassette with a client.
            self.own(&format!(
                "fake-pi: {}:{line}: a client record in a replay without a client",
                self.path.display()
            ));
            return Break(exit::MISUSE);
        };
        // Claude Code finishes the turn under way whether its host closes stdin early or
        // keeps it open until the result (as bridges do): the close is waited for before the
        // host's next action or the end, not where the recording's host made it.
        if matches!(client_action, ActionRef::StdinClose)
            && client.protocol() == pi_cassette::two_way::Protocol::StreamJson
        {
            self.deferred_close = Some(line);
            return Continue(());
        }
        self.await_client(client_action, line, hooks)
    }

    /// Wait for the client's action `client_action` (line `line`) and check it: a mismatch
    /// ends the replay with one line per difference.
    fn await_client(
        &mut self,
        client_action: &ActionRef<'_>,
        line: usize,
        hooks: &mut Hooks,
    ) -> ControlFlow<i32> {
        // What the client may be waiting for goes out first.
        self.flush()?;
        let Some(client) = hooks.client.as_mut() else {
            return Break(exit::MISUSE);
        };
        match client.expect(client_action) {
            // What follows is timed from when the client acted.
            Ok(at) => self.due = self.due.max(at.saturating_duration_since(self.start)),
            Err(problems) => {
                signals::kill_children();
                for p in problems {
                    self.own(&format!(
                        "fake-pi: client mismatch: {}:{line}: {p}",
                        self.path.display()
                    ));
                }
                self.own(&crate::relax::next_step(&[]));
                return Break(exit::EXPECTATION);
            }
        }
        Continue(())
    }

    /// A `reap` record: the tracked child is gone now (killed if it is still there).
    fn reap(&mut self, id: &str, line: usize) -> ControlFlow<i32> {
        self.flush()?;
        if !signals::reap_child(id) {
            self.own(&format!(
                "fake-pi: invalid cassette: {}:{line}: record field `reap`: no `spawn` with the id {id:?} before it",
                self.path.display()
            ));
            signals::kill_children();
            return Break(exit::INVALID_CASSETTE);
        }
        Continue(())
    }

    /// A `request` record: to `FAKE_PI_REQUEST_LOG`, when set.
    fn request(&mut self, request: &str, line: usize, hooks: &mut Hooks) -> ControlFlow<i32> {
        if let Err(e) = hooks.requests.write(request) {
            self.own(&format!(
                "fake-pi: cannot write FAKE_PI_REQUEST_LOG ({}:{line}): {e}",
                self.path.display()
            ));
            return Break(exit::MISUSE);
        }
        Continue(())
    }

    /// The final record, acted on once nothing can follow it: exit with its code, die by
    /// its signal, or hang until a signal ends fake-pi.
    fn end<R: BufRead>(
        &mut self,
        records: &mut CassetteReader<R>,
        ending: Ending,
    ) -> ControlFlow<i32> {
        if let Err(e) = nothing_after(records) {
            return Break(self.stop_at(e));
        }
        self.flush()?;
        match ending {
            Ending::Exit(code) => Break(code),
            Ending::Signal(sig) => signals::die_by(sig),
            Ending::Hang => loop {
                std::thread::sleep(Duration::from_secs(3600));
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// Any FAKE_PI_SPEED and any delay a cassette may hold: a duration, no panic.
        #[test]
        fn any_speed_any_delay(text in "\\PC{0,16}|[0-9.e+-]{0,24}", ms in 0.0f64..=1e9) {
            if let Ok(speed) = Speed::parse(Some(&text)) {
                let _ = speed.scale(ms);
            }
        }
    }

    #[test]
    fn speed_from_env() {
        assert_eq!(Speed::parse(None), Ok(Speed::Factor(1.0)));
        assert_eq!(Speed::parse(Some("0")), Ok(Speed::Instant));
        assert_eq!(Speed::parse(Some("2.5")), Ok(Speed::Factor(2.5)));
        for bad in ["-1", "fast", "", "inf", "NaN", "1e-300", "0.0000001"] {
            assert!(
                Speed::parse(Some(bad))
                    .unwrap_err()
                    .contains("FAKE_PI_SPEED"),
                "{bad}"
            );
        }
        assert_eq!(Speed::Factor(10.0).scale(300.0), Duration::from_millis(30));
        assert_eq!(Speed::Instant.scale(300.0), Duration::ZERO);
        // The longest delay a cassette may hold, at the slowest speed: no overflow.
        let slowest = Speed::parse(Some("0.000001")).unwrap();
        assert_eq!(slowest.scale(1e9), Duration::from_secs(1_000_000_000_000));
        assert_eq!(Speed::Factor(1e-300).scale(1e308), Duration::MAX);
    }
}
