//! Shared pieces of the conformance suite's tests: where the workspace binaries and the
//! bundled data are, a per-test [`World`] (temp dir + marker env var, proving no process
//! survives), running one case through the reference provider in-process, the invariants
//! (shared with the mapper tests: `harness/tests/common/mod.rs`), and the documented
//! cross-version differences ([`cross_version`]).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use pi_harness::cassette::Cassette;
use pi_harness::conform::{self, Case};
use pi_harness::message::Message;
use pi_harness::procs;
use pi_harness::provider::{ProviderOptions, Request};
use serde_json::Value;

/// The mapper tests' invariant checkers, shared as they are (one copy of the code).
#[path = "../../harness/tests/common/mod.rs"]
pub mod invariants;

pub mod cross_version;

pub const MARKER_VAR: &str = "PI_HARNESS_TEST_MARKER";

/// The workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the conformance crate sits in the workspace")
        .to_path_buf()
}

pub fn cassettes_dir() -> PathBuf {
    root().join("cassettes")
}

pub fn expected_dir() -> PathBuf {
    root().join("conformance/expected")
}

/// A binary of this workspace in the test's target dir. The binaries of fake-pi and
/// pi-harness are (re)built once per test process (a lone `cargo test -p conformance` does
/// not build other packages' binaries, and an old one would test old code).
pub fn workspace_bin(name: &str) -> PathBuf {
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(|| {
        let status = std::process::Command::new(env!("CARGO"))
            .args(["build", "-q", "-p", "fake-pi", "-p", "pi-harness", "--bins"])
            .status()
            .expect("cargo build");
        assert!(status.success(), "building fake-pi and pi-harness failed");
    });
    let exe = std::env::current_exe().expect("test exe");
    let dir = exe.parent().and_then(Path::parent).expect("target dir");
    let bin = dir.join(name);
    assert!(bin.is_file(), "{name} not found at {}", bin.display());
    bin
}

pub fn fake_pi() -> PathBuf {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| workspace_bin("fake-pi")).clone()
}

pub fn pi_harness_bin() -> PathBuf {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| workspace_bin("pi-harness")).clone()
}

pub fn supervisor() -> PathBuf {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| workspace_bin("pi-supervisor")).clone()
}

/// Provider options with this workspace's supervisor.
pub fn opts() -> ProviderOptions {
    ProviderOptions {
        supervisor: Some(supervisor()),
        ..ProviderOptions::default()
    }
}

/// One test's world: a temp dir and a unique marker every process of the test carries.
pub struct World {
    pub dir: tempfile::TempDir,
    pub marker: String,
}

impl World {
    pub fn new(name: &str) -> World {
        let dir = tempfile::Builder::new()
            .prefix(&format!("pih-conf-{}-", name.replace('/', "_")))
            .tempdir()
            .expect("tempdir");
        let marker = format!("{name}-{}-{:016x}", std::process::id(), fastrand_u64());
        World { dir, marker }
    }

    /// A provider request for a suite case: the case's files prepared in this world's dir,
    /// pi = fake-pi, the marker in pi's environment. Also returns the idle-cancel time.
    pub fn case_request(&self, case: &Case) -> (Request, Option<Duration>) {
        let doc = conform::prepare(case, self.dir.path(), &fake_pi())
            .unwrap_or_else(|e| panic!("{}: {e}", case.name));
        let mut req = conform::to_provider_request(&doc);
        req.pi_path = Some(self.dir.path().join("bin/pi"));
        req.env.push((MARKER_VAR.into(), self.marker.clone()));
        (req, doc.cancel_after_idle_ms.map(Duration::from_millis))
    }

    /// A request that runs fake-pi on a hand-made cassette.
    pub fn request(&self, cassette: &Path, version: &str, speed: &str) -> Request {
        Request {
            pi_path: Some(fake_pi()),
            pi_version: Some(version.to_string()),
            prompt: "hi".into(),
            provider: Some("fake".into()),
            model: Some("fake-model".into()),
            env: vec![
                (MARKER_VAR.into(), self.marker.clone()),
                ("FAKE_PI_CASSETTE".into(), cassette.display().to_string()),
                ("FAKE_PI_SPEED".into(), speed.into()),
            ],
            cwd: Some(self.dir.path().to_path_buf()),
            ..Request::default()
        }
    }

