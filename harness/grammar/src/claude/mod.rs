//! Claude Code's command line per release, as data: every option its parser takes (the
//! help's and hidden ones), how each reads its value, the choices it names and the values it
//! takes, its `--version` and `--help` output, and the checks the CLI makes before it reads
//! stdin, with its exact diagnostics (commander's `error: ...` lines while parsing,
//! `Error: ...` lines for the later checks; all exit 1 with nothing on stdout).
//!
//! The data is `data/claude/VERSION/` in this crate (`version.txt`, `help.txt`, `grammar.tsv`;
//! the format in `data/claude/README.md`), written by `scripts/claude-grammar.sh` from an
//! installed CLI and embedded at build time. Supporting a new release is a data change: run
//! the script on it and commit the directory. A version with no data is read with the newest
//! release not newer than it ([`Claude::nearest`]), as pi's grammar does for pi.
//!
//! ```
//! use pi_grammar::claude::{Claude, Stop};
//!
//! let cc = Claude::nearest("2.1.330");
//! let argv: Vec<String> = ["-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose"]
//!     .iter().map(|s| s.to_string()).collect();
//! let parsed = cc.parse(&argv, false).unwrap();
//! assert_eq!(parsed.value("input-format"), Some("stream-json"));
//! assert!(parsed.has("verbose"));
//!
//! let argv: Vec<String> = ["-p", "--output-format", "stream-json", "hi"].iter().map(|s| s.to_string()).collect();
//! let Err(Stop { stderr, code, .. }) = cc.parse(&argv, false) else { panic!() };
//! assert_eq!(stderr, "Error: When using --print, --output-format=stream-json requires --verbose\n");
//! assert_eq!(code, 1);
//! ```

use std::collections::BTreeMap;

use crate::Version;

mod checks;
mod commander;
mod data;

pub use data::{Check, ClaudeOption, OptionKind, Release};

/// One release's command line (see the module docs): a measured release's own, or, for a
/// release newer than every measured one, the newest measured release's borrowed
/// (*unverified*: it answers `--version` as itself, everything else as the release it
/// borrowed from).
#[derive(Debug, Clone, Copy)]
pub struct Claude {
    release: &'static Release,
    /// The newer release this one stands for, when unverified.
    claimed: Option<Version>,
}

/// The measured releases, oldest first (`2.1.330`): Claude Code's row of the registry
/// ([`crate::agents`]).
pub fn known_versions() -> Vec<&'static str> {
    crate::Agent::Claude.spec().versions()
}

/// The version at the start of `claude --version`'s line (`2.1.330 (Claude Code)`), or of a
/// bare version.
fn leading_version(v: &str) -> Option<Version> {
    Version::parse(v.split_whitespace().next().unwrap_or(""))
}

impl Claude {
    /// The release measured at exactly `version` (`2.1.330`, or `claude --version`'s line).
    pub fn for_version(version: &str) -> Option<Claude> {
        let v = version.split_whitespace().next().unwrap_or("");
        data::releases()
            .iter()
            .find(|r| r.version == v)
            .map(|release| Claude {
                release,
                claimed: None,
            })
    }

    /// A release newer than every measured one, read with the newest measured release and
    /// marked unverified ([`Claude::borrowed`]); `None` for a measured release, an older
    /// one or no version at all (those stay refused).
    pub fn unverified(version: &str) -> Option<Claude> {
        let want = crate::Agent::Claude
            .spec()
            .newer_than_pinned(version.split_whitespace().next().unwrap_or(""))?;
        Some(Claude {
            release: Claude::latest().release,
            claimed: Some(want),
        })
    }

    /// The grammar a cassette or a recording of `version` is read with: the measured
    /// release's own, else a newer release's borrowed one ([`Claude::unverified`]).
    pub fn measured_or_newer(version: &str) -> Option<Claude> {
        Claude::for_version(version).or_else(|| Claude::unverified(version))
    }

