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

pub mod claude;

use std::collections::BTreeMap;
use std::fmt;

mod effective;
mod version;

pub use effective::{AgentSettings, Effective, DEFAULT_THINKING, DEFAULT_TOOLS};

pub use version::{
    since, texts, Feature, Version, COMMANDS, FEATURES, KNOWN_VERSIONS, THINKING_LEVELS,
};

/// How a flag consumes argv.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlagKind {
    /// Takes no value.
    Switch,
    /// Takes the next argument as its value, whatever it looks like. When it is the last
    /// argument it is not recognised at all: a long spelling becomes an unknown flag, a
    /// short one an `Unknown option` error.
    Value,
    /// Like [`FlagKind::Value`], but may be repeated; every value is kept.
    Repeated,
    /// Takes the next argument only when it starts with neither `-` nor `@` (`--list-models`).
    OptionalValue,
}

/// One flag pi knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlagSpec {
    /// Long spelling, with the dashes (`--model`).
    pub long: &'static str,
    /// Short alias, with its dash (`-t`, `-nt`).
    pub short: Option<&'static str>,
    pub kind: FlagKind,
    /// The release that added the flag (no flag has been removed so far).
    pub since: Version,
}

const fn flag(
    long: &'static str,
    short: Option<&'static str>,
    kind: FlagKind,
    since: Version,
) -> FlagSpec {
    FlagSpec {
        long,
        short,
        kind,
        since,
    }
}

const V073: Version = Version::new(0, 73, 1);
const V087: Version = Version::new(0, 87, 1);

use FlagKind::{OptionalValue, Repeated, Switch, Value};

/// Every flag pi has had, with the release that added it (the first pinned version where
/// it was measured, when the CHANGELOG does not say). The value checks of `--mode`,
/// `--thinking`, `--print`, `--name`, `--use-theme`, `--tui-mode` and `--tools` are in
/// [`Grammar::parse`].
const FLAGS: &[FlagSpec] = &[
    flag("--help", Some("-h"), Switch, V073),
    flag("--version", Some("-v"), Switch, V073),
    flag("--mode", None, Value, V073),
    flag("--continue", Some("-c"), Switch, V073),
    flag("--resume", Some("-r"), Switch, V073),
    flag("--provider", None, Value, V073),
    flag("--model", None, Value, V073),
    flag("--api-key", None, Value, V073),
    flag("--system-prompt", None, Value, V073),
    flag("--append-system-prompt", None, Repeated, V073),
    flag("--name", Some("-n"), Value, V087),
    flag("--no-session", None, Switch, V073),
    flag("--session", None, Value, V073),
    flag("--session-id", None, Value, V087),
    flag("--fork", None, Value, V073),
    flag("--session-dir", None, Value, V073),
    flag("--models", None, Value, V073),
    flag("--no-tools", Some("-nt"), Switch, V073),
    flag("--no-builtin-tools", Some("-nbt"), Switch, V073),
    flag("--tools", Some("-t"), Value, V073),
    flag("--exclude-tools", Some("-xt"), Value, V087),
    flag("--thinking", None, Value, V073),
    flag("--print", Some("-p"), Switch, V073),
    flag("--export", None, Value, V073),
    flag("--extension", Some("-e"), Repeated, V073),
    flag("--no-extensions", Some("-ne"), Switch, V073),
    flag("--skill", None, Repeated, V073),
    flag("--prompt-template", None, Repeated, V073),
    flag("--theme", None, Repeated, V073),
    flag("--use-theme", None, Value, V087),
    flag("--no-skills", Some("-ns"), Switch, V073),
    flag("--no-prompt-templates", Some("-np"), Switch, V073),
    flag("--no-themes", None, Switch, V073),
    flag("--no-context-files", Some("-nc"), Switch, V073),
    flag("--list-models", None, OptionalValue, V073),
    flag("--tui-mode", None, Value, V087),
    flag("--verbose", None, Switch, V073),
    flag("--approve", Some("-a"), Switch, V087),
    flag("--no-approve", Some("-na"), Switch, V087),
    flag("--offline", None, Switch, V073),
    flag("--no-mcp", None, Switch, Version::new(1, 0, 4)),
];

/// The command-line grammar of one pi version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grammar {
    version: Version,
}

/// Where pi writes a piece of output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

/// pi's run mode, decided from the flags and whether stdin/stdout are terminals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppMode {
    Interactive,
    Print,
    Json,
    Rpc,
}

/// One line pi prints about its command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub error: bool,
    pub message: String,
}

impl Diagnostic {
    fn error(message: impl Into<String>) -> Self {
        Diagnostic {
            error: true,
            message: message.into(),
        }
    }
    fn warning(message: impl Into<String>) -> Self {
        Diagnostic {
            error: false,
            message: message.into(),
        }
    }
}

impl fmt::Display for Diagnostic {
    /// As pi prints it (without colour, which pi drops when stderr is not a terminal).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let prefix = if self.error { "Error" } else { "Warning" };
        write!(f, "{prefix}: {}", self.message)
    }
}

/// A command line real pi refuses: what it prints on stderr and its exit code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CliError {
    /// Exactly what pi writes to stderr, newline-terminated lines.
    pub stderr: String,
    pub exit_code: i32,
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (exit {})", self.stderr.trim_end(), self.exit_code)
    }
}

impl std::error::Error for CliError {}

fn render(diags: &[Diagnostic]) -> String {
    diags.iter().map(|d| format!("{d}\n")).collect()
}

/// A flag as given on the command line: its values in order (`None` for a switch, or for
/// `--list-models` without a pattern).
pub type FlagValues = Vec<Option<String>>;

