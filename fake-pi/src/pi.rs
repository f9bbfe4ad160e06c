//! fake-pi as pi (a json-mode or RPC cassette), from the header to the replay, in pi's
//! order: the header checked against the grammar of its pi version, the command line
//! answered from argv alone where pi does (`--version`, `--help`, pi's argument errors),
//! the session planned, stdin read, the call compared with the recording by meaning
//! (`pi_cassette::matching`), the client of a two-way cassette started, and the records
//! replayed ([`crate::replay`]) with the session and realistic values as [`Hooks`].

use std::fs::File;
use std::io::{BufRead, IsTerminal, Read, Write};
use std::path::Path;

use pi_cassette::matching::{self, Call};
use pi_cassette::{ActionRef, CassetteError, CassetteReader, Header};
use pi_grammar::{self as pi_cli, AppMode, Grammar, ParsedArgs, KNOWN_VERSIONS};

use crate::agent::{self, AgentDir};
use crate::exit::{self, fail};
use crate::replay::{self, Hooks};
use crate::{args, client, environ, hints, session, signals, source, values};

/// Replay the pi cassette `file` (at `path`, header `header`, `first` its reader past the
/// header) for `argv`; returns the exit status.
pub(crate) fn run<R: BufRead>(
    header: &Header,
    first: CassetteReader<R>,
    argv: &[String],
    path: &Path,
    file: &File,
    settings: &source::Settings,
) -> i32 {
    match replay_as_pi(header, first, argv, path, file, settings) {
        Ok(code) | Err(code) => code,
    }
}

/// [`run`], where `Err` is a status to exit with before the replay (said on stderr).
fn replay_as_pi<R: BufRead>(
    header: &Header,
    first: CassetteReader<R>,
    argv: &[String],
    path: &Path,
    file: &File,
    settings: &source::Settings,
) -> Result<i32, i32> {
    let tty = Ttys {
        stdin: std::io::stdin().is_terminal(),
        stdout: std::io::stdout().is_terminal(),
    };
    let grammar = header.pi.grammar();
    let recorded = recorded_session_unless_argv_answers(grammar.as_ref(), first, argv, tty)?;
    let grammar = checked_grammar(header, grammar, path)?;
    let speed = get_ready(header, &grammar, argv, settings)?;
    let (parsed, mode) = command_line(header, &grammar, argv, tty)?;
    hints::claude_argv_for_pi(header, &parsed.unknown_flags, argv);
    if !parsed.unknown_flags.is_empty() {
        hints::codex_argv_for_other(
            &format!("pi's (pi {}, {})", header.pi.version, header.scenario.name),
            argv,
        );
    }
    let (agent, cwd, plan) = plan_session(&grammar, &parsed)?;
    // pi reads piped stdin to EOF (not in RPC mode, where stdin carries commands).
    let stdin = if mode != AppMode::Rpc && !tty.stdin {
        // Held whole only up to the reader's line limit: a prompt is one value of the
        // cassette's, which the reader bounds the same way.
        let max = pi_cassette::Limits::from_env().max_line_bytes;
        let mut raw = Vec::new();
        let watch = hints::watch_stdin(header);
        let read = std::io::stdin().take(max as u64 + 1).read_to_end(&mut raw);
        drop(watch);
        if let Err(e) = read {
            return Err(fail(exit::MISUSE, format!("cannot read stdin: {e}")));
        }
        if raw.len() > max {
            return Err(fail(
                exit::MISUSE,
                format!(
                    "stdin: more than {max} bytes piped (the limit; raise it with {}=BYTES)",
                    pi_cassette::input::MAX_LINE_ENV
                ),
            ));
        }
        pi_cli::stdin_content(&raw)
    } else {
        None
    };
    if let Some(e) = grammar.runtime_errors(&parsed) {
        eprint!("{}", e.stderr);
        hints::newer_pi_flags(header, &grammar, &e.stderr);
        return Err(e.exit_code);
    }
    let agent_dir = agent.path.display().to_string();
    let call = Call {
        argv,
        parsed: &parsed,
        mode,
        stdin: stdin.as_deref(),
        settings: &agent.settings,
        agent_dir: &agent_dir,
        session: plan.session_use(),
        env: &environ::var,
    };
    check_call(header, &grammar, &call, path)?;
    let client = two_way_client(header, mode, path, file)?;
    let requests = match client::RequestLog::open(environ::var("FAKE_PI_REQUEST_LOG").as_deref()) {
        Ok(r) => r,
        Err(e) => return Err(fail(exit::MISUSE, format!("FAKE_PI_REQUEST_LOG: {e}"))),
    };
    let run = RunOf {
        grammar: &grammar,
        parsed: &parsed,
        mode,
        stdin: stdin.as_deref(),
        agent: &agent,
        cwd: &cwd,
    };
    let mut hooks = hooks(header, &run, plan, recorded, client, requests);
    // The second pass: the same file, from its start.
    let mut records = source::from_start(path, file).map_err(exit::cassette_failure)?;
    Ok(replay::run(&mut records, path, speed, &mut hooks))
}

