//! The supervisor: a small process between the provider and pi that owns pi's whole process tree.
//!
//! Why a separate process: real pi's bash tool starts every command with `setsid`, so tool
//! processes leave pi's process group, and when pi dies by SIGINT they are reparented to init
//! where no tree walk finds them. The supervisor marks itself a *child subreaper*
//! (`PR_SET_CHILD_SUBREAPER`), so every orphan below it is reparented to it instead: it can
//! always enumerate pi's descendants (a `/proc` walk from its own pid) and reap them, leaving no
//! zombie. Doing this in the provider's own process would make the host application the
//! reaper of unrelated orphans; a cgroup would need privileges and a writable cgroupfs, which a
//! laptop test run does not have.
//!
//! Protocol (`pi-supervisor --control-fd 3 [--grace-ms N] [--kill-wait-ms N] -- PROGRAM ARGS...`):
//! pi inherits stdin, stdout and stderr; the control socket (a socketpair end on `--control-fd`)
//! carries JSON lines from the supervisor (`started`, `spawn_failed`, `exited`) and, from the
//! provider, the line `cancel` or EOF, both meaning "stop pi now". SIGTERM, SIGINT and SIGHUP
//! sent to the supervisor mean the same.
//!
//! Stopping: SIGTERM to pi's process group (pi kills its tool children and exits 143), then
//! after the grace period SIGKILL to the group and to every remaining descendant, repeated until
//! none is left or the kill wait expires. When pi exits on its own, descendants it left behind
//! (for example a grandchild still holding stdout open) get the same treatment, so the
//! provider's reader always reaches EOF.
//!
//! Its own exit statuses, whichever way it was started, are one table: [`exit`].

use std::io::Write;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::signal::{kill, SigSet, SigmaskHow, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};

use pi_procs as procs;

pub mod exit;

/// Options of one supervised run.
#[derive(Debug, Clone)]
pub struct Config {
    /// The program to supervise (pi).
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Time pi gets to clean up after SIGTERM before SIGKILL.
    pub grace: Duration,
    /// Time allowed for SIGKILLed processes to disappear.
    pub kill_wait: Duration,
    /// File descriptor of the control socket, if any.
    pub control_fd: Option<i32>,
    /// pi's whole environment, when not this process's own (a preforked supervisor).
    pub env: Option<Vec<(std::ffi::OsString, std::ffi::OsString)>>,
}

/// A line the supervisor writes on the control socket.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// pi runs with this pid; it leads its own process group.
    Started {
        /// pi's process id (and process group id).
        pid: i32,
    },
    /// pi could not be started.
    SpawnFailed {
        /// Why, as a sentence naming the program.
        error: String,
        /// The OS error number, when there was one.
        errno: Option<i32>,
    },
    /// pi is gone and so is every descendant.
    Exited {
        /// pi's exit code, when it exited.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        code: Option<i32>,
        /// The signal that killed pi (`SIGTERM`, ...), when one did.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signal: Option<String>,
        /// A stop was requested (cancel line, control EOF or a signal to the supervisor).
        cancelled: bool,
        /// pi did not exit within the grace period and was SIGKILLed.
        killed: bool,
        /// Descendants that were still alive when pi was gone and had to be killed.
        survivors: Vec<Survivor>,
        /// Descendants that could not be made to disappear within the kill wait.
        leftover: Vec<i32>,
    },
}

/// A descendant still alive when pi was gone, killed by the supervisor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Survivor {
    /// Its process id.
    pub pid: i32,
    /// Its command line, as `/proc` showed it.
    pub command: String,
}

/// What is wrong with the supervisor's command line (said as `pi-supervisor: ...`, exit
/// [`exit::USAGE`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ArgsError {
    /// A flag at the end, without its value.
    #[error("{flag} needs a value")]
    MissingValue {
        /// The flag (`--grace-ms`).
        flag: String,
    },
    /// A flag whose value is not a number.
    #[error("{flag}: {source}")]
    NotANumber {
        /// The flag (`--control-fd`).
        flag: String,
        /// Why its value is not one.
        source: std::num::ParseIntError,
    },
    /// An argument the supervisor does not know.
    #[error("unknown argument {0:?}")]
    Unknown(String),
    /// `--` with nothing after it.
    #[error("missing program after --")]
    NoProgram,
    /// No `--` and program at all.
    #[error("usage: pi-supervisor [--control-fd N] [--grace-ms N] [--kill-wait-ms N] -- PROGRAM [ARGS...]")]
    NoSeparator,
}

