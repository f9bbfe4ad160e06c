//! Signals and reaping: becoming a child subreaper, SIGKILLing what a run left behind
//! (listed pids, or every process carrying a marker) and reaping those that are our
//! children.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag};
use nix::unistd::Pid;

use crate::sweep::Swept;
use crate::{all_procs, read_proc, ProcInfo};

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

/// SIGKILL every live descendant of `root` (with the process groups that hold nothing else)
/// and reap the ones that are our children, freezing each first, in rounds until
/// [`QUIET_LOOKS`](crate::sweep::QUIET_LOOKS) looks in a row find none (at most five
/// seconds): a killed process's children reparent (to `root`, when it is a subreaper) and
/// the next round finds them. Returns the processes found alive, in the order found.
pub fn kill_descendants(root: i32) -> Vec<ProcInfo> {
    let protected = crate::self_and_ancestors();
    let swept = crate::sweep::sweep(
        &mut || crate::sweep::freeze_below(root, &protected),
        None,
        std::time::Duration::from_secs(5),
        &mut |d| std::thread::sleep(d),
    );
    let mut pids: Vec<i32> = swept.found.iter().map(|p| p.pid).collect();
    // And the zombies below `root` that are ours (dead by themselves meanwhile).
    pids.extend(
        crate::descendants(&all_procs(), root)
            .iter()
            .filter(|p| p.is_zombie())
            .map(|p| p.pid),
    );
    reap_children_of_self(&pids);
    swept.found
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

/// SIGKILL every live process whose environment holds `NAME=value` ([`sweep_marked`]) and
/// return those found alive, in the order found.
pub fn kill_marked(name: &str, value: &str) -> Vec<ProcInfo> {
    sweep_marked(name, value).found
}

/// Freeze and kill every live process whose environment holds `NAME=value`, in rounds until
/// [`QUIET_LOOKS`](crate::sweep::QUIET_LOOKS) looks in a row find none (at most two
/// seconds), then reap those that are our children (orphans reparent to us when we are a
/// subreaper). Says whether the marked processes were evasive (see [`crate::sweep`]).
pub fn sweep_marked(name: &str, value: &str) -> Swept {
    let swept = crate::sweep::sweep(
        &mut || crate::sweep::freeze_marked(name, value),
        None,
        Duration::from_secs(2),
        &mut |d| std::thread::sleep(d),
    );
    // Reap the killed ones that are (now) ours, once each is dead (SIGKILLed: shortly).
    let me = std::process::id() as i32;
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut pending: BTreeSet<i32> = swept.found.iter().map(|p| p.pid).collect();
    while !pending.is_empty() && Instant::now() < deadline {
        pending.retain(|&pid| match read_proc(pid) {
            Some(p) if p.ppid == me && p.is_zombie() => {
                let _ = waitpid(Pid::from_raw(pid), Some(WaitPidFlag::WNOHANG));
                false
            }
            Some(p) => p.ppid == me,
            None => false,
        });
        std::thread::sleep(Duration::from_millis(5));
    }
    swept
}
