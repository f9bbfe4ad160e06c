//! What the test modules share: where the repository and its cassettes are, the
//! `pi-harness` binary as a command, a per-test marker and the processes that carry it,
//! reading a normalized stream, and what counts as fake-pi refusing a call.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use pi_wire::message::Message;

/// The repository's root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The committed cassettes.
pub fn cassettes() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../cassettes")
}

/// The `pi-harness` binary under test.
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_pi-harness")
}

/// pi-harness with no backtrace asked for (the test runner's environment may ask for one).
pub fn pih() -> Command {
    let mut c = Command::new(bin());
    c.env_remove("RUST_BACKTRACE")
        .env_remove("RUST_LIB_BACKTRACE");
    c
}

/// A marker unique to this test process and test, set on every command it starts.
pub fn marker(test: &str) -> String {
    format!("cli-cassette-{}-{test}", std::process::id())
}

/// pi-harness carrying the test's [`marker`].
pub fn pi_harness(test: &str) -> Command {
    let mut c = Command::cargo_bin("pi-harness").unwrap();
    c.env("PI_HARNESS_TEST_MARKER", marker(test));
    c
}

/// Pids (other than ours) whose environment carries the test's marker.
pub fn processes_with_marker(test: &str) -> Vec<u32> {
    let needle = format!("PI_HARNESS_TEST_MARKER={}", marker(test));
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if pid == std::process::id() {
            continue;
        }
        if let Ok(env) = std::fs::read(entry.path().join("environ")) {
            if env.split(|&b| b == 0).any(|kv| kv == needle.as_bytes()) {
                found.push(pid);
            }
        }
    }
    found
}

/// The normalized messages of a `--json` stdout, one per line.
pub fn messages(stdout: &[u8]) -> Vec<Message> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a message ({e}): {l}")))
        .collect()
}

/// fake-pi refused the call (a mismatch: exit 96..=99).
pub fn refused(code: Option<i32>) -> bool {
    matches!(code, Some(96..=99))
}
