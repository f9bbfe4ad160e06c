//! The world of a provider test: fake-pi's location, cassettes written into a
//! per-test temp dir, and the marker that proves no process survived a test.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use pi_harness::message::Message;
use pi_harness::procs;
use pi_harness::provider::{ProviderOptions, Request};

pub const MARKER_VAR: &str = "PI_HARNESS_TEST_MARKER";

/// The fake-pi binary of this workspace (built on demand when a lone `cargo test -p pi-harness` did not).
pub fn fake_pi() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let exe = std::env::current_exe().expect("test exe");
        let dir = exe.parent().and_then(Path::parent).expect("target dir");
        let bin = dir.join("fake-pi");
        if !bin.is_file() {
            let status = std::process::Command::new(env!("CARGO"))
                .args(["build", "-q", "-p", "fake-pi"])
                .status()
                .expect("cargo build -p fake-pi");
            assert!(status.success(), "building fake-pi failed");
        }
        assert!(bin.is_file(), "fake-pi not found at {}", bin.display());
        bin
    })
    .clone()
}

/// One test's world: a temp dir and a unique marker every process of the test carries.
pub struct World {
    pub dir: tempfile::TempDir,
    pub marker: String,
}

impl World {
    pub fn new(name: &str) -> World {
        let dir = tempfile::Builder::new()
            .prefix(&format!("pih-{name}-"))
            .tempdir()
            .expect("tempdir");
        let marker = format!("{name}-{}-{:016x}", std::process::id(), fastrand::u64(..));
        World { dir, marker }
    }

    /// Write a cassette: header for `version` with `expect` and `process` JSON, then `records` lines.
    pub fn cassette(
        &self,
        name: &str,
        version: &str,
        expect: &str,
        process: &str,
        records: &[String],
    ) -> PathBuf {
        let dialect = if version == "0.73.1" {
            "snapshot+delta"
        } else {
            "delta-only"
        };
        let mut text = format!(
            r#"{{"format":"pi-cassette","version":1,"pi":{{"version":"{version}","dialect":"{dialect}"}},"scenario":{{"name":"{name}","description":"provider test"}},"expect":{expect},"process":{process},"origin":{{"kind":"hand-made","timing":"synthetic"}}}}"#
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

    /// A request that runs fake-pi on `cassette`, instant speed unless `speed` says otherwise.
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

    pub fn alive(&self) -> Vec<i32> {
        procs::pids_with_env(MARKER_VAR, &self.marker)
    }

    /// Prove no process of this test is left; kill and fail if one is.
    pub fn assert_none_left(&self) {
        let left = self.alive();
        let described: Vec<String> = left
            .iter()
            .map(|&pid| {
                procs::read_proc(pid).map_or(pid.to_string(), |p| format!("{pid} {}", p.command()))
            })
            .collect();
        procs::kill_marked(MARKER_VAR, &self.marker);
        assert!(left.is_empty(), "processes left behind: {described:?}");
    }

    /// Wait (bounded) until `n` processes of this test exist; returns them.
    pub fn wait_alive(&self, n: usize, within: Duration) -> Vec<i32> {
        let end = Instant::now() + within;
        loop {
            let a = self.alive();
            if a.len() >= n || Instant::now() > end {
                return a;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

pub fn opts() -> ProviderOptions {
    ProviderOptions {
        supervisor: Some(PathBuf::from(env!("CARGO_BIN_EXE_pi-supervisor"))),
        grace: Duration::from_millis(2000),
        ..ProviderOptions::default()
    }
}

/// A stdout record holding one JSON line.
pub fn out(dt_ms: u64, json: &str) -> String {
    format!(r#"{{"dt_ms":{dt_ms},"stdout":{json}}}"#)
}

/// A short, complete 0.87.1 conversation answering `text`.
pub fn conversation(text: &str) -> Vec<String> {
    let t = serde_json::to_string(text).unwrap();
    vec![
        out(
            0,
            r#"{"type":"session","version":3,"id":"sess-1","timestamp":"T","cwd":"/w"}"#,
        ),
        out(0, r#"{"type":"agent_start"}"#),
        out(0, r#"{"type":"turn_start"}"#),
        out(
            0,
            r#"{"type":"message_start","message":{"role":"assistant","content":[],"stopReason":"pending"}}"#,
        ),
        out(
            0,
            r#"{"type":"message_update","assistantMessageEvent":{"type":"text_start","contentIndex":0}}"#,
        ),
        out(
            0,
            &format!(
                r#"{{"type":"message_update","assistantMessageEvent":{{"type":"text_delta","contentIndex":0,"delta":{t}}}}}"#
            ),
        ),
        out(
            0,
            &format!(
                r#"{{"type":"message_update","assistantMessageEvent":{{"type":"text_end","contentIndex":0,"content":{t}}}}}"#
            ),
        ),
        out(
            0,
            &format!(
                r#"{{"type":"message_end","message":{{"role":"assistant","content":[{{"type":"text","text":{t}}}],"usage":{{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3,"cost":{{"total":0}}}},"stopReason":"stop"}}}}"#
            ),
        ),
        out(
            0,
            &format!(
                r#"{{"type":"turn_end","message":{{"role":"assistant","content":[{{"type":"text","text":{t}}}],"stopReason":"stop"}},"toolResults":[]}}"#
            ),
        ),
        out(0, r#"{"type":"agent_end","messages":[],"willRetry":false}"#),
        out(0, r#"{"type":"agent_settled"}"#),
    ]
}

pub fn text_of(msgs: &[Message]) -> String {
    msgs.iter()
        .filter_map(|m| match m {
            Message::Assistant { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// Exactly one terminal, and it is last.
pub fn terminal(msgs: &[Message]) -> &Message {
    let n = msgs.iter().filter(|m| m.is_terminal()).count();
    assert_eq!(n, 1, "expected exactly one terminal: {msgs:#?}");
    let last = msgs.last().unwrap();
    assert!(last.is_terminal(), "terminal is not last: {msgs:#?}");
    last
}
