//! The one user-facing error of `pi-harness`: [`CliError`], printed as one line
//! `error: ...`, and clap's parse errors folded into the same one line.

use crate::exit::EXIT_USAGE;

/// An error the user can do something about: printed as one line `error: ...`, never with
/// a backtrace (`RUST_BACKTRACE=1`, common in CI, is for panics).
#[derive(Debug)]
pub struct CliError {
    /// What went wrong, for a person (folded into one line when printed).
    pub message: String,
    /// The exit status it ends the command with (see [`crate::exit`]).
    pub code: i32,
}

impl CliError {
    /// A usage or input error (exit status [`EXIT_USAGE`]).
    pub fn usage(message: impl Into<String>) -> Self {
        CliError {
            message: message.into(),
            code: EXIT_USAGE,
        }
    }

    /// Print the error (one line) and return the exit status.
    pub fn report(&self) -> i32 {
        eprintln!("error: {}", one_line(&self.message));
        self.code
    }
}

impl std::fmt::Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CliError {}

/// An error and its causes as one message (`outer: cause: cause`), a cause left out when the
/// message already says it (a library error whose text includes its source: `cannot read
/// cassette: Data corruption detected` was followed by the source again).
pub(crate) fn with_causes(e: &anyhow::Error) -> String {
    let mut out = e.to_string();
    for cause in e.chain().skip(1) {
        let text = cause.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
    }
    out
}

/// A message of several lines as one: each line trimmed, empty ones dropped, joined by a space.
pub(crate) fn one_line(s: &str) -> String {
    s.split('\n')
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Handle a clap parse error: help and version are printed as clap prints them; every other
/// error becomes one line naming the flag or value, with a pointer to `--help`, and exit
/// status [`EXIT_USAGE`]. Never returns.
pub fn exit_on_clap_error(e: clap::Error) -> ! {
    use clap::error::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        e.exit();
    }
    let text = e.render().to_string();
    eprintln!("{}", clap_one_line(&text));
    std::process::exit(EXIT_USAGE);
}

/// `error: ...` from clap's rendered error: the first paragraph joined into one line, plus
/// `(see 'pi-harness CMD --help')` built from the usage line.
pub fn clap_one_line(rendered: &str) -> String {
    let mut paragraph = Vec::new();
    for line in rendered.lines() {
        if line.trim().is_empty() {
            if paragraph.is_empty() {
                continue;
            }
            break;
        }
        paragraph.push(line.trim());
    }
    let mut out = paragraph.join(" ");
    if !out.starts_with("error:") {
        out = format!("error: {out}");
    }
    // clap's suggestions (`tip: a similar argument exists: '--json'`) are worth keeping.
    for tip in rendered
        .lines()
        .filter_map(|l| l.trim().strip_prefix("tip: "))
    {
        out.push_str(&format!("; {tip}"));
    }
    let usage = rendered
        .lines()
        .find_map(|l| l.trim().strip_prefix("Usage: "));
    if let Some(usage) = usage {
        let cmd: Vec<&str> = usage
            .split_whitespace()
            .take_while(|w| !w.starts_with(['[', '<', '-']))
            .collect();
        if !cmd.is_empty() {
            out.push_str(&format!(" (see '{} --help')", cmd.join(" ")));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_cause_the_message_already_says_is_not_said_again() {
        let io = std::io::Error::other("Data corruption detected");
        let e = anyhow::Error::new(pi_cassette::CassetteError::Io {
            path: "x.zst".into(),
            source: io,
        });
        assert_eq!(
            super::with_causes(&e),
            "x.zst: cannot read cassette: Data corruption detected"
        );
        let e = anyhow::anyhow!("inner").context("outer");
        assert_eq!(super::with_causes(&e), "outer: inner");
    }

    use super::*;

    #[test]
    fn clap_errors_become_one_line() {
        let rendered = "error: unexpected argument '--bogus' found\n\n  tip: to pass '--bogus' as a value, use '-- --bogus'\n\nUsage: pi-harness run [OPTIONS] <PROMPT>\n\nFor more information, try '--help'.\n";
        assert_eq!(
            clap_one_line(rendered),
            "error: unexpected argument '--bogus' found; to pass '--bogus' as a value, use '-- --bogus' (see 'pi-harness run --help')"
        );
        let rendered = "error: the following required arguments were not provided:\n  <PROMPT>\n\nUsage: pi-harness run <PROMPT>\n";
        assert_eq!(
            clap_one_line(rendered),
            "error: the following required arguments were not provided: <PROMPT> (see 'pi-harness run --help')"
        );
    }

    #[test]
    fn messages_are_folded_to_one_line() {
        assert_eq!(one_line("a\n  b\n\n"), "a b");
    }
}
