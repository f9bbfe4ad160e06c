//! `pi-harness run`: the reference provider from a shell.
//!
//! Turns the command line into a [`Request`], checks what the user can get wrong before
//! anything starts (pi's path, the key variable, the supervisor), runs the provider (with the
//! caller's retry when `--retry` asks for it) and prints the normalized stream: human text via
//! [`super::render`] or JSONL with `--json`, written and flushed as soon as no further
//! message is ready (what piled up meanwhile goes out in one write). SIGINT, SIGTERM and
//! SIGHUP (and `--cancel-after`) cancel through the provider's orderly path; the process
//! exits only after the stream's terminal message, that is after the provider has cleaned
//! up.
//!
//! Here: the arguments, the plan and the loop between the stream, the signals and stdout;
//! `rpc` makes the `--rpc` stream, `writer` writes stdout from a task of its own.

use std::io::{IsTerminal, Read};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures_core::Stream;
use tokio::signal::unix::{signal, SignalKind};
use tokio_stream::StreamExt;
use tokio_util::sync::CancellationToken;

mod html;
mod rpc;
mod writer;

use self::rpc::rpc_run;
use self::writer::Output;
use super::render::Renderer;
use crate::exit::{EXIT_CANCELLED, EXIT_FAILED, EXIT_OK, EXIT_USAGE};
use crate::{parse_duration, parse_env_pair, use_color, CliError};
use pi_provider::retry::{execute_with_retry, RetryPolicy};
use pi_provider::{
    supervisor_from_env, which, Agent, ApiKey, Provider, ProviderOptions, Request, SessionRef,
};
use pi_wire::message::{FailureReason, Message};

/// Run the reference provider against an agent CLI (real or fake) and print the normalized
/// stream.
#[derive(Debug, Clone, clap::Args)]
#[command(after_help = RUN_HELP)]
pub struct RunArgs {
    /// The prompt, sent to pi on stdin (`-` reads it from pi-harness's own stdin).
    #[arg(value_name = "PROMPT")]
    pub prompt: String,
    /// The agent's executable [default: its name on PATH: the --agent].
    #[arg(long = "bin", visible_alias = "pi", value_name = "PATH")]
    pub bin: Option<PathBuf>,
    /// The agent's version (pi: `0.73.1`, `0.87.1`) [default: pi is asked with `pi
    /// --version`; the others' command lines are the same on every release].
    #[arg(long = "agent-version", visible_alias = "pi-version", value_name = "V")]
    pub agent_version: Option<String>,
    /// The model (`--model` of pi).
    #[arg(long, value_name = "M")]
    pub model: Option<String>,
    /// The LLM provider (`--provider` of pi).
    #[arg(long, value_name = "P")]
    pub provider: Option<String>,
    /// Create or continue this session.
    #[arg(long, value_name = "ID")]
    pub session_id: Option<String>,
    /// Directory of the session file; required with --session-id on pi 0.73.1.
    #[arg(long, value_name = "DIR", requires = "session_id")]
    pub session_dir: Option<PathBuf>,
    /// The session exists and is continued (the stream starts with `session.resumed`).
    #[arg(long, requires = "session_id")]
    pub resume: bool,
    /// Keep no session on disk (`--no-session` of pi).
    #[arg(long, conflicts_with = "session_id")]
    pub no_session: bool,
    /// Tools to disable, comma-separated (`bash,edit`).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub exclude_tools: Vec<String>,
    /// Allow-list of tools, comma-separated [default: pi's].
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub tools: Option<Vec<String>>,
    /// Thinking level (off, minimal, low, medium, high, xhigh; max on pi >= 0.87).
    #[arg(long, value_name = "LEVEL")]
    pub thinking: Option<String>,
    /// Cancel the run after this long, exactly as Ctrl-C would (exit 130).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub cancel_after: Option<Duration>,
    /// Fail the run after this long (`terminal.failed`, reason timeout, exit 1).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub timeout: Option<Duration>,
    /// Time pi gets after SIGTERM before everything below it is SIGKILLed.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "2s")]
    pub grace: Duration,
    /// Retry a failed run up to N more times when the failure is worth it (network, 5xx, rate limits, ...).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub retry: u32,
    /// Delay before the first retry, doubled for each further one (with jitter).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "2s")]
    pub retry_delay: Duration,
    /// Extra environment variable for pi (repeatable).
    #[arg(long = "env", value_name = "K=V", value_parser = parse_env_pair)]
    pub env: Vec<(String, String)>,
    /// Pass the API key held in this variable of pi-harness's environment to pi, in the same variable (never on argv).
    #[arg(long, value_name = "NAME")]
    pub api_key_env: Option<String>,
    /// Working directory for pi [default: the current one].
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Print the normalized messages as JSON lines.
    #[arg(long)]
    pub json: bool,
    /// Also draw the stream as one HTML page to this file, each message at the time it
    /// arrived (as `map --html` draws a cassette's); a link there is refused.
    #[arg(long, value_name = "OUT.html")]
    pub html: Option<PathBuf>,
    /// Run pi in RPC mode (`--mode rpc`, pi >= 0.87 in practice): one session, the prompt sent
    /// as a `prompt` command, the same normalized stream; then the session is shut down
    /// (stdin closed, SIGTERM after --grace, SIGKILL of everything below pi).
    #[arg(long, conflicts_with_all = ["timeout", "retry"])]
    pub rpc: bool,
    /// The agent CLI, as registered: `pi`; `codex` (`codex exec --json`, the prompt on its
    /// stdin; its sandbox and approval policy come from CODEX_HOME/config.toml, passed with
    /// --env CODEX_HOME=DIR); `gemini` (`gemini --output-format stream-json`, the prompt on
    /// its stdin; its settings come from $HOME/.gemini/settings.json, passed with --env
    /// HOME=DIR; a cancel signals its process group, the only signal it answers, and the
    /// orphaned tools are reaped). An agent the provider does not run yet (Claude Code) is
    /// refused by name.
    #[arg(long, value_name = "AGENT", default_value = "pi", value_parser = crate::agents::agent_parser())]
    pub agent: Agent,
    /// Gemini CLI's approval mode (`--approval-mode`: default, auto_edit, yolo, plan): `yolo`
    /// lets a headless run use tools that would ask first.
    #[arg(long, value_name = "MODE")]
    pub approval_mode: Option<String>,
}