/// Parse the supervisor's command line.
pub fn parse_args(args: &[String]) -> Result<Config, ArgsError> {
    let mut cfg = Config {
        program: String::new(),
        args: Vec::new(),
        grace: Duration::from_secs(2),
        kill_wait: Duration::from_secs(5),
        control_fd: None,
        env: None,
    };
    let mut it = args.iter();
    fn number<T: std::str::FromStr<Err = std::num::ParseIntError>>(
        flag: &str,
        v: Option<&String>,
    ) -> Result<T, ArgsError> {
        v.ok_or_else(|| ArgsError::MissingValue { flag: flag.into() })?
            .parse::<T>()
            .map_err(|source| ArgsError::NotANumber {
                flag: flag.into(),
                source,
            })
    }
    // A wait past MAX_WAIT is as good as forever, and cannot overflow the clock.
    let ms = |n: u64| Duration::from_millis(n).min(crate::wait::MAX_WAIT);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--grace-ms" => cfg.grace = ms(number(a, it.next())?),
            "--kill-wait-ms" => cfg.kill_wait = ms(number(a, it.next())?),
            "--control-fd" => cfg.control_fd = Some(number(a, it.next())?),
            "--" => {
                cfg.program = it.next().ok_or(ArgsError::NoProgram)?.clone();
                cfg.args = it.cloned().collect();
                return Ok(cfg);
            }
            other => return Err(ArgsError::Unknown(other.to_string())),
        }
    }
    Err(ArgsError::NoSeparator)
}

struct Control {
    fd: Option<OwnedFd>,
    /// The provider closed its end or asked to cancel.
    closed: bool,
    buf: Vec<u8>,
}

impl Control {
    fn send(&mut self, event: &Event) {
        if let Some(fd) = &self.fd {
            let mut line = serde_json::to_vec(event).expect("events serialize");
            line.push(b'\n');
            // Written through the descriptor itself (a duplicate could fail at the process's
            // descriptor limit). SAFETY: the File is never dropped, so `self.fd` keeps owning
            // and closing the descriptor.
            let mut file =
                std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(fd.as_raw_fd()) });
            // The provider may be gone: nothing to do about a failed write.
            let _ = file.write_all(&line);
        }
    }

    /// Read what is available; returns true when a stop was requested.
    fn read(&mut self) -> bool {
        let Some(fd) = &self.fd else { return false };
        let mut chunk = [0u8; 256];
        match nix::unistd::read(fd.as_raw_fd(), &mut chunk) {
            Ok(0) => {
                self.closed = true;
                true
            }
            Ok(n) => {
                self.buf.extend_from_slice(&chunk[..n]);
                let stop = self.buf.split(|&b| b == b'\n').any(|l| l == b"cancel");
                if self.buf.len() > 4096 {
                    self.buf.clear();
                }
                stop
            }
            Err(Errno::EINTR | Errno::EAGAIN) => false,
            Err(_) => {
                self.closed = true;
                true
            }
        }
    }
}

/// Run the supervisor to completion; returns the process exit code of the supervisor itself
/// ([`exit`]: [`exit::SUCCESS`] when it did its job, whatever pi did: pi's status travels on
/// the control socket).
pub fn run(cfg: Config) -> i32 {
    let mut control = Control {
        fd: cfg.control_fd.map(|fd| unsafe { OwnedFd::from_raw_fd(fd) }),
        closed: false,
        buf: Vec::new(),
    };
    if let Some(fd) = &control.fd {
        // pi must not inherit the control socket.
        let _ = nix::fcntl::fcntl(
            fd.as_raw_fd(),
            nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::FD_CLOEXEC),
        );
    }
    let (sfd, old) = match take_signals() {
        Ok(s) => s,
        Err(code) => return code,
    };

    let child = match spawn_pi(&cfg, old) {
        Ok(c) => c,
        Err(e) => {
            control.send(&Event::SpawnFailed {
                error: format!("cannot start {}: {e}", cfg.program),
                errno: e.raw_os_error(),
            });
            return if control.fd.is_some() {
                exit::SUCCESS
            } else {
                exit::NOT_STARTED
            };
        }
    };
    let pi = Pid::from_raw(child.id() as i32);
    // std's Child is not used to wait: the supervisor reaps with waitpid(-1).
    std::mem::forget(child);
    control.send(&Event::Started { pid: pi.as_raw() });
    if control.fd.is_some() {
        // pi's stdio is pi's now: our copies go, so the provider reads the end of pi's
        // output when pi (and whatever it left holding it) is gone, not when we are. From
        // here everything we say goes over the control socket.
        release_stdio();
    }
    let me = std::process::id() as i32;

    let end = wait_for_pi(pi, &sfd, &mut control, &cfg);
    let (survivors, leftover) = sweep(me, &sfd, &cfg, end.cancelled);

    let (code, signal) = match end.status {
        Some(WaitStatus::Exited(_, code)) => (Some(code), None),
        Some(WaitStatus::Signaled(_, sig, _)) => (None, Some(sig.as_str().to_string())),
        _ => (None, None),
    };
    control.send(&Event::Exited {
        code,
        signal,
        cancelled: end.cancelled,
        killed: end.killed,
        survivors,
        leftover,
    });
    exit::SUCCESS
}

