//! Gemini CLI (`gemini -p ... --output-format stream-json`) per release, as data: the
//! releases pinned and which one a newer release borrows. `gemini --version` prints the bare
//! version (`0.61.0`). Pure, std only.
//!
//! ```
//! use pi_grammar::gemini::Gemini;
//!
//! assert_eq!(Gemini::for_version("0.61.0").unwrap().version(), "0.61.0");
//! let next = Gemini::unverified("0.62.0").unwrap();
//! assert_eq!((next.borrowed(), next.claimed_version().as_str()), (Some("0.61.0"), "0.62.0"));
//! assert!(Gemini::pinned_or_newer("0.60.0").is_none());
//! ```

/// The pinned releases, oldest first.
const RELEASES: &[&str] = &["0.61.0"];

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

/// One Gemini CLI release: a pinned release's own data, or the newest pinned one's standing
/// for a newer release (unverified).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gemini {
    release: &'static str,
    /// The newer release this one stands for, when unverified.
    claimed: Option<[u32; 3]>,
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
        let want = version_key(version)?;
        let newest = Gemini::latest();
        (want > version_key(newest.release)?).then_some(Gemini {
            release: newest.release,
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

    /// The version this release answers as: the release it stands for.
    pub fn claimed_version(&self) -> String {
        match self.claimed {
            Some([a, b, c]) => format!("{a}.{b}.{c}"),
            None => self.release.to_string(),
        }
    }
}
