//! Every process shape fake-pi takes, started as a caller starts it: pi, Claude Code, Codex
//! (the node wrapper and its native child) and Gemini CLI (the relaunch parent and its
//! child), each on a cassette with stdin a pipe and hints on (`FAKE_PI_HINTS=1`), either run
//! to its recorded end or driven to where it waits mid-tool and sent SIGTERM, then checked
//! against what the recorded CLI does. And the blocked-signal mask of every thread, read off
//! `/proc/PID/task/*/status`. Shared by the `signal_masks` tests and the stress run
//! (`examples/shapes_stress.rs`, `scripts/fake-pi-shapes-stress.sh`): nothing here panics on
//! what fake-pi does; a run's result says what went wrong.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pi_cassette::two_way::{client_steps, ClientAction};
use pi_cassette::{Action, Cassette};
use pi_testkit::World;

/// A process shape of fake-pi's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// One process, as pi (json mode).
    Pi,
    /// One process, as Claude Code (stream-json, a host on stdin).
    Claude,
    /// The node wrapper and its native `codex` child.
    Codex,
    /// The relaunch parent (`node`) and its `gemini` child.
    Gemini,
}

/// Every shape.
pub const SHAPES: [Shape; 4] = [Shape::Pi, Shape::Claude, Shape::Codex, Shape::Gemini];

/// How a run goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// To the recording's end: its stdout, its exit status.
    ToEnd,
    /// To where the replay waits mid-tool, then SIGTERM as the recording's caller sent it.
    Sigterm,
}

/// The signals fake-pi takes itself (SIGHUP, SIGINT, SIGTERM, SIGCHLD) as bits of a
/// `SigBlk` mask (bit N-1 for signal N).
pub const HANDLED: u64 = 1 << (libc::SIGHUP - 1)
    | 1 << (libc::SIGINT - 1)
    | 1 << (libc::SIGTERM - 1)
    | 1 << (libc::SIGCHLD - 1);

/// How long a run may take before it counts as hung.
pub const DEADLINE: Duration = Duration::from_secs(30);

/// How long a run's processes may take to be gone once its top process ended.
const SETTLE: Duration = Duration::from_secs(5);

impl Shape {
    /// The shape's name, as the stress run prints it.
    pub fn name(self) -> &'static str {
        match self {
            Shape::Pi => "pi",
            Shape::Claude => "claude",
            Shape::Codex => "codex (wrapper + native)",
            Shape::Gemini => "gemini (relaunch parent + child)",
        }
    }

    /// The process names of fake-pi's own processes in this shape, top first.
    fn fakes(self) -> &'static [&'static str] {
        match self {
            Shape::Pi | Shape::Claude => &[],
            Shape::Codex => &["codex"],
            Shape::Gemini => &["gemini"],
        }
    }
}

/// A committed cassette, by its path under `cassettes/`.
fn corpus(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../cassettes")
        .join(name)
}

/// A pi cassette (hand-made: the corpus's pi recordings need a provider's models): a stderr
/// line and a session, then the exit, or a tool started in its own session and a hang.
fn pi_cassette(world: &World, kind: Kind) -> PathBuf {
    let records: &[&str] = match kind {
        Kind::ToEnd => &[
            r#"{"dt_ms":0,"stderr":"recorded stderr\n"}"#,
            r#"{"dt_ms":0,"stdout":{"type":"session"}}"#,
            r#"{"dt_ms":0,"stdout":{"type":"agent_start"}}"#,
            r#"{"dt_ms":0,"exit":0}"#,
        ],
        Kind::Sigterm => &[
            r#"{"dt_ms":0,"stderr":"recorded stderr\n"}"#,
            r#"{"dt_ms":0,"stdout":{"type":"session"}}"#,
            r#"{"dt_ms":0,"spawn":{"id":"t","own_session":true,"argv":["sleep","300"]}}"#,
            r#"{"dt_ms":0,"stdout":{"type":"tool_execution_update"}}"#,
            r#"{"dt_ms":0,"hang":true}"#,
        ],
    };
    world
        .cassette(&format!("shape-pi-{kind:?}"))
        .expect(r#"{"flags":{"mode":"json"},"prompt":"hi","argv_messages":["hi"]}"#)
        .records(records)
        .write()
}

/// One run being driven.
pub struct Run {
    /// The shape.
    pub shape: Shape,
    /// The top process.
    pub top: Child,
    cassette: Cassette,
    stdin: Option<ChildStdin>,
    stdout: Arc<Mutex<Vec<u8>>>,
    started: Instant,
}

/// What went wrong with a run.
#[derive(Debug)]
pub enum Failure {
    /// It did not get where it was going within [`DEADLINE`]: what it was waiting for, and
    /// its processes' threads (state, wait channel, mask).
    Hung(String),
    /// It ended otherwise than the recording says.
    Wrong(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Hung(s) => write!(f, "hung: {s}"),
            Failure::Wrong(s) => write!(f, "wrong ending: {s}"),
        }
    }
}

