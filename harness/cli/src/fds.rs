//! File descriptors a command needs before it starts its async runtime: tokio creates the
//! descriptors of its signal handling and process reaping when first used and panics when
//! none is left, so the commands that use them check first. A soft limit too low is raised
//! toward the hard limit, only as far as needed; past the hard limit the command stops with
//! one line that says how many it has and how many it needs.

/// Descriptors a command that runs processes and handles signals keeps in hand beyond those
/// already open: the runtime's poller and wakers, the signal pipe, the supervisor's control
/// socket, pi's three pipes and the `/proc` reads of the leftover scan, with room to spare.
pub const SPARE_NEEDED: u64 = 32;

/// Make sure `needed` descriptors are free, raising the soft limit if it must and may.
pub fn ensure_spare(needed: u64) -> Result<(), String> {
    // Less the directory's own descriptor, open while it is read.
    let open = std::fs::read_dir("/proc/self/fd").map_or(3, |d| d.count().saturating_sub(1) as u64);
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the limit into the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return Err(format!(
            "cannot read the descriptor limit: {}",
            std::io::Error::last_os_error()
        ));
    }
    let (soft, hard) = (limit.rlim_cur, limit.rlim_max);
    let want = open + needed;
    if soft >= want {
        return Ok(());
    }
    if hard >= want {
        let raised = libc::rlimit {
            rlim_cur: want,
            rlim_max: hard,
        };
        // SAFETY: setrlimit reads the struct it is given.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            return Ok(());
        }
    }
    Err(format!(
        "too few file descriptors: {open} open of a limit of {soft} (hard limit {hard}; `ulimit -n`), and this command needs {needed} more"
    ))
}
