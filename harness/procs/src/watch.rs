//! Run a command as a child subreaper and report what it left running: the process logic
//! of `pi-harness leftovers`.
//!
//! A test suite that starts processes can leave some behind: a tool double-forked into its
//! own session, a daemon with its stdio closed, a `sleep` orphaned when its shell died. Such
//! orphans are reparented to init, where no leak detector that watches pipes or process
//! groups (cargo-nextest's, for one) sees them. [`run`] makes this process a *child
//! subreaper* (`PR_SET_CHILD_SUBREAPER`) before it starts the command, so every orphan below
//! it is reparented here instead; once the command has exited, whatever is still alive below
//! this process was left by the command. [`run`] gives those processes a grace period to
//! finish by themselves, then reports them and (unless asked to keep them) SIGKILLs them,
//! their process groups too when a group holds nothing else, and reaps them.
//!
//! While the command runs, SIGINT, SIGTERM and SIGHUP sent to this process are forwarded to
//! it, and this process stays alive to do the check afterwards. The command stays in this
//! process's group (it keeps the terminal), so a Ctrl-C typed at a terminal, which the
//! terminal sends to the whole group, reaches it directly and is not forwarded a second time.
//!
//! `run` waits for its children with `waitpid(-1)`: it must own every child of this process
//! (a command-line program, not a test binary with other tests' children about). It blocks
//! those signals in the calling thread, so call it before starting other threads.

use std::os::fd::AsFd;
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::signal::{kill, pthread_sigmask, SigSet, SigmaskHow, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;

use crate::sweep::{freeze_below, has_children, sweep, QUIET_LOOKS};
use crate::{all_procs, descendants, live_descendants, ProcInfo};

/// What [`run`] does once the command has exited.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// How long the command's descendants get to finish by themselves.
    pub grace: Duration,
    /// Report the leftovers but leave them running.
    pub keep: bool,
    /// How long SIGKILLed leftovers get to disappear before they count as unkillable.
    pub kill_wait: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            grace: Duration::from_millis(500),
            keep: false,
            kill_wait: Duration::from_secs(5),
        }
    }
}

/// How the command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// It exited with this code.
    Exited(i32),
    /// It was killed by this signal (number).
    Signaled(i32),
}

impl Ending {
    /// The exit status a shell reports for it: the code, or 128 + the signal's number.
    ///
    /// ```
    /// use pi_procs::watch::Ending;
    /// assert_eq!(Ending::Exited(3).status(), 3);
    /// assert_eq!(Ending::Signaled(9).status(), 137);
    /// ```
    pub fn status(self) -> i32 {
        match self {
            Ending::Exited(code) => code,
            Ending::Signaled(sig) => 128 + sig,
        }
    }
}

impl std::fmt::Display for Ending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Ending::Exited(code) => write!(f, "exited with {code}"),
            Ending::Signaled(sig) => match Signal::try_from(sig) {
                Ok(s) => write!(f, "was killed by {}", s.as_str()),
                Err(_) => write!(f, "was killed by signal {sig}"),
            },
        }
    }
}

/// What [`run`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// How the command ended.
    pub ending: Ending,
    /// The command's descendants still alive after the grace period, and any they started
    /// while they were being killed, in the order found.
    pub leftovers: Vec<ProcInfo>,
    /// The leftovers were SIGKILLed and reaped (false with [`Options::keep`] or none left).
    pub killed: bool,
    /// New leftovers kept appearing while the others were being killed (a process that
    /// forks and exits), or something was left below that no look caught alive.
    pub evasive: bool,
    /// Pids still alive after [`Options::kill_wait`] (a process stuck in the kernel).
    pub unkillable: Vec<i32>,
    /// Signals forwarded to the command, in order.
    pub forwarded: Vec<Signal>,
    /// A signal cut the grace period short.
    pub interrupted: bool,
}

/// Whether a signal that reached this process goes on to the command: SIGINT, SIGTERM and
/// SIGHUP, unless the kernel sent it (`SI_KERNEL`: the terminal signals the whole foreground
/// group, the command included).
pub fn forwards(signo: i32, si_code: i32) -> bool {
    const SI_KERNEL: i32 = 0x80;
    [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP]
        .iter()
        .any(|s| *s as i32 == signo)
        && si_code != SI_KERNEL
}

