//! One json-mode run of pi, watched: its prompt written to stdin, its output captured with
//! timing, the planned signal sent at its point (pi's process tree seen at that moment), a
//! deadline (and 10 s for pi to end after the signal), progress every couple of seconds,
//! then what became of pi's children and what it left behind.

use std::collections::BTreeSet;
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::kill;
use nix::unistd::Pid;
use pi_procs::{self as procs, ProcInfo};
use tokio::io::AsyncWriteExt;

use super::header::scenario_name;
use super::json_cassette::{event_type, ChildFate, JsonRun, SentSignal};
use super::process::{self, cleanup_leftovers, ms, Capture, Captured, Ending, PiEnv};
use super::{RecordError, RecordOptions, SignalPlan};
use crate::Notices;

/// Run pi with `args` in `env` as the options say (stdin, signal, timeout, progress on
/// `notices`) and collect what it did.
pub(crate) async fn run(
    opts: &RecordOptions,
    args: &[String],
    env: &PiEnv,
    notices: &Notices,
) -> Result<JsonRun, RecordError> {
    let mut cmd = process::command(&opts.pi, args, env);
    cmd.stdin(if opts.stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    });
    let start = Instant::now();
    let mut child = process::spawn(&mut cmd, &opts.pi)?;
    let pi_pid = child.id().map(|p| p as i32).unwrap_or(0);
    if let (Some(text), Some(mut w)) = (opts.stdin.clone(), child.stdin.take()) {
        // Write and close, in the background: pi reads stdin to EOF before it starts.
        tokio::spawn(async move {
            let _ = w.write_all(text.as_bytes()).await;
            let _ = w.shutdown().await;
        });
    }
    let mut capture = Capture::start(&mut child, start);
    let mut watch = Watch {
        opts,
        start,
        pi_pid,
        captured: Vec::new(),
        signal_at: None,
        sent: None,
        out_bytes: 0,
    };
    let status = match watch.until_done(&mut child, &mut capture, notices).await {
        Ok(status) => status,
        Err(e) => {
            let _ = child.start_kill();
            let _ = child.wait().await;
            cleanup_leftovers(&env.marker).await;
            capture.abort();
            return Err(e);
        }
    };
    let gone = Instant::now();
    let ending = Ending::of(status);
    // What became of pi's children: give pi's own cleanup a moment to land, then look.
    let mut captured = watch.captured;
    let mut children = Vec::new();
    let (mut lines_after_signal, mut stderr_after_signal) = (0, 0);
    let mut after_signal = Vec::new();
    let signalled = match watch.sent {
        Some((when, at, mut s)) => {
            s.pi_gone_after_ms = ms(gone.saturating_duration_since(when));
            children = fates(&s).await;
            // Output after the signal is not part of the replayed records.
            let (before, after): (Vec<_>, Vec<_>) =
                captured.into_iter().partition(|(t, _)| *t <= at);
            for (_, c) in &after {
                match c {
                    Captured::Line(..) => lines_after_signal += 1,
                    Captured::Stderr(b) => stderr_after_signal += b.len(),
                }
            }
            captured = before;
            after_signal = after;
            Some(s)
        }
        None => None,
    };
    let leftovers = cleanup_leftovers(&env.marker).await;
    capture.abort();
    Ok(JsonRun {
        captured,
        ending,
        signalled,
        children,
        lines_after_signal,
        stderr_after_signal,
        after_signal,
        leftovers,
    })
}

/// The state of a run being watched.
struct Watch<'a> {
    opts: &'a RecordOptions,
    start: Instant,
    pi_pid: i32,
    captured: Vec<(Duration, Captured)>,
    /// When the planned signal is due, and its planned delay.
    signal_at: Option<(Instant, f64)>,
    /// The signal sent: when, at which time of the run, and what was seen.
    sent: Option<(Instant, Duration, SentSignal)>,
    out_bytes: usize,
}

