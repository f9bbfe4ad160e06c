//! What every command that prints shares: a line on stdout that survives a closed pipe, and
//! whether to colour.

/// Print a line on stdout; a closed stdout (`| head -1`) is not an error: the line is
/// dropped and the command goes on to its own exit status, quietly.
pub fn say(line: impl std::fmt::Display) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stdout().lock(), "{line}");
}

/// Whether to colour output: only for a terminal, and never when `NO_COLOR` is set (non-empty).
pub fn use_color(is_terminal: bool) -> bool {
    is_terminal && std::env::var_os("NO_COLOR").map_or(true, |v| v.is_empty())
}
