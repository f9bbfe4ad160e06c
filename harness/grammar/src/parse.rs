//! Stage 1 of pi's checks: argv to [`ParsedArgs`] as one version reads it ([`Grammar::parse`]):
//! which argument is a flag, a value, a message or an `@file`, the per-argument errors
//! that stop pi before it reads stdin, and the warnings it prints first.

use std::collections::BTreeMap;

use crate::flags::FlagKind::{OptionalValue, Repeated, Switch, Value};
use crate::flags::FlagSpec;
use crate::grammar::Grammar;
use crate::prompt::is_js_whitespace;
use crate::rejection::{render, Diagnostic, Rejection};
use crate::version::{texts, Feature};

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

impl Grammar {
    /// Parse argv (without the program name) as this pi version does. `Err` when pi
    /// prints an error and exits before reading stdin (the error text includes any
    /// warnings printed before it).
    pub fn parse(&self, args: &[String]) -> Result<ParsedArgs, Rejection> {
        let double_dash = self.has(Feature::DoubleDash);
        let mut out = ParsedArgs::default();
        let mut diags: Vec<Diagnostic> = Vec::new();
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
                self.known_flag(spec, arg, next, &mut i, &mut out, &mut diags);
                continue;
            }
            self.unrecognised(arg, next, &mut i, &mut out, &mut diags);
        }
        if diags.iter().any(|d| d.error) {
            return Err(Rejection {
                stderr: render(&diags),
                exit_code: 1,
            });
        }
        out.warnings = diags;
        Ok(out)
    }

    /// A flag this version knows, spelled `arg`: its value taken (`i` moves past it) and
    /// checked as pi checks it; a value flag with nothing after it is not recognised, as
    /// in pi ([`Grammar::unrecognised`]).
    fn known_flag(
        &self,
        spec: &FlagSpec,
        arg: &str,
        next: Option<&str>,
        i: &mut usize,
        out: &mut ParsedArgs,
        diags: &mut Vec<Diagnostic>,
    ) {
        let strict_mode = self.has(Feature::StrictMode);
        let tool_modifiers = self.has(Feature::ToolModifiers);
        let long = spec.long;
        match long {
            "--mode" if strict_mode => match next {
                None => diags.push(Diagnostic::error(texts::MODE_REQUIRED)),
                Some(m) if m.starts_with('-') => {
                    diags.push(Diagnostic::error(texts::MODE_REQUIRED))
                }
                Some(m) => {
                    *i += 1;
                    if matches!(m, "text" | "json" | "rpc") {
                        self.set(out, long, Some(m.into()));
                    } else {
                        diags.push(Diagnostic::error(texts::fill(texts::MODE_INVALID, &[m])));
                    }
                }
            },
            "--thinking" if next.is_some() => {
                let level = next.unwrap();
                *i += 1;
                if self.thinking_levels().contains(&level) {
                    self.set(out, long, Some(level.into()));
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
                *i += 1;
                if matches!(m, "text" | "json" | "rpc") {
                    self.set(out, long, Some(m.into()));
                }
            }
            "--tools" if tool_modifiers && next.is_some() => {
                let value = next.unwrap();
                *i += 1;
                match tool_list_error(arg, value) {
                    Some(problem) => diags.push(Diagnostic::error(problem)),
                    None => self.set(out, long, Some(value.into())),
                }
            }
            "--print" => {
                self.set(out, long, None);
                if let Some(n) = next {
                    if !n.starts_with('@') && (!n.starts_with('-') || n.starts_with("---")) {
                        out.messages.push(n.into());
                        *i += 1;
                    }
                }
            }
            "--name" => match next {
                Some(n) => {
                    self.set(out, long, Some(n.into()));
                    *i += 1;
                }
                None => diags.push(Diagnostic::error(texts::NAME_REQUIRED)),
            },
            "--use-theme" => match next {
                Some(n) if !n.starts_with('-') => {
                    self.set(out, long, Some(n.into()));
                    *i += 1;
                }
                _ => diags.push(Diagnostic::error(texts::THEME_REQUIRED)),
            },
            "--tui-mode" => match next {
                Some(m @ ("regular" | "fullscreen")) => {
                    self.set(out, long, Some(m.into()));
                    *i += 1;
                }
                None => diags.push(Diagnostic::error(texts::TUI_MODE_REQUIRED)),
                Some(m) if m.starts_with('-') => {
                    diags.push(Diagnostic::error(texts::TUI_MODE_REQUIRED))
                }
                Some(m) => {
                    *i += 1;
                    diags.push(Diagnostic::error(texts::fill(
                        texts::TUI_MODE_INVALID,
                        &[m],
                    )));
                }
            },
            _ => match (spec.kind, next) {
                (Switch, _) => self.set(out, long, None),
                (Value | Repeated, Some(n)) => {
                    self.set(out, long, Some(n.into()));
                    *i += 1;
                }
                (OptionalValue, Some(n)) if !n.starts_with('-') && !n.starts_with('@') => {
                    self.set(out, long, Some(n.into()));
                    *i += 1;
                }
                (OptionalValue, _) => self.set(out, long, None),
                // A value flag with nothing after it is not recognised.
                (Value | Repeated, None) => self.unrecognised(arg, next, i, out, diags),
            },
        }
    }

    /// Record a known flag's value: a repeatable flag keeps every value, another the last.
    fn set(&self, out: &mut ParsedArgs, long: &str, value: Option<String>) {
        let spec = self.flag(long).expect("flag in table");
        let entry = out.flags.entry(long.to_string()).or_default();
        if spec.kind != Repeated {
            entry.clear();
        }
        entry.push(value);
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
}
