//! Claude Code's command line (2.1.330), as data: the options a headless host uses, which
//! take a value, their allowed choices, and the checks the CLI makes before it reads stdin,
//! with its exact diagnostics (measured with the real binary: commander's `error: ...`
//! lines for argument parsing, `Error: ...` lines for the later checks; all exit 1 with
//! nothing on stdout).
//!
//! ```
//! use pi_grammar::claude::{parse, Stop};
//!
//! let argv: Vec<String> = ["-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose"]
//!     .iter().map(|s| s.to_string()).collect();
//! let parsed = parse(&argv, false).unwrap();
//! assert_eq!(parsed.value("input-format"), Some("stream-json"));
//! assert!(parsed.has("verbose"));
//!
//! let argv: Vec<String> = ["-p", "--output-format", "stream-json", "hi"].iter().map(|s| s.to_string()).collect();
//! let Err(Stop { stderr, code, .. }) = parse(&argv, false) else { panic!() };
//! assert_eq!(stderr, "Error: When using --print, --output-format=stream-json requires --verbose\n");
//! assert_eq!(code, 1);
//! ```

use std::collections::BTreeMap;

/// `claude --version`.
pub const VERSION_LINE: &str = "2.1.330 (Claude Code)\n";

/// How an option is read: long name (without dashes), short alias, kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Switch,
    Value(Option<&'static [&'static str]>),
    /// Takes every following argument up to the next one starting with `-`.
    Variadic,
}

const OPTIONS: &[(&str, Option<char>, Kind)] = &[
    ("print", Some('p'), Kind::Switch),
    ("verbose", None, Kind::Switch),
    ("include-partial-messages", None, Kind::Switch),
    ("replay-user-messages", None, Kind::Switch),
    ("no-session-persistence", None, Kind::Switch),
    ("dangerously-skip-permissions", None, Kind::Switch),
    ("continue", Some('c'), Kind::Switch),
    ("fork-session", None, Kind::Switch),
    ("debug", Some('d'), Kind::Switch),
    ("help", Some('h'), Kind::Switch),
    ("version", Some('v'), Kind::Switch),
    (
        "input-format",
        None,
        Kind::Value(Some(&["text", "stream-json"])),
    ),
    (
        "output-format",
        None,
        Kind::Value(Some(&["text", "json", "stream-json"])),
    ),
    (
        "permission-mode",
        None,
        Kind::Value(Some(&[
            "acceptEdits",
            "auto",
            "bypassPermissions",
            "manual",
            "dontAsk",
            "plan",
        ])),
    ),
    ("permission-prompt-tool", None, Kind::Value(None)),
    ("permission-prompts", None, Kind::Value(None)),
    ("model", None, Kind::Value(None)),
    ("fallback-model", None, Kind::Value(None)),
    ("session-id", None, Kind::Value(None)),
    ("resume", Some('r'), Kind::Value(None)),
    ("max-turns", None, Kind::Value(None)),
    ("max-budget-usd", None, Kind::Value(None)),
    ("system-prompt", None, Kind::Value(None)),
    ("append-system-prompt", None, Kind::Value(None)),
    ("effort", None, Kind::Value(None)),
    ("settings", None, Kind::Value(None)),
    ("json-schema", None, Kind::Value(None)),
    ("allowedTools", None, Kind::Variadic),
    ("allowed-tools", None, Kind::Variadic),
    ("disallowedTools", None, Kind::Variadic),
    ("disallowed-tools", None, Kind::Variadic),
    ("tools", None, Kind::Variadic),
    ("add-dir", None, Kind::Variadic),
    ("mcp-config", None, Kind::Variadic),
];

/// A command line as Claude Code reads it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Parsed {
    /// Long name -> values (a switch has one empty value per occurrence).
    pub options: BTreeMap<String, Vec<String>>,
    /// Positional arguments (the prompt).
    pub prompt: Vec<String>,
}

impl Parsed {
    /// Whether the option (long name, without dashes) was given.
    pub fn has(&self, name: &str) -> bool {
        self.options.contains_key(name)
    }

    /// The last value given for `name`.
    pub fn value(&self, name: &str) -> Option<&str> {
        self.options
            .get(name)
            .and_then(|v| v.last())
            .map(String::as_str)
    }

    /// The option as a cassette's `expect.flags` states it: `None` for a switch, else the
    /// value (the values of a variadic option joined with `\n`; see [`option_argv`]).
    pub fn flag_value(&self, name: &str) -> Option<String> {
        let kind = OPTIONS.iter().find(|o| o.0 == name).map(|o| o.2)?;
        match kind {
            Kind::Switch => None,
            _ => self.options.get(name).map(|v| v.join("\n")),
        }
    }

    /// Is the option a switch (takes no value)?
    pub fn is_switch(name: &str) -> bool {
        OPTIONS.iter().any(|o| o.0 == name && o.2 == Kind::Switch)
    }
}

