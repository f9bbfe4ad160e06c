//! fake-pi as Gemini CLI: the process shape of 0.61.0. Unless `GEMINI_CLI_NO_RELAUNCH` (or
//! `SANDBOX`) is set non-empty, real `gemini` relaunches itself: the node process started
//! by the caller spawns a second node process (with `GEMINI_CLI_NO_RELAUNCH=true` in its
//! environment) that runs the session, and ends as it ended. The parent IGNORES SIGTERM
//! and SIGINT entirely (measured: the run completes normally); the child answers them as
//! the cassette's `process` section says (measured: exit 0, its tools left running in their
//! own sessions, orphaned).
//!
//! So fake-pi, once the call is accepted ([`crate::gemini`]), is the parent ([`start`]:
//! named `node`, as `ps -o comm` shows the real one) and starts itself again as the child
//! (argv `gemini ARGS...`, named `gemini`; `FAKE_PI_GEMINI_CHILD` carries the cassette's
//! path), which replays the records ([`child_main`]). With `GEMINI_CLI_NO_RELAUNCH` set,
//! this process replays itself. Whatever outlives the run ends by itself: a child whose
//! parent is gone (SIGKILL of the parent) lives [`DEFAULT_ORPHAN_MS`] more
//! (`FAKE_PI_GEMINI_ORPHAN_MS` milliseconds, 1 to the 10-minute ceiling), then kills its
//! tools' groups and exits; a tool left running lives the same bound after its parent is
//! gone.

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use nix::sys::signal::{self, SigSet, SigmaskHow, Signal};
use nix::unistd::getppid;

use crate::exit::{self, fail};
use crate::{child, environ, replay, report, session, signals, source, values};

/// The variable that makes a start the relaunched child, naming the cassette it replays.
pub(crate) const CHILD_ENV: &str = "FAKE_PI_GEMINI_CHILD";
/// The variable that bounds an orphan's life (milliseconds).
const ORPHAN_ENV: &str = "FAKE_PI_GEMINI_ORPHAN_MS";
/// How long an orphan lives on by default: long enough for a test to see it (and a
/// leftover check to find it), short enough that nothing lingers.
const DEFAULT_ORPHAN_MS: u64 = 5_000;

/// Does the CLI relaunch itself under this environment? Not when a variable of its row's
/// `one_process` is set non-empty.
fn relaunches() -> bool {
    pi_grammar::Agent::Gemini
        .spec()
        .process
        .one_process
        .iter()
        .all(|v| environ::var(v).map_or(true, |s| s.is_empty()))
}

/// Run the accepted call: relaunched (this process the parent) or, without the relaunch,
/// replayed here. Signals are blocked already ([`crate::gemini`]).
pub(crate) fn start(path: &Path, argv: &[String], speed: Option<&str>) -> i32 {
    child::set_process_name("node");
    if !relaunches() {
        return replay_here(path, speed);
    }
    let mut cmd = Command::new("/proc/self/exe");
    cmd.arg0("gemini")
        .args(argv)
        .env(CHILD_ENV, path)
        .stdin(Stdio::null());
    if let Some((var, value)) = pi_grammar::Agent::Gemini
        .spec()
        .process
        .parent
        .and_then(|p| p.child_env)
    {
        cmd.env(var, value);
    }
    if let Some(s) = speed {
        cmd.env("FAKE_PI_SPEED", s);
    }
    // SAFETY: only sigprocmask (async-signal-safe) between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            signal::sigprocmask(SigmaskHow::SIG_SETMASK, Some(&SigSet::empty()), None)?;
            Ok(())
        });
    }
    let mut relaunched = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return fail(exit::MISUSE, format!("cannot relaunch: {e}")),
    };
    loop {
        // SIGCHLD wakes the wait at once; the timeout is a second look, never the news.
        match signals::wait_for(Duration::from_secs(1)) {
            None | Some(Signal::SIGCHLD) => {}
            // The relaunch parent does nothing on SIGTERM and SIGINT (measured).
            Some(Signal::SIGTERM | Signal::SIGINT) => continue,
            // Node's default for SIGHUP: the parent dies; the child lives on, bounded.
            Some(s) => signals::die_by(s),
        }
        match relaunched.try_wait() {
            Ok(Some(status)) => {
                if let Some(n) = status.signal() {
                    if let Ok(s) = Signal::try_from(n) {
                        signals::die_by(s);
                    }
                    return exit::SIGNAL_BASE + n;
                }
                return status.code().unwrap_or(1);
            }
            Ok(None) => {}
            Err(e) => return fail(exit::MISUSE, format!("cannot wait for the child: {e}")),
        }
    }
}