/// The signals [`run`] handles itself while it runs.
fn handled() -> SigSet {
    let mut mask = SigSet::empty();
    for s in [
        Signal::SIGCHLD,
        Signal::SIGINT,
        Signal::SIGTERM,
        Signal::SIGHUP,
    ] {
        mask.add(s);
    }
    mask
}

/// Restores the signal mask and the subreaper flag when [`run`] returns.
struct Restore {
    mask: SigSet,
    subreaper: bool,
}

impl Drop for Restore {
    fn drop(&mut self) {
        let _ = pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&self.mask), None);
        if !self.subreaper {
            let _ = nix::sys::prctl::set_child_subreaper(false);
        }
    }
}

/// Run `cmd` (with the stdio it was given) as a child subreaper, forward SIGINT, SIGTERM and
/// SIGHUP to it, wait for it to exit, then check for leftovers as [`Options`] say. An error
/// means the command could not be started (or this process could not become a subreaper).
pub fn run(cmd: &mut Command, opts: &Options) -> std::io::Result<Outcome> {
    let was_subreaper = nix::sys::prctl::get_child_subreaper().unwrap_or(false);
    crate::become_subreaper()?;
    let mask = handled();
    let mut old = SigSet::empty();
    pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&mask), Some(&mut old))?;
    let _restore = Restore {
        mask: old,
        subreaper: was_subreaper,
    };
    let sfd = SignalFd::with_flags(&mask, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC)?;
    let pid = start(cmd, old)?;
    let (ending, forwarded) = wait_forwarding(&sfd, pid)?;

    // Every process the command started is below us (their subreaper), and every child we
    // have is the command's: no child left means nothing left, however fast one forks.
    let interrupted = grace_period(&sfd, opts.grace);
    let mut outcome = Outcome {
        ending,
        leftovers: Vec::new(),
        killed: false,
        evasive: false,
        unkillable: Vec::new(),
        forwarded,
        interrupted,
    };
    if nothing_below() {
        return Ok(outcome);
    }
    let me = std::process::id() as i32;
    let protected = crate::self_and_ancestors();
    if opts.keep {
        // Left running: only looked at (a few looks, for one that comes and goes).
        for _ in 0..QUIET_LOOKS {
            outcome.leftovers = live_descendants(&all_procs(), me, &protected);
            if !outcome.leftovers.is_empty() || nothing_below() {
                break;
            }
        }
        outcome.evasive = outcome.leftovers.is_empty() && !nothing_below();
        return Ok(outcome);
    }
    let swept = sweep(
        &mut || freeze_below(me, &protected),
        Some(&mut nothing_below),
        opts.kill_wait,
        &mut |d| {
            if readable(&sfd, d) {
                while let Ok(Some(_)) = sfd.read_signal() {}
            }
        },
    );
    settle(&sfd);
    outcome.killed = !swept.found.is_empty();
    outcome.leftovers = swept.found;
    outcome.evasive = swept.evasive;
    outcome.unkillable = swept.unkillable;
    Ok(outcome)
}

/// Reap every exited child; true when no child is left (so, as a subreaper whose children
/// are all the command's, nothing the command started is alive).
fn nothing_below() -> bool {
    reap_all();
    !has_children()
}

/// Spawn the command with the signal mask this process had before `run` (`mask`); its pid.
fn start(cmd: &mut Command, mask: SigSet) -> std::io::Result<Pid> {
    unsafe {
        cmd.pre_exec(move || {
            // The command starts with the signal mask this process had before.
            pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&mask), None)
                .map_err(std::io::Error::from)
        });
    }
    let child = cmd.spawn()?;
    let pid = Pid::from_raw(child.id() as i32);
    // The child is waited for with waitpid(-1) (`wait_forwarding`), with every orphan that
    // comes back.
    drop(child);
    Ok(pid)
}

/// Wait for the command `pid` to end, forwarding to it the signals [`forwards`] lets
/// through; how it ended and the signals forwarded, in order.
fn wait_forwarding(sfd: &SignalFd, pid: Pid) -> std::io::Result<(Ending, Vec<Signal>)> {
    let mut status = None;
    let mut forwarded = Vec::new();
    loop {
        reap(Some(pid), &mut status)?;
        if status.is_some() {
            break;
        }
        // SIGCHLD wakes us; the timeout is a safety net should it go to another thread.
        if readable(sfd, Duration::from_millis(100)) {
            while let Ok(Some(info)) = sfd.read_signal() {
                let signo = info.ssi_signo as i32;
                if forwards(signo, info.ssi_code) {
                    if let Ok(sig) = Signal::try_from(signo) {
                        let _ = kill(pid, sig);
                        forwarded.push(sig);
                    }
                }
            }
        }
    }
    let ending = match status {
        Some(WaitStatus::Signaled(_, sig, _)) => Ending::Signaled(sig as i32),
        Some(WaitStatus::Exited(_, code)) => Ending::Exited(code),
        other => {
            return Err(std::io::Error::other(format!(
                "unexpected wait status of the command: {other:?}"
            )))
        }
    };
    Ok((ending, forwarded))
}

