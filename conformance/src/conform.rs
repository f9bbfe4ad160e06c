//! The conformance runner (`pi-harness conform`, `pi-harness provider-run`).
//!
//! It owns the language-neutral contract of the suite: one case per cassette, the request
//! document an implementation receives, the capability handshake, the comparison of an
//! implementation's normalized JSONL with the expected stream (volatile fields ignored), and
//! the report (one line per case, a summary table, a reproduce command, per-field diffs).
//! Pure pieces (case derivation, capabilities, comparison, report) are separate from the
//! process-running ones (`run_case`, `provider_run`). See `conformance/README.md`.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use pi_cassette::{Action, Cassette, FlagRule};
use pi_procs as procs;
use pi_provider::{Provider, ProviderOptions, Request, SessionRef};
use pi_wire::message::Message;

/// Version of the request document.
pub const REQUEST_VERSION: u32 = 1;
/// Version of the capability handshake answer.
pub const PROTOCOL_VERSION: u32 = 1;
/// Idle time after which a case whose cassette ends in `hang` is cancelled.
pub const CANCEL_IDLE_MS: u64 = 500;
/// Environment variable carrying the per-case marker (the survivor scan looks for it).
pub const MARKER_VAR: &str = "PI_HARNESS_CONFORM_MARKER";

/// Every capability a case can need, in report order.
pub const CAPABILITIES: &[&str] = &[
    "text",
    "thinking",
    "tools",
    "retry",
    "session",
    "cancel",
    "errors",
    "diagnostics",
    "dialect.snapshot-only",
    "pi-0.73",
    "pi-0.87",
    "pi-1.5",
    "rpc",
    "claude",
    "claude-2.1",
];

/// The request document, version 1: what an implementation is asked to run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestDoc {
    pub version: u32,
    /// The case name (the cassette's path under `cassettes/` without `.cassette.jsonl[.gz]`).
    pub case: String,
    /// The prompt; give it to pi on stdin (or as a message argument).
    pub prompt: String,
    pub pi: PiDoc,
    #[serde(default)]
    pub provider: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    /// `--no-session`.
    #[serde(default)]
    pub no_session: bool,
    /// A session to continue.
    #[serde(default)]
    pub session: Option<SessionDoc>,
    #[serde(default)]
    pub thinking: Option<String>,
    #[serde(default)]
    pub tools: Option<Vec<String>>,
    #[serde(default)]
    pub exclude_tools: Vec<String>,
    /// Extra environment for pi (the run's `FAKE_PI_CASSETTE` and `FAKE_PI_SPEED` are here).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// pi's working directory.
    #[serde(default)]
    pub cwd: Option<String>,
    /// Cancel the run once no normalized message has come for this long (after the first
    /// one); the case then expects `terminal.cancelled`.
    #[serde(default)]
    pub cancel_after_idle_ms: Option<u64>,
    /// An RPC case (`pi --mode rpc`): what the client does, in order. Absent for a
    /// json-mode case.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rpc: Option<Vec<RpcStep>>,
    /// A Claude Code case: `"claude"`; absent for pi. The CLI is `claude` on PATH, run with
    /// `argv`, driven by the `rpc` steps (stream-json lines instead of pi's commands).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// A Claude Code case's command line (the recording's options).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argv: Option<Vec<String>>,
}

/// One client action of an RPC case: once pi has written `after_stdout_lines` lines on
/// stdout (responses included, counted from its start), do exactly one of: send the
/// command `send` (add your own `id` if you like: fake-pi ignores ids), write `send_raw` as
/// it is, close stdin, or send pi `signal`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RpcStep {
    pub after_stdout_lines: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_raw: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub close_stdin: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<String>,
}

/// The client actions of a two-way cassette, as request steps (ids dropped).
pub fn rpc_steps(c: &Cassette) -> Vec<RpcStep> {
    use pi_cassette::two_way::{client_steps, ClientAction};
    client_steps(&c.records)
        .into_iter()
        .map(|s| {
            let mut step = RpcStep {
                after_stdout_lines: s.after_stdout_lines,
                send: None,
                send_raw: None,
                close_stdin: None,
                signal: None,
            };
            match s.action {
                ClientAction::Line(json) => {
                    let mut v: Value = serde_json::from_str(&json).unwrap_or(Value::Null);
                    if let Some(o) = v.as_object_mut() {
                        o.remove("id");
                    }
                    step.send = Some(v);
                }
                ClientAction::Raw(t) => step.send_raw = Some(t),
                ClientAction::Close => step.close_stdin = Some(true),
                ClientAction::Signal(sig) => step.signal = Some(sig),
            }
            step
        })
        .collect()
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PiDoc {
    /// pi's version (`0.73.1`, `0.87.1`): pick the command line for it.
    pub version: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionDoc {
    pub id: String,
    /// Where pi 0.73.1 keeps the session file (`--session DIR/ID.jsonl`).
    #[serde(default)]
    pub dir: Option<String>,
    /// Continue an existing session: the stream starts with `session.resumed`.
    #[serde(default)]
    pub resume: bool,
}

/// One case of the suite.
#[derive(Debug, Clone)]
pub struct Case {
    pub name: String,
    pub cassette: PathBuf,
    /// The request without run-specific values (cassette path, dirs).
    pub request: RequestDoc,
}

/// An expected stream as exported to `conformance/expected/<case>.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expected {
    pub case: String,
    /// The cassette, relative to the cassettes directory.
    pub cassette: String,
    pub capabilities: Vec<String>,
    /// The request with placeholders: `<CASSETTE>` (a copy of the cassette without
    /// `expect.argv_messages`), `<DIR>` (the case's temp dir).
    pub request: RequestDoc,
    pub messages: Vec<Value>,
}

/// The case name of a cassette path under `root`.
pub fn case_name(root: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(root).unwrap_or(path);
    let s = rel.to_string_lossy();
    s.trim_end_matches(".gz")
        .trim_end_matches(".cassette.jsonl")
        .to_string()
}

/// Every cassette under `root`, sorted.
pub fn cassette_files(root: &Path) -> Result<Vec<PathBuf>, String> {
    let mut found = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let entries = std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for entry in entries {
            let path = entry.map_err(|e| format!("{}: {e}", dir.display()))?.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                n.ends_with(".cassette.jsonl") || n.ends_with(".cassette.jsonl.gz")
            }) {
                found.push(path);
            }
        }
    }
    found.sort();
    Ok(found)
}

