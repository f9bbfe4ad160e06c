//! `pi-harness run --agent codex`: the run maps `codex exec --json`, and every way a run is
//! stopped mid-tool leaves nothing: the cancel (SIGTERM to the group, then SIGKILL), the
//! timeout, SIGKILL of the node wrapper (which orphans the native binary and its tool: the
//! supervisor, their subreaper, sweeps them) and SIGKILL of pi-harness's whole process
//! group. Each test runs on fake-pi as `codex` (a cassette built from a real capture) and,
//! when `PI_HARNESS_REAL_CODEX` names it (CI's Codex lane), on the real CLI against the
//! scripted server. Each first sees the tool running under the marker, so the leftover
//! check can fail.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::Duration;

use pi_testkit::messages::terminal;
use pi_testkit::{fake_pi, World, MARKER_VAR};
use pi_wire::message::{FailureReason, Message};

use crate::util::{bin, messages};

const PROMPT: &str = "run the tool";

/// The Codex CLIs a test runs on: fake-pi always, the real one when installed.
fn codexes() -> Vec<Codex> {
    let mut all = vec![Codex::Fake];
    match std::env::var_os("PI_HARNESS_REAL_CODEX").filter(|v| !v.is_empty()) {
        Some(p) => all.push(Codex::Real(PathBuf::from(p))),
        None => eprintln!(
            "real Codex skipped: PI_HARNESS_REAL_CODEX is not set (pi-harness install codex 0.169.0 --print-path)"
        ),
    }
    all
}

enum Codex {
    /// fake-pi replaying a cassette built from a real capture.
    Fake,
    /// The npm package's `codex` (its node wrapper).
    Real(PathBuf),
}

/// A model turn: the answer `Hello from the fake model.`, or a tool that sleeps.
#[derive(Clone, Copy)]
enum Turn {
    Text,
    SleepingTool,
}

/// One run's setting: the world, the scripted server (real Codex only), `CODEX_HOME`,
/// the program and what it needs in its environment.
struct Setup {
    w: World,
    _server: Option<Server>,
    program: PathBuf,
    env: Vec<(String, String)>,
}

impl Setup {
    fn new(name: &str, codex: &Codex, turn: Turn) -> Setup {
        let w = World::new(name);
        let home = w.path().join("codex-home");
        std::fs::create_dir_all(&home).unwrap();
        let mut env = vec![
            ("CODEX_HOME".to_string(), home.display().to_string()),
            ("SCRIPTED_API_KEY".to_string(), "x".to_string()),
            ("HOME".to_string(), w.path().display().to_string()),
        ];
        let (server, program, base_url) = match codex {
            Codex::Real(p) => {
                let server = Server::start(&w, turn);
                let url = format!("{}/v1", server.1);
                (Some(server), p.clone(), url)
            }
            Codex::Fake => {
                let cassette = fake_cassette(&w, turn);
                env.push(("FAKE_PI_CASSETTE".into(), cassette.display().to_string()));
                env.push(("FAKE_PI_SPEED".into(), "0".into()));
                (None, fake_pi(), "http://127.0.0.1:9/v1".into())
            }
        };
        std::fs::write(home.join("config.toml"), config(&base_url)).unwrap();
        Setup {
            w,
            _server: server,
            program,
            env,
        }
    }

    /// `pi-harness run --agent codex --json`, carrying the world's marker.
    fn run(&self, extra: &[&str]) -> Command {
        let work = self.w.path().join("work");
        std::fs::create_dir_all(&work).unwrap();
        let mut c = Command::new(bin());
        c.args(["run", "--agent", "codex", "--json", "--pi"])
            .arg(&self.program)
            .args(extra)
            .arg(PROMPT)
            .env(MARKER_VAR, self.w.marker())
            .current_dir(&work)
            .stdin(Stdio::null());
        for (k, v) in &self.env {
            c.arg("--env").arg(format!("{k}={v}"));
        }
        c
    }