/// Start `shape` in `world` for a run of `kind`: stdin a pipe (closed at once unless a host
/// writes on it), hints on, instant speed, the recorded values.
pub fn start(world: &World, shape: Shape, kind: Kind) -> Result<Run, Failure> {
    let (path, args): (PathBuf, Vec<String>) = match (shape, kind) {
        (Shape::Pi, k) => (
            pi_cassette(world, k),
            vec!["--mode".into(), "json".into(), "hi".into()],
        ),
        (Shape::Claude, k) => {
            let name = match k {
                Kind::ToEnd => "claude/claude_text.cc21332.cassette.jsonl",
                Kind::Sigterm => "claude/claude_sigterm_mid_tool.cc21332.cassette.jsonl",
            };
            (corpus(name), Vec::new())
        }
        (Shape::Codex, k) => {
            let (name, prompt) = match k {
                Kind::ToEnd => ("codex/codex_text.cx0169.cassette.jsonl", "Say hello."),
                Kind::Sigterm => (
                    "codex/codex_sigterm_mid_tool.cx0169.cassette.jsonl",
                    "Run it.",
                ),
            };
            let args = ["exec", "--json", "--skip-git-repo-check", prompt];
            (corpus(name), args.map(String::from).to_vec())
        }
        (Shape::Gemini, k) => {
            let (name, prompt) = match k {
                Kind::ToEnd => ("gemini/gemini_text.gm061.cassette.jsonl", "Say hello."),
                Kind::Sigterm => (
                    "gemini/gemini_sigterm_group_mid_tool.gm061.cassette.jsonl",
                    "Run it.",
                ),
            };
            let args = [
                "--output-format",
                "stream-json",
                "-m",
                "gemini-2.5-flash",
                "-y",
                "-p",
                prompt,
            ];
            (corpus(name), args.map(String::from).to_vec())
        }
    };
    let cassette = Cassette::load(&path).map_err(|e| Failure::Wrong(format!("{e}")))?;
    let args = if shape == Shape::Claude {
        cassette.header.expect.claude_argv()
    } else {
        args
    };
    let mut cmd = world.fake_pi(&path);
    cmd.args(&args)
        .env("FAKE_PI_HINTS", "1")
        .env("FAKE_PI_VALUES", "recorded")
        .env("HOME", world.path())
        .env("ANTHROPIC_API_KEY", "k")
        .env("CODEX_API_KEY", "k")
        .env("GEMINI_API_KEY", "k")
        .env("CODEX_HOME", world.path().join("codex-home"))
        .env_remove("GEMINI_MODEL")
        .env_remove("GEMINI_CLI_NO_RELAUNCH")
        .env_remove("SANDBOX")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if shape == Shape::Codex {
        world.write(
            "codex-home/config.toml",
            "model = \"gpt-5.5\"\nmodel_provider = \"openai\"\n",
        );
    }
    // Its own process group: Gemini's recorded caller signals the group.
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    spawn(cmd, shape, cassette)
}

fn spawn(mut cmd: Command, shape: Shape, cassette: Cassette) -> Result<Run, Failure> {
    let mut top = cmd
        .spawn()
        .map_err(|e| Failure::Wrong(format!("cannot start fake-pi: {e}")))?;
    let mut out = top.stdout.take().expect("stdout piped");
    let stdout = Arc::new(Mutex::new(Vec::new()));
    let sink = stdout.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 8192];
        while let Ok(n) = out.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.lock().unwrap().extend_from_slice(&buf[..n]);
        }
    });
    let mut stdin = top.stdin.take();
    if shape != Shape::Claude {
        // A pipe the caller closes at once: pi, Codex and Gemini read it to its end.
        stdin = None;
    }
    Ok(Run {
        shape,
        top,
        cassette,
        stdin,
        stdout,
        started: Instant::now(),
    })
}