/// Whether stdin and stdout are terminals (pi decides some things by that).
#[derive(Clone, Copy)]
struct Ttys {
    stdin: bool,
    stdout: bool,
}

/// What the recording's `session` line says, read unless the command line is answered
/// from argv alone (`--version`, `--help`, pi's argument errors: nothing past the header
/// is read then).
fn recorded_session_unless_argv_answers<R: BufRead>(
    grammar: Option<&Grammar>,
    first: CassetteReader<R>,
    argv: &[String],
    tty: Ttys,
) -> Result<RecordedSession, i32> {
    let from_argv_alone = grammar.is_some_and(|g| {
        matches!(
            args::before_stdin(g, argv, tty.stdin, tty.stdout),
            args::Next::Finish(_)
        )
    });
    if from_argv_alone {
        return Ok(RecordedSession { id: None });
    }
    recorded_session(first).map_err(exit::cassette_failure)
}

/// The grammar of the header's pi version, once the header's expectations are known to be
/// valid for it.
fn checked_grammar(header: &Header, grammar: Option<Grammar>, path: &Path) -> Result<Grammar, i32> {
    let invalid = |what: String| {
        fail(
            exit::INVALID_CASSETTE,
            format!("invalid cassette: {}:1: {what}", path.display()),
        )
    };
    let Some(grammar) = grammar else {
        return Err(invalid(format!(
            "header field `pi.version`: fake-pi knows the command line of pi {}, not {:?}",
            KNOWN_VERSIONS.join(", "),
            header.pi.version
        )));
    };
    if let Err(what) = matching::validate(&header.expect, &grammar) {
        return Err(invalid(what));
    }
    Ok(grammar)
}

/// Ready to replay: the speed, the signals taken by the signal thread as the cassette's
/// `process` section says; a pi subcommand (packages, auth, MCP) is refused.
fn get_ready(
    header: &Header,
    grammar: &Grammar,
    argv: &[String],
    settings: &source::Settings,
) -> Result<replay::Speed, i32> {
    let speed = match replay::Speed::parse(settings.speed.as_deref()) {
        Ok(s) => s,
        Err(e) => return Err(fail(exit::MISUSE, e)),
    };
    if let Err(e) = signals::block() {
        return Err(fail(exit::MISUSE, format!("cannot block signals: {e}")));
    }
    if let Some(cmd) = grammar.command(argv) {
        return Err(fail(
            exit::MISUSE,
            format!("`pi {cmd}` (a package, auth or MCP command) is not imitated; fake-pi only replays agent runs"),
        ));
    }
    if let Err(e) = signals::start(header.process.clone()) {
        return Err(fail(
            exit::MISUSE,
            format!("cannot start the signal thread: {e}"),
        ));
    }
    Ok(speed)
}

/// The command line as pi reads it before stdin: either answered now (its output written,
/// `Err` with pi's status) or parsed, with its warnings said.
fn command_line(
    header: &Header,
    grammar: &Grammar,
    argv: &[String],
    tty: Ttys,
) -> Result<(ParsedArgs, AppMode), i32> {
    match args::before_stdin(grammar, argv, tty.stdin, tty.stdout) {
        args::Next::Finish(f) => {
            // A closed stdout (`fake-pi --help | head -1`) is a quiet 141, as in replay.
            let mut out = std::io::stdout().lock();
            if out
                .write_all(f.stdout.as_bytes())
                .and_then(|()| out.flush())
                .is_err()
            {
                return Err(exit::STDOUT_CLOSED);
            }
            let _ = std::io::stderr().write_all(f.stderr.as_bytes());
            hints::newer_pi_flags(header, grammar, &f.stderr);
            Err(f.code)
        }
        args::Next::Run {
            parsed,
            mode,
            warnings,
        } => {
            eprint!("{warnings}");
            Ok((parsed, mode))
        }
    }
}