/// Become a child subreaper and take SIGCHLD, SIGTERM, SIGINT and SIGHUP through a
/// signalfd (blocked). Returns the signalfd and the signal mask from before, for pi; or
/// the supervisor's exit code when that fails ([`exit::CANNOT_SUPERVISE`]).
// The supervisor's own process: it says why it cannot start on its stderr (the provider
// reads it), as a command-line tool does.
#[allow(clippy::print_stderr)]
fn take_signals() -> Result<(SignalFd, SigSet), i32> {
    if let Err(e) = procs::become_subreaper() {
        eprintln!("pi-supervisor: cannot become a child subreaper: {e}");
        return Err(exit::CANNOT_SUPERVISE);
    }

    let mut mask = SigSet::empty();
    for s in [
        Signal::SIGCHLD,
        Signal::SIGTERM,
        Signal::SIGINT,
        Signal::SIGHUP,
    ] {
        mask.add(s);
    }
    let mut old = SigSet::empty();
    if nix::sys::signal::pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&mask), Some(&mut old))
        .is_err()
    {
        eprintln!("pi-supervisor: cannot block signals");
        return Err(exit::CANNOT_SUPERVISE);
    }
    match SignalFd::with_flags(&mask, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC) {
        Ok(s) => Ok((s, old)),
        Err(e) => {
            eprintln!("pi-supervisor: signalfd: {e}");
            Err(exit::CANNOT_SUPERVISE)
        }
    }
}

/// Start pi in its own process group, with the signal mask `restore` (the supervisor's
/// before it blocked its signals) and SIGTERM as its parent-death signal.
fn spawn_pi(cfg: &Config, restore: SigSet) -> std::io::Result<std::process::Child> {
    let mut cmd = Command::new(&cfg.program);
    cmd.args(&cfg.args).process_group(0);
    if let Some(env) = &cfg.env {
        cmd.env_clear().envs(env.iter().map(|(k, v)| (k, v)));
    }
    let supervisor_pid = std::process::id() as libc::pid_t;
    unsafe {
        cmd.pre_exec(move || {
            // The child starts with the signal mask the supervisor had before blocking.
            nix::sys::signal::pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&restore), None)
                .map_err(std::io::Error::from)?;
            // If the supervisor itself is killed (SIGKILL), pi gets SIGTERM: it kills its
            // tool processes and exits, as on any SIGTERM. (The supervisor is one thread, so
            // the parent-death signal is tied to its life, not to a thread's.)
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGTERM as libc::c_ulong,
                0,
                0,
                0,
            ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            // The supervisor may already be gone: then nobody would send that signal.
            if libc::getppid() != supervisor_pid {
                libc::raise(libc::SIGTERM);
            }
            Ok(())
        });
    }
    cmd.spawn()
}

/// How pi ended, as [`wait_for_pi`] saw it.
struct PiEnd {
    /// pi's wait status (none when it could not be reaped within the kill wait).
    status: Option<WaitStatus>,
    /// A stop was requested.
    cancelled: bool,
    /// pi outlived the grace period and its group was SIGKILLed.
    killed: bool,
}