impl Run {
    /// The pid of the top process.
    pub fn pid(&self) -> i32 {
        self.top.id() as i32
    }

    /// fake-pi's own processes of this run: the top one and, for Codex and Gemini, its child
    /// of the shape's name (0 while it is not there).
    pub fn fakes(&self, world: &World) -> Vec<i32> {
        let top = self.pid();
        let mut v = vec![top];
        for name in self.shape.fakes() {
            let child = world
                .alive()
                .into_iter()
                .find(|&p| {
                    pi_testkit::process::stat(p).is_some_and(|s| s.1 == top) && comm(p) == *name
                })
                .unwrap_or(0);
            v.push(child);
        }
        v
    }

    fn stdout_has(&self, needle: &str) -> bool {
        let out = self.stdout.lock().unwrap();
        String::from_utf8_lossy(&out).contains(needle)
    }

    /// Wait until `cond` holds; [`Failure::Hung`] naming `what` past the deadline.
    fn wait(
        &mut self,
        world: &World,
        what: &str,
        mut cond: impl FnMut(&mut Run) -> bool,
    ) -> Result<(), Failure> {
        while !cond(self) {
            if self.started.elapsed() > DEADLINE {
                return Err(Failure::Hung(format!("{what}; {}", self.threads(world))));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        Ok(())
    }

    /// Drive a [`Kind::Sigterm`] run to where its replay waits: the host's lines written
    /// (Claude Code), the stdout before the wait read, the tool processes up.
    pub fn drive_to_wait(&mut self, world: &World) -> Result<(), Failure> {
        let (marker, count) = match self.shape {
            Shape::Pi => ("tool_execution_update", 2),
            Shape::Claude => ("control_request", 2),
            Shape::Codex => ("item.started", 4),
            Shape::Gemini => ("tool_use", 4),
        };
        let host = host_lines(&self.cassette);
        if self.shape == Shape::Claude {
            self.write(&host[0])?;
        }
        self.wait(world, &format!("stdout up to {marker}"), |r| {
            r.stdout_has(marker)
        })?;
        if self.shape == Shape::Claude {
            // The allow: the tool starts, and the replay waits for the host's SIGTERM.
            self.write(&host[1])?;
        }
        self.wait(world, &format!("{count} processes up"), |_| {
            world.alive().len() >= count
        })?;
        let n = self.shape.fakes().len() + 1;
        self.wait(world, "fake-pi's processes", |r| {
            r.fakes(world).iter().filter(|&&p| p != 0).count() == n
        })
    }

    fn write(&mut self, line: &[u8]) -> Result<(), Failure> {
        let stdin = self.stdin.as_mut().expect("a host's stdin");
        stdin
            .write_all(line)
            .and_then(|()| stdin.flush())
            .map_err(|e| Failure::Wrong(format!("the host's write: {e}")))
    }

    /// Every thread's blocked-signal mask of fake-pi's processes in this run, as
    /// [`masks_agree`] checks them, once they settle: a thread just created blocks every
    /// signal until it first runs (glibc starts it so), which a loaded machine may delay;
    /// one that keeps another mask for seconds is what this looks for.
    pub fn masks_agree(&self, world: &World) -> Result<(), String> {
        let end = Instant::now() + Duration::from_secs(5);
        loop {
            let checked = self.fakes(world).into_iter().try_for_each(masks_agree);
            if checked.is_ok() || Instant::now() > end {
                return checked;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Send SIGTERM as the recording's caller did and check the answer: pi and Claude Code
    /// exit 143 (their cleanup: the tool killed), Codex's wrapper dies by it (the tool's
    /// shell killed, the `sleep` it ran left), Gemini's top process ignores it and the run
    /// ends with exit 0 once its group gets it (the tool's two processes left). What is left
    /// is then killed: how long it would live is other tests' subject.
    pub fn sigterm(mut self, world: &World) -> Result<(), Failure> {
        let pid = nix::unistd::Pid::from_raw(self.pid());
        let term = nix::sys::signal::Signal::SIGTERM;
        let _ = nix::sys::signal::kill(pid, term);
        if self.shape == Shape::Gemini {
            // The relaunch parent ignores it (measured); the group's SIGTERM ends the run.
            std::thread::sleep(Duration::from_millis(200));
            if !pi_testkit::process::alive(self.pid()) {
                return Err(Failure::Wrong(
                    "the relaunch parent ended on SIGTERM".into(),
                ));
            }
            let _ = nix::sys::signal::killpg(pid, term);
        }
        let status = self.end(world)?;
        let got = (
            status.code(),
            std::os::unix::process::ExitStatusExt::signal(&status),
        );
        let (want, left) = match self.shape {
            Shape::Pi | Shape::Claude => ((Some(143), None), 0),
            Shape::Codex => ((None, Some(libc::SIGTERM)), 1),
            Shape::Gemini => ((Some(0), None), 2),
        };
        if got != want {
            return Err(Failure::Wrong(format!(
                "(code, signal) {got:?}, the recording's {want:?}"
            )));
        }
        self.stdout_is_recorded()?;
        let end = Instant::now() + SETTLE;
        while world.alive().len() != left && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(10));
        }
        let alive = world.alive();
        world.kill_all();
        if alive.len() != left {
            let shown: Vec<String> = alive
                .iter()
                .map(|&p| format!("{p} {}", pi_testkit::process::cmdline(p)))
                .collect();
            return Err(Failure::Wrong(format!(
                "left running: {shown:?}, the recording's {left} process(es)"
            )));
        }
        Ok(())
    }

    /// Wait for a [`Kind::ToEnd`] run's end and check it: the recorded stdout and exit status,
    /// nothing left.
    pub fn run_to_end(mut self, world: &World) -> Result<(), Failure> {
        if self.shape == Shape::Claude {
            for line in host_lines(&self.cassette) {
                self.write(&line)?;
            }
            // claude_text's host closes stdin after its line.
            self.stdin = None;
        }
        let status = self.end(world)?;
        let want = match self.cassette.ending() {
            Action::Exit(code) => *code,
            other => return Err(Failure::Wrong(format!("the cassette ends with {other:?}"))),
        };
        if status.code() != Some(want) {
            return Err(Failure::Wrong(format!(
                "{status}, the recording's exit {want}"
            )));
        }
        self.stdout_is_recorded()?;
        none_left(world)
    }

    /// Wait for the top process to end (and its stdout to close).
    fn end(&mut self, world: &World) -> Result<std::process::ExitStatus, Failure> {
        let mut status = None;
        self.wait(world, "the top process's end", |r| {
            status = r.top.try_wait().ok().flatten();
            status.is_some()
        })?;
        self.stdin = None;
        Ok(status.expect("waited for"))
    }

    fn stdout_is_recorded(&self) -> Result<(), Failure> {
        let want = self.cassette.stdout_bytes();
        let end = Instant::now() + Duration::from_secs(2);
        loop {
            let got = self.stdout.lock().unwrap().clone();
            if got == want {
                return Ok(());
            }
            if Instant::now() > end {
                return Err(Failure::Wrong(format!(
                    "stdout {} bytes, the recording's {}:\n{}",
                    got.len(),
                    want.len(),
                    String::from_utf8_lossy(&got)
                )));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// The threads of the run's processes: pid, name, state, wait channel and mask each.
    pub fn threads(&self, world: &World) -> String {
        let mut s = String::new();
        for pid in self.fakes(world).into_iter().filter(|&p| p != 0) {
            for t in threads(pid) {
                s.push_str(&format!(
                    "\n  {pid}/{} {} state {} wchan {} SigBlk {:016x}{}",
                    t.tid,
                    t.name,
                    t.state,
                    t.wchan,
                    t.blocked,
                    if t.in_sigwait { " (in sigwait)" } else { "" }
                ));
            }
        }
        s
    }
}

/// Nothing of the world's is left (within [`SETTLE`]).
fn none_left(world: &World) -> Result<(), Failure> {
    let end = Instant::now() + SETTLE;
    while !world.alive().is_empty() {
        if Instant::now() > end {
            let left: Vec<String> = world
                .alive()
                .iter()
                .map(|&p| format!("{p} {}", pi_testkit::process::cmdline(p)))
                .collect();
            world.kill_all();
            return Err(Failure::Wrong(format!("left running: {left:?}")));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(())
}

/// The host's lines of a Claude Code cassette, each with its newline.
fn host_lines(c: &Cassette) -> Vec<Vec<u8>> {
    client_steps(&c.records)
        .into_iter()
        .filter_map(|s| match s.action {
            ClientAction::Line(l) | ClientAction::Raw(l) => Some(format!("{l}\n").into_bytes()),
            _ => None,
        })
        .collect()
}

/// A process's name (`comm`).
pub fn comm(pid: i32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// One thread of a process, as `/proc/PID/task/TID` shows it.
pub struct Thread {
    /// Its id.
    pub tid: i32,
    /// Its name.
    pub name: String,
    /// Its state letter.
    pub state: String,
    /// Where it waits in the kernel.
    pub wchan: String,
    /// Its blocked signals (`SigBlk`).
    pub blocked: u64,
    /// It waits in `sigtimedwait` (`sigwait`): while it does, the kernel shows its mask
    /// without the signals it waits for (they are its to take), blocked again after.
    pub in_sigwait: bool,
}

impl Thread {
    /// Its mask outside a `sigwait`: what it blocks from every other way of taking a signal.
    pub fn mask(&self) -> u64 {
        if self.in_sigwait {
            self.blocked | HANDLED
        } else {
            self.blocked
        }
    }
}

/// The `SigBlk` mask in a `status` file's text.
fn sig_blk(status: &str) -> Option<u64> {
    let hex = status.lines().find_map(|l| l.strip_prefix("SigBlk:"))?;
    u64::from_str_radix(hex.trim(), 16).ok()
}

/// Every thread of `pid` (none when it is gone).
pub fn threads(pid: i32) -> Vec<Thread> {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let mut v: Vec<Thread> = dir
        .flatten()
        .filter_map(|e| {
            let tid: i32 = e.file_name().to_str()?.parse().ok()?;
            let read = |f: &str| std::fs::read_to_string(e.path().join(f)).unwrap_or_default();
            let status = read("status");
            let field = |k: &str| {
                status
                    .lines()
                    .find_map(|l| l.strip_prefix(k))
                    .unwrap_or("")
                    .trim()
                    .to_string()
            };
            let wchan = read("wchan");
            // The syscall it is in (its number first; readable by an ancestor), else the
            // kernel function it waits in.
            let syscall = read("syscall");
            let in_sigwait = syscall.split(' ').next()
                == Some(&libc::SYS_rt_sigtimedwait.to_string())
                || wchan.contains("sigtimedwait");
            Some(Thread {
                tid,
                name: field("Name:"),
                state: field("State:"),
                wchan,
                blocked: sig_blk(&status)?,
                in_sigwait,
            })
        })
        .collect();
    v.sort_by_key(|t| t.tid);
    v
}

/// Once a shape waits: `pid` blocks the signals fake-pi takes itself ([`HANDLED`]), and each
/// of its threads blocks exactly what the process does (a thread that did not would take a
/// signal meant for the `sigwait`: a SIGCHLD lost, a SIGTERM answered by its default). The
/// process's mask is its main thread's (`/proc/PID/status`), each thread's as it is outside
/// a `sigwait` ([`Thread::mask`]).
pub fn masks_agree(pid: i32) -> Result<(), String> {
    let all = threads(pid);
    let process = all
        .iter()
        .find(|t| t.tid == pid)
        .map(Thread::mask)
        .ok_or_else(|| format!("{pid}: gone"))?;
    if process & HANDLED != HANDLED {
        return Err(format!(
            "{pid} ({}): SigBlk {process:016x} lacks {:016x}",
            comm(pid),
            HANDLED & !process
        ));
    }
    for t in all {
        if t.mask() != process {
            return Err(format!(
                "{pid} ({}): thread {} ({}) SigBlk {:016x}, the process's {process:016x}",
                comm(pid),
                t.tid,
                t.name,
                t.mask()
            ));
        }
    }
    Ok(())
}
