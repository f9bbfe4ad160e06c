//! Tests of the wrapper against fake-pi (from pi-harness) standing in for pi on PATH.
//! Needs `fake-pi` and `pi-harness` on PATH; run with `cargo test`.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use pi_wrapper_example::{Pi, ToolCall};
use serde_json::json;

const RUN_TIMEOUT: Duration = Duration::from_secs(20);

fn on_path(name: &str) -> PathBuf {
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("{name} not found on PATH (cargo install --git <pi-harness repo> fake-pi pi-harness)"))
}

/// One pi run's world, in its own temp dir (removed on drop): `bin/pi` (a link to fake-pi) to put
/// first on PATH, the corpus from `pi-harness corpus export`, a fresh agent dir, a unique marker.
/// Dropping it also SIGKILLs whatever still carries the marker (when a test failed half-way).
struct World {
    marker: String,
    dir: tempfile::TempDir,
    cassette: PathBuf,
}

impl World {
    fn new(cassette: &str) -> World {
        let dir = tempfile::Builder::new()
            .prefix("pi-wrapper-rust-")
            .tempdir()
            .unwrap();
        std::fs::create_dir(dir.path().join("bin")).unwrap();
        std::os::unix::fs::symlink(on_path("fake-pi"), dir.path().join("bin/pi")).unwrap();
        std::fs::create_dir(dir.path().join("agent")).unwrap();
        let out = Command::new("pi-harness")
            .arg("corpus")
            .arg("export")
            .arg(dir.path().join("corpus"))
            .stdin(Stdio::null())
            .output()
            .expect("run pi-harness");
        assert!(
            out.status.success(),
            "pi-harness corpus export: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let cassette = dir.path().join("corpus/cassettes").join(cassette);
        assert!(cassette.is_file(), "no cassette {}", cassette.display());
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::SeqCst);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        World {
            marker: format!("pi-wrapper-rust-{}-{n}-{nanos}", std::process::id()),
            dir,
            cassette,
        }
    }

    fn pi(&self) -> Pi {
        let mut path = OsString::from(self.dir.path().join("bin"));
        path.push(":");
        path.push(std::env::var_os("PATH").unwrap_or_default());
        Pi::new()
            .provider("fake")
            .model("fake-model")
            .env("PATH", path)
            .env("FAKE_PI_CASSETTE", &self.cassette)
            .env("FAKE_PI_SPEED", "0")
            .env("PI_CODING_AGENT_DIR", self.dir.path().join("agent"))
            .env("PI_HARNESS_TEST_MARKER", &self.marker)
            .timeout(RUN_TIMEOUT)
    }

    fn assert_nothing_left(&self) {
        let (code, report) = leftovers(&self.marker, "2s", false);
        assert_eq!(code, 0, "processes left behind:\n{report}");
    }
}

impl Drop for World {
    fn drop(&mut self) {
        leftovers(&self.marker, "0s", true);
    }
}

