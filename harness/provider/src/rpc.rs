//! An RPC session: pi started once in `--mode rpc` under the supervisor, driven by
//! commands, with a normalized stream per prompt (the same [`Message`]s as json mode).
//!
//! One task owns the process: it writes commands (each with an id of its own), routes
//! pi's `response` lines to the command that asked by that id, and maps the events of the
//! run a prompt started with a fresh [`Mapper`] until the run is settled (`agent_settled`;
//! pi 0.73.1 has none: `agent_end` without a pending retry). [`RpcSession::shutdown`], or
//! dropping the session, stops pi in order: stdin closed (pi's orderly exit), then after
//! the grace period the supervisor's SIGTERM, grace, SIGKILL of everything below pi. A
//! prompt still running then ends with `terminal.cancelled`; one whose pi died ends with
//! `terminal.failed`. Retry belongs to the caller, as in json mode.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};
use tokio_stream::wrappers::ReceiverStream;

use crate::argv::grammar_for;
pub use crate::argv::rpc_argv;
use crate::probe::{probe_version, which};
use crate::request::{ProviderOptions, Request};
use crate::spawn::{spawn_supervised, supervisor_from_env, Spawned, SupervisorChild};
use crate::stderr_tail::StderrTail;
use crate::supervisor::Event;
use crate::wait::{sleep_until, MAX_WAIT};
use pi_wire::framing::{Line, LineSplitter};
use pi_wire::mapper::{EndCause, Mapper, MapperOptions, StreamEnd};
use pi_wire::message::{ExitInfo, Failure, FailureReason, Message};
use pi_wire::secret::SecretFilter;

/// Why a command got no answer it could use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RpcError {
    /// pi answered `success: false` with this error.
    #[error("pi refused the command: {0}")]
    Rejected(String),
    /// The session is over (pi exited, or it was shut down) before pi answered.
    #[error("the session is over: {0}")]
    Closed(String),
}

enum Op {
    /// A line written as it is (no id, nothing waits for an answer).
    Raw(String),
    /// A signal for pi.
    Signal(nix::sys::signal::Signal),
    Send {
        command: Value,
        /// A prompt: where its run's messages go once pi accepts it.
        stream: Option<mpsc::Sender<Message>>,
        reply: oneshot::Sender<Result<Value, RpcError>>,
    },
    Shutdown {
        reply: oneshot::Sender<Option<ExitInfo>>,
    },
}

/// pi in RPC mode, started once. See the module doc. Clones share the session (commands
/// may be sent concurrently); it ends when [`RpcSession::shutdown`] is called on one, or
/// when the last clone is dropped.
#[derive(Clone)]
pub struct RpcSession {
    ops: mpsc::Sender<Op>,
    version: String,
    lines: tokio::sync::watch::Receiver<u64>,
}

