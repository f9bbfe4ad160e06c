//! `pi-harness run --agent gemini`: the run maps Gemini CLI's stream-json, a model error is
//! a failure whatever the exit status says, and every way a run is stopped mid-tool leaves
//! nothing. Gemini CLI's own (relaunch parent) process ignores SIGTERM and SIGINT; a signal
//! to its process group ends it with exit 0 and orphans the tool's shell tree, which the
//! supervisor (their subreaper) sweeps. Each test runs on fake-pi as `gemini` (a cassette
//! built from a real capture) and, when `PI_HARNESS_REAL_GEMINI` names it (CI's Gemini
//! lane), on the real CLI against the scripted server. Each first sees the tool running
//! under the marker, so the leftover check can fail.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use pi_testkit::messages::terminal;
use pi_testkit::{fake_pi, World, MARKER_VAR};
use pi_wire::message::{FailureReason, Message};

use crate::util::{bin, messages};

const PROMPT: &str = "run the tool";
const MODEL: &str = "gemini-2.5-flash";

/// The Gemini CLIs a test runs on: fake-pi always, the real one when installed.
fn geminis() -> Vec<Gemini> {
    let mut all = vec![Gemini::Fake];
    match std::env::var_os("PI_HARNESS_REAL_GEMINI").filter(|v| !v.is_empty()) {
        Some(p) => all.push(Gemini::Real(PathBuf::from(p))),
        None => eprintln!(
            "real Gemini CLI skipped: PI_HARNESS_REAL_GEMINI is not set (pi-harness install gemini 0.61.0 --print-path)"
        ),
    }
    all
}

enum Gemini {
    /// fake-pi replaying a cassette built from a real capture.
    Fake,
    /// The npm package's `gemini`.
    Real(PathBuf),
}

/// A model turn: the answer `Hello from the fake model.`, a tool that sleeps, or a 400.
#[derive(Clone, Copy)]
enum Turn {
    Text,
    SleepingTool,
    BadRequest,
}

/// One run's setting: the world (its `home` holding `.gemini/settings.json`), the scripted
/// server (real Gemini CLI only), the program and what it needs in its environment.
struct Setup {
    w: World,
    _server: Option<Server>,
    program: PathBuf,
    env: Vec<(String, String)>,
}

impl Setup {
    fn new(name: &str, gemini: &Gemini, turn: Turn) -> Setup {
        let w = World::new(name);
        let home = w.path().join("home");
        std::fs::create_dir_all(home.join(".gemini")).unwrap();
        std::fs::write(
            home.join(".gemini/settings.json"),
            r#"{"security":{"auth":{"selectedType":"gemini-api-key"}},"telemetry":{"enabled":false},"privacy":{"usageStatisticsEnabled":false},"general":{"disableAutoUpdate":true,"disableUpdateNag":true,"maxAttempts":1}}"#,
        )
        .unwrap();
        let mut env = vec![
            ("HOME".to_string(), home.display().to_string()),
            ("GEMINI_API_KEY".to_string(), "test-key-1234".to_string()),
            ("GEMINI_CLI_TRUST_WORKSPACE".to_string(), "true".to_string()),
        ];
        let (server, program) = match gemini {
            Gemini::Real(p) => {
                let server = Server::start(&w, turn);
                env.push(("GOOGLE_GEMINI_BASE_URL".into(), server.1.clone()));
                (Some(server), p.clone())
            }
            Gemini::Fake => {
                let cassette = fake_cassette(&w, turn);
                env.push(("FAKE_PI_CASSETTE".into(), cassette.display().to_string()));
                env.push(("FAKE_PI_SPEED".into(), "0".into()));
                (None, fake_pi())
            }
        };
        Setup {
            w,
            _server: server,
            program,
            env,
        }
    }

