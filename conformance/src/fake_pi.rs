//! Finding the fake-pi binary conform gives every case as its `pi` (or `claude`).

use std::path::{Path, PathBuf};
use std::process::Command;

/// Find fake-pi: `--fake-pi`, `$PI_HARNESS_FAKE_PI`, beside this executable, else build it
/// (see [`find_or_build`]).
pub fn find_fake_pi(explicit: Option<&Path>) -> Result<PathBuf, String> {
    if let Some(p) = explicit {
        return Ok(p.to_path_buf());
    }
    if let Some(p) = std::env::var_os("PI_HARNESS_FAKE_PI") {
        return Ok(PathBuf::from(p));
    }
    find_or_build("fake-pi")
}

/// A binary of this workspace (`fake-pi`, `pi-supervisor`) beside this executable (or one
/// directory up), else built with the cargo that runs us (`$CARGO`, set by `cargo run`, which
/// builds only the binary it runs): `cargo build -p fake-pi -p pi-provider -p pi-harness --bins`, with
/// `--release` for a release pi-harness. Without cargo, an error names the command to run.
pub fn find_or_build(name: &str) -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| format!("current executable: {e}"))?;
    let dirs: Vec<PathBuf> = exe
        .ancestors()
        .skip(1)
        .take(2)
        .map(Path::to_path_buf)
        .collect();
    if let Some(found) = dirs.iter().map(|d| d.join(name)).find(|p| p.is_file()) {
        return Ok(found);
    }
    let release = dirs.first().is_some_and(|d| d.ends_with("release"));
    let flag = if release { " --release" } else { "" };
    let hint = format!(
        "{name} not found beside {}: build it with `cargo build{flag} -p fake-pi -p pi-provider -p pi-harness --bins`",
        exe.display()
    );
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml");
    let Some(cargo) = std::env::var_os("CARGO") else {
        return Err(hint);
    };
    if !manifest.is_file() {
        return Err(hint);
    }
    eprintln!("conform: building fake-pi and pi-supervisor (once)...");
    let mut cmd = Command::new(cargo);
    cmd.args([
        "build",
        "-q",
        "-p",
        "fake-pi",
        "-p",
        "pi-provider",
        "-p",
        "pi-harness",
        "--bins",
        "--manifest-path",
    ])
    .arg(&manifest);
    if release {
        cmd.arg("--release");
    }
    let status = cmd.status().map_err(|e| format!("{hint} ({e})"))?;
    let bin = dirs.first().map(|d| d.join(name)).unwrap_or_default();
    if status.success() && bin.is_file() {
        Ok(bin)
    } else {
        Err(hint)
    }
}
