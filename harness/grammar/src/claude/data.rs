//! The measured releases, embedded: each one's `version.txt`, `help.txt` and `grammar.tsv`
//! from `data/claude/VERSION/` (written by `scripts/claude-grammar.sh`; the format is in
//! `data/claude/README.md`), read once into [`Release`]s.

use std::sync::OnceLock;

/// (version, `--version` output, `--help` output, grammar.tsv), one per directory; `build.rs`
/// lists them (in name order), the registry's row orders them.
const EMBEDDED: &[(&str, &str, &str, &str)] =
    include!(concat!(env!("OUT_DIR"), "/claude_releases.rs"));

/// How an option reads its value (commander's flag syntax).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptionKind {
    /// No value (`--verbose`).
    Switch,
    /// One value, required (`--model <model>`): the next argument, whatever it is.
    Value,
    /// An optional value (`--resume [value]`): the next argument unless it starts with `-`.
    Optional,
    /// One or more values (`--add-dir <directories...>`): the next argument, then every
    /// following one up to one that starts with `-`.
    Variadic,
    /// Zero or more values (`[values...]`).
    OptionalVariadic,
    /// `-h, --help`: prints the help (commander finds it among the unknown options).
    Help,
    /// `-v, --version`: prints the version as soon as the parser reaches it.
    Version,
}

impl OptionKind {
    fn parse(s: &str) -> Option<OptionKind> {
        Some(match s {
            "switch" => OptionKind::Switch,
            "value" => OptionKind::Value,
            "optional" => OptionKind::Optional,
            "variadic" => OptionKind::Variadic,
            "optional-variadic" => OptionKind::OptionalVariadic,
            "help" => OptionKind::Help,
            "version" => OptionKind::Version,
            _ => return None,
        })
    }

    /// Does the option take a value (required or optional)?
    pub fn takes_value(self) -> bool {
        !matches!(
            self,
            OptionKind::Switch | OptionKind::Help | OptionKind::Version
        )
    }

    /// Is the value optional (`[value]`)?
    pub fn value_optional(self) -> bool {
        matches!(self, OptionKind::Optional | OptionKind::OptionalVariadic)
    }

    /// Does the option take several values (`...`)?
    pub fn variadic(self) -> bool {
        matches!(self, OptionKind::Variadic | OptionKind::OptionalVariadic)
    }
}

/// What the parser checks in a value beyond exact choices: for choices, whether their case
/// matters; for a free value, the check (with the message it gives after
/// `argument 'X' is invalid. `), as measured on sample values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Check {
    /// Anything goes (or, with choices, exactly them).
    None,
    /// The choices in any case (`On` for `on`).
    AnyCase,
    /// JavaScript's `Number(value)` is not `NaN`.
    Number(String),
    /// `Number(value) > 0`.
    Positive(String),
    /// `Number(value)` is an integer above 0.
    PositiveInteger(String),
    /// A check of the CLI's own that the samples do not tell; every value is taken.
    Custom,
}

/// One option of one release.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaudeOption {
    /// Commander's flags string, as its messages quote it (`-r, --resume [value]`).
    pub flags: String,
    /// The short flag (`-r`), if any.
    pub short: Option<String>,
    /// Every long flag (`--allowedTools`, `--allowed-tools`); the first one names the option
    /// here, the last is commander's (it suggests that one for a misspelling).
    pub longs: Vec<String>,
    /// How it reads its value.
    pub kind: OptionKind,
    /// Listed by `--help` (else hidden, found in the binary and confirmed by the parser).
    pub shown: bool,
    /// The choices the parser names when it refuses a value (the help's, when it shows
    /// them); empty when the value is free.
    pub choices: Vec<String>,
    /// Other values the parser takes (hidden ones, like `--permission-mode default`).
    pub accepts: Vec<String>,
    /// The check on a free value.
    pub check: Check,
}

impl ClaudeOption {
    /// The option's name: its first long flag without the dashes (`allowedTools`), as
    /// [`Parsed::options`](super::Parsed::options) keys it.
    pub fn name(&self) -> &str {
        self.longs.first().map_or("", |l| &l[2..])
    }

    /// Is `flag` (`-r`, `--resume`) one of this option's spellings?
    pub fn is(&self, flag: &str) -> bool {
        self.short.as_deref() == Some(flag) || self.longs.iter().any(|l| l == flag)
    }

    /// Does the parser take `value` for this option (choices, hidden values, checks)?
    pub fn takes(&self, value: &str) -> bool {
        if !self.choices.is_empty() {
            let any_case = self.check == Check::AnyCase;
            return self
                .choices
                .iter()
                .chain(&self.accepts)
                .any(|c| c == value || (any_case && c.eq_ignore_ascii_case(value)));
        }
        let n = super::checks::js_number(value);
        match &self.check {
            Check::None | Check::AnyCase | Check::Custom => true,
            Check::Number(_) => n.is_some(),
            Check::Positive(_) => n.is_some_and(|n| n > 0.0),
            Check::PositiveInteger(_) => n.is_some_and(|n| n > 0.0 && n.fract() == 0.0),
        }
    }

