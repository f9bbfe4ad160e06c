//! fake-pi as Gemini CLI: a cassette of dialect `gemini-stream-json` (header `gemini`) makes
//! fake-pi answer as `gemini -p ... --output-format stream-json` of the recorded release.
//!
//! In Gemini's order: the command line read with the release's grammar
//! ([`pi_grammar::gemini`]: yargs' errors and the CLI's checks, the help after each, exit 1;
//! `--help`, `--version`), the settings read as its layers ([`crate::gemini_settings`]; a
//! file that is not JSON once its comments are stripped: fake-pi's own refusal, exit 96), the
//! prompt (`-p` or the query, with piped stdin before it as 0.61.0 joins them; stdin that
//! gives nothing within 500 ms counts as none, as the CLI's reader gives up), then the call compared with the recording by meaning
//! ([`pi_cassette::matching::gemini`]: exit 99, one line per difference, each naming where
//! the call's value came from). Then the process shape of the CLI's relaunch
//! ([`crate::gemini_process`]).

use std::io::{IsTerminal, Read, Write};
use std::path::Path;
use std::time::Duration;

use pi_cassette::matching::gemini::{check, GeminiCall};
use pi_cassette::Header;
use pi_grammar::gemini::{self, Gemini};

use crate::exit::{self, fail};
use crate::{environ, gemini_process, gemini_settings, hints, signals};

/// The CLI's commands (`gemini mcp ...`), which its help lists and fake-pi does not imitate.
const COMMANDS: &[&str] = &[
    "mcp",
    "extensions",
    "extension",
    "skills",
    "skill",
    "hooks",
    "hook",
    "gemma",
];

/// Answer `argv` as the Gemini release of `header` (the cassette at `path`); `speed` is
/// fake-pi's setting, handed to the replay.
pub(crate) fn run(header: &Header, argv: &[String], path: &Path, speed: Option<&str>) -> i32 {
    match call(header, argv, path) {
        Ok(()) => gemini_process::start(path, argv, speed),
        Err(code) => code,
    }
}

/// Everything before the replay; `Err` is the status to exit with (said on stderr).
fn call(header: &Header, argv: &[String], path: &Path) -> Result<(), i32> {
    // From here on the process is the relaunch parent, which never dies of SIGTERM or
    // SIGINT: block them before any thread exists (the replay's process answers them).
    if let Err(e) = signals::block() {
        return Err(fail(exit::MISUSE, format!("cannot block signals: {e}")));
    }
    let cli = header.pi.gemini().unwrap_or_else(Gemini::latest);
    let parsed = match cli.parse(argv) {
        Ok(p) => p,
        Err(s) => {
            let mut out = std::io::stdout().lock();
            if out
                .write_all(s.stdout.as_bytes())
                .and_then(|()| out.flush())
                .is_err()
            {
                return Err(exit::STDOUT_CLOSED);
            }
            let _ = std::io::stderr().write_all(s.stderr.as_bytes());
            // Options Gemini does not know: perhaps another agent's command line.
            if s.stderr.starts_with("Unknown argument") {
                hints::other_agent_for_gemini(header, argv);
            }
            return Err(s.code);
        }
    };
    let tty = std::io::stdin().is_terminal();
    if let Some(command) = parsed
        .query
        .first()
        .filter(|q| COMMANDS.contains(&q.as_str()))
    {
        return Err(fail(
            exit::MISUSE,
            format!("as Gemini CLI, fake-pi answers the headless `gemini -p PROMPT`, not `gemini {command}` (cassette {})", path.display()),
        ));
    }
    if !parsed.headless(tty) {
        return Err(fail(
            exit::MISUSE,
            format!("as Gemini CLI, fake-pi answers the headless `gemini -p PROMPT` (or a query with stdin piped), not the interactive CLI (cassette {})", path.display()),
        ));
    }
    let layers = gemini_settings::layers(&parsed).map_err(|e| fail(exit::MISUSE, e))?;
    let env_model = environ::var("GEMINI_MODEL");
    let effective = gemini::effective(&parsed, env_model.as_deref(), &layers);
    let stdin = if tty { None } else { Some(read_stdin()?) };
    let prompt = gemini::join_prompt(parsed.prompt_arg().as_deref(), stdin.as_deref());
    let call = GeminiCall {
        argv,
        parsed: &parsed,
        effective: &effective,
        prompt: Some(prompt.as_deref().unwrap_or("")),
        env: &environ::var,
    };
    let mismatches = check(&header.expect, &call);
    if mismatches.is_empty() {
        return Ok(());
    }
    let lines: Vec<String> = mismatches.iter().map(ToString::to_string).collect();
    let place = format!("cassette {}", path.display());
    Err(crate::relax::mismatched(&lines, &place))
}

/// Piped stdin as the CLI reads it: nothing within 500 ms is none; else to its end, at
/// most the cassette line limit (fake-pi's bound; the CLI truncates at 8 MiB).
fn read_stdin() -> Result<String, i32> {
    let max = pi_cassette::Limits::from_env().max_line_bytes;
    let (tx, rx) = std::sync::mpsc::channel::<std::io::Result<Vec<u8>>>();
    let _ = crate::signals::spawn_thread("fake-pi-stdin", move || {
        let mut stdin = std::io::stdin().lock();
        let mut first = [0u8; 8192];
        let n = match stdin.read(&mut first) {
            Ok(n) => n,
            Err(e) => {
                let _ = tx.send(Err(e));
                return;
            }
        };
        let _ = tx.send(Ok(first[..n].to_vec()));
        if n > 0 {
            let mut rest = Vec::new();
            let read = stdin.take(max as u64).read_to_end(&mut rest);
            let _ = tx.send(read.map(|_| rest));
        }
    });
    let failed = |e: std::io::Error| fail(exit::MISUSE, format!("cannot read stdin: {e}"));
    // The first bytes within 500 ms, then the rest without a time limit.
    let mut raw = match rx.recv_timeout(Duration::from_millis(500)) {
        Ok(r) => r.map_err(failed)?,
        Err(_) => return Ok(String::new()),
    };
    if !raw.is_empty() {
        if let Ok(rest) = rx.recv() {
            raw.extend(rest.map_err(failed)?);
        }
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
    Ok(String::from_utf8_lossy(&raw).into_owned())
}
