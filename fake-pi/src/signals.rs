//! How fake-pi answers signals, and the children it tracks for cleanup.
//!
//! Design: `block()` blocks SIGTERM, SIGINT, SIGHUP and SIGCHLD in the main thread; one
//! dedicated thread (`start`) takes them with `sigwait` and acts as the cassette's `process`
//! section says (the Codex wrapper and the Gemini relaunch parent take them in their main
//! thread). Every other thread fake-pi starts is born with them blocked ([`spawn_thread`]),
//! whenever it starts: before `block()` the main thread alone takes them (their default
//! dispositions: SIGTERM ends a start that is still reading its stdin), after it only the
//! `sigwait`. A thread born without the mask would take a SIGCHLD the wait never sees (its
//! default is to discard it): the Codex wrapper waited forever for its ended native child
//! when the stdin hint's thread, started before the wrapper blocked, was still there.
//! Because the thread acts on its own, a signal works at any moment: mid-write, mid-sleep,
//! while reading stdin, during `hang`. Spawned children get an empty mask back in
//! `pre_exec` (see `child`). SIGCHLD is used only to reap tracked children, so a child
//! that ends early does not linger as a zombie.

use std::process::Child;
use std::sync::Mutex;

use nix::sys::signal::{self, SigHandler, SigSet, SigmaskHow, Signal};
use nix::unistd::Pid;
use pi_cassette::{ProcessBehaviour, SignalAction};

use crate::exit;

/// A child fake-pi started (a `spawn` record).
pub(crate) struct Tracked {
    /// The `spawn` record's id.
    pub(crate) id: String,
    pub(crate) child: Child,
    /// Started in its own session: SIGTERM cleanup kills its whole process group.
    pub(crate) own_group: bool,
    pub(crate) reaped: bool,
}

/// Children started so far. Spawning holds the lock, so a cleanup cannot miss a child
/// that is being started.
pub(crate) static CHILDREN: Mutex<Vec<Tracked>> = Mutex::new(Vec::new());

/// The signals fake-pi takes with `sigwait` (blocked everywhere else).
pub(crate) fn handled() -> SigSet {
    let mut set = SigSet::empty();
    for s in [
        Signal::SIGTERM,
        Signal::SIGINT,
        Signal::SIGHUP,
        Signal::SIGCHLD,
    ] {
        set.add(s);
    }
    set
}

/// Block the handled signals in the calling thread (the main thread, before the replay).
pub(crate) fn block() -> nix::Result<()> {
    signal::pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&handled()), None)
}

/// Start `f` on a thread named `name` that is born with the handled signals blocked
/// (a thread inherits the mask in force where it is created: it is set here around the
/// spawn and put back after), so that it never takes one of them whatever the main thread's
/// mask is then. Every thread fake-pi starts is started here.
pub(crate) fn spawn_thread<T: Send + 'static>(
    name: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> std::io::Result<std::thread::JoinHandle<T>> {
    let mut old = SigSet::empty();
    signal::pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&handled()), Some(&mut old))?;
    let thread = std::thread::Builder::new().name(name.into()).spawn(f);
    let _ = signal::pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&old), None);
    thread
}

/// Wait for one of the handled signals in this thread (which blocks them): the next one,
/// or `None` after `timeout` (the caller looks again at what it waits for; a SIGCHLD is
/// never its only news of a child's end).
pub(crate) fn wait_for(timeout: std::time::Duration) -> Option<Signal> {
    let set = handled();
    let ts = libc::timespec {
        tv_sec: libc::time_t::try_from(timeout.as_secs()).unwrap_or(libc::time_t::MAX),
        tv_nsec: timeout.subsec_nanos().into(),
    };
    // SAFETY: `set` is a valid sigset_t for the call; no siginfo is asked for.
    let n = unsafe { libc::sigtimedwait(set.as_ref(), std::ptr::null_mut(), &ts) };
    Signal::try_from(n).ok()
}

/// Start the thread that answers signals according to `behaviour`.
pub(crate) fn start(behaviour: ProcessBehaviour) -> std::io::Result<()> {
    spawn_thread("fake-pi-signals", move || loop {
        let Ok(sig) = handled().wait() else { continue };
        let action = match sig {
            Signal::SIGCHLD => {
                reap();
                continue;
            }
            // An RPC client's signal the replay waits for: the cassette says what follows.
            s if crate::client::take_awaited(s) => {
                crate::timeline::signal(s, None);
                continue;
            }
            Signal::SIGTERM => &behaviour.on_sigterm,
            Signal::SIGINT => &behaviour.on_sigint,
            Signal::SIGHUP => &behaviour.on_sighup,
            _ => continue,
        };
        crate::timeline::signal(sig, Some(action));
        act(action, sig);
    })
    .map(|_| ())
}

