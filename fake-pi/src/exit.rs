//! fake-pi's exit statuses: every status fake-pi exits with of its own, what it means, and
//! the two helpers every path that gives up uses ([`fail`], [`cassette_failure`]).
//!
//! | status | constant | meaning |
//! |---|---|---|
//! | 0 | [`SUCCESS`] | a `spawn` child (fake-pi run again) whose `lifetime_ms` is over; a replay whose records end without an ending (the reader refuses such a cassette first) |
//! | 1 | [`CLAUDE_NOT_LOGGED_IN`] | as Claude Code: no `ANTHROPIC_API_KEY` (the CLI's own status, imitated) |
//! | 96 | [`MISUSE`] | fake-pi cannot do what was asked: bad `FAKE_PI_SPEED` or `FAKE_PI_RPC_WAIT_MS`, a field in `FAKE_PI_IGNORE` no replay can ignore, a lifetime variable that is not 1 to 600000 ms (`environ::check_lifetimes`), a pi package/auth/MCP command, `--resume`, an agent dir it cannot read, a child that cannot be started, a session file or request log it cannot write, a bad `FAKE_PI_CHILD_SPEC` (internal), a CLI's configuration file that is not a regular file or is larger than 1 MiB (`files::read_config`); as Gemini CLI, the interactive CLI or one of its commands (`gemini mcp`), a settings file that is not JSON |
//! | 97 | [`NO_CASSETTE`] | no cassette set, or it cannot be read (a bad `fake-pi.conf`, a sequence it cannot list) |
//! | 98 | [`INVALID_CASSETTE`] | the cassette is not valid (the message names file and line) |
//! | 99 | [`EXPECTATION`] | the call does not mean what the recording meant, a start past the end of a sequence, or (two-way) a client that does not do what the recording's client did |
//! | 128 + N | [`SIGNAL_BASE`] | a `signal` record or `die` action whose signal N does not kill by default |
//! | 141 | [`STDOUT_CLOSED`] | stdout's reader went away (EPIPE): fake-pi stops quietly, children are left alone |
//!
//! Every other status is the cassette's (an `exit` record, a signal action's `exit {code}`)
//! or pi's own for a command line pi refuses (from `pi_grammar`). `fake-pi/README.md` shows
//! the same table to users.

use std::sync::Mutex;

use pi_cassette::{CassetteError, Header};

/// The replay ran to its end with no status of the cassette's.
pub(crate) const SUCCESS: i32 = 0;
/// As Claude Code without `ANTHROPIC_API_KEY`: what the CLI exits with (measured).
pub(crate) const CLAUDE_NOT_LOGGED_IN: i32 = 1;
/// fake-pi cannot do what was asked (bad `FAKE_PI_SPEED`, a pi package command, a child
/// that cannot be started, an agent dir it cannot read).
pub(crate) const MISUSE: i32 = 96;
/// No cassette set, or it cannot be read.
pub(crate) const NO_CASSETTE: i32 = 97;
/// The cassette is not valid (message names file and line).
pub(crate) const INVALID_CASSETTE: i32 = 98;
/// The call does not match the cassette (or starts pi more often than a sequence has runs).
pub(crate) const EXPECTATION: i32 = 99;
/// Added to a signal's number when dying by it did not end the process (a shell's convention).
pub(crate) const SIGNAL_BASE: i32 = 128;
/// Stdout's reader is gone (128 + SIGPIPE, what a shell shows for a program killed by it).
pub(crate) const STDOUT_CLOSED: i32 = 141;

/// Say `message` as fake-pi's own (`fake-pi: ...` on stderr) and give back `code`.
pub(crate) fn fail(code: i32, message: String) -> i32 {
    say(&format!("fake-pi: {message}"));
    code
}

/// A line of fake-pi's own on stderr, kept for the report too ([`crate::report`]; kept
/// first, so that it is there whatever becomes of the write), with every secret of the
/// cassette masked ([`masked`]).
pub(crate) fn say(line: &str) {
    let line = masked(line);
    crate::report::note(&line);
    eprintln!("{line}");
}

/// The values of the cassette's `expect.never_in_argv` as this start has them (set once the
/// header is read: [`keep_secrets`]).
static SECRETS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Remember the secrets `header` names, so that no line of fake-pi's own shows one: every
/// such line goes through [`say`] (or the replay's own writer, which calls [`masked`]).
pub(crate) fn keep_secrets(header: &Header) {
    let values = pi_cassette::matching::secret_values(&header.expect, &crate::environ::var);
    *SECRETS.lock().unwrap_or_else(|e| e.into_inner()) = values;
}

/// `line` with every secret [`keep_secrets`] remembered masked (`pi_cassette::redact::mask`):
/// a mismatch, a client's line or a hint may quote what the caller gave, and the caller may
/// have put the key there; these lines reach `FAKE_PI_REPORT` and from there CI logs.
pub(crate) fn masked(line: &str) -> String {
    let secrets = SECRETS.lock().unwrap_or_else(|e| e.into_inner());
    pi_cassette::redact::mask(line, &secrets)
}

/// The status and message for a cassette that is not valid ([`INVALID_CASSETTE`]) or
/// cannot be read ([`NO_CASSETTE`]: an I/O error, and any other error the reader may give).
pub(crate) fn cassette_problem(e: &CassetteError) -> (i32, String) {
    match e {
        CassetteError::Invalid { .. } => (INVALID_CASSETTE, format!("invalid cassette: {e}")),
        _ => (NO_CASSETTE, e.to_string()),
    }
}

/// [`fail`] with the status and message of [`cassette_problem`].
pub(crate) fn cassette_failure(e: CassetteError) -> i32 {
    let (code, message) = cassette_problem(&e);
    fail(code, message)
}