/// The case of one cassette: its request document, derived from the header.
pub fn case_of(root: &Path, path: &Path, c: &Cassette) -> Case {
    let name = case_name(root, path);
    let h = &c.header;
    let flag = |k: &str| h.expect.flags.get(k);
    let string = |k: &str| match flag(k) {
        Some(FlagRule::Value(v)) => Some(v.clone()),
        _ => None,
    };
    if h.is_claude() {
        return claude_case(name, path, c);
    }
    // What the recording ran with, by meaning: an implementation passes these as flags.
    let effective = pi_grammar::Grammar::for_version(&h.pi.version)
        .map(|g| pi_cassette::matching::expected(&h.expect, &g))
        .unwrap_or_default();
    let thinking = effective
        .thinking
        .clone()
        .filter(|t| t != pi_grammar::DEFAULT_THINKING);
    let tools = effective.tools.clone().filter(|t| {
        let mut d: Vec<&str> = pi_grammar::DEFAULT_TOOLS.to_vec();
        d.sort_unstable();
        t.iter().map(String::as_str).ne(d)
    });
    let session = match (string("session-id"), flag("session")) {
        (Some(id), _) => Some(SessionDoc {
            id,
            dir: None,
            resume: true,
        }),
        (None, Some(rule)) if !matches!(rule, FlagRule::Present(false)) => Some(SessionDoc {
            id: h.scenario.name.replace('_', "-"),
            dir: Some("<DIR>/sessions".into()),
            resume: true,
        }),
        _ => None,
    };
    let mut env = BTreeMap::new();
    for var in &h.expect.env {
        env.insert(var.clone(), format!("conformance-{}", var.to_lowercase()));
    }
    env.insert("FAKE_PI_CASSETTE".into(), "<CASSETTE>".into());
    env.insert("FAKE_PI_SPEED".into(), "0".into());
    // The expected streams hold the recorder's placeholders (`<SESSION_ID>`): replay them
    // as recorded rather than as realistic values.
    env.insert("FAKE_PI_VALUES".into(), "recorded".into());
    // pi's settings and sessions stay in the case's dir.
    env.insert("PI_CODING_AGENT_DIR".into(), "<DIR>/agent".into());
    let rpc = h.mode.is_some().then(|| rpc_steps(c));
    // An RPC case's prompts are in its steps; `prompt` names the first, for logs.
    let first_prompt = rpc.as_ref().and_then(|steps| {
        steps.iter().find_map(|s| {
            let v = s.send.as_ref()?;
            (v["type"] == "prompt").then(|| v["message"].as_str().map(str::to_string))?
        })
    });
    let request = RequestDoc {
        version: REQUEST_VERSION,
        case: name.clone(),
        prompt: first_prompt
            .or_else(|| h.expect.prompt.clone())
            .unwrap_or_else(|| "hi".into()),
        pi: PiDoc {
            version: h.pi.version.clone(),
        },
        provider: effective.provider.clone(),
        model: effective.model.clone(),
        no_session: matches!(flag("no-session"), Some(FlagRule::Present(true))),
        session,
        thinking,
        tools,
        exclude_tools: Vec::new(),
        env,
        cwd: Some("<DIR>".into()),
        cancel_after_idle_ms: (matches!(c.ending(), Action::Hang) && rpc.is_none())
            .then_some(CANCEL_IDLE_MS),
        rpc,
        agent: None,
        argv: None,
    };
    Case {
        name,
        cassette: path.to_path_buf(),
        request,
    }
}

/// A Claude Code case: the recording's options as argv, its host's lines as steps.
fn claude_case(name: String, path: &Path, c: &Cassette) -> Case {
    let h = &c.header;
    let argv = h.expect.claude_argv();
    let mut env = BTreeMap::new();
    for var in &h.expect.env {
        env.insert(var.clone(), format!("conformance-{}", var.to_lowercase()));
    }
    env.insert("FAKE_PI_CASSETTE".into(), "<CASSETTE>".into());
    env.insert("FAKE_PI_SPEED".into(), "0".into());
    env.insert("FAKE_PI_VALUES".into(), "recorded".into());
    let steps = rpc_steps(c);
    let prompt = steps
        .iter()
        .find_map(|s| {
            let v = s.send.as_ref()?;
            (v["type"] == "user").then(|| v["message"]["content"].as_str().map(str::to_string))?
        })
        .unwrap_or_else(|| "hi".into());
    Case {
        request: RequestDoc {
            version: REQUEST_VERSION,
            case: name.clone(),
            prompt,
            pi: PiDoc {
                version: h.pi.version.clone(),
            },
            provider: None,
            model: None,
            no_session: false,
            session: None,
            thinking: None,
            tools: None,
            exclude_tools: Vec::new(),
            env,
            cwd: Some("<DIR>".into()),
            cancel_after_idle_ms: None,
            rpc: Some(steps),
            agent: Some("claude".into()),
            argv: Some(argv),
        },
        name,
        cassette: path.to_path_buf(),
    }
}

/// Every case under `root` (json-mode runs and RPC sessions).
pub fn discover(root: &Path) -> Result<Vec<Case>, String> {
    cassette_files(root)?
        .into_iter()
        .map(|p| {
            let c = Cassette::load(&p).map_err(|e| e.to_string())?;
            Ok(case_of(root, &p, &c))
        })
        .collect()
}

/// The capabilities a case needs, from its request, cassette and expected stream.
pub fn capabilities_of(case: &Case, c: &Cassette, messages: &[Value]) -> Vec<String> {
    let has = |t: &str| messages.iter().any(|m| m["type"] == t);
    let mut caps = vec!["text"];
    if has("assistant.thought") {
        caps.push("thinking");
    }
    if messages
        .iter()
        .any(|m| m["type"].as_str().is_some_and(|t| t.starts_with("tool.")))
    {
        caps.push("tools");
    }
    if has("retry.scheduled") {
        caps.push("retry");
    }
    if case.request.session.is_some() {
        caps.push("session");
    }
    if case.request.cancel_after_idle_ms.is_some() {
        caps.push("cancel");
    }
    let claude = case.request.agent.as_deref() == Some("claude");
    if case.request.rpc.is_some() && !claude {
        caps.push("rpc");
    }
    if claude {
        caps.push("claude");
    }
    if has("terminal.failed") {
        caps.push("errors");
    }
    if messages
        .iter()
        .any(|m| m.get("invalid_lines").is_some() || m.get("invalid_lines_dropped").is_some())
    {
        caps.push("diagnostics");
    }
    if c.header.pi.dialect == pi_cassette::Dialect::SnapshotOnly {
        caps.push("dialect.snapshot-only");
    }
    let mut caps: Vec<String> = caps.into_iter().map(str::to_string).collect();
    // One capability per pi (or Claude Code) minor release the case was recorded on
    // (`pi-0.87`, `claude-2.1`).
    let agent = c.header.agent_name();
    let version = pi_grammar::Version::parse(&c.header.pi.version);
    caps.push(version.map_or_else(
        || format!("{agent}-{}", c.header.pi.version),
        |v| format!("{agent}-{}.{}", v.major, v.minor),
    ));
    caps
}

/// Replace the placeholders of a request template with this run's values.
pub fn instantiate(template: &RequestDoc, cassette: &Path, dir: &Path) -> RequestDoc {
    let fill = |s: &str| {
        s.replace("<CASSETTE>", &cassette.to_string_lossy())
            .replace("<DIR>", &dir.to_string_lossy())
    };
    let mut r = template.clone();
    r.env = r.env.iter().map(|(k, v)| (k.clone(), fill(v))).collect();
    r.cwd = r.cwd.as_deref().map(fill);
    if let Some(s) = &mut r.session {
        s.dir = s.dir.as_deref().map(fill);
    }
    r
}

/// The provider request for a request document (`pi` from `PATH`, version as given).
pub fn to_provider_request(doc: &RequestDoc) -> Request {
    Request {
        pi_path: None,
        pi_version: Some(doc.pi.version.clone()),
        prompt: doc.prompt.clone(),
        provider: doc.provider.clone(),
        model: doc.model.clone(),
        session: doc.session.as_ref().map(|s| SessionRef {
            id: s.id.clone(),
            dir: s.dir.as_ref().map(PathBuf::from),
            resume: s.resume,
        }),
        no_session: doc.no_session,
        thinking: doc.thinking.clone(),
        tools: doc.tools.clone(),
        exclude_tools: doc.exclude_tools.clone(),
        env: doc
            .env
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        cwd: doc.cwd.as_ref().map(PathBuf::from),
        ..Request::default()
    }
}

/// Run the reference provider on a request document (see [`provider_run_request`]).
pub async fn provider_run(
    doc: &RequestDoc,
    opts: ProviderOptions,
    out: impl Write,
) -> std::io::Result<Vec<Message>> {
    if doc.agent.as_deref() == Some("claude") {
        return reference_run_claude(doc, pi_provider::which("claude").as_deref(), out).await;
    }
    if let Some(steps) = &doc.rpc {
        return provider_run_rpc(to_provider_request(doc), steps, opts, out).await;
    }
    provider_run_request(
        to_provider_request(doc),
        doc.cancel_after_idle_ms.map(Duration::from_millis),
        opts,
        out,
    )
    .await
}