const RUN_HELP: &str = "Examples:
  pi-harness run --provider openai --model gpt-4o-mini --api-key-env OPENAI_API_KEY 'list the files here'
  pi-harness run --json --session-id demo --exclude-tools bash,edit 'summarize README.md' | jq .type
  echo 'a prompt starting with -' | pi-harness run -
  FAKE_PI_CASSETTE=cassettes/tool_bash.pi87.cassette.jsonl FAKE_PI_SPEED=0 \\
      pi-harness run --bin target/debug/fake-pi --provider fake --model fake-model 'list files'
  FAKE_PI_CASSETTE=cassettes/sigterm_mid_tool.pi87.cassette.jsonl \\
      pi-harness run --bin target/debug/fake-pi --provider fake --model fake-model --cancel-after 300ms go

Ctrl-C cancels in order: pi gets SIGTERM, then after --grace everything below it is killed;
pi-harness exits once nothing is left. Exit status: 0 completed, 1 failed, 2 usage or input
error (also a request this pi version rejects), 130 cancelled.";

/// Everything `run` needs, checked.
#[derive(Debug)]
pub struct Plan {
    /// The run the provider is asked for.
    pub request: Request,
    /// How the provider runs it (the supervisor, the grace period).
    pub options: ProviderOptions,
    /// `Some` when `--retry` is above 0.
    pub retry: Option<RetryPolicy>,
    /// `--cancel-after`: cancel the run this long after it starts, as Ctrl-C would.
    pub cancel_after: Option<Duration>,
    /// Print JSON lines instead of human text.
    pub json: bool,
    /// Through an RPC session instead of one json-mode run.
    pub rpc: bool,
    /// `--html`: the page the stream is also drawn into.
    pub html: Option<PathBuf>,
}

