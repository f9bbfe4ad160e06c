//! A case's directory for one run ([`prepare`]): a copy of its cassette for fake-pi, `bin/pi`
//! (or `bin/claude`) linked to fake-pi, `sessions/`, a seeded session file when the
//! recording continued one, and the request document with this directory's paths filled in.

use std::path::{Path, PathBuf};

use pi_cassette::{CassetteReader, Header};

use crate::case::Case;
use crate::request::{instantiate, RequestDoc};

/// Where the case's files go: the cassette copy without `argv_messages` (the suite checks the
/// effective prompt, not whether it came in argv or on stdin), `bin/pi` -> fake-pi, `sessions/`.
pub fn prepare(case: &Case, dir: &Path, fake_pi: &Path) -> Result<RequestDoc, String> {
    let copy = dir.join("case.cassette.jsonl");
    let header = copy_without_argv_messages(&case.cassette, &copy)?;
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).map_err(|e| format!("{}: {e}", bin.display()))?;
    let name = if header.is_claude() { "claude" } else { "pi" };
    // The link lives in another directory: a relative target would point nowhere.
    let fake_pi =
        std::path::absolute(fake_pi).map_err(|e| format!("{}: {e}", fake_pi.display()))?;
    std::os::unix::fs::symlink(&fake_pi, bin.join(name))
        .map_err(|e| format!("{}: {e}", bin.join(name).display()))?;
    std::fs::create_dir_all(dir.join("sessions")).map_err(|e| e.to_string())?;
    let request = instantiate(&case.request, &copy, dir);
    if header.expect.session == Some(pi_cassette::SessionUse::Resumed) {
        seed_session(&header.pi.version, dir, &request)?;
    }
    Ok(request)
}

/// Write `from` to `to` (plain) with its header's `argv_messages` left out, the records
/// streamed through as they are (fake-pi checks them as it replays): one line in memory at a
/// time, whatever the cassette's size. The header written is returned.
fn copy_without_argv_messages(from: &Path, to: &Path) -> Result<Header, String> {
    use std::io::Write as _;
    let reader = CassetteReader::open(from).map_err(|e| e.to_string())?;
    let (mut header, mut rest) = reader
        .into_rest()
        .expect("a reader that has read no record gives its input back");
    header.expect.argv_messages = None;
    let err = |e: std::io::Error| format!("{}: {e}", to.display());
    let file = std::fs::File::create_new(to).map_err(err)?;
    let mut out = std::io::BufWriter::new(file);
    out.write_all(header.to_json().as_bytes()).map_err(err)?;
    out.write_all(b"\n").map_err(err)?;
    std::io::copy(&mut rest, &mut out).map_err(|e| format!("{}: {e}", from.display()))?;
    out.flush().map_err(err)?;
    Ok(header)
}

/// A recording that continued a session needs one to continue: write a minimal session
/// file where the case's pi will look for it (`--session-id` in the agent dir's sessions of
/// the case dir; 0.73.1's `--session DIR/ID.jsonl`).
fn seed_session(version: &str, dir: &Path, request: &RequestDoc) -> Result<(), String> {
    let Some(s) = &request.session else {
        return Ok(());
    };
    let cwd = request
        .cwd
        .clone()
        .unwrap_or_else(|| dir.display().to_string());
    let timestamp = "2026-01-01T00:00:00.000Z";
    let has_session_id = pi_grammar::Grammar::nearest(version).has_flag("--session-id");
    let path = match (&s.dir, has_session_id) {
        (Some(d), false) => PathBuf::from(d).join(format!("{}.jsonl", s.id)),
        _ => dir
            .join("agent/sessions")
            .join(pi_grammar::cwd_slug(&cwd))
            .join(pi_grammar::session_file_name(timestamp, &s.id)),
    };
    let header = format!(
        "{{\"type\":\"session\",\"version\":3,\"id\":{},\"timestamp\":\"{timestamp}\",\"cwd\":{}}}",
        serde_json::json!(s.id),
        serde_json::json!(cwd)
    );
    let parent = path.parent().unwrap_or(dir);
    std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    std::fs::write(&path, format!("{header}\n")).map_err(|e| format!("{}: {e}", path.display()))
}