/// Run the reference provider, writing each message as one JSON line to `out` (flushed per
/// line), and return the messages. With `idle`, the run is cancelled once no message has
/// come for that long after the first one.
pub async fn provider_run_request(
    req: Request,
    idle: Option<Duration>,
    opts: ProviderOptions,
    mut out: impl Write,
) -> std::io::Result<Vec<Message>> {
    use tokio_stream::StreamExt as _;
    let cancel = tokio_util::sync::CancellationToken::new();
    let mut stream = std::pin::pin!(Provider::new(opts).execute(req, cancel.clone()));
    let mut seen = Vec::new();
    loop {
        let next = match idle {
            Some(d) if !seen.is_empty() && !cancel.is_cancelled() => {
                match tokio::time::timeout(d, stream.next()).await {
                    Ok(m) => m,
                    Err(_) => {
                        cancel.cancel();
                        continue;
                    }
                }
            }
            _ => stream.next().await,
        };
        let Some(m) = next else { break };
        serde_json::to_writer(&mut out, &m)?;
        out.write_all(b"\n")?;
        out.flush()?;
        seen.push(m);
    }
    Ok(seen)
}

/// Run an RPC case with the reference provider's [`RpcSession`]: each step once pi has
/// written its number of stdout lines; every run a prompt starts goes to `out` (one JSON
/// line per message, run after run in the order the prompts were sent: pi runs one prompt
/// at a time, and the order two runs' streams are drained in must not depend on
/// scheduling); a refused prompt adds nothing. After the last step (or pi's exit) the session is shut down and the runs
/// drained. Returns the messages written.
pub async fn provider_run_rpc(
    req: Request,
    steps: &[RpcStep],
    opts: ProviderOptions,
    mut out: impl Write,
) -> std::io::Result<Vec<Message>> {
    use pi_provider::rpc::RpcSession;
    use tokio_stream::StreamExt as _;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Message>();
    let session = match RpcSession::start(opts, req).await {
        Ok(s) => s,
        Err(f) => {
            let _ = tx.send(Message::TerminalFailed(f));
            drop(tx);
            return write_all_messages(&mut rx, &mut out).await;
        }
    };
    let mut runs = Vec::new();
    let mut closed = false;
    for step in steps {
        if !session.wait_stdout_lines(step.after_stdout_lines).await {
            break; // pi's stdout closed first: nothing more to do
        }
        if let Some(cmd) = step.send.as_ref().filter(|c| !c.is_object()) {
            // Not a command object (`[1,2]`): written as it is; pi answers without an id.
            let _ = session.send_raw(&cmd.to_string()).await;
        } else if let Some(cmd) = &step.send {
            if cmd["type"] == "prompt" && cmd.get("streamingBehavior").is_none() {
                let text = cmd["message"].as_str().unwrap_or("").to_string();
                if let Ok(mut stream) = session.prompt(&text).await {
                    runs.push(tokio::spawn(async move {
                        let mut messages = Vec::new();
                        while let Some(m) = stream.next().await {
                            messages.push(m);
                        }
                        messages
                    }));
                }
            } else {
                // Its answer may come late (an abort answers after the run closes).
                let s = session.clone();
                let cmd = cmd.clone();
                tokio::spawn(async move {
                    let _ = s.command(cmd).await;
                });
            }
        } else if let Some(raw) = &step.send_raw {
            let _ = session.send_raw(raw).await;
        } else if step.close_stdin == Some(true) {
            closed = true;
            break;
        } else if let Some(sig) = &step.signal {
            if let Ok(sig) = sig.parse::<nix::sys::signal::Signal>() {
                let _ = session.signal(sig).await;
            }
        }
    }
    let mut done = Vec::new();
    if !closed {
        // Let the runs end on their own (settled, or pi gone after a signal) before the
        // session is shut down under them.
        for r in runs.drain(..) {
            done.push(r.await.unwrap_or_default());
        }
    }
    session.shutdown().await;
    for r in runs {
        done.push(r.await.unwrap_or_default());
    }
    for m in done.into_iter().flatten() {
        let _ = tx.send(m);
    }
    drop(tx);
    write_all_messages(&mut rx, &mut out).await
}

/// Run a Claude Code case with the reference: `program` (`claude` from PATH) with the case's argv and
/// environment, its steps written after their number of stdout lines, stdout mapped by
/// [`pi_wire::claude`] once the CLI has ended (a run per turn). The CLI gets 60 s after the
/// last step, then is killed (a `terminal.failed` the case will not expect).
pub async fn reference_run_claude(
    doc: &RequestDoc,
    program: Option<&Path>,
    mut out: impl Write,
) -> std::io::Result<Vec<Message>> {
    use std::os::unix::process::ExitStatusExt as _;
    use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _};
    let end_with = |reason: pi_wire::message::FailureReason, message: String| {
        vec![Message::TerminalFailed(pi_wire::message::Failure {
            reason,
            message,
            exit: None,
            stderr_tail: None,
            invalid_lines: Vec::new(),
            invalid_lines_dropped: 0,
        })]
    };
    let messages = 'run: {
        let Some(program) = program else {
            break 'run end_with(
                pi_wire::message::FailureReason::SpawnFailed,
                "no `claude` on PATH".into(),
            );
        };
        let mut cmd = tokio::process::Command::new(program);
        cmd.args(doc.argv.clone().unwrap_or_default())
            .envs(&doc.env)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        if let Some(cwd) = &doc.cwd {
            cmd.current_dir(cwd);
        }
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => {
                break 'run end_with(
                    pi_wire::message::FailureReason::SpawnFailed,
                    format!("claude: {e}"),
                )
            }
        };
        let pid = child.id().map(|p| p as i32);
        let mut stdin = child.stdin.take();
        // Bytes, not `lines()`: a line that is not UTF-8 is the mapper's to report.
        let mut reader = tokio::io::BufReader::new(child.stdout.take().expect("piped"));
        let mut buf = Vec::new();
        let mut next_line = async move |stdout: &mut Vec<u8>| -> bool {
            buf.clear();
            match reader.read_until(b'\n', &mut buf).await {
                Ok(0) | Err(_) => false,
                Ok(_) => {
                    stdout.extend_from_slice(&buf);
                    true
                }
            }
        };
        let mut stderr = child.stderr.take().expect("piped");
        let err_task = tokio::spawn(async move {
            let mut buf = Vec::new();
            let _ = stderr.read_to_end(&mut buf).await;
            buf
        });
        let mut stdout = Vec::new();
        let mut seen = 0u64;
        let mut open = true;
        for step in doc.rpc.iter().flatten() {
            while open && seen < step.after_stdout_lines {
                if next_line(&mut stdout).await {
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
                stdin = None;
            } else if let (Some(sig), Some(pid)) = (&step.signal, pid) {
                if let Ok(sig) = sig.parse::<nix::sys::signal::Signal>() {
                    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), sig);
                }
            }
        }
        let rest = async {
            while next_line(&mut stdout).await {}
            child.wait().await
        };
        let status = match tokio::time::timeout(Duration::from_secs(60), rest).await {
            Ok(Ok(s)) => s,
            _ => {
                let _ = child.kill().await;
                break 'run end_with(
                    pi_wire::message::FailureReason::Timeout,
                    "claude did not end within 60 s of the last step".into(),
                );
            }
        };
        drop(stdin);
        let mut stderr = err_task.await.unwrap_or_default();
        // A tail, as the provider keeps one.
        const TAIL: usize = 4096;
        if stderr.len() > TAIL {
            stderr.drain(..stderr.len() - TAIL);
        }
        let signal = status
            .signal()
            .and_then(|s| nix::sys::signal::Signal::try_from(s).ok())
            .map(|s| s.as_str().to_string());
        let end = pi_wire::mapper::StreamEnd::recorded(status.code(), signal.as_deref(), &stderr);
        pi_wire::claude::map_all(&stdout, end, pi_wire::mapper::MapperOptions::default())
    };
    for m in &messages {
        serde_json::to_writer(&mut out, m)?;
        out.write_all(b"\n")?;
    }
    out.flush()?;
    Ok(messages)
}