/// The agent's executable: `--bin` (a bare name looked up on `PATH`), else the agent's name
/// on `PATH`; a usage error naming what is wrong with it.
fn agent_bin(args: &RunArgs) -> Result<PathBuf, CliError> {
    let found = match &args.bin {
        Some(given) => {
            // A bare name (`--bin pi87`) is looked up on PATH, like a shell would.
            let bare = !given.as_os_str().as_encoded_bytes().contains(&b'/');
            let p = match bare.then(|| which(&given.to_string_lossy())).flatten() {
                Some(found) => found,
                None => given.clone(),
            };
            let p = &p;
            let meta = std::fs::metadata(p).map_err(|e| {
                let hint = if bare { " (not on PATH either)" } else { "" };
                CliError::usage(format!("--bin {}: {}{hint}", p.display(), io_text(&e)))
            })?;
            if meta.is_dir() {
                return Err(CliError::usage(format!(
                    "--bin {}: is a directory, not the agent's executable",
                    p.display()
                )));
            }
            if meta.permissions().mode() & 0o111 == 0 {
                return Err(CliError::usage(format!(
                    "--bin {}: not executable",
                    p.display()
                )));
            }
            p.clone()
        }
        None => {
            let name = args.agent.name();
            which(name).ok_or_else(|| {
                CliError::usage(format!(
                    "{name} not found on PATH (install {name} or give --bin PATH)"
                ))
            })?
        }
    };
    Ok(found)
}

/// Check the arguments and build the request. `getenv` reads pi-harness's own environment
/// and `stdin` supplies the prompt when it is `-`.
pub fn plan(
    args: RunArgs,
    getenv: impl Fn(&str) -> Option<String>,
    stdin: impl FnOnce() -> std::io::Result<String>,
) -> Result<Plan, CliError> {
    if !pi_provider::drives(args.agent) {
        return Err(CliError::usage(format!(
            "--agent {}: the provider runs {}, not {}",
            args.agent.name(),
            pi_provider::driven_names(),
            args.agent.display_name()
        )));
    }
    let pi = agent_bin(&args)?;
    if args.agent != Agent::Pi && args.rpc {
        return Err(CliError::usage(format!(
            "--rpc is pi's RPC mode: {} runs one-way only",
            args.agent.display_name()
        )));
    }
    let supervisor = supervisor_from_env();
    if let Some(s) = &supervisor {
        if !s.is_file() {
            return Err(CliError::usage(format!(
                "PI_HARNESS_SUPERVISOR={}: no such file (unset it to use the supervisor built into pi-harness)",
                s.display()
            )));
        }
    }
    let api_key = match &args.api_key_env {
        Some(name) => {
            let value = getenv(name).filter(|v| !v.is_empty()).ok_or_else(|| {
                CliError::usage(format!(
                    "--api-key-env {name}: the variable is not set in pi-harness's environment"
                ))
            })?;
            if args.env.iter().any(|(k, _)| k == name) {
                return Err(CliError::usage(format!(
                    "--env {name}=...: the key variable is given by --api-key-env {name}"
                )));
            }
            Some(ApiKey {
                env_var: name.clone(),
                value,
            })
        }
        None => None,
    };
    if let Some(dir) = &args.cwd {
        if !dir.is_dir() {
            return Err(CliError::usage(format!(
                "--cwd {}: not a directory",
                dir.display()
            )));
        }
    }
    if let Some(dir) = &args.session_dir {
        if !dir.is_dir() {
            return Err(CliError::usage(format!(
                "--session-dir {}: not a directory",
                dir.display()
            )));
        }
    }
    let prompt = if args.prompt == "-" {
        stdin().map_err(|e| CliError::usage(format!("cannot read the prompt from stdin: {e}")))?
    } else {
        args.prompt.clone()
    };
    if prompt.trim().is_empty() {
        return Err(CliError::usage("the prompt is empty"));
    }
    let request = Request {
        agent: args.agent,
        pi_path: Some(pi),
        pi_version: args.agent_version.clone(),
        prompt,
        provider: args.provider.clone(),
        model: args.model.clone(),
        session: args.session_id.clone().map(|id| SessionRef {
            id,
            dir: args.session_dir.clone(),
            resume: args.resume,
        }),
        no_session: args.no_session,
        thinking: args.thinking.clone(),
        tools: args.tools.clone(),
        exclude_tools: args.exclude_tools.clone(),
        api_key,
        env: args.env.clone(),
        cwd: args.cwd.clone(),
        timeout: args.timeout,
        approval: args.approval_mode.clone(),
        ..Request::default()
    };
    // What Codex or Gemini CLI cannot be asked is a usage error now, not a failed run later.
    match request.agent {
        Agent::Codex => {
            pi_provider::codex_argv(&request).map_err(CliError::usage)?;
        }
        Agent::Gemini => {
            pi_provider::gemini_argv(&request).map_err(CliError::usage)?;
        }
        Agent::Pi if request.approval.is_some() => {
            return Err(CliError::usage(
                "--approval-mode is Gemini CLI's (--agent gemini): pi has none",
            ));
        }
        Agent::Pi | Agent::Claude => {}
    }
    let options = ProviderOptions {
        supervisor,
        grace: args.grace,
        ..ProviderOptions::default()
    };
    let retry = (args.retry > 0).then(|| RetryPolicy {
        max_attempts: args.retry.saturating_add(1),
        base_delay: args.retry_delay,
        max_delay: RetryPolicy::default().max_delay.max(args.retry_delay),
        ..RetryPolicy::default()
    });
    Ok(Plan {
        request,
        options,
        retry,
        cancel_after: args.cancel_after,
        json: args.json,
        rpc: args.rpc,
        html: args.html.clone(),
    })
}

