//! fake-pi: behaves like pi on the command line and replays a cassette.
//!
//! Run as `fake-pi` or as `pi`. Which cassette: see [`source`] (`FAKE_PI_CASSETTE`, a
//! sequence, or `fake-pi.conf` beside the program). argv is read with the grammar of the
//! pi version in the cassette header; the session is planned as pi plans it ([`session`]);
//! stdin is read to EOF when it is not a terminal and joined with the first message as pi
//! does; the call is compared with the recording by meaning (`pi_cassette::matching`);
//! then the records are replayed in time (`FAKE_PI_SPEED`), with realistic values for the
//! recorder's placeholders ([`values`]) and the session file written as pi writes it.
//! Exit codes of fake-pi's own: see [`EXIT_MISUSE`] and the following constants and
//! `fake-pi/README.md`.

mod agent;
mod args;
mod child;
mod claude;
mod client;
mod replay;
mod session;
mod signals;
mod source;
mod values;

use std::ffi::OsString;
use std::io::{BufRead, IsTerminal, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

use pi_cassette::matching::{self, Call};
use pi_cassette::{ActionRef, CassetteError, CassetteReader};
use pi_grammar::{self as pi_cli, AppMode, Grammar, KNOWN_VERSIONS};

/// fake-pi cannot do what was asked (bad `FAKE_PI_SPEED`, a pi package command, a child
/// that cannot be started, an agent dir it cannot read).
pub const EXIT_MISUSE: i32 = 96;
/// No cassette set, or it cannot be read.
pub const EXIT_NO_CASSETTE: i32 = 97;
/// The cassette is not valid (message names file and line).
pub const EXIT_INVALID_CASSETTE: i32 = 98;
/// The call does not match the cassette (or starts pi more often than a sequence has runs).
pub const EXIT_EXPECTATION: i32 = 99;

fn main() {
    if let Ok(spec) = std::env::var(child::SPEC_ENV) {
        child::child_main(&spec);
    }
    std::process::exit(run());
}

fn fail(code: i32, message: String) -> i32 {
    eprintln!("fake-pi: {message}");
    code
}

fn env(k: &str) -> Option<String> {
    std::env::var_os(k).map(|v| v.to_string_lossy().into_owned())
}

/// The cassette for this start: a single file, or the next of a sequence.
fn choose(settings: &source::Settings) -> Result<PathBuf, (i32, String)> {
    let Some(path) = settings.cassette.clone() else {
        return Err((
            EXIT_NO_CASSETTE,
            format!(
                "no cassette: set FAKE_PI_CASSETTE to a .cassette.jsonl(.gz) file, a directory or a .sequence file, or put a {} beside this program",
                source::CONF
            ),
        ));
    };
    let Some(list) = source::sequence(&path).map_err(|e| (EXIT_NO_CASSETTE, e))? else {
        return Ok(path);
    };
    let state = settings
        .state
        .clone()
        .unwrap_or_else(|| source::default_state(&path));
    let n = source::next_start(&state).map_err(|e| (EXIT_MISUSE, e))?;
    match list.get(n) {
        Some(c) => Ok(c.clone()),
        None => {
            let names: Vec<String> = list
                .iter()
                .map(|p| {
                    p.file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default()
                })
                .collect();
            Err((
                EXIT_EXPECTATION,
                format!(
                    "sequence {}: this is start {} of pi, but only {} run(s) are recorded ({}); delete {} to start over",
                    path.display(),
                    n + 1,
                    list.len(),
                    names.join(", "),
                    state.display()
                ),
            ))
        }
    }
}

fn run() -> i32 {
    // Signals keep their default dispositions until the cassette is loaded (SIGTERM ends a
    // load that takes long); then the cassette's `process` section decides.
    let mut args = std::env::args_os();
    let argv0 = args
        .next()
        .map(|a| a.to_string_lossy().into_owned())
        .unwrap_or_default();
    let argv: Vec<String> = args
        .map(|a: OsString| a.to_string_lossy().into_owned())
        .collect();
    let settings = match source::settings(&env, &argv0) {
        Ok(s) => s,
        Err(e) => return fail(EXIT_NO_CASSETTE, e),
    };
    let path = match choose(&settings) {
        Ok(p) => p,
        Err((code, e)) => return fail(code, e),
    };
    match std::fs::metadata(&path) {
        Ok(m) if m.is_file() => {}
        Ok(m) => {
            let kind = if m.is_dir() {
                "a directory"
            } else if m.file_type().is_fifo() {
                "a FIFO"
            } else if m.file_type().is_char_device() || m.file_type().is_block_device() {
                "a device"
            } else {
                "not a regular file"
            };
            return fail(
                EXIT_NO_CASSETTE,
                format!(
                    "{}: cannot read cassette: {kind}, not a cassette file",
                    path.display()
                ),
            );
        }
        Err(_) => {} // the loader names the error
    }
    // The cassette is streamed, never held, and read once: the header now; then, unless the
    // command line is answered from argv alone (`--version`, `--help`, pi's argument
    // errors), the records up to the recording's `session` line (its id plans the session),
    // and the replay reads the file again from its start, checking each record through the
    // one reader as it reaches it. A broken record stops the replay at that line (exit 98,
    // file:line); `pi-harness cassette lint` checks a whole cassette up front.
    let load_error = |e: CassetteError| match e {
        e @ CassetteError::Io { .. } => fail(EXIT_NO_CASSETTE, e.to_string()),
        e @ CassetteError::Invalid { .. } => {
            fail(EXIT_INVALID_CASSETTE, format!("invalid cassette: {e}"))
        }
        e => fail(EXIT_NO_CASSETTE, e.to_string()),
    };
    let file = match std::fs::File::open(&path) {
        Ok(f) => f,
        Err(source) => {
            return load_error(CassetteError::Io {
                path: path.clone(),
                source,
            })
        }
    };
    let first = match CassetteReader::from_read(&path, &file) {
        Ok(r) => r,
        Err(e) => return load_error(e),
    };
    let header = first.header().clone();
    if header.is_claude() {
        drop(first);
        return claude::run(&header, &argv, &path, &file, settings.speed.as_deref());
    }
    let stdin_tty = std::io::stdin().is_terminal();
    let stdout_tty = std::io::stdout().is_terminal();
    let grammar = Grammar::for_version(&header.pi.version);
    let from_argv_alone = grammar.as_ref().is_some_and(|g| {
        matches!(
            args::before_stdin(g, &argv, stdin_tty, stdout_tty),
            args::Next::Finish(_)
        )
    });
    let mut recorded = RecordedSession { id: None };
    if !from_argv_alone {
        match recorded_session(first) {
            Ok(r) => recorded = r,
            Err(e) => return load_error(e),
        }
    }
    let invalid = |what: String| {
        fail(
            EXIT_INVALID_CASSETTE,
            format!("invalid cassette: {}:1: {what}", path.display()),
        )
    };
    let header = &header;
    let Some(grammar) = grammar else {
        return invalid(format!(
            "header field `pi.version`: fake-pi knows the command line of pi {}, not {:?}",
            KNOWN_VERSIONS.join(", "),
            header.pi.version
        ));
    };
    if let Err(what) = matching::validate(&header.expect, &grammar) {
        return invalid(what);
    }
    let speed = match replay::Speed::parse(settings.speed.as_deref()) {
        Ok(s) => s,
        Err(e) => return fail(EXIT_MISUSE, e),
    };
    if let Err(e) = signals::block() {
        return fail(EXIT_MISUSE, format!("cannot block signals: {e}"));
    }
    if let Some(cmd) = grammar.command(&argv) {
        return fail(
            EXIT_MISUSE,
            format!("`pi {cmd}` (a package, auth or MCP command) is not imitated; fake-pi only replays agent runs"),
        );
    }
    if let Err(e) = signals::start(header.process.clone()) {
        return fail(EXIT_MISUSE, format!("cannot start the signal thread: {e}"));
    }

    let (parsed, mode) = match args::before_stdin(&grammar, &argv, stdin_tty, stdout_tty) {
        args::Next::Finish(f) => {
            // A closed stdout (`fake-pi --help | head -1`) is a quiet 141, as in replay.
            let mut out = std::io::stdout().lock();
            if out
                .write_all(f.stdout.as_bytes())
                .and_then(|()| out.flush())
                .is_err()
            {
                return replay::EXIT_STDOUT_CLOSED;
            }
            let _ = std::io::stderr().write_all(f.stderr.as_bytes());
            return f.code;
        }
        args::Next::Run {
            parsed,
            mode,
            warnings,
        } => {
            eprint!("{warnings}");
            (parsed, mode)
        }
    };
    if parsed.has("--resume") {
        return fail(
            EXIT_MISUSE,
            "`--resume` opens pi's interactive session picker; it is not imitated (use --session ID or --continue)".into(),
        );
    }
    let agent_path = agent::locate(&env);
    let agent = match agent::load(&agent_path) {
        Ok(a) => a,
        Err(e) => return fail(EXIT_MISUSE, format!("agent dir: {e}")),
    };
    let cwd = std::env::current_dir()
        .map(|d| d.to_string_lossy().into_owned())
        .unwrap_or_else(|_| ".".into());
    // pi plans its session before it reads stdin; a session of another project makes it
    // ask on stderr and read the answer from stdin.
    let ctx = session::Ctx {
        grammar: &grammar,
        parsed: &parsed,
        cwd: &cwd,
        agent: &agent,
        env: &env,
    };
    let mut answer = || {
        let mut line = String::new();
        let _ = std::io::stdin().lock().read_line(&mut line);
        line
    };
    let plan = match session::plan(&ctx, &mut answer) {
        Ok((plan, warning)) => {
            eprint!("{warning}");
            plan
        }
        Err(stop) => {
            eprint!("{}", stop.stderr);
            return stop.code;
        }
    };
    // pi reads piped stdin to EOF (not in RPC mode, where stdin carries commands).
    let stdin = if mode != AppMode::Rpc && !stdin_tty {
        let mut raw = Vec::new();
        if let Err(e) = std::io::stdin().read_to_end(&mut raw) {
            return fail(EXIT_MISUSE, format!("cannot read stdin: {e}"));
        }
        pi_cli::stdin_content(&raw)
    } else {
        None
    };
    if let Some(e) = grammar.runtime_errors(&parsed) {
        eprint!("{}", e.stderr);
        return e.exit_code;
    }
    let agent_dir = agent.path.display().to_string();
    let call = Call {
        argv: &argv,
        parsed: &parsed,
        mode,
        stdin: stdin.as_deref(),
        settings: &agent.settings,
        agent_dir: &agent_dir,
        session: plan.session_use(),
        env: &env,
    };
    let mismatches = matching::check(&header.expect, &grammar, &call);
    if !mismatches.is_empty() {
        for m in &mismatches {
            eprintln!(
                "fake-pi: expectation mismatch: {m} (cassette {})",
                path.display()
            );
        }
        return EXIT_EXPECTATION;
    }
    // A two-way cassette holds a client's side too: only a client speaking that protocol
    // can replay it.
    let client = match &header.mode {
        None => None,
        Some(m) if mode != AppMode::Rpc => {
            eprintln!(
                "fake-pi: expectation mismatch: the cassette holds a `--mode {m}` session (its header's `mode`); this call runs pi in another mode (cassette {})",
                path.display()
            );
            return EXIT_EXPECTATION;
        }
        Some(_) => {
            let wait = match rpc_wait() {
                Ok(w) => w,
                Err(e) => return fail(EXIT_MISUSE, e),
            };
            let ahead = match client::client_signals(&path, &file) {
                Ok(a) => a,
                Err(e) => return load_error(e),
            };
            match client::Client::start(wait, pi_cassette::two_way::Protocol::Rpc, ahead) {
                Ok(c) => Some(c),
                Err(e) => return fail(EXIT_MISUSE, format!("cannot read stdin: {e}")),
            }
        }
    };
    let requests = match client::RequestLog::open(env("FAKE_PI_REQUEST_LOG").as_deref()) {
        Ok(r) => r,
        Err(e) => return fail(EXIT_MISUSE, format!("FAKE_PI_REQUEST_LOG: {e}")),
    };
    let effective = grammar.effective(&parsed, mode, stdin.as_deref(), &agent.settings);
    let meta = session::SessionMeta {
        provider: effective.provider.clone(),
        model: effective.model.clone(),
        thinking: Some(effective.thinking.clone()),
    };
    let session = session::Session::new(plan, recorded.id.as_deref(), &cwd);
    let keep_recorded = env("FAKE_PI_VALUES").is_some_and(|v| v == "recorded");
    let pi_root = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(Path::to_path_buf))
        .unwrap_or_default();
    let values = if keep_recorded {
        None
    } else {
        values::Values::new(
            header.redactions.keys(),
            &session.id,
            &cwd,
            &pi_root.to_string_lossy(),
            &std::env::temp_dir().to_string_lossy(),
        )
    };
    let mut hooks = replay::Hooks {
        session,
        meta,
        values,
        recorded_session_id: recorded.id,
        session_line_done: keep_recorded,
        client,
        requests,
    };
    // The second pass: the same file, from its start.
    let mut records = match (&file)
        .seek(SeekFrom::Start(0))
        .map_err(|source| CassetteError::Io {
            path: path.clone(),
            source,
        })
        .and_then(|_| CassetteReader::from_read(&path, &file))
    {
        Ok(r) => r,
        Err(e) => return load_error(e),
    };
    replay::run(&mut records, Path::new(&path), speed, &mut hooks)
}

