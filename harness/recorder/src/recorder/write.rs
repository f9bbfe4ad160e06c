//! Writing a recorded cassette, checked: refused while the API key or the run's temp path is
//! still inside; zstd when large (or the compression a `.zst` or `.gz` name asks for); the
//! exact bytes to write read back and compared with what was recorded; written through
//! `pi_cassette::output`; a stale sibling (the same cassette plain, `.gz` or `.zst`) removed.

use std::path::{Path, PathBuf};

use pi_cassette::redact;
use pi_cassette::{Action, Cassette};

use super::{RecordError, COMPRESS_THRESHOLD};

/// Write the cassette (zstd when large) through a temp file, check it, then rename;
/// returns the path written (`out`, maybe with `.zst`).
pub(crate) fn write_checked(
    c: &Cassette,
    out: &Path,
    key: &str,
    secrets: &[(String, String)],
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
    if let Some((line, name)) = redact::lines_holding(c, secrets).into_iter().next() {
        return Err(refuse(format!(
            "the value of ${name} (a secret) is still inside after redaction, at line {line}"
        )));
    }
    let tmp_text = tmp.display().to_string();
    if text.contains(&tmp_text) {
        return Err(refuse(format!(
            "the temp path {tmp_text} is still inside after redaction"
        )));
    }
    let named = out.extension().is_some_and(|e| e == "gz" || e == "zst");
    let path = if text.len() > COMPRESS_THRESHOLD && !named {
        let mut s = out.as_os_str().to_owned();
        s.push(".zst");
        PathBuf::from(s)
    } else {
        out.to_path_buf()
    };
    if let Some(dir) = path.parent() {
        if !dir.as_os_str().is_empty() {
            std::fs::create_dir_all(dir).map_err(RecordError::io("creating", dir))?;
        }
    }
    let bytes = pi_cassette::output::compress_for(&path, text.into_bytes())
        .map_err(RecordError::CassetteIo)?;
    if let Err(reason) = check_bytes(c, &path, &bytes, key) {
        return Err(RecordError::Refused {
            verb: "keep",
            path,
            reason,
        });
    }
    pi_cassette::output::write(&path, &bytes, &[])?;
    remove_stale_siblings(&path);
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

/// A stale sibling (the same cassette plain, `.gz` or `.zst`) from an earlier recording
/// would shadow this one: remove it.
fn remove_stale_siblings(path: &Path) {
    let Some(name) = path.to_str() else {
        return;
    };
    let plain = pi_cassette::input::without_compression_suffix(name);
    let others = std::iter::once(plain.to_string()).chain(
        pi_cassette::input::COMPRESSED_SUFFIXES
            .iter()
            .map(|s| format!("{plain}{s}")),
    );
    for other in others.filter(|o| o != name).map(PathBuf::from) {
        if other.exists() {
            let _ = std::fs::remove_file(&other);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A json-mode cassette of `records` stdout lines of 1 KiB each.
    fn cassette(records: usize) -> Cassette {
        let header = r#"{"format":"pi-cassette","version":1,"pi":{"version":"0.87.1","dialect":"delta-only"},"scenario":{"name":"t","description":"d"},"origin":{"kind":"hand-made","timing":"synthetic"}}"#;
        let line = format!(
            "{{\"dt_ms\":0,\"stdout\":{{\"type\":\"x\",\"pad\":\"{}\"}}}}\n",
            "y".repeat(1024)
        );
        let text = format!(
            "{header}\n{}{{\"dt_ms\":0,\"exit\":0}}\n",
            line.repeat(records)
        );
        Cassette::parse(Path::new("t"), text.as_bytes()).unwrap()
    }

    #[test]
    fn a_large_recording_is_zstd_and_replaces_its_stale_siblings() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("x.cassette.jsonl");
        for stale in ["x.cassette.jsonl", "x.cassette.jsonl.gz"] {
            std::fs::write(dir.path().join(stale), "old").unwrap();
        }
        let big = cassette(2000);
        let written = write_checked(&big, &out, "sk-test-key", &[], Path::new("/nowhere")).unwrap();
        assert_eq!(written, dir.path().join("x.cassette.jsonl.zst"));
        let bytes = std::fs::read(&written).unwrap();
        assert!(bytes.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]), "zstd magic");
        assert!(bytes.len() < 100_000, "{} bytes", bytes.len());
        assert_eq!(
            Cassette::load(&written).unwrap().stdout_bytes(),
            big.stdout_bytes()
        );
        let mut left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, ["x.cassette.jsonl.zst"]);

        // A small one is plain, and removes the large one's file; `.gz` asked by name is gzip.
        let small = cassette(3);
        let written =
            write_checked(&small, &out, "sk-test-key", &[], Path::new("/nowhere")).unwrap();
        assert_eq!(written, out);
        assert!(!dir.path().join("x.cassette.jsonl.zst").exists());
        let gz = dir.path().join("y.cassette.jsonl.gz");
        let written =
            write_checked(&small, &gz, "sk-test-key", &[], Path::new("/nowhere")).unwrap();
        assert_eq!(written, gz);
        assert!(std::fs::read(&gz).unwrap().starts_with(&[0x1f, 0x8b]));
    }
}