fn io_text(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file".into(),
        std::io::ErrorKind::PermissionDenied => "permission denied".into(),
        _ => e.to_string(),
    }
}

/// The exit status for a run that ended with `terminal`.
pub fn exit_code(terminal: &Message) -> i32 {
    match terminal {
        Message::TerminalCompleted { .. } => EXIT_OK,
        Message::TerminalCancelled { .. } => EXIT_CANCELLED,
        Message::TerminalFailed(f) if f.reason == FailureReason::InvalidRequest => EXIT_USAGE,
        _ => EXIT_FAILED,
    }
}

/// `pi-harness run`: returns the exit status.
pub fn run_command(args: RunArgs) -> i32 {
    let plan = match plan(
        args,
        |k| std::env::var(k).ok(),
        || {
            let mut s = String::new();
            std::io::stdin().read_to_string(&mut s).map(|_| s)
        },
    ) {
        Ok(p) => p,
        Err(e) => return e.report(),
    };
    // Still one thread: fork the supervisor now, while the runtime starts, rather than
    // execute this binary again on the run's path. Should that fail, the run starts its
    // supervisor the usual way. Unused (the run ended before pi started), it ends with this
    // function.
    if let Err(e) = crate::fds::ensure_spare(crate::fds::SPARE_NEEDED) {
        eprintln!("error: {e}");
        return EXIT_FAILED;
    }
    let _preforked = plan
        .options
        .supervisor
        .is_none()
        .then(pi_provider::prefork_supervisor)
        .and_then(Result::ok);
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return EXIT_FAILED;
        }
    };
    let color = use_color(std::io::stdout().is_terminal());
    let code = runtime.block_on(execute(plan, color));
    // A write to a stdout nobody reads may still be pending on a blocking thread: do not wait for it.
    runtime.shutdown_background();
    code
}

