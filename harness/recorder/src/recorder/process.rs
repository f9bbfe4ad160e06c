//! Running the recorded CLI: its command (the sandbox's environment; for Claude Code and
//! Codex nothing of the developer's but PATH), the unrecorded prelude run, reading its stdout lines and stderr
//! chunks with their times, how it ended, and killing whatever it left behind.

use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use super::{RecordError, MARKER_VAR};
use pi_procs as procs;

/// How pi ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// It exited with this code.
    Code(i32),
    /// It was killed by this signal.
    Signal(Signal),
}

impl Ending {
    /// How a process with this exit status ended (a status with neither code nor signal
    /// counts as code 255).
    pub(crate) fn of(status: ExitStatus) -> Ending {
        use std::os::unix::process::ExitStatusExt as _;
        match (status.code(), status.signal()) {
            (Some(c), _) => Ending::Code(c),
            (None, Some(s)) => Ending::Signal(Signal::try_from(s).unwrap_or(Signal::SIGKILL)),
            (None, None) => Ending::Code(255),
        }
    }
}

/// One captured output event.
#[derive(Debug, Clone)]
pub enum Captured {
    /// A stdout line without its `\n`; `bool`: a `\n` followed.
    Line(Vec<u8>, bool),
    /// A chunk of stderr, as read.
    Stderr(Vec<u8>),
}

/// What the recorded CLI is given: the sandbox's directories, `PATH` and the marker.
pub(crate) struct PiEnv {
    pub(crate) agent: PathBuf,
    pub(crate) home: PathBuf,
    pub(crate) work: PathBuf,
    pub(crate) path: String,
    pub(crate) marker: String,
    pub(crate) claude: Option<ClaudeEnv>,
    pub(crate) codex: Option<CodexEnv>,
    pub(crate) gemini: Option<GeminiEnv>,
    /// The `--secret-env` variables, given to the CLI whatever else it is given.
    pub(crate) secrets: Vec<(String, String)>,
}

/// What Gemini CLI is given: `HOME` (holding the run's `.gemini/settings.json`), `TMPDIR`,
/// the scripted server as `GOOGLE_GEMINI_BASE_URL`, the key as `GEMINI_API_KEY`, the
/// workspace trusted, and the scenario's own variables.
pub(crate) struct GeminiEnv {
    pub(crate) base_url: String,
    pub(crate) key: String,
    pub(crate) tmpdir: PathBuf,
    /// The scenario's own variables (`GEMINI_CLI_NO_RELAUNCH=1`, ...).
    pub(crate) extra: Vec<(String, String)>,
    /// Run it as the leader of a process group of its own (a signal goes to the group).
    pub(crate) own_group: bool,
}

/// The marker pi-testkit's `World` gives the processes of a test (passed on to Codex,
/// whose environment is otherwise cleared).
const TEST_MARKER_VAR: &str = "PI_HARNESS_TEST_MARKER";

/// What Codex is given instead of pi's agent dir: `CODEX_HOME` (the sandbox's agent dir,
/// holding the run's `config.toml`), the key under its provider's variable, `TMPDIR`.
pub(crate) struct CodexEnv {
    pub(crate) key_var: String,
    pub(crate) key: String,
    pub(crate) tmpdir: PathBuf,
    /// Run it as the leader of a process group of its own (a signal goes to the group).
    pub(crate) own_group: bool,
}

/// What Claude Code is given instead of pi's agent dir.
pub(crate) struct ClaudeEnv {
    /// The scripted server, as `ANTHROPIC_BASE_URL` (without `/v1`).
    pub(crate) base_url: String,
    pub(crate) key: String,
    pub(crate) tmpdir: PathBuf,
}

