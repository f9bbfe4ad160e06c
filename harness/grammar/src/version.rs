//! pi's versions and what changed between them, as data.
//!
//! Every fact about pi's command line that differs between releases is a row here or in
//! the flag table: a [`Feature`] with the release it appeared in, a flag with the release
//! that added it, a thinking level, a package command. Code asks "does this version have
//! it?" and never names a version. Supporting a new release is a data change: add it to
//! pi's row of the registry (`agents/pi.rs`, read as [`KNOWN_VERSIONS`]), add rows for what
//! it changed (with the release the CHANGELOG names, or the pinned version where it was
//! first measured; `scripts/pi-grammar.sh` prints the flag rows from the package's own
//! parser), record the corpus on it, and run the real-pi
//! parity test: step by step in `docs/pinning.md`. Until then a newer release borrows the
//! newest pinned grammar, unverified ([`Grammar::unverified`](crate::Grammar::unverified)).

use std::fmt;

/// A release, `major.minor.patch`: pi's, and the order of every agent's releases (see
/// [`crate::agents`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version {
    /// The major number (`1` in `1.5.2`).
    pub major: u32,
    /// The minor number (`5` in `1.5.2`).
    pub minor: u32,
    /// The patch number (`2` in `1.5.2`).
    pub patch: u32,
}

impl Version {
    /// `major.minor.patch`, usable in constants.
    pub const fn new(major: u32, minor: u32, patch: u32) -> Version {
        Version {
            major,
            minor,
            patch,
        }
    }

    /// `1.5.2` (as `pi --version` prints it; surrounding whitespace ignored).
    pub fn parse(text: &str) -> Option<Version> {
        let mut parts = text.trim().split('.');
        let mut next = || -> Option<u32> {
            let p = parts.next()?;
            if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) || p.len() > 9 {
                return None;
            }
            p.parse().ok()
        };
        let v = Version::new(next()?, next()?, next()?);
        parts.next().is_none().then_some(v)
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

/// The releases whose behaviour is measured and pinned (oldest first): fake-pi imitates
/// exactly these, and the corpus is recorded on each. Read from pi's row of the registry
/// ([`crate::agents`]), where a release is pinned.
pub const KNOWN_VERSIONS: &[&str] = &crate::agents::versions_of(&crate::agents::pi::RELEASES);

/// A behaviour of pi that appeared in some release (see [`FEATURES`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Feature {
    /// `--` ends option parsing; before, it is an unknown flag with an empty name.
    DoubleDash,
    /// `--mode` values are checked (`--mode requires text, json, or rpc`, `Invalid mode`);
    /// before, a bad value is consumed and ignored.
    StrictMode,
    /// `--version` prints on stdout in every mode; before, on stderr unless interactive.
    VersionOnStdout,
    /// `--help` without `-p` or `--mode` prints on stdout; and a stdout that is not a
    /// terminal makes print mode. Before, only interactive mode printed help on stdout.
    PlainHelpOnStdout,
    /// `--session-id ID` exists, with its syntax check and conflicts.
    SessionId,
    /// The wire is delta-only: `message_update` carries no snapshot copies.
    DeltaOnlyWire,
    /// A run ends with `agent_settled`.
    AgentSettled,
    /// `--provider` without `--model` is an error (after stdin is read).
    ProviderRequiresModel,
    /// `--tools` and `--exclude-tools` take `*` patterns.
    ToolPatterns,
    /// `--tools` takes `+name`/`-name` modifiers of the default set, checked when argv is
    /// parsed (`tool names cannot be mixed ...`, `... not patterns: X`).
    ToolModifiers,
    /// `--help` first prints the errors pi would report after reading stdin (unknown
    /// options, `--provider` without `--model`), then the help, and exits 0.
    HelpReportsRuntimeErrors,
    /// `agent_settled` carries `aborted`.
    SettledAborted,
    /// `settings.json` `defaultTools` sets the default tools.
    SettingsDefaultTools,
    /// `settings.json` `modelThinkingLevels` sets a thinking level per model.
    ModelThinkingLevels,
    /// In RPC mode, stdin closing while a bash tool runs kills the tool's processes (before,
    /// they survive pi, reparented to init).
    RpcEofKillsTools,
}

