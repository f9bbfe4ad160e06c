//! A Claude Code case through the reference: `claude` (fake-pi under that name) run with the
//! case's argv, its host's steps written as stream-json lines after their number of stdout
//! lines, and its whole stdout mapped by [`pi_wire::claude`] once it has ended.

use std::io::Write;
use std::os::unix::process::ExitStatusExt as _;
use std::path::Path;
use std::process::ExitStatus;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt as _, AsyncRead, AsyncReadExt as _, AsyncWriteExt as _};
use tokio::process::ChildStdin;

use pi_wire::message::{Failure, FailureReason, Message};

use crate::request::RequestDoc;

/// How long the CLI may take to end after the last step.
const AFTER_LAST_STEP: Duration = Duration::from_secs(60);
/// Bytes of stderr kept (its end), as the provider keeps a tail.
const STDERR_TAIL: usize = 4096;

/// Run a Claude Code case with the reference: `program` (`claude` from PATH) with the case's
/// argv and environment, its steps written after their number of stdout lines, stdout mapped
/// by [`pi_wire::claude`] once the CLI has ended (a run per turn). The CLI gets 60 s after the
/// last step, then is killed (a `terminal.failed` the case will not expect).
pub async fn reference_run_claude(
    doc: &RequestDoc,
    program: Option<&Path>,
    mut out: impl Write,
) -> std::io::Result<Vec<Message>> {
    let messages = match program {
        None => failed(FailureReason::SpawnFailed, "no `claude` on PATH".into()),
        Some(program) => run(doc, program).await,
    };
    for m in &messages {
        serde_json::to_writer(&mut out, m)?;
        out.write_all(b"\n")?;
    }
    out.flush()?;
    Ok(messages)
}

/// A run that ended before the CLI's stream could be mapped: one `terminal.failed`.
fn failed(reason: FailureReason, message: String) -> Vec<Message> {
    vec![Message::TerminalFailed(Failure {
        reason,
        message,
        exit: None,
        stderr_tail: None,
        invalid_lines: Vec::new(),
        invalid_lines_dropped: 0,
    })]
}

/// The CLI's command: the case's argv, environment and working directory, every pipe ours;
/// stdin a pipe, or the returned pseudo-terminal's other end when the case asks for a
/// terminal (kept open, never written, until the run ends).
fn command(
    doc: &RequestDoc,
    program: &Path,
) -> std::io::Result<(tokio::process::Command, Option<std::os::fd::OwnedFd>)> {
    let mut cmd = tokio::process::Command::new(program);
    let terminal = if doc.stdin.as_deref() == Some("terminal") {
        let pty = nix::pty::openpty(None, None)?;
        cmd.stdin(std::process::Stdio::from(pty.slave));
        Some(pty.master)
    } else {
        cmd.stdin(std::process::Stdio::piped());
        None
    };
    cmd.args(doc.argv.clone().unwrap_or_default())
        .envs(&doc.env)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    if let Some(cwd) = &doc.cwd {
        cmd.current_dir(cwd);
    }
    Ok((cmd, terminal))
}

/// Run the CLI through the case's steps to its end and map what it wrote.
async fn run(doc: &RequestDoc, program: &Path) -> Vec<Message> {
    let spawned = command(doc, program).and_then(|(mut cmd, terminal)| {
        // Our copy of the terminal's end goes with `cmd`; the other end stays open.
        cmd.spawn().map(|child| (child, terminal))
    });
    let (mut child, _terminal) = match spawned {
        Ok(c) => c,
        Err(e) => return failed(FailureReason::SpawnFailed, format!("claude: {e}")),
    };
    let pid = child.id().map(|p| p as i32);
    let mut stdin = child.stdin.take();
    let mut stdout = Lines::new(child.stdout.take().expect("piped"));
    let mut stderr = child.stderr.take().expect("piped");
    let err_task = tokio::spawn(async move {
        let mut buf = Vec::new();
        let _ = stderr.read_to_end(&mut buf).await;
        buf
    });
    do_steps(doc, &mut stdout, &mut stdin, pid).await;
    let rest = async {
        while stdout.next().await {}
        child.wait().await
    };
    let status = match tokio::time::timeout(AFTER_LAST_STEP, rest).await {
        Ok(Ok(s)) => s,
        _ => {
            let _ = child.kill().await;
            return failed(
                FailureReason::Timeout,
                "claude did not end within 60 s of the last step".into(),
            );
        }
    };
    drop(stdin);
    let mut stderr = err_task.await.unwrap_or_default();
    if stderr.len() > STDERR_TAIL {
        stderr.drain(..stderr.len() - STDERR_TAIL);
    }
    map(&stdout.read, status, &stderr)
}

/// The CLI's stdout read line by line, every byte kept.
struct Lines<R> {
    reader: tokio::io::BufReader<R>,
    line: Vec<u8>,
    /// Everything read so far.
    read: Vec<u8>,
}

impl<R: AsyncRead + Unpin> Lines<R> {
    fn new(input: R) -> Self {
        Lines {
            reader: tokio::io::BufReader::new(input),
            line: Vec::new(),
            read: Vec::new(),
        }
    }

    /// Read one more line; false at the end. Bytes, not `lines()`: a line that is not UTF-8
    /// is the mapper's to report.
    async fn next(&mut self) -> bool {
        self.line.clear();
        match self.reader.read_until(b'\n', &mut self.line).await {
            Ok(0) | Err(_) => false,
            Ok(_) => {
                self.read.extend_from_slice(&self.line);
                true
            }
        }
    }
}

/// Do each step once the CLI has written its number of stdout lines: write a line, close
/// stdin or send a signal. Stops when stdout ends first.
async fn do_steps<R: AsyncRead + Unpin>(
    doc: &RequestDoc,
    stdout: &mut Lines<R>,
    stdin: &mut Option<ChildStdin>,
    pid: Option<i32>,
) {
    let mut seen = 0u64;
    let mut open = true;
    for step in doc.rpc.iter().flatten() {
        while open && seen < step.after_stdout_lines {
            if stdout.next().await {
                seen += 1;
            } else {
                open = false;
            }
        }
        if !open {
            break;
        }
        if let Some(line) = step
            .send
            .as_ref()
            .map(Value::to_string)
            .or_else(|| step.send_raw.clone())
        {
            if let Some(w) = stdin.as_mut() {
                let _ = w.write_all(format!("{line}\n").as_bytes()).await;
                let _ = w.flush().await;
            }
        } else if step.close_stdin == Some(true) {
            *stdin = None;
        } else if let (Some(sig), Some(pid)) = (&step.signal, pid) {
            if let Ok(sig) = sig.parse::<nix::sys::signal::Signal>() {
                let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), sig);
            }
        }
    }
}

/// The normalized runs of what the CLI wrote, ended by how it exited.
fn map(stdout: &[u8], status: ExitStatus, stderr: &[u8]) -> Vec<Message> {
    let signal = status
        .signal()
        .and_then(|s| nix::sys::signal::Signal::try_from(s).ok())
        .map(|s| s.as_str().to_string());
    let end = pi_wire::mapper::StreamEnd::recorded(status.code(), signal.as_deref(), stderr);
    pi_wire::claude::map_all(stdout, end, pi_wire::mapper::MapperOptions::default())
}
