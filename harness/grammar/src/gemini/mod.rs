//! Gemini CLI (`gemini -p ... --output-format stream-json`) per release, as data: the
//! releases pinned and which one a newer release borrows; the command line read from the
//! help text the CLI prints (`data/gemini/VERSION/`, written by `scripts/gemini-grammar.sh`,
//! embedded at build time), argv read as its parser (yargs) reads it, with its exact errors
//! (the message, then the help, on stderr, exit 1) and `--help`/`--version` ([`Gemini::parse`],
//! [`yargs`]), where the prompt comes from ([`join_prompt`]), and what a call runs with
//! ([`effective()`]). `gemini --version` prints the bare version (`0.61.0`). Pure, std only:
//! reading the settings files is the caller's.
//!
//! ```
//! use pi_grammar::gemini::Gemini;
//!
//! assert_eq!(Gemini::for_version("0.61.0").unwrap().version(), "0.61.0");
//! let next = Gemini::unverified("0.62.0").unwrap();
//! assert_eq!((next.borrowed(), next.claimed_version().as_str()), (Some("0.61.0"), "0.62.0"));
//! assert!(Gemini::pinned_or_newer("0.60.0").is_none());
//!
//! let argv: Vec<String> = ["-p", "hi", "-m", "gemini-2.5-flash", "-o", "stream-json"]
//!     .iter().map(|s| s.to_string()).collect();
//! let parsed = Gemini::latest().parse(&argv).unwrap();
//! assert_eq!(parsed.value("model"), Some("gemini-2.5-flash"));
//! assert_eq!(parsed.prompt_arg().as_deref(), Some("hi"));
//! let stop = Gemini::latest().parse(&["--bogus".to_string()]).unwrap_err();
//! assert_eq!((stop.code, stop.stderr.lines().next()), (1, Some("Unknown argument: bogus")));
//! ```

mod effective;
pub mod yargs;

pub use effective::{
    effective, Effective, Layer, Resolved, Source, DEFAULT_MAX_ATTEMPTS, DEFAULT_MODEL,
};
pub use yargs::{GeminiOption, Kind, Parsed, Stop};

/// One release's texts, embedded: `--version` and `--help`.
struct Texts {
    version: &'static str,
    help: &'static str,
}

/// The measured releases' texts, oldest first (one per entry of `RELEASES`).
const TEXTS: &[Texts] = &[Texts {
    version: include_str!("../../data/gemini/0.61.0/version.txt"),
    help: include_str!("../../data/gemini/0.61.0/help.txt"),
}];

/// Each release's options read from its help text, once.
fn options(i: usize) -> &'static [GeminiOption] {
    static ALL: std::sync::OnceLock<Vec<Vec<GeminiOption>>> = std::sync::OnceLock::new();
    &ALL.get_or_init(|| {
        TEXTS
            .iter()
            .map(|t| yargs::options_from_help(t.help))
            .collect()
    })[i]
}

/// The prompt Gemini sends: piped stdin (when not empty) before the argv prompt, a blank
/// line between (as 0.61.0 joins them: `${stdin}\n\n${input}`), or either alone; `None`
/// when neither gives one.
pub fn join_prompt(argv_prompt: Option<&str>, stdin: Option<&str>) -> Option<String> {
    match (
        stdin.filter(|s| !s.is_empty()),
        argv_prompt.filter(|p| !p.is_empty()),
    ) {
        (Some(s), Some(p)) => Some(format!("{s}\n\n{p}")),
        (Some(s), None) => Some(s.to_string()),
        (None, Some(p)) => Some(p.to_string()),
        (None, None) => None,
    }
}

/// The pinned releases, oldest first: Gemini CLI's row of the registry ([`crate::agents`]).
const RELEASES: &[&str] = &crate::agents::versions_of(&crate::agents::gemini::RELEASES);

/// The pinned releases, oldest first.
pub fn known_versions() -> Vec<&'static str> {
    RELEASES.to_vec()
}

/// One Gemini CLI release: a pinned release's own data, or the newest pinned one's standing
/// for a newer release (unverified).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gemini {
    release: &'static str,
    /// The newer release this one stands for, when unverified.
    claimed: Option<crate::Version>,
}

impl Gemini {
    /// The release pinned at exactly `version`.
    pub fn for_version(version: &str) -> Option<Gemini> {
        let v = version.trim();
        RELEASES.iter().find(|r| **r == v).map(|release| Gemini {
            release,
            claimed: None,
        })
    }

    /// A release newer than every pinned one, read with the newest pinned release and
    /// marked unverified ([`Gemini::borrowed`]); `None` otherwise.
    pub fn unverified(version: &str) -> Option<Gemini> {
        let want = crate::Agent::Gemini.spec().newer_than_pinned(version)?;
        Some(Gemini {
            release: Gemini::latest().release,
            claimed: Some(want),
        })
    }

    /// The release a cassette or a recording of `version` is read with: the pinned
    /// release's own, else a newer release's borrowed one.
    pub fn pinned_or_newer(version: &str) -> Option<Gemini> {
        Gemini::for_version(version).or_else(|| Gemini::unverified(version))
    }

    /// The newest pinned release.
    pub fn latest() -> Gemini {
        Gemini {
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

    /// What `gemini --version` prints (the claimed release's version).
    pub fn version_line(&self) -> String {
        TEXTS[self.index()]
            .version
            .replacen(self.release, &self.claimed_version(), 1)
    }

    /// What `gemini --help` prints.
    pub fn help(&self) -> &'static str {
        TEXTS[self.index()].help
    }

    /// The options, as the help lists them.
    pub fn options(&self) -> &'static [GeminiOption] {
        options(self.index())
    }

    /// Read `argv` (without the program name) as this release does. `Err`: what it prints
    /// instead of running (`--help`, `--version`: exit 0; yargs' errors and the CLI's own
    /// checks: the message and the help on stderr, exit 1).
    pub fn parse(&self, argv: &[String]) -> Result<Parsed, Stop> {
        yargs::parse(self.options(), self.help(), &self.version_line(), argv)
    }

    /// The version this release answers as: the release it stands for.
    pub fn claimed_version(&self) -> String {
        match self.claimed {
            Some(v) => v.to_string(),
            None => self.release.to_string(),
        }
    }
}

#[cfg(test)]
mod tests;