/// Wait until pi is gone. A stop (the control socket's `cancel` or end, or a signal to the
/// supervisor) sends SIGTERM to pi's group, and after the grace period SIGKILL.
fn wait_for_pi(pi: Pid, sfd: &SignalFd, control: &mut Control, cfg: &Config) -> PiEnd {
    let mut pi_status: Option<WaitStatus> = None;
    let mut cancelled = false;
    let mut deadline: Option<Instant> = None;
    let mut killed = false;

    loop {
        reap(pi, &mut pi_status);
        if pi_status.is_some() {
            break;
        }
        if let Some(d) = deadline {
            if Instant::now() >= d {
                let _ = kill(Pid::from_raw(-pi.as_raw()), Signal::SIGKILL);
                killed = true;
                // Wait for pi itself; descendants are swept below.
                let _ = wait_until(sfd, Instant::now() + cfg.kill_wait, || {
                    reap(pi, &mut pi_status);
                    pi_status.is_some()
                });
                break;
            }
        }
        let timeout = deadline
            .map(|d| d.saturating_duration_since(Instant::now()))
            .map(|d| {
                PollTimeout::try_from(d.max(Duration::from_millis(1))).unwrap_or(PollTimeout::MAX)
            })
            .unwrap_or(PollTimeout::NONE);
        let ctl_fd = control
            .fd
            .as_ref()
            .filter(|_| !control.closed)
            .map(|f| f.as_fd());
        let (sig_ready, ctl_ready) = wait_readable(sfd.as_fd(), ctl_fd, timeout);
        let mut stop = false;
        if sig_ready {
            while let Ok(Some(info)) = sfd.read_signal() {
                let signo = info.ssi_signo as i32;
                if signo != Signal::SIGCHLD as i32 {
                    stop = true;
                }
            }
        }
        if ctl_ready && control.read() {
            stop = true;
        }
        if stop && !cancelled {
            cancelled = true;
            let _ = kill(Pid::from_raw(-pi.as_raw()), Signal::SIGTERM);
            deadline = Some(Instant::now() + cfg.grace);
        }
    }
    PiEnd {
        status: pi_status,
        cancelled,
        killed,
    }
}

/// pi is gone. Whatever is left below us is an orphan of this run: SIGTERM first when pi
/// ended on its own, then SIGKILL until none is left or the kill wait expires. Returns the
/// survivors found and the pids that would not go.
fn sweep(me: i32, sfd: &SignalFd, cfg: &Config, cancelled: bool) -> (Vec<Survivor>, Vec<i32>) {
    let mut survivors: Vec<Survivor> = live_descendants(me)
        .into_iter()
        .map(|p| Survivor {
            pid: p.pid,
            command: p.command(),
        })
        .collect();
    survivors.sort_by_key(|s| s.pid);
    if !survivors.is_empty() && !cancelled {
        // pi ended on its own: give the leftovers a chance to exit cleanly first.
        for s in &survivors {
            let _ = kill(Pid::from_raw(s.pid), Signal::SIGTERM);
        }
        let grace_end = Instant::now() + cfg.grace.min(Duration::from_millis(500));
        let _ = wait_until(sfd, grace_end, || {
            reap_all();
            live_descendants(me).is_empty()
        });
    }
    // Freeze, then kill, in rounds until no child is left: one that forks while it is
    // killed is caught too (we own every child we have: none left means nothing below).
    let swept = procs::sweep::sweep(
        &mut || procs::sweep::freeze_below(me, &Default::default()),
        Some(&mut || {
            reap_all();
            !procs::sweep::has_children()
        }),
        cfg.kill_wait,
        &mut |d| {
            let _ = wait_until(sfd, Instant::now() + d, || false);
        },
    );
    for p in swept.found {
        if !survivors.iter().any(|s| s.pid == p.pid) {
            survivors.push(Survivor {
                pid: p.pid,
                command: p.command(),
            });
        }
    }
    reap_all();
    (survivors, swept.unkillable)
}

/// Point stdin, stdout and stderr at `/dev/null`.
pub(crate) fn release_stdio() {
    if let Ok(null) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
    {
        for fd in 0..3 {
            let _ = nix::unistd::dup2(null.as_raw_fd(), fd);
        }
    }
}

fn live_descendants(me: i32) -> Vec<procs::ProcInfo> {
    // As a subreaper, every process below us has a child of ours among its ancestors: with
    // no child at all there is nothing below us, and no /proc scan is needed (the common
    // end of a run: pi exited, reaped, nothing left).
    if !procs::sweep::has_children() {
        return Vec::new();
    }
    procs::descendants(&procs::all_procs(), me)
        .into_iter()
        .filter(|p| !p.is_zombie())
        .collect()
}

/// Reap every exited child; remember pi's status.
fn reap(pi: Pid, pi_status: &mut Option<WaitStatus>) {
    loop {
        match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) | Err(_) => return,
            Ok(status) => {
                if status.pid() == Some(pi) {
                    *pi_status = Some(status);
                }
            }
        }
    }
}

