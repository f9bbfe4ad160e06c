//! Writing a recorded cassette, checked: refused while the API key or the run's temp path is
//! still inside; gzip when large (or asked for by a `.gz` name); the exact bytes to write
//! read back and compared with what was recorded; written through `pi_cassette::output`;
//! a stale sibling (plain vs `.gz`) removed.

use std::path::{Path, PathBuf};

use pi_cassette::redact;
use pi_cassette::{Action, Cassette};

use super::{RecordError, GZIP_THRESHOLD};

/// Write the cassette (gzip when large) through a temp file, check it, then rename;
/// returns the path written (`out`, maybe with `.gz`).
pub(crate) fn write_checked(
    c: &Cassette,
    out: &Path,
    key: &str,
    tmp: &Path,
) -> Result<PathBuf, RecordError> {
    let text = c.to_jsonl();
    let refuse = |reason: String| RecordError::Refused {
        verb: "write",
        path: out.to_path_buf(),
        reason,
    };
    if redact::contains_secret(text.as_bytes(), key) {
        return Err(refuse("the API key is still inside after redaction".into()));
    }
    let tmp_text = tmp.display().to_string();
    if text.contains(&tmp_text) {
        return Err(refuse(format!(
            "the temp path {tmp_text} is still inside after redaction"
        )));
    }
    let gz = text.len() > GZIP_THRESHOLD || out.extension().is_some_and(|e| e == "gz");
    let path = if gz && !out.extension().is_some_and(|e| e == "gz") {
        let mut s = out.as_os_str().to_owned();
        s.push(".gz");
        PathBuf::from(s)
    } else {
        out.to_path_buf()
    };
    if let Some(dir) = path.parent() {
        if !dir.as_os_str().is_empty() {
            std::fs::create_dir_all(dir).map_err(RecordError::io("creating", dir))?;
        }
    }
    let bytes = if gz {
        pi_cassette::output::gzip(text.as_bytes()).map_err(RecordError::CassetteIo)?
    } else {
        text.into_bytes()
    };
    if let Err(reason) = check_bytes(c, &path, &bytes, key) {
        return Err(RecordError::Refused {
            verb: "keep",
            path,
            reason,
        });
    }
    pi_cassette::output::write(&path, &bytes, &[])?;
    remove_stale_sibling(&path, gz);
    Ok(path)
}

/// Check the exact bytes that will be written: no key, and they read back as recorded.
fn check_bytes(c: &Cassette, path: &Path, bytes: &[u8], key: &str) -> Result<(), String> {
    let back = Cassette::parse(path, bytes).map_err(|e| e.to_string())?;
    if redact::contains_secret(back.to_jsonl().as_bytes(), key) {
        return Err("the API key is inside the written file".into());
    }
    // Lines stored as base64 (not UTF-8) are not redacted: scan what they replay too.
    for r in &back.records {
        if let Action::Stdout(b) | Action::Stderr(b) = &r.action {
            if redact::contains_secret(&b.data, key) {
                return Err(format!(
                    "the API key is inside the bytes replayed by line {}",
                    r.line
                ));
            }
        }
    }
    if back.stdout_bytes() != c.stdout_bytes() || back.records.len() != c.records.len() {
        return Err("the written cassette does not read back as recorded".into());
    }
    Ok(())
}

/// A stale sibling (plain vs .gz) from an earlier recording would shadow this one: remove it.
fn remove_stale_sibling(path: &Path, gz: bool) {
    let plain = match path.to_str().and_then(|p| p.strip_suffix(".gz")) {
        Some(p) => PathBuf::from(p),
        None => path.to_path_buf(),
    };
    let mut zipped = plain.as_os_str().to_owned();
    zipped.push(".gz");
    let other = if gz { plain } else { PathBuf::from(zipped) };
    if other != path && other.exists() {
        let _ = std::fs::remove_file(&other);
    }
}
