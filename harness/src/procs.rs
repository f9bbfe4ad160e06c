//! The process table, read from `/proc`: who descends from whom, and who carries a marker.
//!
//! Used by the supervisor to find every descendant of pi (also the ones that escaped into
//! their own session and were reparented to the supervisor), and by tests to prove that no
//! process carrying a run's marker environment variable is left. Linux only.

use std::collections::{HashMap, HashSet};
use std::fs;

/// One line of the process table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcInfo {
    pub pid: i32,
    pub ppid: i32,
    pub pgid: i32,
    pub sid: i32,
    /// Single-letter state (`R`, `S`, `Z`, ...).
    pub state: char,
    /// The command name (`comm`).
    pub comm: String,
}

/// Parse `/proc/PID/stat`. The command name sits in parentheses and may itself hold
/// spaces and parentheses, so the fields are read after the last `)`.
pub fn parse_stat(stat: &str) -> Option<ProcInfo> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let pid = stat[..open].trim().parse().ok()?;
    let comm = stat[open + 1..close].to_string();
    let mut rest = stat[close + 1..].split_whitespace();
    let state = rest.next()?.chars().next()?;
    let ppid = rest.next()?.parse().ok()?;
    let pgid = rest.next()?.parse().ok()?;
    let sid = rest.next()?.parse().ok()?;
    Some(ProcInfo {
        pid,
        ppid,
        pgid,
        sid,
        state,
        comm,
    })
}

/// Every process currently visible in `/proc` (processes that vanish while reading are skipped).
pub fn snapshot() -> Vec<ProcInfo> {
    let Ok(dir) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| {
        let e = e.ok()?;
        let pid: i32 = e.file_name().to_str()?.parse().ok()?;
        let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        parse_stat(&stat)
    })
    .collect()
}

/// Every descendant of `root` in `table` (children, their children, ...), root excluded.
pub fn descendants_in(table: &[ProcInfo], root: i32) -> Vec<ProcInfo> {
    let mut children: HashMap<i32, Vec<&ProcInfo>> = HashMap::new();
    for p in table {
        children.entry(p.ppid).or_default().push(p);
    }
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    let mut stack = vec![root];
    while let Some(pid) = stack.pop() {
        for child in children.get(&pid).map(Vec::as_slice).unwrap_or_default() {
            if child.pid != root && seen.insert(child.pid) {
                out.push((*child).clone());
                stack.push(child.pid);
            }
        }
    }
    out
}

/// Every live descendant of `root` right now.
pub fn descendants(root: i32) -> Vec<ProcInfo> {
    descendants_in(&snapshot(), root)
}

/// Processes whose environment holds `name=value` exactly, zombies excluded (a zombie has no
/// environment left to read and is not running). Processes we may not read are skipped.
pub fn with_env_marker(name: &str, value: &str) -> Vec<ProcInfo> {
    let needle = format!("{name}={value}");
    snapshot()
        .into_iter()
        .filter(|p| p.state != 'Z' && p.pid != std::process::id() as i32)
        .filter(|p| {
            fs::read(format!("/proc/{}/environ", p.pid))
                .map(|env| env.split(|&b| b == 0).any(|kv| kv == needle.as_bytes()))
                .unwrap_or(false)
        })
        .collect()
}

/// The command line of a process, arguments joined by spaces (empty when unreadable).
pub fn cmdline(pid: i32) -> String {
    fs::read(format!("/proc/{pid}/cmdline"))
        .map(|raw| {
            raw.split(|&b| b == 0)
                .filter(|s| !s.is_empty())
                .map(|s| String::from_utf8_lossy(s).into_owned())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_with_parentheses_in_the_name() {
        let p = parse_stat("42 (a) b (c)) S 7 42 40 0 -1 4194560").unwrap();
        assert_eq!((p.pid, p.comm.as_str(), p.state, p.ppid, p.pgid, p.sid), (42, "a) b (c)", 'S', 7, 42, 40));
    }

    #[test]
    fn descendants_follow_the_whole_tree() {
        let row = |pid, ppid| ProcInfo {
            pid,
            ppid,
            pgid: pid,
            sid: pid,
            state: 'S',
            comm: String::new(),
        };
        let table = vec![row(1, 0), row(10, 1), row(11, 10), row(12, 11), row(13, 1), row(14, 12)];
        let mut got: Vec<i32> = descendants_in(&table, 10).iter().map(|p| p.pid).collect();
        got.sort();
        assert_eq!(got, vec![11, 12, 14]);
    }

    #[test]
    fn finds_this_test_process_children_by_marker() {
        let marker = format!("m{}", std::process::id());
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .env("PROCS_TEST_MARKER", &marker)
            .spawn()
            .unwrap();
        let found = with_env_marker("PROCS_TEST_MARKER", &marker);
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(found.iter().map(|p| p.pid).collect::<Vec<_>>(), vec![child.id() as i32]);
        assert!(with_env_marker("PROCS_TEST_MARKER", &marker).is_empty());
    }
}
