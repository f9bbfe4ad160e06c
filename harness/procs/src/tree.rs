//! Walking a process tree snapshot, without I/O: the descendants of a process, the live
//! ones among them, and the process groups that are safe to kill whole.

use std::collections::{BTreeMap, BTreeSet};

use crate::ProcInfo;

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

#[cfg(test)]
mod tests {
    use super::*;

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
