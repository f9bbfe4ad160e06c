//! Process trees on Linux: becoming a child subreaper, snapshots of the process tree from
//! `/proc`, killing and reaping what a run left behind, and the marker scan that proves no
//! process survived.
//!
//! Pure helpers (descendant walks, which process groups are safe to kill: `tree`) are
//! separate from the functions that read `/proc` (`snapshot`, stat parsing included) and
//! those that send signals and reap (`kill`, over [`sweep`]: freeze, then kill, in rounds
//! until a quiet one, so that a process forking while it is killed is caught too); every
//! item of the first three is re-exported here. Used by the provider's
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

mod kill;
mod snapshot;
pub mod sweep;
mod tree;
pub mod watch;

pub use kill::{
    become_subreaper, kill_and_reap, kill_descendants, kill_marked, own_children, sweep_marked,
};
pub use snapshot::{
    all_procs, fd_target, marked, parse_stat, pids_with_env, read_proc, self_and_ancestors,
    sigkill_pending, ProcInfo,
};
pub use tree::{descendants, groups_only_of, live_descendants};