    /// What the parser says after `argument 'X' is invalid. ` when it refuses a value.
    pub fn refusal(&self) -> String {
        match &self.check {
            _ if !self.choices.is_empty() => {
                format!("Allowed choices are {}.", self.choices.join(", "))
            }
            Check::Number(m) | Check::Positive(m) | Check::PositiveInteger(m) => m.clone(),
            Check::None | Check::AnyCase | Check::Custom => String::new(),
        }
    }
}

/// One measured release of Claude Code.
#[derive(Debug, Clone)]
pub struct Release {
    /// `2.1.330`.
    pub version: &'static str,
    /// What `claude --version` prints (with its newline).
    pub version_line: &'static str,
    /// What `claude --help` prints when stdout is not a terminal (80 columns).
    pub help: &'static str,
    /// Every option the parser knows, in the data's order (by name).
    pub options: Vec<ClaudeOption>,
}

fn list(field: &str) -> Vec<String> {
    if field == "-" {
        Vec::new()
    } else {
        field.split(',').map(str::to_string).collect()
    }
}

fn check(field: &str) -> Result<Check, String> {
    let (rule, message) = field.split_once(':').unwrap_or((field, ""));
    let message = message.to_string();
    Ok(match rule {
        "-" => Check::None,
        "any-case" => Check::AnyCase,
        "number" => Check::Number(message),
        "positive" => Check::Positive(message),
        "positive-integer" => Check::PositiveInteger(message),
        "custom" => Check::Custom,
        other => return Err(format!("unknown check {other:?}")),
    })
}

/// One line of grammar.tsv: flags, kind, shown, choices, accepts, check.
fn option(line: &str) -> Result<ClaudeOption, String> {
    let f: Vec<&str> = line.split('\t').collect();
    let [flags, kind, shown, choices, accepts, check_field] = f[..] else {
        return Err(format!("{} fields, not 6", f.len()));
    };
    let kind = OptionKind::parse(kind).ok_or_else(|| format!("unknown kind {kind:?}"))?;
    let names = flags.split(' ').filter(|w| w.starts_with('-'));
    let names: Vec<&str> = names.map(|w| w.trim_end_matches(',')).collect();
    let short = names
        .iter()
        .find(|n| !n.starts_with("--"))
        .map(|s| s.to_string());
    let longs: Vec<String> = names
        .iter()
        .filter(|n| n.starts_with("--"))
        .map(|s| s.to_string())
        .collect();
    if longs.is_empty() {
        return Err(format!("{flags:?} has no long flag"));
    }
    let arity = if flags.ends_with("...>") {
        OptionKind::Variadic
    } else if flags.ends_with('>') {
        OptionKind::Value
    } else if flags.ends_with("...]") {
        OptionKind::OptionalVariadic
    } else if flags.ends_with(']') {
        OptionKind::Optional
    } else if kind.takes_value() {
        OptionKind::Switch
    } else {
        kind
    };
    if arity != kind {
        return Err(format!("{flags:?} does not read as {kind:?}"));
    }
    Ok(ClaudeOption {
        flags: flags.to_string(),
        short,
        longs,
        kind,
        shown: shown == "help",
        choices: list(choices),
        accepts: list(accepts),
        check: check(check_field)?,
    })
}

fn release(
    version: &'static str,
    version_line: &'static str,
    help: &'static str,
    tsv: &str,
) -> Release {
    let options = tsv
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.starts_with('#') && !l.is_empty())
        .map(|(i, l)| {
            option(l).unwrap_or_else(|e| panic!("data/claude/{version}/grammar.tsv:{}: {e}", i + 1))
        })
        .collect();
    Release {
        version,
        version_line,
        help,
        options,
    }
}

/// Every measured release, oldest first: each release of Claude Code's row in the registry
/// with its data (read on first use; a broken data file, or a pinned release without one, is
/// a bug of the build, caught by the tests).
pub fn releases() -> &'static [Release] {
    static RELEASES: OnceLock<Vec<Release>> = OnceLock::new();
    RELEASES.get_or_init(|| {
        crate::Agent::Claude
            .spec()
            .versions()
            .into_iter()
            .map(|v| {
                let &(v, line, help, tsv) =
                    EMBEDDED.iter().find(|e| e.0 == v).unwrap_or_else(|| {
                        panic!("Claude Code {v} is pinned, and data/claude/{v}/ is missing")
                    });
                release(v, line, help, tsv)
            })
            .collect()
    })
}

/// The releases `data/claude/` has a directory for, in name order.
#[cfg(test)]
pub(crate) fn data_versions() -> Vec<&'static str> {
    EMBEDDED.iter().map(|e| e.0).collect()
}

#[cfg(test)]
mod tests {
    /// A release is pinned in the registry and measured in `data/claude/`, or neither.
    #[test]
    fn there_is_data_for_exactly_the_pinned_releases() {
        let mut pinned = crate::Agent::Claude.spec().versions();
        pinned.sort_unstable();
        assert_eq!(super::data_versions(), pinned);
        assert_eq!(super::releases().len(), pinned.len());
    }
}
