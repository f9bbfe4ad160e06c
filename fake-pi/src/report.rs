//! `FAKE_PI_REPORT`: fake-pi's own lines (`fake-pi: expectation mismatch: ...`, `fake-pi:
//! client mismatch: ...`, every other `fake-pi: ...` failure, and every hint, which stderr
//! carries only when asked) also go to a file, for a test fixture that cannot read fake-pi's
//! stderr because the wrapper under test reads it.
//!
//! The lines are kept as they are said ([`note`]); when the start ends ([`finish`]) and it
//! said any, one JSON line is appended to the file `FAKE_PI_REPORT` names, in one `write`
//! (`O_APPEND`: starts that end together do not interleave):
//! `{"fake_pi_report":1,"pid":123,"exit":99,"cassette":"/path","lines":["fake-pi: ..."]}`.
//! Nothing else is written: no argv (it may hold a secret) and nothing for a start that had
//! nothing of its own to say. Only a regular file is appended to, never through a symbolic
//! link and never waiting (a FIFO is refused at once: it hung fake-pi's exit); a file that
//! cannot be written is said in one line on stderr and does not change the exit status.

use std::io::Write;
use std::sync::Mutex;

/// The variable naming the report file.
pub(crate) const REPORT_ENV: &str = "FAKE_PI_REPORT";

/// The lines said so far, and the cassette of this start when it is known.
static SAID: Mutex<(Vec<String>, Option<String>)> = Mutex::new((Vec::new(), None));

/// Keep one line of fake-pi's own for the report.
pub(crate) fn note(line: &str) {
    SAID.lock()
        .unwrap_or_else(|e| e.into_inner())
        .0
        .push(line.to_string());
}

/// The cassette this start replays (named in the report).
pub(crate) fn cassette(path: &std::path::Path) {
    SAID.lock().unwrap_or_else(|e| e.into_inner()).1 = Some(path.display().to_string());
}

/// The start ends with `code`: append its line to `FAKE_PI_REPORT` when it said anything.
pub(crate) fn finish(code: i32) {
    let Some(file) = std::env::var_os(REPORT_ENV).filter(|f| !f.is_empty()) else {
        return;
    };
    let said = SAID.lock().unwrap_or_else(|e| e.into_inner());
    if said.0.is_empty() {
        return;
    }
    let mut line = serde_json::json!({
        "fake_pi_report": 1,
        "pid": std::process::id(),
        "exit": code,
        "cassette": said.1,
        "lines": said.0,
    })
    .to_string();
    line.push('\n');
    let path = std::path::Path::new(&file);
    let written = crate::files::open_append(path)
        .and_then(|mut f| f.write_all(line.as_bytes()).map_err(|e| e.to_string()));
    if let Err(e) = written {
        eprintln!(
            "fake-pi: {REPORT_ENV} {}: cannot append the report: {e}",
            path.display()
        );
    }
}
