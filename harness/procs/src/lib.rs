//! Process trees on Linux: becoming a child subreaper, snapshots of the process tree from
//! `/proc`, killing and reaping what a run left behind, and the marker scan that proves no
//! process survived.
//!
//! Pure helpers (stat parsing, descendant walks, which process groups are safe to kill) are
//! separate from the functions that read `/proc` or send signals. Used by the provider's
//! supervisor (its subreaper and tree walk), the recorder (who survived a recorded signal),
//! the conformance runner, the test kit (a unique `NAME=value` in every started process's
//! environment, scanned for at the end) and `pi-harness leftovers` ([`watch`]: run a
//! command as a child subreaper and report what it left running).
//!
//! ```
//! use std::process::Command;
//!
//! let marker = format!("doc-{}", std::process::id());
//! let mut child = Command::new("sleep").arg("30").env("MY_TEST_MARKER", &marker).spawn().unwrap();
//! // The marker shows in /proc once the child has exec'd.
//! let mut found = Vec::new();
//! for _ in 0..500 {
//!     found = pi_procs::pids_with_env("MY_TEST_MARKER", &marker);
//!     if !found.is_empty() {
//!         break;
//!     }
//!     std::thread::sleep(std::time::Duration::from_millis(10));
//! }
//! assert_eq!(found, vec![child.id() as i32]);
//!
//! // Kill whatever carries the marker; afterwards nothing is left.
//! let killed = pi_procs::kill_marked("MY_TEST_MARKER", &marker);
//! assert_eq!(killed.len(), 1);
//! let _ = child.wait();
//! assert!(pi_procs::pids_with_env("MY_TEST_MARKER", &marker).is_empty());
//! ```

use std::collections::{BTreeMap, BTreeSet};

use nix::sys::signal::{kill, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag};
use nix::unistd::Pid;

pub mod watch;

/// One process as `/proc` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcInfo {
    pub pid: i32,
    pub ppid: i32,
    pub pgid: i32,
    pub sid: i32,
    /// `R`, `S`, `Z`, ...
    pub state: char,
    /// argv, or `[comm]` when the command line is empty (zombies, kernel threads).
    pub cmdline: Vec<String>,
}

impl ProcInfo {
    pub fn is_zombie(&self) -> bool {
        self.state == 'Z' || self.state == 'X'
    }

    /// The command line joined with spaces, for messages.
    pub fn command(&self) -> String {
        self.cmdline.join(" ")
    }

    /// `PID COMMAND LINE (session S, parent P)`: one process in a report.
    ///
    /// ```
    /// let p = pi_procs::ProcInfo {
    ///     pid: 4242, ppid: 1, pgid: 4242, sid: 4242, state: 'S',
    ///     cmdline: vec!["sleep".into(), "300".into()],
    /// };
    /// assert_eq!(p.describe(), "4242 sleep 300 (session 4242, parent 1)");
    /// ```
    pub fn describe(&self) -> String {
        format!(
            "{} {} (session {}, parent {})",
            self.pid,
            self.command(),
            self.sid,
            self.ppid
        )
    }
}

/// Parse `/proc/PID/stat`: `pid (comm) state ppid pgrp session ...`. The command name
/// may hold spaces and parentheses, so fields are counted from the last `)`.
pub fn parse_stat(text: &str) -> Option<(i32, String, char, i32, i32, i32)> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let pid = text[..open].trim().parse().ok()?;
    let comm = text[open + 1..close].to_string();
    let mut rest = text[close + 1..].split_whitespace();
    let state = rest.next()?.chars().next()?;
    let ppid = rest.next()?.parse().ok()?;
    let pgid = rest.next()?.parse().ok()?;
    let sid = rest.next()?.parse().ok()?;
    Some((pid, comm, state, ppid, pgid, sid))
}

/// Read one process; `None` when it is gone.
pub fn read_proc(pid: i32) -> Option<ProcInfo> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (pid, comm, state, ppid, pgid, sid) = parse_stat(&stat)?;
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let mut cmdline: Vec<String> = raw
        .split(|&b| b == 0)
        .filter(|s| !s.is_empty())
        .map(|s| String::from_utf8_lossy(s).into_owned())
        .collect();
    if cmdline.is_empty() {
        cmdline.push(format!("[{comm}]"));
    }
    Some(ProcInfo {
        pid,
        ppid,
        pgid,
        sid,
        state,
        cmdline,
    })
}