/// What [`Grammar::parse`] understood.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParsedArgs {
    /// Known flags by long spelling (`--model`), whichever spelling was used. A flag whose
    /// value pi ignores (an invalid `--thinking` level, an invalid `--mode` on 0.73.1) is
    /// not recorded, as pi does not set it.
    pub flags: BTreeMap<String, FlagValues>,
    /// Positional messages, in order (including the one `-p` swallowed).
    pub messages: Vec<String>,
    /// `@file` arguments, without the `@`.
    pub file_args: Vec<String>,
    /// Unknown long flags in first-seen order (name without dashes, value if any); pi hands
    /// them to extensions and rejects them after reading stdin.
    pub unknown_flags: Vec<(String, Option<String>)>,
    /// Warnings pi prints before doing anything else (`Warning: Invalid thinking level ...`).
    pub warnings: Vec<Diagnostic>,
}

impl ParsedArgs {
    /// Whether the flag (long spelling) was given.
    pub fn has(&self, long: &str) -> bool {
        self.flags.contains_key(long)
    }

    /// The value pi uses for a flag: the last one given.
    pub fn value(&self, long: &str) -> Option<&str> {
        self.flags.get(long)?.last()?.as_deref()
    }

    /// Every value given for a flag, in order.
    pub fn values(&self, long: &str) -> Vec<&str> {
        self.flags
            .get(long)
            .map(|v| v.iter().filter_map(|x| x.as_deref()).collect())
            .unwrap_or_default()
    }

    /// The warnings as pi prints them to stderr before running.
    pub fn warnings_text(&self) -> String {
        render(&self.warnings)
    }

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

    /// Checks pi makes after `--version` and before `--help`: `--fork` and `--session-id`
    /// combined with other session flags, and the `--session-id` syntax (0.87.1).
    pub fn validate(&self) -> Result<(), CliError> {
        let fail = |message: String| {
            Err(CliError {
                stderr: format!("Error: {message}\n"),
                exit_code: 1,
            })
        };
        if self.has("--fork") {
            let conflicts = self.present(&["--session", "--continue", "--resume", "--no-session"]);
            if !conflicts.is_empty() {
                return fail(texts::fill(texts::FORK_CONFLICT, &[&conflicts.join(", ")]));
            }
        }
        if let Some(id) = self.value("--session-id") {
            let conflicts = self.present(&["--session", "--continue", "--resume"]);
            if !conflicts.is_empty() {
                return fail(texts::fill(
                    texts::SESSION_ID_CONFLICT,
                    &[&conflicts.join(", ")],
                ));
            }
            if !is_valid_session_id(id) {
                return fail(texts::SESSION_ID_SYNTAX.into());
            }
        }
        Ok(())
    }

    fn present<'a>(&self, names: &[&'a str]) -> Vec<&'a str> {
        names.iter().copied().filter(|n| self.has(n)).collect()
    }

    /// The error pi reports for unknown long flags, after it has read stdin.
    pub fn unknown_flags_error(&self) -> Option<CliError> {
        if self.unknown_flags.is_empty() {
            return None;
        }
        let names: Vec<String> = self
            .unknown_flags
            .iter()
            .map(|(n, _)| format!("--{n}"))
            .collect();
        let template = if names.len() == 1 {
            texts::UNKNOWN_OPTION
        } else {
            texts::UNKNOWN_OPTIONS
        };
        Some(CliError {
            stderr: format!("Error: {}\n", texts::fill(template, &[&names.join(", ")])),
            exit_code: 1,
        })
    }
}

/// What is wrong with a `--tools` value given as `spelling` (`--tools` or `-t`), as pi
/// (>= 1.1.0) words it: `+name`/`-name` modifiers mixed with plain names, or a modifier
/// with a `*` pattern. Entries are split on `,`, trimmed, and empty ones dropped first.
pub fn tool_list_error(spelling: &str, value: &str) -> Option<String> {
    let entries: Vec<&str> = value
        .split(',')
        .map(|s| s.trim_matches(is_js_whitespace))
        .filter(|s| !s.is_empty())
        .collect();
    let is_modifier = |e: &&str| e.starts_with('+') || e.starts_with('-');
    let modifiers: Vec<&str> = entries.iter().copied().filter(is_modifier).collect();
    if modifiers.is_empty() {
        return None;
    }
    if modifiers.len() < entries.len() {
        return Some(texts::fill(texts::TOOLS_MIXED, &[spelling]));
    }
    modifiers
        .iter()
        .find(|e| e.contains('*'))
        .map(|p| texts::fill(texts::TOOLS_MODIFIER_PATTERN, &[spelling, p]))
}

/// The directory name pi gives a working directory's sessions under
/// `<agent dir>/sessions`: `--<cwd without its leading '/', '/', '\' and ':' as '-'>--`.
pub fn cwd_slug(cwd: &str) -> String {
    let body: String = cwd
        .trim_start_matches('/')
        .chars()
        .map(|c| {
            if matches!(c, '/' | '\\' | ':') {
                '-'
            } else {
                c
            }
        })
        .collect();
    format!("--{body}--")
}

/// The file name pi gives a session: its start time (ISO, `:` and `.` as `-`), `_`, its id.
pub fn session_file_name(timestamp: &str, id: &str) -> String {
    let stamp: String = timestamp
        .chars()
        .map(|c| if c == ':' || c == '.' { '-' } else { c })
        .collect();
    format!("{stamp}_{id}.jsonl")
}

/// How `--mode json` writes assistant messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireDialect {
    /// Deltas plus two full snapshot copies of the partial message (0.73.1).
    SnapshotDelta,
    /// Deltas only.
    DeltaOnly,
}

