//! The exit statuses of `pi-harness`: one table, used by every path that ends the process.
//!
//! | status | constant | meaning |
//! |---:|---|---|
//! | 0 | [`EXIT_OK`] | the command did what it was asked: `run` completed (`terminal.completed`), `map` read its whole input, `cassette show` printed (or wrote its `--html` page), `report` wrote its page, `cassette import` wrote, `cassette lint` and `drift` found nothing, `conform` passed every case, `cassette review` went through the pending files (whatever was decided), `install` found or installed the CLI; also `--help` and `--version`; and for `map`, `cassette show` and `serve-llm`, a stdout closed by its reader (`\| head`): nothing more can be said |
//! | 1 | [`EXIT_FAILED`] | the command ran and the answer is no: `run` failed (`terminal.failed`, except `invalid_request`), `cassette lint` found a problem, `drift` a difference, `conform` a failing case, `record-corpus` a scenario it could not record, `record` a recording that never reached the model (pi made no model request, or its provider speaks a wire the scripted server does not: nothing written), `leftovers` a process left over, `record --record-mode` a missing cassette it may not record (`none`, or any mode under `CI`), `install` no npm, a platform without the packages, or npm, tar or the integrity check failing; or the output could not be written, or the async runtime or signal handlers could not start |
//! | 2 | [`EXIT_USAGE`] | a usage or input error, printed as one line `error: ...`: a bad flag or value (with a pointer to `--help`), a missing command (clap prints the help instead), a missing or unreadable file, a malformed cassette (`FILE:LINE: what`), pi not found, a request this pi version would reject (`run`: `terminal.failed` with `invalid_request`); a version `install` does not know; every other error of `record`, and every error of `record-corpus`, `cassette review`, `conform`, `corpus`, `provider-run`, `pi-versions` and `drift` |
//! | 130 | [`EXIT_CANCELLED`] | `run` was cancelled: SIGINT (Ctrl-C), SIGTERM, SIGHUP or `--cancel-after`; or nobody read its stdout any more, so the stream did not reach its reader |
//!
//! One command passes another program's status through: `leftovers -- CMD` exits with CMD's
//! own status (128+N when signal N killed it) when nothing was left over.

use std::process::ExitCode;

/// The command did what it was asked (see the table above).
pub const EXIT_OK: i32 = 0;
/// The command ran and the answer is no: a failed run, problems found, output not written.
pub const EXIT_FAILED: i32 = 1;
/// A usage or input error: a bad flag, a missing file, a malformed cassette, pi not found, a
/// request this pi version would reject.
pub const EXIT_USAGE: i32 = 2;
/// `run` was cancelled: Ctrl-C (SIGINT), SIGTERM, SIGHUP or `--cancel-after`.
pub const EXIT_CANCELLED: i32 = 130;

/// The process's exit code for a status of the table (or a status passed through); a value
/// outside 0..=255 becomes [`EXIT_FAILED`].
pub fn exit_code(status: i32) -> ExitCode {
    ExitCode::from(u8::try_from(status).unwrap_or(EXIT_FAILED as u8))
}

/// [`EXIT_OK`] when the command's answer is yes, else [`EXIT_FAILED`].
pub fn ok_or_failed(ok: bool) -> i32 {
    if ok {
        EXIT_OK
    } else {
        EXIT_FAILED
    }
}
