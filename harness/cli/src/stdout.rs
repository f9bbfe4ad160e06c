//! What every command that prints shares: a line on stdout that survives a closed pipe, a
//! stdout that remembers a write that failed for another reason (a full disk, `/dev/full`),
//! and whether to colour.
//!
//! A reader that went away (`| head -1`, EPIPE) is not an error: the line is dropped and the
//! command goes on to its own exit status. Any other failed write is remembered
//! ([`failure`]) and ends the command with [`crate::EXIT_FAILED`]: output that was asked for
//! and not written is never a success.

use std::io::Write;
use std::sync::Mutex;

/// The first stdout write that failed for a reason other than a closed pipe.
static FAILURE: Mutex<Option<String>> = Mutex::new(None);

fn note(e: &std::io::Error) {
    if e.kind() != std::io::ErrorKind::BrokenPipe {
        let mut f = FAILURE.lock().unwrap_or_else(|p| p.into_inner());
        f.get_or_insert_with(|| e.to_string());
    }
}

/// Print a line on stdout (see the module doc for what a failed write means).
pub fn say(line: impl std::fmt::Display) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = writeln!(out, "{line}").and_then(|()| out.flush()) {
        note(&e);
    }
}

/// Stdout as a writer whose failures are remembered as [`say`]'s are.
pub struct Stdout;

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        std::io::stdout().lock().write(buf).inspect_err(note)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stdout().lock().flush().inspect_err(note)
    }
}

/// Why stdout could not be written, when a write failed for a reason other than a closed
/// pipe (the last buffered bytes are flushed first).
pub fn failure() -> Option<String> {
    if let Err(e) = std::io::stdout().lock().flush() {
        note(&e);
    }
    FAILURE.lock().unwrap_or_else(|p| p.into_inner()).clone()
}

/// Whether to colour output: only for a terminal, and never when `NO_COLOR` is set (non-empty).
pub fn use_color(is_terminal: bool) -> bool {
    is_terminal && std::env::var_os("NO_COLOR").map_or(true, |v| v.is_empty())
}
