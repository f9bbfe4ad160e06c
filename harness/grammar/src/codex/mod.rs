//! Codex CLI (`codex exec --json`) per release, as data: the releases pinned, their command
//! line read from the help texts the CLI prints (`data/codex/VERSION/`, written by
//! `scripts/codex-grammar.sh`, embedded at build time: [`options`]), argv read as its parser
//! (clap) reads it, with clap's exact errors (exit 2, stderr) and `--help`/`--version` texts
//! ([`Codex::parse`]), where the prompt comes from ([`Codex::prompt`]: argv, stdin, both),
//! and what a call runs with ([`effective()`]: flags, then `-c` overrides, then the config
//! files, then the defaults). Pure, std only: reading `config.toml` is the caller's.
//!
//! ```
//! use pi_grammar::codex::{Codex, Command};
//!
//! let cx = Codex::latest();
//! let argv: Vec<String> = ["exec", "--json", "-m", "gpt-5", "-c", "sandbox_mode=\"read-only\"", "hi"]
//!     .iter().map(|s| s.to_string()).collect();
//! let parsed = cx.parse(&argv).unwrap();
//! assert_eq!(parsed.command, Command::Exec);
//! assert_eq!(parsed.value("model"), Some("gpt-5"));
//! assert_eq!(parsed.values("config"), ["sandbox_mode=\"read-only\""]);
//! assert_eq!(parsed.prompt.as_deref(), Some("hi"));
//!
//! let argv: Vec<String> = ["exec", "--bogus"].iter().map(|s| s.to_string()).collect();
//! let stop = cx.parse(&argv).unwrap_err();
//! assert_eq!(stop.code, 2);
//! assert!(stop.stderr.starts_with("error: unexpected argument '--bogus' found\n"));
//! ```

use std::collections::BTreeMap;
use std::sync::OnceLock;

use crate::Version;

mod clap;
mod effective;
pub mod options;

pub use effective::{
    effective, literal_override, override_layer, profile_name, split_override, Effective, Layer,
    Resolved, Source,
};
pub use options::{CodexOption, CommandSpec};

/// One release's texts, embedded: `--version`, `--help` of `codex`, `codex exec` (long and
/// short), `codex exec resume`, and `codex exec --version`.
struct Texts {
    version: &'static str,
    help: &'static str,
    exec_help: &'static str,
    exec_short_help: &'static str,
    resume_help: &'static str,
    exec_version: &'static str,
}

/// The measured releases' texts, oldest first (one per entry of `RELEASES`).
const TEXTS: &[Texts] = &[Texts {
    version: include_str!("../../data/codex/0.169.0/version.txt"),
    help: include_str!("../../data/codex/0.169.0/help.txt"),
    exec_help: include_str!("../../data/codex/0.169.0/exec-help.txt"),
    exec_short_help: include_str!("../../data/codex/0.169.0/exec-short-help.txt"),
    resume_help: include_str!("../../data/codex/0.169.0/exec-resume-help.txt"),
    exec_version: include_str!("../../data/codex/0.169.0/exec-version.txt"),
}];

/// Each release's commands read from its help texts, once.
struct Specs {
    top: CommandSpec,
    exec: CommandSpec,
    resume: CommandSpec,
}

fn specs(i: usize) -> &'static Specs {
    static ALL: OnceLock<Vec<Specs>> = OnceLock::new();
    &ALL.get_or_init(|| {
        TEXTS
            .iter()
            .map(|t| Specs {
                top: CommandSpec::from_help(t.help),
                exec: CommandSpec::from_help(t.exec_help),
                resume: CommandSpec::from_help(t.resume_help),
            })
            .collect()
    })[i]
}

/// Which command a command line runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// `codex exec`: a new session.
    Exec,
    /// `codex exec resume`: an earlier session continued.
    ExecResume,
    /// `codex` with no subcommand: the interactive TUI.
    Interactive,
    /// Any other subcommand (`login`, `exec review`, ...), by name.
    Other(String),
}

