//! One json-mode run of pi ([`Run`]): finding pi and its version, its command line, pi
//! started under the supervisor, the prompt on stdin, stdout through the [`Mapper`], the
//! stderr tail, and the run's ending. The select loop reads pi's stdout, stderr and the
//! supervisor's control socket; [`RunState`] holds what it learnt: which streams are
//! open, what the supervisor reported, why we stop (cancel, a consumer gone, the timeout,
//! the output cap) and the deadlines that follow, and from it the one [`EndCause`].

use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::argv::build_argv;
use crate::codex_argv::codex_argv;
use crate::gemini_argv::gemini_argv;
use crate::probe::{probe_version, which};
use crate::request::{ProviderOptions, Request};
use crate::spawn::{spawn_supervised, supervisor_from_env, Spawned, SupervisorChild};
use crate::stderr_tail::StderrTail;
use crate::supervisor::Event;
use crate::wait::{after, sleep_until, StoppedWatch, MAX_WAIT};
use pi_grammar::Agent;
use pi_wire::claude::ClaudeMapper;
use pi_wire::codex::CodexMapper;
use pi_wire::gemini::GeminiMapper;
use pi_wire::mapper::{EndCause, Mapper, MapperOptions, StreamEnd};
use pi_wire::message::{ExitInfo, Failure, FailureReason, Message};
use pi_wire::secret::SecretFilter;

/// Size asked for pi's stdout pipe, and of the buffer it is read into.
pub(crate) const STDOUT_PIPE_BYTES: usize = 1 << 20;

/// Why the run is being stopped from our side.
#[derive(Debug, Clone, PartialEq)]
enum Stop {
    Cancelled,
    ConsumerGone,
    Timeout,
    OutputLimit(u64),
}

/// One run: the options, where its batches of messages go, and the key kept out of them.
pub(crate) struct Run {
    opts: ProviderOptions,
    tx: mpsc::Sender<Vec<Message>>,
    consumer_gone: bool,
    /// The request's API key, kept out of every message (however pi echoes it).
    secret: Option<SecretFilter>,
}

impl Run {
    pub(crate) fn new(opts: ProviderOptions, tx: mpsc::Sender<Vec<Message>>) -> Self {
        Run {
            opts,
            tx,
            consumer_gone: false,
            secret: None,
        }
    }

    async fn send_all(&mut self, msgs: &mut Vec<Message>) {
        if let Some(filter) = &mut self.secret {
            let mut clean = Vec::with_capacity(msgs.len() + 1);
            for m in msgs.drain(..) {
                filter.filter(m, &mut clean);
            }
            *msgs = clean;
        }
        if msgs.is_empty() {
            return;
        }
        let batch = std::mem::take(msgs);
        if !self.consumer_gone && self.tx.send(batch).await.is_err() {
            self.consumer_gone = true;
        }
    }

    async fn fail_early(&mut self, reason: FailureReason, message: String) {
        let mut out = vec![Message::TerminalFailed(Failure {
            reason,
            message,
            exit: None,
            stderr_tail: None,
            invalid_lines: Vec::new(),
            invalid_lines_dropped: 0,
        })];
        self.send_all(&mut out).await;
    }

