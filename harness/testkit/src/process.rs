//! Reading a process's state while a test runs, and waiting for a condition.

use std::time::{Duration, Instant};

/// `(state, ppid, pgrp, session)` of a process, from `/proc/PID/stat`.
pub fn stat(pid: i32) -> Option<(char, i32, i32, i32)> {
    pi_procs::read_proc(pid).map(|p| (p.state, p.ppid, p.pgid, p.sid))
}

/// The process exists and is not a zombie.
pub fn alive(pid: i32) -> bool {
    pi_procs::read_proc(pid).is_some_and(|p| !p.is_zombie())
}

/// The process's command line, words joined by spaces (empty when it is gone).
pub fn cmdline(pid: i32) -> String {
    pi_procs::read_proc(pid)
        .map(|p| p.cmdline.join(" ").trim().to_string())
        .unwrap_or_default()
}

/// Send a signal (`libc` number) to a process; panics if it cannot be sent.
pub fn send(pid: u32, signal: i32) {
    let sig = nix::sys::signal::Signal::try_from(signal).expect("a valid signal number");
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), sig)
        .unwrap_or_else(|e| panic!("kill({pid}, {sig}): {e}"));
}

/// Poll `cond` every 10 ms until it holds; panics after `limit`.
pub fn wait_until(limit: Duration, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(
            start.elapsed() < limit,
            "condition not reached within {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// What [`run_measured`] saw of a command run to its end.
#[derive(Debug)]
pub struct Measured {
    /// Its exit code (`None`: killed by a signal, for example past the memory cap, or
    /// past the time limit).
    pub code: Option<i32>,
    /// Its stdout (empty when it was discarded).
    pub stdout: Vec<u8>,
    /// Its stderr.
    pub stderr: Vec<u8>,
    /// Its peak resident memory, in KiB.
    pub peak_rss_kib: u64,
    /// It was killed at the time limit ([`Measure::timeout`]).
    pub timed_out: bool,
}

/// How [`measure`] runs a command besides the command itself.
#[derive(Debug)]
pub struct Measure {
    /// Its stdin.
    pub stdin: std::process::Stdio,
    /// Its address space is capped here (bytes): a run that would grow past it fails (its
    /// allocation does) instead of taking the machine's memory.
    pub cap_bytes: u64,
    /// It is killed (SIGKILL) past this long, and [`Measured::timed_out`] says so.
    pub timeout: Option<std::time::Duration>,
    /// Its stdout goes to `/dev/null` instead of [`Measured::stdout`] (a command that writes
    /// hundreds of megabytes).
    pub discard_stdout: bool,
}

impl Measure {
    /// `stdin`, `cap_bytes`, no time limit, stdout kept.
    pub fn new(stdin: std::process::Stdio, cap_bytes: u64) -> Measure {
        Measure {
            stdin,
            cap_bytes,
            timeout: None,
            discard_stdout: false,
        }
    }
}

/// Run `cmd` (its program, arguments, environment and working directory; stdin is `stdin`)
/// to its end under a small `python3` parent that reports the command's peak RSS. A child
/// forked straight from a test process starts with the test's pages in its high-water mark,
/// so `wait4` there measures the test, not the command. The command's address space is capped
/// at `cap_bytes`: a run that would grow past it fails (its allocation does) instead of
/// taking the machine's memory.
pub fn run_measured(
    cmd: &std::process::Command,
    stdin: std::process::Stdio,
    cap_bytes: u64,
) -> Measured {
    measure(cmd, Measure::new(stdin, cap_bytes))
}

/// [`run_measured`] with the choices of [`Measure`]: a time limit, stdout discarded.
pub fn measure(cmd: &std::process::Command, how: Measure) -> Measured {
    const PARENT: &str = r#"
import resource, subprocess, sys
cap = int(sys.argv[2])
timeout = float(sys.argv[3]) if sys.argv[3] != "-" else None
out = subprocess.DEVNULL if sys.argv[4] == "discard" else None
def limit():
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
try:
    code = subprocess.run(sys.argv[5:], preexec_fn=limit, timeout=timeout, stdout=out).returncode
    late = 0
except subprocess.TimeoutExpired:
    code, late = -9, 1
with open(sys.argv[1], "w") as f:
    f.write("%d %d %d\n" % (code, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, late))
"#;
    let report = tempfile::NamedTempFile::new().expect("a temp file");
    let mut parent = std::process::Command::new("python3");
    parent
        .arg("-c")
        .arg(PARENT)
        .arg(report.path())
        .arg(how.cap_bytes.to_string())
        .arg(
            how.timeout
                .map_or("-".to_string(), |t| t.as_secs_f64().to_string()),
        )
        .arg(if how.discard_stdout {
            "discard"
        } else {
            "keep"
        })
        .arg(cmd.get_program())
        .args(cmd.get_args())
        .stdin(how.stdin);
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => parent.env(k, v),
            None => parent.env_remove(k),
        };
    }
    if let Some(dir) = cmd.get_current_dir() {
        parent.current_dir(dir);
    }
    let out = parent.output().expect("python3 runs");
    let text = std::fs::read_to_string(report.path()).unwrap_or_default();
    let mut words = text
        .split_whitespace()
        .map(|w| w.parse::<i64>().unwrap_or(-1));
    let code = words.next().unwrap_or(-1);
    let peak = words.next().unwrap_or(-1).max(0) as u64;
    Measured {
        code: (code >= 0).then_some(code as i32),
        stdout: out.stdout,
        stderr: out.stderr,
        peak_rss_kib: peak,
        timed_out: words.next() == Some(1),
    }
}