    /// The measured release whose data this one borrowed, when it is unverified.
    pub fn borrowed(&self) -> Option<&'static str> {
        self.claimed.map(|_| self.release.version)
    }

    /// The version this grammar answers as (`claude --version`): the release it stands
    /// for, newer than [`Claude::version`] when unverified.
    pub fn claimed_version(&self) -> String {
        match self.claimed {
            Some(v) => v.to_string(),
            None => self.release.version.to_string(),
        }
    }

    /// The release closest to any version: the newest measured one not newer than it, else
    /// the oldest (for a version with no data, or none at all).
    pub fn nearest(version: &str) -> Claude {
        let want = leading_version(version);
        let releases = data::releases();
        let pick = want.and_then(|w| {
            releases
                .iter()
                .rev()
                .find(|r| Version::parse(r.version).is_some_and(|k| k <= w))
        });
        Claude {
            release: pick.unwrap_or(&releases[0]),
            claimed: None,
        }
    }

    /// The newest measured release.
    pub fn latest() -> Claude {
        let releases = data::releases();
        Claude {
            release: &releases[releases.len() - 1],
            claimed: None,
        }
    }

    /// The measured release whose data this is (`2.1.330`; for an unverified grammar the
    /// release it borrowed, see [`Claude::claimed_version`]).
    pub fn version(&self) -> &'static str {
        self.release.version
    }

    /// What `claude --version` prints (`2.1.330 (Claude Code)` and a newline; an unverified
    /// grammar's own version in the measured release's line).
    pub fn version_line(&self) -> String {
        match self.claimed {
            Some(_) => {
                self.release
                    .version_line
                    .replacen(self.release.version, &self.claimed_version(), 1)
            }
            None => self.release.version_line.to_string(),
        }
    }

    /// What `claude --help` prints (as the CLI prints it to a pipe: 80 columns).
    pub fn help_text(&self) -> &'static str {
        self.release.help
    }

    /// Every option the parser takes.
    pub fn options(&self) -> &'static [ClaudeOption] {
        &self.release.options
    }

    /// The option spelled `flag` (`-p`, `--print`), or named `flag` (`print`).
    pub fn option(&self, flag: &str) -> Option<&'static ClaudeOption> {
        let dashed;
        let flag = if flag.starts_with('-') {
            flag
        } else {
            dashed = format!("--{flag}");
            &dashed
        };
        self.release.options.iter().find(|o| o.is(flag))
    }

    /// Read `argv` (without the program name) as this release does and make the checks it
    /// makes before it reads stdin. `stdout_tty`: a terminal stdout (a non-terminal one
    /// implies `--print`). `Err` is what the CLI prints instead (also for `--version` and
    /// `--help`).
    pub fn parse(&self, argv: &[String], stdout_tty: bool) -> Result<Parsed, Stop> {
        let parsed = commander::parse(self.release, argv).map_err(|mut stop| {
            // `--version` stops the parse with the release's line: an unverified grammar's own.
            if stop.code == 0 && stop.stdout == self.release.version_line {
                stop.stdout = self.version_line();
            }
            stop
        })?;
        checks::check(&parsed, stdout_tty)?;
        Ok(parsed)
    }
}

/// The option named `name` (without dashes, any of its spellings) in the newest release that
/// has it.
fn any_option(name: &str) -> Option<&'static ClaudeOption> {
    let flag = format!("--{}", name.trim_start_matches('-'));
    data::releases()
        .iter()
        .rev()
        .find_map(|r| r.options.iter().find(|o| o.is(&flag)))
}

/// The name [`Parsed::options`] keys an option by (its first long flag without dashes:
/// `allowedTools` for `--allowed-tools` too); `name` itself when no release knows it.
pub fn canonical(name: &str) -> String {
    any_option(name).map_or_else(|| name.to_string(), |o| o.name().to_string())
}

/// A command line as Claude Code reads it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Parsed {
    /// Option name ([`canonical`]) -> values, one per occurrence (a switch, or an optional
    /// value not given, has an empty one; a variadic option one per value).
    pub options: BTreeMap<String, Vec<String>>,
    /// Positional arguments (the prompt).
    pub prompt: Vec<String>,
}

impl Parsed {
    /// Whether the option (name without dashes, any spelling) was given.
    pub fn has(&self, name: &str) -> bool {
        self.options.contains_key(&canonical(name))
    }

    /// The last value given for `name`.
    pub fn value(&self, name: &str) -> Option<&str> {
        self.options
            .get(&canonical(name))
            .and_then(|v| v.last())
            .map(String::as_str)
    }

    /// The option as a cassette's `expect.flags` states it: `None` for a switch (or an
    /// optional value never given), else the value (the values of a variadic or repeated
    /// option joined with `\n`; see [`option_argv`]).
    pub fn flag_value(&self, name: &str) -> Option<String> {
        let opt = any_option(name)?;
        let values = self.options.get(opt.name())?;
        match opt.kind {
            k if !k.takes_value() => None,
            k if k.value_optional() && values.iter().all(String::is_empty) => None,
            _ => Some(values.join("\n")),
        }
    }

    /// Is the option a switch (takes no value)?
    pub fn is_switch(name: &str) -> bool {
        any_option(name).is_some_and(|o| !o.kind.takes_value())
    }
}

/// The arguments that give option `name` with `value` as [`Parsed::flag_value`] states it
/// (`None`: a switch): `--name`, then the value, or each value of a variadic option (an
/// optional value as `--name=value`).
pub fn option_argv(name: &str, value: Option<&str>) -> Vec<String> {
    let kind = any_option(name).map(|o| o.kind);
    match (value, kind) {
        (None, _) => vec![format!("--{name}")],
        (Some(v), Some(k)) if k.value_optional() => vec![format!("--{name}={v}")],
        (Some(v), Some(k)) if k.variadic() => std::iter::once(format!("--{name}"))
            .chain(v.split('\n').map(str::to_string))
            .collect(),
        (Some(v), _) => vec![format!("--{name}"), v.to_string()],
    }
}

