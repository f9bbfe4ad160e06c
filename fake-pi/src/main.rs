//! fake-pi: behaves like pi on the command line and replays a cassette.
//!
//! Run as `fake-pi` or as `pi`. Which cassette: see [`source`] (`FAKE_PI_CASSETTE`, a
//! sequence, or `fake-pi.conf` beside the program). argv is read with the grammar of the
//! pi version in the cassette header; the session is planned as pi plans it ([`session`]);
//! stdin is read to EOF when it is not a terminal and joined with the first message as pi
//! does; the call is compared with the recording by meaning (`pi_cassette::matching`);
//! then the records are replayed in time (`FAKE_PI_SPEED`), with realistic values for the
//! recorder's placeholders ([`values`]) and the session file written as pi writes it.
//! Exit codes of fake-pi's own: see [`exit`] (the one table) and `fake-pi/README.md`.
//!
//! The rooms: [`source`] (which cassette), [`pi`], [`claude`], [`codex`] and [`gemini`] (the
//! command line and the call, as each CLI; [`codex_process`] and [`gemini_process`] their
//! process shapes; [`gemini_settings`] Gemini's settings), [`args`] and [`session`] (pi's
//! command line and sessions), [`agent`] (pi's agent dir), [`client`] (a two-way replay's
//! client), [`replay`] (the records in time), [`values`] (realistic values for
//! placeholders), [`signals`] and [`child`] (real signals and processes), [`environ`] and
//! [`exit`] (the environment read, the statuses given), [`report`] (fake-pi's own lines also
//! in `FAKE_PI_REPORT`), [`played`] (the trace a replay leaves in `FAKE_PI_PLAYED`),
//! [`relax`] (fields ignored at test time, `FAKE_PI_IGNORE`, and a mismatch's next step), [`timeline`] (what a start did in time, in `FAKE_PI_TIMELINE`,
//! opt-in), [`hints`] (what to do, in the report; on stderr too only with
//! `FAKE_PI_HINTS=1`), [`files`] (the files read and written, bounded, never through a link
//! where fake-pi writes).

// A command-line program: what it has to say goes to its stdout and stderr.
#![allow(clippy::print_stdout, clippy::print_stderr)]
// Nothing here is a library's: every item is crate-private.
#![warn(unreachable_pub)]

mod agent;
mod args;
mod child;
mod claude;
mod client;
mod codex;
mod codex_config;
mod codex_process;
mod environ;
mod exit;
mod files;
mod gemini;
mod gemini_process;
mod gemini_settings;
mod hints;
mod pi;
mod played;
mod relax;
mod replay;
mod report;
mod session;
mod signals;
mod source;
mod timeline;
mod values;

use std::ffi::OsString;

use pi_cassette::{CassetteError, CassetteReader};

use crate::exit::fail;

fn main() {
    if let Ok(spec) = std::env::var(child::SPEC_ENV) {
        child::child_main(&spec);
    }
    if let Ok(path) = std::env::var(codex_process::NATIVE_ENV) {
        codex_process::native_main(&path);
    }
    if let Ok(path) = std::env::var(gemini_process::CHILD_ENV) {
        gemini_process::child_main(&path);
    }
    let code = run();
    report::finish(code);
    timeline::finish(code);
    std::process::exit(code);
}

/// This start: its settings, the cassette it replays, read up to its header; then fake-pi
/// as Claude Code ([`claude`]) or as pi ([`pi`]).
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
    timeline::call(&argv);
    let settings = match source::settings(&environ::var, &argv0) {
        Ok(s) => s,
        Err(e) => return fail(exit::NO_CASSETTE, e),
    };
    if let Err(e) = environ::check_lifetimes() {
        return fail(exit::MISUSE, e);
    }
    let path = match source::choose(&settings) {
        Ok(p) => p,
        Err((code, e)) => return fail(code, e),
    };
    report::cassette(&path);
    timeline::cassette(&path);
    if let Some(e) = source::not_a_file(&path) {
        return fail(exit::NO_CASSETTE, e);
    }
    // The cassette is streamed, never held, and read once: the header now; then, unless the
    // command line is answered from argv alone (`--version`, `--help`, pi's argument
    // errors), the records up to the recording's `session` line (its id plans the session),
    // and the replay reads the file again from its start, checking each record through the
    // one reader as it reaches it. A broken record stops the replay at that line (exit 98,
    // file:line); `pi-harness cassette lint` checks a whole cassette up front.
    let file = match std::fs::File::open(&path) {
        Ok(f) => f,
        Err(source) => {
            return exit::cassette_failure(CassetteError::Io {
                path: path.clone(),
                source,
            })
        }
    };
    let first = match CassetteReader::from_read(&path, &file) {
        Ok(r) => r,
        Err(e) => return exit::cassette_failure(e),
    };
    let mut header = first.header().clone();
    exit::keep_secrets(&header);
    if let Err(e) = relax::apply(&mut header) {
        return fail(exit::MISUSE, e);
    }
    timeline::header_read();
    hints::unverified(&header);
    match header.agent() {
        pi_grammar::Agent::Pi => pi::run(&header, first, &argv, &path, &file, &settings),
        pi_grammar::Agent::Claude => {
            drop(first);
            claude::run(&header, &argv, &path, &file, settings.speed.as_deref())
        }
        pi_grammar::Agent::Codex => {
            drop(first);
            codex::run(&header, &argv, &path, settings.speed.as_deref())
        }
        pi_grammar::Agent::Gemini => {
            drop(first);
            gemini::run(&header, &argv, &path, settings.speed.as_deref())
        }
    }
}
