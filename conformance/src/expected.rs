//! Expected streams: the record of one case ([`Expected`]: its cassette, capabilities,
//! request template and messages), built from a reference run ([`expected_of`]), written as
//! `<case>.json` or, when large, `<case>.json.gz` ([`write_expected`]), read back through the
//! cassette crate's one reader and its size limits ([`load_expected`]), and compared with a
//! fresh record when it is stale ([`stale_fields`]).

use std::io::Read;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use pi_cassette::CassetteReader;

use crate::capability::capabilities_of;
use crate::case::Case;
use crate::compare::{diff_documents, FieldDiff};
use crate::request::RequestDoc;
use crate::shown::{diff_lines, shell_quote, SHOWN_DIFFS};

/// An expected stream as exported to `conformance/expected/<case>.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expected {
    /// The case name.
    pub case: String,
    /// The cassette, relative to the cassettes directory.
    pub cassette: String,
    /// The capabilities the case needs.
    pub capabilities: Vec<String>,
    /// The request with placeholders: `<CASSETTE>` (a copy of the cassette without
    /// `expect.argv_messages`), `<DIR>` (the case's temp dir).
    pub request: RequestDoc,
    /// The expected normalized stream.
    pub messages: Vec<Value>,
}

/// Load an expected stream file (`CASE.json.gz` or `CASE.json`), through the one reader and
/// its size limits, and at most [`MAX_EXPECTED_BYTES`] of it (after decompression): an
/// expected stream is parsed as it is read, never held as text.
pub fn load_expected(dir: &Path, case: &str) -> Result<Expected, String> {
    let gz = dir.join(format!("{case}.json.gz"));
    let path = if gz.is_file() {
        gz
    } else {
        dir.join(format!("{case}.json"))
    };
    let hint = |source: &dyn std::fmt::Display| {
        format!(
            "{}: {source} (export the expected streams with `pi-harness conform --export {}`)",
            path.display(),
            shell_quote(&dir.to_string_lossy())
        )
    };
    if let Some(kind) = pi_cassette::input::not_a_regular_file(&path) {
        return Err(format!(
            "{}: {kind}, not an expected stream file",
            path.display()
        ));
    }
    let input =
        pi_cassette::input::open(&path, &pi_cassette::Limits::from_env()).map_err(|e| match e {
            pi_cassette::CassetteError::Io { source, .. } => hint(&source),
            e => e.to_string(),
        })?;
    let mut counted = Counted {
        inner: input.take(MAX_EXPECTED_BYTES + 1),
        read: 0,
    };
    let parsed = serde_json::from_reader(&mut counted);
    if counted.read > MAX_EXPECTED_BYTES {
        return Err(format!(
            "{}: more than {MAX_EXPECTED_BYTES} bytes: no expected stream is that large (a file this size is not one)",
            path.display()
        ));
    }
    parsed.map_err(|e| format!("{}: {e}", path.display()))
}

/// The most bytes of one expected stream file, after decompression (64 MiB; the largest
/// bundled one holds 4 MiB).
pub const MAX_EXPECTED_BYTES: u64 = 64 << 20;

/// A reader that counts what came through.
struct Counted<R> {
    inner: R,
    read: u64,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read += n as u64;
        Ok(n)
    }
}

/// Write an expected stream file (pretty JSON, one message per line inside `messages`).
pub fn expected_text(e: &Expected) -> String {
    let mut s = serde_json::to_string_pretty(e).expect("serializes");
    s.push('\n');
    s
}

/// Files over this size are written gzip-compressed (`<case>.json.gz`).
pub const GZIP_OVER: usize = 1 << 20;

