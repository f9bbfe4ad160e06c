//! One two-way run, driven by a client script: the CLI started once (`pi --mode rpc`, or
//! Claude Code in stream-json), each step waiting for its trigger (an event, idleness, the
//! previous step) and its delay, then writing a line, closing stdin or sending a signal;
//! every action logged with the CLI's output in one timeline; then the CLI's exit, its
//! pipes drained, and what it left behind killed. Claude Code may get a pseudo-terminal on
//! stdin instead of a pipe (`stdin_terminal`), as a bridge run from a terminal gives it.

use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::kill;
use nix::unistd::Pid;
use tokio::io::AsyncWriteExt;
use tokio::process::{Child, ChildStdin};

use super::process::{self, cleanup_leftovers, Capture, Captured, Ending, PiEnv};
use super::two_way_cassette::{Timed, TwoWayRun};
use super::{RecordError, RecordOptions};
use crate::client_script::{Act, ClientScript, Seen, Step, When};

/// Drive the CLI with `args` in `env` by `script`: every step waits for its trigger, acts,
/// and is logged with the output in one timeline.
pub(crate) async fn run(
    opts: &RecordOptions,
    script: &ClientScript,
    args: &[String],
    env: &PiEnv,
) -> Result<TwoWayRun, RecordError> {
    let mut cmd = process::command(&opts.pi, args, env);
    // A terminal on stdin: the pseudo-terminal's other end stays open (never written)
    // until the CLI has exited.
    let terminal = if opts.stdin_terminal {
        let pty = nix::pty::openpty(None, None).map_err(|e| RecordError::Pipe(e.into()))?;
        cmd.stdin(Stdio::from(pty.slave));
        Some(pty.master)
    } else {
        cmd.stdin(Stdio::piped());
        None
    };
    let start = Instant::now();
    let spawned = process::spawn(&mut cmd, &opts.pi);
    // The child has its copy of the terminal's end; ours goes with `cmd`.
    drop(cmd);
    let mut child = spawned?;
    let pi_pid = child.id().map(|p| p as i32).unwrap_or(0);
    let stdin = child.stdin.take();
    let capture = Capture::start(&mut child, start);
    let mut session = Session {
        child,
        capture,
        stdin,
        start,
        pi_pid,
        timeout: opts.timeout,
        deadline: tokio::time::Instant::now() + opts.timeout,
        timeline: Vec::new(),
        seen: Seen::default(),
        status: None,
        exited_at: Duration::ZERO,
        channel_open: true,
    };
    let mut result = session.steps(script).await;
    if result.is_ok() {
        result = session.until_exit().await;
    }
    drop(session.stdin.take());
    if result.is_err() && session.status.is_none() {
        let _ = session.child.start_kill();
        let _ = session.child.wait().await;
    }
    let leftovers = cleanup_leftovers(&env.marker).await;
    drop(terminal);
    session.capture.abort();
    result?;
    let status = session.status.expect("the loop ends after pi exited");
    session.timeline.sort_by_key(|(t, _)| *t);
    Ok(TwoWayRun {
        timeline: session.timeline,
        ending: Ending::of(status),
        exited_at: session.exited_at,
        leftovers,
    })
}

/// A two-way run in progress.
struct Session {
    child: Child,
    capture: Capture,
    /// The CLI's stdin, until a step closes it.
    stdin: Option<ChildStdin>,
    start: Instant,
    pi_pid: i32,
    timeout: Duration,
    deadline: tokio::time::Instant,
    timeline: Vec<(Duration, Timed)>,
    /// The stdout records seen, for event triggers and `{REQUEST_ID}`.
    seen: Seen,
    status: Option<ExitStatus>,
    /// When the CLI's exit was seen.
    exited_at: Duration,
    channel_open: bool,
}

impl Session {
    /// Wait for one event from the CLI (output, its exit) or for `until`.
    async fn pump(&mut self, until: tokio::time::Instant) -> Result<(), RecordError> {
        tokio::select! {
            msg = self.capture.rx.recv(), if self.channel_open => match msg {
                Some((at, c)) => {
                    if let Captured::Line(l, _) = &c {
                        self.seen.push(l);
                    }
                    self.timeline.push((at, Timed::Out(c)));
                }
                None => self.channel_open = false,
            },
            st = self.child.wait(), if self.status.is_none() => {
                self.status = Some(st.map_err(RecordError::Wait)?);
                self.exited_at = self.start.elapsed();
            },
            _ = tokio::time::sleep_until(until) => {},
        }
        Ok(())
    }