/// The longest session id a cassette may carry, in bytes: with the time stamp, `_` and
/// `.jsonl` of [`session_file_name`] the name stays well under the 255 bytes a file name may
/// have. (pi sets no length of its own; its ids are 36-byte uuids.)
pub const MAX_SESSION_ID_BYTES: usize = 200;

/// Whether `id` is safe as the id part of a session file's name: pi's own syntax
/// ([`is_valid_session_id`]: no `/`, no NUL, no leading `.`) and at most
/// [`MAX_SESSION_ID_BYTES`]. A cassette's recorded ids are held to this before fake-pi
/// names a file after one.
pub fn is_file_safe_session_id(id: &str) -> bool {
    id.len() <= MAX_SESSION_ID_BYTES && is_valid_session_id(id)
}

/// pi 0.87.1's session id syntax: `^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$`.
pub fn is_valid_session_id(id: &str) -> bool {
    let b = id.as_bytes();
    let inner = |c: &u8| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-');
    match (b.first(), b.last()) {
        (Some(f), Some(l)) => {
            f.is_ascii_alphanumeric() && l.is_ascii_alphanumeric() && b.iter().all(inner)
        }
        _ => false,
    }
}

impl Grammar {
    /// The grammar of a pinned pi version as `pi --version` prints it; `None` when it is
    /// not one of [`KNOWN_VERSIONS`] (fake-pi imitates only measured versions).
    pub fn for_version(version: &str) -> Option<Grammar> {
        let v = Version::parse(version)?;
        KNOWN_VERSIONS
            .iter()
            .any(|k| Version::parse(k) == Some(v))
            .then_some(Grammar { version: v })
    }

    /// The grammar closest to any version string: the newest pinned version not newer
    /// than it, else the oldest. For driving a real pi whose exact version is not pinned.
    pub fn nearest(version: &str) -> Grammar {
        let want = Version::parse(version);
        let known = KNOWN_VERSIONS.iter().filter_map(|k| Version::parse(k));
        let pick = match want {
            Some(w) => known.clone().filter(|k| *k <= w).max(),
            None => None,
        };
        Grammar {
            version: pick
                .or_else(|| known.min())
                .expect("KNOWN_VERSIONS is not empty"),
        }
    }

