//! Child processes for `spawn` records: real processes, like the ones pi's bash tool starts.
//!
//! fake-pi re-executes its own binary (`/proc/self/exe`) with the spawn record as JSON in
//! `FAKE_PI_CHILD_SPEC`; `main` sees that variable and runs [`child_main`] instead of
//! replaying. The child's argv is the recorded command line (`spawn.argv`, what pi's tool
//! ran: `/bin/bash -c sleep 300`), so `ps` and a survivor check by command line see what
//! they would see with real pi; its process name (`comm`) is that command's name. Without a
//! recorded command line the argv is `fake-pi-child <id>`. A grandchild with its own
//! recorded command line is started the same way; one without is a plain fork. The child inherits fake-pi's environment (so a
//! test's marker variable follows it), starts in its own session when `own_session`,
//! ignores SIGTERM when `ignore_sigterm`, keeps fake-pi's stdout when `hold_stdout`
//! (else /dev/null), may fork a grandchild, and lives `lifetime_ms` or until killed, never
//! longer than `FAKE_PI_CHILD_MAX_MS` (10 minutes by default): a child nobody kills still ends.

use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use nix::sys::signal::{self, SigHandler, SigSet, SigmaskHow, Signal};
use nix::unistd::{dup2, fork, setsid, ForkResult};
use pi_cassette::Spawn;

use crate::exit;

/// The variable that carries the spawn record to the child.
pub(crate) const SPEC_ENV: &str = "FAKE_PI_CHILD_SPEC";

/// Start the child for a spawn record.
pub(crate) fn spawn(spec: &Spawn) -> std::io::Result<Child> {
    let json = serde_json::to_string(spec).map_err(std::io::Error::other)?;
    let own_session = spec.own_session;
    let ignore_sigterm = spec.ignore_sigterm;
    let mut cmd = Command::new("/proc/self/exe");
    match spec.argv.as_deref() {
        Some([first, rest @ ..]) => {
            cmd.arg0(first).args(rest);
        }
        _ => {
            cmd.arg0("fake-pi-child").arg(&spec.id);
        }
    }
    cmd.env(SPEC_ENV, json)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .stdout(if spec.hold_stdout {
            Stdio::inherit()
        } else {
            Stdio::null()
        });
    // SAFETY: only async-signal-safe calls (sigprocmask, signal, setsid) between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            // fake-pi blocks the signals it sigwaits for; the child starts with none blocked.
            signal::sigprocmask(SigmaskHow::SIG_SETMASK, Some(&SigSet::empty()), None)?;
            if own_session {
                setsid()?;
            }
            let term = if ignore_sigterm {
                SigHandler::SigIgn
            } else {
                SigHandler::SigDfl
            };
            signal::signal(Signal::SIGTERM, term)?;
            Ok(())
        });
    }
    cmd.spawn()
}

/// The child's whole life. Never returns.
pub(crate) fn child_main(json: &str) -> ! {
    std::env::remove_var(SPEC_ENV);
    // Who started this process, known before anything else happens: the replay may end
    // (and this process be orphaned) before the orphan watch starts.
    let owner = std::env::var(ORPHAN_OWNER_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<i32>().ok());
    if owner.is_some() {
        // A grandchild's owner is this process.
        std::env::set_var(ORPHAN_OWNER_ENV, std::process::id().to_string());
    }
    let spec: Spawn = match serde_json::from_str(json) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("fake-pi-child: bad {SPEC_ENV}: {e}");
            std::process::exit(exit::MISUSE);
        }
    };
    if let Some(first) = spec.argv.as_ref().and_then(|a| a.first()) {
        set_process_name(first);
    }
    if let Some(g) = &spec.grandchild {
        // SAFETY: the child is single-threaded here.
        if let Ok(ForkResult::Child) = unsafe { fork() } {
            if g.own_session {
                let _ = setsid();
            }
            let term = if g.ignore_sigterm {
                SigHandler::SigIgn
            } else {
                SigHandler::SigDfl
            };
            // SAFETY: no handler is installed, only a disposition.
            let _ = unsafe { signal::signal(Signal::SIGTERM, term) };
            if !g.hold_stdout {
                if let Ok(null) = std::fs::OpenOptions::new().write(true).open("/dev/null") {
                    use std::os::fd::AsRawFd;
                    let _ = dup2(null.as_raw_fd(), 1);
                }
            }
            if let Some([first, rest @ ..]) = g.argv.as_deref() {
                // Become a process with the recorded command line: a leaf that lives until
                // killed. The SIGTERM disposition and the session carry over the exec.
                let leaf = Spawn {
                    id: spec.id.clone(),
                    own_session: g.own_session,
                    ignore_sigterm: g.ignore_sigterm,
                    hold_stdout: g.hold_stdout,
                    grandchild: None,
                    lifetime_ms: None,
                    argv: g.argv.clone(),
                };
                if let Ok(json) = serde_json::to_string(&leaf) {
                    let e = Command::new("/proc/self/exe")
                        .arg0(first)
                        .args(rest)
                        .env(SPEC_ENV, json)
                        .exec();
                    eprintln!("fake-pi-child: cannot start the grandchild: {e}");
                }
            }
            live(None, owner_of_grandchild());
        }
    }
    live(spec.lifetime_ms, owner)
}

