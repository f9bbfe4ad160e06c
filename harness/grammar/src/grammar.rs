//! [`Grammar`]: the command-line grammar of one pinned pi version, and what it knows
//! without a command line: its flags, thinking levels, subcommands, wire dialect and
//! `--help` text.

use crate::flags::FlagKind::{OptionalValue, Repeated, Switch, Value};
use crate::flags::{FlagSpec, FLAGS};
use crate::version::{since, Feature, Version, COMMANDS, KNOWN_VERSIONS, THINKING_LEVELS};

/// The command-line grammar of one pi version: a pinned version's own, or, for a release
/// newer than every pinned one, the newest pinned grammar borrowed (*unverified*: the
/// release answers `--version` as itself, everything else as the version it borrowed from).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grammar {
    version: Version,
    claimed: Version,
}

/// How `--mode json` writes assistant messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireDialect {
    /// Deltas plus two full snapshot copies of the partial message (0.73.1).
    SnapshotDelta,
    /// Deltas only.
    DeltaOnly,
}

impl Grammar {
    /// The grammar of a pinned pi version as `pi --version` prints it; `None` when it is
    /// not one of [`KNOWN_VERSIONS`] (fake-pi imitates only measured versions).
    pub fn for_version(version: &str) -> Option<Grammar> {
        let v = Version::parse(version)?;
        KNOWN_VERSIONS
            .iter()
            .any(|k| Version::parse(k) == Some(v))
            .then_some(Grammar {
                version: v,
                claimed: v,
            })
    }

    /// The newest pinned version.
    pub fn newest_pinned() -> Grammar {
        let v = KNOWN_VERSIONS
            .iter()
            .filter_map(|k| Version::parse(k))
            .max()
            .expect("KNOWN_VERSIONS is not empty");
        Grammar {
            version: v,
            claimed: v,
        }
    }

    /// A release newer than every pinned version, read with the newest pinned grammar and
    /// marked unverified ([`Grammar::borrowed`]); `None` for a pinned version, an older one
    /// or no version at all (those stay refused: there is no later data to borrow from).
    pub fn unverified(version: &str) -> Option<Grammar> {
        let want = Version::parse(version)?;
        let newest = Grammar::newest_pinned();
        (want > newest.version).then_some(Grammar {
            version: newest.version,
            claimed: want,
        })
    }

    /// The grammar a cassette or a recording of `version` is read with: the pinned
    /// version's own, else a newer release's borrowed one ([`Grammar::unverified`]).
    pub fn pinned_or_newer(version: &str) -> Option<Grammar> {
        Grammar::for_version(version).or_else(|| Grammar::unverified(version))
    }

    /// The pinned version whose grammar this one borrowed, when it is unverified.
    pub fn borrowed(&self) -> Option<&'static str> {
        (self.claimed != self.version).then(|| self.version())
    }

    /// The version this grammar answers as (`pi --version`): the release it stands for,
    /// which for an unverified grammar is newer than [`Grammar::version`].
    pub fn claimed(&self) -> Version {
        self.claimed
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
        let version = pick
            .or_else(|| known.min())
            .expect("KNOWN_VERSIONS is not empty");
        Grammar {
            version,
            claimed: version,
        }
    }

    /// The pinned version whose data this grammar is (`0.73.1`; for an unverified grammar
    /// the version it borrowed, see [`Grammar::claimed`]).
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

    /// Whether this version has a behaviour (see [`FEATURES`](crate::FEATURES)).
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

    /// A short `--help` text listing this version's flags (fake-pi prints it; real pi's
    /// help is longer and not reproduced).
    pub fn help_text(&self) -> String {
        let mut s = format!(
            "pi {} (fake-pi stand-in) - AI coding assistant\n\nUsage:\n  pi [options] [@files...] [messages...]\n\nOptions:\n",
            self.claimed
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