/// The command running `pi` with `args` in `env`; stdout and stderr piped, killed when
/// dropped. The caller sets stdin.
pub(crate) fn command(pi: &Path, args: &[String], env: &PiEnv) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(pi);
    if let Some(g) = &env.gemini {
        // Nothing of the developer's environment but PATH (their GEMINI_*/GOOGLE_* variables
        // and proxies would change what the CLI does); the marker finds its leftovers.
        cmd.args(args)
            .current_dir(&env.work)
            .env_clear()
            .env("PATH", &env.path)
            .env("HOME", &env.home)
            .env("TMPDIR", &g.tmpdir)
            .env("GEMINI_API_KEY", &g.key)
            .env("GOOGLE_GEMINI_BASE_URL", &g.base_url)
            .env("GEMINI_CLI_TRUST_WORKSPACE", "true")
            .envs(g.extra.iter().map(|(k, v)| (k, v)))
            .env(MARKER_VAR, &env.marker)
            .envs(env.secrets.iter().map(|(k, v)| (k, v)))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        if let Some(m) = std::env::var_os(TEST_MARKER_VAR) {
            cmd.env(TEST_MARKER_VAR, m);
        }
        if g.own_group {
            cmd.process_group(0);
        }
        return cmd;
    }
    if let Some(c) = &env.codex {
        // Nothing of the developer's environment but PATH (their OPENAI_*/CODEX_* variables
        // and proxies would change what Codex does); the marker finds its leftovers.
        cmd.args(args)
            .current_dir(&env.work)
            .env_clear()
            .env("PATH", &env.path)
            .env("HOME", &env.home)
            .env("CODEX_HOME", &env.agent)
            .env("TMPDIR", &c.tmpdir)
            .env(&c.key_var, &c.key)
            .env(MARKER_VAR, &env.marker)
            .envs(env.secrets.iter().map(|(k, v)| (k, v)))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        // A test's marker (pi-testkit's) goes on, so its leftover check sees the run too.
        if let Some(m) = std::env::var_os(TEST_MARKER_VAR) {
            cmd.env(TEST_MARKER_VAR, m);
        }
        if c.own_group {
            cmd.process_group(0);
        }
        return cmd;
    }
    if let Some(c) = &env.claude {
        // Nothing of the developer's environment: their ANTHROPIC_* / CLAUDE_* / proxy
        // variables would change what the CLI does.
        cmd.args(args)
            .current_dir(&env.work)
            .env_clear()
            .env("PATH", &env.path)
            .env("HOME", &env.home)
            .env("TMPDIR", &c.tmpdir)
            .env("LANG", "C.UTF-8")
            .env("ANTHROPIC_BASE_URL", &c.base_url)
            .env("ANTHROPIC_API_KEY", &c.key)
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env("CLAUDE_CODE_MAX_RETRIES", "1")
            .env(MARKER_VAR, &env.marker)
            .envs(env.secrets.iter().map(|(k, v)| (k, v)))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        return cmd;
    }
    cmd.args(args)
        .current_dir(&env.work)
        .env("PI_CODING_AGENT_DIR", &env.agent)
        .env("PI_OFFLINE", "1")
        .env("HOME", &env.home)
        .env("PATH", &env.path)
        .env(MARKER_VAR, &env.marker)
        .env_remove("OPENAI_API_KEY")
        .envs(env.secrets.iter().map(|(k, v)| (k, v)))
        .env_remove("ANTHROPIC_API_KEY")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    cmd
}

/// The signals a recording sends or a CLI answers: the CLI starts with each at its default
/// disposition, whatever the recorder inherited.
const RESET_SIGNALS: [Signal; 4] = [
    Signal::SIGINT,
    Signal::SIGQUIT,
    Signal::SIGTERM,
    Signal::SIGHUP,
];

/// Start `cmd` (the CLI at `pi`), with [`RESET_SIGNALS`] at their default disposition. A
/// signal ignored is inherited across `exec` (a handler is not): run from a non-interactive
/// shell's background job (`cmd &`, a CI step), the recorder ignores SIGINT and SIGQUIT, and
/// so would the CLI, which then recorded "ignores SIGINT" or never ended.
pub(crate) fn spawn(
    cmd: &mut tokio::process::Command,
    pi: &Path,
) -> Result<tokio::process::Child, RecordError> {
    // SAFETY: between fork and exec only sigaction(2) runs, which is async-signal-safe; no
    // allocation, no lock.
    unsafe {
        cmd.pre_exec(|| {
            for sig in RESET_SIGNALS {
                nix::sys::signal::signal(sig, nix::sys::signal::SigHandler::SigDfl)
                    .map_err(std::io::Error::from)?;
            }
            Ok(())
        });
    }
    cmd.spawn().map_err(|source| RecordError::Start {
        path: pi.to_path_buf(),
        source,
    })
}