async fn write_all_messages(
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<Message>,
    out: &mut impl Write,
) -> std::io::Result<Vec<Message>> {
    let mut seen = Vec::new();
    while let Some(m) = rx.recv().await {
        serde_json::to_writer(&mut *out, &m)?;
        out.write_all(b"\n")?;
        out.flush()?;
        seen.push(m);
    }
    Ok(seen)
}

/// Fields that differ legitimately between implementations and are not compared:
/// `(message type, field)`. `invalid_lines` keep `line` and `bytes`.
pub const IGNORED_FIELDS: &[(&str, &str)] = &[
    ("terminal.failed", "message"),
    ("terminal.failed", "stderr_tail"),
    ("terminal.failed", "invalid_lines[].problem"),
    ("terminal.failed", "invalid_lines[].excerpt"),
];

/// A message with the ignored fields removed.
pub fn comparable(m: &Value) -> Value {
    let mut v = m.clone();
    let ty = m["type"].as_str().unwrap_or("").to_string();
    if let Some(obj) = v.as_object_mut() {
        for (t, field) in IGNORED_FIELDS {
            if *t != ty {
                continue;
            }
            match field.split_once("[].") {
                None => {
                    obj.remove(*field);
                }
                Some((arr, sub)) => {
                    if let Some(Value::Array(items)) = obj.get_mut(arr) {
                        for it in items {
                            if let Some(o) = it.as_object_mut() {
                                o.remove(sub);
                            }
                        }
                    }
                }
            }
        }
    }
    v
}

/// One difference: where, expected, actual (`None` = absent).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FieldDiff {
    pub path: String,
    pub expected: Option<Value>,
    pub actual: Option<Value>,
}

/// Differences found: the first `limit` kept, all counted.
struct Diffs {
    kept: Vec<FieldDiff>,
    total: usize,
    limit: usize,
}

impl Diffs {
    fn push(&mut self, path: String, e: Option<&Value>, a: Option<&Value>) {
        self.total += 1;
        if self.kept.len() < self.limit {
            self.kept.push(FieldDiff {
                path,
                expected: e.cloned(),
                actual: a.cloned(),
            });
        }
    }
}

fn diff_value(path: String, e: Option<&Value>, a: Option<&Value>, out: &mut Diffs) {
    match (e, a) {
        // Messages of different types differ as wholes, not field by field.
        (Some(Value::Object(eo)), Some(Value::Object(ao)))
            if eo.get("type").is_some() && eo.get("type") != ao.get("type") =>
        {
            out.push(path, e, a)
        }
        (Some(Value::Object(eo)), Some(Value::Object(ao))) => {
            let mut keys: Vec<&String> = eo.keys().chain(ao.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                diff_value(format!("{path}.{k}"), eo.get(k), ao.get(k), out);
            }
        }
        (Some(Value::Array(ea)), Some(Value::Array(aa))) => {
            for i in 0..ea.len().max(aa.len()) {
                diff_value(format!("{path}[{i}]"), ea.get(i), aa.get(i), out);
            }
        }
        // JSON has one number type: 0 and 0.0 are the same number.
        (Some(Value::Number(en)), Some(Value::Number(an))) if en.as_f64() == an.as_f64() => {}
        (e, a) if e != a => out.push(path, e, a),
        _ => {}
    }
}

/// Compare two streams (ignored fields removed); empty when they agree.
pub fn compare(expected: &[Value], actual: &[Value]) -> Vec<FieldDiff> {
    compare_bounded(expected, actual, usize::MAX).0
}

/// [`compare`], keeping the first `limit` differences; also returns how many there are in
/// all. Messages are made comparable a pair at a time, never the whole stream at once.
pub fn compare_bounded(
    expected: &[Value],
    actual: &[Value],
    limit: usize,
) -> (Vec<FieldDiff>, usize) {
    compare_each(expected, actual.len(), |i| actual[i].clone(), limit)
}

/// The comparison behind [`compare_bounded`], over `actual_len` messages read one at a time
/// by `actual` (an implementation's are kept as text, parsed only here).
fn compare_each(
    expected: &[Value],
    actual_len: usize,
    actual: impl Fn(usize) -> Value,
    limit: usize,
) -> (Vec<FieldDiff>, usize) {
    let mut out = Diffs {
        kept: Vec::new(),
        total: 0,
        limit,
    };
    for i in 0..expected.len().max(actual_len) {
        let e = expected.get(i).map(comparable);
        let a = (i < actual_len).then(|| comparable(&actual(i)));
        diff_value(format!("[{i}]"), e.as_ref(), a.as_ref(), &mut out);
    }
    (out.kept, out.total)
}

/// The verdict on one case.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "lowercase")]
pub enum Verdict {
    Passed,
    Failed {
        /// Problems other than stream differences (bad lines, survivors, timeout, exit).
        problems: Vec<String>,
        /// The first [`MAX_DIFFS`] differences.
        diffs: Vec<FieldDiff>,
        /// Differences past those (absent when none).
        #[serde(skip_serializing_if = "is_zero", default)]
        unlisted_diffs: usize,
    },
    Skipped {
        missing: Vec<String>,
    },
}

#[derive(Debug, Clone, Serialize)]
pub struct CaseResult {
    pub case: String,
    pub capabilities: Vec<String>,
    #[serde(flatten)]
    pub verdict: Verdict,
    pub ms: u64,
}

/// What a reader thread of [`run_impl`] hands back.
enum Collected {
    Stdout(crate::collect::Stdout),
    Stderr(Vec<u8>),
}

/// What running an implementation on one case produced.
#[derive(Debug, Clone, Default)]
pub struct ImplOutput {
    /// Each stdout line that is JSON, as written (parsed again only to compare: a parsed
    /// small message takes several times its text's memory).
    pub messages: Vec<Box<serde_json::value::RawValue>>,
    pub problems: Vec<String>,
    pub stderr: String,
}

/// Where the case's files go: the cassette copy without `argv_messages` (the suite checks the
/// effective prompt, not whether it came in argv or on stdin), `bin/pi` -> fake-pi, `sessions/`.
pub fn prepare(case: &Case, dir: &Path, fake_pi: &Path) -> Result<RequestDoc, String> {
    let mut c = Cassette::load(&case.cassette).map_err(|e| e.to_string())?;
    c.header.expect.argv_messages = None;
    let copy = dir.join("case.cassette.jsonl");
    c.save(&copy)
        .map_err(|e| format!("{}: {e}", copy.display()))?;
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).map_err(|e| format!("{}: {e}", bin.display()))?;
    let name = if c.header.is_claude() { "claude" } else { "pi" };
    // The link lives in another directory: a relative target would point nowhere.
    let fake_pi =
        std::path::absolute(fake_pi).map_err(|e| format!("{}: {e}", fake_pi.display()))?;
    std::os::unix::fs::symlink(&fake_pi, bin.join(name))
        .map_err(|e| format!("{}: {e}", bin.join(name).display()))?;
    std::fs::create_dir_all(dir.join("sessions")).map_err(|e| e.to_string())?;
    let request = instantiate(&case.request, &copy, dir);
    if c.header.expect.session == Some(pi_cassette::SessionUse::Resumed) {
        seed_session(&c.header.pi.version, dir, &request)?;
    }
    Ok(request)
}