/// Each feature and the release it appeared in: the CHANGELOG's release where it names
/// one, else the first pinned version where it was measured.
pub const FEATURES: &[(Feature, Version)] = &[
    (Feature::DoubleDash, Version::new(0, 87, 1)),
    (Feature::StrictMode, Version::new(0, 87, 1)),
    (Feature::VersionOnStdout, Version::new(0, 87, 1)),
    (Feature::PlainHelpOnStdout, Version::new(0, 87, 1)),
    (Feature::SessionId, Version::new(0, 87, 1)),
    // pi's CHANGELOG: delta-only `message_update` since 0.84.
    (Feature::DeltaOnlyWire, Version::new(0, 84, 0)),
    (Feature::AgentSettled, Version::new(0, 87, 1)),
    (Feature::ProviderRequiresModel, Version::new(1, 0, 0)),
    (Feature::ToolPatterns, Version::new(1, 0, 4)),
    (Feature::ToolModifiers, Version::new(1, 1, 0)),
    (Feature::SettledAborted, Version::new(1, 1, 0)),
    (Feature::RpcEofKillsTools, Version::new(0, 87, 1)),
    (Feature::HelpReportsRuntimeErrors, Version::new(1, 5, 2)),
    (Feature::SettingsDefaultTools, Version::new(0, 87, 1)),
    (Feature::ModelThinkingLevels, Version::new(0, 87, 1)),
];

/// The release a feature appeared in.
pub fn since(feature: Feature) -> Version {
    FEATURES
        .iter()
        .find(|(f, _)| *f == feature)
        .map(|(_, v)| *v)
        .expect("every feature has a row in FEATURES")
}

/// Thinking levels `--thinking` accepts, with the release that added each.
pub const THINKING_LEVELS: &[(&str, Version)] = &[
    ("off", Version::new(0, 73, 1)),
    ("minimal", Version::new(0, 73, 1)),
    ("low", Version::new(0, 73, 1)),
    ("medium", Version::new(0, 73, 1)),
    ("high", Version::new(0, 73, 1)),
    ("xhigh", Version::new(0, 73, 1)),
    ("max", Version::new(0, 87, 1)),
];

/// The first argv words that make pi run a package, auth or MCP command instead of the
/// agent, with the release that added each.
pub const COMMANDS: &[(&str, Version)] = &[
    ("install", Version::new(0, 73, 1)),
    ("remove", Version::new(0, 73, 1)),
    ("uninstall", Version::new(0, 73, 1)),
    ("update", Version::new(0, 73, 1)),
    ("list", Version::new(0, 73, 1)),
    ("config", Version::new(0, 73, 1)),
    ("auth", Version::new(0, 87, 1)),
    ("mcp", Version::new(0, 99, 0)),
];

