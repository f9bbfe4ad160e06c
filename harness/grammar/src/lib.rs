//! Real pi's command line per version, as data: how pi reads argv and joins the prompt.
//!
//! This crate owns the facts about how pi reads its argv: which flags exist in which
//! version, their short aliases, which take a value, how `-p` swallows the next argument,
//! how `--` ends option parsing (0.87.1 only), what happens to `--flag=value` and to
//! unknown flags, the diagnostics pi prints (`Error: Unknown option: --x`, exit 1), where
//! `--version` and `--help` print, and how piped stdin is joined with the argv messages.
//! It is pure (std only, no I/O): fake-pi imitates pi with it, the reference provider
//! builds argv with it, the recorder reads a recorded command line with it.
//!
//! The facts come from reading pi's `dist/cli/args.js`, `dist/main.js` and
//! `dist/cli/initial-message.js` and were confirmed by running real pi (see the tests and
//! fake-pi's `real_pi_parity` test).
//!
//! Real pi checks the command line in stages, and the stage decides what else happened
//! before the error. [`Grammar::parse`] is stage 1 (per-argument diagnostics; errors exit
//! 1 before stdin is read). `--version` comes next, then [`ParsedArgs::validate`] (flag
//! combinations, `--session-id` syntax), then `--help`, then pi reads stdin, and only then
//! [`ParsedArgs::unknown_flags_error`] reports unknown long flags (pi first offers them to
//! extensions). So `pi --bogus` with a stdin pipe left open hangs until stdin closes.
//!
//! ```
//! use pi_grammar::Grammar;
//!
//! let argv: Vec<String> = ["--mode", "json", "-p", "--model", "m", "--thinking", "max", "hi"]
//!     .iter().map(|s| s.to_string()).collect();
//!
//! // 0.87.1 knows `max`; 0.73.1 warns and drops it, as real pi does.
//! let p87 = Grammar::for_version("0.87.1").unwrap().parse(&argv).unwrap();
//! assert_eq!(p87.value("--thinking"), Some("max"));
//! let p73 = Grammar::for_version("0.73.1").unwrap().parse(&argv).unwrap();
//! assert_eq!(p73.value("--thinking"), None);
//! assert!(p73.warnings_text().starts_with("Warning: Invalid thinking level \"max\""));
//!
//! // What pi sends as the first prompt: trimmed stdin, then the first message, no separator.
//! let stdin = pi_grammar::stdin_content(b"  Read this: \n");
//! assert_eq!(pi_grammar::join_prompt(stdin.as_deref(), &p87.messages).as_deref(), Some("Read this:hi"));
//! ```
//!
//! The rooms, each depending only on rooms named after it:
//!
//! - `effective`: what pi would do with a command line ([`Effective`], from the flags,
//!   the agent dir's settings and pi's defaults);
//! - `validate`: the checks after stage 1 ([`ParsedArgs::validate`],
//!   [`Grammar::runtime_errors`]);
//! - `output`: the run mode ([`AppMode`]) and where `--version` and `--help` print;
//! - `parse`: stage 1, argv to [`ParsedArgs`] ([`Grammar::parse`]);
//! - `grammar`: one pinned version's grammar ([`Grammar`]), its flags and help text;
//! - `flags`: every flag pi has had, as data ([`FlagSpec`]);
//! - `version`: the pinned versions, the behaviours that changed between them
//!   ([`Feature`]) and pi's message texts;
//! - `rejection`: what pi prints about a command line ([`Diagnostic`]) and when it
//!   refuses one ([`Rejection`]);
//! - `session`: session file names and the session ids pi accepts;
//! - `prompt`: piped stdin and the first prompt ([`stdin_content`], [`join_prompt`]);
//! - [`agents`]: the registry of the agent CLIs, one [`Agent`] and one row of data
//!   ([`AgentSpec`]) each (names, the header key, dialects, pinned releases and their tags,
//!   install facts, the version probe, variables, placeholders, the process shape);
//! - [`codex`]: Codex CLI's releases (`codex exec --json`);
//! - [`gemini`]: Gemini CLI's releases (`gemini -p ... --output-format stream-json`);
//! - [`claude`]: Claude Code's command line per release, on its own: the data in
//!   `data/claude/VERSION/` (written by `scripts/claude-grammar.sh` from the CLI, embedded at
//!   build time; a new release is a new directory), read as its parser (commander) reads argv.

pub mod claude;
pub mod codex;
pub mod gemini;

pub mod agents;

mod effective;
mod flags;
mod grammar;
mod output;
mod parse;
mod prompt;
mod rejection;
mod session;
mod validate;
mod version;

#[cfg(test)]
mod tests;

pub use agents::{Agent, AgentSpec};
pub use effective::{AgentSettings, Effective, DEFAULT_THINKING, DEFAULT_TOOLS};
pub use flags::{flag_since, FlagKind, FlagSpec};
pub use grammar::{Grammar, WireDialect};
pub use output::{AppMode, Stream};
pub use parse::{tool_list_error, FlagValues, ParsedArgs};
pub use prompt::{join_prompt, stdin_content};
pub use rejection::{Diagnostic, Rejection};
pub use session::{
    cwd_slug, is_file_safe_session_id, is_valid_session_id, session_file_name, MAX_SESSION_ID_BYTES,
};
pub use version::{
    since, texts, Feature, Version, COMMANDS, FEATURES, KNOWN_VERSIONS, THINKING_LEVELS,
};