/// A recording that continued a session needs one to continue: write a minimal session
/// file where the case's pi will look for it (`--session-id` in the agent dir's sessions of
/// the case dir; 0.73.1's `--session DIR/ID.jsonl`).
fn seed_session(version: &str, dir: &Path, request: &RequestDoc) -> Result<(), String> {
    let Some(s) = &request.session else {
        return Ok(());
    };
    let cwd = request
        .cwd
        .clone()
        .unwrap_or_else(|| dir.display().to_string());
    let timestamp = "2026-01-01T00:00:00.000Z";
    let has_session_id = pi_grammar::Grammar::nearest(version).has_flag("--session-id");
    let path = match (&s.dir, has_session_id) {
        (Some(d), false) => PathBuf::from(d).join(format!("{}.jsonl", s.id)),
        _ => dir
            .join("agent/sessions")
            .join(pi_grammar::cwd_slug(&cwd))
            .join(pi_grammar::session_file_name(timestamp, &s.id)),
    };
    let header = format!(
        "{{\"type\":\"session\",\"version\":3,\"id\":{},\"timestamp\":\"{timestamp}\",\"cwd\":{}}}",
        serde_json::json!(s.id),
        serde_json::json!(cwd)
    );
    let parent = path.parent().unwrap_or(dir);
    std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    std::fs::write(&path, format!("{header}\n")).map_err(|e| format!("{}: {e}", path.display()))
}

/// Run `sh -c CMD` (in the caller's working directory) with the request on stdin, `DIR/bin`
/// first on `PATH`, the request's env and a marker; read normalized JSONL from stdout. Killed after `timeout`; survivors carrying
/// the marker are killed and reported.
pub fn run_impl(
    cmd: &str,
    req: &RequestDoc,
    dir: &Path,
    timeout: Duration,
    max_output: u64,
) -> ImplOutput {
    use std::os::unix::process::CommandExt as _;
    let marker = format!("{}-{:016x}", std::process::id(), fastrand::u64(..));
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut paths = vec![dir.join("bin")];
    paths.extend(std::env::split_paths(&path));
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(cmd)
        .env("PATH", std::env::join_paths(paths).unwrap_or(path))
        .env(MARKER_VAR, &marker)
        .envs(&req.env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut out = ImplOutput::default();
    let mut child = match command.spawn() {
        Ok(c) => c,
        Err(e) => {
            out.problems
                .push(format!("cannot start `sh -c {cmd}`: {e}"));
            return out;
        }
    };
    let body = serde_json::to_vec(req).expect("a request serializes");
    let mut stdin = child.stdin.take().expect("piped");
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&body);
    });
    let pgid = nix::unistd::Pid::from_raw(child.id() as i32);
    let kill_group = move || {
        let _ = nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGKILL);
    };
    let stdout = child.stdout.take().expect("piped");
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let err_done = done_tx.clone();
    std::thread::spawn(move || {
        let _ = done_tx.send(Collected::Stdout(crate::collect::read_stdout(
            stdout, max_output, kill_group,
        )));
    });
    let stderr = child.stderr.take().expect("piped");
    std::thread::spawn(move || {
        let _ = err_done.send(Collected::Stderr(crate::collect::stderr_tail(stderr)));
    });
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if Instant::now() > deadline => {
                out.problems.push(format!(
                    "no end after {} s: the implementation was killed",
                    timeout.as_secs()
                ));
                kill_group();
                let _ = child.wait();
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => {
                out.problems
                    .push(format!("waiting for the implementation: {e}"));
                break None;
            }
        }
    };
    // Anything still alive with the marker (a pi, a tool process) is a survivor.
    let settle = Instant::now() + Duration::from_secs(2);
    while !procs::pids_with_env(MARKER_VAR, &marker).is_empty() && Instant::now() < settle {
        std::thread::sleep(Duration::from_millis(10));
    }
    let survivors = procs::kill_marked(MARKER_VAR, &marker);
    if !survivors.is_empty() {
        let names: Vec<String> = survivors
            .iter()
            .map(|p| format!("{} {}", p.pid, p.command()))
            .collect();
        out.problems
            .push(format!("processes left behind: {}", names.join("; ")));
    }
    let _ = writer.join();
    // The pipes end when every process holding them has: a process outside the group and
    // without the marker may still hold one. Wait a moment, then go on without it.
    let (mut stdout, mut stderr) = (None, None);
    let until = Instant::now() + Duration::from_secs(2);
    while stdout.is_none() || stderr.is_none() {
        let left = until.saturating_duration_since(Instant::now());
        match done_rx.recv_timeout(left) {
            Ok(Collected::Stdout(s)) => stdout = Some(s),
            Ok(Collected::Stderr(e)) => stderr = Some(e),
            Err(_) => {
                kill_group();
                out.problems.push(
                    "stdout or stderr still open 2 s after the implementation ended (a process outside its group holds it); what came until then is judged".into(),
                );
                break;
            }
        }
    }
    out.stderr = String::from_utf8_lossy(&stderr.unwrap_or_default()).into_owned();
    if let Some(s) = status {
        if !s.success() {
            out.problems
                .push(format!("the implementation exited with {s}"));
        }
    }
    // A budget that ran out first (it explains the exit), then the end, then bad lines.
    let collected = stdout.unwrap_or_default();
    if let Some(over) = collected.over_budget {
        out.problems.insert(0, over);
    }
    out.problems.extend(collected.problems.into_lines());
    out.messages = collected.messages;
    out
}

/// The capabilities an implementation claims: `CMD --capabilities` prints
/// `{"protocol":1,"name":"...","capabilities":[...]}`.
pub fn handshake(cmd: &str) -> Result<(String, Vec<String>), String> {
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!("{cmd} --capabilities"))
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run `{cmd} --capabilities`: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "`{cmd} --capabilities` exited with {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    #[derive(Deserialize)]
    struct Hello {
        protocol: u32,
        #[serde(default)]
        name: Option<String>,
        capabilities: Vec<String>,
    }
    let hello: Hello = serde_json::from_slice(&out.stdout).map_err(|e| {
        format!(
            "`{cmd} --capabilities` did not print {{\"protocol\":1,\"capabilities\":[...]}}: {e}: {}",
            String::from_utf8_lossy(&out.stdout).trim()
        )
    })?;
    if hello.protocol != PROTOCOL_VERSION {
        return Err(format!(
            "`{cmd} --capabilities` speaks protocol {}, this runner {PROTOCOL_VERSION}",
            hello.protocol
        ));
    }
    Ok((
        hello.name.unwrap_or_else(|| cmd.to_string()),
        hello.capabilities,
    ))
}

