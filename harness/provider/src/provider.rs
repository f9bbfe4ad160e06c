//! The reference provider: one attempt at running pi, as a stream of normalized messages.
//!
//! It owns the I/O half of the product: building pi's command line for the pi version at
//! hand, spawning pi under the supervisor (see [`crate::supervisor`] for why a separate
//! process), feeding stdout to the pure [`Mapper`], keeping a bounded, redacted stderr tail,
//! enforcing the output cap and timeout, and cancelling in order (SIGTERM, grace, SIGKILL of
//! everything below pi). The stream always ends with exactly one terminal message; nothing here
//! panics or returns an `Err` for a failed run. Retrying is the caller's business
//! ([`crate::retry`]).

use std::collections::HashMap;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use futures_core::Stream;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::supervisor::Event;
use pi_grammar::{is_valid_session_id, Grammar};
use pi_wire::mapper::{EndCause, Mapper, MapperOptions, StreamEnd};
use pi_wire::message::{ExitInfo, Failure, FailureReason, Message};
use pi_wire::secret::SecretFilter;

/// What to run.
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// The pi binary; `pi` on `PATH` when absent.
    pub pi_path: Option<PathBuf>,
    /// pi's version; probed once per binary with `pi --version` when absent.
    pub pi_version: Option<String>,
    /// The prompt, delivered on stdin (never in argv: a leading `@` or `-` would be misread).
    pub prompt: String,
    pub provider: Option<String>,
    pub model: Option<String>,
    pub session: Option<SessionRef>,
    /// `--no-session`: keep nothing on disk.
    pub no_session: bool,
    /// Thinking level, checked against the levels this pi version accepts.
    pub thinking: Option<String>,
    /// Allow-list of tools (`--tools`); pi's defaults when absent.
    pub tools: Option<Vec<String>>,
    /// Tools to disable: `--exclude-tools` on pi >= 0.87, an allow-list without them before.
    pub exclude_tools: Vec<String>,
    pub system_prompt: Option<String>,
    pub append_system_prompt: Vec<String>,
    /// The API key, passed only in this environment variable.
    pub api_key: Option<ApiKey>,
    /// Extra environment for pi.
    pub env: Vec<(String, String)>,
    pub cwd: Option<PathBuf>,
    /// End the run with `terminal.failed` (`timeout`) after this long.
    pub timeout: Option<Duration>,
}

/// A session to create or continue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRef {
    /// Session id: `--session-id ID` on pi >= 0.87; on 0.73.1 the file `DIR/ID.jsonl` via `--session`.
    pub id: String,
    /// Where pi 0.73.1 keeps the session file (required there, ignored on 0.87.1).
    pub dir: Option<PathBuf>,
    /// The caller continues an existing session: the stream starts with `session.resumed`.
    pub resume: bool,
}

#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey {
    /// The provider's variable, for example `OPENAI_API_KEY`.
    pub env_var: String,
    pub value: String,
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ApiKey {{ env_var: {:?}, value: <redacted> }}",
            self.env_var
        )
    }
}

/// How the provider runs pi.
/// The longest wait the provider honours (30 days): a longer `grace`, `kill_wait` or
/// timeout is taken as this, so deadlines never overflow the clock.
pub const MAX_WAIT: Duration = Duration::from_secs(30 * 24 * 3600);

/// `now + d`, with `d` capped at [`MAX_WAIT`].
fn after(d: Duration) -> tokio::time::Instant {
    tokio::time::Instant::now() + d.min(MAX_WAIT)
}

#[derive(Debug, Clone)]
pub struct ProviderOptions {
    /// A `pi-supervisor` binary to use. When absent (the default), `$PI_HARNESS_SUPERVISOR`,
    /// else the supervisor embedded in this executable (see [`crate::embedded`]): no second
    /// binary to install.
    pub supervisor: Option<PathBuf>,
    /// Time pi gets after SIGTERM before everything is SIGKILLed.
    pub grace: Duration,
    /// Time allowed for SIGKILLed processes to disappear.
    pub kill_wait: Duration,
    /// Longest stdout line kept; longer ones are skipped and reported (default 16 MiB).
    pub max_line_bytes: usize,
    /// Optional cap on all stdout bytes of a run. Keep it large on pi 0.73.1: every token
    /// re-sends the whole answer twice, so output grows quadratically (2000 deltas = 34 MB).
    pub max_output_bytes: Option<u64>,
    /// Bytes of stderr kept (the end of it).
    pub stderr_tail_bytes: usize,
    /// Set `PI_OFFLINE=1` so pi makes no start-up network calls.
    pub offline: bool,
}

impl Default for ProviderOptions {
    fn default() -> Self {
        ProviderOptions {
            supervisor: None,
            grace: Duration::from_secs(2),
            kill_wait: Duration::from_secs(5),
            max_line_bytes: 16 << 20,
            max_output_bytes: None,
            stderr_tail_bytes: 64 << 10,
            offline: true,
        }
    }
}

/// Runs pi once per [`Provider::execute`] call.
#[derive(Debug, Clone, Default)]
pub struct Provider {
    opts: ProviderOptions,
}

impl Provider {
    pub fn new(opts: ProviderOptions) -> Self {
        Provider { opts }
    }

    pub fn options(&self) -> &ProviderOptions {
        &self.opts
    }

