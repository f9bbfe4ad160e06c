//! The pinned packages themselves, for `install`: an npm tarball's sha512 checked against its
//! pin, and an installed package's files checked against the tarball's, byte for byte. An
//! install keeps its verified tarballs (`DIR/.pinned/`), and a cached install is trusted only
//! when they still hash to their pins and every file of theirs is the installed one: nothing
//! from the cache is run before (a cached binary was run to ask its version, and a forged
//! `package-lock.json` passed as the integrity check). The hashing is node's (from `PATH`),
//! the unpacking tar's, as the install's own.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Where an install keeps the tarball of `pkg` (`@openai/codex` -> `.pinned/@openai+codex.tgz`).
pub fn kept(dir: &Path, pkg: &str) -> PathBuf {
    dir.join(".pinned")
        .join(format!("{}.tgz", pkg.replace('/', "+")))
}

/// `sha512-BASE64` of `file`, as npm writes integrity values (node's crypto, node from PATH).
pub fn integrity_of(file: &Path) -> anyhow::Result<String> {
    let node = which("node").ok_or_else(|| anyhow::anyhow!("node not found on PATH"))?;
    let out = Command::new(node)
        .arg("-e")
        .arg("process.stdout.write(require('crypto').createHash('sha512').update(require('fs').readFileSync(process.argv[1])).digest('base64'))")
        .arg(file)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .map_err(|e| anyhow::anyhow!("hashing {}: cannot start node: {e}", file.display()))?;
    if !out.status.success() {
        anyhow::bail!("hashing {}: node failed ({})", file.display(), out.status);
    }
    Ok(format!(
        "sha512-{}",
        String::from_utf8_lossy(&out.stdout).trim()
    ))
}

/// `tgz` hashes to `pinned`, else an error naming both.
pub fn check_integrity(tgz: &Path, pkg: &str, pinned: &str) -> anyhow::Result<()> {
    let got = integrity_of(tgz)?;
    if got != pinned {
        anyhow::bail!("{pkg}: integrity mismatch: got {got}, pinned {pinned}");
    }
    Ok(())
}

/// Every regular file of the npm tarball `tgz` (under its `package/`; only the members
/// `only` names when given) is the file of the same path under `installed`, byte for byte;
/// else an error naming the first that differs or is missing.
pub fn same_files(tgz: &Path, installed: &Path, only: &[&str]) -> anyhow::Result<()> {
    let tmp = tempfile::Builder::new()
        .prefix("pi-harness-pinned-")
        .tempdir()?;
    let mut tar = Command::new("tar");
    tar.arg("-xzf").arg(tgz).arg("-C").arg(tmp.path());
    tar.args(only.iter().map(|m| format!("package/{m}")));
    let status = tar
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| anyhow::anyhow!("unpacking {}: cannot start tar: {e}", tgz.display()))?;
    if !status.success() {
        anyhow::bail!("unpacking {}: tar failed ({status})", tgz.display());
    }
    let root = tmp.path().join("package");
    let mut stack = vec![root.clone()];
    let mut files = 0;
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d)? {
            let entry = entry?;
            let path = entry.path();
            let kind = entry.file_type()?;
            if kind.is_dir() {
                stack.push(path);
                continue;
            }
            if !kind.is_file() {
                continue;
            }
            let rel = path.strip_prefix(&root).unwrap_or(&path);
            let there = installed.join(rel);
            let same = std::fs::symlink_metadata(&there).is_ok_and(|m| m.is_file())
                && std::fs::read(&there).ok() == Some(std::fs::read(&path)?);
            if !same {
                anyhow::bail!(
                    "{} is not the file of the pinned package {}",
                    there.display(),
                    tgz.display()
                );
            }
            files += 1;
        }
    }
    if files == 0 {
        anyhow::bail!("{} holds no file", tgz.display());
    }
    Ok(())
}

/// One pinned package of an install: its name, its pinned integrity, where it is installed
/// (under the install's dir) and the members that were kept (all when empty).
pub struct Pin<'a> {
    /// The package's name (`@openai/codex`).
    pub pkg: &'a str,
    /// Its pinned integrity (`sha512-...`).
    pub integrity: &'a str,
    /// Its files, relative to the install's dir (`node_modules/@openai/codex`).
    pub installed: String,
    /// The members kept (`claude`, `package.json`); empty: every file.
    pub only: Vec<&'a str>,
}

/// The install in `dir` is what is pinned: each package's kept tarball hashes to its pin and
/// its files are the installed ones. Nothing in `dir` is run.
pub fn verify(dir: &Path, pins: &[Pin<'_>]) -> anyhow::Result<()> {
    for p in pins {
        let tgz = kept(dir, p.pkg);
        if !tgz.is_file() {
            anyhow::bail!("{}: no pinned tarball kept", tgz.display());
        }
        check_integrity(&tgz, p.pkg, p.integrity)?;
        same_files(&tgz, &dir.join(&p.installed), &p.only)?;
    }
    Ok(())
}

fn which(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}