impl RpcSession {
    /// Start pi for `req` (its prompt, timeout and session-less fields as in json mode;
    /// the prompt is not sent: use [`RpcSession::prompt`]). An error is the failure that
    /// kept pi from starting.
    pub async fn start(opts: ProviderOptions, req: Request) -> Result<RpcSession, Failure> {
        let fail = |reason, message| Failure {
            reason,
            message,
            exit: None,
            stderr_tail: None,
            invalid_lines: Vec::new(),
            invalid_lines_dropped: 0,
        };
        let pi = match &req.pi_path {
            Some(p) => p.clone(),
            None => which("pi").ok_or_else(|| {
                fail(
                    FailureReason::SpawnFailed,
                    "cannot start pi: not found on PATH".into(),
                )
            })?,
        };
        let version = match &req.pi_version {
            Some(v) => v.clone(),
            None => probe_version(&pi, &req.env)
                .await
                .map_err(|e| fail(FailureReason::SpawnFailed, e))?,
        };
        let argv = rpc_argv(&req, &version).map_err(|e| fail(FailureReason::InvalidRequest, e))?;
        let supervisor: Option<PathBuf> = opts.supervisor.clone().or_else(supervisor_from_env);
        let mut spawned = spawn_supervised(&opts, &req, &pi, &argv, supervisor.as_deref())
            .map_err(|e| fail(FailureReason::SpawnFailed, e))?;
        // The supervisor's first word: pi runs, or could not be started.
        let pid = match spawned.ctl_lines.next_line().await {
            Ok(Some(l)) => match serde_json::from_str::<Event>(&l) {
                Ok(Event::Started { pid }) => pid,
                Ok(Event::SpawnFailed { error, .. }) => {
                    let _ = spawned.child.wait().await;
                    return Err(fail(FailureReason::SpawnFailed, error));
                }
                _ => {
                    let _ = spawned.child.start_kill();
                    let _ = spawned.child.wait().await;
                    return Err(fail(
                        FailureReason::SpawnFailed,
                        format!("the supervisor said {l:?} instead of starting pi"),
                    ));
                }
            },
            _ => {
                let status = spawned.child.wait().await;
                return Err(fail(
                    FailureReason::SpawnFailed,
                    format!(
                        "the supervisor ended ({}) before starting pi",
                        crate::wait::ended(&status)
                    ),
                ));
            }
        };
        let (ops, rx) = mpsc::channel(16);
        let settles = grammar_for(&version).has(pi_grammar::Feature::AgentSettled);
        let secret = req.api_key.as_ref().map(|k| k.value.clone());
        let (lines_tx, lines) = tokio::sync::watch::channel(0u64);
        tokio::spawn(actor(spawned, pid, rx, lines_tx, opts, settles, secret));
        Ok(RpcSession {
            ops,
            version,
            lines,
        })
    }

    /// The pi version the session runs.
    pub fn pi_version(&self) -> &str {
        &self.version
    }

    /// Send any command (an object with `type`; the session adds its own `id`) and wait for
    /// its response's `data` (`null` when it has none).
    pub async fn command(&self, command: Value) -> Result<Value, RpcError> {
        self.send(command, None).await
    }

    /// Start a run with `text`. pi refuses a prompt while a run streams (steer or follow up
    /// instead). The stream ends with one terminal message when the run is settled, or when
    /// the session ends under it.
    pub async fn prompt(&self, text: &str) -> Result<ReceiverStream<Message>, RpcError> {
        let (tx, rx) = mpsc::channel(256);
        self.send(json!({"type": "prompt", "message": text}), Some(tx))
            .await?;
        Ok(ReceiverStream::new(rx))
    }

    /// Queue `text` for delivery after the current turn's tool calls (pi's `steer`).
    pub async fn steer(&self, text: &str) -> Result<(), RpcError> {
        self.send(json!({"type": "steer", "message": text}), None)
            .await
            .map(drop)
    }

    /// Queue `text` for delivery when the run would otherwise end (pi's `follow_up`).
    pub async fn follow_up(&self, text: &str) -> Result<(), RpcError> {
        self.send(json!({"type": "follow_up", "message": text}), None)
            .await
            .map(drop)
    }

    /// Abort the current run; pi answers once the run is closed (its stream ends first,
    /// with `terminal.failed` reason `aborted`).
    pub async fn abort(&self) -> Result<(), RpcError> {
        self.send(json!({"type": "abort"}), None).await.map(drop)
    }

    /// pi's `get_state`.
    pub async fn state(&self) -> Result<Value, RpcError> {
        self.send(json!({"type": "get_state"}), None).await
    }

    /// Write `line` on pi's stdin as it is (a malformed command, say): no id is added and
    /// nothing waits for pi's answer.
    pub async fn send_raw(&self, line: &str) -> Result<(), RpcError> {
        self.ops
            .send(Op::Raw(line.to_string()))
            .await
            .map_err(|_| RpcError::Closed("pi is no longer running".into()))
    }

