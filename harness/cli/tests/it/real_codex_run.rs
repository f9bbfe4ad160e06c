//! `pi-harness run --agent codex` on the real Codex CLI (`PI_HARNESS_REAL_CODEX`, CI's
//! Codex lane; skipped with a reason when unset) against the scripted server: the run maps
//! `codex exec --json`, and every way a run is stopped mid-tool leaves nothing: the cancel
//! (SIGTERM to the group, then SIGKILL), the timeout, Ctrl-C to pi-harness, SIGKILL of the
//! node wrapper (which orphans the native binary and its tool: the supervisor, their
//! subreaper, sweeps them) and SIGKILL of pi-harness's whole process group. Each test
//! first sees the tool running under the marker, so the leftover check can fail.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use pi_testkit::messages::terminal;
use pi_testkit::{World, MARKER_VAR};
use pi_wire::message::{FailureReason, Message};

use crate::util::{bin, messages};

/// The real `codex` (the npm package's node wrapper), or `None` with the reason printed.
fn real_codex() -> Option<PathBuf> {
    match std::env::var_os("PI_HARNESS_REAL_CODEX").filter(|v| !v.is_empty()) {
        Some(p) => Some(PathBuf::from(p)),
        None => {
            eprintln!("skipped: PI_HARNESS_REAL_CODEX is not set (pi-harness install codex 0.169.0 --print-path)");
            None
        }
    }
}

/// The scripted server for a run whose model calls a tool that sleeps, then would answer;
/// killed when dropped.
struct Server(Child, String);