async fn execute(plan: Plan, color: bool) -> i32 {
    let agent = plan.request.agent.name();
    let (mut sigint, mut sigterm, mut sighup) = match (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
    ) {
        (Ok(i), Ok(t), Ok(h)) => (i, t, h),
        (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => {
            eprintln!("error: cannot install the signal handlers: {e}");
            return EXIT_FAILED;
        }
    };
    let cancel = CancellationToken::new();
    let provider = Provider::new(plan.options.clone());
    let mut stream: Pin<Box<dyn Stream<Item = Message> + Send>> = match plan.retry {
        _ if plan.rpc => Box::pin(rpc_run(plan.options.clone(), plan.request, cancel.clone())),
        Some(policy) => Box::pin(execute_with_retry(
            provider,
            plan.request,
            policy,
            cancel.clone(),
        )),
        None => Box::pin(provider.execute(plan.request, cancel.clone())),
    };
    let mut page = match &plan.html {
        Some(out) => match html::RunPage::create(out, &format!("pi-harness run ({agent})")) {
            Ok(p) => Some(p),
            Err(e) => return e.report(),
        },
        None => None,
    };
    let output = Output::spawn(cancel.clone());
    let mut renderer = Renderer::new(color);
    let mut terminal: Option<Message> = None;
    let mut signalled = false;
    let cancel_at = plan.cancel_after.map(|d| tokio::time::Instant::now() + d);
    let grace = plan.options.grace + plan.options.kill_wait;
    let noop = noop_waker();

    loop {
        // Backpressure while the run goes on (a slow reader slows pi); once cancelled, drain
        // the stream whatever stdout does, so the provider is never stuck before its cleanup.
        let room = output.pending() < MAX_PENDING || cancel.is_cancelled();
        let why: &str = tokio::select! {
            m = stream.next(), if room => {
                let Some(m) = m else { break };
                // This message and every one already waiting behind it, up to a write's
                // worth, rendered into one text: one trip through the select and one write
                // for a whole read of pi's stdout.
                let mut text = Vec::new();
                let mut next = Some(m);
                while let Some(m) = next.take() {
                    if let Some(p) = page.as_mut() {
                        p.message(&m);
                    }
                    if plan.json {
                        serde_json::to_writer(&mut text, &m).expect("a message always serializes");
                        text.push(b'\n');
                    } else {
                        text.extend_from_slice(renderer.render(&m).as_bytes());
                    }
                    if m.is_terminal() {
                        terminal = Some(m);
                    }
                    if text.len() < WRITE_BYTES {
                        next = ready_now(&mut stream, &noop);
                    }
                }
                output.write(text);
                continue;
            }
            _ = output.drained.notified(), if !room => continue,
            _ = sigint.recv() => "SIGINT",
            _ = sigterm.recv() => "SIGTERM",
            _ = sighup.recv() => "SIGHUP",
            _ = sleep_until(cancel_at), if !cancel.is_cancelled() => "--cancel-after",
        };
        signalled |= why != "--cancel-after";
        if cancel.is_cancelled() {
            eprintln!(
                "pi-harness: {why}: still stopping {agent}; it ends within {:.1} s (nothing is left behind)",
                grace.as_secs_f64()
            );
        } else {
            eprintln!(
                "pi-harness: {why}: cancelling (SIGTERM to {agent}, SIGKILL after {:.1} s)",
                plan.options.grace.as_secs_f64()
            );
            cancel.cancel();
        }
    }
    if let Some(p) = page {
        p.finish();
    }
    // The run is over and nothing of it is left. Let the output finish; a signal now, or a
    // reader that does not read after a signal-cancel, ends pi-harness at once.
    let flush_limit = signalled.then(|| tokio::time::Instant::now() + FLUSH_AFTER_SIGNAL);
    let mut unread = false;
    tokio::select! {
        broken = output.finish() => unread = broken,
        _ = sigint.recv() => {}
        _ = sigterm.recv() => {}
        _ = sighup.recv() => {}
        _ = sleep_until(flush_limit) => {}
    }
    // stdout closed: whether the run had already ended when the writer found out is a race
    // (an instant replay can end before the first write fails); the stream did not reach
    // its reader either way, and that is what the status says (130, as for a cancel).
    if unread {
        return EXIT_CANCELLED;
    }
    match &terminal {
        Some(t) => exit_code(t),
        None => {
            eprintln!("error: the run ended without a terminal message");
            EXIT_FAILED
        }
    }
}

/// Writes waiting for stdout above which the stream is no longer read (while not cancelled).
const MAX_PENDING: usize = 256;
/// Text gathered from messages that are ready at once before it is queued as one write.
const WRITE_BYTES: usize = 64 << 10;

/// The stream's next message if it is there without waiting (`None` when it is not, or when
/// the stream has ended: the loop's next poll sees the end).
fn ready_now<S: Stream + Unpin>(stream: &mut S, noop: &std::task::Waker) -> Option<S::Item> {
    let mut cx = std::task::Context::from_waker(noop);
    match Pin::new(stream).poll_next(&mut cx) {
        std::task::Poll::Ready(item) => item,
        std::task::Poll::Pending => None,
    }
}

/// A waker that does nothing, for [`ready_now`]: the loop polls the stream again with its
/// own waker before it waits.
fn noop_waker() -> std::task::Waker {
    struct Noop;
    impl std::task::Wake for Noop {
        fn wake(self: Arc<Self>) {}
    }
    std::task::Waker::from(Arc::new(Noop))
}
/// How long the output may take to drain after a run cancelled by a signal.
const FLUSH_AFTER_SIGNAL: Duration = Duration::from_secs(2);

async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(t) => tokio::time::sleep_until(t).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests;
