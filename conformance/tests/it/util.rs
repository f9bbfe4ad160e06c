//! What the conformance tests share: where this repository's data is, provider options
//! with the workspace's supervisor, and running one suite case in a test world.

use std::path::{Path, PathBuf};
use std::time::Duration;

use conformance::conform::{self, Case};
use pi_provider::{ProviderOptions, Request};
use pi_wire::message::Message;

pub use pi_testkit::invariants::{check_invariants, check_rpc_invariants, values};
pub use pi_testkit::{fake_pi, World};

/// The repository root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the conformance crate sits in the repository")
        .to_path_buf()
}

pub fn cassettes_dir() -> PathBuf {
    root().join("cassettes")
}

pub fn expected_dir() -> PathBuf {
    root().join("conformance/expected")
}

/// The workspace's pi-harness binary (rebuilt once per test process).
pub fn pi_harness_bin() -> PathBuf {
    pi_testkit::bins::workspace_bin("pi-harness").expect("pi-harness is built")
}

/// Provider options: the supervisor embedded in the test executable.
pub fn opts() -> ProviderOptions {
    ProviderOptions::default()
}

/// How long a world's processes may take to go away after the run they belong to ended.
pub const SETTLE: Duration = Duration::from_secs(10);

/// A provider request for a suite case: the case's files prepared in the world's dir,
/// pi (or codex) = fake-pi, the marker in its environment. Also returns the idle-cancel time.
pub fn case_request(world: &World, case: &Case) -> (Request, Option<Duration>) {
    let doc = conform::prepare(case, world.path(), &fake_pi())
        .unwrap_or_else(|e| panic!("{}: {e}", case.name));
    let mut req =
        conform::to_provider_request(&doc).unwrap_or_else(|e| panic!("{}: {e}", case.name));
    // The agent's name in the case's bin/: `pi`, or `codex`.
    req.pi_path = Some(world.path().join("bin").join(req.agent.name()));
    req.env.push(world.marker_env());
    (req, doc.cancel_after_idle_ms.map(Duration::from_millis))
}

/// Run one suite case through the reference provider in-process (fake-pi a real
/// subprocess at instant speed), cancelling after the idle time when the case says so.
pub async fn run_case(world: &World, case: &Case) -> Vec<Message> {
    if case.request.agent.as_deref() == Some("claude") {
        let mut doc = conform::prepare(case, world.path(), &fake_pi())
            .unwrap_or_else(|e| panic!("{}: {e}", case.name));
        let (k, v) = world.marker_env();
        doc.env.insert(k, v);
        let claude = world.path().join("bin/claude");
        return conform::reference_run_claude(&doc, Some(&claude), std::io::sink())
            .await
            .expect("a sink never fails");
    }
    let (req, idle) = case_request(world, case);
    match &case.request.rpc {
        Some(steps) => conform::provider_run_rpc(req, steps, opts(), std::io::sink()).await,
        None => conform::provider_run_request(req, idle, opts(), std::io::sink()).await,
    }
    .expect("a sink never fails")
}

/// The rules for a Codex run's stream (`codex exec --json` has no text deltas): the
/// structure rules of every stream, the `assistant` texts in order are the recorded
/// `agent_message` items' texts, each run's first message says whether it resumed a thread,
/// and a recorded `turn.failed` ends the run as `terminal.failed` with reason `model_error`.
pub fn check_codex_invariants(
    c: &pi_cassette::Cassette,
    resumed: bool,
    msgs: &[Message],
) -> Result<(), String> {
    use pi_wire::message::FailureReason;
    pi_testkit::invariants::check_structure(msgs)?;
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&c.stdout_bytes())
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let recorded: String = lines
        .iter()
        .filter(|v| v["type"] == "item.completed" && v["item"]["type"] == "agent_message")
        .filter_map(|v| v["item"]["text"].as_str())
        .collect();
    let mapped: String = msgs
        .iter()
        .filter_map(|m| match m {
            Message::Assistant { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    if recorded != mapped {
        return Err(format!(
            "assistant text {mapped:?} is not the agent messages' {recorded:?}"
        ));
    }
    match msgs.first() {
        Some(Message::SessionResumed { .. }) if resumed => {}
        Some(Message::SessionStarted { .. }) if !resumed => {}
        other => {
            return Err(format!(
                "resumed {resumed}, but the run starts with {other:?}"
            ))
        }
    }
    if lines.iter().any(|v| v["type"] == "turn.failed") {
        match msgs.last() {
            Some(Message::TerminalFailed(f)) if f.reason == FailureReason::ModelError => {}
            other => return Err(format!("a turn.failed run ends with {other:?}")),
        }
    }
    Ok(())
}

/// The reference's stream of a Gemini CLI case, checked against its cassette independently
/// of the mapper: one terminal, last; the assistant text is the recorded assistant chunks
/// joined; a `result` with status error ends as a model error whatever the exit status (144,
/// 244); a `result` with status success ends completed; no `result` never completes.
pub fn check_gemini_invariants(c: &pi_cassette::Cassette, msgs: &[Message]) -> Result<(), String> {
    use pi_wire::message::FailureReason;
    pi_testkit::invariants::check_structure(msgs)?;
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&c.stdout_bytes())
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let recorded: String = lines
        .iter()
        .filter(|v| v["type"] == "message" && v["role"] == "assistant")
        .filter_map(|v| v["content"].as_str())
        .collect();
    let mapped: String = msgs
        .iter()
        .filter_map(|m| match m {
            Message::Assistant { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    if recorded != mapped {
        return Err(format!(
            "assistant text {mapped:?} is not the recorded chunks' {recorded:?}"
        ));
    }
    if !matches!(msgs.first(), Some(Message::SessionStarted { .. })) {
        return Err(format!("the run starts with {:?}", msgs.first()));
    }
    let result = lines.iter().find(|v| v["type"] == "result");
    match (result.map(|r| &r["status"]), msgs.last()) {
        (Some(s), Some(Message::TerminalFailed(f)))
            if s == "error" && f.reason == FailureReason::ModelError => {}
        (Some(s), Some(Message::TerminalCompleted { .. })) if s == "success" => {}
        (None, Some(m)) if !matches!(m, Message::TerminalCompleted { .. }) => {}
        (status, last) => {
            return Err(format!(
                "a run whose result is {status:?} ends with {last:?}"
            ))
        }
    }
    Ok(())
}
