//! Test support: cassettes written into a temp dir, fake-pi commands carrying a unique
//! marker variable, and the proof (a scan of `/proc/*/environ`) that no process carrying
//! the marker is left behind.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

pub const MARKER_VAR: &str = "PI_HARNESS_TEST_MARKER";

/// One test's sandbox: a temp dir and a marker value no other test uses.
pub struct Sandbox {
    pub dir: tempfile::TempDir,
    pub marker: String,
    checked: bool,
}

impl Sandbox {
    pub fn new() -> Sandbox {
        static N: AtomicUsize = AtomicUsize::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        Sandbox {
            dir: tempfile::tempdir().unwrap(),
            marker: format!(
                "fake-pi-test-{}-{}-{nanos}",
                std::process::id(),
                N.fetch_add(1, Ordering::SeqCst)
            ),
            checked: false,
        }
    }

    /// Write a cassette: a header for `version` with `extra` header fields (JSON object
    /// members, without braces, may be empty) and the given record lines.
    pub fn cassette(&self, name: &str, version: &str, extra: &str, records: &[&str]) -> PathBuf {
        let dialect = if version == "0.73.1" {
            "snapshot+delta"
        } else {
            "delta-only"
        };
        let mut text = format!(
            r#"{{"format":"pi-cassette","version":1,"pi":{{"version":"{version}","dialect":"{dialect}"}},"scenario":{{"name":"{name}","description":"test"}},"origin":{{"kind":"hand-made","timing":"synthetic"}}{}{extra}}}"#,
            if extra.is_empty() { "" } else { "," }
        );
        text.push('\n');
        for r in records {
            text.push_str(r);
            text.push('\n');
        }
        self.write(&format!("{name}.cassette.jsonl"), &text)
    }

    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    /// fake-pi under assert_cmd, with the marker, the cassette and instant speed.
    pub fn cmd(&self, cassette: &Path) -> assert_cmd::Command {
        let mut c = assert_cmd::Command::cargo_bin("fake-pi").unwrap();
        c.env(MARKER_VAR, &self.marker)
            .env("FAKE_PI_CASSETTE", cassette)
            .env("FAKE_PI_SPEED", "0")
            .env_remove("FAKE_PI_CHILD_SPEC")
            .current_dir(self.dir.path());
        c
    }

    /// fake-pi as a std process (for signals and timing), stdio piped, instant speed.
    pub fn process(&self, cassette: &Path) -> std::process::Command {
        let mut c = std::process::Command::new(assert_cmd::cargo::cargo_bin("fake-pi"));
        c.env(MARKER_VAR, &self.marker)
            .env("FAKE_PI_CASSETTE", cassette)
            .env("FAKE_PI_SPEED", "0")
            .env_remove("FAKE_PI_CHILD_SPEC")
            .current_dir(self.dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    }

    /// Live (non-zombie) processes carrying this sandbox's marker.
    pub fn survivors(&self) -> Vec<i32> {
        marked_processes(&self.marker)
    }

    /// Kill these processes (expected survivors) and wait until they are gone.
    pub fn kill_and_await(&self, pids: &[i32]) {
        for &pid in pids {
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        wait_until(Duration::from_secs(5), || pids.iter().all(|&p| !alive(p)));
    }

    /// The proof that no marked process is left: fails (after killing them) if any is.
    pub fn finish(mut self) {
        self.checked = true;
        let left = self.survivors();
        if !left.is_empty() {
            self.kill_and_await(&left);
            panic!(
                "processes left behind with {MARKER_VAR}={}: {left:?}",
                self.marker
            );
        }
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        // A test that panicked before `finish` still must not leak processes.
        let left = self.survivors();
        if !left.is_empty() {
            self.kill_and_await(&left);
            if !self.checked && !std::thread::panicking() {
                panic!("test ended without Sandbox::finish and left processes: {left:?}");
            }
        }
    }
}

/// PIDs whose initial environment holds `MARKER_VAR=marker` and that are not zombies.
pub fn marked_processes(marker: &str) -> Vec<i32> {
    let needle = format!("{MARKER_VAR}={marker}");
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in entries.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(env) = std::fs::read(e.path().join("environ")) else {
            continue;
        };
        if env.split(|&b| b == 0).any(|kv| kv == needle.as_bytes()) && alive(pid) {
            out.push(pid);
        }
    }
    out
}

/// `/proc/PID/stat` fields after the command name: (state, ppid, pgrp, session).
pub fn stat(pid: i32) -> Option<(char, i32, i32, i32)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &text[text.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    Some((
        f[0].chars().next()?,
        f[1].parse().ok()?,
        f[2].parse().ok()?,
        f[3].parse().ok()?,
    ))
}

/// Exists and is not a zombie.
pub fn alive(pid: i32) -> bool {
    matches!(stat(pid), Some((s, ..)) if s != 'Z' && s != 'X')
}

pub fn cmdline(pid: i32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| {
            String::from_utf8_lossy(&b)
                .replace('\0', " ")
                .trim()
                .to_string()
        })
        .unwrap_or_default()
}

/// Poll `cond` every 10 ms until it holds; panics after `limit`.
pub fn wait_until(limit: Duration, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(
            start.elapsed() < limit,
            "condition not reached within {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Send a signal to a process.
pub fn send(pid: u32, sig: i32) {
    assert_eq!(
        unsafe { libc::kill(pid as i32, sig) },
        0,
        "kill({pid}, {sig})"
    );
}

/// `"--a","b"` style argv from a slice.
pub fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}