    /// The version string (`0.73.1`).
    pub fn version(&self) -> &'static str {
        KNOWN_VERSIONS
            .iter()
            .find(|k| Version::parse(k) == Some(self.version))
            .expect("a grammar is made for a known version")
    }

    /// The version as a number triple.
    pub fn release(&self) -> Version {
        self.version
    }

    /// Whether this version has a behaviour (see [`FEATURES`]).
    pub fn has(&self, feature: Feature) -> bool {
        self.version >= since(feature)
    }

    /// The wire dialect this version's `--mode json` speaks.
    pub fn wire_dialect(&self) -> WireDialect {
        if self.has(Feature::DeltaOnlyWire) {
            WireDialect::DeltaOnly
        } else {
            WireDialect::SnapshotDelta
        }
    }

    /// Every flag this version knows.
    pub fn flags(&self) -> impl Iterator<Item = &'static FlagSpec> + '_ {
        FLAGS.iter().filter(move |f| f.since <= self.version)
    }

    /// The flag spelled `name` (long like `--tools`, or short like `-t`).
    pub fn flag(&self, name: &str) -> Option<&'static FlagSpec> {
        self.flags()
            .find(|f| f.long == name || f.short == Some(name))
    }

    /// Whether this version knows the flag (long or short spelling).
    pub fn has_flag(&self, name: &str) -> bool {
        self.flag(name).is_some()
    }

    /// The levels `--thinking` accepts.
    pub fn thinking_levels(&self) -> Vec<&'static str> {
        THINKING_LEVELS
            .iter()
            .filter(|(_, v)| *v <= self.version)
            .map(|(l, _)| *l)
            .collect()
    }

    /// Whether `--` ends option parsing. Before [`Feature::DoubleDash`], `--` is an unknown
    /// flag with an empty name, rejected as `Unknown option: --`.
    pub fn has_double_dash(&self) -> bool {
        self.has(Feature::DoubleDash)
    }

    /// The package/auth command argv starts with, if any (pi then does not run the agent).
    pub fn command<'a>(&self, args: &'a [String]) -> Option<&'a str> {
        let first = args.first()?;
        COMMANDS
            .iter()
            .any(|(c, v)| c == first && *v <= self.version)
            .then_some(first.as_str())
    }

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

    /// Parse argv (without the program name) as this pi version does. `Err` when pi
    /// prints an error and exits before reading stdin (the error text includes any
    /// warnings printed before it).
    pub fn parse(&self, args: &[String]) -> Result<ParsedArgs, CliError> {
        let double_dash = self.has(Feature::DoubleDash);
        let strict_mode = self.has(Feature::StrictMode);
        let tool_modifiers = self.has(Feature::ToolModifiers);
        let mut out = ParsedArgs::default();
        let mut diags: Vec<Diagnostic> = Vec::new();
        let set = |out: &mut ParsedArgs, long: &str, value: Option<String>| {
            let spec = self.flag(long).expect("flag in table");
            let entry = out.flags.entry(long.to_string()).or_default();
            if spec.kind != Repeated {
                entry.clear();
            }
            entry.push(value);
        };
        let mut i = 0;
        while i < args.len() {
            let arg = args[i].as_str();
            let next = args.get(i + 1).map(String::as_str);
            i += 1;
            if double_dash && arg == "--" {
                for rest in &args[i..] {
                    match rest.strip_prefix('@') {
                        Some(file) => out.file_args.push(file.to_string()),
                        None => out.messages.push(rest.clone()),
                    }
                }
                break;
            }
            if let Some(spec) = self.flag(arg) {
                let long = spec.long;
                match long {
                    "--mode" if strict_mode => match next {
                        None => diags.push(Diagnostic::error(texts::MODE_REQUIRED)),
                        Some(m) if m.starts_with('-') => {
                            diags.push(Diagnostic::error(texts::MODE_REQUIRED))
                        }
                        Some(m) => {
                            i += 1;
                            if matches!(m, "text" | "json" | "rpc") {
                                set(&mut out, long, Some(m.into()));
                            } else {
                                diags.push(Diagnostic::error(texts::fill(
                                    texts::MODE_INVALID,
                                    &[m],
                                )));
                            }
                        }
                    },
                    "--thinking" if next.is_some() => {
                        let level = next.unwrap();
                        i += 1;
                        if self.thinking_levels().contains(&level) {
                            set(&mut out, long, Some(level.into()));
                        } else {
                            diags.push(Diagnostic::warning(texts::fill(
                                texts::THINKING_INVALID,
                                &[level, &self.thinking_levels().join(", ")],
                            )));
                        }
                    }
                    "--mode" if next.is_some() => {
                        // 0.73.1: the value is consumed; an invalid one is silently ignored.
                        let m = next.unwrap();
                        i += 1;
                        if matches!(m, "text" | "json" | "rpc") {
                            set(&mut out, long, Some(m.into()));
                        }
                    }
                    "--tools" if tool_modifiers && next.is_some() => {
                        let value = next.unwrap();
                        i += 1;
                        match tool_list_error(arg, value) {
                            Some(problem) => diags.push(Diagnostic::error(problem)),
                            None => set(&mut out, long, Some(value.into())),
                        }
                    }
                    "--print" => {
                        set(&mut out, long, None);
                        if let Some(n) = next {
                            if !n.starts_with('@') && (!n.starts_with('-') || n.starts_with("---"))
                            {
                                out.messages.push(n.into());
                                i += 1;
                            }
                        }
                    }
                    "--name" => match next {
                        Some(n) => {
                            set(&mut out, long, Some(n.into()));
                            i += 1;
                        }
                        None => diags.push(Diagnostic::error(texts::NAME_REQUIRED)),
                    },
                    "--use-theme" => match next {
                        Some(n) if !n.starts_with('-') => {
                            set(&mut out, long, Some(n.into()));
                            i += 1;
                        }
                        _ => diags.push(Diagnostic::error(texts::THEME_REQUIRED)),
                    },
                    "--tui-mode" => match next {
                        Some(m @ ("regular" | "fullscreen")) => {
                            set(&mut out, long, Some(m.into()));
                            i += 1;
                        }
                        None => diags.push(Diagnostic::error(texts::TUI_MODE_REQUIRED)),
                        Some(m) if m.starts_with('-') => {
                            diags.push(Diagnostic::error(texts::TUI_MODE_REQUIRED))
                        }
                        Some(m) => {
                            i += 1;
                            diags.push(Diagnostic::error(texts::fill(
                                texts::TUI_MODE_INVALID,
                                &[m],
                            )));
                        }
                    },
                    _ => match (spec.kind, next) {
                        (Switch, _) => set(&mut out, long, None),
                        (Value | Repeated, Some(n)) => {
                            set(&mut out, long, Some(n.into()));
                            i += 1;
                        }
                        (OptionalValue, Some(n)) if !n.starts_with('-') && !n.starts_with('@') => {
                            set(&mut out, long, Some(n.into()));
                            i += 1;
                        }
                        (OptionalValue, _) => set(&mut out, long, None),
                        // A value flag with nothing after it is not recognised.
                        (Value | Repeated, None) => {
                            self.unrecognised(arg, next, &mut i, &mut out, &mut diags)
                        }
                    },
                }
                continue;
            }
            self.unrecognised(arg, next, &mut i, &mut out, &mut diags);
        }
        if diags.iter().any(|d| d.error) {
            return Err(CliError {
                stderr: render(&diags),
                exit_code: 1,
            });
        }
        out.warnings = diags;
        Ok(out)
    }

    /// pi's fallback for an argument no flag claimed: `@file`, unknown long flag, unknown
    /// short option, or message.
    fn unrecognised(
        &self,
        arg: &str,
        next: Option<&str>,
        i: &mut usize,
        out: &mut ParsedArgs,
        diags: &mut Vec<Diagnostic>,
    ) {
        if let Some(file) = arg.strip_prefix('@') {
            out.file_args.push(file.to_string());
        } else if let Some(body) = arg.strip_prefix("--") {
            let (name, value) = match body.split_once('=') {
                Some((name, value)) => (name, Some(value.to_string())),
                None => match next {
                    Some(n) if !n.starts_with('-') && !n.starts_with('@') => {
                        *i += 1;
                        (body, Some(n.to_string()))
                    }
                    _ => (body, None),
                },
            };
            // A JS Map: a repeated name keeps its first position and takes the new value.
            match out.unknown_flags.iter_mut().find(|(n, _)| n == name) {
                Some(entry) => entry.1 = value,
                None => out.unknown_flags.push((name.to_string(), value)),
            }
        } else if arg.starts_with('-') {
            diags.push(Diagnostic::error(texts::fill(
                texts::UNKNOWN_OPTION,
                &[arg],
            )));
        } else {
            out.messages.push(arg.to_string());
        }
    }

    /// The errors pi reports after it has read stdin (exit 1): unknown long flags, then,
    /// with [`Feature::ProviderRequiresModel`], `--provider` without `--model`.
    pub fn runtime_errors(&self, parsed: &ParsedArgs) -> Option<CliError> {
        let mut stderr = parsed
            .unknown_flags_error()
            .map(|e| e.stderr)
            .unwrap_or_default();
        if self.has(Feature::ProviderRequiresModel) && !parsed.has("--model") {
            if let Some(provider) = parsed.value("--provider") {
                stderr.push_str(&format!(
                    "Error: {}\n",
                    texts::fill(texts::PROVIDER_REQUIRES_MODEL, &[provider])
                ));
            }
        }
        (!stderr.is_empty()).then_some(CliError {
            stderr,
            exit_code: 1,
        })
    }

    /// What `--help` prints on stderr before the help text: with
    /// [`Feature::HelpReportsRuntimeErrors`], the runtime errors (pi still exits 0).
    pub fn help_preamble(&self, parsed: &ParsedArgs) -> String {
        if self.has(Feature::HelpReportsRuntimeErrors) {
            self.runtime_errors(parsed)
                .map(|e| e.stderr)
                .unwrap_or_default()
        } else {
            String::new()
        }
    }

    /// A short `--help` text listing this version's flags (fake-pi prints it; real pi's
    /// help is longer and not reproduced).
    pub fn help_text(&self) -> String {
        let mut s = format!(
            "pi {} (fake-pi stand-in) - AI coding assistant\n\nUsage:\n  pi [options] [@files...] [messages...]\n\nOptions:\n",
            self.version()
        );
        for f in self.flags() {
            let value = match f.kind {
                Switch => "",
                Value | Repeated => " <value>",
                OptionalValue => " [value]",
            };
            match f.short {
                Some(short) => s.push_str(&format!("  {}, {short}{value}\n", f.long)),
                None => s.push_str(&format!("  {}{value}\n", f.long)),
            }
        }
        if self.has_double_dash() {
            s.push_str("  --  End option parsing\n");
        }
        s
    }
}

