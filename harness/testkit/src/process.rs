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