    pub(crate) async fn go(&mut self, req: Request, cancel: CancellationToken) {
        self.secret = req
            .api_key
            .as_ref()
            .and_then(|k| SecretFilter::new(&k.value));
        if cancel.is_cancelled() {
            let mut out = vec![Message::TerminalCancelled { exit: None }];
            self.send_all(&mut out).await;
            return;
        }
        let program = req.agent.name();
        let pi = match &req.pi_path {
            Some(p) => p.clone(),
            None => match which(program) {
                Some(p) => p,
                None => {
                    return self
                        .fail_early(
                            FailureReason::SpawnFailed,
                            format!("cannot start {program}: not found on PATH"),
                        )
                        .await
                }
            },
        };
        // Codex's and Gemini CLI's command lines are the same on every release: no version
        // to ask for.
        let fixed = match req.agent {
            Agent::Codex => Some(codex_argv(&req)),
            Agent::Gemini => Some(gemini_argv(&req)),
            Agent::Pi => None,
            Agent::Claude => {
                let message = format!(
                    "the provider runs {}, not {}",
                    crate::driven_names(),
                    req.agent.display_name()
                );
                return self
                    .fail_early(FailureReason::InvalidRequest, message)
                    .await;
            }
        };
        if let Some(argv) = fixed {
            let argv = match argv {
                Ok(a) => a,
                Err(e) => return self.fail_early(FailureReason::InvalidRequest, e).await,
            };
            let supervisor = self.opts.supervisor.clone().or_else(supervisor_from_env);
            return self.supervised(req, pi, argv, supervisor, cancel).await;
        }
        let version = match &req.pi_version {
            Some(v) => v.clone(),
            None => {
                let probe = tokio::select! {
                    v = probe_version(&pi, &req.env) => v,
                    _ = cancel.cancelled() => {
                        let mut out = vec![Message::TerminalCancelled { exit: None }];
                        return self.send_all(&mut out).await;
                    }
                };
                match probe {
                    Ok(v) => v,
                    Err(e) => return self.fail_early(FailureReason::SpawnFailed, e).await,
                }
            }
        };
        let argv = match build_argv(&req, &version) {
            Ok(a) => a,
            Err(e) => return self.fail_early(FailureReason::InvalidRequest, e).await,
        };
        let supervisor = self.opts.supervisor.clone().or_else(supervisor_from_env);
        self.supervised(req, pi, argv, supervisor, cancel).await;
    }

    async fn supervised(
        &mut self,
        req: Request,
        pi: PathBuf,
        argv: Vec<String>,
        supervisor: Option<PathBuf>,
        cancel: CancellationToken,
    ) {
        let Spawned {
            mut child,
            mut ctl_lines,
            mut ctl_write,
        } = match spawn_supervised(&self.opts, &req, &pi, &argv, supervisor.as_deref()) {
            Ok(s) => s,
            Err(e) => return self.fail_early(FailureReason::SpawnFailed, e).await,
        };

        let writer = write_prompt(&mut child, &req.prompt);
        let mut stdout = child.stdout.take().expect("stdout is piped");
        let mut stderr = child.stderr.take().expect("stderr is piped");
        // A bigger pipe: pi (0.73.1 writes lines of tens of KB) is not stopped by a full
        // pipe every few lines while we map, and one read takes what has piled up. Best
        // effort (the kernel may refuse the size; the default is 64 KiB).
        let _ = nix::fcntl::fcntl(
            stdout.as_raw_fd(),
            nix::fcntl::FcntlArg::F_SETPIPE_SZ(STDOUT_PIPE_BYTES as nix::libc::c_int),
        );

        let mut mapper = StreamMapper::new(
            req.agent,
            MapperOptions {
                max_line_bytes: self.opts.max_line_bytes,
                resumed_session: req.session.as_ref().is_some_and(|s| s.resume),
                ..MapperOptions::default()
            },
        );
        let mut tail = StderrTail::new(
            self.opts.stderr_tail_bytes,
            req.api_key.as_ref().map(|k| k.value.as_str()),
        );
        let mut out = Vec::new();
        let mut buf = vec![0u8; STDOUT_PIPE_BYTES];
        let mut ebuf = vec![0u8; 8 << 10];
        let mut st = RunState::new(req.timeout.map(after), child.pid());

        loop {
            if st.finished() {
                break;
            }
            let room = st.room(self.opts.max_output_bytes, buf.len());
            tokio::select! {
                r = stdout.read(&mut buf[..room]), if st.stdout_open => match r {
                    Ok(0) | Err(_) => st.stdout_open = false,
                    Ok(n) => {
                        st.total += n as u64;
                        mapper.push(&buf[..n], &mut out);
                        self.send_all(&mut out).await;
                        st.check_output_cap(self.opts.max_output_bytes);
                    }
                },
                r = stderr.read(&mut ebuf), if st.stderr_open => match r {
                    Ok(0) | Err(_) => st.stderr_open = false,
                    Ok(n) => tail.push(&ebuf[..n]),
                },
                line = ctl_lines.next_line(), if st.ctl_open => st.on_control(line, self.opts.grace),
                _ = cancel.cancelled(), if st.stop.is_none() => st.stop = Some(Stop::Cancelled),
                _ = self.tx.closed(), if st.stop.is_none() && !self.consumer_gone => {
                    self.consumer_gone = true;
                    st.stop = Some(Stop::ConsumerGone);
                }
                _ = sleep_until(st.wake()) => {
                    if st.on_wake() {
                        break;
                    }
                }
            }
            if self.consumer_gone && st.stop.is_none() {
                st.stop = Some(Stop::ConsumerGone);
            }
            if st.supervisor_lost && !st.stdout_open && !st.stderr_open {
                break;
            }
            if st.stop.is_some() && st.hard_deadline.is_none() {
                // Ask the supervisor to stop pi: SIGTERM first, SIGKILL after the grace period.
                let _ = ctl_write.write_all(b"cancel\n").await;
                let _ = ctl_write.shutdown().await;
                st.hard_deadline = Some(after(
                    self.opts.grace.min(MAX_WAIT)
                        + self.opts.kill_wait.min(MAX_WAIT)
                        + Duration::from_secs(2),
                ));
                // Unless it is stopped (SIGSTOP): then it will neither stop pi nor report,
                // and the last resort comes as soon as that is clear.
                st.stopped.start();
            }
        }

        st.kill_if_unreported(&mut child);
        let status = child.wait().await;
        writer.abort();

        let exit = st.exit();
        let cause = st.end_cause(&status, req.timeout, req.agent.name());
        mapper.finish(
            StreamEnd {
                exit,
                stderr_tail: tail.text(),
                cause,
            },
            &mut out,
        );
        self.send_all(&mut out).await;
    }
}