/// Where file descriptor `fd` of `pid` points (`pipe:[1234]`, a path), if readable.
pub fn fd_target(pid: i32, fd: i32) -> Option<String> {
    std::fs::read_link(format!("/proc/{pid}/fd/{fd}"))
        .ok()
        .map(|p| p.display().to_string())
}

/// Every process visible in `/proc`.
pub fn all_procs() -> Vec<ProcInfo> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(read_proc)
        .collect()
}

/// The descendants of `root` in `procs` (not `root` itself), parents before children.
pub fn descendants(procs: &[ProcInfo], root: i32) -> Vec<ProcInfo> {
    let mut by_parent: BTreeMap<i32, Vec<&ProcInfo>> = BTreeMap::new();
    for p in procs {
        by_parent.entry(p.ppid).or_default().push(p);
    }
    let mut out = Vec::new();
    let mut queue = vec![root];
    let mut seen = BTreeSet::new();
    while let Some(parent) = queue.pop() {
        if !seen.insert(parent) {
            continue;
        }
        for child in by_parent.get(&parent).into_iter().flatten() {
            out.push((*child).clone());
            queue.push(child.pid);
        }
    }
    out
}

/// The live descendants of `root` in `procs`: zombies (already dead) and the pids in
/// `protected` (this process and its ancestors, typically) left out, parents before
/// children.
pub fn live_descendants(procs: &[ProcInfo], root: i32, protected: &BTreeSet<i32>) -> Vec<ProcInfo> {
    descendants(procs, root)
        .into_iter()
        .filter(|p| !p.is_zombie() && !protected.contains(&p.pid))
        .collect()
}

/// The process groups that may be killed as a whole to get rid of `targets`: each group a
/// target belongs to whose every live member in `procs` is itself a target. A group that
/// also holds anything else (the caller, its shell, a process it did not start) is left to
/// per-process kills, so that `kill(-pgid)` never reaches it.
pub fn groups_only_of(procs: &[ProcInfo], targets: &BTreeSet<i32>) -> Vec<i32> {
    let candidates: BTreeSet<i32> = procs
        .iter()
        .filter(|p| targets.contains(&p.pid) && p.pgid > 1)
        .map(|p| p.pgid)
        .collect();
    candidates
        .into_iter()
        .filter(|&g| {
            procs
                .iter()
                .filter(|p| p.pgid == g && !p.is_zombie())
                .all(|p| targets.contains(&p.pid))
        })
        .collect()
}

/// The live processes whose environment holds `NAME=value` ([`pids_with_env`]: never this
/// process or one of its ancestors), sorted by pid.
pub fn marked(name: &str, value: &str) -> Vec<ProcInfo> {
    let mut out: Vec<ProcInfo> = pids_with_env(name, value)
        .into_iter()
        .filter_map(read_proc)
        // A zombie, or a process with SIGKILL pending, is already gone for every purpose
        // but the kernel's bookkeeping: counting it would fail a clean test at random.
        .filter(|p| !p.is_zombie() && !sigkill_pending(p.pid))
        .collect();
    out.sort_by_key(|p| p.pid);
    out
}

/// Whether SIGKILL is pending for `pid` (or its thread group): it dies as soon as the
/// kernel schedules it, and nothing can stop that.
pub fn sigkill_pending(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .is_ok_and(|status| sigkill_in_status(&status))
}

/// Whether a `/proc/PID/status` text shows SIGKILL pending (`SigPnd` or `ShdPnd`).
fn sigkill_in_status(status: &str) -> bool {
    const SIGKILL_BIT: u64 = 1 << (9 - 1);
    status.lines().any(|l| {
        let Some((key, mask)) = l.split_once(':') else {
            return false;
        };
        matches!(key, "SigPnd" | "ShdPnd")
            && u64::from_str_radix(mask.trim(), 16).is_ok_and(|m| m & SIGKILL_BIT != 0)
    })
}

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

/// Pids of live processes whose environment holds `NAME=value` exactly (tests prove with
/// this that nothing they started is left behind). This process and its ancestors never
/// count: a marker that leaked into the test runner's own environment must not make the
/// runner a "survivor", let alone a process to kill.
pub fn pids_with_env(name: &str, value: &str) -> Vec<i32> {
    let needle = format!("{name}={value}");
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mine = self_and_ancestors();
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            !mine.contains(pid)
                && std::fs::read(format!("/proc/{pid}/environ"))
                    .is_ok_and(|env| env.split(|&b| b == 0).any(|kv| kv == needle.as_bytes()))
                && read_proc(*pid).is_some_and(|p| !p.is_zombie())
                // SIGKILL pending: gone for every purpose but the kernel's bookkeeping.
                && !sigkill_pending(*pid)
        })
        .collect()
}

