//! Reading `/proc`: one process ([`ProcInfo`], from `stat` and `cmdline`), every process,
//! where a file descriptor points, the processes whose environment carries a marker, a
//! pending SIGKILL, and this process's ancestors. Nothing here sends a signal.

use std::collections::BTreeSet;

/// One process as `/proc` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcInfo {
    /// Process id.
    pub pid: i32,
    /// Parent's process id.
    pub ppid: i32,
    /// Process group id.
    pub pgid: i32,
    /// Session id.
    pub sid: i32,
    /// `R`, `S`, `Z`, ...
    pub state: char,
    /// argv, or `[comm]` when the command line is empty (zombies, kernel threads).
    pub cmdline: Vec<String>,
}

impl ProcInfo {
    /// True for a process that is dead and only waits to be reaped (`Z`, `X`).
    pub fn is_zombie(&self) -> bool {
        self.state == 'Z' || self.state == 'X'
    }

    /// True for a process stopped by a signal (`T`: SIGSTOP, SIGTSTP, ...) or by a tracer
    /// (`t`): it runs no code of its own until it is continued, though SIGKILL still ends it.
    pub fn is_stopped(&self) -> bool {
        self.state == 'T' || self.state == 't'
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

/// Every process visible in `/proc`, newest first (see [`newest_first`]).
pub fn all_procs() -> Vec<ProcInfo> {
    newest_first().into_iter().filter_map(read_proc).collect()
}

/// The pids in `/proc`, highest first: the processes started last are read a moment after
/// the listing, before a process that forks and exits at once has gone.
pub(crate) fn newest_first() -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut pids: Vec<i32> = dir
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .collect();
    pids.sort_unstable_by(|a, b| b.cmp(a));
    pids
}

/// The environment `pid` started with (`NAME=value` entries, NUL-separated), if readable.
pub(crate) fn read_env(pid: i32) -> Option<Vec<u8>> {
    std::fs::read(format!("/proc/{pid}/environ")).ok()
}

/// Whether an environment as `/proc/PID/environ` holds it has the entry `needle`
/// (`NAME=value`) exactly.
pub(crate) fn has_entry(env: &[u8], needle: &str) -> bool {
    env.split(|&b| b == 0).any(|kv| kv == needle.as_bytes())
}

/// The live processes whose environment holds `NAME=value` ([`pids_with_env`]: never this
/// process or one of its ancestors), sorted by pid.
pub fn marked(name: &str, value: &str) -> Vec<ProcInfo> {
    let mut out = scan_marked(name, value);
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

/// Pids of live processes whose environment holds `NAME=value` exactly (tests prove with
/// this that nothing they started is left behind), newest first. This process and its
/// ancestors never count: a marker that leaked into the test runner's own environment must
/// not make the runner a "survivor", let alone a process to kill.
pub fn pids_with_env(name: &str, value: &str) -> Vec<i32> {
    scan_marked(name, value).iter().map(|p| p.pid).collect()
}

/// The live marked processes, newest first, found by a [`settled_scan`] (a process that
/// forks and exits at once is not missed). A zombie, or a process with SIGKILL pending, is
/// already gone for every purpose but the kernel's bookkeeping: counting it would fail a
/// clean test at random.
fn scan_marked(name: &str, value: &str) -> Vec<ProcInfo> {
    let needle = format!("{name}={value}");
    let mine = self_and_ancestors();
    let mut out = Vec::new();
    settled_scan(&mut newest_first, &mut |pid| {
        if mine.contains(&pid) {
            return Seen::Other;
        }
        let seen = marked_env(pid, &needle);
        if seen != Seen::Match {
            return seen;
        }
        match read_proc(pid).filter(|p| !p.is_zombie()) {
            None => Seen::Gone,
            Some(p) => {
                if !sigkill_pending(pid) {
                    out.push(p);
                }
                Seen::Match
            }
        }
    });
    out
}

/// What one pid was when a scan read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Seen {
    /// One the scan looks for.
    Match,
    /// Another process.
    Other,
    /// Listed, but gone (or dead) by the time it was read.
    Gone,
}

/// Whether `pid`'s environment holds `needle` (`NAME=value`); [`Seen::Gone`] when it
/// cannot be read, or reads empty from a dead process (a zombie's environment is empty).
pub(crate) fn marked_env(pid: i32, needle: &str) -> Seen {
    match read_env(pid) {
        None => Seen::Gone,
        Some(env) if has_entry(&env, needle) => Seen::Match,
        Some(env) if env.is_empty() && !read_proc(pid).is_some_and(|p| !p.is_zombie()) => {
            Seen::Gone
        }
        Some(_) => Seen::Other,
    }
}

/// Passes a [`settled_scan`] makes at most (a machine that starts and ends processes
/// without pause would otherwise keep it going).
const SCAN_PASSES: usize = 64;

/// Read every pid `list` gives (newest first) with `visit`, then list again and read the
/// pids not read yet, as long as a pass met a pid gone before it was read; at most
/// [`SCAN_PASSES`] passes. One listing can miss a process that forks a copy and exits at
/// once: the copy listed is gone when read, and its successor was born after the listing.
/// But that successor was born before the read that found its parent gone, so the next
/// listing holds it (or, if it too is gone by then, its own successor): a chain with one
/// live member at every moment is seen alive in some pass.
pub(crate) fn settled_scan(list: &mut dyn FnMut() -> Vec<i32>, visit: &mut dyn FnMut(i32) -> Seen) {
    let mut read: BTreeSet<i32> = BTreeSet::new();
    for _ in 0..SCAN_PASSES {
        let mut gone = false;
        for pid in list() {
            if read.insert(pid) {
                gone |= visit(pid) == Seen::Gone;
            }
        }
        if !gone {
            return;
        }
    }
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
    use super::*;

    /// A copy listed, gone when read, and its successor born after the listing: the one
    /// listing missed it (a marker check said "nothing left" while it forked on); the scan
    /// lists again and finds it.
    #[test]
    fn a_scan_lists_again_after_a_pid_was_gone_when_read() {
        let mut listings = vec![vec![30, 20, 10], vec![40, 30, 20, 10]].into_iter();
        let mut visited = Vec::new();
        settled_scan(&mut || listings.next().unwrap_or_default(), &mut |pid| {
            visited.push(pid);
            match pid {
                30 => Seen::Gone,
                40 => Seen::Match,
                _ => Seen::Other,
            }
        });
        // Each pid read once; 40 found in the second pass; no third pass (none gone).
        assert_eq!(visited, [30, 20, 10, 40]);
    }

    #[test]
    fn a_scan_with_nothing_gone_lists_once_and_a_busy_one_stops() {
        let mut lists = 0;
        settled_scan(
            &mut || {
                lists += 1;
                vec![3, 2, 1]
            },
            &mut |_| Seen::Other,
        );
        assert_eq!(lists, 1);
        // Every pass meets a new pid gone: bounded.
        let mut next = 0;
        settled_scan(
            &mut || {
                next += 1;
                vec![next]
            },
            &mut |_| Seen::Gone,
        );
        assert_eq!(next, SCAN_PASSES as i32);
    }

    /// An empty environment is a zombie's (gone) or a kernel thread's (another process).
    #[test]
    fn an_unreadable_environment_is_gone_and_our_own_is_read() {
        assert_eq!(marked_env(i32::MAX - 1, "A=b"), Seen::Gone);
        let me = std::process::id() as i32;
        assert_eq!(marked_env(me, "PI_PROCS_NO_SUCH_VAR=1"), Seen::Other);
        let path = std::env::var("PATH").expect("tests run with a PATH");
        assert_eq!(marked_env(me, &format!("PATH={path}")), Seen::Match);
    }

    #[test]
    fn a_pending_sigkill_is_read_from_status() {
        let live = "Name:\tsleep\nSigPnd:\t0000000000000000\nShdPnd:\t0000000000000000\n";
        assert!(!sigkill_in_status(live));
        let dying = "Name:\tsleep\nSigPnd:\t0000000000000000\nShdPnd:\t0000000000000100\n";
        assert!(sigkill_in_status(dying));
        // SIGTERM (bit 15) pending is not SIGKILL.
        let termed = "SigPnd:\t0000000000004000\nShdPnd:\t0000000000000000\n";
        assert!(!sigkill_in_status(termed));
        // Our own process has nothing pending.
        assert!(!sigkill_pending(std::process::id() as i32));
    }

    #[test]
    fn a_stopped_process_is_seen_stopped_until_continued() {
        use nix::sys::signal::{kill, Signal};
        use nix::unistd::Pid;
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let state_becomes = |stopped: bool| {
            (0..500).any(|_| {
                let now = read_proc(pid).is_some_and(|p| p.is_stopped());
                std::thread::sleep(std::time::Duration::from_millis(10));
                now == stopped
            })
        };
        assert!(state_becomes(false));
        kill(Pid::from_raw(pid), Signal::SIGSTOP).unwrap();
        assert!(state_becomes(true));
        kill(Pid::from_raw(pid), Signal::SIGCONT).unwrap();
        assert!(state_becomes(false));
        let _ = child.kill();
        let _ = child.wait();
    }

    #[test]
    fn an_environment_entry_matches_whole() {
        assert!(has_entry(b"A=1\0M=run-1\0", "M=run-1"));
        assert!(!has_entry(b"A=1\0M=run-12\0", "M=run-1"));
        assert!(!has_entry(b"XM=run-1\0", "M=run-1"));
        assert!(!has_entry(b"", "M=run-1"));
    }

    #[test]
    fn stat_with_parens_in_comm() {
        let s = "4242 (we(ird) name) S 1 4242 4242 0 -1 4194560";
        assert_eq!(
            parse_stat(s),
            Some((4242, "we(ird) name".into(), 'S', 1, 4242, 4242))
        );
        assert_eq!(parse_stat("garbage"), None);
    }
}
