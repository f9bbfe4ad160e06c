//! `FAKE_PI_TIMELINE`: what this start did, in time, for the replay's picture (`pi-harness
//! report --html`). Opt-in: nothing is kept or written unless the variable names a file
//! (the test helpers set it when `PI_HARNESS_HTML` asks for pages).
//!
//! One JSON line per start that the caller made (not the processes fake-pi starts itself),
//! appended in one `write` (`O_APPEND`) when it ends, however it ends:
//! `{"fake_pi_timeline":1,"pid":123,"started_unix_ms":1767000000000.5,"cassette":"/path",
//! "argv":["--mode","json",...],"signals":[{"signal":"SIGINT","t_ms":4.2,"answer":"die"}],
//! "ended":{"t_ms":4.3,"exit":130}}` (or `"signal":"SIGINT"` for a death by a signal).
//! `argv` is what the call sent, with every `never_in_argv` value of the cassette (a
//! literal, or the value the environment gives its variable) masked as every line of
//! fake-pi's own is ([`crate::exit::masked`]: `[REDACTED]`); `null` when the cassette's header
//! was never read (nothing says what to mask). `answer` is the cassette's
//! answer to the signal (`awaited` for a two-way client's signal the replay waited for).

use std::io::Write as _;
use std::sync::Mutex;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use nix::sys::signal::Signal;
use pi_cassette::SignalAction;

/// The variable naming the file.
pub(crate) const TIMELINE_ENV: &str = "FAKE_PI_TIMELINE";

struct State {
    start: Instant,
    started_unix_ms: f64,
    cassette: Option<String>,
    argv: Vec<String>,
    /// Whether the header was read (its secrets kept: [`crate::exit::keep_secrets`]).
    header_read: bool,
    signals: Vec<serde_json::Value>,
    written: bool,
}

static STATE: Mutex<Option<State>> = Mutex::new(None);

/// Act on this start's state, once [`call`] began it (never in the processes fake-pi
/// starts itself: they make no call).
fn with<R>(f: impl FnOnce(&mut State) -> R) -> Option<R> {
    let mut guard = STATE.lock().unwrap_or_else(|e| e.into_inner());
    guard.as_mut().map(f)
}

/// The start begins: the call's arguments (after the program's name). Nothing is kept
/// unless `FAKE_PI_TIMELINE` names a file.
pub(crate) fn call(argv: &[String]) {
    let wanted = std::env::var_os(TIMELINE_ENV).is_some_and(|v| !v.is_empty());
    if !wanted {
        return;
    }
    let mut guard = STATE.lock().unwrap_or_else(|e| e.into_inner());
    *guard = Some(State {
        start: Instant::now(),
        started_unix_ms: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64() * 1000.0),
        cassette: None,
        argv: argv.to_vec(),
        header_read: false,
        signals: Vec::new(),
        written: false,
    });
}

/// The cassette this start replays.
pub(crate) fn cassette(path: &std::path::Path) {
    with(|s| s.cassette = Some(path.display().to_string()));
}

/// The header is read, and its secrets kept ([`crate::exit::keep_secrets`], called first):
/// the call's arguments can be written masked.
pub(crate) fn header_read() {
    with(|s| s.header_read = true);
}

/// A signal taken by the signal thread, answered with `action` (`None`: a two-way client's
/// signal the replay waited for). When the answer ends the process, the line is written now:
/// the process leaves from the signal thread.
pub(crate) fn signal(sig: Signal, action: Option<&SignalAction>) {
    with(|s| {
        let t_ms = ms(s.start);
        let answer = match action {
            None => "awaited".to_string(),
            Some(SignalAction::Die) => "die".into(),
            Some(SignalAction::Ignore) => "ignore".into(),
            Some(SignalAction::CleanupExit { code }) => format!("cleanup_exit {code}"),
            Some(SignalAction::CleanupDie) => "cleanup_die".into(),
            Some(SignalAction::KillChildrenDie) => "kill_children_die".into(),
            Some(SignalAction::Exit { code }) => format!("exit {code}"),
        };
        s.signals
            .push(serde_json::json!({"signal": sig.as_str(), "t_ms": t_ms, "answer": answer}));
        let ended = match action {
            Some(SignalAction::Die | SignalAction::CleanupDie | SignalAction::KillChildrenDie) => {
                Some(serde_json::json!({"t_ms": t_ms, "signal": sig.as_str()}))
            }
            Some(SignalAction::Exit { code } | SignalAction::CleanupExit { code }) => {
                Some(serde_json::json!({"t_ms": t_ms, "exit": code}))
            }
            _ => None,
        };
        if let Some(ended) = ended {
            write(s, ended);
        }
    });
}

/// The start ends with `code` (from `main`).
pub(crate) fn finish(code: i32) {
    with(|s| {
        let ended = serde_json::json!({"t_ms": ms(s.start), "exit": code});
        write(s, ended);
    });
}

fn ms(start: Instant) -> f64 {
    (start.elapsed().as_secs_f64() * 10_000.0).round() / 10.0
}

/// Append the start's line (once).
fn write(s: &mut State, ended: serde_json::Value) {
    if s.written {
        return;
    }
    s.written = true;
    let argv = s.header_read.then(|| {
        s.argv
            .iter()
            .map(|a| crate::exit::masked(a))
            .collect::<Vec<_>>()
    });
    let mut line = serde_json::json!({
        "fake_pi_timeline": 1,
        "pid": std::process::id(),
        "started_unix_ms": s.started_unix_ms,
        "cassette": s.cassette,
        "argv": argv,
        "signals": s.signals,
        "ended": ended,
    })
    .to_string();
    line.push('\n');
    let Some(file) = std::env::var_os(TIMELINE_ENV) else {
        return;
    };
    // Only a regular file, never through a link, never waiting (as `FAKE_PI_REPORT`).
    let written = crate::files::open_append(std::path::Path::new(&file))
        .and_then(|mut f| f.write_all(line.as_bytes()).map_err(|e| e.to_string()));
    if let Err(e) = written {
        eprintln!(
            "fake-pi: {TIMELINE_ENV} {}: cannot append the timeline: {e}",
            std::path::Path::new(&file).display()
        );
    }
}