/// Write an expected file under `dir`: `<case>.json`, or `<case>.json.gz` when large
/// (the other form is removed). Returns the path written.
pub fn write_expected(dir: &Path, e: &Expected) -> Result<PathBuf, String> {
    let text = expected_text(e);
    let plain = dir.join(format!("{}.json", e.case));
    let gz = dir.join(format!("{}.json.gz", e.case));
    if let Some(p) = plain.parent() {
        std::fs::create_dir_all(p).map_err(|e| format!("{}: {e}", p.display()))?;
    }
    let (path, other) = if text.len() > GZIP_OVER {
        (gz, plain)
    } else {
        (plain, gz)
    };
    let _ = std::fs::remove_file(&other);
    let bytes = if path.extension().is_some_and(|x| x == "gz") {
        pi_cassette::output::gzip(text.as_bytes())
            .map_err(|e| format!("{}: {e}", path.display()))?
    } else {
        text.into_bytes()
    };
    pi_cassette::output::write(&path, &bytes, &[]).map_err(|e| e.to_string())?;
    Ok(path)
}

/// Build the expected record of a case from the reference output.
pub fn expected_of(case: &Case, root: &Path, messages: Vec<Value>) -> Result<Expected, String> {
    // The header is all it needs: the records are not read.
    let reader = CassetteReader::open(&case.cassette).map_err(|e| e.to_string())?;
    let capabilities = capabilities_of(case, reader.header(), &messages);
    Ok(Expected {
        case: case.name.clone(),
        cassette: case
            .cassette
            .strip_prefix(root)
            .unwrap_or(&case.cassette)
            .to_string_lossy()
            .into_owned(),
        capabilities,
        request: case.request.clone(),
        messages,
    })
}

/// Where a committed expected record differs from a fresh one, field by field (whole
/// documents, nothing ignored): the first `limit` differences, and how many there are in all.
pub fn stale_fields(
    committed: &Expected,
    fresh: &Expected,
    limit: usize,
) -> (Vec<FieldDiff>, usize) {
    let as_value = |e: &Expected| serde_json::to_value(e).expect("an expected record serializes");
    diff_documents(&as_value(committed), &as_value(fresh), limit)
}

/// A stale expected record as the suite's test shows it: the case's name, then the fields
/// where the committed record (`expected`) differs from this run's (`got`), as the report
/// shows differences (the first [`SHOWN_DIFFS`], the rest counted).
pub fn stale_text(committed: &Expected, fresh: &Expected) -> String {
    let (diffs, total) = stale_fields(committed, fresh, SHOWN_DIFFS);
    format!(
        "{}:\n{}",
        fresh.case,
        diff_lines(&diffs, total - diffs.len())
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::PiDoc;
    use serde_json::json;

    #[test]
    fn a_stale_record_shows_its_differing_fields_bounded() {
        let request = RequestDoc {
            version: 1,
            case: "c".into(),
            prompt: "hi".into(),
            pi: PiDoc {
                version: "0.87.1".into(),
            },
            provider: None,
            model: None,
            no_session: false,
            session: None,
            thinking: None,
            tools: None,
            exclude_tools: Vec::new(),
            env: Default::default(),
            cwd: None,
            cancel_after_idle_ms: None,
            rpc: None,
            agent: None,
            argv: None,
            stdin: None,
            approval: None,
        };
        let text = |t: &str| json!({"type": "assistant", "text": t});
        let committed = Expected {
            case: "recorded/x.pi87".into(),
            cassette: "recorded/x.pi87.cassette.jsonl".into(),
            capabilities: vec!["text".into()],
            request,
            messages: (0..20).map(|i| text(&format!("old {i}"))).collect(),
        };
        let mut fresh = committed.clone();
        fresh.capabilities.push("pi-0.87".into());
        fresh.messages = (0..20).map(|i| text(&format!("new {i}"))).collect();
        let shown = stale_text(&committed, &fresh);
        let lines: Vec<&str> = shown.lines().collect();
        assert_eq!(lines[0], "recorded/x.pi87:");
        assert_eq!(
            lines[1],
            r#"      capabilities[1]: expected (absent), got "pi-0.87""#
        );
        assert_eq!(
            lines[2],
            r#"      messages[0].text: expected "old 0", got "new 0""#
        );
        assert_eq!(lines.len(), 1 + SHOWN_DIFFS + 1);
        assert_eq!(lines[SHOWN_DIFFS + 1], "      ... 9 more differences");
    }
}