/// Error texts pi prints about its command line, one per situation (`{}` marks where the
/// value goes). Which of them a version prints is decided by the features above.
pub mod texts {
    /// An unknown flag (a short one at stage 1, a long one after stdin).
    pub const UNKNOWN_OPTION: &str = "Unknown option: {}";
    /// Several unknown long flags, reported together.
    pub const UNKNOWN_OPTIONS: &str = "Unknown options: {}";
    /// `--mode` with no value or a flag after it (strict mode).
    pub const MODE_REQUIRED: &str = "--mode requires text, json, or rpc";
    /// `--mode` with a value that is no mode (strict mode).
    pub const MODE_INVALID: &str = "Invalid mode \"{}\". Valid values: text, json, rpc";
    /// A `--thinking` level this version does not know (a warning: the flag is dropped).
    pub const THINKING_INVALID: &str = "Invalid thinking level \"{}\". Valid values: {}";
    /// `--name` as the last argument.
    pub const NAME_REQUIRED: &str = "--name requires a value";
    /// `--use-theme` without a theme name after it.
    pub const THEME_REQUIRED: &str = "--use-theme requires a theme name";
    /// `--tui-mode` with no value or a flag after it.
    pub const TUI_MODE_REQUIRED: &str = "--tui-mode requires regular or fullscreen";
    /// `--tui-mode` with a value that is no TUI mode.
    pub const TUI_MODE_INVALID: &str = "Invalid TUI mode \"{}\". Valid values: regular, fullscreen";
    /// A `--tools` list mixing `+name`/`-name` entries with plain names.
    pub const TOOLS_MIXED: &str = "{}: tool names cannot be mixed with +name or -name entries";
    /// A `+name`/`-name` entry of a `--tools` list holding a `*` pattern.
    pub const TOOLS_MODIFIER_PATTERN: &str =
        "{}: +name and -name entries take exact tool names, not patterns: {}";
    /// `--fork` with another session flag.
    pub const FORK_CONFLICT: &str = "--fork cannot be combined with {}";
    /// `--session-id` with another session flag.
    pub const SESSION_ID_CONFLICT: &str = "--session-id cannot be combined with {}";
    /// A `--session-id` value outside pi's id syntax.
    pub const SESSION_ID_SYNTAX: &str = "Session id must be non-empty, contain only alphanumeric characters, '-', '_', and '.', and start and end with an alphanumeric character";
    /// `--provider` without `--model` (reported after stdin was read).
    pub const PROVIDER_REQUIRES_MODEL: &str =
        "--provider requires --model (for example: --provider {} --model <pattern>)";

    /// `template` with each `{}` replaced by the next value.
    pub fn fill(template: &str, values: &[&str]) -> String {
        let mut out = String::new();
        let mut rest = template;
        let mut values = values.iter();
        while let Some(at) = rest.find("{}") {
            out.push_str(&rest[..at]);
            out.push_str(values.next().copied().unwrap_or(""));
            rest = &rest[at + 2..];
        }
        out.push_str(rest);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_and_order() {
        assert_eq!(Version::parse("1.5.2"), Some(Version::new(1, 5, 2)));
        assert_eq!(Version::parse(" 0.87.1\n"), Some(Version::new(0, 87, 1)));
        for bad in [
            "",
            "1.5",
            "1.5.2.3",
            "1.x.2",
            "-1.0.0",
            "1..2",
            "99999999999.0.0",
        ] {
            assert_eq!(Version::parse(bad), None, "{bad}");
        }
        assert!(Version::new(0, 87, 1) < Version::new(1, 0, 0));
        assert!(Version::new(0, 9, 0) < Version::new(0, 73, 1));
        let known: Vec<Version> = KNOWN_VERSIONS
            .iter()
            .map(|v| Version::parse(v).unwrap())
            .collect();
        assert!(known.windows(2).all(|w| w[0] < w[1]), "oldest first");
    }

    #[test]
    fn every_feature_has_a_release() {
        use Feature::*;
        for f in [
            DoubleDash,
            StrictMode,
            VersionOnStdout,
            PlainHelpOnStdout,
            SessionId,
            DeltaOnlyWire,
            AgentSettled,
            ProviderRequiresModel,
            ToolPatterns,
            ToolModifiers,
            HelpReportsRuntimeErrors,
            SettledAborted,
            SettingsDefaultTools,
            ModelThinkingLevels,
            RpcEofKillsTools,
        ] {
            since(f);
        }
        assert_eq!(
            FEATURES.len(),
            15,
            "a feature listed twice or missing above"
        );
    }

    #[test]
    fn fill_texts() {
        assert_eq!(
            texts::fill(texts::TOOLS_MODIFIER_PATTERN, &["-t", "+re*"]),
            "-t: +name and -name entries take exact tool names, not patterns: +re*"
        );
        assert_eq!(texts::fill(texts::MODE_REQUIRED, &[]), texts::MODE_REQUIRED);
    }
}