    /// Run pi once. The returned stream yields every normalized message and ends with exactly
    /// one terminal message. Cancelling `cancel` (or dropping the stream) stops pi and every
    /// process below it. Must be called inside a tokio runtime.
    pub fn execute(
        &self,
        request: Request,
        cancel: CancellationToken,
    ) -> impl Stream<Item = Message> + Send + 'static {
        let (tx, rx) = mpsc::channel(BATCHES_AHEAD);
        let opts = self.opts.clone();
        tokio::spawn(async move {
            let mut run = Run::new(opts, tx);
            run.go(request, cancel).await;
        });
        Batched {
            rx,
            current: Vec::new().into_iter(),
        }
    }
}

/// Batches of messages the run may get ahead of its consumer. A batch is what one read of
/// pi's stdout mapped to (at most [`STDOUT_PIPE_BYTES`] of input), so this bounds what
/// waits; one channel operation per batch rather than per message.
const BATCHES_AHEAD: usize = 4;

/// The run's batches, one message at a time.
struct Batched {
    rx: mpsc::Receiver<Vec<Message>>,
    current: std::vec::IntoIter<Message>,
}

impl Stream for Batched {
    type Item = Message;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Message>> {
        loop {
            if let Some(m) = self.current.next() {
                return std::task::Poll::Ready(Some(m));
            }
            match self.rx.poll_recv(cx) {
                std::task::Poll::Ready(Some(batch)) => self.current = batch.into_iter(),
                std::task::Poll::Ready(None) => return std::task::Poll::Ready(None),
                std::task::Poll::Pending => return std::task::Poll::Pending,
            }
        }
    }
}

/// A supervisor binary named by `$PI_HARNESS_SUPERVISOR` (non-empty), if any. Without one
/// (and without [`ProviderOptions::supervisor`]) the provider runs the supervisor embedded
/// in its own executable (see [`crate::embedded`]).
pub fn supervisor_from_env() -> Option<PathBuf> {
    std::env::var_os("PI_HARNESS_SUPERVISOR")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
}

/// Search `PATH` for an executable name.
pub fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// pi's command-line grammar for this version: the exact one for a pinned version, else
/// the nearest older pinned one (see `pi_grammar::Grammar::nearest`).
pub fn grammar_for(version: &str) -> Grammar {
    Grammar::nearest(version)
}

/// Thinking levels pi accepts, by version.
pub fn thinking_levels(version: &str) -> Vec<&'static str> {
    grammar_for(version).thinking_levels()
}

/// pi's built-in tools enabled by default (grep, find and ls are off unless listed).
pub const DEFAULT_TOOLS: &[&str] = &["read", "bash", "edit", "write"];

/// pi's command line for this request and version (the prompt is not in it: it goes on stdin).
pub fn build_argv(req: &Request, version: &str) -> Result<Vec<String>, String> {
    let grammar = grammar_for(version);
    let has_session_id = grammar.has_flag("--session-id");
    let has_exclude = grammar.has_flag("--exclude-tools");
    if req.provider.is_some()
        && req.model.is_none()
        && grammar.has(pi_grammar::Feature::ProviderRequiresModel)
    {
        return Err(format!(
            "pi {version} refuses --provider without --model: give a model too, or neither (pi then takes its default from settings.json)"
        ));
    }
    let mut argv: Vec<String> = vec!["--mode".into(), "json".into()];
    fn push(argv: &mut Vec<String>, flag: &str, value: &str) {
        argv.push(flag.into());
        argv.push(value.into());
    }
    if let Some(p) = &req.provider {
        push(&mut argv, "--provider", p);
    }
    if let Some(m) = &req.model {
        push(&mut argv, "--model", m);
    }
    if let Some(level) = &req.thinking {
        let levels = thinking_levels(version);
        if !levels.contains(&level.as_str()) {
            return Err(format!(
                "thinking level {level:?} is not accepted by pi {version} (accepted: {})",
                levels.join(", ")
            ));
        }
        push(&mut argv, "--thinking", level);
    }
    if req.no_session && req.session.is_some() {
        return Err("a request cannot both name a session and ask for no session".into());
    }
    if let Some(s) = &req.session {
        if !is_valid_session_id(&s.id) {
            return Err(format!(
                "session id {:?} is not valid: letters, digits, '.', '_' and '-', starting and ending with a letter or digit",
                s.id
            ));
        }
        if has_session_id {
            push(&mut argv, "--session-id", &s.id);
        } else {
            let dir = s.dir.as_ref().ok_or_else(|| {
                format!("pi {version} has no --session-id: the request must give a session dir for --session <dir>/<id>.jsonl")
            })?;
            push(
                &mut argv,
                "--session",
                &dir.join(format!("{}.jsonl", s.id)).to_string_lossy(),
            );
        }
    }
    if req.no_session {
        argv.push("--no-session".into());
    }
    let excluded: Vec<&str> = req.exclude_tools.iter().map(String::as_str).collect();
    let check_tools = |list: &[&str]| -> Result<(), String> {
        match list.iter().find(|t| t.is_empty() || t.contains(',')) {
            Some(bad) => Err(format!("tool name {bad:?} is not valid")),
            None => Ok(()),
        }
    };
    check_tools(&excluded)?;
    match (&req.tools, has_exclude) {
        (Some(tools), true) => {
            let list: Vec<&str> = tools.iter().map(String::as_str).collect();
            check_tools(&list)?;
            push(&mut argv, "--tools", &list.join(","));
        }
        (Some(tools), false) => {
            let list: Vec<&str> = tools
                .iter()
                .map(String::as_str)
                .filter(|t| !excluded.contains(t))
                .collect();
            check_tools(&list)?;
            if list.is_empty() {
                argv.push("--no-tools".into());
            } else {
                push(&mut argv, "--tools", &list.join(","));
            }
        }
        (None, false) if !excluded.is_empty() => {
            let list: Vec<&str> = DEFAULT_TOOLS
                .iter()
                .copied()
                .filter(|t| !excluded.contains(t))
                .collect();
            if list.is_empty() {
                argv.push("--no-tools".into());
            } else {
                push(&mut argv, "--tools", &list.join(","));
            }
        }
        _ => {}
    }
    if has_exclude && !excluded.is_empty() {
        push(&mut argv, "--exclude-tools", &excluded.join(","));
    }
    if let Some(sp) = &req.system_prompt {
        push(&mut argv, "--system-prompt", sp);
    }
    for a in &req.append_system_prompt {
        push(&mut argv, "--append-system-prompt", a);
    }
    if let Some(key) = &req.api_key {
        if !key.value.is_empty() && argv.iter().any(|a| a.contains(&key.value)) {
            return Err("the API key appears in an argument; it may only travel in its environment variable".into());
        }
    }
    Ok(argv)
}