/// The mapper of the agent's stdout: pi's, Claude Code's stream-json, Codex's `exec --json`
/// or Gemini CLI's stream-json (one per agent, chosen exhaustively). One per run, held by the
/// run's future: the size of the larger variant costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
enum StreamMapper {
    Pi(Mapper),
    Claude(ClaudeMapper),
    Codex(CodexMapper),
    Gemini(GeminiMapper),
}

impl StreamMapper {
    fn new(agent: Agent, opts: MapperOptions) -> StreamMapper {
        match agent {
            Agent::Pi => StreamMapper::Pi(Mapper::new(opts)),
            Agent::Claude => StreamMapper::Claude(ClaudeMapper::new(opts)),
            Agent::Codex => StreamMapper::Codex(CodexMapper::new(opts)),
            Agent::Gemini => StreamMapper::Gemini(GeminiMapper::new(opts)),
        }
    }

    fn push(&mut self, chunk: &[u8], out: &mut Vec<Message>) {
        match self {
            StreamMapper::Pi(m) => m.push(chunk, out),
            StreamMapper::Claude(m) => m.push(chunk, out),
            StreamMapper::Codex(m) => m.push(chunk, out),
            StreamMapper::Gemini(m) => m.push(chunk, out),
        }
    }

    fn finish(&mut self, end: StreamEnd, out: &mut Vec<Message>) {
        match self {
            StreamMapper::Pi(m) => m.finish(end, out),
            StreamMapper::Claude(m) => m.finish(end, out),
            StreamMapper::Codex(m) => m.finish(end, out),
            StreamMapper::Gemini(m) => m.finish(end, out),
        }
    }
}

/// The prompt goes on stdin, then stdin is closed: pi reads to EOF. The writer runs as a
/// task of its own (pi may read its stdin late, or never).
fn write_prompt(child: &mut SupervisorChild, prompt: &str) -> tokio::task::JoinHandle<()> {
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let prompt = prompt.to_owned().into_bytes();
    tokio::spawn(async move {
        let _ = stdin.write_all(&prompt).await;
        let _ = stdin.shutdown().await;
    })
}