/// Run pi once, unrecorded, to the end (within `timeout`); anything it leaves is killed.
pub(crate) async fn run_prelude(
    pi: &Path,
    args: &[String],
    stdin: Option<&str>,
    env: &PiEnv,
    timeout: Duration,
) -> Result<(), RecordError> {
    let mut cmd = command(pi, args, env);
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    });
    let mut child = spawn(&mut cmd, pi)?;
    if let (Some(text), Some(mut w)) = (stdin, child.stdin.take()) {
        w.write_all(text.as_bytes())
            .await
            .map_err(RecordError::Pipe)?;
    }
    let out = tokio::time::timeout(timeout, child.wait_with_output())
        .await
        .map_err(|_| RecordError::Timeout(format!("pi did not finish within {timeout:?}")))?
        .map_err(RecordError::Pipe)?;
    cleanup_leftovers(&env.marker).await;
    if !out.status.success() {
        return Err(RecordError::PreludeExit {
            status: out.status,
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        });
    }
    Ok(())
}

/// pi's output as it comes: stdout lines and stderr chunks, each timed from the run's
/// start, from two reader tasks into one channel (closed when both pipes are).
pub(crate) struct Capture {
    /// The timed output.
    pub(crate) rx: mpsc::UnboundedReceiver<(Duration, Captured)>,
    out_task: tokio::task::JoinHandle<()>,
    err_task: tokio::task::JoinHandle<()>,
}

impl Capture {
    /// Take `child`'s stdout and stderr and start reading them, timing each item from `start`.
    pub(crate) fn start(child: &mut tokio::process::Child, start: Instant) -> Capture {
        let (tx, rx) = mpsc::unbounded_channel::<(Duration, Captured)>();
        let mut stdout =
            BufReader::with_capacity(1 << 16, child.stdout.take().expect("piped stdout"));
        let mut stderr = child.stderr.take().expect("piped stderr");
        let tx_out = tx.clone();
        let out_task = tokio::spawn(async move {
            let mut buf = Vec::new();
            loop {
                buf.clear();
                match stdout.read_until(b'\n', &mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        let at = start.elapsed();
                        let newline = buf.last() == Some(&b'\n');
                        if newline {
                            buf.pop();
                        }
                        if tx_out
                            .send((at, Captured::Line(buf.clone(), newline)))
                            .is_err()
                        {
                            break;
                        }
                    }
                }
            }
        });
        let err_task = tokio::spawn(async move {
            let mut buf = vec![0u8; 8192];
            loop {
                match stderr.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        if tx
                            .send((start.elapsed(), Captured::Stderr(buf[..n].to_vec())))
                            .is_err()
                        {
                            break;
                        }
                    }
                }
            }
        });
        Capture {
            rx,
            out_task,
            err_task,
        }
    }

    /// Stop reading (pipes still held open by an orphan do not keep the tasks).
    pub(crate) fn abort(&self) {
        self.out_task.abort();
        self.err_task.abort();
    }
}

/// Kill (and reap) every process still carrying this recording's marker (pi's orphans and
/// their children); returns their commands. Unrelated children of this process are left alone.
pub(crate) async fn cleanup_leftovers(marker: &str) -> Vec<String> {
    let marker = marker.to_string();
    let found = tokio::task::spawn_blocking(move || procs::kill_marked(MARKER_VAR, &marker))
        .await
        .unwrap_or_default();
    found.iter().map(|p| format!("`{}`", p.command())).collect()
}

/// Round a duration to 0.1 ms (as cassettes store times).
pub(crate) fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 10_000.0).round() / 10.0
}