fn act(action: &SignalAction, sig: Signal) {
    match action {
        SignalAction::Ignore => {}
        SignalAction::Die => die_by(sig),
        SignalAction::Exit { code } => exit_now(*code),
        SignalAction::CleanupDie => {
            // Keep the lock: no child may be started after the cleanup.
            let mut children = CHILDREN.lock().unwrap_or_else(|e| e.into_inner());
            kill_all(&mut children);
            die_by(sig)
        }
        SignalAction::KillChildrenDie => {
            // Keep the lock: no child may be started after the cleanup.
            let children = CHILDREN.lock().unwrap_or_else(|e| e.into_inner());
            for t in children.iter().filter(|t| !t.reaped) {
                // The child alone: what it started (its group) lives on, orphaned.
                let _ = signal::kill(Pid::from_raw(t.child.id() as i32), Signal::SIGKILL);
            }
            die_by(sig)
        }
        SignalAction::CleanupExit { code } => {
            // Keep the lock: no child may be started after the cleanup.
            let mut children = CHILDREN.lock().unwrap_or_else(|e| e.into_inner());
            kill_all(&mut children);
            exit_now(*code)
        }
    }
}

/// SIGKILL every tracked child that is still there: its process group when it has its
/// own session (what pi does for its detached bash tool processes), else the child alone.
/// Processes that left the child's group (a grandchild in its own session) survive.
fn kill_all(children: &mut [Tracked]) {
    for t in children.iter_mut() {
        if t.reaped || matches!(t.child.try_wait(), Ok(Some(_))) {
            continue;
        }
        let pid = Pid::from_raw(t.child.id() as i32);
        let _ = if t.own_group {
            signal::killpg(pid, Signal::SIGKILL)
        } else {
            signal::kill(pid, Signal::SIGKILL)
        };
    }
}

/// A `reap` record: the tracked child `id` (the latest with that id) is gone now; SIGKILL
/// its process group (or it alone) if it is still there. False when no child has that id.
pub(crate) fn reap_child(id: &str) -> bool {
    let mut children = CHILDREN.lock().unwrap_or_else(|e| e.into_inner());
    let Some(t) = children.iter_mut().rev().find(|t| t.id == id) else {
        return false;
    };
    kill_all(std::slice::from_mut(t));
    let _ = t.child.wait();
    t.reaped = true;
    true
}

/// SIGKILL every tracked child still there (see [`kill_all`]): fake-pi gives up on a
/// replay it cannot finish and leaves nothing of its own behind.
pub(crate) fn kill_children() {
    let mut children = CHILDREN.lock().unwrap_or_else(|e| e.into_inner());
    kill_all(&mut children);
}

fn reap() {
    let mut children = CHILDREN.lock().unwrap_or_else(|e| e.into_inner());
    for t in children.iter_mut().filter(|t| !t.reaped) {
        if let Ok(Some(_)) = t.child.try_wait() {
            t.reaped = true;
        }
    }
}

/// Die by `sig` for real: default disposition, unblocked in this thread, raised at this
/// thread. Used for `die` and for `signal` records.
pub(crate) fn die_by(sig: Signal) -> ! {
    // SAFETY: restoring the default disposition installs no handler.
    unsafe {
        let _ = signal::signal(sig, SigHandler::SigDfl);
    }
    let mut set = SigSet::empty();
    set.add(sig);
    let _ = signal::pthread_sigmask(SigmaskHow::SIG_UNBLOCK, Some(&set), None);
    let _ = signal::raise(sig);
    // Only reached for a signal whose default action does not kill.
    exit_now(exit::SIGNAL_BASE + sig as i32)
}

/// Leave at once, from any thread: no atexit handlers, no stdio flushing (fake-pi writes
/// unbuffered), no race with the main thread's own exit.
pub(crate) fn exit_now(code: i32) -> ! {
    // SAFETY: _exit is async-signal-safe and takes no pointers.
    unsafe { libc::_exit(code) }
}