impl Server {
    fn start(w: &World, script: &str) -> Server {
        let script = w.write("codex.llm.json", script);
        let mut child = Command::new(bin())
            .args(["serve-llm", "--script"])
            .arg(&script)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        Server(child, line.trim().to_string())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

const SLEEPING_TOOL: &str = r#"{"turns":[{"tools":[{"id":"call_1","name":"exec_command","args":{"cmd":"sleep 300; echo done"}}]},{"text":["Done."]}]}"#;

/// A CODEX_HOME for the world, its provider pointing at `server`, offline otherwise.
fn codex_home(w: &World, server: &Server) -> PathBuf {
    let home = w.path().join("codex-home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        home.join("config.toml"),
        format!(
            r#"model = "gpt-5.1-codex"
model_provider = "scripted"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false

[analytics]
enabled = false

[model_providers.scripted]
name = "scripted"
base_url = "{}/v1"
env_key = "SCRIPTED_API_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
"#,
            server.1
        ),
    )
    .unwrap();
    home
}

/// `pi-harness run --agent codex --json` on `codex`, carrying the world's marker.
fn run(w: &World, codex: &Path, home: &Path, extra: &[&str]) -> Command {
    let work = w.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let mut c = Command::new(bin());
    c.args(["run", "--agent", "codex", "--json", "--pi"])
        .arg(codex)
        .arg("--env")
        .arg(format!("CODEX_HOME={}", home.display()))
        .args(["--env", "SCRIPTED_API_KEY=x", "--env"])
        .arg(format!("HOME={}", w.path().display()))
        .args(extra)
        .arg("run the tool")
        .env(MARKER_VAR, w.marker())
        .current_dir(&work)
        .stdin(Stdio::null());
    c
}

/// The tool's process (`sleep 300`) under the marker, once it runs.
fn await_tool(w: &World) -> i32 {
    let end = std::time::Instant::now() + Duration::from_secs(60);
    while std::time::Instant::now() < end {
        let sleeping = w.alive().into_iter().find(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| c.starts_with(b"sleep\x00300"))
        });
        if let Some(pid) = sleeping {
            return pid;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("the tool never ran under the marker: {:?}", w.alive());
}

fn parent(pid: i32) -> i32 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // `pid (comm) state ppid ...`: the fields after the last `)`.
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    after.split(' ').nth(1).unwrap().parse().unwrap()
}

/// Read the run's JSON lines until its `tool.call`, so the signal comes when a host
/// knows the tool runs; then the tool's process. The rest of stdout is left to be read.
fn await_tool_call(w: &World, child: &mut Child) -> (i32, BufReader<std::process::ChildStdout>) {
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    loop {
        line.clear();
        assert!(
            stdout.read_line(&mut line).unwrap() > 0,
            "stdout ended before tool.call"
        );
        if line.contains("\"type\":\"tool.call\"") {
            return (await_tool(w), stdout);
        }
    }
}

/// A run (with `extra` options) whose model called the sleeping tool, once its `tool.call`
/// is read and the tool runs: the server, the run, the tool's pid, the rest of stdout.
fn mid_tool(
    w: &World,
    codex: &Path,
    extra: &[&str],
) -> (Server, Child, i32, BufReader<std::process::ChildStdout>) {
    let server = Server::start(w, SLEEPING_TOOL);
    let home = codex_home(w, &server);
    let mut child = run(w, codex, &home, extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (tool, stdout) = await_tool_call(w, &mut child);
    (server, child, tool, stdout)
}

/// The run's end: its exit status and every message after the `tool.call`.
fn finished(
    mut child: Child,
    mut stdout: BufReader<std::process::ChildStdout>,
) -> (Option<i32>, Vec<Message>) {
    let mut rest = Vec::new();
    std::io::Read::read_to_end(&mut stdout, &mut rest).unwrap();
    let status = child.wait().unwrap();
    (status.code(), messages(&rest))
}

#[test]
fn a_codex_run_maps_its_answer_and_completes() {
    let Some(codex) = real_codex() else { return };
    let w = World::new("real-codex-text");
    let server = Server::start(&w, r#"{"turns":[{"text":["Hello ","there."]}]}"#);
    let home = codex_home(&w, &server);
    let out = run(&w, &codex, &home, &[]).output().unwrap();
    let msgs = messages(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        matches!(msgs.first(), Some(Message::SessionStarted { .. })),
        "{msgs:?}"
    );
    assert!(
        msgs.iter()
            .any(|m| matches!(m, Message::Assistant { text, .. } if text == "Hello there.")),
        "{msgs:?}"
    );
    assert!(matches!(terminal(&msgs), Message::TerminalCompleted { .. }));
    w.assert_none_left_within(Duration::from_secs(2));
}

#[test]
fn cancel_mid_tool_leaves_nothing() {
    let Some(codex) = real_codex() else { return };
    let w = World::new("real-codex-cancel");
    let (_server, child, _tool, stdout) = mid_tool(&w, &codex, &[]);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let (code, msgs) = finished(child, stdout);
    assert_eq!(code, Some(130), "{msgs:?}");
    assert!(
        matches!(terminal(&msgs), Message::TerminalCancelled { .. }),
        "{msgs:?}"
    );
    w.assert_none_left();
}

#[test]
fn timeout_mid_tool_fails_and_leaves_nothing() {
    let Some(codex) = real_codex() else { return };
    let w = World::new("real-codex-timeout");
    let (_server, child, _tool, stdout) = mid_tool(&w, &codex, &["--timeout", "8s"]);
    let (code, msgs) = finished(child, stdout);
    assert_eq!(code, Some(1), "{msgs:?}");
    match terminal(&msgs) {
        Message::TerminalFailed(f) => {
            assert_eq!(f.reason, FailureReason::Timeout);
            assert_eq!(f.message, "codex did not finish within 8s");
        }
        other => panic!("{other:?}"),
    }
    w.assert_none_left();
}

/// SIGKILL of Codex's node wrapper orphans the native binary and its tool (measured on
/// the real CLI); under pi-harness they are orphaned to the supervisor, which sweeps them
/// when the wrapper's exit is reported.
#[test]
fn sigkill_of_the_node_wrapper_leaves_nothing() {
    let Some(codex) = real_codex() else { return };
    let w = World::new("real-codex-wrapper-kill");
    let (_server, child, tool, stdout) = mid_tool(&w, &codex, &[]);
    // sleep <- bash (the tool's session) <- the native binary <- the node wrapper
    let wrapper = parent(parent(parent(tool)));
    let cmdline = std::fs::read(format!("/proc/{wrapper}/cmdline")).unwrap();
    assert!(
        cmdline.starts_with(b"node\0"),
        "{}",
        String::from_utf8_lossy(&cmdline)
    );
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(wrapper),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let (code, msgs) = finished(child, stdout);
    assert_eq!(code, Some(1), "{msgs:?}");
    match terminal(&msgs) {
        Message::TerminalFailed(f) => {
            assert_eq!(f.reason, FailureReason::ProcessSignal, "{f:?}");
            assert_eq!(
                f.exit.as_ref().and_then(|e| e.signal.as_deref()),
                Some("SIGKILL")
            );
        }
        other => panic!("{other:?}"),
    }
    w.assert_none_left();
}

/// A CI job's timeout SIGKILLs pi-harness's whole process group: the supervisor, in a
/// group of its own, stops Codex and sweeps what is below it.
#[test]
fn sigkill_of_pi_harness_group_leaves_nothing() {
    use std::os::unix::process::CommandExt;
    let Some(codex) = real_codex() else { return };
    let w = World::new("real-codex-group-kill");
    let server = Server::start(&w, SLEEPING_TOOL);
    let home = codex_home(&w, &server);
    let mut child = run(&w, &codex, &home, &[])
        .process_group(0)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    await_tool(&w);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(-(child.id() as i32)),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let _ = child.wait();
    w.assert_none_left_within(Duration::from_secs(8));
}
