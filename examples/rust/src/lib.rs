//! A tiny wrapper around the pi coding agent CLI in JSON mode, as an integrator would write it.
//!
//! Spawns `pi --mode json --provider P --model M PROMPT` (pi found on `PATH`), reads its JSONL
//! stdout line by line, collects the assistant's text and the tool calls, tells a finished run
//! from a failed one, and cancels with SIGTERM.

use std::ffi::OsString;
use std::io::{self, BufRead, BufReader, Read};
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::Duration;

use serde_json::Value;

/// A tool call as pi announced it (`tool_execution_start`).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub args: Value,
}

/// What a pi run came to.
#[derive(Debug, Default)]
pub struct PiResult {
    /// The assistant's text (every `text_delta`, in order).
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    /// `agent_end` seen.
    pub completed: bool,
    /// `stopReason` of the last assistant message.
    pub stop_reason: Option<String>,
    /// Its `errorMessage` when `stop_reason` is `error`.
    pub error: Option<String>,
    /// pi's exit code; `None` when it died by a signal.
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub cancelled: bool,
    pub timed_out: bool,
    pub stderr: String,
    pub session_id: Option<String>,
}

impl PiResult {
    /// pi exits 0 also when the model call failed: the run is a success only when it reached
    /// `agent_end` and the last assistant message did not stop on an error or an abort.
    pub fn ok(&self) -> bool {
        self.exit_code == Some(0)
            && self.completed
            && !self.cancelled
            && !matches!(self.stop_reason.as_deref(), Some("error") | Some("aborted"))
    }
}

/// How to call pi.
#[derive(Debug, Clone)]
pub struct Pi {
    program: OsString,
    provider: Option<String>,
    model: Option<String>,
    envs: Vec<(OsString, OsString)>,
    timeout: Option<Duration>,
    grace: Duration,
}

impl Pi {
    /// `pi` from `PATH` (the `PATH` given with [`Pi::env`], if any).
    pub fn new() -> Pi {
        Pi {
            program: "pi".into(),
            provider: None,
            model: None,
            envs: Vec::new(),
            timeout: None,
            grace: Duration::from_secs(5),
        }
    }
    pub fn program(mut self, program: impl Into<OsString>) -> Pi {
        self.program = program.into();
        self
    }
    pub fn provider(mut self, provider: &str) -> Pi {
        self.provider = Some(provider.to_owned());
        self
    }
    pub fn model(mut self, model: &str) -> Pi {
        self.model = Some(model.to_owned());
        self
    }
    /// An environment variable for pi (on top of this process's environment).
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Pi {
        self.envs.push((key.into(), value.into()));
        self
    }
    /// Cancel the run after this long (`timed_out` is then set).
    pub fn timeout(mut self, timeout: Duration) -> Pi {
        self.timeout = Some(timeout);
        self
    }
    /// After SIGTERM, how long pi gets before SIGKILL.
    pub fn grace(mut self, grace: Duration) -> Pi {
        self.grace = grace;
        self
    }