    /// Send pi a signal (what a client's SIGTERM does is pi's business: see docs/provider.md).
    pub async fn signal(&self, sig: nix::sys::signal::Signal) -> Result<(), RpcError> {
        self.ops
            .send(Op::Signal(sig))
            .await
            .map_err(|_| RpcError::Closed("pi is no longer running".into()))
    }

    /// How many lines pi has written on stdout so far (responses included).
    pub fn stdout_lines(&self) -> u64 {
        *self.lines.borrow()
    }

    /// Wait until pi has written at least `n` stdout lines; false when its stdout closed
    /// before.
    pub async fn wait_stdout_lines(&self, n: u64) -> bool {
        let mut rx = self.lines.clone();
        let reached = rx.wait_for(|seen| *seen >= n).await.is_ok();
        reached
    }

    async fn send(
        &self,
        command: Value,
        stream: Option<mpsc::Sender<Message>>,
    ) -> Result<Value, RpcError> {
        if !command.is_object() {
            // pi would answer it without an id: nothing could wait for that answer.
            return Err(RpcError::Rejected(format!(
                "a command is a JSON object with a `type`, not {command} (send_raw writes any line)"
            )));
        }
        let (reply, answer) = oneshot::channel();
        let closed = || RpcError::Closed("pi is no longer running".into());
        self.ops
            .send(Op::Send {
                command,
                stream,
                reply,
            })
            .await
            .map_err(|_| closed())?;
        answer.await.map_err(|_| closed())?
    }

    /// Stop pi in order (stdin closed; after the grace period SIGTERM, then SIGKILL of
    /// everything below it) and wait until nothing is left. Returns how pi ended.
    pub async fn shutdown(self) -> Option<ExitInfo> {
        let (reply, answer) = oneshot::channel();
        if self.ops.send(Op::Shutdown { reply }).await.is_err() {
            return None;
        }
        answer.await.ok().flatten()
    }
}

/// The run a prompt started.
struct Active {
    mapper: Mapper,
    tx: mpsc::Sender<Message>,
    secret: Option<SecretFilter>,
    /// An `abort` was sent while it ran: pi 0.87.1 may close such a run as an error
    /// (`stopReason: "error"`, "This operation was aborted") and says nothing in
    /// `agent_settled`; the stream says `aborted` on every version.
    abort_sent: bool,
}

impl Active {
    async fn send(&mut self, msgs: &mut Vec<Message>) {
        let mut clean = Vec::with_capacity(msgs.len());
        for m in msgs.drain(..) {
            match &mut self.secret {
                Some(f) => f.filter(m, &mut clean),
                None => clean.push(m),
            }
        }
        for m in clean {
            // A consumer that dropped its stream does not stop the session.
            let _ = self.tx.send(m).await;
        }
    }

    async fn finish(mut self, end: StreamEnd) {
        let mut out = Vec::new();
        self.mapper.finish(end, &mut out);
        if self.abort_sent {
            for m in &mut out {
                if let Message::TerminalFailed(f) = m {
                    if f.reason == FailureReason::ModelError && f.exit.is_none() {
                        f.reason = FailureReason::Aborted;
                    }
                }
            }
        }
        self.send(&mut out).await;
    }
}

struct Pending {
    id: String,
    reply: oneshot::Sender<Result<Value, RpcError>>,
    stream: Option<mpsc::Sender<Message>>,
}