fn reap_all() {
    let mut ignore = None;
    reap(Pid::from_raw(0), &mut ignore);
}

/// Wait for readability of the signal fd and the control fd.
fn wait_readable(
    sig: BorrowedFd<'_>,
    ctl: Option<BorrowedFd<'_>>,
    timeout: PollTimeout,
) -> (bool, bool) {
    let flags = PollFlags::POLLIN | PollFlags::POLLHUP | PollFlags::POLLERR;
    let mut fds = vec![PollFd::new(sig, PollFlags::POLLIN)];
    if let Some(c) = ctl {
        fds.push(PollFd::new(c, PollFlags::POLLIN));
    }
    match poll(&mut fds, timeout) {
        Ok(_) => {
            let ready = |f: &PollFd| f.revents().is_some_and(|r| r.intersects(flags));
            (ready(&fds[0]), fds.get(1).is_some_and(ready))
        }
        Err(_) => (false, false),
    }
}

/// Poll `done` whenever a signal (SIGCHLD) arrives, until it holds or `until` passes.
fn wait_until(sfd: &SignalFd, until: Instant, mut done: impl FnMut() -> bool) -> bool {
    loop {
        if done() {
            return true;
        }
        let now = Instant::now();
        if now >= until {
            return false;
        }
        // Wake on SIGCHLD, and at least every 10 ms: processes reaped by someone else
        // (grandchildren whose parent is still alive) send us nothing.
        let step = (until - now).min(Duration::from_millis(10));
        let timeout =
            PollTimeout::try_from(step.max(Duration::from_millis(1))).unwrap_or(PollTimeout::MAX);
        let (ready, _) = wait_readable(sfd.as_fd(), None, timeout);
        if ready {
            while let Ok(Some(_)) = sfd.read_signal() {}
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn children_are_seen_and_not_reaped() {
        let mut child = std::process::Command::new("sh")
            .args(["-c", "exit 7"])
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(100));
        // An exited, unreaped child counts, and looking does not reap it.
        assert!(pi_procs::sweep::has_children());
        assert_eq!(child.wait().unwrap().code(), Some(7));
    }

    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn parses_its_command_line() {
        let c = parse_args(&s(&[
            "--grace-ms",
            "250",
            "--control-fd",
            "3",
            "--",
            "pi",
            "--mode",
            "json",
        ]))
        .unwrap();
        assert_eq!(c.grace, Duration::from_millis(250));
        assert_eq!(c.kill_wait, Duration::from_secs(5));
        assert_eq!(c.control_fd, Some(3));
        assert_eq!((c.program.as_str(), c.args), ("pi", s(&["--mode", "json"])));
        // A grace past the clock's reach is MAX_WAIT, not an overflow later.
        let c = parse_args(&s(&["--grace-ms", &u64::MAX.to_string(), "--", "pi"])).unwrap();
        assert_eq!(c.grace, crate::wait::MAX_WAIT);
        let e = parse_args(&s(&["--bogus"])).unwrap_err();
        assert!(
            matches!(&e, ArgsError::Unknown(a) if a == "--bogus"),
            "{e:?}"
        );
        assert_eq!(e.to_string(), "unknown argument \"--bogus\"");
        let e = parse_args(&s(&["--grace-ms", "x", "--", "pi"])).unwrap_err();
        assert!(matches!(&e, ArgsError::NotANumber { flag, .. } if flag == "--grace-ms"));
        assert_eq!(e.to_string(), "--grace-ms: invalid digit found in string");
        let e = parse_args(&s(&["--control-fd"])).unwrap_err();
        assert_eq!(e.to_string(), "--control-fd needs a value");
        let e = parse_args(&s(&["--"])).unwrap_err();
        assert_eq!(e.to_string(), "missing program after --");
        let e = parse_args(&s(&["--grace-ms", "5"])).unwrap_err();
        assert!(matches!(e, ArgsError::NoSeparator), "{e:?}");
    }

    #[test]
    fn events_are_json_lines() {
        let e = Event::Exited {
            code: Some(143),
            signal: None,
            cancelled: true,
            killed: false,
            survivors: vec![],
            leftover: vec![],
        };
        let text = serde_json::to_string(&e).unwrap();
        assert_eq!(
            text,
            r#"{"event":"exited","code":143,"cancelled":true,"killed":false,"survivors":[],"leftover":[]}"#
        );
        assert_eq!(serde_json::from_str::<Event>(&text).unwrap(), e);
    }
}
