//! Expected streams: the record of one case ([`Expected`]: its cassette, capabilities,
//! request template and messages), built from a reference run ([`expected_of`]), written as
//! `<case>.json` or, when large, `<case>.json.gz` ([`write_expected`]), read back through the
//! cassette crate's one reader and its size limits ([`load_expected`]).

use std::io::Read;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use pi_cassette::Cassette;

use crate::capability::capabilities_of;
use crate::case::Case;
use crate::request::RequestDoc;

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
/// its size limits.
pub fn load_expected(dir: &Path, case: &str) -> Result<Expected, String> {
    let gz = dir.join(format!("{case}.json.gz"));
    let path = if gz.is_file() {
        gz
    } else {
        dir.join(format!("{case}.json"))
    };
    let mut input =
        pi_cassette::input::open(&path, &pi_cassette::Limits::from_env()).map_err(|e| match e {
            pi_cassette::CassetteError::Io { source, .. } => format!(
                "{}: {source} (export the expected streams with `pi-harness conform --export {}`)",
                path.display(),
                dir.display()
            ),
            e => e.to_string(),
        })?;
    let mut text = String::new();
    input
        .read_to_string(&mut text)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
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
    let c = Cassette::load(&case.cassette).map_err(|e| e.to_string())?;
    let capabilities = capabilities_of(case, &c, &messages);
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