/// Judge one case from what the implementation produced.
pub fn judge(expected: &Expected, out: &ImplOutput) -> Verdict {
    // The report keeps a bounded part of a stream that differs everywhere.
    let (mut diffs, total) = compare_each(
        &expected.messages,
        out.messages.len(),
        |i| serde_json::from_str(out.messages[i].get()).expect("read as JSON before"),
        MAX_DIFFS,
    );
    for d in &mut diffs {
        for v in [&mut d.expected, &mut d.actual].into_iter().flatten() {
            shorten_value(v);
        }
    }
    if diffs.is_empty() && out.problems.is_empty() {
        Verdict::Passed
    } else {
        let unlisted_diffs = total - diffs.len();
        Verdict::Failed {
            problems: out.problems.clone(),
            diffs,
            unlisted_diffs,
        }
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Field differences a verdict keeps (the report prints the first 12).
pub const MAX_DIFFS: usize = 100;
/// A value in a kept difference larger than this (as JSON) becomes a string saying so.
const MAX_DIFF_VALUE: usize = 4096;

fn shorten_value(v: &mut Value) {
    let text = v.to_string();
    if text.len() > MAX_DIFF_VALUE {
        let mut end = 200;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        *v = Value::String(format!(
            "{}... ({} bytes of JSON)",
            &text[..end],
            text.len()
        ));
    }
}

/// The cases a claim skips: capabilities needed but not claimed.
pub fn missing(needed: &[String], claimed: &[String]) -> Vec<String> {
    needed
        .iter()
        .filter(|c| !claimed.contains(c))
        .cloned()
        .collect()
}

fn shown(v: &Option<Value>) -> String {
    match v {
        None => "(absent)".into(),
        Some(v) => {
            let s = v.to_string();
            if s.len() > 120 {
                let mut end = 117;
                while !s.is_char_boundary(end) {
                    end -= 1;
                }
                format!("{}...", &s[..end])
            } else {
                s
            }
        }
    }
}

/// The report: one line per case (with diffs on failure), a summary table per capability,
/// and the command that reproduces one failing case.
pub fn report(name: &str, reproduce_base: &str, results: &[CaseResult]) -> String {
    let mut s: String = results.iter().map(case_text).collect();
    s.push_str(&summary(name, reproduce_base, results));
    s
}

/// One case's lines of the report (printed as soon as the case finishes).
pub fn case_text(r: &CaseResult) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    {
        match &r.verdict {
            Verdict::Passed => writeln!(s, "PASS  {} ({} ms)", r.case, r.ms).unwrap(),
            Verdict::Skipped { missing } => {
                writeln!(s, "SKIP  {} (not claimed: {})", r.case, missing.join(", ")).unwrap()
            }
            Verdict::Failed {
                problems,
                diffs,
                unlisted_diffs,
            } => {
                writeln!(s, "FAIL  {} ({} ms)", r.case, r.ms).unwrap();
                for p in problems {
                    writeln!(s, "      {p}").unwrap();
                }
                for d in diffs.iter().take(12) {
                    writeln!(
                        s,
                        "      {}: expected {}, got {}",
                        d.path,
                        shown(&d.expected),
                        shown(&d.actual)
                    )
                    .unwrap();
                }
                let more = diffs.len() + unlisted_diffs - diffs.len().min(12);
                if more > 0 {
                    writeln!(s, "      ... {more} more differences").unwrap();
                }
            }
        }
    }
    s
}

/// The end of the report: the table per capability and the reproduce line.
pub fn summary(name: &str, reproduce_base: &str, results: &[CaseResult]) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let count = |f: &dyn Fn(&CaseResult) -> bool| results.iter().filter(|r| f(r)).count();
    let passed = |r: &CaseResult| matches!(r.verdict, Verdict::Passed);
    let failed = |r: &CaseResult| matches!(r.verdict, Verdict::Failed { .. });
    let skipped = |r: &CaseResult| matches!(r.verdict, Verdict::Skipped { .. });
    writeln!(s).unwrap();
    writeln!(s, "implementation: {name}").unwrap();
    writeln!(s, "| capability | cases | passed | failed | skipped |").unwrap();
    writeln!(s, "|---|---:|---:|---:|---:|").unwrap();
    for cap in CAPABILITIES {
        let has = |r: &CaseResult| r.capabilities.iter().any(|c| c == cap);
        let n = count(&|r| has(r));
        if n == 0 {
            continue;
        }
        writeln!(
            s,
            "| {cap} | {n} | {} | {} | {} |",
            count(&|r| has(r) && passed(r)),
            count(&|r| has(r) && failed(r)),
            count(&|r| has(r) && skipped(r))
        )
        .unwrap();
    }
    writeln!(
        s,
        "| **all** | {} | {} | {} | {} |",
        results.len(),
        count(&passed),
        count(&failed),
        count(&skipped)
    )
    .unwrap();
    if let Some(r) = results.iter().find(|r| failed(r)) {
        writeln!(
            s,
            "\nreproduce one failure:\n  {reproduce_base} --case {}",
            r.case
        )
        .unwrap();
    } else if let Some(r) = results.first() {
        writeln!(
            s,
            "\nreproduce one case:\n  {reproduce_base} --case {}",
            r.case
        )
        .unwrap();
    }
    s
}

/// Options of `pi-harness conform`.
#[derive(Debug, Clone)]
pub struct ConformOptions {
    /// The implementation's command; `None`: this binary's `provider-run`.
    pub implementation: Option<String>,
    pub cases: Vec<String>,
    /// The cassettes; `None`: the bundled suite ([`bundled_dirs`]).
    pub cassettes: Option<PathBuf>,
    /// The expected streams; `None`: the bundled ones with the bundled cassettes, else
    /// derived by running the reference provider on each case (and said so).
    pub expected: Option<PathBuf>,
    pub json: bool,
    pub export: Option<PathBuf>,
    pub fake_pi: Option<PathBuf>,
    pub timeout: Duration,
    /// Stdout bytes a case may produce ([`crate::collect::DEFAULT_MAX_OUTPUT_BYTES`]).
    pub max_output: u64,
}

/// The bundled suite's (cassettes, expected) directories: embedded in this binary and
/// unpacked once into a cache directory ([`crate::bundle`]); never the source tree.
pub fn bundled_dirs() -> Result<(PathBuf, PathBuf), String> {
    crate::bundle::dirs()
}

fn quote(s: &str) -> String {
    if s.chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-=:,".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// Find fake-pi: `--fake-pi`, `$PI_HARNESS_FAKE_PI`, beside this executable, else build it
/// (see [`find_or_build`]).
pub fn find_fake_pi(explicit: Option<&Path>) -> Result<PathBuf, String> {
    if let Some(p) = explicit {
        return Ok(p.to_path_buf());
    }
    if let Some(p) = std::env::var_os("PI_HARNESS_FAKE_PI") {
        return Ok(PathBuf::from(p));
    }
    find_or_build("fake-pi")
}

/// A binary of this workspace (`fake-pi`, `pi-supervisor`) beside this executable (or one
/// directory up), else built with the cargo that runs us (`$CARGO`, set by `cargo run`, which
/// builds only the binary it runs): `cargo build -p fake-pi -p pi-provider -p pi-harness --bins`, with
/// `--release` for a release pi-harness. Without cargo, an error names the command to run.
pub fn find_or_build(name: &str) -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| format!("current executable: {e}"))?;
    let dirs: Vec<PathBuf> = exe
        .ancestors()
        .skip(1)
        .take(2)
        .map(Path::to_path_buf)
        .collect();
    if let Some(found) = dirs.iter().map(|d| d.join(name)).find(|p| p.is_file()) {
        return Ok(found);
    }
    let release = dirs.first().is_some_and(|d| d.ends_with("release"));
    let flag = if release { " --release" } else { "" };
    let hint = format!(
        "{name} not found beside {}: build it with `cargo build{flag} -p fake-pi -p pi-provider -p pi-harness --bins`",
        exe.display()
    );
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml");
    let Some(cargo) = std::env::var_os("CARGO") else {
        return Err(hint);
    };
    if !manifest.is_file() {
        return Err(hint);
    }
    eprintln!("conform: building fake-pi and pi-supervisor (once)...");
    let mut cmd = Command::new(cargo);
    cmd.args([
        "build",
        "-q",
        "-p",
        "fake-pi",
        "-p",
        "pi-provider",
        "-p",
        "pi-harness",
        "--bins",
        "--manifest-path",
    ])
    .arg(&manifest);
    if release {
        cmd.arg("--release");
    }
    let status = cmd.status().map_err(|e| format!("{hint} ({e})"))?;
    let bin = dirs.first().map(|d| d.join(name)).unwrap_or_default();
    if status.success() && bin.is_file() {
        Ok(bin)
    } else {
        Err(hint)
    }
}