/// This process and every ancestor up to pid 1.
pub fn self_and_ancestors() -> BTreeSet<i32> {
    let mut out = BTreeSet::new();
    let mut pid = std::process::id() as i32;
    while pid > 1 && out.insert(pid) {
        match read_proc(pid) {
            Some(p) => pid = p.ppid,
            None => break,
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_pending_sigkill_is_read_from_status() {
        let live = "Name:\tsleep\nSigPnd:\t0000000000000000\nShdPnd:\t0000000000000000\n";
        assert!(!super::sigkill_in_status(live));
        let dying = "Name:\tsleep\nSigPnd:\t0000000000000000\nShdPnd:\t0000000000000100\n";
        assert!(super::sigkill_in_status(dying));
        // SIGTERM (bit 15) pending is not SIGKILL.
        let termed = "SigPnd:\t0000000000004000\nShdPnd:\t0000000000000000\n";
        assert!(!super::sigkill_in_status(termed));
        // Our own process has nothing pending.
        assert!(!super::sigkill_pending(std::process::id() as i32));
    }

    use super::*;

    #[test]
    fn stat_with_parens_in_comm() {
        let s = "4242 (we(ird) name) S 1 4242 4242 0 -1 4194560";
        assert_eq!(
            parse_stat(s),
            Some((4242, "we(ird) name".into(), 'S', 1, 4242, 4242))
        );
        assert_eq!(parse_stat("garbage"), None);
    }

    fn proc_(pid: i32, ppid: i32, pgid: i32, state: char) -> ProcInfo {
        ProcInfo {
            pid,
            ppid,
            pgid,
            sid: pgid,
            state,
            cmdline: vec![format!("p{pid}")],
        }
    }

    #[test]
    fn live_descendants_leave_out_zombies_and_the_protected() {
        let procs = vec![
            proc_(10, 1, 10, 'S'),
            proc_(11, 10, 10, 'S'),
            proc_(12, 11, 12, 'Z'),
            proc_(13, 12, 12, 'S'),
            proc_(14, 10, 14, 'R'),
        ];
        let none = BTreeSet::new();
        let pids = |v: Vec<ProcInfo>| {
            let mut p: Vec<i32> = v.iter().map(|p| p.pid).collect();
            p.sort();
            p
        };
        assert_eq!(pids(live_descendants(&procs, 10, &none)), [11, 13, 14]);
        let protected: BTreeSet<i32> = [14].into();
        assert_eq!(pids(live_descendants(&procs, 10, &protected)), [11, 13]);
        assert!(live_descendants(&procs, 13, &none).is_empty());
    }

    #[test]
    fn only_groups_made_of_targets_are_killed_whole() {
        // 10 is the caller (group 10, with its child 11); 20 leads its own group with 21;
        // 30 joined group 40, which also holds 40, not a target.
        let procs = vec![
            proc_(10, 1, 10, 'S'),
            proc_(11, 10, 10, 'S'),
            proc_(20, 10, 20, 'S'),
            proc_(21, 20, 20, 'S'),
            proc_(22, 20, 20, 'Z'),
            proc_(30, 10, 40, 'S'),
            proc_(40, 1, 40, 'S'),
            proc_(50, 10, 1, 'S'),
        ];
        let targets: BTreeSet<i32> = [11, 20, 21, 30, 50].into();
        assert_eq!(groups_only_of(&procs, &targets), [20]);
        assert!(groups_only_of(&procs, &BTreeSet::new()).is_empty());
    }

    #[test]
    fn descendants_walks_the_tree() {
        let p = |pid, ppid| ProcInfo {
            pid,
            ppid,
            pgid: pid,
            sid: pid,
            state: 'S',
            cmdline: vec![],
        };
        let procs = vec![p(10, 1), p(11, 10), p(12, 11), p(13, 1), p(14, 10)];
        let mut d: Vec<i32> = descendants(&procs, 10).iter().map(|p| p.pid).collect();
        d.sort();
        assert_eq!(d, [11, 12, 14]);
        assert!(descendants(&procs, 12).is_empty());
    }
}