/// What the run's select loop knows: which of pi's stdout, stderr and the control socket
/// are still open, what the supervisor reported, why we stop, and the deadlines.
struct RunState {
    stdout_open: bool,
    stderr_open: bool,
    ctl_open: bool,
    /// The supervisor's `exited` report.
    exited: Option<Event>,
    /// The supervisor's `spawn_failed` report.
    spawn_failed: Option<String>,
    /// pi's pid (it leads its own process group), once the supervisor reported it.
    pi_pid: Option<i32>,
    stop: Option<Stop>,
    /// The control socket closed before the supervisor reported how pi ended.
    supervisor_lost: bool,
    /// Bytes read from pi's stdout so far.
    total: u64,
    /// When the request's timeout ends the run.
    timeout: Option<tokio::time::Instant>,
    /// Once a stop is requested, the supervisor has grace + kill wait + 2 s to report; then
    /// we act alone (sooner when it is stopped: [`RunState::stopped`]).
    hard_deadline: Option<tokio::time::Instant>,
    /// Once pi is reported gone, stdout must close soon (the supervisor killed the rest).
    drain_deadline: Option<tokio::time::Instant>,
    /// Once a stop is requested, whether the supervisor is stopped: then we act alone at once.
    stopped: StoppedWatch,
}

impl RunState {
    fn new(timeout: Option<tokio::time::Instant>, supervisor: Option<i32>) -> Self {
        RunState {
            stdout_open: true,
            stderr_open: true,
            ctl_open: true,
            exited: None,
            spawn_failed: None,
            pi_pid: None,
            stop: None,
            supervisor_lost: false,
            total: 0,
            timeout,
            hard_deadline: None,
            drain_deadline: None,
            stopped: StoppedWatch::new(supervisor),
        }
    }

    /// Nothing more to read or wait for.
    fn finished(&self) -> bool {
        if !self.stdout_open && !self.ctl_open && !self.stderr_open {
            return true;
        }
        if !self.stdout_open && self.exited.is_some() && !self.stderr_open {
            return true;
        }
        self.spawn_failed.is_some() && !self.ctl_open
    }

    /// How much of pi's stdout the next read may take: under an output cap, no more is
    /// read (and mapped) than takes the run past it.
    fn room(&self, max_output_bytes: Option<u64>, buf_len: usize) -> usize {
        match max_output_bytes {
            Some(cap) if self.total <= cap => usize::try_from(cap - self.total + 1)
                .unwrap_or(usize::MAX)
                .min(buf_len),
            _ => buf_len,
        }
    }

    /// Past the output cap, the run stops (once).
    fn check_output_cap(&mut self, max_output_bytes: Option<u64>) {
        if let Some(cap) = max_output_bytes {
            if self.total > cap && self.stop.is_none() {
                self.stop = Some(Stop::OutputLimit(cap));
            }
        }
    }

    /// A line from the supervisor (or the control socket's end).
    fn on_control(&mut self, line: std::io::Result<Option<String>>, grace: Duration) {
        match line {
            Ok(Some(l)) => match serde_json::from_str::<Event>(&l) {
                Ok(Event::Started { pid }) => self.pi_pid = Some(pid),
                Ok(Event::SpawnFailed { error, .. }) => self.spawn_failed = Some(error),
                Ok(e @ Event::Exited { .. }) => {
                    self.exited = Some(e);
                    self.drain_deadline =
                        Some(tokio::time::Instant::now() + Duration::from_secs(2));
                }
                Err(_) => {}
            },
            _ => {
                self.ctl_open = false;
                if self.exited.is_none() && self.spawn_failed.is_none() {
                    // The supervisor is gone without reporting: it was killed. pi got
                    // SIGTERM from the kernel (its parent-death signal) and cleans up
                    // its tools; we make sure of pi's own group and end now, whatever
                    // still holds stdout.
                    self.supervisor_lost = true;
                    if let Some(pid) = self.pi_pid {
                        let _ = nix::sys::signal::kill(
                            nix::unistd::Pid::from_raw(-pid),
                            nix::sys::signal::Signal::SIGTERM,
                        );
                    }
                    self.hard_deadline = Some(after(grace));
                }
            }
        }
    }