    /// A run (with `extra` options) stopped nowhere yet: once its `tool.call` is read and
    /// the tool runs under the marker. The run and the rest of its stdout.
    fn mid_tool(&self, extra: &[&str]) -> (Child, BufReader<ChildStdout>) {
        let mut child = self
            .run(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        loop {
            line.clear();
            assert!(
                stdout.read_line(&mut line).unwrap() > 0,
                "stdout ended before tool.call"
            );
            if line.contains("\"type\":\"tool.call\"") {
                break;
            }
        }
        self.await_tool();
        (child, stdout)
    }

    /// Wait until the tool (`sleep 300`, under bash) runs under the marker.
    fn await_tool(&self) {
        let found = self.await_process(|cmdline| cmdline.contains("sleep 300"));
        assert!(found.is_some(), "the tool never ran: {:?}", self.w.alive());
    }

    /// The first marked process whose command line (arguments joined by spaces) `is`.
    fn await_process(&self, is: impl Fn(&str) -> bool) -> Option<i32> {
        let end = std::time::Instant::now() + Duration::from_secs(60);
        while std::time::Instant::now() < end {
            if let Some(pid) = self.w.alive().into_iter().find(|pid| is(&cmdline(*pid))) {
                return Some(pid);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

fn cmdline(pid: i32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .unwrap_or_default()
}

fn comm(pid: i32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// The `config.toml` of every run: a Responses provider at `base_url`, offline otherwise.
fn config(base_url: &str) -> String {
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
base_url = "{base_url}"
env_key = "SCRIPTED_API_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
"#
    )
}

/// The scripted server for real Codex; killed when dropped.
struct Server(Child, String);

impl Server {
    fn start(w: &World, turn: Turn) -> Server {
        let script = w.write(
            "codex.llm.json",
            match turn {
                Turn::Text => r#"{"turns":[{"text":["Hello from ","the fake model."]}]}"#,
                Turn::SleepingTool => {
                    r#"{"turns":[{"tools":[{"id":"call_1","name":"exec_command","args":{"cmd":"sleep 300; echo done"}}]},{"text":["Done."]}]}"#
                }
            },
        );
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

/// A cassette of real Codex 0.169.0's capture (`harness/wire/tests/data/codex/`): the text
/// answer, or the run up to its tool's start, then the tool (`bash -lc 'sleep 300'` in its
/// own session) and nothing until a signal. Real Codex's signal answers.
fn fake_cassette(w: &World, turn: Turn) -> PathBuf {
    let (capture, end) = match turn {
        Turn::Text => ("text", vec![r#"{"dt_ms":0,"exit":0}"#.to_string()]),
        Turn::SleepingTool => (
            "SIGTERM-mid-tool",
            vec![
                r#"{"dt_ms":0,"spawn":{"id":"tool","own_session":true,"argv":["/bin/bash","-lc","sleep 300"]}}"#.to_string(),
                r#"{"dt_ms":0,"hang":true}"#.to_string(),
            ],
        ),
    };
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../wire/tests/data/codex");
    let stdout = std::fs::read_to_string(dir.join(format!("{capture}.stdout.jsonl"))).unwrap();
    let mut text = format!(
        r#"{{"format":"pi-cassette","version":1,"codex":{{"version":"0.169.0","dialect":"exec-json"}},"scenario":{{"name":"{capture}","description":"a real capture"}},"expect":{{"flags":{{"json":true,"skip-git-repo-check":true}},"prompt":"{PROMPT}","env":["SCRIPTED_API_KEY"],"effective":{{"mode":"exec","provider":"scripted","model":"gpt-5.1-codex","sandbox":"danger-full-access","approval":"never"}},"session":"new"}},"process":{{"on_sigterm":{{"action":"cleanup_die"}},"on_sigint":{{"action":"cleanup_exit","code":1}},"on_sighup":{{"action":"cleanup_die"}}}},"origin":{{"kind":"hand-made","timing":"synthetic"}}}}"#
    );
    for line in stdout.lines() {
        text.push_str(&format!(
            "\n{{\"dt_ms\":1,\"stdout_text\":{},\"newline\":true}}",
            serde_json::to_string(line).unwrap()
        ));
    }
    for r in end {
        text.push('\n');
        text.push_str(&r);
    }
    text.push('\n');
    w.write(&format!("{capture}.cx0169.cassette.jsonl"), text)
}

/// The run's end: its exit status and every message after the `tool.call`.
fn finished(mut child: Child, mut stdout: BufReader<ChildStdout>) -> (Option<i32>, Vec<Message>) {
    let mut rest = Vec::new();
    std::io::Read::read_to_end(&mut stdout, &mut rest).unwrap();
    let status = child.wait().unwrap();
    (status.code(), messages(&rest))
}

#[test]
fn a_codex_run_maps_its_answer_and_completes() {
    for codex in codexes() {
        let s = Setup::new("codex-run-text", &codex, Turn::Text);
        let out = s.run(&[]).output().unwrap();
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
            msgs.iter().any(
                |m| matches!(m, Message::Assistant { text } if text == "Hello from the fake model.")
            ),
            "{msgs:?}"
        );
        assert!(matches!(terminal(&msgs), Message::TerminalCompleted { .. }));
        s.w.assert_none_left_within(Duration::from_secs(2));
    }
}

#[test]
fn a_call_the_cassette_did_not_record_is_exit_99_naming_the_difference() {
    let s = Setup::new("codex-run-mismatch", &Codex::Fake, Turn::Text);
    let out = s.run(&["--model", "gpt-5"]).output().unwrap();
    let msgs = messages(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{msgs:?}");
    match terminal(&msgs) {
        Message::TerminalFailed(f) => {
            assert_eq!(f.reason, FailureReason::ProcessExit, "{f:?}");
            assert_eq!(f.exit.as_ref().and_then(|e| e.code), Some(99));
            let tail = f.stderr_tail.as_deref().unwrap_or_default();
            assert!(
                tail.contains("expect.effective.model: expected \"gpt-5.1-codex\", got \"gpt-5\" (from flag --model)"),
                "{tail}"
            );
        }
        other => panic!("{other:?}"),
    }
    s.w.assert_none_left();
}

#[test]
fn cancel_mid_tool_leaves_nothing() {
    for codex in codexes() {
        let s = Setup::new("codex-run-cancel", &codex, Turn::SleepingTool);
        let (child, stdout) = s.mid_tool(&[]);
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
        s.w.assert_none_left();
    }
}

#[test]
fn timeout_mid_tool_fails_and_leaves_nothing() {
    for codex in codexes() {
        let s = Setup::new("codex-run-timeout", &codex, Turn::SleepingTool);
        let (child, stdout) = s.mid_tool(&["--timeout", "8s"]);
        let (code, msgs) = finished(child, stdout);
        assert_eq!(code, Some(1), "{msgs:?}");
        match terminal(&msgs) {
            Message::TerminalFailed(f) => {
                assert_eq!(f.reason, FailureReason::Timeout);
                assert_eq!(f.message, "codex did not finish within 8s");
            }
            other => panic!("{other:?}"),
        }
        s.w.assert_none_left();
    }
}

/// SIGKILL of Codex's node wrapper orphans the native binary and its tool (measured on
/// the real CLI, and so does fake-pi); under pi-harness they are orphaned to the
/// supervisor, which sweeps them when the wrapper's death is reported.
#[test]
fn sigkill_of_the_node_wrapper_leaves_nothing() {
    for codex in codexes() {
        let s = Setup::new("codex-run-wrapper-kill", &codex, Turn::SleepingTool);
        let (child, stdout) = s.mid_tool(&[]);
        let wrapper = s.w.alive().into_iter().find(|p| comm(*p) == "node");
        let wrapper = wrapper.expect("the node wrapper");
        let native = s.w.alive().into_iter().find(|p| {
            comm(*p) == "codex" && cmdline(*p).contains("exec --json --skip-git-repo-check")
        });
        assert!(native.is_some(), "the native codex: {:?}", s.w.alive());
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
        s.w.assert_none_left();
    }
}

/// A CI job's timeout SIGKILLs pi-harness's whole process group: the supervisor, in a
/// group of its own, stops Codex and sweeps what is below it.
#[test]
fn sigkill_of_pi_harness_group_leaves_nothing() {
    use std::os::unix::process::CommandExt;
    for codex in codexes() {
        let s = Setup::new("codex-run-group-kill", &codex, Turn::SleepingTool);
        let mut child = s
            .run(&[])
            .process_group(0)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        s.await_tool();
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(-(child.id() as i32)),
            nix::sys::signal::Signal::SIGKILL,
        )
        .unwrap();
        let _ = child.wait();
        s.w.assert_none_left_within(Duration::from_secs(8));
    }
}