/// The task that owns pi's process for the session: started by [`RpcSession::start`],
/// it ends when pi and everything below it are gone.
async fn actor(
    spawned: Spawned,
    pid: i32,
    mut ops: mpsc::Receiver<Op>,
    lines_seen: tokio::sync::watch::Sender<u64>,
    opts: ProviderOptions,
    settles: bool,
    secret: Option<String>,
) {
    let Spawned {
        mut child,
        mut ctl_lines,
        ctl_write,
    } = spawned;
    let stdin = child.stdin.take();
    let mut stdout = child.stdout.take().expect("stdout is piped");
    let mut stderr = child.stderr.take().expect("stderr is piped");
    let mut lines = LineSplitter::new(opts.max_line_bytes);
    let mut buf = vec![0u8; 64 << 10];
    let mut ebuf = vec![0u8; 8 << 10];
    let mut a = Actor {
        tail: StderrTail::new(opts.stderr_tail_bytes, secret.as_deref()),
        stdin,
        ctl_write,
        pid,
        opts,
        settles,
        secret,
        lines_seen,
        pending: Vec::new(),
        active: None,
        next_id: 0,
        stdout_open: true,
        stderr_open: true,
        ctl_open: true,
        ops_open: true,
        pi_pid: Some(pid),
        exited: None,
        shutting_down: false,
        shutdown_replies: Vec::new(),
        cancel_at: None,
        hard_at: None,
        drain_at: None,
    };

    loop {
        if a.exited.is_some() && !a.stdout_open && !a.stderr_open {
            break;
        }
        if !a.ctl_open && !a.stdout_open && !a.stderr_open {
            break;
        }
        let wake = [a.cancel_at, a.hard_at, a.drain_at]
            .into_iter()
            .flatten()
            .min();
        // Lines read, to act on after the select (the mapper and replies are async).
        let mut got: Vec<Vec<u8>> = Vec::new();
        tokio::select! {
            op = ops.recv(), if a.ops_open && !a.shutting_down => a.on_op(op).await,
            r = stdout.read(&mut buf), if a.stdout_open => match r {
                Ok(0) | Err(_) => {
                    a.stdout_open = false;
                    lines.finish(&mut |l| got.push(line_bytes(l)));
                }
                Ok(n) => lines.push(&buf[..n], &mut |l| got.push(line_bytes(l))),
            },
            r = stderr.read(&mut ebuf), if a.stderr_open => match r {
                Ok(0) | Err(_) => a.stderr_open = false,
                Ok(n) => a.tail.push(&ebuf[..n]),
            },
            line = ctl_lines.next_line(), if a.ctl_open => a.on_control(line),
            _ = sleep_until(wake) => {
                if a.on_wake().await {
                    break;
                }
            }
        }
        a.after_select(got).await;
    }
    a.end(&mut child).await;
}

/// What the session's task holds between two events: pi's stdin, the control socket's
/// writing half, the stderr tail, the commands waiting for pi's answer, the run a prompt
/// started, how far the shutdown is, and its deadlines.
struct Actor {
    stdin: Option<tokio::net::unix::pipe::Sender>,
    ctl_write: tokio::net::unix::OwnedWriteHalf,
    tail: StderrTail,
    /// pi's pid as the session started it (the target of [`Op::Signal`]).
    pid: i32,
    opts: ProviderOptions,
    settles: bool,
    secret: Option<String>,
    lines_seen: tokio::sync::watch::Sender<u64>,
    pending: Vec<Pending>,
    active: Option<Active>,
    next_id: u64,
    stdout_open: bool,
    stderr_open: bool,
    ctl_open: bool,
    ops_open: bool,
    /// pi's process group, as the supervisor last reported it.
    pi_pid: Option<i32>,
    exited: Option<ExitInfo>,
    shutting_down: bool,
    shutdown_replies: Vec<oneshot::Sender<Option<ExitInfo>>>,
    // Shutdown: stdin closed now; the supervisor's cancel at `cancel_at`; our own SIGKILL at
    // `hard_at`.
    cancel_at: Option<tokio::time::Instant>,
    hard_at: Option<tokio::time::Instant>,
    drain_at: Option<tokio::time::Instant>,
}