    /// When the CLI last wrote a stdout line (for idle triggers): its start when it has not yet.
    fn last_line(&self) -> Instant {
        self.start
            + self
                .timeline
                .iter()
                .rev()
                .find_map(|(t, e)| matches!(e, Timed::Out(Captured::Line(..))).then_some(*t))
                .unwrap_or_default()
    }

    /// Run every step in order; stops at the first that fails.
    async fn steps(&mut self, script: &ClientScript) -> Result<(), RecordError> {
        for (i, step) in script.steps.iter().enumerate() {
            self.await_trigger(i, step).await?;
            if !step.delay.is_zero() {
                let until = tokio::time::Instant::now() + step.delay;
                while tokio::time::Instant::now() < until {
                    self.pump(until).await?;
                }
            }
            self.act(i, step).await?;
        }
        Ok(())
    }

    /// Wait until step `i`'s trigger fires; an error when the CLI ends or the deadline
    /// passes first.
    async fn await_trigger(&mut self, i: usize, step: &Step) -> Result<(), RecordError> {
        loop {
            let fired = match &step.when {
                When::Previous | When::Start => true,
                w @ When::Event { .. } => self.seen.fired(w),
                When::Idle(ms) => self.last_line().elapsed() >= *ms,
            };
            if fired {
                return Ok(());
            }
            if self.status.is_some() && !self.channel_open {
                return Err(RecordError::ClientStep {
                    step: i,
                    problem: format!("pi ended before its trigger ({:?})", step.when),
                });
            }
            if tokio::time::Instant::now() >= self.deadline {
                return Err(RecordError::Timeout(format!(
                    "client script step {i}: its trigger ({:?}) did not fire within {:?}; nothing written",
                    step.when, self.timeout
                )));
            }
            let until = match &step.when {
                When::Idle(ms) => {
                    tokio::time::Instant::from_std(self.last_line() + *ms).min(self.deadline)
                }
                _ => self.deadline,
            };
            self.pump(until).await?;
        }
    }

    /// Do what step `i` says, and log it.
    async fn act(&mut self, i: usize, step: &Step) -> Result<(), RecordError> {
        let failed = |problem: String| RecordError::ClientStep { step: i, problem };
        let at = self.start.elapsed();
        match &step.act {
            Act::Line(line) => {
                let Some(w) = self.stdin.as_mut() else {
                    return Err(failed("stdin is already closed".into()));
                };
                let line = self.seen.fill(line).map_err(failed)?;
                let mut bytes = line.clone().into_bytes();
                bytes.push(b'\n');
                if let Err(e) = w.write_all(&bytes).await {
                    return Err(failed(format!("writing to pi's stdin: {e}")));
                }
                let _ = w.flush().await;
                self.timeline.push((at, Timed::Wrote(line)));
            }
            Act::CloseStdin => {
                if let Some(mut w) = self.stdin.take() {
                    let _ = w.shutdown().await;
                }
                self.timeline.push((at, Timed::Closed));
            }
            Act::Signal(sig) => {
                if self.status.is_some() {
                    return Err(failed("pi had exited already".into()));
                }
                kill(Pid::from_raw(self.pi_pid), *sig).map_err(RecordError::Signal)?;
                self.timeline.push((at, Timed::Signalled(*sig)));
            }
        }
        Ok(())
    }

    /// After the last step: the CLI's exit, then its pipes drained (orphans holding them get
    /// a bounded drain).
    async fn until_exit(&mut self) -> Result<(), RecordError> {
        while self.status.is_none() || self.channel_open {
            if tokio::time::Instant::now() >= self.deadline {
                return Err(RecordError::Timeout(format!(
                    "pi did not exit within {:?} after the client script's last step; nothing written",
                    self.timeout
                )));
            }
            let until = if self.status.is_some() {
                self.deadline
                    .min(tokio::time::Instant::now() + Duration::from_secs(1))
            } else {
                self.deadline
            };
            self.pump(until).await?;
            if self.status.is_some() && self.channel_open && tokio::time::Instant::now() >= until {
                break;
            }
        }
        Ok(())
    }
}