/// The longest an orphan lives on.
fn orphan_bound() -> Duration {
    Duration::from_millis(environ::lifetime_or(ORPHAN_ENV, DEFAULT_ORPHAN_MS))
}

/// Watch for the parent's death: once orphaned, live [`orphan_bound`] more, then kill the
/// tools' groups and exit.
fn watch_parent() {
    let parent = getppid();
    let bound = orphan_bound();
    let _ = signals::spawn_thread("fake-pi-orphan", move || {
        while getppid() == parent {
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(bound);
        signals::kill_children();
        signals::exit_now(exit::SUCCESS)
    });
}

/// Be the relaunched child: replay the cassette at `path`. Never returns.
pub(crate) fn child_main(path: &str) -> ! {
    std::env::remove_var(CHILD_ENV);
    child::set_process_name("gemini");
    let code = match signals::block() {
        Ok(()) => {
            watch_parent();
            replay_here(Path::new(path), environ::var("FAKE_PI_SPEED").as_deref())
        }
        Err(e) => fail(exit::MISUSE, format!("cannot block signals: {e}")),
    };
    report::finish(code);
    std::process::exit(code)
}

/// Replay the cassette at `path` in this process, answering signals as its `process`
/// section says; the tools it starts bound their own life once it is gone.
fn replay_here(path: &Path, speed: Option<&str>) -> i32 {
    // Set before any tool starts, so each inherits it.
    std::env::set_var(
        child::ORPHAN_BOUND_ENV,
        orphan_bound().as_millis().to_string(),
    );
    std::env::set_var(child::ORPHAN_OWNER_ENV, std::process::id().to_string());
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(source) => {
            return exit::cassette_failure(pi_cassette::CassetteError::Io {
                path: path.to_path_buf(),
                source,
            })
        }
    };
    let header = match pi_cassette::CassetteReader::from_read(path, &file) {
        Ok(r) => r.header().clone(),
        Err(e) => return exit::cassette_failure(e),
    };
    exit::keep_secrets(&header);
    report::cassette(path);
    let speed = match replay::Speed::parse(speed) {
        Ok(s) => s,
        Err(e) => return fail(exit::MISUSE, e),
    };
    if let Err(e) = signals::start(header.process.clone()) {
        return fail(exit::MISUSE, format!("cannot start the signal thread: {e}"));
    }
    let requests =
        match crate::client::RequestLog::open(environ::var("FAKE_PI_REQUEST_LOG").as_deref()) {
            Ok(r) => r,
            Err(e) => return fail(exit::MISUSE, format!("FAKE_PI_REQUEST_LOG: {e}")),
        };
    let cwd = std::env::current_dir()
        .map(|d| d.to_string_lossy().into_owned())
        .unwrap_or_else(|_| ".".into());
    let home = environ::var("HOME").unwrap_or_default();
    let tmp = std::env::temp_dir().to_string_lossy().into_owned();
    let id = values::uuid_v4();
    let values = if environ::var("FAKE_PI_VALUES").is_some_and(|v| v == "recorded") {
        None
    } else {
        values::Values::from_pairs(
            header.redactions.keys(),
            &[
                ("<SESSION_ID>", &id),
                ("<CWD>", &cwd),
                ("<HOME>", &home),
                ("<TMP>", &tmp),
            ],
        )
    };
    let mut hooks = replay::Hooks {
        session: session::Session::new(session::Plan::Ephemeral { id: None }, None, &cwd),
        meta: session::SessionMeta {
            provider: None,
            model: None,
            thinking: None,
        },
        values,
        recorded_session_id: None,
        session_line_done: true,
        client: None,
        requests,
    };
    let mut records = match source::from_start(path, &file) {
        Ok(r) => r,
        Err(e) => return exit::cassette_failure(e),
    };
    replay::run(&mut records, path, speed, &mut hooks)
}