/// The oldest measured release whose parser takes `flag` (`--from-pr`, `-p`), if any.
pub fn first_release_with(flag: &str) -> Option<&'static str> {
    data::releases()
        .iter()
        .find(|r| r.options.iter().any(|o| o.is(flag)))
        .map(|r| r.version)
}

/// Is `name` a long option (without dashes) some measured release knows?
pub fn knows(name: &str) -> bool {
    any_option(name).is_some()
}

/// What the CLI does instead of running: print this and exit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stop {
    /// What the CLI prints on stdout.
    pub stdout: String,
    /// What the CLI prints on stderr.
    pub stderr: String,
    /// Its exit status.
    pub code: i32,
}

fn error(stderr: String) -> Stop {
    Stop {
        stdout: String::new(),
        stderr,
        code: 1,
    }
}

/// [`Claude::parse`] with the newest measured release, for callers that do not know which
/// release they face.
pub fn parse(argv: &[String], stdout_tty: bool) -> Result<Parsed, Stop> {
    Claude::latest().parse(argv, stdout_tty)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    fn stderr(s: &str) -> String {
        parse(&argv(s), false).unwrap_err().stderr
    }

    #[test]
    fn the_measured_diagnostics() {
        // Each expected line is the real CLI's (notes of 2026-11-23, `badcl.txt`).
        assert_eq!(
            stderr("-p --input-format stream-json"),
            "Error: --input-format=stream-json requires output-format=stream-json.\n"
        );
        assert_eq!(
            stderr("-p --include-partial-messages hi"),
            "Error: --include-partial-messages requires --print and --output-format=stream-json.\n"
        );
        assert_eq!(
            stderr("-p --output-format stream-json --verbose --replay-user-messages hi"),
            "Error: --replay-user-messages requires both --input-format=stream-json and --output-format=stream-json.\n"
        );
        assert_eq!(
            stderr("-p --input-format xml hi"),
            "error: option '--input-format <format>' argument 'xml' is invalid. Allowed choices are text, stream-json.\n"
        );
        assert_eq!(
            stderr("-p --output-format yaml hi"),
            "error: option '--output-format <format>' argument 'yaml' is invalid. Allowed choices are text, json, stream-json.\n"
        );
        assert_eq!(
            stderr("-p --permission-mode sometimes hi"),
            "error: option '--permission-mode <mode>' argument 'sometimes' is invalid. Allowed choices are acceptEdits, auto, bypassPermissions, manual, dontAsk, plan.\n"
        );
        assert_eq!(
            stderr("-p --no-such-flag hi"),
            "error: unknown option '--no-such-flag'\n"
        );
        assert_eq!(
            stderr("-p --session-id not-a-uuid hi"),
            "Error: Invalid session ID. Must be a valid UUID.\n"
        );
    }

    #[test]
    fn a_headless_command_line_parses() {
        let p = parse(
            &argv("-p --input-format stream-json --output-format stream-json --verbose --include-partial-messages --permission-prompt-tool stdio"),
            false,
        )
        .unwrap();
        assert_eq!(p.value("permission-prompt-tool"), Some("stdio"));
        assert!(p.has("include-partial-messages") && p.prompt.is_empty());
        // A non-terminal stdout implies --print; a terminal one does not.
        let bare = argv("--output-format stream-json --include-partial-messages hi");
        assert!(parse(&bare, true).is_err());
        assert_eq!(
            parse(&bare, false).unwrap_err().stderr,
            "Error: When using --print, --output-format=stream-json requires --verbose\n"
        );
        // Variadic options eat the prompt, as the real CLI's do.
        let p = parse(&argv("-p --allowedTools Bash hi"), false).unwrap();
        assert_eq!(p.options["allowedTools"], ["Bash", "hi"]);
        assert!(p.prompt.is_empty());
        // Back to argv, values with spaces kept whole.
        let v = p.flag_value("allowedTools");
        assert_eq!(
            option_argv("allowedTools", v.as_deref()),
            ["--allowedTools", "Bash", "hi"]
        );
        let spaced: Vec<String> = ["-p", "--system-prompt", "be brief"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let p = parse(&spaced, false).unwrap();
        let v = p.flag_value("system-prompt");
        assert_eq!(
            option_argv("system-prompt", v.as_deref()),
            ["--system-prompt", "be brief"]
        );
        assert_eq!(
            parse(&argv("--version"), false).unwrap_err().stdout,
            Claude::latest().version_line()
        );
    }
}
