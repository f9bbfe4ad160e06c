//! fake-pi as Codex: the process shape of the npm package. Real `codex` is a node wrapper
//! (`bin/codex.js`) that spawns the native binary and forwards SIGINT, SIGTERM and SIGHUP
//! to it, then ends as the native binary ended (its exit status, or death by its signal);
//! the tools run under the native binary in their own sessions.
//!
//! So fake-pi, once the call is accepted ([`crate::codex`]), is the wrapper ([`wrap`]:
//! named `node`, as `ps -o comm` shows the real one) and starts itself again as the native
//! child (argv `codex ARGS...`, named `codex`; `FAKE_PI_CODEX_NATIVE` carries the cassette's
//! path), which replays the records ([`native_main`]) and answers signals as the cassette's
//! `process` section says. SIGKILL of the wrapper leaves the native child and its tools
//! running, orphaned, as with the real CLI: the child carries the caller's environment (a
//! marker-based leftover check finds it) and ends by itself [`DEFAULT_ORPHAN_MS`] after it
//! was orphaned (`FAKE_PI_CODEX_ORPHAN_MS` milliseconds, 1 to the 10-minute ceiling), killing
//! its tools' groups.

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use nix::sys::signal::{self, SigSet, SigmaskHow, Signal};
use nix::unistd::{getppid, Pid};
use pi_grammar::codex::{Codex, Command as CodexCommand};

use crate::exit::{self, fail};
use crate::{child, environ, files, hints, replay, report, session, signals, source, values};

/// The variable that makes a start the native child, naming the cassette it replays.
pub(crate) const NATIVE_ENV: &str = "FAKE_PI_CODEX_NATIVE";
/// The variable that bounds an orphaned native child's life (milliseconds).
const ORPHAN_ENV: &str = "FAKE_PI_CODEX_ORPHAN_MS";
/// How long an orphaned native child lives on by default: long enough for a test to see
/// it (and a leftover check to find it), short enough that nothing lingers.
const DEFAULT_ORPHAN_MS: u64 = 5_000;

/// Be the wrapper: start the native child for `argv`, forward signals to it, end as it
/// ended.
pub(crate) fn wrap(path: &Path, argv: &[String], speed: Option<&str>) -> i32 {
    child::set_process_name("node");
    if let Err(e) = signals::block() {
        return fail(exit::MISUSE, format!("cannot block signals: {e}"));
    }
    let mut cmd = Command::new("/proc/self/exe");
    cmd.arg0("codex").args(argv).env(NATIVE_ENV, path);
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
    let mut native = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return fail(exit::MISUSE, format!("cannot start the native child: {e}")),
    };
    let pid = Pid::from_raw(native.id() as i32);
    loop {
        // SIGCHLD wakes the wait at once; the timeout is a second look, never the news.
        match signals::wait_for(Duration::from_secs(1)) {
            None | Some(Signal::SIGCHLD) => {}
            Some(s) => {
                let _ = signal::kill(pid, s);
                continue;
            }
        }
        match native.try_wait() {
            Ok(Some(status)) => return ended_as(status),
            Ok(None) => {}
            Err(e) => {
                return fail(
                    exit::MISUSE,
                    format!("cannot wait for the native child: {e}"),
                )
            }
        }
    }
}

/// End as the native child ended: by its signal (or 128 + it, when it does not kill), or
/// with its status.
fn ended_as(status: std::process::ExitStatus) -> i32 {
    if let Some(n) = status.signal() {
        if let Ok(s) = Signal::try_from(n) {
            signals::die_by(s);
        }
        return exit::SIGNAL_BASE + n;
    }
    status.code().unwrap_or(1)
}

/// The longest an orphaned native child lives on.
fn orphan_bound() -> Duration {
    Duration::from_millis(environ::lifetime_or(ORPHAN_ENV, DEFAULT_ORPHAN_MS))
}

/// Watch for the wrapper's death: once orphaned, live [`orphan_bound`] more, then kill the
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

/// The file in `CODEX_HOME` that holds the thread id of the last run started there.
const LAST_THREAD: &str = "fake-pi-last-thread";

/// The thread id this run announces (`<THREAD_ID>`): for `exec resume ID`, that id; for
/// `exec resume --last`, the thread of the last run started in this `CODEX_HOME` (real
/// Codex reuses it, measured), else a new one; for `exec`, a new one, remembered there for a
/// later `--last`.
///
/// Only a `CODEX_HOME` the caller sets is written to, and only when it exists (nothing is
/// created): with it unset real Codex would use `~/.codex`, the user's own, where a test
/// double has nothing to write; `exec resume --last` then announces a new thread, with a
/// hint. The file is fake-pi's own, read and replaced, never through a link ([`files`]).
fn thread_id(header: &pi_cassette::Header) -> String {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let cli = header.pi.codex().unwrap_or_else(Codex::latest);
    let last = environ::var("CODEX_HOME")
        .filter(|h| !h.is_empty())
        .map(|h| Path::new(&h).join(LAST_THREAD));
    match cli.parse(&argv) {
        Ok(p) if p.command == CodexCommand::ExecResume => p
            .session_id
            .or_else(|| last_thread(last.as_deref()))
            .filter(|id| {
                // An id as Codex writes them (a UUID), nothing a JSON string would escape.
                (1..=64).contains(&id.len())
                    && id
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            })
            .unwrap_or_else(values::uuid_v4),
        _ => {
            let id = values::uuid_v4();
            if let Some(last) = last.filter(|l| l.parent().is_some_and(Path::is_dir)) {
                if let Err(e) = files::replace_own(&last, id.as_bytes()) {
                    hints::codex_last_thread(&last, &e);
                }
            }
            id
        }
    }
}

/// The thread id `--last` continues, read from `last` (`None`: `CODEX_HOME` unset).
fn last_thread(last: Option<&Path>) -> Option<String> {
    let Some(last) = last else {
        hints::codex_resume_last_without_home();
        return None;
    };
    match files::read_own(last) {
        Ok(id) => id.map(|id| String::from_utf8_lossy(&id).trim().to_string()),
        Err(e) => {
            hints::codex_last_thread(last, &e);
            None
        }
    }
}

/// Be the native child: replay the cassette at `path` for this start's argv. Never returns.
pub(crate) fn native_main(path: &str) -> ! {
    std::env::remove_var(NATIVE_ENV);
    child::set_process_name("codex");
    let code = native(Path::new(path));
    report::finish(code);
    std::process::exit(code)
}

fn native(path: &Path) -> i32 {
    if let Err(e) = signals::block() {
        return fail(exit::MISUSE, format!("cannot block signals: {e}"));
    }
    watch_parent();
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
    report::cassette(path);
    let speed = match replay::Speed::parse(environ::var("FAKE_PI_SPEED").as_deref()) {
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
    let thread = thread_id(&header);
    let values = if environ::var("FAKE_PI_VALUES").is_some_and(|v| v == "recorded") {
        None
    } else {
        values::Values::from_pairs(
            header.redactions.keys(),
            &[
                ("<SESSION_ID>", &thread),
                ("<THREAD_ID>", &thread),
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