    /// The next deadline to wake at: the timeout (unless a stop is under way), the hard
    /// deadline, the drain deadline, the next look at whether the supervisor is stopped.
    fn wake(&self) -> Option<tokio::time::Instant> {
        [
            self.timeout.filter(|_| self.stop.is_none()),
            self.hard_deadline,
            self.drain_deadline,
            self.stopped.wake(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// A deadline passed: the timeout stops the run; true when the loop ends (the hard or
    /// the drain deadline, or the supervisor seen stopped long enough).
    fn on_wake(&mut self) -> bool {
        let now = tokio::time::Instant::now();
        if self.timeout.is_some_and(|t| now >= t) && self.stop.is_none() {
            self.stop = Some(Stop::Timeout);
        }
        // A stopped supervisor that has reported how pi ended is left to the drain deadline.
        let stopped = self.stopped.look() && self.exited.is_none() && self.spawn_failed.is_none();
        self.hard_deadline.is_some_and(|d| now >= d)
            || self.drain_deadline.is_some_and(|d| now >= d)
            || stopped
    }

    /// Last resort when the supervisor did not report (stopped, or hung): kill everything
    /// below it, pi's group and the supervisor ourselves. Its descendants include the tools
    /// that left pi's group for a session of their own: the supervisor, their subreaper,
    /// would have killed them, and a stopped one cannot.
    fn kill_if_unreported(&self, child: &mut SupervisorChild) {
        if self.exited.is_none() && self.spawn_failed.is_none() {
            if let Some(sup) = child.pid() {
                pi_procs::kill_descendants(sup);
            }
            if let Some(pid) = self.pi_pid {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(-pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            let _ = child.start_kill();
        }
    }

    /// How pi ended, as the supervisor reported it.
    fn exit(&self) -> Option<ExitInfo> {
        match &self.exited {
            Some(Event::Exited { code, signal, .. }) => Some(ExitInfo {
                code: *code,
                signal: signal.clone(),
            }),
            _ => None,
        }
    }

    /// Why the stream ends, given the supervisor's own exit status.
    fn end_cause(
        self,
        status: &std::io::Result<std::process::ExitStatus>,
        timeout: Option<Duration>,
        pi: &str,
    ) -> EndCause {
        if self.supervisor_lost {
            EndCause::Failed {
                reason: FailureReason::ProcessSignal,
                message: format!(
                    "the supervisor died ({}) before {pi} ended; {pi}'s process group was stopped (SIGTERM, then SIGKILL)",
                    crate::wait::ended(status)
                ),
            }
        } else if let Some(e) = self.spawn_failed {
            EndCause::Failed {
                reason: FailureReason::SpawnFailed,
                message: e,
            }
        } else {
            match &self.stop {
                Some(Stop::Cancelled) | Some(Stop::ConsumerGone) => EndCause::Cancelled,
                Some(Stop::Timeout) => EndCause::Failed {
                    reason: FailureReason::Timeout,
                    message: format!(
                        "{pi} did not finish within {:?}",
                        timeout.unwrap_or_default()
                    ),
                },
                Some(Stop::OutputLimit(cap)) => EndCause::Failed {
                    reason: FailureReason::OutputLimit,
                    message: format!(
                        "{pi} wrote more than {cap} bytes on stdout (max_output_bytes)"
                    ),
                },
                None if self.exited.is_none() => EndCause::Failed {
                    reason: FailureReason::ProcessSignal,
                    message: format!(
                        "the supervisor ended without reporting {pi}'s exit ({status:?})"
                    ),
                },
                // The supervisor was told to stop by a signal (a terminal's Ctrl-C reaches the
                // whole foreground group, the supervisor included): that is a cancel too.
                None if matches!(
                    self.exited,
                    Some(Event::Exited {
                        cancelled: true,
                        ..
                    })
                ) =>
                {
                    EndCause::Cancelled
                }
                None => EndCause::Eof,
            }
        }
    }
}