/// A grandchild's owner: the process that forked it (set for it in [`child_main`]).
fn owner_of_grandchild() -> Option<i32> {
    std::env::var(ORPHAN_OWNER_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<i32>().ok())
}

/// The process name (`comm`, what `ps -o comm` and `pgrep` show): the basename of the
/// recorded command, as the kernel keeps it (15 bytes).
pub(crate) fn set_process_name(command: &str) {
    let base = command.rsplit('/').next().unwrap_or(command);
    let mut name: Vec<u8> = base.bytes().filter(|&b| b != 0).take(15).collect();
    name.push(0);
    // SAFETY: PR_SET_NAME reads a NUL-terminated string of at most 16 bytes.
    unsafe {
        libc::prctl(libc::PR_SET_NAME, name.as_ptr() as libc::c_ulong, 0, 0, 0);
    }
}

/// How long a child without a `lifetime_ms` lives at most, unless `FAKE_PI_CHILD_MAX_MS`
/// says otherwise (10 minutes: longer than any recorded tool command is waited for; a child
/// nobody kills still goes away by itself).
const DEFAULT_MAX_LIFETIME_MS: u64 = 600_000;

/// The longest a child lives: `FAKE_PI_CHILD_MAX_MS` (milliseconds, 1 to the 10-minute
/// ceiling: `crate::environ::MAX_LIFETIME_MS`), else [`DEFAULT_MAX_LIFETIME_MS`].
fn max_lifetime_ms() -> u64 {
    crate::environ::lifetime_or("FAKE_PI_CHILD_MAX_MS", DEFAULT_MAX_LIFETIME_MS)
}

/// The variable a replaying process sets for its tools when they are to be left running
/// on its end (Gemini CLI's orphans): once orphaned, a child lives this many milliseconds
/// more, then ends with its process group.
pub(crate) const ORPHAN_BOUND_ENV: &str = "FAKE_PI_TOOL_ORPHAN_MS";

/// Beside [`ORPHAN_BOUND_ENV`]: the pid of the process whose end orphans a child (the
/// replaying process for a tool, the tool for its grandchild).
pub(crate) const ORPHAN_OWNER_ENV: &str = "FAKE_PI_TOOL_OWNER";

/// With [`ORPHAN_BOUND_ENV`] set: watch for this process's parent to go (its `owner`, as
/// named when it started, else the parent it has now), then live the bound more and end,
/// killing its own group when it leads one. An owner already gone counts as gone.
fn bound_orphan_life(owner: Option<i32>) {
    if std::env::var_os(ORPHAN_BOUND_ENV).is_none() {
        return;
    }
    let ms = crate::environ::lifetime_or(ORPHAN_BOUND_ENV, DEFAULT_MAX_LIFETIME_MS);
    let parent = owner.map_or_else(nix::unistd::getppid, nix::unistd::Pid::from_raw);
    let _ = crate::signals::spawn_thread("fake-pi-orphan", move || {
        while nix::unistd::getppid() == parent {
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(ms));
        let me = nix::unistd::getpid();
        if nix::unistd::getpgrp() == me {
            let _ = signal::killpg(me, Signal::SIGKILL);
        }
        // SAFETY: _exit is async-signal-safe and takes no pointers.
        unsafe { libc::_exit(exit::SUCCESS) }
    });
}

/// Live `lifetime_ms` (or until killed), never longer than [`max_lifetime_ms`], then exit 0.
/// A tool left to outlive its replay ends by itself within its bound ([`ORPHAN_BOUND_ENV`]).
fn live(lifetime_ms: Option<u64>, owner: Option<i32>) -> ! {
    bound_orphan_life(owner);
    let ms = lifetime_ms.unwrap_or(u64::MAX).min(max_lifetime_ms());
    std::thread::sleep(Duration::from_millis(ms));
    std::process::exit(exit::SUCCESS)
}