impl Watch<'_> {
    /// Capture until pi has exited and its pipes are drained, sending the planned signal on
    /// the way; an error when a deadline passes (pi is then still running).
    async fn until_done(
        &mut self,
        child: &mut tokio::process::Child,
        capture: &mut Capture,
        notices: &Notices,
    ) -> Result<ExitStatus, RecordError> {
        let opts = self.opts;
        let deadline = tokio::time::Instant::now() + opts.timeout;
        let mut tick = tokio::time::interval(Duration::from_secs(2));
        tick.tick().await;
        let mut status = None;
        let mut channel_open = true;
        let name = scenario_name(opts);
        while status.is_none() || channel_open {
            // After a signal pi gets 10 s to end (it ignoring the signal is a finding, not a hang).
            let limit = match &self.sent {
                Some((when, ..)) if status.is_none() => deadline.min(
                    tokio::time::Instant::from_std(*when + Duration::from_secs(10)),
                ),
                _ => deadline,
            };
            let signal_due = match (self.signal_at, &self.sent) {
                (Some((when, _)), None) => Some(when),
                _ => None,
            };
            let signal_sleep = async {
                match signal_due {
                    Some(when) => tokio::time::sleep_until(when.into()).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                msg = capture.rx.recv(), if channel_open => match msg {
                    Some((at, c)) => self.output(at, c),
                    None => channel_open = false,
                },
                st = child.wait(), if status.is_none() => {
                    status = Some(st.map_err(RecordError::Wait)?);
                    // pi is gone; its output may still be draining. Orphans holding the pipes
                    // open would keep the readers waiting, so they get a deadline below.
                },
                _ = signal_sleep, if status.is_none() => self.send_signal()?,
                _ = tick.tick(), if opts.progress => notices.line(&format!(
                    "pi-harness record {name}: {:.1} s, {} stdout lines, {:.1} MB",
                    self.start.elapsed().as_secs_f64(),
                    self.captured.iter().filter(|(_, c)| matches!(c, Captured::Line(..))).count(),
                    self.out_bytes as f64 / 1e6
                )),
                _ = tokio::time::sleep_until(limit), if status.is_none() => {
                    return Err(RecordError::Timeout(match &self.sent {
                        Some((_, _, s)) => format!("pi was still running 10 s after {} (killed); nothing written", s.signal.as_str()),
                        None => format!("pi did not finish within {:?} (killed); {} stdout lines so far", opts.timeout, self.captured.len()),
                    }));
                },
            }
            if status.is_some() && channel_open {
                self.drain(capture).await;
                channel_open = false;
            }
        }
        Ok(status.expect("loop ends after pi exited"))
    }

    /// One output item: kept, and the first line of the planned event arms the signal.
    fn output(&mut self, at: Duration, c: Captured) {
        if let (Some(plan), None, Captured::Line(l, _)) = (&self.opts.signal, self.signal_at, &c) {
            if event_type(l).as_deref() == Some(plan.event.as_str()) {
                self.signal_at = Some((
                    self.start + at + Duration::from_millis(plan.after_ms),
                    plan.after_ms as f64,
                ));
            }
        }
        if let Captured::Line(l, _) = &c {
            self.out_bytes += l.len() + 1;
        }
        self.captured.push((at, c));
    }

    /// Give the pipes a bounded time to drain after pi's exit.
    async fn drain(&mut self, capture: &mut Capture) {
        let drain_deadline = tokio::time::Instant::now() + Duration::from_secs(1);
        loop {
            match tokio::time::timeout_at(drain_deadline, capture.rx.recv()).await {
                Ok(Some(m)) => self.captured.push(m),
                Ok(None) => break,
                Err(_) => {
                    // Something else holds pi's stdout/stderr: it is killed later.
                    break;
                }
            }
        }
    }

    /// Send the planned signal, noting pi's process tree as it was at that moment.
    fn send_signal(&mut self) -> Result<(), RecordError> {
        let (_, after) = self.signal_at.expect("armed");
        let plan: &SignalPlan = self.opts.signal.as_ref().expect("a plan armed the signal");
        let pi_pid = self.pi_pid;
        let all = procs::all_procs();
        let tree = procs::descendants(&all, pi_pid);
        let pi_sid = procs::read_proc(pi_pid).map(|p| p.sid).unwrap_or(pi_pid);
        let pi_out = procs::fd_target(pi_pid, 1);
        let holds_stdout: BTreeSet<i32> = tree
            .iter()
            .filter(|p| pi_out.is_some() && procs::fd_target(p.pid, 1) == pi_out)
            .map(|p| p.pid)
            .collect();
        let when = Instant::now();
        // To the group: the CLI leads a group of its own (see `process::CodexEnv`).
        let target = if plan.to_group { -pi_pid } else { pi_pid };
        kill(Pid::from_raw(target), plan.signal).map_err(RecordError::Signal)?;
        self.sent = Some((
            when,
            self.start.elapsed(),
            SentSignal {
                signal: plan.signal,
                event: plan.event.clone(),
                after_ms: after,
                pi_pid,
                pi_sid,
                tree,
                holds_stdout,
                pi_gone_after_ms: 0.0,
            },
        ));
        Ok(())
    }
}

/// Whether each process of pi's tree at the signal outlived pi: polled until the set of
/// live ones is stable for 3 polls (at most 1 s).
async fn fates(s: &SentSignal) -> Vec<ChildFate> {
    let alive = |p: &ProcInfo| {
        procs::read_proc(p.pid).is_some_and(|q| !q.is_zombie() && q.cmdline == p.cmdline)
    };
    let mut last: Vec<bool> = s.tree.iter().map(alive).collect();
    let mut stable = 0;
    let settle = Instant::now() + Duration::from_secs(1);
    while stable < 3 && Instant::now() < settle {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let now: Vec<bool> = s.tree.iter().map(alive).collect();
        if now == last {
            stable += 1;
        } else {
            stable = 0;
            last = now;
        }
    }
    s.tree
        .iter()
        .zip(&last)
        .map(|(p, survived)| {
            let own_session = s
                .tree
                .iter()
                .find(|q| q.pid == p.ppid)
                .map_or(p.sid != s.pi_sid, |parent| parent.sid != p.sid);
            ChildFate {
                pid: p.pid,
                ppid: p.ppid,
                command: p.command(),
                own_session,
                survived: *survived,
            }
        })
        .collect()
}
