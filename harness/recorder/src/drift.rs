//! Drift: do fresh recordings of real pi still say what the committed cassettes say?
//!
//! This module owns the comparison behind `pi-harness drift`. Each cassette is reduced to two
//! streams, diffed line by line:
//! - the wire ([`wire_stream`]): event types, assistant text and thinking, tool calls and
//!   results, stop reasons, retries, stderr, how the process ended, so a new or reshaped
//!   event shows even when the mapper would absorb it;
//! - the normalized stream ([`normalized_stream`]): what the reference provider's mapper makes
//!   of the same stdout and ending, so a change that alters what integrators receive shows.
//!
//! Timing and fields that vary run to run are left out of both.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use pi_cassette::{Cassette, CassetteError};

mod diff;
mod lines;
mod normalized;
mod wire;

pub use diff::diff;
pub use normalized::normalized_stream;
pub use wire::wire_stream;

/// Why two directories could not be compared.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DriftError {
    /// A directory could not be read.
    #[error("reading {}", path.display())]
    ReadDir {
        /// The directory.
        path: PathBuf,
        /// The failure.
        #[source]
        source: std::io::Error,
    },
    /// An entry of a directory could not be read.
    #[error(transparent)]
    DirEntry(std::io::Error),
    /// A directory holds one cassette twice (plain and compressed, or in two compressions).
    #[error(
        "{} and {} are the same cassette twice (plain and compressed); keep one",
        first.display(),
        second.display()
    )]
    Twice {
        /// The file found first.
        first: PathBuf,
        /// The other one.
        second: PathBuf,
    },
    /// A cassette cannot be read (the message names the file and line).
    #[error(transparent)]
    Cassette(#[from] CassetteError),
}

/// The outcome of comparing two directories.
#[derive(Debug, Clone)]
pub struct Report {
    /// Human-readable: one line per cassette, a diff for each that drifted.
    pub text: String,
    /// True when every committed cassette has a fresh twin with the same stream, and no
    /// fresh cassette lacks a committed one.
    pub clean: bool,
}

/// Cassette files in `dir`, keyed by name without `.gz` or `.zst`.
fn cassettes_in(dir: &Path) -> Result<BTreeMap<String, PathBuf>, DriftError> {
    let mut out = BTreeMap::new();
    let entries = std::fs::read_dir(dir).map_err(|source| DriftError::ReadDir {
        path: dir.to_path_buf(),
        source,
    })?;
    for e in entries {
        let path = e.map_err(DriftError::DirEntry)?.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let key = pi_cassette::input::without_compression_suffix(name);
        if key.ends_with(".cassette.jsonl") {
            if let Some(prev) = out.insert(key.to_string(), path.clone()) {
                return Err(DriftError::Twice {
                    first: prev,
                    second: path,
                });
            }
        }
    }
    Ok(out)
}