static VERSIONS: OnceLock<Mutex<HashMap<PathBuf, String>>> = OnceLock::new();

/// `pi --version`, once per binary path. 0.73.1 prints it on stderr, 0.87.1 on stdout.
pub async fn probe_version(pi: &Path, env: &[(String, String)]) -> Result<String, String> {
    let cache = VERSIONS.get_or_init(Default::default);
    if let Some(v) = cache.lock().expect("version cache").get(pi) {
        return Ok(v.clone());
    }
    let out = tokio::time::timeout(
        Duration::from_secs(20),
        Command::new(pi)
            .arg("--version")
            .env("PI_OFFLINE", "1")
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .map_err(|_| format!("`{} --version` did not answer within 20 s", pi.display()))?
    .map_err(|e| format!("cannot start {}: {e}", pi.display()))?;
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let version = text
        .split_whitespace()
        .find(|w| {
            w.split('.').count() == 3
                && w.split('.')
                    .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
        })
        .ok_or_else(|| {
            format!(
                "`{} --version` printed no version: {:?}",
                pi.display(),
                text.trim()
            )
        })?
        .to_string();
    cache
        .lock()
        .expect("version cache")
        .insert(pi.to_path_buf(), version.clone());
    Ok(version)
}

/// A bounded tail of stderr with the API key blanked out.
#[derive(Debug)]
pub struct StderrTail {
    buf: Vec<u8>,
    cap: usize,
    secret: Option<Vec<u8>>,
    /// What stands for the key: the same as in every message ([`SecretFilter`]).
    replacement: &'static str,
    total: u64,
}

impl StderrTail {
    pub fn new(cap: usize, secret: Option<&str>) -> Self {
        StderrTail {
            buf: Vec::new(),
            cap,
            secret: secret
                .filter(|s| !s.is_empty())
                .map(|s| s.as_bytes().to_vec()),
            replacement: secret
                .and_then(SecretFilter::new)
                .map_or("[REDACTED]", |f| f.replacement()),
            total: 0,
        }
    }

    pub fn push(&mut self, chunk: &[u8]) {
        self.total += chunk.len() as u64;
        self.buf.extend_from_slice(chunk);
        // Keep a margin the size of the secret so a key cut by the trim is still found whole.
        let margin = self.secret.as_ref().map_or(0, Vec::len);
        let keep = self.cap + margin;
        if self.buf.len() > 2 * keep.max(1024) {
            let cut = self.buf.len() - keep;
            self.buf.drain(..cut);
        }
    }

    /// The tail as text (lossy), the key replaced (by `[REDACTED]` unless that could form
    /// the key), at most `cap` bytes.
    pub fn text(&self) -> Option<String> {
        if self.total == 0 {
            return None;
        }
        let mut data = self.buf.clone();
        if let Some(secret) = &self.secret {
            data = replace_all(&data, secret, self.replacement.as_bytes());
        }
        if data.len() > self.cap {
            data.drain(..data.len() - self.cap);
        }
        Some(String::from_utf8_lossy(&data).into_owned())
    }
}

fn replace_all(hay: &[u8], needle: &[u8], with: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(hay.len());
    let mut rest = hay;
    while let Some(i) = memchr::memmem::find(rest, needle) {
        out.extend_from_slice(&rest[..i]);
        out.extend_from_slice(with);
        rest = &rest[i + needle.len()..];
    }
    out.extend_from_slice(rest);
    out
}

/// Size asked for pi's stdout pipe, and of the buffer it is read into.
const STDOUT_PIPE_BYTES: usize = 1 << 20;

/// Why the run is being stopped from our side.
#[derive(Debug, Clone, PartialEq)]
enum Stop {
    Cancelled,
    ConsumerGone,
    Timeout,
    OutputLimit(u64),
}

struct Run {
    opts: ProviderOptions,
    tx: mpsc::Sender<Vec<Message>>,
    consumer_gone: bool,
    /// The request's API key, kept out of every message (however pi echoes it).
    secret: Option<SecretFilter>,
}

impl Run {
    fn new(opts: ProviderOptions, tx: mpsc::Sender<Vec<Message>>) -> Self {
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

    async fn go(&mut self, req: Request, cancel: CancellationToken) {
        self.secret = req
            .api_key
            .as_ref()
            .and_then(|k| SecretFilter::new(&k.value));
        if cancel.is_cancelled() {
            let mut out = vec![Message::TerminalCancelled { exit: None }];
            self.send_all(&mut out).await;
            return;
        }
        let pi = match &req.pi_path {
            Some(p) => p.clone(),
            None => match which("pi") {
                Some(p) => p,
                None => {
                    return self
                        .fail_early(
                            FailureReason::SpawnFailed,
                            "cannot start pi: not found on PATH".into(),
                        )
                        .await
                }
            },
        };
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

        // The prompt goes on stdin, then stdin is closed: pi reads to EOF.
        let mut stdin = child.stdin.take().expect("stdin is piped");
        let prompt = req.prompt.clone().into_bytes();
        let writer = tokio::spawn(async move {
            let _ = stdin.write_all(&prompt).await;
            let _ = stdin.shutdown().await;
        });
        let mut stdout = child.stdout.take().expect("stdout is piped");
        let mut stderr = child.stderr.take().expect("stderr is piped");
        // A bigger pipe: pi (0.73.1 writes lines of tens of KB) is not stopped by a full
        // pipe every few lines while we map, and one read takes what has piled up. Best
        // effort (the kernel may refuse the size; the default is 64 KiB).
        let _ = nix::fcntl::fcntl(
            stdout.as_raw_fd(),
            nix::fcntl::FcntlArg::F_SETPIPE_SZ(STDOUT_PIPE_BYTES as nix::libc::c_int),
        );

        let mut mapper = Mapper::new(MapperOptions {
            max_line_bytes: self.opts.max_line_bytes,
            resumed_session: req.session.as_ref().is_some_and(|s| s.resume),
            ..MapperOptions::default()
        });
        let mut tail = StderrTail::new(
            self.opts.stderr_tail_bytes,
            req.api_key.as_ref().map(|k| k.value.as_str()),
        );
        let mut out = Vec::new();
        let mut buf = vec![0u8; STDOUT_PIPE_BYTES];
        let mut ebuf = vec![0u8; 8 << 10];
        let (mut stdout_open, mut stderr_open, mut ctl_open) = (true, true, true);
        let mut exited: Option<Event> = None;
        let mut spawn_failed: Option<String> = None;
        let mut pi_pid: Option<i32> = None;
        let mut stop: Option<Stop> = None;
        let mut supervisor_lost = false;
        let mut total: u64 = 0;
        let timeout = req.timeout.map(after);
        // Once a stop is requested, the supervisor has grace + kill wait to report; then we act alone.
        let mut hard_deadline: Option<tokio::time::Instant> = None;
        // Once pi is reported gone, stdout must close soon (the supervisor killed the rest).
        let mut drain_deadline: Option<tokio::time::Instant> = None;

        loop {
            if !stdout_open && !ctl_open && !stderr_open {
                break;
            }
            if !stdout_open && exited.is_some() && !stderr_open {
                break;
            }
            if spawn_failed.is_some() && !ctl_open {
                break;
            }
            let sleep_until = [
                timeout.filter(|_| stop.is_none()),
                hard_deadline,
                drain_deadline,
            ]
            .into_iter()
            .flatten()
            .min();
            // Under an output cap, no more is read (and mapped) than takes the run past it.
            let room = match self.opts.max_output_bytes {
                Some(cap) if total <= cap => usize::try_from(cap - total + 1)
                    .unwrap_or(usize::MAX)
                    .min(buf.len()),
                _ => buf.len(),
            };
            tokio::select! {
                r = stdout.read(&mut buf[..room]), if stdout_open => match r {
                    Ok(0) | Err(_) => stdout_open = false,
                    Ok(n) => {
                        total += n as u64;
                        mapper.push(&buf[..n], &mut out);
                        self.send_all(&mut out).await;
                        if let Some(cap) = self.opts.max_output_bytes {
                            if total > cap && stop.is_none() {
                                stop = Some(Stop::OutputLimit(cap));
                            }
                        }
                    }
                },
                r = stderr.read(&mut ebuf), if stderr_open => match r {
                    Ok(0) | Err(_) => stderr_open = false,
                    Ok(n) => tail.push(&ebuf[..n]),
                },
                line = ctl_lines.next_line(), if ctl_open => match line {
                    Ok(Some(l)) => match serde_json::from_str::<Event>(&l) {
                        Ok(Event::Started { pid }) => pi_pid = Some(pid),
                        Ok(Event::SpawnFailed { error, .. }) => spawn_failed = Some(error),
                        Ok(e @ Event::Exited { .. }) => {
                            exited = Some(e);
                            drain_deadline = Some(tokio::time::Instant::now() + Duration::from_secs(2));
                        }
                        Err(_) => {}
                    },
                    _ => {
                        ctl_open = false;
                        if exited.is_none() && spawn_failed.is_none() {
                            // The supervisor is gone without reporting: it was killed. pi got
                            // SIGTERM from the kernel (its parent-death signal) and cleans up
                            // its tools; we make sure of pi's own group and end now, whatever
                            // still holds stdout.
                            supervisor_lost = true;
                            if let Some(pid) = pi_pid {
                                let _ = nix::sys::signal::kill(
                                    nix::unistd::Pid::from_raw(-pid),
                                    nix::sys::signal::Signal::SIGTERM,
                                );
                            }
                            hard_deadline = Some(after(self.opts.grace));
                        }
                    }
                },
                _ = cancel.cancelled(), if stop.is_none() => stop = Some(Stop::Cancelled),
                _ = self.tx.closed(), if stop.is_none() && !self.consumer_gone => {
                    self.consumer_gone = true;
                    stop = Some(Stop::ConsumerGone);
                }
                _ = sleep_opt(sleep_until) => {
                    let now = tokio::time::Instant::now();
                    if timeout.is_some_and(|t| now >= t) && stop.is_none() {
                        stop = Some(Stop::Timeout);
                    }
                    if hard_deadline.is_some_and(|d| now >= d) || drain_deadline.is_some_and(|d| now >= d) {
                        break;
                    }
                }
            }
            if self.consumer_gone && stop.is_none() {
                stop = Some(Stop::ConsumerGone);
            }
            if supervisor_lost && !stdout_open && !stderr_open {
                break;
            }
            if stop.is_some() && hard_deadline.is_none() {
                // Ask the supervisor to stop pi: SIGTERM first, SIGKILL after the grace period.
                let _ = ctl_write.write_all(b"cancel\n").await;
                let _ = ctl_write.shutdown().await;
                hard_deadline = Some(after(
                    self.opts.grace.min(MAX_WAIT)
                        + self.opts.kill_wait.min(MAX_WAIT)
                        + Duration::from_secs(2),
                ));
            }
        }

        // Last resort when the supervisor did not report: kill it and pi's group ourselves.
        if exited.is_none() && spawn_failed.is_none() {
            if let Some(pid) = pi_pid {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(-pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            let _ = child.start_kill();
        }
        let status = child.wait().await;
        writer.abort();

        let exit = match &exited {
            Some(Event::Exited { code, signal, .. }) => Some(ExitInfo {
                code: *code,
                signal: signal.clone(),
            }),
            _ => None,
        };
        let cause = if supervisor_lost {
            EndCause::Failed {
                reason: FailureReason::ProcessSignal,
                message: format!(
                    "the supervisor died ({status:?}) before pi ended; pi's process group was stopped (SIGTERM, then SIGKILL)"
                ),
            }
        } else if let Some(e) = spawn_failed {
            EndCause::Failed {
                reason: FailureReason::SpawnFailed,
                message: e,
            }
        } else {
            match &stop {
                Some(Stop::Cancelled) | Some(Stop::ConsumerGone) => EndCause::Cancelled,
                Some(Stop::Timeout) => EndCause::Failed {
                    reason: FailureReason::Timeout,
                    message: format!(
                        "pi did not finish within {:?}",
                        req.timeout.unwrap_or_default()
                    ),
                },
                Some(Stop::OutputLimit(cap)) => EndCause::Failed {
                    reason: FailureReason::OutputLimit,
                    message: format!("pi wrote more than {cap} bytes on stdout (max_output_bytes)"),
                },
                None if exited.is_none() => EndCause::Failed {
                    reason: FailureReason::ProcessSignal,
                    message: format!(
                        "the supervisor ended without reporting pi's exit ({status:?})"
                    ),
                },
                // The supervisor was told to stop by a signal (a terminal's Ctrl-C reaches the
                // whole foreground group, the supervisor included): that is a cancel too.
                None if matches!(
                    exited,
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
        };
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

/// pi started under the supervisor: the supervisor's process (pi's stdin, stdout and stderr
/// are its pipes) and the control socket's two halves.
pub(crate) struct Spawned {
    pub child: SupervisorChild,
    pub ctl_lines: tokio::io::Lines<BufReader<tokio::net::unix::OwnedReadHalf>>,
    pub ctl_write: tokio::net::unix::OwnedWriteHalf,
}

/// The supervisor process, started either way (executed, or preforked by
/// [`crate::prefork_supervisor`]), with our ends of pi's stdin, stdout and stderr.
pub(crate) struct SupervisorChild {
    pub stdin: Option<tokio::net::unix::pipe::Sender>,
    pub stdout: Option<tokio::net::unix::pipe::Receiver>,
    pub stderr: Option<tokio::net::unix::pipe::Receiver>,
    process: SupervisorProcess,
}

enum SupervisorProcess {
    Spawned(tokio::process::Child),
    /// A child of this process forked before the runtime: not known to tokio, so waited
    /// for here (a pidfd, else a blocking `waitpid`).
    Forked {
        pid: nix::unistd::Pid,
        status: Option<std::process::ExitStatus>,
    },
}

impl SupervisorProcess {
    /// Kill a supervisor that has started nothing yet; a forked one is reaped at once (a
    /// spawned one by tokio).
    fn abandon(&mut self) {
        match self {
            SupervisorProcess::Spawned(c) => {
                let _ = c.start_kill();
            }
            SupervisorProcess::Forked { pid, .. } => {
                let _ = nix::sys::signal::kill(*pid, nix::sys::signal::Signal::SIGKILL);
                let _ = nix::sys::wait::waitpid(*pid, None);
            }
        }
    }
}

impl SupervisorChild {
    /// SIGKILL to the supervisor (nothing when it was already waited for).
    pub fn start_kill(&mut self) -> std::io::Result<()> {
        match &mut self.process {
            SupervisorProcess::Spawned(c) => c.start_kill(),
            SupervisorProcess::Forked {
                status: Some(_), ..
            } => Ok(()),
            SupervisorProcess::Forked { pid, .. } => {
                nix::sys::signal::kill(*pid, nix::sys::signal::Signal::SIGKILL)
                    .map_err(std::io::Error::from)
            }
        }
    }

    /// Wait for the supervisor to exit (and reap it).
    pub async fn wait(&mut self) -> std::io::Result<std::process::ExitStatus> {
        match &mut self.process {
            SupervisorProcess::Spawned(c) => c.wait().await,
            SupervisorProcess::Forked {
                status: Some(s), ..
            } => Ok(*s),
            SupervisorProcess::Forked { pid, status } => {
                let s = wait_forked(*pid).await?;
                *status = Some(s);
                Ok(s)
            }
        }
    }
}

/// Wait for our child `pid` to exit without blocking the runtime: readable pidfd, then
/// `waitpid` (which no longer blocks); without pidfd support, `waitpid` on a blocking thread.
async fn wait_forked(pid: nix::unistd::Pid) -> std::io::Result<std::process::ExitStatus> {
    use std::os::fd::FromRawFd;
    use std::os::unix::process::ExitStatusExt;
    let reap = move || -> std::io::Result<std::process::ExitStatus> {
        let mut status = 0;
        loop {
            // SAFETY: waitpid writes only into `status`.
            let r = unsafe { libc::waitpid(pid.as_raw(), &mut status, 0) };
            if r == pid.as_raw() {
                return Ok(std::process::ExitStatus::from_raw(status));
            }
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    };
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid.as_raw(), 0) };
    if fd >= 0 {
        // SAFETY: the descriptor was just created for us.
        let pidfd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
        // SAFETY: an OwnedFd stays open and names the same descriptor while the AsyncFd owns it.
        let registered = unsafe {
            tokio::io::unix::AsyncFd::register_with_interest(pidfd, tokio::io::Interest::READABLE)
        };
        if let Ok(ready) = registered {
            let _ = ready.readable().await;
            return reap();
        }
    }
    tokio::task::spawn_blocking(reap)
        .await
        .map_err(std::io::Error::other)?
}

/// The supervisor's arguments after `--control-fd N`: its waits, then pi's command line.
fn supervisor_args(opts: &ProviderOptions, pi: &Path, argv: &[String]) -> Vec<std::ffi::OsString> {
    let mut args: Vec<std::ffi::OsString> = vec![
        "--grace-ms".into(),
        opts.grace.min(MAX_WAIT).as_millis().to_string().into(),
        "--kill-wait-ms".into(),
        opts.kill_wait.min(MAX_WAIT).as_millis().to_string().into(),
        "--".into(),
        pi.as_os_str().to_owned(),
    ];
    args.extend(argv.iter().map(Into::into));
    args
}

/// Variables pi gets on top of this process's environment, in the order they apply.
fn extra_env(opts: &ProviderOptions, req: &Request) -> Vec<(String, String)> {
    let mut env = Vec::new();
    if opts.offline {
        env.push(("PI_OFFLINE".to_string(), "1".to_string()));
    }
    env.extend(req.env.iter().map(|(k, v)| (k.clone(), v.clone())));
    if let Some(key) = &req.api_key {
        env.push((key.env_var.clone(), key.value.clone()));
    }
    env
}

/// Start pi (`pi argv`) under the supervisor (the given binary, `$PI_HARNESS_SUPERVISOR`,
/// the one preforked for this process, or the embedded one), in its own process group,
/// with the request's environment, key and working directory; stdin, stdout and stderr piped.
pub(crate) fn spawn_supervised(
    opts: &ProviderOptions,
    req: &Request,
    pi: &Path,
    argv: &[String],
    supervisor: Option<&Path>,
) -> Result<Spawned, String> {
    if supervisor.is_none() {
        if let Some(z) = crate::prefork::take() {
            return spawn_preforked(z, opts, req, pi, argv);
        }
    }
    use nix::sys::socket::{socketpair, AddressFamily, SockFlag, SockType};
    let (ours, theirs) = socketpair(
        AddressFamily::Unix,
        SockType::Stream,
        None,
        SockFlag::SOCK_CLOEXEC,
    )
    .map_err(|e| format!("cannot create control socket: {e}"))?;
    let mut cmd = match supervisor {
        Some(binary) => Command::new(binary),
        None => {
            crate::embedded::ensure_linked();
            let mut c = Command::new(crate::embedded::SELF_EXE);
            c.arg0("pi-supervisor")
                .env(crate::embedded::SUPERVISOR_ENV, "1");
            c
        }
    };
    let supervisor_name = supervisor.map_or("the embedded supervisor".to_string(), |p| {
        p.display().to_string()
    });
    // Its own process group: a signal to the caller's group (a terminal's Ctrl-C, a CI
    // job's kill) does not take the supervisor down before it has stopped pi.
    cmd.process_group(0);
    cmd.arg("--control-fd")
        .arg("3")
        .args(supervisor_args(opts, pi, argv))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in extra_env(opts, req) {
        cmd.env(k, v);
    }
    if let Some(dir) = &req.cwd {
        cmd.current_dir(dir);
    }
    let theirs_fd = theirs.as_raw_fd();
    unsafe {
        cmd.pre_exec(move || {
            // dup2 clears close-on-exec on the new descriptor.
            nix::unistd::dup2(theirs_fd, 3).map_err(std::io::Error::from)?;
            Ok(())
        });
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start {supervisor_name}: {e}"))?;
    drop(theirs);
    let ends = (|| -> std::io::Result<[OwnedFd; 3]> {
        let fd = |r: Option<std::io::Result<OwnedFd>>| r.expect("piped");
        Ok([
            fd(child.stdin.take().map(|s| s.into_owned_fd()))?,
            fd(child.stdout.take().map(|s| s.into_owned_fd()))?,
            fd(child.stderr.take().map(|s| s.into_owned_fd()))?,
        ])
    })();
    assemble(SupervisorProcess::Spawned(child), ends, ours)
}

/// The run's side of a started supervisor: our ends of pi's pipes (stdin's write end,
/// stdout's and stderr's read ends) and the control socket, made the runtime's. When that
/// fails, the supervisor is killed: nothing of the run has started that it would stop.
fn assemble(
    mut process: SupervisorProcess,
    ends: std::io::Result<[OwnedFd; 3]>,
    control: OwnedFd,
) -> Result<Spawned, String> {
    use tokio::net::unix::pipe;
    let ready = ends
        .and_then(|[stdin, stdout, stderr]| {
            Ok((
                pipe::Sender::from_owned_fd(stdin)?,
                pipe::Receiver::from_owned_fd(stdout)?,
                pipe::Receiver::from_owned_fd(stderr)?,
            ))
        })
        .map_err(|e| format!("pi's pipes: {e}"))
        .and_then(|pipes| {
            control_stream(control)
                .map(|c| (pipes, c))
                .map_err(|e| format!("control socket: {e}"))
        });
    match ready {
        Ok(((stdin, stdout, stderr), control)) => Ok(spawned(
            SupervisorChild {
                stdin: Some(stdin),
                stdout: Some(stdout),
                stderr: Some(stderr),
                process,
            },
            control,
        )),
        Err(e) => {
            process.abandon();
            Err(e)
        }
    }
}

fn spawned(child: SupervisorChild, control: tokio::net::UnixStream) -> Spawned {
    let (ctl_read, ctl_write) = control.into_split();
    Spawned {
        child,
        ctl_lines: BufReader::new(ctl_read).lines(),
        ctl_write,
    }
}

/// [`spawn_supervised`] with the supervisor preforked for this process: the order and pi's
/// pipes go over its socket, which then serves as the control socket.
fn spawn_preforked(
    z: crate::prefork::Preforked,
    opts: &ProviderOptions,
    req: &Request,
    pi: &Path,
    argv: &[String],
) -> Result<Spawned, String> {
    use crate::prefork::Order;
    let mut env: Vec<(std::ffi::OsString, std::ffi::OsString)> = std::env::vars_os().collect();
    for (k, v) in extra_env(opts, req) {
        let (k, v) = (std::ffi::OsString::from(k), std::ffi::OsString::from(v));
        match env.iter_mut().find(|(name, _)| *name == k) {
            Some(slot) => slot.1 = v,
            None => env.push((k, v)),
        }
    }
    let order = Order {
        args: supervisor_args(opts, pi, argv),
        env,
        cwd: req.cwd.clone(),
    };
    let mut process = SupervisorProcess::Forked {
        pid: z.pid,
        status: None,
    };
    let sent = (|| -> std::io::Result<[OwnedFd; 3]> {
        use nix::fcntl::OFlag;
        let (in_r, in_w) = nix::unistd::pipe2(OFlag::O_CLOEXEC)?;
        let (out_r, out_w) = nix::unistd::pipe2(OFlag::O_CLOEXEC)?;
        let (err_r, err_w) = nix::unistd::pipe2(OFlag::O_CLOEXEC)?;
        crate::prefork::send(
            &z.socket,
            &order,
            [in_r.as_raw_fd(), out_w.as_raw_fd(), err_w.as_raw_fd()],
        )?;
        // The supervisor has its own copies now; ours close here.
        Ok([in_w, out_r, err_r])
    })();
    match sent {
        Ok(ends) => assemble(process, Ok(ends), z.socket),
        Err(e) => {
            process.abandon();
            Err(format!("cannot start the preforked supervisor: {e}"))
        }
    }
}

async fn sleep_opt(until: Option<tokio::time::Instant>) {
    match until {
        Some(t) => tokio::time::sleep_until(t).await,
        None => std::future::pending().await,
    }
}

fn control_stream(fd: OwnedFd) -> std::io::Result<tokio::net::UnixStream> {
    let std_stream = std::os::unix::net::UnixStream::from(fd);
    std_stream.set_nonblocking(true)?;
    tokio::net::UnixStream::from_std(std_stream)
}

/// Collect a whole run (test and tool convenience).
pub async fn collect(stream: impl Stream<Item = Message>) -> Vec<Message> {
    use tokio_stream::StreamExt;
    let mut out = Vec::new();
    let mut s = std::pin::pin!(stream);
    while let Some(m) = s.next().await {
        out.push(m);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req() -> Request {
        Request {
            provider: Some("fake".into()),
            model: Some("fake-model".into()),
            ..Request::default()
        }
    }

    #[test]
    fn argv_for_each_version() {
        let mut r = req();
        r.session = Some(SessionRef {
            id: "abc-1".into(),
            dir: Some("/tmp/s".into()),
            resume: true,
        });
        r.exclude_tools = vec!["bash".into()];
        r.thinking = Some("high".into());
        assert_eq!(
            build_argv(&r, "0.87.1").unwrap().join(" "),
            "--mode json --provider fake --model fake-model --thinking high --session-id abc-1 --exclude-tools bash"
        );
        assert_eq!(
            build_argv(&r, "0.73.1").unwrap().join(" "),
            "--mode json --provider fake --model fake-model --thinking high --session /tmp/s/abc-1.jsonl --tools read,edit,write"
        );
    }

    #[test]
    fn argv_rejects_what_pi_would_reject() {
        let mut r = req();
        r.thinking = Some("max".into());
        assert!(build_argv(&r, "0.87.1").is_ok());
        assert!(build_argv(&r, "0.73.1")
            .unwrap_err()
            .contains("not accepted by pi 0.73.1"));
        let mut r = req();
        r.session = Some(SessionRef {
            id: "-bad".into(),
            dir: None,
            resume: false,
        });
        assert!(build_argv(&r, "0.87.1")
            .unwrap_err()
            .contains("session id \"-bad\""));
        r.session.as_mut().unwrap().id = "good".into();
        assert!(build_argv(&r, "0.73.1")
            .unwrap_err()
            .contains("has no --session-id"));
        let mut r = req();
        r.model = Some("sk-secret".into());
        r.api_key = Some(ApiKey {
            env_var: "OPENAI_API_KEY".into(),
            value: "sk-secret".into(),
        });
        assert!(build_argv(&r, "0.87.1")
            .unwrap_err()
            .contains("API key appears"));
    }

    #[test]
    fn excluding_every_default_tool_on_073_means_no_tools() {
        let mut r = req();
        r.exclude_tools = DEFAULT_TOOLS.iter().map(|s| s.to_string()).collect();
        assert!(build_argv(&r, "0.73.1")
            .unwrap()
            .contains(&"--no-tools".to_string()));
    }

    #[test]
    fn stderr_tail_is_bounded_and_redacted() {
        let mut t = StderrTail::new(16, Some("KEY123"));
        assert_eq!(t.text(), None);
        for _ in 0..1000 {
            t.push(b"noise ");
        }
        t.push(b"xxKEY123yy");
        let text = t.text().unwrap();
        assert!(text.len() <= 16, "{text:?}");
        assert!(text.ends_with("[REDACTED]yy"), "{text:?}");
        assert!(!text.contains("KEY"));
        // Memory stays bounded: at most twice max(cap + key length, 1 KiB) is ever held.
        assert!(t.buf.len() <= 2048, "{}", t.buf.len());
    }

    #[test]
    fn built_argv_is_accepted_by_the_grammar_of_each_version() {
        let mut r = req();
        r.thinking = Some("low".into());
        r.exclude_tools = vec!["bash".into()];
        r.tools = Some(vec!["read".into(), "bash".into(), "grep".into()]);
        r.system_prompt = Some("-starts with a dash".into());
        r.append_system_prompt = vec!["@not a file".into()];
        for version in pi_grammar::KNOWN_VERSIONS {
            let mut r = r.clone();
            r.session = Some(SessionRef {
                id: "s-1".into(),
                dir: Some("/tmp".into()),
                resume: false,
            });
            let argv = build_argv(&r, version).unwrap();
            let g = grammar_for(version);
            let parsed = g
                .parse(&argv)
                .unwrap_or_else(|e| panic!("{version}: {}", e.stderr));
            parsed
                .validate()
                .unwrap_or_else(|e| panic!("{version}: {}", e.stderr));
            assert!(g.runtime_errors(&parsed).is_none(), "{version}: {argv:?}");
            assert!(
                parsed.messages.is_empty(),
                "{version}: the prompt must not be in argv: {argv:?}"
            );
            assert_eq!(parsed.value("--system-prompt"), Some("-starts with a dash"));
            assert_eq!(parsed.value("--thinking"), Some("low"));
        }
    }

    #[test]
    fn unpinned_versions_use_the_nearest_older_grammar() {
        assert_eq!(grammar_for("0.80.0").version(), "0.73.1");
        assert_eq!(grammar_for("0.99.2").version(), "0.87.1");
        assert_eq!(grammar_for("1.7.0").version(), "1.5.2");
        assert_eq!(grammar_for("0.1.0").version(), "0.73.1");
        assert_eq!(grammar_for("garbage").version(), "0.73.1");
    }

    #[test]
    fn provider_without_model_is_refused_where_pi_refuses_it() {
        let r = Request {
            provider: Some("fake".into()),
            ..Request::default()
        };
        assert!(build_argv(&r, "0.87.1").is_ok());
        let e = build_argv(&r, "1.5.2").unwrap_err();
        assert!(e.contains("--provider without --model"), "{e}");
    }
}
