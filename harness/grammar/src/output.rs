//! Where pi's output goes: the run mode pi picks ([`AppMode`], from the flags and whether
//! stdin and stdout are terminals) and the stream `--version` and `--help` print on.

use crate::grammar::Grammar;
use crate::parse::ParsedArgs;
use crate::version::Feature;

/// Where pi writes a piece of output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

/// pi's run mode, decided from the flags and whether stdin/stdout are terminals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppMode {
    /// The terminal UI: none of the other modes applies.
    Interactive,
    /// The answer printed as text: `-p`, a piped stdin, or (newer versions) a piped stdout.
    Print,
    /// One prompt, events as JSON lines (`--mode json`).
    Json,
    /// Commands on stdin, responses and events on stdout (`--mode rpc`).
    Rpc,
}

impl ParsedArgs {
    /// The run mode pi picks.
    pub fn app_mode(&self, stdin_is_tty: bool, stdout_is_tty: bool, grammar: &Grammar) -> AppMode {
        match self.value("--mode") {
            Some("rpc") => return AppMode::Rpc,
            Some("json") => return AppMode::Json,
            _ => {}
        }
        let stdout_matters = grammar.has(Feature::PlainHelpOnStdout);
        if self.has("--print") || !stdin_is_tty || (stdout_matters && !stdout_is_tty) {
            AppMode::Print
        } else {
            AppMode::Interactive
        }
    }
}

impl Grammar {
    /// Where `--version` prints: with [`Feature::VersionOnStdout`] always on stdout; before,
    /// on stdout only in interactive mode, else on stderr (pi has already redirected
    /// console output).
    pub fn version_stream(&self, mode: AppMode) -> Stream {
        if self.has(Feature::VersionOnStdout) || mode == AppMode::Interactive {
            Stream::Stdout
        } else {
            Stream::Stderr
        }
    }

    /// Where `--help` prints: stdout in interactive mode; with
    /// [`Feature::PlainHelpOnStdout`] also when neither `-p` nor `--mode` was given;
    /// stderr otherwise.
    pub fn help_stream(&self, parsed: &ParsedArgs, mode: AppMode) -> Stream {
        let plain =
            self.has(Feature::PlainHelpOnStdout) && !parsed.has("--print") && !parsed.has("--mode");
        if mode == AppMode::Interactive || plain {
            Stream::Stdout
        } else {
            Stream::Stderr
        }
    }
}