/// The session as pi plans it, before it reads stdin (a session of another project makes
/// it ask on stderr and read the answer from stdin): with the agent dir and the working
/// directory it was planned for.
fn plan_session(
    grammar: &Grammar,
    parsed: &ParsedArgs,
) -> Result<(AgentDir, String, session::Plan), i32> {
    if parsed.has("--resume") {
        return Err(fail(
            exit::MISUSE,
            "`--resume` opens pi's interactive session picker; it is not imitated (use --session ID or --continue)".into(),
        ));
    }
    let agent_path = agent::locate(&environ::var);
    let agent = match agent::load(&agent_path) {
        Ok(a) => a,
        Err(e) => return Err(fail(exit::MISUSE, format!("agent dir: {e}"))),
    };
    let cwd = std::env::current_dir()
        .map(|d| d.to_string_lossy().into_owned())
        .unwrap_or_else(|_| ".".into());
    let ctx = session::Ctx {
        grammar,
        parsed,
        cwd: &cwd,
        agent: &agent,
        env: &environ::var,
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
            return Err(stop.code);
        }
    };
    Ok((agent, cwd, plan))
}

/// The call must mean what the recording meant: one line per difference, then 99.
fn check_call(header: &Header, grammar: &Grammar, call: &Call<'_>, path: &Path) -> Result<(), i32> {
    let mismatches: Vec<String> = matching::check(&header.expect, grammar, call)
        .iter()
        .map(ToString::to_string)
        .collect();
    if !mismatches.is_empty() {
        let place = format!("cassette {}", path.display());
        return Err(crate::relax::mismatched(&mismatches, &place));
    }
    Ok(())
}

/// A two-way cassette holds a client's side too: only a client speaking that protocol can
/// replay it. The client for such a cassette (stdin read from now on); none for a
/// json-mode one.
fn two_way_client(
    header: &Header,
    mode: AppMode,
    path: &Path,
    file: &File,
) -> Result<Option<client::Client>, i32> {
    match &header.mode {
        None => Ok(None),
        Some(m) if mode != AppMode::Rpc => {
            let what = format!("the cassette holds a `--mode {m}` session (its header's `mode`); this call runs pi in another mode");
            let place = format!("cassette {}", path.display());
            Err(crate::relax::mismatched(&[what], &place))
        }
        Some(_) => {
            let wait = match environ::rpc_wait() {
                Ok(w) => w,
                Err(e) => return Err(fail(exit::MISUSE, e)),
            };
            let ahead = client::client_signals(path, file).map_err(exit::cassette_failure)?;
            match client::Client::start(wait, pi_cassette::two_way::Protocol::Rpc, ahead, true) {
                Ok(c) => Ok(Some(c)),
                Err(e) => Err(fail(exit::MISUSE, format!("cannot read stdin: {e}"))),
            }
        }
    }
}

/// What this run is, as the session file and the realistic values need it.
struct RunOf<'a> {
    grammar: &'a Grammar,
    parsed: &'a ParsedArgs,
    mode: AppMode,
    stdin: Option<&'a str>,
    agent: &'a AgentDir,
    cwd: &'a str,
}

/// What the replay does besides writing the records: the session (with the effective
/// provider, model and thinking level) and the realistic values for the placeholders
/// (unless `FAKE_PI_VALUES=recorded`).
fn hooks(
    header: &Header,
    run: &RunOf<'_>,
    plan: session::Plan,
    recorded: RecordedSession,
    client: Option<client::Client>,
    requests: client::RequestLog,
) -> Hooks {
    let effective = run
        .grammar
        .effective(run.parsed, run.mode, run.stdin, &run.agent.settings);
    let meta = session::SessionMeta {
        provider: effective.provider.clone(),
        model: effective.model.clone(),
        thinking: Some(effective.thinking.clone()),
    };
    let session = session::Session::new(plan, recorded.id.as_deref(), run.cwd);
    let keep_recorded = environ::var("FAKE_PI_VALUES").is_some_and(|v| v == "recorded");
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
            run.cwd,
            &pi_root.to_string_lossy(),
            &std::env::temp_dir().to_string_lossy(),
        )
    };
    Hooks {
        session,
        meta,
        values,
        recorded_session_id: recorded.id,
        session_line_done: keep_recorded,
        client,
        requests,
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
