//! fake-pi: behaves like pi on the command line and replays a cassette.
//!
//! Run as `fake-pi` or as `pi`. The cassette comes from `FAKE_PI_CASSETTE`; argv is read
//! with the grammar of the pi version in the cassette header; stdin is read to EOF when
//! it is not a terminal and joined with the first message as pi does; the header's
//! expectations are checked; then the records are replayed in time (`FAKE_PI_SPEED`).
//! Exit codes of fake-pi's own: see [`EXIT_MISUSE`] and the following constants and
//! `fake-pi/README.md`.

mod args;
mod child;
mod expect;
mod replay;
mod signals;

use std::ffi::OsString;
use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};

use pi_cassette::{Cassette, CassetteError};
use pi_grammar::{self as pi_cli, AppMode, Grammar, KNOWN_VERSIONS};

/// fake-pi cannot do what was asked (bad `FAKE_PI_SPEED`, a pi package command, a child
/// that cannot be started).
pub const EXIT_MISUSE: i32 = 96;
/// `FAKE_PI_CASSETTE` unset or empty, or the file cannot be read.
pub const EXIT_NO_CASSETTE: i32 = 97;
/// The cassette is not valid (message names file and line).
pub const EXIT_INVALID_CASSETTE: i32 = 98;
/// The call does not match the cassette's `expect` section.
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

fn run() -> i32 {
    if let Err(e) = signals::block() {
        return fail(EXIT_MISUSE, format!("cannot block signals: {e}"));
    }
    let argv: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|a: OsString| a.to_string_lossy().into_owned())
        .collect();
    let path = match std::env::var_os("FAKE_PI_CASSETTE") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => {
            return fail(
                EXIT_NO_CASSETTE,
                "no cassette: set FAKE_PI_CASSETTE to a .cassette.jsonl(.gz) file".into(),
            )
        }
    };
    let cassette = match Cassette::load(&path) {
        Ok(c) => c,
        Err(e @ CassetteError::Io { .. }) => return fail(EXIT_NO_CASSETTE, e.to_string()),
        Err(e @ CassetteError::Invalid { .. }) => {
            return fail(EXIT_INVALID_CASSETTE, format!("invalid cassette: {e}"))
        }
    };
    let invalid = |what: String| {
        fail(
            EXIT_INVALID_CASSETTE,
            format!("invalid cassette: {}:1: {what}", path.display()),
        )
    };
    let header = &cassette.header;
    let Some(grammar) = Grammar::for_version(&header.pi.version) else {
        return invalid(format!(
            "header field `pi.version`: fake-pi knows the command line of pi {}, not {:?}",
            KNOWN_VERSIONS.join(", "),
            header.pi.version
        ));
    };
    if let Err(what) = expect::validate(&header.expect, &grammar) {
        return invalid(what);
    }
    let speed = match replay::Speed::parse(std::env::var("FAKE_PI_SPEED").ok().as_deref()) {
        Ok(s) => s,
        Err(e) => return fail(EXIT_MISUSE, e),
    };
    if let Some(cmd) = grammar.command(&argv) {
        return fail(
            EXIT_MISUSE,
            format!("`pi {cmd}` (a package/auth command) is not imitated; fake-pi only replays agent runs"),
        );
    }
    if let Err(e) = signals::start(header.process.clone()) {
        return fail(EXIT_MISUSE, format!("cannot start the signal thread: {e}"));
    }

    let stdin_tty = std::io::stdin().is_terminal();
    let (parsed, mode) =
        match args::before_stdin(&grammar, &argv, stdin_tty, std::io::stdout().is_terminal()) {
            args::Next::Finish(f) => {
                print!("{}", f.stdout);
                eprint!("{}", f.stderr);
                let _ = std::io::stdout().flush();
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
    let prompt = pi_cli::join_prompt(stdin.as_deref(), &parsed.messages);
    let actual = expect::Actual {
        argv: &argv,
        parsed: &parsed,
        prompt: prompt.as_deref(),
    };
    let mismatches = expect::check(&header.expect, &grammar, &actual, &|k| {
        std::env::var_os(k).map(|v| v.to_string_lossy().into_owned())
    });
    if !mismatches.is_empty() {
        for m in &mismatches {
            eprintln!(
                "fake-pi: expectation mismatch: {m} (cassette {})",
                path.display()
            );
        }
        return EXIT_EXPECTATION;
    }
    replay::run(&cassette, Path::new(&path), speed)
}
