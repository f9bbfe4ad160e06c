//! Codex CLI (`codex exec --json`) per release, as data: the releases pinned, and the one a
//! newer release is read with (unverified).

/// The pinned releases, oldest first (`codex --version` prints `codex-cli 0.169.0`).
const RELEASES: &[&str] = &["0.169.0"];

/// The pinned releases, oldest first.
pub fn known_versions() -> Vec<&'static str> {
    RELEASES.to_vec()
}

fn version_key(v: &str) -> Option<[u32; 3]> {
    let parts: Option<Vec<u32>> = v.trim().split('.').map(|p| p.parse().ok()).collect();
    match parts?.as_slice() {
        [a, b, c] => Some([*a, *b, *c]),
        _ => None,
    }
}

/// One Codex release's command line: a pinned release's own, or the newest pinned one's
/// standing for a newer release (unverified).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Codex {
    release: &'static str,
    /// The newer release this one stands for, when unverified.
    claimed: Option<[u32; 3]>,
}

impl Codex {
    /// The release pinned at exactly `version` (`0.169.0`, or `codex-cli 0.169.0`).
    pub fn for_version(version: &str) -> Option<Codex> {
        let v = version.trim().trim_start_matches("codex-cli ").trim();
        RELEASES.iter().find(|r| **r == v).map(|release| Codex {
            release,
            claimed: None,
        })
    }

    /// A release newer than every pinned one, read with the newest pinned release and
    /// marked unverified ([`Codex::borrowed`]); `None` otherwise.
    pub fn unverified(version: &str) -> Option<Codex> {
        let want = version_key(version.trim().trim_start_matches("codex-cli ").trim())?;
        let newest = Codex::latest();
        (want > version_key(newest.release)?).then_some(Codex {
            release: newest.release,
            claimed: Some(want),
        })
    }

    /// The grammar a cassette or a recording of `version` is read with: the pinned
    /// release's own, else a newer release's borrowed one.
    pub fn pinned_or_newer(version: &str) -> Option<Codex> {
        Codex::for_version(version).or_else(|| Codex::unverified(version))
    }

    /// The newest pinned release.
    pub fn latest() -> Codex {
        Codex {
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

    /// The version this grammar answers as: the release it stands for.
    pub fn claimed_version(&self) -> String {
        match self.claimed {
            Some([a, b, c]) => format!("{a}.{b}.{c}"),
            None => self.release.to_string(),
        }
    }
}
