//! A cassette's name, in the one form every tool takes: `codex/codex_text.cx0169` (a case
//! name: its path below `cassettes/` without `.cassette.jsonl`), or the same with
//! `cassettes/` before it and any cassette suffix after it (what `pi-harness corpus list`
//! prints: `cassettes/codex/codex_text.cx0169.cassette.jsonl`). `conform --case`, `cassette
//! show` and the test helpers (through `cassette show`) read a name with [`case_name`] and,
//! when it names nothing, say the nearest name there is ([`did_you_mean`]).
//!
//! ```
//! use conformance::names::{case_name, did_you_mean};
//! assert_eq!(case_name("cassettes/codex/codex_text.cx0169.cassette.jsonl"), "codex/codex_text.cx0169");
//! assert_eq!(case_name("./codex/codex_text.cx0169.cassette.jsonl.zst"), "codex/codex_text.cx0169");
//! assert_eq!(case_name("codex/codex_text.cx0169"), "codex/codex_text.cx0169");
//! let names = ["codex/codex_text.cx0169", "gemini/gemini_text.gm061"];
//! assert_eq!(did_you_mean("codex/codex_txt.cx0169", names), Some("codex/codex_text.cx0169"));
//! assert_eq!(did_you_mean("gemini_text.gm061", names), Some("gemini/gemini_text.gm061"));
//! assert_eq!(did_you_mean("nothing/like/it", names), None);
//! ```

use std::path::Path;

use crate::bundle;

/// The case name `given` means: `./` and `cassettes/` in front, and a cassette file's
/// suffix (`.cassette.jsonl`, `.gz`, `.zst`) behind, left out.
pub fn case_name(given: &str) -> String {
    let mut s = given.trim();
    while let Some(rest) = s.strip_prefix("./") {
        s = rest;
    }
    let s = s.strip_prefix("cassettes/").unwrap_or(s);
    let s = pi_cassette::input::without_compression_suffix(s);
    s.strip_suffix(".cassette.jsonl").unwrap_or(s).to_string()
}

/// The name among `names` (each compared in its [`case_name`] form, given back as it is)
/// that `given` most likely meant: the one whose last part is
/// `given`'s (a name given without its directory), else the nearest by edit distance when it
/// is near enough (a third of the name's length, at least 2 edits); `None` when nothing is.
pub fn did_you_mean<'a>(given: &str, names: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let want = case_name(given);
    let base = want.rsplit('/').next().unwrap_or(&want).to_string();
    let mut best: Option<(usize, &'a str)> = None;
    for name in names {
        let plain = case_name(name);
        if plain.rsplit('/').next() == Some(base.as_str()) && plain != want {
            return Some(name);
        }
        let d = strsim::levenshtein(&want, &plain);
        if best.map_or(true, |(bd, _)| d < bd) {
            best = Some((d, name));
        }
    }
    let limit = (want.chars().count() / 3).max(2);
    best.filter(|(d, _)| *d <= limit).map(|(_, n)| n)
}

/// Every cassette the binary carries, by case name, with its path inside the bundle
/// (`cassettes/codex/codex_text.cx0169.cassette.jsonl`).
pub fn bundled() -> Vec<(String, &'static str)> {
    bundle::files()
        .iter()
        .filter_map(|(path, _)| {
            let rel = path.strip_prefix("cassettes/")?;
            if rel.starts_with("scripts/") {
                return None;
            }
            pi_cassette::input::is_cassette_file_name(rel).then(|| (case_name(rel), *path))
        })
        .collect()
}

/// What `given` names as a cassette: a file (its path as given), else the bundled cassette of
/// that name (its file in the unpacked bundle, and the case name); else the one-line error
/// that says so, with the nearest bundled name (or file beside the path given) when one is
/// near.
pub fn resolve(given: &Path) -> Result<(std::path::PathBuf, Option<String>), String> {
    if given.as_os_str() == "-" || given.exists() {
        return Ok((given.to_path_buf(), None));
    }
    let text = given.to_string_lossy();
    let want = case_name(&text);
    let all = bundled();
    if !given.is_absolute() && !want.split('/').any(|p| p == "..") {
        if let Some((name, path)) = all.iter().find(|(n, _)| *n == want) {
            let (cassettes, _) = bundle::dirs()?;
            let rel = path.strip_prefix("cassettes/").unwrap_or(path);
            return Ok((cassettes.join(rel), Some(name.clone())));
        }
    }
    let mut near = siblings(given);
    near.extend(all.iter().map(|(n, _)| n.clone()));
    let hint = did_you_mean(&text, near.iter().map(String::as_str))
        .map(|n| format!("; did you mean {n}?"))
        .unwrap_or_default();
    Err(format!(
        "{text}: no such cassette: not a file, nor a name in the bundled corpus (`pi-harness corpus list` shows them: codex/codex_text.cx0169 or its path){hint}"
    ))
}

/// The cassette files in the directory `given` would be in (that directory joined with
/// their names), for a "did you mean" on a mistyped path.
fn siblings(given: &Path) -> Vec<String> {
    let Some(dir) = given.parent() else {
        return Vec::new();
    };
    let shown = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let Ok(entries) = std::fs::read_dir(shown) else {
        return Vec::new();
    };
    entries
        .flatten()
        .take(10_000)
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            pi_cassette::input::is_cassette_file_name(&name)
                .then(|| dir.join(&name).to_string_lossy().into_owned())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_names_one_case() {
        for form in [
            "codex/codex_text.cx0169",
            "cassettes/codex/codex_text.cx0169",
            "cassettes/codex/codex_text.cx0169.cassette.jsonl",
            "codex/codex_text.cx0169.cassette.jsonl.gz",
            "./cassettes/codex/codex_text.cx0169.cassette.jsonl",
        ] {
            assert_eq!(case_name(form), "codex/codex_text.cx0169", "{form}");
        }
    }

    #[test]
    fn the_bundle_is_listed_by_case_name_without_scripts() {
        let all = bundled();
        assert!(all.iter().any(|(n, p)| n == "codex/codex_text.cx0169"
            && *p == "cassettes/codex/codex_text.cx0169.cassette.jsonl"));
        assert!(all.iter().all(|(n, _)| !n.starts_with("scripts/")));
    }

    #[test]
    fn a_typo_gets_the_nearest_name_and_nonsense_gets_none() {
        let all = bundled();
        let names = || all.iter().map(|(n, _)| n.as_str());
        assert_eq!(
            did_you_mean("gemini/gemni_text.gm061", names()),
            Some("gemini/gemini_text.gm061")
        );
        assert_eq!(
            did_you_mean("cassettes/codex/codex_txt.cx0169.cassette.jsonl", names()),
            Some("codex/codex_text.cx0169"),
            "a typo in the long form too"
        );
        assert_eq!(did_you_mean("zzzzzzzzzzzzzzzzzzzzzz", names()), None);
    }
}
