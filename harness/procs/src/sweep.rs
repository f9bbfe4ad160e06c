//! Getting rid of what a run left behind even when it forks while being killed: freeze,
//! then kill, round after round until a quiet round.
//!
//! A process that forks a copy of itself and exits every millisecond is gone before a kill
//! sent from one look at `/proc` reaches it, and its copy was not in that look. So each round
//! looks at `/proc` newest process first (a fresh copy is read a moment after the listing)
//! and SIGSTOPs what it finds as soon as it can tell it is one to get rid of (a stopped
//! process cannot fork), then SIGKILLs them all, and the process groups that hold nothing
//! else. The rounds go on until nothing is left: known exactly by a child subreaper that
//! owns every child it has (no child left at all: [`has_children`]), else [`QUIET_LOOKS`]
//! looks in a row that find nothing; or until the deadline. A process found after the first
//! round that killed something was started while the others were being killed: the sweep
//! was *evasive*, and says so. (A cgroup's freezer would stop a whole tree at once, but
//! needs a writable cgroupfs that test machines seldom give; stopping each process is
//! enough on its own.)

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::{kill, Signal};
use nix::sys::wait::{waitid, Id, WaitPidFlag};
use nix::unistd::Pid;

use crate::snapshot::{marked_env, newest_first, read_proc, settled_scan, Seen};
use crate::{groups_only_of, live_descendants, sigkill_pending, ProcInfo};

/// Looks in a row that find nothing before a sweep without an exact answer stops.
pub const QUIET_LOOKS: u32 = 3;

/// What one look found to get rid of.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Look {
    /// The live processes, each already stopped when the look could tell it was one.
    pub live: Vec<ProcInfo>,
    /// Process groups that may be signalled whole: every live member is in `live`.
    pub groups: Vec<i32>,
}

/// What a sweep did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Swept {
    /// Every process found alive (and killed), in the order found.
    pub found: Vec<ProcInfo>,
    /// Processes kept appearing after the first round that killed something (they were
    /// started while the others were being killed), or something was still there at the
    /// deadline.
    pub evasive: bool,
    /// Pids still alive at the deadline.
    pub unkillable: Vec<i32>,
}

/// Whether this process has a child, live or exited and not yet reaped (nothing is reaped:
/// `WNOWAIT`). For a child subreaper, every process below it has a child of it among its
/// ancestors: no child means nothing below, however fast it forks.
pub fn has_children() -> bool {
    let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG | WaitPidFlag::WNOWAIT;
    loop {
        match waitid(Id::All, flags) {
            Err(Errno::EINTR) => continue,
            Err(Errno::ECHILD) => return false,
            _ => return true,
        }
    }
}

/// Freeze and kill what `look` finds, round after round, until `settled` says nothing is
/// left (when the caller can tell exactly) or, without it, until [`QUIET_LOOKS`] looks in a
/// row find nothing; at most `kill_wait`. `pause` waits between rounds (the caller may reap
/// meanwhile).
pub fn sweep(
    look: &mut dyn FnMut() -> Look,
    mut settled: Option<&mut dyn FnMut() -> bool>,
    kill_wait: Duration,
    pause: &mut dyn FnMut(Duration),
) -> Swept {
    let end = Instant::now()
        .checked_add(kill_wait)
        .unwrap_or_else(|| Instant::now() + Duration::from_secs(30 * 24 * 3600));
    let mut out = Swept::default();
    let mut seen: BTreeSet<i32> = BTreeSet::new();
    let mut rounds = 0u32;
    let mut quiet = 0u32;
    loop {
        if settled.as_mut().is_some_and(|s| s()) {
            return out;
        }
        let now = look();
        for &g in &now.groups {
            let _ = kill(Pid::from_raw(-g), Signal::SIGSTOP);
        }
        for p in &now.live {
            let _ = kill(Pid::from_raw(p.pid), Signal::SIGSTOP);
        }
        for &g in &now.groups {
            let _ = kill(Pid::from_raw(-g), Signal::SIGKILL);
        }
        for p in &now.live {
            let _ = kill(Pid::from_raw(p.pid), Signal::SIGKILL);
            if seen.insert(p.pid) {
                out.evasive |= rounds > 0;
                out.found.push(p.clone());
            }
        }
        if now.live.is_empty() {
            quiet += 1;
            if settled.is_none() && quiet >= QUIET_LOOKS {
                return out;
            }
        } else {
            quiet = 0;
            rounds += 1;
        }
        if Instant::now() >= end {
            // Still there: stopped and killed, or never seen (a subreaper with a child left).
            out.evasive = true;
            out.unkillable = now.live.iter().map(|p| p.pid).collect();
            return out;
        }
        pause(Duration::from_millis(if now.live.is_empty() {
            2
        } else {
            10
        }));
    }
}

