//! Signals and reaping: becoming a child subreaper, SIGKILLing what a run left behind
//! (listed pids, or every process carrying a marker) and reaping those that are our
//! children.

use std::collections::BTreeSet;

use nix::sys::signal::{kill, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag};
use nix::unistd::Pid;

use crate::{all_procs, pids_with_env, read_proc, ProcInfo};

/// Make this process a child subreaper: orphans of our descendants reparent to us
/// instead of init, so they can be found and reaped.
pub fn become_subreaper() -> nix::Result<()> {
    nix::sys::prctl::set_child_subreaper(true)
}

/// Our direct children (after pi died, its orphans are among them).
pub fn own_children() -> Vec<ProcInfo> {
    let me = std::process::id() as i32;
    all_procs().into_iter().filter(|p| p.ppid == me).collect()
}

/// SIGKILL each pid (and its process group when it leads one), then reap those that
/// are our children. Returns the pids that were still alive.
pub fn kill_and_reap(pids: &[i32]) -> Vec<i32> {
    let me = std::process::id() as i32;
    let mut killed = Vec::new();
    for &pid in pids {
        let Some(p) = read_proc(pid) else { continue };
        if !p.is_zombie() {
            if p.pgid == pid && pid != me {
                let _ = kill(Pid::from_raw(-pid), Signal::SIGKILL);
            }
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
            killed.push(pid);
        }
    }
    reap_children_of_self(pids);
    killed
}

/// SIGKILL every live descendant of `root` (with the process group each leads) and reap the
/// ones that are our children, in waves until none is left: a killed process's children
/// reparent (to `root`, when it is a subreaper) and the next wave finds them. Returns the
/// processes found alive, in the order found.
pub fn kill_descendants(root: i32) -> Vec<ProcInfo> {
    let mut found = Vec::new();
    for _ in 0..50 {
        let below = crate::descendants(&all_procs(), root);
        let zombies: Vec<i32> = below
            .iter()
            .filter(|p| p.is_zombie())
            .map(|p| p.pid)
            .collect();
        reap_children_of_self(&zombies);
        let live: Vec<ProcInfo> = below.into_iter().filter(|p| !p.is_zombie()).collect();
        if live.is_empty() {
            break;
        }
        let pids: Vec<i32> = live.iter().map(|p| p.pid).collect();
        kill_and_reap(&pids);
        found.extend(live);
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    found
}

/// Wait for each listed pid that is our child (a zombie is collected; a live one is
/// waited for, so only call this after killing it). Other children are left alone: their
/// owners (tokio, a test) reap them.
fn reap_children_of_self(pids: &[i32]) {
    let me = std::process::id() as i32;
    for &pid in pids {
        if read_proc(pid).is_some_and(|p| p.ppid == me) {
            let _ = waitpid(Pid::from_raw(pid), None);
        }
    }
}

/// SIGKILL every live process whose environment holds `NAME=value`, and reap those that
/// end up as our children (orphans reparent to us when we are a subreaper). Polls for up
/// to two seconds, since killed processes' own children reparent in waves. Returns the
/// processes found alive (and killed), in the order found.
pub fn kill_marked(name: &str, value: &str) -> Vec<ProcInfo> {
    let me = std::process::id() as i32;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    let mut found: Vec<ProcInfo> = Vec::new();
    let mut killed: BTreeSet<i32> = BTreeSet::new();
    loop {
        for pid in pids_with_env(name, value) {
            if pid == me || !killed.insert(pid) {
                continue;
            }
            if let Some(p) = read_proc(pid) {
                found.push(p);
            }
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
        // Reap the killed ones that are (now) ours; the rest are still reparenting.
        let mut pending = false;
        for &pid in &killed {
            match read_proc(pid) {
                Some(p) if p.ppid == me && p.is_zombie() => {
                    let _ = waitpid(Pid::from_raw(pid), Some(WaitPidFlag::WNOHANG));
                }
                Some(_) => pending = true,
                None => {}
            }
        }
        if (!pending && pids_with_env(name, value).is_empty())
            || std::time::Instant::now() > deadline
        {
            return found;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}