/// pi-harness leftovers' exit status (0: nothing carries the marker) and its report.
/// `grace`: how long marked processes get to go away (polled: no wait when none is left); a
/// process SIGKILLed by pi a moment ago is still in /proc until the kernel has run its exit.
/// `kill`: SIGKILL what is found.
fn leftovers(marker: &str, grace: &str, kill: bool) -> (i32, String) {
    let mut cmd = Command::new("pi-harness");
    cmd.args(["leftovers", "--marker", marker, "--grace", grace]);
    if kill {
        cmd.arg("--kill");
    }
    let out = cmd.stdin(Stdio::null()).output().expect("run pi-harness");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Polls `pi-harness leftovers --marker` until a marked process's command line starts with `needle`.
fn wait_for_leftover(marker: &str, needle: &str) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (code, report) = leftovers(marker, "0s", false);
        if code == 1
            && report.lines().any(|l| {
                l.split_whitespace()
                    .skip(2)
                    .collect::<Vec<_>>()
                    .join(" ")
                    .starts_with(needle)
            })
        {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn text_answer() {
    let w = World::new("recorded/text_only.pi87.cassette.jsonl");
    let r = w.pi().run("Say hello.", |_, _| {}).unwrap();
    assert_eq!(r.exit_code, Some(0), "{}", r.stderr);
    assert_eq!(r.text, "Hello, world!");
    assert!(r.tool_calls.is_empty());
    assert!(r.completed);
    assert_eq!(r.stop_reason.as_deref(), Some("stop"));
    assert_eq!(r.error, None);
    assert!(r.ok());
    assert_eq!(r.session_id.as_deref().map(str::len), Some(36));
    w.assert_nothing_left();
}

#[test]
fn tool_call_then_answer() {
    let w = World::new("recorded/tool_bash.pi87.cassette.jsonl");
    let r = w.pi().run("List the files.", |_, _| {}).unwrap();
    assert_eq!(r.exit_code, Some(0), "{}", r.stderr);
    assert_eq!(
        r.tool_calls,
        [ToolCall {
            id: "call_1".into(),
            name: "bash".into(),
            args: json!({"command": "echo hi; ls"})
        }]
    );
    assert_eq!(r.text, "I'll list the files.The directory has a server.");
    assert!(r.ok());
    w.assert_nothing_left();
}

#[test]
fn model_error_with_exit_0() {
    let w = World::new("recorded/auth_401.pi87.cassette.jsonl");
    let r = w.pi().run("Say something.", |_, _| {}).unwrap();
    assert_eq!(r.exit_code, Some(0), "{}", r.stderr); // pi exits 0 ...
    assert!(r.completed);
    assert_eq!(r.stop_reason.as_deref(), Some("error")); // ... but the run failed
    assert!(
        r.error.as_deref().unwrap_or("").contains("invalid api key"),
        "{:?}",
        r.error
    );
    assert_eq!(r.text, "");
    assert!(!r.ok());
    w.assert_nothing_left();
}

#[test]
fn call_not_matching_the_recording() {
    let w = World::new("recorded/text_only.pi87.cassette.jsonl");
    let r = w
        .pi()
        .model("other-model")
        .run("Say hello.", |_, _| {})
        .unwrap();
    assert_eq!(r.exit_code, Some(99)); // fake-pi: the call does not mean what the recording meant
    assert!(
        r.stderr
            .contains("expectation mismatch: expect.effective.model"),
        "{}",
        r.stderr
    );
    assert!(!r.ok());
    w.assert_nothing_left();
}

#[test]
fn stalled_run_times_out() {
    // pi stays alive and silent mid-answer (a provider that stalls); only the caller's timeout ends it.
    let w = World::new("faults/hang_after_output.pi87.cassette.jsonl");
    let started = Instant::now();
    let r = w
        .pi()
        .timeout(Duration::from_millis(500))
        .run("list files", |_, _| {})
        .unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the timeout did not end the run"
    );
    assert!(r.timed_out);
    assert!(r.cancelled);
    assert_eq!(
        r.exit_code,
        Some(143),
        "pi: {:?} signal {:?}\n{}",
        r.exit_code,
        r.signal,
        r.stderr
    );
    assert_eq!(r.text, "I'll list the files.");
    assert!(!r.completed);
    assert!(!r.ok());
    w.assert_nothing_left();
}

#[test]
fn cancel_mid_tool() {
    // fake-pi prints the tool start, starts `bash -c 'sleep 300; echo done'` in its own session
    // (with a `sleep 300` below it), then hangs until a signal, as real pi would while the tool runs.
    let w = World::new("recorded/sigterm_mid_tool.pi87.cassette.jsonl");
    let mut tool_start = false;
    let mut child_seen = false;
    let r = w
        .pi()
        .run("Run it.", |event, cancel| {
            if event["type"] != "tool_execution_start" || tool_start {
                return;
            }
            tool_start = true;
            // The tool's process exists (it carries the marker) before we cancel: the check below
            // then proves the cancel took it down, not that it never ran.
            child_seen = wait_for_leftover(&w.marker, "sleep 300"); // the tool's grandchild: both are up
            cancel.cancel();
        })
        .unwrap();
    assert!(tool_start);
    assert!(child_seen, "the tool process never showed up");
    assert!(r.cancelled);
    assert!(!r.timed_out);
    assert_eq!(
        r.exit_code,
        Some(143),
        "pi: {:?} signal {:?}\n{}",
        r.exit_code,
        r.signal,
        r.stderr
    );
    assert!(!r.completed);
    assert!(!r.ok());
    assert_eq!(
        r.tool_calls,
        [ToolCall {
            id: "call_9".into(),
            name: "bash".into(),
            args: json!({"command": "sleep 300; echo done"})
        }]
    );
    w.assert_nothing_left();
}
