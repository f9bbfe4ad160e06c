//! Where the binaries a test needs are: fake-pi, pi-supervisor and pi-harness.
//!
//! Looked up, in order: the environment variable (`PI_TESTKIT_FAKE_PI`,
//! `PI_TESTKIT_SUPERVISOR`, `PI_TESTKIT_PI_HARNESS`); inside this workspace, the workspace's own binaries, rebuilt
//! once per test process so that a test never runs a stale one (a lone `cargo test -p X`
//! does not build other packages' binaries); otherwise `PATH`.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The path of the fake-pi binary: `PI_TESTKIT_FAKE_PI`, else this workspace's own (built
/// once per test process), else `fake-pi` on `PATH`. Panics, saying how to provide it, when
/// there is none.
pub fn fake_pi() -> PathBuf {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| find("fake-pi", "PI_TESTKIT_FAKE_PI"))
        .clone()
}

/// The path of the pi-harness binary, found like [`fake_pi`] (`PI_TESTKIT_PI_HARNESS`).
pub fn pi_harness() -> PathBuf {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| find("pi-harness", "PI_TESTKIT_PI_HARNESS"))
        .clone()
}

/// The path of the pi-supervisor binary, found like [`fake_pi`] (`PI_TESTKIT_SUPERVISOR`).
pub fn supervisor() -> PathBuf {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| find("pi-supervisor", "PI_TESTKIT_SUPERVISOR"))
        .clone()
}

/// Put the executable `src` at `dst` under another name (`pi`, `claude` beside a
/// `fake-pi.conf`): a hard link when the two are on one file system, else a copy. A copy is
/// written through a file descriptor that a process forked meanwhile by another test thread
/// holds until it execs, and running `dst` in that moment fails with "Text file busy"; a
/// link writes nothing. An existing `dst` is replaced (removed first: writing into it could
/// write into the linked binary itself).
pub fn install_exe(src: &std::path::Path, dst: &std::path::Path) -> std::io::Result<()> {
    match std::fs::remove_file(dst) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    if std::fs::hard_link(src, dst).is_ok() {
        return Ok(());
    }
    std::fs::copy(src, dst).map(|_| ())
}

/// A binary of this workspace (`fake-pi`, `pi-supervisor`, `pi-harness`), when the tests run
/// inside it: the workspace's binaries are built once per test process (`cargo build
/// --bins`), so a test never runs a stale one; panics when that build fails.
pub fn workspace_bin(name: &str) -> Option<PathBuf> {
    let root = workspace_root()?;
    static BUILT: OnceLock<bool> = OnceLock::new();
    let built = *BUILT.get_or_init(|| {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let status = std::process::Command::new(cargo)
            .current_dir(&root)
            .args([
                "build",
                "-q",
                "-p",
                "fake-pi",
                "-p",
                "pi-provider",
                "-p",
                "pi-harness",
                "--bins",
            ])
            .status();
        matches!(status, Ok(s) if s.success())
    });
    assert!(built, "building this workspace's binaries failed");
    let mut dirs: Vec<PathBuf> = target_dir().into_iter().collect();
    // Doctests run from a temp dir: fall back to the workspace's target dir.
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    dirs.push(target.join("debug"));
    dirs.into_iter().map(|d| d.join(name)).find(|b| b.is_file())
}

/// The workspace this crate was built in, when it is still there (tests of this repo).
fn workspace_root() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    root.join("fake-pi/Cargo.toml")
        .is_file()
        .then(|| root.canonicalize().unwrap_or(root))
}

/// `target/<profile>` of the running test executable.
fn target_dir() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let deps = exe.parent()?;
    // Test executables live in target/<profile>/deps; doctests and examples elsewhere.
    let dir = if deps.file_name().is_some_and(|n| n == "deps") {
        deps.parent()?
    } else {
        deps
    };
    Some(dir.to_path_buf())
}

/// `name` from `var`, the workspace or `PATH`, in that order.
fn find(name: &str, var: &str) -> PathBuf {
    if let Some(p) = std::env::var_os(var).filter(|p| !p.is_empty()) {
        return PathBuf::from(p);
    }
    if let Some(p) = workspace_bin(name) {
        return p;
    }
    if let Some(p) = on_path(name) {
        return p;
    }
    panic!("{name} not found: set {var}, or put {name} on PATH (cargo install --git ... fake-pi pi-harness)")
}

/// `name` in a directory of `PATH`.
fn on_path(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// Provider options for tests: the supervisor embedded in the test executable, a 2 s
/// grace period.
#[cfg(feature = "provider")]
pub fn provider_options() -> pi_provider::ProviderOptions {
    pi_provider::ProviderOptions {
        grace: std::time::Duration::from_millis(2000),
        ..pi_provider::ProviderOptions::default()
    }
}