/// Load an expected stream file (`CASE.json.gz` or `CASE.json`), through the one reader and
/// its size limits.
pub fn load_expected(dir: &Path, case: &str) -> Result<Expected, String> {
    let gz = dir.join(format!("{case}.json.gz"));
    let path = if gz.is_file() {
        gz
    } else {
        dir.join(format!("{case}.json"))
    };
    let mut input = pi_cassette::input::open(&path, &pi_cassette::Limits::from_env()).map_err(
        |e| match e {
            pi_cassette::CassetteError::Io { source, .. } => format!(
                "{}: {source} (export the expected streams with `pi-harness conform --export {}`)",
                path.display(),
                dir.display()
            ),
            e => e.to_string(),
        },
    )?;
    let mut text = String::new();
    input
        .read_to_string(&mut text)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Write an expected stream file (pretty JSON, one message per line inside `messages`).
pub fn expected_text(e: &Expected) -> String {
    let mut s = serde_json::to_string_pretty(e).expect("serializes");
    s.push('\n');
    s
}

/// Files over this size are written gzip-compressed (`<case>.json.gz`).
pub const GZIP_OVER: usize = 1 << 20;

/// Write an expected file under `dir`: `<case>.json`, or `<case>.json.gz` when large
/// (the other form is removed). Returns the path written.
pub fn write_expected(dir: &Path, e: &Expected) -> Result<PathBuf, String> {
    let text = expected_text(e);
    let plain = dir.join(format!("{}.json", e.case));
    let gz = dir.join(format!("{}.json.gz", e.case));
    if let Some(p) = plain.parent() {
        std::fs::create_dir_all(p).map_err(|e| format!("{}: {e}", p.display()))?;
    }
    let (path, other) = if text.len() > GZIP_OVER {
        (gz, plain)
    } else {
        (plain, gz)
    };
    let _ = std::fs::remove_file(&other);
    let bytes = if path.extension().is_some_and(|x| x == "gz") {
        pi_cassette::output::gzip(text.as_bytes())
            .map_err(|e| format!("{}: {e}", path.display()))?
    } else {
        text.into_bytes()
    };
    pi_cassette::output::write(&path, &bytes, &[]).map_err(|e| e.to_string())?;
    Ok(path)
}

/// Build the expected record of a case from the reference output.
pub fn expected_of(case: &Case, root: &Path, messages: Vec<Value>) -> Result<Expected, String> {
    let c = Cassette::load(&case.cassette).map_err(|e| e.to_string())?;
    let capabilities = capabilities_of(case, &c, &messages);
    Ok(Expected {
        case: case.name.clone(),
        cassette: case
            .cassette
            .strip_prefix(root)
            .unwrap_or(&case.cassette)
            .to_string_lossy()
            .into_owned(),
        capabilities,
        request: case.request.clone(),
        messages,
    })
}

/// `pi-harness conform`: returns true when nothing failed.
pub fn conform(opts: &ConformOptions) -> Result<bool, String> {
    let fake_pi = find_fake_pi(opts.fake_pi.as_deref())?;
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let reference = format!("{} provider-run", quote(&exe.to_string_lossy()));
    let cmd = opts
        .implementation
        .clone()
        .unwrap_or_else(|| reference.clone());
    let (cassettes, expected_dir) = match (&opts.cassettes, &opts.expected) {
        (Some(c), e) => (c.clone(), e.clone()),
        (None, e) => {
            let (c, bundled) = bundled_dirs()?;
            (c, Some(e.clone().unwrap_or(bundled)))
        }
    };
    let mut cases = discover(&cassettes)?;
    if cases.is_empty() {
        return Err(format!(
            "{}: no *.cassette.jsonl file below it",
            cassettes.display()
        ));
    }
    if !opts.cases.is_empty() {
        for want in &opts.cases {
            if !cases.iter().any(|c| &c.name == want) {
                return Err(format!(
                    "no case {want:?} in {} (cases are cassette paths without .cassette.jsonl, e.g. recorded/text_only.pi87)",
                    cassettes.display()
                ));
            }
        }
        cases.retain(|c| opts.cases.contains(&c.name));
    }
    if let Some(dir) = &opts.export {
        for case in &cases {
            let e = run_for_expected(&cmd, case, &cassettes, &fake_pi, opts)?;
            let path = write_expected(dir, &e)?;
            eprintln!("exported {}", path.display());
        }
        return Ok(true);
    }
    let (name, claimed) = match &opts.implementation {
        None => (
            "pi-harness provider-run (reference)".to_string(),
            CAPABILITIES.iter().map(|s| s.to_string()).collect(),
        ),
        Some(c) => handshake(c)?,
    };
    // Where the human report goes: stdout, or stderr when stdout carries --json lines.
    let say = |text: &str| {
        let _ = if opts.json {
            std::io::stderr().lock().write_all(text.as_bytes())
        } else {
            std::io::stdout().lock().write_all(text.as_bytes())
        };
    };
    if expected_dir.is_none() {
        say(&format!(
            "expected streams: derived from the reference provider ({} provider-run) on each case, since --expected was not given\n",
            exe.file_name().map_or("pi-harness".into(), |n| n.to_string_lossy())
        ));
    }
    let mut results = Vec::new();
    for case in &cases {
        let start = Instant::now();
        let expected = match &expected_dir {
            Some(dir) => load_expected(dir, &case.name)?,
            None => run_for_expected(&reference, case, &cassettes, &fake_pi, opts)?,
        };
        let miss = missing(&expected.capabilities, &claimed);
        let verdict = if !miss.is_empty() {
            Verdict::Skipped { missing: miss }
        } else {
            let tmp = tempdir(&case.name)?;
            let req = prepare(case, tmp.path(), &fake_pi)?;
            let out = run_impl(&cmd, &req, tmp.path(), opts.timeout, opts.max_output);
            judge(&expected, &out)
        };
        let r = CaseResult {
            case: case.name.clone(),
            capabilities: expected.capabilities.clone(),
            verdict,
            ms: start.elapsed().as_millis() as u64,
        };
        if opts.json {
            // A closed stdout drops the line; the verdict is still the exit status.
            let _ = writeln!(
                std::io::stdout().lock(),
                "{}",
                serde_json::to_string(&r).expect("serializes")
            );
        }
        say(&case_text(&r));
        results.push(r);
    }
    let text = summary(&name, &reproduce_command(opts), &results);
    say(&text);
    Ok(!results
        .iter()
        .any(|r| matches!(r.verdict, Verdict::Failed { .. })))
}

/// Run `cmd` on one case and turn its stream into an expected record.
fn run_for_expected(
    cmd: &str,
    case: &Case,
    cassettes: &Path,
    fake_pi: &Path,
    opts: &ConformOptions,
) -> Result<Expected, String> {
    let tmp = tempdir(&case.name)?;
    let req = prepare(case, tmp.path(), fake_pi)?;
    let out = run_impl(cmd, &req, tmp.path(), opts.timeout, opts.max_output);
    if !out.problems.is_empty() {
        return Err(format!("{}: {}", case.name, out.problems.join("; ")));
    }
    let messages = out
        .messages
        .iter()
        .map(|m| serde_json::from_str(m.get()).expect("read as JSON before"))
        .collect();
    expected_of(case, cassettes, messages)
}

/// `pi-harness conform` with every flag the user gave, but `--case` and `--json`.
pub fn reproduce_command(opts: &ConformOptions) -> String {
    let mut s = "pi-harness conform".to_string();
    if let Some(c) = &opts.implementation {
        s.push_str(&format!(" --impl {}", quote(c)));
    }
    for (flag, path) in [
        ("--cassettes", &opts.cassettes),
        ("--expected", &opts.expected),
        ("--fake-pi", &opts.fake_pi),
    ] {
        if let Some(p) = path {
            let shown = std::path::absolute(p).unwrap_or_else(|_| p.clone());
            s.push_str(&format!(" {flag} {}", quote(&shown.to_string_lossy())));
        }
    }
    if opts.max_output != crate::collect::DEFAULT_MAX_OUTPUT_BYTES {
        s.push_str(&format!(" --max-output {}", opts.max_output));
    }
    if opts.timeout != Duration::from_secs(DEFAULT_TIMEOUT_SECS) {
        s.push_str(&format!(" --timeout {}", opts.timeout.as_secs()));
    }
    s
}

/// Seconds a case may take by default (`--timeout`).
pub const DEFAULT_TIMEOUT_SECS: u64 = 30;

fn tempdir(case: &str) -> Result<tempfile::TempDir, String> {
    tempfile::Builder::new()
        .prefix(&format!("pih-conform-{}-", case.replace('/', "_")))
        .tempdir()
        .map_err(|e| format!("temp dir: {e}"))
}

/// `pi-harness provider-run [FILE]`: read a request document (file or stdin), run the
/// reference provider, print normalized JSONL. `--capabilities` prints the handshake.
pub fn provider_run_main(file: Option<&Path>) -> Result<(), String> {
    let text = match file {
        Some(p) => std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?,
        None => {
            let mut s = String::new();
            std::io::stdin()
                .read_to_string(&mut s)
                .map_err(|e| format!("stdin: {e}"))?;
            s
        }
    };
    let doc: RequestDoc = serde_json::from_str(&text)
        .map_err(|e| format!("request document: {e} (see conformance/README.md)"))?;
    if doc.version != REQUEST_VERSION {
        return Err(format!(
            "request document version {}: this provider-run reads version {REQUEST_VERSION}",
            doc.version
        ));
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    rt.block_on(provider_run(
        &doc,
        ProviderOptions::default(),
        std::io::stdout().lock(),
    ))
    .map_err(|e| format!("stdout: {e}"))?;
    Ok(())
}

/// The handshake answer of the reference provider.
pub fn reference_capabilities() -> String {
    serde_json::json!({
        "protocol": PROTOCOL_VERSION,
        "name": "pi-harness provider-run (reference)",
        "capabilities": CAPABILITIES,
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ignored_fields_are_not_compared_but_others_are() {
        let e = vec![
            json!({"type":"terminal.failed","reason":"process_exit","message":"a","exit":{"code":1},
            "invalid_lines":[{"line":3,"bytes":4,"problem":"x","excerpt":"y"}]}),
        ];
        let a = vec![
            json!({"type":"terminal.failed","reason":"process_exit","message":"b","exit":{"code":1},
            "invalid_lines":[{"line":3,"bytes":4,"problem":"z","excerpt":"w"}]}),
        ];
        assert!(compare(&e, &a).is_empty());
        let a2 = vec![
            json!({"type":"terminal.failed","reason":"process_exit","message":"b","exit":{"code":2}}),
        ];
        let d = compare(&e, &a2);
        assert_eq!(d[0].path, "[0].exit.code");
        assert_eq!(d[0].expected, Some(json!(1)));
        assert_eq!(d[0].actual, Some(json!(2)));
        assert_eq!(d[1].path, "[0].invalid_lines");
        assert_eq!(d[1].actual, None);
    }

    #[test]
    fn numbers_compare_as_numbers() {
        let e = vec![json!({"type":"usage","cost_usd":0.0,"input_tokens":1})];
        assert!(compare(&e, &[json!({"type":"usage","cost_usd":0,"input_tokens":1})]).is_empty());
        assert_eq!(
            compare(
                &e,
                &[json!({"type":"usage","cost_usd":0.5,"input_tokens":1})]
            )
            .len(),
            1
        );
    }

    #[test]
    fn missing_messages_are_reported_by_index() {
        let e = vec![
            json!({"type":"assistant","text":"a"}),
            json!({"type":"terminal.cancelled"}),
        ];
        let a = vec![json!({"type":"assistant","text":"a"})];
        let d = compare(&e, &a);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].path, "[1]");
        assert_eq!(d[0].actual, None);
    }

    #[test]
    fn case_names_keep_the_directory() {
        let root = Path::new("/c");
        assert_eq!(
            case_name(
                root,
                Path::new("/c/recorded/long_answer.pi73.cassette.jsonl.gz")
            ),
            "recorded/long_answer.pi73"
        );
        assert_eq!(
            case_name(root, Path::new("/c/auth_401.pi73.cassette.jsonl")),
            "auth_401.pi73"
        );
    }

    #[test]
    fn the_request_comes_from_the_header() {
        let text = concat!(
            r#"{"format":"pi-cassette","version":1,"pi":{"version":"0.73.1","dialect":"snapshot+delta"},"#,
            r#""scenario":{"name":"s_x","description":"d"},"expect":{"flags":{"mode":"json","model":"m","#,
            r#""provider":"p","session":true,"thinking":"high","tools":"read,write"},"prompt":"go","#,
            r#""argv_messages":["go"],"env":["OPENAI_API_KEY"]},"origin":{"kind":"hand-made","timing":"synthetic"}}"#,
            "\n",
            r#"{"dt_ms":0,"hang":true}"#,
            "\n"
        );
        let path = Path::new("/c/faults/s_x.pi73.cassette.jsonl");
        let c = Cassette::parse(path, text.as_bytes()).unwrap();
        let case = case_of(Path::new("/c"), path, &c);
        let r = &case.request;
        assert_eq!(case.name, "faults/s_x.pi73");
        assert_eq!((r.prompt.as_str(), r.pi.version.as_str()), ("go", "0.73.1"));
        assert_eq!(
            (r.provider.as_deref(), r.model.as_deref()),
            (Some("p"), Some("m"))
        );
        assert_eq!(r.thinking.as_deref(), Some("high"));
        // Tools by meaning: the effective set, when it is not pi's default.
        assert_eq!(r.tools, Some(vec!["read".to_string(), "write".to_string()]));
        assert!(r.exclude_tools.is_empty());
        let s = r.session.as_ref().expect("a session");
        assert_eq!(
            (s.id.as_str(), s.dir.as_deref(), s.resume),
            ("s-x", Some("<DIR>/sessions"), true)
        );
        assert_eq!(r.env["OPENAI_API_KEY"], "conformance-openai_api_key");
        assert_eq!(r.cancel_after_idle_ms, Some(CANCEL_IDLE_MS));
        let filled = instantiate(r, Path::new("/t/case.cassette.jsonl"), Path::new("/t"));
        assert_eq!(filled.env["FAKE_PI_CASSETTE"], "/t/case.cassette.jsonl");
        assert_eq!(filled.cwd.as_deref(), Some("/t"));
        assert_eq!(filled.session.unwrap().dir.as_deref(), Some("/t/sessions"));
    }

    #[test]
    fn unclaimed_capabilities_skip() {
        let needed = vec!["text".to_string(), "thinking".to_string()];
        assert_eq!(
            missing(&needed, &["text".into()]),
            vec!["thinking".to_string()]
        );
        assert!(missing(&needed, &["text".into(), "thinking".into()]).is_empty());
    }
}