/// JavaScript's `String.prototype.trim` whitespace: WhiteSpace (incl. U+FEFF and every
/// space separator) and LineTerminator. Unlike Rust's `char::is_whitespace` it excludes
/// U+0085 and includes U+FEFF.
fn is_js_whitespace(c: char) -> bool {
    matches!(
        c,
        '\u{9}' | '\u{a}' | '\u{b}' | '\u{c}' | '\u{d}' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202f}'
                | '\u{205f}'
                | '\u{3000}'
                | '\u{feff}'
    )
}

/// What pi keeps of piped stdin: decoded as UTF-8 (invalid bytes become U+FFFD), trimmed
/// like JavaScript's `trim()`, and `None` when nothing is left.
pub fn stdin_content(raw: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(raw);
    let trimmed = text.trim_matches(is_js_whitespace);
    (!trimmed.is_empty()).then(|| trimmed.to_string())
}

/// The first prompt pi sends: the stdin content (already passed through
/// [`stdin_content`]) followed directly, with no separator, by the first argv message.
/// `None` when there is neither. Any further argv messages are sent by pi as separate
/// follow-up prompts. (`@file` text, which pi puts between the two, is not modelled.)
pub fn join_prompt(stdin: Option<&str>, messages: &[String]) -> Option<String> {
    match (stdin, messages.first()) {
        (None, None) => None,
        (s, m) => Some(format!(
            "{}{}",
            s.unwrap_or(""),
            m.map_or("", |m| m.as_str())
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(version: &str) -> Grammar {
        Grammar::for_version(version).unwrap()
    }
    fn args(s: &[&str]) -> Vec<String> {
        s.iter().map(|a| a.to_string()).collect()
    }
    fn parse(version: &str, s: &[&str]) -> Result<ParsedArgs, CliError> {
        v(version).parse(&args(s))
    }
    fn err(version: &str, s: &[&str]) -> String {
        parse(version, s).unwrap_err().stderr
    }

    #[test]
    fn versions() {
        assert!(Grammar::for_version("0.73.1").is_some());
        assert!(Grammar::for_version("0.87.1").is_some());
        assert!(Grammar::for_version("1.5.2").is_some());
        assert!(Grammar::for_version("0.80.0").is_none());
        assert_eq!(v("0.87.1").version(), "0.87.1");
    }

    #[test]
    fn flags_per_version() {
        for f in [
            "--session-id",
            "--exclude-tools",
            "-xt",
            "--name",
            "-n",
            "--approve",
            "-na",
            "--tui-mode",
            "--use-theme",
        ] {
            assert!(!v("0.73.1").has_flag(f), "{f}");
            assert!(v("0.87.1").has_flag(f), "{f}");
        }
        for f in [
            "--mode",
            "-p",
            "--print",
            "--provider",
            "--model",
            "--session",
            "--no-session",
            "--thinking",
            "--tools",
            "-t",
            "--no-tools",
            "-nt",
            "--append-system-prompt",
            "--system-prompt",
            "--offline",
            "--version",
            "-v",
            "--help",
            "-h",
        ] {
            assert!(v("0.73.1").has_flag(f), "{f}");
            assert!(v("0.87.1").has_flag(f), "{f}");
        }
        assert_eq!(v("0.73.1").flag("-t").unwrap().long, "--tools");
        assert_eq!(v("0.87.1").flag("--tools").unwrap().kind, FlagKind::Value);
        assert_eq!(v("0.73.1").thinking_levels().last(), Some(&"xhigh"));
        assert_eq!(v("0.87.1").thinking_levels().last(), Some(&"max"));
    }

    #[test]
    fn typical_command_line() {
        let p = parse(
            "0.87.1",
            &[
                "--mode",
                "json",
                "-p",
                "--provider",
                "fake",
                "--model",
                "fake-model",
                "--no-session",
                "-t",
                "read,bash",
                "hello",
            ],
        )
        .unwrap();
        assert_eq!(p.value("--mode"), Some("json"));
        assert!(p.has("--print"));
        assert!(p.has("--no-session"));
        assert_eq!(p.value("--tools"), Some("read,bash"));
        assert_eq!(p.messages, args(&["hello"]));
        assert!(p.unknown_flags.is_empty() && p.warnings.is_empty());
    }

    #[test]
    fn print_swallows_the_next_plain_argument() {
        let p = parse("0.73.1", &["-p", "hi", "there"]).unwrap();
        assert_eq!(p.messages, args(&["hi", "there"]));
        // `---x` counts as a message after -p; `@f` and `-x` do not.
        assert_eq!(
            parse("0.73.1", &["-p", "---x"]).unwrap().messages,
            args(&["---x"])
        );
        let p = parse("0.73.1", &["-p", "@f.md"]).unwrap();
        assert_eq!(
            (p.messages.len(), p.file_args.clone()),
            (0, args(&["f.md"]))
        );
        assert_eq!(err("0.73.1", &["-p", "-x"]), "Error: Unknown option: -x\n");
        // Not after -p, `---x` is an unknown long flag named `-x`.
        assert_eq!(
            parse("0.73.1", &["---x"]).unwrap().unknown_flags,
            vec![("-x".to_string(), None)]
        );
    }

    #[test]
    fn double_dash_on_each_version() {
        let p = parse("0.87.1", &["-p", "--", "-y", "@a", "--model"]).unwrap();
        assert_eq!(p.messages, args(&["-y", "--model"]));
        assert_eq!(p.file_args, args(&["a"]));
        assert!(!p.has("--model"));
        // 0.73.1: `--` is an unknown flag with an empty name, swallowing a plain next arg.
        let p = parse("0.73.1", &["--", "hello"]).unwrap();
        assert_eq!(p.unknown_flags, vec![(String::new(), Some("hello".into()))]);
        assert_eq!(
            p.unknown_flags_error().unwrap().stderr,
            "Error: Unknown option: --\n"
        );
        assert_eq!(err("0.73.1", &["--", "-x"]), "Error: Unknown option: -x\n");
    }

    #[test]
    fn equals_forms_are_unknown_flags() {
        for version in KNOWN_VERSIONS {
            let p = parse(version, &["--model=x", "hi"]).unwrap();
            assert_eq!(
                p.unknown_flags,
                vec![("model".to_string(), Some("x".into()))]
            );
            assert_eq!(p.messages, args(&["hi"]));
            assert_eq!(
                p.unknown_flags_error().unwrap().stderr,
                "Error: Unknown option: --model\n"
            );
        }
    }

    #[test]
    fn unknown_long_flags_take_a_plain_value_and_are_reported_together() {
        let p = parse(
            "0.87.1",
            &["--bogus", "val", "--other", "-p", "msg", "--bogus", "@f"],
        )
        .unwrap();
        assert_eq!(
            p.unknown_flags,
            vec![("bogus".to_string(), None), ("other".to_string(), None)]
        );
        assert_eq!(p.messages, args(&["msg"]));
        assert_eq!(p.file_args, args(&["f"]));
        assert_eq!(
            p.unknown_flags_error().unwrap(),
            CliError {
                stderr: "Error: Unknown options: --bogus, --other\n".into(),
                exit_code: 1
            }
        );
    }

    #[test]
    fn version_missing_flags_are_unknown() {
        let p = parse(
            "0.73.1",
            &["--session-id", "abc", "--exclude-tools", "bash"],
        )
        .unwrap();
        assert_eq!(
            p.unknown_flags_error().unwrap().stderr,
            "Error: Unknown options: --session-id, --exclude-tools\n"
        );
        assert_eq!(
            err("0.73.1", &["-xt", "bash"]),
            "Error: Unknown option: -xt\n"
        );
        let p = parse("0.87.1", &["--session-id", "abc", "-xt", "bash"]).unwrap();
        assert_eq!(p.value("--session-id"), Some("abc"));
        assert_eq!(p.value("--exclude-tools"), Some("bash"));
    }

    #[test]
    fn value_flags_at_the_end_fall_through() {
        assert_eq!(
            parse("0.73.1", &["--provider"])
                .unwrap()
                .unknown_flags_error()
                .unwrap()
                .stderr,
            "Error: Unknown option: --provider\n"
        );
        assert_eq!(err("0.87.1", &["-t"]), "Error: Unknown option: -t\n");
        assert_eq!(
            parse("0.73.1", &["--mode"])
                .unwrap()
                .unknown_flags_error()
                .unwrap()
                .stderr,
            "Error: Unknown option: --mode\n"
        );
        assert_eq!(
            err("0.87.1", &["--mode"]),
            "Error: --mode requires text, json, or rpc\n"
        );
        assert_eq!(err("0.87.1", &["-n"]), "Error: --name requires a value\n");
        // A value flag takes the next argument even if it looks like a flag.
        assert_eq!(
            parse("0.73.1", &["--model", "--x"])
                .unwrap()
                .value("--model"),
            Some("--x")
        );
    }

    #[test]
    fn mode_values() {
        assert_eq!(
            err("0.87.1", &["--mode", "bad"]),
            "Error: Invalid mode \"bad\". Valid values: text, json, rpc\n"
        );
        let p = parse("0.73.1", &["--mode", "bad", "hi"]).unwrap();
        assert!(!p.has("--mode"));
        assert_eq!(p.messages, args(&["hi"]));
    }

    #[test]
    fn thinking_levels_warn_and_are_dropped() {
        let p = parse("0.73.1", &["--thinking", "max"]).unwrap();
        assert!(!p.has("--thinking"));
        assert_eq!(
            p.warnings_text(),
            "Warning: Invalid thinking level \"max\". Valid values: off, minimal, low, medium, high, xhigh\n"
        );
        assert_eq!(
            parse("0.87.1", &["--thinking", "max"])
                .unwrap()
                .value("--thinking"),
            Some("max")
        );
        // Warnings printed before an error are part of the error output.
        assert_eq!(
            err("0.87.1", &["--thinking", "x", "-q"]),
            "Warning: Invalid thinking level \"x\". Valid values: off, minimal, low, medium, high, xhigh, max\nError: Unknown option: -q\n"
        );
    }

    #[test]
    fn short_options_and_dash() {
        assert_eq!(err("0.73.1", &["-"]), "Error: Unknown option: -\n");
        assert_eq!(
            err("0.87.1", &["-x", "-y"]),
            "Error: Unknown option: -x\nError: Unknown option: -y\n"
        );
    }

    #[test]
    fn repeated_and_last_wins() {
        let p = parse(
            "0.73.1",
            &[
                "--model",
                "a",
                "--model",
                "b",
                "--append-system-prompt",
                "x",
                "--append-system-prompt",
                "y",
            ],
        )
        .unwrap();
        assert_eq!(p.value("--model"), Some("b"));
        assert_eq!(p.values("--append-system-prompt"), vec!["x", "y"]);
    }

    #[test]
    fn list_models_optional_value() {
        assert_eq!(
            parse("0.73.1", &["--list-models", "gpt"])
                .unwrap()
                .value("--list-models"),
            Some("gpt")
        );
        let p = parse("0.73.1", &["--list-models", "-p"]).unwrap();
        assert!(p.has("--list-models") && p.has("--print"));
    }

    #[test]
    fn session_id_validation() {
        assert!(is_valid_session_id("a"));
        assert!(is_valid_session_id("run-1.2_x"));
        for bad in ["", "-a", "a-", "bad!id", "a b", "é"] {
            assert!(!is_valid_session_id(bad), "{bad}");
        }
        for bad in [
            "x/../../../../tmp/x/victim.cassette",
            "/tmp/abs",
            "..",
            "a\0b",
            "a/b",
            &"a".repeat(MAX_SESSION_ID_BYTES + 1),
        ] {
            assert!(!is_file_safe_session_id(bad), "{bad}");
        }
        assert!(is_file_safe_session_id(&"a".repeat(MAX_SESSION_ID_BYTES)));
        assert!(is_file_safe_session_id(
            "019d8a2e-1f3c-7000-8000-0123456789ab"
        ));
        let e = parse("0.87.1", &["--session-id", "bad!id"])
            .unwrap()
            .validate()
            .unwrap_err();
        assert_eq!(e.stderr, "Error: Session id must be non-empty, contain only alphanumeric characters, '-', '_', and '.', and start and end with an alphanumeric character\n");
        let e = parse("0.87.1", &["--session-id", "ok", "--session", "s", "-c"])
            .unwrap()
            .validate()
            .unwrap_err();
        assert_eq!(
            e.stderr,
            "Error: --session-id cannot be combined with --session, --continue\n"
        );
        let e = parse("0.73.1", &["--fork", "f", "--no-session"])
            .unwrap()
            .validate()
            .unwrap_err();
        assert_eq!(
            e.stderr,
            "Error: --fork cannot be combined with --no-session\n"
        );
    }

    #[test]
    fn output_streams() {
        let g73 = v("0.73.1");
        let g87 = v("0.87.1");
        let plain = parse("0.73.1", &["--version"]).unwrap();
        assert_eq!(plain.app_mode(true, true, &g73), AppMode::Interactive);
        assert_eq!(plain.app_mode(false, true, &g73), AppMode::Print);
        assert_eq!(plain.app_mode(true, false, &g73), AppMode::Interactive);
        assert_eq!(plain.app_mode(true, false, &g87), AppMode::Print);
        assert_eq!(g73.version_stream(AppMode::Interactive), Stream::Stdout);
        assert_eq!(g73.version_stream(AppMode::Print), Stream::Stderr);
        assert_eq!(g87.version_stream(AppMode::Json), Stream::Stdout);
        assert_eq!(g87.help_stream(&plain, AppMode::Print), Stream::Stdout);
        assert_eq!(g73.help_stream(&plain, AppMode::Print), Stream::Stderr);
        let json = parse("0.87.1", &["--mode", "json", "--help"]).unwrap();
        assert_eq!(json.app_mode(true, true, &g87), AppMode::Json);
        assert_eq!(g87.help_stream(&json, AppMode::Json), Stream::Stderr);
    }

    #[test]
    fn commands() {
        assert_eq!(v("0.87.1").command(&args(&["auth", "x"])), Some("auth"));
        assert_eq!(v("0.73.1").command(&args(&["auth"])), None);
        assert_eq!(
            v("0.73.1").command(&args(&["install", "x"])),
            Some("install")
        );
        assert_eq!(v("0.73.1").command(&args(&["hello", "install"])), None);
    }

    #[test]
    fn stdin_is_trimmed_like_javascript() {
        assert_eq!(stdin_content(b"  hello\n "), Some("hello".into()));
        assert_eq!(stdin_content(b" \n\t"), None);
        assert_eq!(
            stdin_content("\u{feff}x\u{2028}".as_bytes()),
            Some("x".into())
        );
        // U+0085 is not JavaScript whitespace.
        assert_eq!(stdin_content("\u{85}x".as_bytes()), Some("\u{85}x".into()));
        assert_eq!(stdin_content(b"a\xffb"), Some("a\u{fffd}b".into()));
    }

    #[test]
    fn prompt_join() {
        let m = args(&["world", "second"]);
        assert_eq!(join_prompt(Some("hello"), &m), Some("helloworld".into()));
        assert_eq!(join_prompt(Some("hello"), &[]), Some("hello".into()));
        assert_eq!(join_prompt(None, &m), Some("world".into()));
        assert_eq!(join_prompt(None, &[]), None);
    }

    #[test]
    fn pi_1_5_2_is_0_87_1_plus_no_mcp() {
        let g152 = v("1.5.2");
        let g87 = v("0.87.1");
        let f152: Vec<&str> = g152.flags().map(|f| f.long).collect();
        let mut f87: Vec<&str> = g87.flags().map(|f| f.long).collect();
        f87.push("--no-mcp");
        let mut sorted = f152.clone();
        sorted.sort();
        f87.sort();
        assert_eq!(sorted, f87);
        assert_eq!(g152.thinking_levels(), g87.thinking_levels());
        assert_eq!(g152.command(&args(&["mcp", "list"])), Some("mcp"));
        assert_eq!(g87.command(&args(&["mcp"])), None);
        assert_eq!(g152.wire_dialect(), WireDialect::DeltaOnly);
        assert_eq!(v("0.73.1").wire_dialect(), WireDialect::SnapshotDelta);
        // 0.87.1 and 0.73.1 do not know --no-mcp: an unknown option after stdin.
        let p = parse("0.87.1", &["--no-mcp"]).unwrap();
        assert_eq!(
            g87.runtime_errors(&p).unwrap().stderr,
            "Error: Unknown option: --no-mcp\n"
        );
        assert!(g152
            .runtime_errors(&parse("1.5.2", &["--no-mcp"]).unwrap())
            .is_none());
    }

    #[test]
    fn tools_values_are_checked_from_1_1_0() {
        // Measured on real 1.5.2 (exact stderr, exit 1, before stdin).
        assert_eq!(
            err("1.5.2", &["--tools", "read,+bash", "hi"]),
            "Error: --tools: tool names cannot be mixed with +name or -name entries\n"
        );
        assert_eq!(
            err("1.5.2", &["-t", "+re*"]),
            "Error: -t: +name and -name entries take exact tool names, not patterns: +re*\n"
        );
        // Modifiers alone, names alone, patterns in names, blanks: fine.
        for ok in [
            "+codemode,-write",
            "read,bash",
            "re*",
            " read , ,bash",
            "-bash",
        ] {
            let p = parse("1.5.2", &["--tools", ok]).unwrap();
            assert_eq!(p.value("--tools"), Some(ok), "{ok}");
        }
        // 0.87.1 takes every value as a list of literal names.
        assert_eq!(
            parse("0.87.1", &["--tools", "read,+bash"])
                .unwrap()
                .value("--tools"),
            Some("read,+bash")
        );
    }

    #[test]
    fn provider_requires_model_after_stdin_from_1_0_0() {
        let g = v("1.5.2");
        let p = parse("1.5.2", &["--provider", "fake", "hi"]).unwrap();
        assert_eq!(
            g.runtime_errors(&p).unwrap().stderr,
            "Error: --provider requires --model (for example: --provider fake --model <pattern>)\n"
        );
        // `--model=x` leaves --model unset: both errors, the unknown option first.
        let p = parse("1.5.2", &["--provider", "fake", "--model=x", "hi"]).unwrap();
        assert_eq!(
            g.runtime_errors(&p).unwrap().stderr,
            "Error: Unknown option: --model\nError: --provider requires --model (for example: --provider fake --model <pattern>)\n"
        );
        assert!(g
            .runtime_errors(&parse("1.5.2", &["--provider", "fake", "--model", "m"]).unwrap())
            .is_none());
        let g87 = v("0.87.1");
        assert!(g87
            .runtime_errors(&parse("0.87.1", &["--provider", "fake"]).unwrap())
            .is_none());
        // --help reports them first on 1.5.2 only.
        let p = parse("1.5.2", &["--provider", "fake", "--help", "--bogus"]).unwrap();
        assert_eq!(
            g.help_preamble(&p),
            "Error: Unknown option: --bogus\nError: --provider requires --model (for example: --provider fake --model <pattern>)\n"
        );
        assert_eq!(
            g87.help_preamble(&parse("0.87.1", &["--help", "--bogus"]).unwrap()),
            ""
        );
    }

    #[test]
    fn session_names_like_pi() {
        assert_eq!(
            cwd_slug("/tmp/pi-sess-1.5.2-6a7m02gs/work"),
            "--tmp-pi-sess-1.5.2-6a7m02gs-work--"
        );
        assert_eq!(cwd_slug("/a:b\\c"), "--a-b-c--");
        assert_eq!(
            session_file_name("2026-11-23T14:18:01.961Z", "my-run-1"),
            "2026-11-23T14-18-01-961Z_my-run-1.jsonl"
        );
    }

    #[test]
    fn unpinned_versions() {
        assert!(Grammar::for_version("1.5.1").is_none());
        assert!(Grammar::for_version("1.5").is_none());
        assert_eq!(Grammar::nearest("1.5.1").version(), "0.87.1");
        assert_eq!(Grammar::nearest("2.0.0").version(), "1.5.2");
    }

    #[test]
    fn help_lists_version_flags() {
        assert!(v("0.87.1")
            .help_text()
            .contains("--exclude-tools, -xt <value>"));
        assert!(!v("0.73.1").help_text().contains("--exclude-tools"));
    }
}
