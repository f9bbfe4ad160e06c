//! The agent CLIs pi-harness imitates, as data: the name each goes by on a command line
//! (`--agent codex`), the name a message gives it, and the key a cassette's header names it
//! under. Everything else about an agent (its command line, its versions) lives in its own
//! room: the crate root for pi, [`crate::claude`], [`crate::codex`], [`crate::gemini`].

use std::fmt;

/// One agent CLI.
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

impl Agent {
    /// Every agent, in the order they were added.
    pub const ALL: [Agent; 4] = [Agent::Pi, Agent::Claude, Agent::Codex, Agent::Gemini];

    /// The name on a command line and in a cassette header's key (`pi`, `claude`, `codex`,
    /// `gemini`).
    pub fn name(self) -> &'static str {
        match self {
            Agent::Pi => "pi",
            Agent::Claude => "claude",
            Agent::Codex => "codex",
            Agent::Gemini => "gemini",
        }
    }

    /// The name a message gives it (`pi`, `Claude Code`, `Codex`, `Gemini CLI`).
    pub fn display_name(self) -> &'static str {
        match self {
            Agent::Pi => "pi",
            Agent::Claude => "Claude Code",
            Agent::Codex => "Codex",
            Agent::Gemini => "Gemini CLI",
        }
    }

    /// The agent called `name` ([`Agent::name`]).
    pub fn from_name(name: &str) -> Option<Agent> {
        Agent::ALL.into_iter().find(|a| a.name() == name)
    }

    /// The names, for a message listing them (`pi, claude, codex, gemini`).
    pub fn names() -> String {
        Agent::ALL.map(Agent::name).join(", ")
    }

    /// The releases pi-harness has pinned (measured, with a known command line), oldest
    /// first.
    pub fn pinned_versions(self) -> Vec<&'static str> {
        match self {
            Agent::Pi => crate::KNOWN_VERSIONS.to_vec(),
            Agent::Claude => crate::claude::known_versions(),
            Agent::Codex => crate::codex::known_versions(),
            Agent::Gemini => crate::gemini::known_versions(),
        }
    }

    /// The pinned release whose command line a release newer than every pinned one
    /// borrows; `None` for a pinned release, an older one, or a version that is not one.
    pub fn borrowed_for(self, version: &str) -> Option<&'static str> {
        match self {
            Agent::Pi => crate::Grammar::unverified(version).and_then(|g| g.borrowed()),
            Agent::Claude => crate::claude::Claude::unverified(version).and_then(|c| c.borrowed()),
            Agent::Codex => crate::codex::Codex::unverified(version).and_then(|c| c.borrowed()),
            Agent::Gemini => crate::gemini::Gemini::unverified(version).and_then(|g| g.borrowed()),
        }
    }
}

impl fmt::Display for Agent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_listed_once() {
        for a in Agent::ALL {
            assert_eq!(Agent::from_name(a.name()), Some(a));
        }
        assert_eq!(Agent::from_name("opencode"), None);
        assert_eq!(Agent::names(), "pi, claude, codex, gemini");
    }

    #[test]
    fn a_newer_release_borrows_the_newest_pinned_one_of_its_own_agent() {
        assert_eq!(Agent::Codex.borrowed_for("0.170.0"), Some("0.169.0"));
        assert_eq!(Agent::Codex.borrowed_for("0.169.0"), None);
        assert_eq!(Agent::Codex.borrowed_for("0.100.0"), None);
        assert_eq!(Agent::Gemini.borrowed_for("0.62.0"), Some("0.61.0"));
        assert_eq!(Agent::Gemini.borrowed_for("0.61.0"), None);
        assert_eq!(Agent::Gemini.borrowed_for("0.60.9"), None);
        assert_eq!(Agent::Claude.borrowed_for("2.1.333"), Some("2.1.332"));
        assert_eq!(Agent::Pi.borrowed_for("1.6.0"), Some("1.5.2"));
    }
}