impl Actor {
    /// A request from a [`RpcSession`] handle (`None`: the last handle is gone).
    async fn on_op(&mut self, op: Option<Op>) {
        match op {
            Some(Op::Raw(text)) => {
                let mut line = text.into_bytes();
                line.push(b'\n');
                if let Some(w) = self.stdin.as_mut() {
                    let _ = w.write_all(&line).await;
                    let _ = w.flush().await;
                }
            }
            Some(Op::Signal(sig)) => {
                if self.exited.is_none() {
                    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.pid), sig);
                }
            }
            Some(Op::Send {
                command,
                stream,
                reply,
            }) => self.send_command(command, stream, reply).await,
            Some(Op::Shutdown { reply }) => {
                self.shutdown_replies.push(reply);
                self.shutting_down = true;
            }
            None => {
                self.ops_open = false;
                self.shutting_down = true;
            }
        }
    }

    /// Write a command with an id of ours; its answer goes to `reply` when pi gives it.
    async fn send_command(
        &mut self,
        mut command: Value,
        stream: Option<mpsc::Sender<Message>>,
        reply: oneshot::Sender<Result<Value, RpcError>>,
    ) {
        if command["type"] == "abort" {
            if let Some(run) = self.active.as_mut() {
                run.abort_sent = true;
            }
        }
        self.next_id += 1;
        let id = format!("pih-{}", self.next_id);
        if let Some(o) = command.as_object_mut() {
            o.insert("id".into(), Value::from(id.clone()));
        }
        let mut line = command.to_string().into_bytes();
        line.push(b'\n');
        let written = match self.stdin.as_mut() {
            Some(w) => w.write_all(&line).await.and(w.flush().await).is_ok(),
            None => false,
        };
        if written {
            self.pending.push(Pending { id, reply, stream });
        } else {
            let _ = reply.send(Err(RpcError::Closed("pi's stdin is closed".into())));
        }
    }

    /// A line from the supervisor (or the control socket's end).
    fn on_control(&mut self, line: std::io::Result<Option<String>>) {
        match line {
            Ok(Some(l)) => match serde_json::from_str::<Event>(&l) {
                Ok(Event::Started { pid }) => self.pi_pid = Some(pid),
                Ok(Event::Exited { code, signal, .. }) => {
                    self.exited = Some(ExitInfo { code, signal });
                    self.drain_at = Some(tokio::time::Instant::now() + Duration::from_secs(2));
                }
                Ok(Event::SpawnFailed { error, .. }) => {
                    self.exited = Some(ExitInfo {
                        code: None,
                        signal: None,
                    });
                    self.tail.push(error.as_bytes());
                }
                Err(_) => {}
            },
            _ => {
                self.ctl_open = false;
                if self.exited.is_none() {
                    // The supervisor is gone: stop pi's group ourselves, now.
                    if let Some(pid) = self.pi_pid {
                        let _ = nix::sys::signal::kill(
                            nix::unistd::Pid::from_raw(-pid),
                            nix::sys::signal::Signal::SIGKILL,
                        );
                    }
                    self.hard_at = Some(tokio::time::Instant::now() + Duration::from_secs(1));
                }
            }
        }
    }

    /// A deadline passed: at `cancel_at` the supervisor is asked to stop pi; true when the
    /// task ends (the hard or the drain deadline).
    async fn on_wake(&mut self) -> bool {
        let now = tokio::time::Instant::now();
        if self.cancel_at.is_some_and(|t| now >= t) {
            self.cancel_at = None;
            // pi did not leave on its own: SIGTERM, grace, SIGKILL of everything.
            let _ = self.ctl_write.write_all(b"cancel\n").await;
            let _ = self.ctl_write.shutdown().await;
            self.hard_at = Some(
                tokio::time::Instant::now()
                    + self.opts.grace.min(MAX_WAIT)
                    + self.opts.kill_wait.min(MAX_WAIT)
                    + Duration::from_secs(2),
            );
        }
        self.hard_at.is_some_and(|t| now >= t) || self.drain_at.is_some_and(|t| now >= t)
    }

    /// After each event: a shutdown closes pi's stdin (pi's orderly exit); the stdout lines
    /// read go to their command or run.
    async fn after_select(&mut self, got: Vec<Vec<u8>>) {
        if self.shutting_down && self.stdin.is_some() {
            // pi's orderly exit: stdin closed.
            self.stdin = None;
            self.cancel_at = Some(tokio::time::Instant::now() + self.opts.grace.min(MAX_WAIT));
        }
        let n = got.len() as u64;
        for line in got {
            handle_line(
                &line,
                &mut self.pending,
                &mut self.active,
                self.settles,
                &self.secret,
            )
            .await;
        }
        if n > 0 {
            self.lines_seen.send_modify(|seen| *seen += n);
        }
    }

    /// The session is over: whatever is still there (pi's group and the supervisor) is
    /// killed and reaped; the run, the commands and the shutdowns still waiting get their
    /// answer.
    async fn end(mut self, child: &mut SupervisorChild) {
        if self.exited.is_none() {
            if let Some(pid) = self.pi_pid {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(-pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            let _ = child.start_kill();
        }
        let _ = child.wait().await;
        if let Some(run) = self.active.take() {
            let cause = if self.shutting_down {
                EndCause::Cancelled
            } else {
                EndCause::Eof
            };
            run.finish(StreamEnd {
                exit: self.exited.clone(),
                stderr_tail: self.tail.text(),
                cause,
            })
            .await;
        }
        for p in self.pending {
            let _ = p.reply.send(Err(RpcError::Closed(match &self.exited {
                Some(e) => format!("pi ended ({}) before answering", crate::wait::ended_info(e)),
                None => "pi ended before answering".into(),
            })));
        }
        for r in self.shutdown_replies {
            let _ = r.send(self.exited.clone());
        }
    }
}

/// A framed line's bytes; an oversized one keeps its head, which the run's mapper then
/// reports as a line it could not read (nothing is dropped silently).
fn line_bytes(l: Line<'_>) -> Vec<u8> {
    match l {
        Line::Complete { bytes, .. } => bytes.to_vec(),
        Line::Oversized { head, .. } => head.to_vec(),
    }
}

/// One stdout line: a response goes to the command that asked; anything else is an event
/// of the active run.
async fn handle_line(
    line: &[u8],
    pending: &mut Vec<Pending>,
    active: &mut Option<Active>,
    settles: bool,
    secret: &Option<String>,
) {
    let is_response = line.starts_with(b"{\"id\":") || line.starts_with(b"{\"type\":\"response\"");
    if is_response {
        if let Ok(v) = serde_json::from_slice::<Value>(line) {
            if v["type"] == "response" {
                let id = v["id"].as_str().unwrap_or("");
                if let Some(at) = pending.iter().position(|p| p.id == id) {
                    let p = pending.remove(at);
                    if v["success"] == true {
                        if let Some(tx) = p.stream {
                            *active = Some(Active {
                                mapper: Mapper::new(MapperOptions::default()),
                                tx,
                                secret: secret.as_deref().and_then(SecretFilter::new),
                                abort_sent: false,
                            });
                        }
                        let _ = p
                            .reply
                            .send(Ok(v.get("data").cloned().unwrap_or(Value::Null)));
                    } else {
                        let e = v["error"].as_str().unwrap_or("no error text").to_string();
                        let _ = p.reply.send(Err(RpcError::Rejected(e)));
                    }
                }
                return;
            }
        }
    }
    let Some(run) = active.as_mut() else {
        return; // an event with no run of ours (a queued message's turn already ended)
    };
    let mut out = Vec::new();
    run.mapper.push(line, &mut out);
    run.mapper.push(b"\n", &mut out);
    run.send(&mut out).await;
    let ends = if settles {
        memchr::memmem::find(line, b"\"type\":\"agent_settled\"").is_some()
    } else {
        run.mapper.is_settled()
    };
    if ends {
        if let Some(run) = active.take() {
            run.finish(StreamEnd {
                exit: None,
                stderr_tail: None,
                cause: EndCause::Eof,
            })
            .await;
        }
    }
}