    /// Write a 0.87.1 cassette with this `process` JSON and these records.
    pub fn cassette(&self, name: &str, process: &str, records: &[String]) -> PathBuf {
        let mut text = format!(
            r#"{{"format":"pi-cassette","version":1,"pi":{{"version":"0.87.1","dialect":"delta-only"}},"scenario":{{"name":"{name}","description":"cancellation matrix"}},"process":{process},"origin":{{"kind":"hand-made","timing":"synthetic"}}}}"#
        );
        text.push('\n');
        for r in records {
            text.push_str(r);
            text.push('\n');
        }
        let path = self.dir.path().join(format!("{name}.cassette.jsonl"));
        std::fs::write(&path, text).expect("write cassette");
        path
    }

    pub fn alive(&self) -> Vec<i32> {
        procs::pids_with_env(MARKER_VAR, &self.marker)
    }

    /// Wait (bounded) until no process of this world is left; then prove it, killing and
    /// failing with their names if some are.
    pub fn assert_none_left(&self) {
        let end = Instant::now() + Duration::from_secs(10);
        while !self.alive().is_empty() && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(10));
        }
        let left: Vec<String> = self
            .alive()
            .iter()
            .map(|&pid| {
                procs::read_proc(pid).map_or(pid.to_string(), |p| format!("{pid} {}", p.command()))
            })
            .collect();
        procs::kill_marked(MARKER_VAR, &self.marker);
        assert!(left.is_empty(), "processes left behind: {left:?}");
    }
}

fn fastrand_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    h.finish()
}

/// Run one suite case through the reference provider in-process (fake-pi a real
/// subprocess at instant speed), cancelling after the idle time when the case says so.
pub async fn run_case(world: &World, case: &Case) -> Vec<Message> {
    let (req, idle) = world.case_request(case);
    conform::provider_run_request(req, idle, opts(), std::io::sink())
        .await
        .expect("a sink never fails")
}

/// Messages as JSON values (the form expected files hold).
pub fn values(msgs: &[Message]) -> Vec<Value> {
    msgs.iter()
        .map(|m| serde_json::to_value(m).expect("a message serializes"))
        .collect()
}

/// Every invariant of the normalized stream on the messages of one cassette's run:
/// structure (one terminal, last; tool call before its end, at most one end), the text
/// invariant per assistant message (broken only where the mapper itself reports a
/// divergence, in fault cassettes), thoughts (each once, none lost), usage per message and
/// summed, and on a completed run exactly one end per tool call.
pub fn check_invariants(c: &Cassette, msgs: &[Message]) -> Result<(), String> {
    let stdout = c.stdout_bytes();
    invariants::check_structure(msgs)?;
    invariants::check_thoughts(&stdout, msgs)?;
    invariants::check_usage(&stdout, msgs)?;
    let mismatches = invariants::text_mismatches(&stdout, msgs)?;
    if !mismatches.is_empty() {
        let mut mapper =
            pi_harness::mapper::Mapper::new(pi_harness::mapper::MapperOptions::default());
        let mut out = Vec::new();
        mapper.push(&stdout, &mut out);
        let reported = mapper.stats().text_divergences as usize;
        if reported != mismatches.len() || !c.header.scenario.tags.iter().any(|t| t == "fault") {
            return Err(format!(
                "text invariant broken ({} mismatches, {reported} reported divergences): {mismatches:?}",
                mismatches.len()
            ));
        }
    }
    if matches!(msgs.last(), Some(Message::TerminalCompleted { .. })) {
        for m in msgs {
            if let Message::ToolCall { id, .. } = m {
                let ends = msgs
                    .iter()
                    .filter(|e| {
                        matches!(e, Message::ToolCompleted { id: i, .. } | Message::ToolFailed { id: i, .. } if i == id)
                    })
                    .count();
                if ends != 1 {
                    return Err(format!(
                        "tool call {id} has {ends} completions in a completed run"
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Long strings shortened for snapshots (a fault cassette carries a 4 MiB tool output).
pub fn shorten(v: &mut Value) {
    const KEEP: usize = 200;
    match v {
        Value::String(s) if s.len() > 2 * KEEP => {
            let mut end = KEEP;
            while !s.is_char_boundary(end) {
                end -= 1;
            }
            *s = format!("{}... <{} bytes in all>", &s[..end], s.len());
        }
        Value::Array(items) => items.iter_mut().for_each(shorten),
        Value::Object(map) => map.values_mut().for_each(shorten),
        _ => {}
    }
}

/// Replace a run-specific path inside every string.
pub fn redact_path(v: &mut Value, path: &Path, placeholder: &str) {
    let p = path.to_string_lossy().into_owned();
    match v {
        Value::String(s) if s.contains(&p) => *s = s.replace(&p, placeholder),
        Value::Array(items) => items
            .iter_mut()
            .for_each(|i| redact_path(i, path, placeholder)),
        Value::Object(map) => map
            .values_mut()
            .for_each(|i| redact_path(i, path, placeholder)),
        _ => {}
    }
}