/// Compare every cassette of `committed` with its namesake in `fresh`. A fresh cassette of a
/// release newer than every pinned one (its header says `unverified`) is compared with the
/// committed cassette of the release whose grammar it borrowed (`hello.pi160` with
/// `hello.pi152`): what the new release actually changed. When the fresh directory holds
/// such cassettes, committed cassettes of versions recorded neither afresh nor borrowed
/// from are left out (counted in one line), not reported missing.
pub fn compare_dirs(committed: &Path, fresh: &Path) -> Result<Report, DriftError> {
    let old = cassettes_in(committed)?;
    let new = cassettes_in(fresh)?;
    let mut fresh_loaded = BTreeMap::new();
    // Committed name -> (fresh name, what the fresh release is, the borrowed grammar).
    let mut twins: BTreeMap<String, (String, Option<String>)> = BTreeMap::new();
    for (name, path) in &new {
        // Only the header now: each cassette is read whole once, when it is compared
        // (within the held budget), and let go before the next.
        let c = pi_cassette::CassetteReader::open(path)?.header().clone();
        let pair = if old.contains_key(name) {
            Some((name.clone(), None))
        } else {
            borrowed_twin(name, &c).map(|(twin, what)| (twin, Some(what)))
        };
        if let Some((twin, what)) = pair {
            twins.insert(twin, (name.clone(), what));
        }
        fresh_loaded.insert(name.clone(), c);
    }
    let unverified = fresh_loaded.values().any(|c| c.pi.borrowed().is_some());
    let fresh_tags: std::collections::BTreeSet<&str> = twins
        .keys()
        .chain(new.keys())
        .filter_map(|n| version_tag(n))
        .collect();
    let mut text = String::new();
    let mut clean = true;
    let mut same = 0;
    let mut compared = 0;
    let mut skipped = Vec::new();
    for (name, old_path) in &old {
        let Some((fresh_name, what)) = twins.get(name) else {
            if unverified && version_tag(name).is_some_and(|t| !fresh_tags.contains(t)) {
                skipped.push(name.as_str());
                continue;
            }
            compared += 1;
            clean = false;
            let _ = writeln!(text, "MISSING  {name}: committed, but not recorded afresh");
            continue;
        };
        compared += 1;
        let a = normalize(&Cassette::load_held(old_path)?);
        let b = normalize(&Cassette::load_held(&new[fresh_name])?);
        let label = match what {
            Some(what) => format!("{fresh_name} ({what}) vs {name}"),
            None => name.clone(),
        };
        if a == b {
            same += 1;
            let _ = writeln!(text, "same     {label} ({} stream lines)", a.len());
        } else {
            clean = false;
            let _ = writeln!(
                text,
                "DRIFT    {label}: committed {} vs fresh {}",
                old_path.display(),
                new[fresh_name].display()
            );
            text.push_str(&diff(&a, &b, 3));
        }
    }
    let paired: std::collections::BTreeSet<&String> = twins.values().map(|(n, _)| n).collect();
    for name in new.keys().filter(|n| !paired.contains(n)) {
        clean = false;
        let _ = writeln!(text, "NEW      {name}: recorded afresh, but not committed");
    }
    if !skipped.is_empty() {
        let _ = writeln!(
            text,
            "skipped  {} committed cassettes of versions not recorded afresh",
            skipped.len()
        );
    }
    let _ = writeln!(
        text,
        "{}: {same} of {compared} cassettes unchanged",
        if clean { "no drift" } else { "DRIFT" },
    );
    Ok(Report { text, clean })
}

/// The version tag of a corpus name (`pi152` in `hello.pi152.cassette.jsonl`).
fn version_tag(name: &str) -> Option<&str> {
    let stem = name.strip_suffix(".cassette.jsonl")?;
    stem.rsplit_once('.').map(|(_, tag)| tag)
}

/// For a fresh cassette of an unverified release: the committed name it is compared with
/// (its tag swapped for the borrowed release's, as its agent's row tags it) and what it is
/// (`pi 1.6.0, unverified, grammar of 1.5.2`).
fn borrowed_twin(name: &str, header: &pi_cassette::Header) -> Option<(String, String)> {
    let borrowed = header.pi.borrowed()?;
    let tag = version_tag(name)?;
    let stem = name.strip_suffix(&format!(".{tag}.cassette.jsonl"))?;
    let agent = header.agent().spec();
    let twin_tag = agent.tag_of(borrowed)?;
    let cli = agent.display_name;
    Some((
        format!("{stem}.{twin_tag}.cassette.jsonl"),
        format!(
            "{cli} {}, unverified, grammar of {borrowed}",
            header.pi.version
        ),
    ))
}

/// The coarse stream of a cassette: what must not change when pi is re-recorded.
/// Timing, usage, timestamps and redacted values are left out; consecutive
/// `message_update` lines collapse into one line with their count; `tool_execution_update`
/// lines (their number depends on timing) are dropped; consecutive `tool_execution_end` lines
/// are sorted (parallel tools finish in any order).
pub fn normalize(c: &Cassette) -> Vec<String> {
    let mut out = wire_stream(c);
    if c.header.mode.is_some() && c.header.agent() == pi_grammar::Agent::Pi {
        // An RPC session: the wire stream holds the client's actions and pi's answers;
        // the json-mode mapper's stream does not apply to it.
        return out;
    }
    out.push("--- normalized stream ---".into());
    out.extend(normalized_stream(c));
    out
}

#[cfg(test)]
mod tests;