/// The arguments that give option `name` with `value` as [`Parsed::flag_value`] states it
/// (`None`: a switch): `--name`, then the value, or each value of a variadic option.
pub fn option_argv(name: &str, value: Option<&str>) -> Vec<String> {
    let mut argv = vec![format!("--{name}")];
    let variadic = OPTIONS.iter().any(|o| o.0 == name && o.2 == Kind::Variadic);
    match value {
        None => {}
        Some(v) if variadic => argv.extend(v.split('\n').map(str::to_string)),
        Some(v) => argv.push(v.to_string()),
    }
    argv
}

/// Is `name` a long option the CLI knows (without dashes)?
pub fn knows(name: &str) -> bool {
    OPTIONS.iter().any(|o| o.0 == name)
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

/// Read `argv` (without the program name) and make the checks the CLI makes before it
/// reads stdin. `stdout_tty`: a terminal stdout (a non-terminal one implies `--print`).
/// `Err` is what the CLI prints instead (also for `--version` and `--help`).
pub fn parse(argv: &[String], stdout_tty: bool) -> Result<Parsed, Stop> {
    let mut p = Parsed::default();
    let mut i = 0;
    let mut options_done = false;
    while i < argv.len() {
        let arg = &argv[i];
        i += 1;
        if options_done || !arg.starts_with('-') || arg == "-" {
            p.prompt.push(arg.clone());
            continue;
        }
        if arg == "--" {
            options_done = true;
            continue;
        }
        let (name, inline) = match arg.strip_prefix("--") {
            Some(long) => match long.split_once('=') {
                Some((n, v)) => (n.to_string(), Some(v.to_string())),
                None => (long.to_string(), None),
            },
            None => {
                let mut chars = arg[1..].chars();
                let c = chars.next().unwrap_or('-');
                match OPTIONS.iter().find(|o| o.1 == Some(c)) {
                    Some(o) if chars.as_str().is_empty() => (o.0.to_string(), None),
                    Some(o) => (o.0.to_string(), Some(chars.as_str().to_string())),
                    None => return Err(error(format!("error: unknown option '{arg}'\n"))),
                }
            }
        };
        let Some(&(long, _, kind)) = OPTIONS.iter().find(|o| o.0 == name) else {
            return Err(error(format!("error: unknown option '--{name}'\n")));
        };
        let values = p.options.entry(long.to_string()).or_default();
        match kind {
            Kind::Switch => values.push(String::new()),
            Kind::Value(choices) => {
                let v = match inline {
                    Some(v) => v,
                    None if i < argv.len() => {
                        i += 1;
                        argv[i - 1].clone()
                    }
                    None => {
                        return Err(error(format!(
                            "error: option '--{long} <value>' argument missing\n"
                        )))
                    }
                };
                if let Some(choices) = choices {
                    if !choices.contains(&v.as_str()) {
                        let what = match long {
                            "permission-mode" => "mode",
                            _ => "format",
                        };
                        return Err(error(format!(
                            "error: option '--{long} <{what}>' argument '{v}' is invalid. Allowed choices are {}.\n",
                            choices.join(", ")
                        )));
                    }
                }
                values.push(v);
            }
            Kind::Variadic => {
                if let Some(v) = inline {
                    values.push(v);
                }
                while i < argv.len() && !argv[i].starts_with('-') {
                    values.push(argv[i].clone());
                    i += 1;
                }
            }
        }
    }
    if p.has("version") {
        return Err(Stop {
            stdout: VERSION_LINE.into(),
            stderr: String::new(),
            code: 0,
        });
    }
    if p.has("help") {
        return Err(Stop {
            stdout: "Usage: claude [options] [command] [prompt]\n\nClaude Code (imitated by pi-harness's fake: only the headless options are known)\n".into(),
            stderr: String::new(),
            code: 0,
        });
    }
    let print = p.has("print") || !stdout_tty;
    let input = p.value("input-format").unwrap_or("text");
    let output = p.value("output-format").unwrap_or("text");
    if let Some(id) = p.value("session-id") {
        if !is_uuid(id) {
            return Err(error(
                "Error: Invalid session ID. Must be a valid UUID.\n".into(),
            ));
        }
    }
    if input == "stream-json" && output != "stream-json" {
        return Err(error(
            "Error: --input-format=stream-json requires output-format=stream-json.\n".into(),
        ));
    }
    if print && output == "stream-json" && !p.has("verbose") {
        return Err(error(
            "Error: When using --print, --output-format=stream-json requires --verbose\n".into(),
        ));
    }
    if p.has("include-partial-messages") && !(print && output == "stream-json") {
        return Err(error(
            "Error: --include-partial-messages requires --print and --output-format=stream-json.\n"
                .into(),
        ));
    }
    if p.has("replay-user-messages") && !(input == "stream-json" && output == "stream-json") {
        return Err(error("Error: --replay-user-messages requires both --input-format=stream-json and --output-format=stream-json.\n".into()));
    }
    Ok(p)
}

/// `8-4-4-4-12` hex digits.
fn is_uuid(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    parts.len() == 5
        && parts
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(p, n)| p.len() == n && p.bytes().all(|b| b.is_ascii_hexdigit()))
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
            VERSION_LINE
        );
    }
}
