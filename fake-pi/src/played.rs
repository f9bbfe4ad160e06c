//! `FAKE_PI_PLAYED`: the trace a replay leaves, so that a test can tell a cassette its code
//! never played (or a sequence played only in part) from one it did.
//!
//! When the variable names a file, every start that begins to play its cassette's records
//! (past the command line, the matching and the session: [`crate::replay::run`]) appends one
//! JSON line to it, in one `write` (`O_APPEND`), before the first record plays, so that a
//! replay that ends by a signal or hangs is counted too:
//! `{"fake_pi_played":1,"pid":123,"cassette":"/path/x.cassette.jsonl"}`. Nothing else: a
//! passing test's stderr and report stay as they were. Only a regular file is appended to,
//! never through a symbolic link; one that cannot be written is said in one line on stderr
//! (`fake-pi: FAKE_PI_PLAYED ...`) and the replay goes on.

use std::io::Write;
use std::path::Path;

/// The variable naming the trace file.
pub(crate) const PLAYED_ENV: &str = "FAKE_PI_PLAYED";

/// This start plays `cassette`: its line appended to `FAKE_PI_PLAYED`, when set.
pub(crate) fn mark(cassette: &Path) {
    let Some(file) = std::env::var_os(PLAYED_ENV).filter(|f| !f.is_empty()) else {
        return;
    };
    let mut line = serde_json::json!({
        "fake_pi_played": 1,
        "pid": std::process::id(),
        "cassette": cassette.display().to_string(),
    })
    .to_string();
    line.push('\n');
    let path = Path::new(&file);
    let written = crate::files::open_append(path)
        .and_then(|mut f| f.write_all(line.as_bytes()).map_err(|e| e.to_string()));
    if let Err(e) = written {
        eprintln!(
            "fake-pi: {PLAYED_ENV} {}: cannot append the trace: {e}",
            path.display()
        );
    }
}