/// A command line as Codex read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parsed {
    /// The command it runs.
    pub command: Command,
    /// Every option given, by long name without dashes, with its values in order (a switch
    /// has one empty value); the top level's (`codex -c k=v exec`) and the subcommand's
    /// together, lists appended.
    pub options: BTreeMap<String, Vec<String>>,
    /// The PROMPT argument (`-` means stdin).
    pub prompt: Option<String>,
    /// `exec resume SESSION_ID`.
    pub session_id: Option<String>,
}

impl Parsed {
    /// Was the option named `long` given?
    pub fn has(&self, long: &str) -> bool {
        self.options.contains_key(long)
    }

    /// The option's (last) value.
    pub fn value(&self, long: &str) -> Option<&str> {
        self.options
            .get(long)
            .and_then(|v| v.last())
            .map(String::as_str)
            .filter(|v| !v.is_empty() || self.takes_value(long))
    }

    /// Every value of a repeatable option, in order.
    pub fn values(&self, long: &str) -> Vec<&str> {
        self.options
            .get(long)
            .map(|v| v.iter().map(String::as_str).collect())
            .unwrap_or_default()
    }

    fn takes_value(&self, long: &str) -> bool {
        let s = specs(0);
        [&s.top, &s.exec, &s.resume]
            .iter()
            .any(|c| c.long(long).is_some_and(CodexOption::takes_value))
    }
}

/// What the CLI prints instead of running, and its exit status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stop {
    /// On stdout (`--help`, `--version`).
    pub stdout: String,
    /// On stderr (clap's errors, the CLI's own).
    pub stderr: String,
    /// The exit status: 0 for help and version, 2 for clap's errors, 1 for the CLI's.
    pub code: i32,
}

/// Where a call's prompt comes from and what the CLI says about it on stderr.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PromptPlan {
    /// The prompt in argv; stdin is not read (a terminal).
    Argv(String),
    /// The prompt in argv, and stdin (not a terminal) read to its end and appended as a
    /// `<stdin>` block when not empty (the CLI says `Reading additional input from stdin...`).
    ArgvAndStdin(String),
    /// The prompt is all of stdin (PROMPT absent or `-`); `announce`: the CLI says
    /// `Reading prompt from stdin...` first (PROMPT absent).
    Stdin {
        /// Whether `Reading prompt from stdin...` is printed.
        announce: bool,
    },
}

/// The CLI's line when stdin gave no prompt (exit 1).
pub const NO_PROMPT_ON_STDIN: &str = "No prompt provided via stdin.\n";

/// The prompt Codex sends: the argv prompt, with piped stdin appended as a block, or stdin
/// alone (`None`: empty, the CLI's [`NO_PROMPT_ON_STDIN`]).
pub fn join_prompt(plan: &PromptPlan, stdin: &str) -> Option<String> {
    match plan {
        PromptPlan::Argv(p) => Some(p.clone()),
        PromptPlan::ArgvAndStdin(p) if stdin.trim().is_empty() => Some(p.clone()),
        PromptPlan::ArgvAndStdin(p) => Some(format!("{p}\n\n<stdin>\n{stdin}\n</stdin>")),
        PromptPlan::Stdin { .. } => Some(stdin.to_string()).filter(|s| !s.trim().is_empty()),
    }
}
/// The pinned releases, oldest first (`codex --version` prints `codex-cli 0.169.0`): Codex's
/// row of the registry ([`crate::agents`]).
const RELEASES: &[&str] = &crate::agents::versions_of(&crate::agents::codex::RELEASES);

/// The pinned releases, oldest first.
pub fn known_versions() -> Vec<&'static str> {
    RELEASES.to_vec()
}

/// One Codex release's command line: a pinned release's own, or the newest pinned one's
/// standing for a newer release (unverified).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Codex {
    release: &'static str,
    /// The newer release this one stands for, when unverified.
    claimed: Option<Version>,
}

impl Codex {
    /// The release pinned at exactly `version` (`0.169.0`, or `codex-cli 0.169.0`).
    pub fn for_version(version: &str) -> Option<Codex> {
        let v = version.trim().trim_start_matches("codex-cli ").trim();
        RELEASES.iter().find(|r| **r == v).map(|release| Codex {
            release,
            claimed: None,
        })
    }