    /// Run pi to the end. `on_event` sees every JSON line and may cancel through the handle.
    pub fn run(
        &self,
        prompt: &str,
        mut on_event: impl FnMut(&Value, &Cancel),
    ) -> io::Result<PiResult> {
        let mut cmd = Command::new(&self.program);
        cmd.args(["--mode", "json"]);
        if let Some(p) = &self.provider {
            cmd.args(["--provider", p]);
        }
        if let Some(m) = &self.model {
            cmd.args(["--model", m]);
        }
        cmd.arg(prompt);
        cmd.envs(self.envs.iter().map(|(k, v)| (k, v)));
        // stdin must not stay open: pi reads it to EOF before it starts when it is not a terminal.
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn()?;

        let cancel = Cancel {
            inner: Arc::new(CancelInner {
                pid: child.id() as libc::pid_t,
                grace: self.grace,
                state: Mutex::new(State::default()),
            }),
        };
        let mut stderr = child.stderr.take().expect("piped");
        let stderr_reader = thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = stderr.read_to_end(&mut buf);
            String::from_utf8_lossy(&buf).into_owned()
        });
        let (done_tx, done_rx) = mpsc::channel::<()>();
        let watchdog = self.timeout.map(|timeout| {
            let cancel = cancel.clone();
            thread::spawn(move || {
                if let Err(mpsc::RecvTimeoutError::Timeout) = done_rx.recv_timeout(timeout) {
                    cancel.inner.state.lock().unwrap().timed_out = true;
                    cancel.cancel();
                }
            })
        });

        let mut out = PiResult::default();
        let mut stdout = BufReader::new(child.stdout.take().expect("piped"));
        let mut line = Vec::new();
        loop {
            line.clear();
            if stdout.read_until(b'\n', &mut line)? == 0 {
                break;
            }
            // pi may print a line that is not JSON (or not an object): skip it.
            let Ok(event) = serde_json::from_slice::<Value>(&line) else {
                continue;
            };
            if !event.is_object() {
                continue;
            }
            handle(&mut out, &event);
            on_event(&event, &cancel);
        }
        drop(stdout);

        // Wait for pi without reaping it, mark it exited, then reap: a cancel from another thread
        // can never signal a pid that was reused after the reap.
        wait_no_reap(cancel.inner.pid)?;
        cancel.inner.state.lock().unwrap().exited = true;
        let status = child.wait()?;
        drop(done_tx);
        if let Some(w) = watchdog {
            let _ = w.join();
        }
        let state = cancel.inner.state.lock().unwrap();
        out.cancelled = state.cancelled;
        out.timed_out = state.timed_out;
        out.exit_code = status.code();
        out.signal = status.signal();
        out.stderr = stderr_reader.join().unwrap_or_default();
        Ok(out)
    }
}

impl Default for Pi {
    fn default() -> Pi {
        Pi::new()
    }
}

fn handle(out: &mut PiResult, event: &Value) {
    let str_of = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    match event.get("type").and_then(Value::as_str) {
        Some("session") => out.session_id = str_of(event, "id"),
        Some("message_update") => {
            let e = &event["assistantMessageEvent"];
            if e["type"] == "text_delta" {
                if let Some(delta) = e["delta"].as_str() {
                    out.text.push_str(delta);
                }
            }
        }
        Some("tool_execution_start") => out.tool_calls.push(ToolCall {
            id: str_of(event, "toolCallId").unwrap_or_default(),
            name: str_of(event, "toolName").unwrap_or_default(),
            args: event["args"].clone(),
        }),
        Some("message_end") => {
            let m = &event["message"];
            if m["role"] == "assistant" {
                out.stop_reason = str_of(m, "stopReason");
                out.error = (out.stop_reason.as_deref() == Some("error"))
                    .then(|| str_of(m, "errorMessage").unwrap_or_else(|| "unknown error".into()));
            }
        }
        Some("agent_end") => out.completed = true,
        _ => {}
    }
}

/// Cancels the run it came from; cheap to clone, usable from any thread.
#[derive(Clone)]
pub struct Cancel {
    inner: Arc<CancelInner>,
}

struct CancelInner {
    pid: libc::pid_t,
    grace: Duration,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    exited: bool,
    cancelled: bool,
    timed_out: bool,
}

impl Cancel {
    /// SIGTERM to pi (pi >= 0.87 kills its tool processes and exits 143); SIGKILL after the grace.
    pub fn cancel(&self) {
        {
            let mut state = self.inner.state.lock().unwrap();
            if state.exited || state.cancelled {
                return;
            }
            state.cancelled = true;
            // SAFETY: kill(2) has no memory effects; pi is not reaped yet (see Pi::run).
            unsafe { libc::kill(self.inner.pid, libc::SIGTERM) };
        }
        let inner = self.inner.clone();
        thread::spawn(move || {
            thread::sleep(inner.grace);
            let state = inner.state.lock().unwrap();
            if !state.exited {
                // SAFETY: as above.
                unsafe { libc::kill(inner.pid, libc::SIGKILL) };
            }
        });
    }
}

/// Blocks until `pid` (our child) has exited, leaving it a zombie for `Child::wait`.
fn wait_no_reap(pid: libc::pid_t) -> io::Result<()> {
    loop {
        // SAFETY: a zeroed siginfo_t is a valid out-parameter for waitid(2).
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let rc = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if rc == 0 {
            return Ok(());
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}
