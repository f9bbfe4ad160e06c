//! Hints: lines of fake-pi's own (`fake-pi: hint: ...`, `fake-pi: warning: ...`) that say
//! what to do where the imitated CLI's own message leaves a user guessing: a flag newer than
//! the cassette's release, a cassette of the other agent, stdin left open, a cassette of an
//! unverified (newer than pinned) release, Codex's last thread not kept. They are for the
//! person reading a failed test, not for the program under test: they go to
//! `FAKE_PI_REPORT` (which the pytest plugin and the Node helper show), and on stderr only
//! when asked (`FAKE_PI_HINTS=1`). By default fake-pi's stdout and stderr are the
//! recording's, byte for byte (or the real CLI's own refusal); `FAKE_PI_HINTS=0` is accepted
//! and means the default. They never touch stdout.

use std::sync::mpsc;
use std::time::Duration;

use pi_cassette::Header;
use pi_grammar::claude::{self, Claude};
use pi_grammar::{Grammar, KNOWN_VERSIONS};

use crate::environ;

/// The variable that puts hints on stderr too (`1`).
pub(crate) const HINTS_ENV: &str = "FAKE_PI_HINTS";
/// How long stdin may stay open before its hint, in milliseconds.
pub(crate) const STDIN_HINT_ENV: &str = "FAKE_PI_HINT_STDIN_MS";
/// The wait before the stdin hint when [`STDIN_HINT_ENV`] does not say.
const STDIN_HINT_DEFAULT: Duration = Duration::from_secs(3);

/// Hints are said on stderr only with `FAKE_PI_HINTS=1`.
fn on_stderr() -> bool {
    environ::var(HINTS_ENV).is_some_and(|v| v.trim() == "1")
}

/// Say one hint line (already prefixed): kept for the report, and on stderr when asked.
fn say(line: &str) {
    if on_stderr() {
        crate::exit::say(line);
    } else {
        crate::report::note(line);
    }
}

/// The one warning line of a cassette of a release newer than every pinned one.
pub(crate) fn unverified(header: &Header) {
    if let Some(w) = header.pi.unverified_warning() {
        say(&format!("fake-pi: {w}"));
    }
}

/// `codex exec resume --last` with `CODEX_HOME` unset: no last thread is kept there.
pub(crate) fn codex_resume_last_without_home() {
    say("fake-pi: hint: `codex exec resume --last` with CODEX_HOME unset: fake-pi keeps the last thread only in a CODEX_HOME it is given (never in ~/.codex), so this run announces a new thread; set CODEX_HOME to a directory of the test's own");
}

/// The file that keeps Codex's last thread (`path`) cannot be read or written (`problem`).
pub(crate) fn codex_last_thread(path: &std::path::Path, problem: &str) {
    say(&format!(
        "fake-pi: warning: {}: {problem}: `codex exec resume --last` cannot continue the last thread (remove it)",
        path.display()
    ));
}

/// After pi's unknown-option error (`stderr`, as printed): for each flag the cassette's
/// release lacks but a later one has, the release that added it.
pub(crate) fn newer_pi_flags(header: &Header, grammar: &Grammar, stderr: &str) {
    for name in unknown_pi_options(stderr) {
        let Some(since) = pi_grammar::flag_since(&name) else {
            continue;
        };
        if since <= grammar.release() {
            continue;
        }
        let pinned = KNOWN_VERSIONS
            .iter()
            .filter_map(|k| pi_grammar::Version::parse(k))
            .find(|k| *k >= since);
        let record_on =
            pinned.map_or_else(|| "a newer pi".to_string(), |p| format!("pi {p} (pinned)"));
        say(&format!(
            "fake-pi: hint: the cassette is of pi {}, which has no {name}: pi {since} is the first release with it. Record the cassette on {record_on}, or drop the flag",
            header.pi.version
        ));
    }
}

/// The flags named by pi's `Unknown option: X` / `Unknown options: X, Y` lines.
fn unknown_pi_options(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter_map(|l| {
            l.strip_prefix("Error: Unknown options: ")
                .or_else(|| l.strip_prefix("Error: Unknown option: "))
        })
        .flat_map(|names| names.split(", ").map(str::to_string))
        .collect()
}

