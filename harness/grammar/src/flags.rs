//! Every flag pi has had, as data: its spellings, how it consumes argv ([`FlagKind`]) and
//! the release that added it ([`FLAGS`]). [`Grammar::flags`](crate::Grammar::flags) picks
//! a version's; the value checks of a few flags are in `parse`.

use crate::version::Version;

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
    /// How it consumes argv.
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
/// [`Grammar::parse`](crate::Grammar::parse).
pub(crate) const FLAGS: &[FlagSpec] = &[
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

/// The release that added the flag spelled `name` (long like `--no-mcp`, or short like
/// `-xt`), as the flag table knows it; `None` for a flag no pi release has had.
pub fn flag_since(name: &str) -> Option<Version> {
    FLAGS
        .iter()
        .find(|f| f.long == name || f.short == Some(name))
        .map(|f| f.since)
}
