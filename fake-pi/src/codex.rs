//! fake-pi as Codex CLI: a cassette of dialect `exec-json` (header `codex`) makes fake-pi
//! answer as `codex exec --json` of the recorded release.
//!
//! In Codex's order: the command line read with the release's grammar
//! ([`pi_grammar::codex`]: clap's errors, exit 2; `--help`, `--version`), the `-c`
//! overrides and `$CODEX_HOME/config.toml` read ([`crate::codex_config`]: a malformed
//! override or a value Codex refuses, exit 1), the prompt taken from argv, stdin or both
//! (no prompt: the CLI's line, exit 1), outside a Git repository without
//! `--skip-git-repo-check` the CLI's refusal (exit 1), then the call compared with the recording by
//! meaning ([`pi_cassette::matching::codex`]: exit 99, one line per difference, each
//! naming where the call's value came from). Then the process shape of the npm package:
//! this process is the node wrapper, and the replay runs in a native child
//! ([`crate::codex_process`]).

use std::io::{IsTerminal, Read, Write};
use std::path::Path;

use pi_cassette::matching::codex::{check, CodexCall};
use pi_cassette::Header;
use pi_grammar::codex::{self, Codex, Command, PromptPlan};

use crate::exit::{self, fail};
use crate::{codex_config, codex_process, environ, hints};

/// Answer `argv` as the Codex release of `header` (the cassette at `path`); `speed` is
/// fake-pi's setting, handed to the replay.
pub(crate) fn run(header: &Header, argv: &[String], path: &Path, speed: Option<&str>) -> i32 {
    match call(header, argv, path) {
        Ok(()) => codex_process::wrap(path, argv, speed),
        Err(code) => code,
    }
}

/// Print what the CLI prints instead of running and give its status.
fn stop(s: &codex::Stop) -> i32 {
    let mut out = std::io::stdout().lock();
    if out
        .write_all(s.stdout.as_bytes())
        .and_then(|()| out.flush())
        .is_err()
    {
        return exit::STDOUT_CLOSED;
    }
    let _ = std::io::stderr().write_all(s.stderr.as_bytes());
    s.code
}

/// Everything before the replay; `Err` is the status to exit with (said on stderr).
fn call(header: &Header, argv: &[String], path: &Path) -> Result<(), i32> {
    let cli = header.pi.codex().unwrap_or_else(Codex::latest);
    let parsed = match cli.parse(argv) {
        Ok(p) => p,
        Err(s) => {
            let code = stop(&s);
            if code != 0 {
                hints::other_agent_for_codex(header, argv);
            }
            return Err(code);
        }
    };
    if !matches!(parsed.command, Command::Exec | Command::ExecResume) {
        let what = match &parsed.command {
            Command::Other(name) => format!("`codex {name}`"),
            _ => "the interactive `codex` (no subcommand)".into(),
        };
        return Err(fail(
            exit::MISUSE,
            format!("as Codex, fake-pi answers `codex exec` and `codex exec resume`, not {what} (cassette {})", path.display()),
        ));
    }
    let home = codex_config::codex_home(&environ::var);
    let layers = match codex_config::layers(&parsed, &home) {
        Ok(l) => l,
        Err(codex_config::LayersError::Cli(e)) => {
            eprintln!("{e}");
            return Err(1);
        }
        Err(codex_config::LayersError::Refused(e)) => return Err(fail(exit::MISUSE, e)),
    };
    let effective = codex::effective(&parsed, &layers);
    if let Some(e) = codex_config::refused(&effective, &layers) {
        eprint!("{e}");
        return Err(1);
    }
    let (plan, prompt) = prompt(header, &cli, &parsed)?;
    if !parsed.has("skip-git-repo-check") && !trusted(&parsed, &layers) {
        // What the CLI says first, as measured: `exec` announces the stdin it read, `exec
        // resume` does not.
        match plan {
            PromptPlan::ArgvAndStdin(_) if parsed.command == Command::Exec => {
                eprintln!("Reading additional input from stdin...")
            }
            PromptPlan::Stdin { announce: true } => eprintln!("Reading prompt from stdin..."),
            _ => {}
        }
        eprintln!("Not inside a trusted directory and --skip-git-repo-check was not specified.");
        return Err(1);
    }
    let call = CodexCall {
        argv,
        parsed: &parsed,
        effective: &effective,
        prompt: Some(&prompt),
        env: &environ::var,
    };
    let mismatches = check(&header.expect, &call);
    if mismatches.is_empty() {
        return Ok(());
    }
    let lines: Vec<String> = mismatches.iter().map(ToString::to_string).collect();
    let place = format!("cassette {}; CODEX_HOME {}", path.display(), home.display());
    Err(crate::relax::mismatched(&lines, &place))
}

/// The prompt Codex sends, reading stdin when it does (to its end, bounded as a cassette
/// line is).
fn prompt(
    header: &Header,
    cli: &Codex,
    parsed: &codex::Parsed,
) -> Result<(PromptPlan, String), i32> {
    let plan = cli
        .prompt(parsed, std::io::stdin().is_terminal())
        .map_err(|s| stop(&s))?;
    let stdin = match plan {
        PromptPlan::Argv(_) => String::new(),
        _ => {
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
            String::from_utf8_lossy(&raw).into_owned()
        }
    };
    match codex::join_prompt(&plan, &stdin) {
        Some(p) => Ok((plan, p)),
        None => {
            if plan == (PromptPlan::Stdin { announce: true }) {
                eprintln!("Reading prompt from stdin...");
            }
            eprint!("{}", codex::NO_PROMPT_ON_STDIN);
            Err(1)
        }
    }
}

/// Does Codex run here without `--skip-git-repo-check`: the working root (`--cd`, else the
/// current directory) inside a Git repository (a `.git` in it or above it), or marked
/// trusted in the config (`[projects."PATH"] trust_level = "trusted"`)?
fn trusted(parsed: &codex::Parsed, layers: &[codex::Layer]) -> bool {
    let cwd = std::env::current_dir().unwrap_or_default();
    let root = parsed.value("cd").map_or(cwd.clone(), |d| cwd.join(d));
    if root.ancestors().any(|d| d.join(".git").exists()) {
        return true;
    }
    let key = format!("projects.{}.trust_level", root.display());
    layers
        .iter()
        .any(|l| l.values.get(&key).is_some_and(|v| v == "trusted"))
}