/// A pi cassette, and a command line with flags pi does not know that Claude Code reads
/// whole: the cassette is of the other agent. Said before pi reads stdin (which a Claude
/// Code host keeps open).
pub(crate) fn claude_argv_for_pi(
    header: &Header,
    unknown: &[(String, Option<String>)],
    argv: &[String],
) {
    // An option of Claude Code's that no pi has (not `--model=x`, pi's own flag spelled
    // another way, nor 0.73.1's `--`).
    let pi = Grammar::newest_pinned();
    let Some((name, _)) = unknown
        .iter()
        .find(|(n, _)| !n.is_empty() && claude::knows(n) && !pi.has_flag(&format!("--{n}")))
    else {
        return;
    };
    if claude::parse(argv, false).is_err() {
        return;
    }
    say(&format!(
        "fake-pi: hint: this command line is Claude Code's (--{name}), and the cassette is pi's (pi {}, {}): give it a Claude Code cassette (`mode: \"stream-json\"`), or run the host as pi",
        header.pi.version,
        header.scenario.name
    ));
}

/// A cassette that is not Codex's (`whose`: `pi's (pi 0.87.1, NAME)`), and a command line
/// that is Codex's (`codex exec ...`, read whole by Codex's grammar): the cassette is of the
/// other agent.
pub(crate) fn codex_argv_for_other(whose: &str, argv: &[String]) {
    let first = argv.iter().find(|a| !a.starts_with('-'));
    if !matches!(first.map(String::as_str), Some("exec" | "e")) {
        return;
    }
    if pi_grammar::codex::Codex::latest().parse(argv).is_err() {
        return;
    }
    say(&format!(
        "fake-pi: hint: this command line is Codex's (codex exec), and the cassette is {whose}: give it a Codex cassette (`\"codex\": {{\"dialect\": \"exec-json\"}}`), or run the host as that agent"
    ));
}

/// A Codex cassette, and a command line Codex refused that pi or Claude Code reads whole:
/// the cassette is of the other agent.
pub(crate) fn other_agent_for_codex(header: &Header, argv: &[String]) {
    let pi_reads_it = Grammar::newest_pinned()
        .parse(argv)
        .is_ok_and(|p| p.unknown_flags.is_empty());
    let agent = if pi_reads_it {
        "pi's"
    } else if claude::parse(argv, false).is_ok() {
        "Claude Code's"
    } else {
        return;
    };
    say(&format!(
        "fake-pi: hint: this command line is {agent}, and the cassette is Codex's (Codex {}, {}): give it a cassette of that agent, or run the host as codex",
        header.pi.version, header.scenario.name
    ));
}

/// A Gemini CLI cassette, and a command line Gemini refused for options it does not know
/// that pi, Claude Code or Codex reads whole: the cassette is of the other agent.
pub(crate) fn other_agent_for_gemini(header: &Header, argv: &[String]) {
    let pi_reads_it = Grammar::newest_pinned()
        .parse(argv)
        .is_ok_and(|p| p.unknown_flags.is_empty());
    let first = argv.iter().find(|a| !a.starts_with('-'));
    let agent = if pi_reads_it {
        "pi's"
    } else if claude::parse(argv, false).is_ok() {
        "Claude Code's"
    } else if matches!(first.map(String::as_str), Some("exec" | "e"))
        && pi_grammar::codex::Codex::latest().parse(argv).is_ok()
    {
        "Codex's (codex exec)"
    } else {
        return;
    };
    say(&format!(
        "fake-pi: hint: this command line is {agent}, and the cassette is Gemini CLI's (Gemini CLI {}, {}): give it a cassette of that agent, or run the host as gemini",
        header.pi.version, header.scenario.name
    ));
}