    /// A release newer than every pinned one, read with the newest pinned release and
    /// marked unverified ([`Codex::borrowed`]); `None` otherwise.
    pub fn unverified(version: &str) -> Option<Codex> {
        let want = crate::Agent::Codex
            .spec()
            .newer_than_pinned(version.trim().trim_start_matches("codex-cli "))?;
        Some(Codex {
            release: Codex::latest().release,
            claimed: Some(want),
        })
    }

    /// The grammar a cassette or a recording of `version` is read with: the pinned
    /// release's own, else a newer release's borrowed one.
    pub fn pinned_or_newer(version: &str) -> Option<Codex> {
        Codex::for_version(version).or_else(|| Codex::unverified(version))
    }

    /// The newest pinned release.
    pub fn latest() -> Codex {
        Codex {
            release: RELEASES[RELEASES.len() - 1],
            claimed: None,
        }
    }

    /// The pinned release whose data this one borrowed, when it is unverified.
    pub fn borrowed(&self) -> Option<&'static str> {
        self.claimed.map(|_| self.release)
    }

    /// The pinned release whose data this is.
    pub fn version(&self) -> &'static str {
        self.release
    }

    fn index(&self) -> usize {
        RELEASES
            .iter()
            .position(|r| *r == self.release)
            .unwrap_or(0)
    }

    /// What `codex --version` prints: `codex-cli VERSION` (an unverified grammar's own
    /// version).
    pub fn version_line(&self) -> String {
        TEXTS[self.index()]
            .version
            .replacen(self.release, &self.claimed_version(), 1)
    }

    /// What `codex exec --help` prints.
    pub fn exec_help(&self) -> &'static str {
        TEXTS[self.index()].exec_help
    }

    /// The options of `codex exec`, as its help lists them.
    pub fn exec_options(&self) -> &'static [CodexOption] {
        &specs(self.index()).exec.options
    }

    /// The option of `codex exec` or `codex exec resume` named `long` (without dashes).
    pub fn option(&self, long: &str) -> Option<&'static CodexOption> {
        let s = specs(self.index());
        s.exec.long(long).or_else(|| s.resume.long(long))
    }

    /// Read `argv` (without the program name) as this release does. `Err`: what it prints
    /// instead of running (clap's errors, exit 2; `--help` and `--version`, exit 0).
    pub fn parse(&self, argv: &[String]) -> Result<Parsed, Stop> {
        let t = &TEXTS[self.index()];
        let s = specs(self.index());
        let version = self.version_line();
        let exec_version = t
            .exec_version
            .replacen(self.release, &self.claimed_version(), 1);
        clap::parse(
            &clap::Texts {
                top: &s.top,
                exec: &s.exec,
                resume: &s.resume,
                top_help: t.help,
                exec_help: t.exec_help,
                exec_short_help: t.exec_short_help,
                resume_help: t.resume_help,
                version_line: &version,
                exec_version_line: &exec_version,
            },
            argv,
        )
    }

    /// Where the prompt of `parsed` comes from, given whether stdin is a terminal; `Err`:
    /// the CLI's answer when there is none (`No prompt provided. ...`, exit 1).
    pub fn prompt(&self, parsed: &Parsed, stdin_tty: bool) -> Result<PromptPlan, Stop> {
        match parsed.prompt.as_deref() {
            Some("-") => Ok(PromptPlan::Stdin { announce: false }),
            Some(p) if stdin_tty => Ok(PromptPlan::Argv(p.to_string())),
            Some(p) => Ok(PromptPlan::ArgvAndStdin(p.to_string())),
            None if stdin_tty => Err(Stop {
                stdout: String::new(),
                stderr: "No prompt provided. Either specify one as an argument or pipe the prompt into stdin.\n".into(),
                code: 1,
            }),
            None => Ok(PromptPlan::Stdin { announce: true }),
        }
    }

    /// The version this grammar answers as: the release it stands for.
    pub fn claimed_version(&self) -> String {
        match self.claimed {
            Some(v) => v.to_string(),
            None => self.release.to_string(),
        }
    }
}

#[cfg(test)]
mod tests;
