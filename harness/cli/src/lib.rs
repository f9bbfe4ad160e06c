//! The `pi-harness` command: argument parsing, rendering, exit statuses.
//!
//! `main.rs` is one line; [`main`] parses (clap) and dispatches to the library crates. Each
//! command with logic of its own lives in a module here so that it can be tested without a
//! process: [`run`] (the reference provider from a shell), [`map`] (the mapper over captured
//! stdout or a cassette), [`render`] (the human rendering of the normalized stream),
//! [`cassette_cmd`] (`cassette import` and `lint`), [`show`] (`cassette show`: what a
//! cassette expects and how to replay it), [`leftovers`] (the leftover-process check),
//! [`serve_llm`] (the scripted LLM server).
//! This module owns what they share: exit statuses, the one-line user error, duration and
//! `K=V` parsing, and turning clap's errors into one line.
//!
//! ```
//! use std::time::Duration;
//! use pi_harness::{parse_duration, parse_env_pair};
//!
//! assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
//! assert!(parse_duration("5x").unwrap_err().contains("a duration like 500ms"));
//! assert_eq!(parse_env_pair("A=b=c"), Ok(("A".into(), "b=c".into())));
//! ```

mod app;
pub mod cassette_cmd;
pub mod leftovers;
pub mod map;
pub mod render;
pub mod run;
pub mod serve_llm;
pub mod show;

pub use app::main;

use std::time::Duration;

/// The run completed (`terminal.completed`); `map` read its whole input.
pub const EXIT_OK: i32 = 0;
/// The run failed (`terminal.failed`, except `invalid_request`).
pub const EXIT_FAILED: i32 = 1;
/// Usage or input error: bad flag, missing file, malformed cassette, pi not found, a request
/// this pi version would reject.
pub const EXIT_USAGE: i32 = 2;
/// The run was cancelled: Ctrl-C (SIGINT), SIGTERM, SIGHUP or `--cancel-after`.
pub const EXIT_CANCELLED: i32 = 130;

/// An error the user can do something about: printed as one line `error: ...`, never with
/// a backtrace (`RUST_BACKTRACE=1`, common in CI, is for panics).
#[derive(Debug)]
pub struct CliError {
    pub message: String,
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

pub(crate) fn one_line(s: &str) -> String {
    s.split('\n')
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Handle a clap parse error: help and version are printed as clap prints them; every other
/// error becomes one line naming the flag or value, with a pointer to `--help`. Never returns.
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

/// The longest duration any option takes: 30 days (a deadline past it is a typo, and
/// adding it to the clock must not overflow).
pub const MAX_DURATION: Duration = Duration::from_secs(30 * 24 * 3600);

/// `500ms`, `2s`, `1.5s`, `1m`, `1h` -> a duration, at most [`MAX_DURATION`].
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let bad = || format!("expected a duration like 500ms, 2s, 1.5s or 1m, found {text:?}");
    let value: f64 = num.parse().map_err(|_| bad())?;
    let secs = match unit {
        "ms" => value / 1000.0,
        "s" => value,
        "m" => value * 60.0,
        "h" => value * 3600.0,
        _ => return Err(bad()),
    };
    let d = Duration::try_from_secs_f64(secs).map_err(|_| bad())?;
    if d > MAX_DURATION {
        return Err(format!(
            "{text:?} is longer than 30 days (the most any option takes)"
        ));
    }
    Ok(d)
}

/// `K=V` -> `(K, V)`; the name must be non-empty and hold no `=`.
pub fn parse_env_pair(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((k, v)) if !k.is_empty() && !k.contains('\0') && !v.contains('\0') => {
            Ok((k.to_string(), v.to_string()))
        }
        _ => Err(format!("expected NAME=VALUE, found {text:?}")),
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// Any text: a duration of at most 30 days or an error naming the text; no panic.
        #[test]
        fn any_duration_text(text in "\\PC{0,24}|[0-9.e+-]{0,30}(ms|s|m|h)?") {
            match parse_duration(&text) {
                Ok(d) => proptest::prop_assert!(d <= MAX_DURATION),
                Err(e) => {
                    let shown = format!("{:?}", text);
                    proptest::prop_assert!(e.contains(&shown), "{} lacks {}", e, shown)
                }
            }
        }
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("720h"), Ok(MAX_DURATION));
        for long in ["721h", "10000000000000000000s", "1e400s"] {
            assert!(parse_duration(long).is_err(), "{long}");
        }
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("1m"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_duration("0s"), Ok(Duration::ZERO));
        for bad in ["", "5", "ms", "5x", "-1s", "1..2s", "s5"] {
            let e = parse_duration(bad).unwrap_err();
            assert!(e.contains(&format!("{bad:?}")), "{bad}: {e}");
        }
    }

    #[test]
    fn env_pairs() {
        assert_eq!(parse_env_pair("A=b=c"), Ok(("A".into(), "b=c".into())));
        assert_eq!(parse_env_pair("A="), Ok(("A".into(), String::new())));
        assert!(parse_env_pair("=x").is_err());
        assert!(parse_env_pair("AB").unwrap_err().contains("NAME=VALUE"));
    }

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