/// After Claude Code refused the command line (`stderr`, as printed): the agent the command
/// line is written for when it is pi's, and an option only a later release has.
pub(crate) fn after_claude_refusal(header: &Header, cli: &Claude, argv: &[String], stderr: &str) {
    codex_argv_for_other(
        &format!(
            "Claude Code's (Claude Code {}, {})",
            header.pi.version, header.scenario.name
        ),
        argv,
    );
    let Some(option) = stderr
        .strip_prefix("error: unknown option '")
        .and_then(|r| r.split('\'').next())
    else {
        return;
    };
    let pi_reads_it = Grammar::newest_pinned()
        .parse(argv)
        .is_ok_and(|p| p.unknown_flags.is_empty());
    if pi_reads_it {
        say(&format!(
            "fake-pi: hint: this command line is pi's ({option}), and the cassette is Claude Code's (Claude Code {}, {}): give it a pi cassette, or run the host as Claude Code",
            header.pi.version, header.scenario.name
        ));
        return;
    }
    if cli.borrowed().is_none() {
        if let Some(line) =
            newer_claude_option(cli.version(), option, claude::first_release_with(option))
        {
            say(&line);
        }
    }
}

/// The hint for `option`, refused by Claude Code `version`, when `first` (the oldest measured
/// release that takes it) is later.
fn newer_claude_option(version: &str, option: &str, first: Option<&str>) -> Option<String> {
    let newer = |f: &str| {
        pi_grammar::Version::parse(f)
            .zip(pi_grammar::Version::parse(version))
            .is_some_and(|(f, v)| f > v)
    };
    let first = first.filter(|f| newer(f))?;
    Some(format!(
        "fake-pi: hint: the cassette is of Claude Code {version}, which has no {option}: Claude Code {first} is the first release with it. Record the cassette on it, or drop the option"
    ))
}

/// Watches pi's read of piped stdin: when it is still open after the delay, one hint.
/// Dropping the watch (stdin read to its end) ends it quietly, and waits for its thread: the
/// hint, if it is being said, is said (and in the report) before the replay goes on.
pub(crate) struct StdinWatch {
    done: Option<mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for StdinWatch {
    fn drop(&mut self) {
        drop(self.done.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Start watching the stdin read of a json-mode replay of `header`.
pub(crate) fn watch_stdin(header: &Header) -> StdinWatch {
    let delay = environ::var(STDIN_HINT_ENV)
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map_or(STDIN_HINT_DEFAULT, Duration::from_millis);
    let e = &header.expect;
    let prompt_in_argv = match (&e.prompt, &e.argv_messages) {
        (Some(p), Some(m)) => m.first() == Some(p),
        _ => false,
    };
    let agent = header.agent_name();
    let what = if prompt_in_argv {
        format!("the recording's prompt was on the command line: give {agent} </dev/null or close its stdin")
    } else {
        "the recording's prompt came on stdin: close stdin after writing it".to_string()
    };
    let line = format!(
        "fake-pi: hint: stdin is still open after {} ms; {agent} reads piped stdin to its end before it runs, so it waits ({what})",
        delay.as_millis()
    );
    let (tx, rx) = mpsc::channel::<()>();
    let started = crate::signals::spawn_thread("stdin-hint", move || {
        if rx.recv_timeout(delay) == Err(mpsc::RecvTimeoutError::Timeout) {
            say(&line);
        }
    });
    StdinWatch {
        done: Some(tx),
        thread: started.ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claude_option_of_a_later_release_names_it() {
        // (The measured releases take the same options today: the rule, on made-up data.)
        assert_eq!(
            newer_claude_option("2.1.330", "--brief", Some("2.1.332")).as_deref(),
            Some("fake-pi: hint: the cassette is of Claude Code 2.1.330, which has no --brief: Claude Code 2.1.332 is the first release with it. Record the cassette on it, or drop the option")
        );
        assert_eq!(
            newer_claude_option("2.1.332", "--brief", Some("2.1.330")),
            None
        );
        assert_eq!(
            newer_claude_option("2.1.330", "--brief", Some("2.1.330")),
            None
        );
        assert_eq!(newer_claude_option("2.1.330", "--bogus", None), None);
        // Compared as numbers, not text.
        assert!(newer_claude_option("2.1.9", "--x", Some("2.1.10")).is_some());
    }

    #[test]
    fn unknown_options_are_read_off_pis_lines() {
        assert_eq!(
            unknown_pi_options(
                "Error: Unknown option: --a\nError: Unknown options: --b, -c\nother\n"
            ),
            ["--a", "--b", "-c"]
        );
        assert!(unknown_pi_options("Error: --mode requires text, json, or rpc\n").is_empty());
    }
}
