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
    /// Its exit code (`None`: killed by a signal, for example past the memory cap).
    pub code: Option<i32>,
    /// Its stdout.
    pub stdout: Vec<u8>,
    /// Its stderr.
    pub stderr: Vec<u8>,
    /// Its peak resident memory, in KiB.
    pub peak_rss_kib: u64,
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
    const PARENT: &str = r#"
import resource, subprocess, sys
cap = int(sys.argv[2])
def limit():
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
r = subprocess.run(sys.argv[3:], preexec_fn=limit)
with open(sys.argv[1], "w") as f:
    f.write("%d %d\n" % (r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))
"#;
    let report = tempfile::NamedTempFile::new().expect("a temp file");
    let mut parent = std::process::Command::new("python3");
    parent
        .arg("-c")
        .arg(PARENT)
        .arg(report.path())
        .arg(cap_bytes.to_string())
        .arg(cmd.get_program())
        .args(cmd.get_args())
        .stdin(stdin);
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
    Measured {
        code: (code >= 0).then_some(code as i32),
        stdout: out.stdout,
        stderr: out.stderr,
        peak_rss_kib: words.next().unwrap_or(-1).max(0) as u64,
    }
}