/// One look below `root` for a sweep: every live descendant of `root` (not in `protected`,
/// not dying), newest first, a child of `root` stopped the moment it is read, the rest once
/// the tree is known; and the process groups that hold nothing else (never the caller's).
pub fn freeze_below(root: i32, protected: &BTreeSet<i32>) -> Look {
    let own_group = nix::unistd::getpgrp().as_raw();
    let mut procs = Vec::new();
    for pid in newest_first() {
        let Some(p) = read_proc(pid) else { continue };
        if p.ppid == root && !p.is_zombie() && !protected.contains(&pid) {
            let _ = kill(Pid::from_raw(pid), Signal::SIGSTOP);
        }
        procs.push(p);
    }
    let live: Vec<ProcInfo> = live_descendants(&procs, root, protected)
        .into_iter()
        .filter(|p| !sigkill_pending(p.pid))
        .collect();
    for p in &live {
        let _ = kill(Pid::from_raw(p.pid), Signal::SIGSTOP);
    }
    let targets: BTreeSet<i32> = live.iter().map(|p| p.pid).collect();
    let groups = groups_only_of(&procs, &targets)
        .into_iter()
        .filter(|g| *g != own_group && !protected.contains(g))
        .collect();
    Look { live, groups }
}

/// One look for a sweep: every live process whose environment holds `NAME=value` (never
/// this process or an ancestor), newest first, each stopped the moment it is found; listed
/// again while a marked process was gone before it could be stopped ([`settled_scan`]).
pub fn freeze_marked(name: &str, value: &str) -> Look {
    let needle = format!("{name}={value}");
    let mine = crate::self_and_ancestors();
    let mut live = Vec::new();
    settled_scan(&mut newest_first, &mut |pid| {
        if mine.contains(&pid) {
            return Seen::Other;
        }
        let seen = marked_env(pid, &needle);
        if seen != Seen::Match {
            return seen;
        }
        let _ = kill(Pid::from_raw(pid), Signal::SIGSTOP);
        match read_proc(pid).filter(|p| !p.is_zombie()) {
            // Stopped, or dying: either way it forks no more.
            Some(p) => {
                if !sigkill_pending(pid) {
                    live.push(p);
                }
                Seen::Match
            }
            // Exited before the stop reached it: a copy it forked may be newer than the
            // listing.
            None => Seen::Gone,
        }
    });
    Look {
        live,
        groups: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(pid: i32) -> ProcInfo {
        ProcInfo {
            pid,
            ppid: 1,
            pgid: pid,
            sid: pid,
            state: 'S',
            cmdline: vec![format!("p{pid}")],
        }
    }

    /// Looks scripted as pids that do not exist (signals to them fail harmlessly).
    fn scripted(rounds: Vec<Vec<i32>>) -> impl FnMut() -> Look {
        let mut rounds = rounds.into_iter();
        move || Look {
            live: rounds
                .next()
                .unwrap_or_default()
                .into_iter()
                .map(p)
                .collect(),
            groups: Vec::new(),
        }
    }

    const GONE: [i32; 3] = [i32::MAX - 3, i32::MAX - 2, i32::MAX - 1];

    #[test]
    fn a_tree_killed_in_one_round_is_not_evasive() {
        let mut look = scripted(vec![vec![GONE[0], GONE[1]], vec![GONE[0]]]);
        let s = sweep(&mut look, None, Duration::from_secs(5), &mut |_| {});
        assert_eq!(
            s.found.iter().map(|p| p.pid).collect::<Vec<_>>(),
            [GONE[0], GONE[1]]
        );
        assert!(!s.evasive && s.unkillable.is_empty());
    }

    #[test]
    fn a_process_that_appears_after_the_first_kill_is_evasive() {
        // Found, then a quiet look (it was between copies), then its copy.
        let mut look = scripted(vec![vec![GONE[0]], vec![], vec![GONE[1]]]);
        let s = sweep(&mut look, None, Duration::from_secs(5), &mut |_| {});
        assert_eq!(s.found.len(), 2);
        assert!(s.evasive);
    }

    #[test]
    fn quiet_looks_do_not_end_a_sweep_that_knows_something_is_left() {
        // Never seen, but the caller knows something is there until the fourth check.
        let mut look = scripted(vec![]);
        let mut checks = 0;
        let mut settled = || {
            checks += 1;
            checks > 4
        };
        let s = sweep(
            &mut look,
            Some(&mut settled),
            Duration::from_secs(5),
            &mut |_| {},
        );
        assert!(s.found.is_empty() && !s.evasive);
        assert_eq!(checks, 5);
        // Still there at the deadline: evasive.
        let mut look = scripted(vec![]);
        let s = sweep(&mut look, Some(&mut || false), Duration::ZERO, &mut |_| {});
        assert!(s.evasive);
    }
}