/// The grace period: descendants may still be finishing (a `sleep 0.1 &`). Returns early
/// when nothing is left below us; true when a signal other than SIGCHLD cut it short.
fn grace_period(sfd: &SignalFd, grace: Duration) -> bool {
    let grace_end = deadline(grace);
    let mut interrupted = false;
    loop {
        if nothing_below() || Instant::now() >= grace_end {
            break;
        }
        let step = grace_end
            .saturating_duration_since(Instant::now())
            .min(Duration::from_millis(10));
        if readable(sfd, step) {
            while let Ok(Some(info)) = sfd.read_signal() {
                if info.ssi_signo as i32 != Signal::SIGCHLD as i32 {
                    interrupted = true;
                }
            }
        }
        if interrupted {
            break;
        }
    }
    interrupted
}

/// Dead descendants whose parent died too come back to us as zombies: reap them, for up
/// to half a second.
fn settle(sfd: &SignalFd) {
    let me = std::process::id() as i32;
    let settle = Instant::now() + Duration::from_millis(500);
    loop {
        reap_all();
        if descendants(&all_procs(), me).is_empty() || Instant::now() >= settle {
            break;
        }
        if readable(sfd, Duration::from_millis(5)) {
            while let Ok(Some(_)) = sfd.read_signal() {}
        }
    }
}

/// Reap every exited child; remember the status of `cmd`. An error only when the command's
/// status was taken by someone else.
fn reap(cmd: Option<Pid>, status: &mut Option<WaitStatus>) -> std::io::Result<()> {
    loop {
        match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) => return Ok(()),
            Ok(s) => {
                if cmd.is_some() && s.pid() == cmd {
                    *status = Some(s);
                }
            }
            Err(Errno::EINTR) => {}
            Err(Errno::ECHILD) if cmd.is_some() && status.is_none() => {
                return Err(std::io::Error::other(
                    "the command's exit status was collected by someone else",
                ))
            }
            Err(_) => return Ok(()),
        }
    }
}

/// Reap every exited child.
fn reap_all() {
    let mut ignore = None;
    let _ = reap(None, &mut ignore);
}

/// Wait up to `timeout` for a signal on the signal fd.
fn readable(sfd: &SignalFd, timeout: Duration) -> bool {
    let timeout =
        PollTimeout::try_from(timeout.max(Duration::from_millis(1))).unwrap_or(PollTimeout::MAX);
    let mut fds = [PollFd::new(sfd.as_fd(), PollFlags::POLLIN)];
    matches!(poll(&mut fds, timeout), Ok(n) if n > 0)
}

/// `now + d`; a wait too long for the clock is a wait of 30 days.
fn deadline(d: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(d)
        .unwrap_or_else(|| now + Duration::from_secs(30 * 24 * 3600))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn which_signals_are_forwarded() {
        let (int, term, hup) = (
            Signal::SIGINT as i32,
            Signal::SIGTERM as i32,
            Signal::SIGHUP as i32,
        );
        // kill(2) from another process: SI_USER (0).
        assert!(forwards(int, 0) && forwards(term, 0) && forwards(hup, 0));
        // sigqueue: SI_QUEUE (-1).
        assert!(forwards(term, -1));
        // Typed at the terminal: the kernel signals the whole group, the command included.
        assert!(!forwards(int, 0x80));
        assert!(!forwards(Signal::SIGCHLD as i32, 0));
        assert!(!forwards(Signal::SIGUSR1 as i32, 0));
    }

    #[test]
    fn endings() {
        assert_eq!(Ending::Exited(0).status(), 0);
        assert_eq!(Ending::Signaled(15).status(), 143);
        assert_eq!(Ending::Exited(2).to_string(), "exited with 2");
        assert_eq!(Ending::Signaled(9).to_string(), "was killed by SIGKILL");
    }
}