    /// `pi-harness run --agent gemini --json --model M --approval-mode yolo`, carrying the
    /// world's marker.
    fn run(&self, extra: &[&str]) -> Command {
        let work = self.w.path().join("work");
        std::fs::create_dir_all(&work).unwrap();
        let mut c = Command::new(bin());
        c.args(["run", "--agent", "gemini", "--json", "--pi"])
            .arg(&self.program)
            .args(["--model", MODEL, "--approval-mode", "yolo"])
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

    /// Wait until the tool (`sleep 300`) runs under the marker.
    fn await_tool(&self) {
        let end = Instant::now() + Duration::from_secs(60);
        while Instant::now() < end {
            if self
                .w
                .alive()
                .into_iter()
                .any(|pid| cmdline(pid).contains("sleep 300"))
            {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("the tool never ran: {:?}", self.w.alive());
    }
}

fn cmdline(pid: i32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .unwrap_or_default()
}

/// The scripted server for the real Gemini CLI; killed when dropped.
struct Server(Child, String);

impl Server {
    fn start(w: &World, turn: Turn) -> Server {
        let script = w.write(
            "gemini.llm.json",
            match turn {
                Turn::Text => r#"{"turns":[{"text":["Hello from ","the fake model."]}]}"#,
                Turn::SleepingTool => {
                    r#"{"turns":[{"tools":[{"id":"call_1","name":"run_shell_command","args":{"command":"sleep 300; echo done","description":"sleep"}}]},{"text":["Done."]}]}"#
                }
                Turn::BadRequest => {
                    r#"{"turns":[{"status":400,"msg":"the scripted model refuses this request"}]}"#
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

/// A cassette of real Gemini CLI 0.61.0's capture (`harness/wire/tests/data/gemini/`): the
/// text answer, the 400 (exit 144), or the run up to its tool's start, then the tool (in
/// its own session) and nothing until a signal, which the CLI answers with exit 0, its tool
/// left alone.
fn fake_cassette(w: &World, turn: Turn) -> PathBuf {
    let (capture, end) = match turn {
        Turn::Text => ("text", vec![r#"{"dt_ms":0,"exit":0}"#.to_string()]),
        Turn::BadRequest => ("FAIL400", vec![r#"{"dt_ms":0,"exit":144}"#.to_string()]),
        Turn::SleepingTool => (
            "SIGTERM-group-mid-tool",
            vec![
                r#"{"dt_ms":0,"spawn":{"id":"tool","own_session":true,"argv":["bash","-c","sleep 300"]}}"#.to_string(),
                r#"{"dt_ms":0,"hang":true}"#.to_string(),
            ],
        ),
    };
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../wire/tests/data/gemini");
    let stdout = std::fs::read_to_string(dir.join(format!("{capture}.stdout.jsonl"))).unwrap();
    let mut text = format!(
        r#"{{"format":"pi-cassette","version":1,"gemini":{{"version":"0.61.0","dialect":"gemini-stream-json"}},"scenario":{{"name":"{capture}","description":"a real capture"}},"expect":{{"flags":{{"output-format":"stream-json","model":"{MODEL}","approval-mode":"yolo"}},"prompt":"{PROMPT}","env":["GEMINI_API_KEY"],"effective":{{"mode":"stream-json","model":"{MODEL}","approval":"yolo","max_attempts":1}},"session":"new"}},"process":{{"on_sigterm":{{"action":"exit","code":0}},"on_sigint":{{"action":"exit","code":0}},"on_sighup":{{"action":"exit","code":0}}}},"origin":{{"kind":"hand-made","timing":"synthetic"}}}}"#
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
    w.write(&format!("{capture}.gm061.cassette.jsonl"), text)
}

/// The run's end: its exit status and every message after the `tool.call`.
fn finished(mut child: Child, mut stdout: BufReader<ChildStdout>) -> (Option<i32>, Vec<Message>) {
    let mut rest = Vec::new();
    std::io::Read::read_to_end(&mut stdout, &mut rest).unwrap();
    let status = child.wait().unwrap();
    (status.code(), messages(&rest))
}

#[test]
fn a_gemini_run_maps_its_answer_and_completes() {
    for gemini in geminis() {
        let s = Setup::new("gemini-run-text", &gemini, Turn::Text);
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
        // Each chunk as it came (text deltas), the answer whole once joined.
        let text: String = msgs
            .iter()
            .filter_map(|m| match m {
                Message::Assistant { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(text, "Hello from the fake model.", "{msgs:?}");
        assert!(matches!(terminal(&msgs), Message::TerminalCompleted { .. }));
        s.w.assert_none_left_within(Duration::from_secs(2));
    }
}

/// Gemini CLI exits 144 (400 & 255) on a refused request: the run fails as a model error,
/// not as a process that exited oddly.
#[test]
fn a_model_error_fails_the_run_as_a_model_error() {
    for gemini in geminis() {
        let s = Setup::new("gemini-run-400", &gemini, Turn::BadRequest);
        let out = s.run(&[]).output().unwrap();
        let msgs = messages(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{msgs:?}");
        match terminal(&msgs) {
            Message::TerminalFailed(f) => {
                assert_eq!(f.reason, FailureReason::ModelError, "{f:?}");
                assert_eq!(f.exit.as_ref().and_then(|e| e.code), Some(144), "{f:?}");
            }
            other => panic!("{other:?}"),
        }
        s.w.assert_none_left_within(Duration::from_secs(2));
    }
}

/// A cancel signals Gemini CLI's process group (its own process would ignore a signal to
/// it alone): the CLI exits 0 at once, not by the SIGKILL that follows the grace period,
/// and the tool's orphaned tree is swept.
#[test]
fn cancel_mid_tool_signals_the_group_and_leaves_nothing() {
    for gemini in geminis() {
        let s = Setup::new("gemini-run-cancel", &gemini, Turn::SleepingTool);
        let (child, stdout) = s.mid_tool(&["--grace", "20s"]);
        let sent = Instant::now();
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(child.id() as i32),
            nix::sys::signal::Signal::SIGINT,
        )
        .unwrap();
        let (code, msgs) = finished(child, stdout);
        assert_eq!(code, Some(130), "{msgs:?}");
        match terminal(&msgs) {
            Message::TerminalCancelled { exit } => {
                assert_eq!(exit.as_ref().and_then(|e| e.code), Some(0), "{msgs:?}");
            }
            other => panic!("{other:?}"),
        }
        assert!(
            sent.elapsed() < Duration::from_secs(15),
            "the CLI waited for the SIGKILL after the grace period: {:?}",
            sent.elapsed()
        );
        s.w.assert_none_left();
    }
}

#[test]
fn timeout_mid_tool_fails_and_leaves_nothing() {
    for gemini in geminis() {
        let s = Setup::new("gemini-run-timeout", &gemini, Turn::SleepingTool);
        let (child, stdout) = s.mid_tool(&["--timeout", "8s"]);
        let (code, msgs) = finished(child, stdout);
        assert_eq!(code, Some(1), "{msgs:?}");
        match terminal(&msgs) {
            Message::TerminalFailed(f) => {
                assert_eq!(f.reason, FailureReason::Timeout);
                assert_eq!(f.message, "gemini did not finish within 8s");
            }
            other => panic!("{other:?}"),
        }
        s.w.assert_none_left();
    }
}

/// A CI job's timeout SIGKILLs pi-harness's whole process group: the supervisor, in a
/// group of its own, stops Gemini CLI and sweeps what is below it.
#[test]
fn sigkill_of_pi_harness_group_leaves_nothing() {
    use std::os::unix::process::CommandExt;
    for gemini in geminis() {
        let s = Setup::new("gemini-run-group-kill", &gemini, Turn::SleepingTool);
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