/// `FAKE_PI_RPC_WAIT_MS`: how long a two-way replay waits for the client (`None`: as long as
/// it takes).
fn rpc_wait() -> Result<Option<std::time::Duration>, String> {
    match env("FAKE_PI_RPC_WAIT_MS").map(|v| v.trim().parse::<u64>()) {
        None => Ok(None),
        Some(Ok(ms)) if ms > 0 => Ok(Some(std::time::Duration::from_millis(ms))),
        Some(_) => {
            Err("FAKE_PI_RPC_WAIT_MS: expected a whole number of milliseconds above 0".into())
        }
    }
}

/// What the recording's `session` line says.
struct RecordedSession {
    /// The recorded id, when concrete (not a placeholder).
    id: Option<String>,
}

/// What the recording's `session` line says: pi's first stdout record in json mode (a
/// cassette whose first stdout record is something else recorded no session). Records up
/// to it are checked on the way; nothing after it is read.
fn recorded_session<R: BufRead>(
    mut reader: CassetteReader<R>,
) -> Result<RecordedSession, CassetteError> {
    let mut session_line: Option<Vec<u8>> = None;
    while let Some(record) = reader.next_ref() {
        if let ActionRef::Stdout { body, .. } = record?.action {
            if body.starts_with(b"{\"type\":\"session\"") {
                session_line = Some(body.into_owned());
            }
            break;
        }
    }
    let id = session_line
        .and_then(|l| serde_json::from_slice::<serde_json::Value>(l.trim_ascii_end()).ok())
        .and_then(|v| v["id"].as_str().map(str::to_string))
        .filter(|id| !id.starts_with('<') && pi_grammar::is_file_safe_session_id(id));
    Ok(RecordedSession { id })
}
