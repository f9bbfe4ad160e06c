//! `pi-harness cassette lint`: checks cassette files and reports every problem as
//! `file:line: what`.
//!
//! This module owns the checks beyond "does it parse": it reports all format errors of a file
//! rather than the first (each line checked on its own, and the rules across lines kept as it
//! goes: `walk`), the two points where `cassette-v1.schema.json` is stricter than the parser
//! (`schema`), timing and stream sanity (`content`), and a redaction scan for values that look
//! like secrets or machine-specific data, or that the caller names (`secrets`). It reads one
//! line at a time: its memory is bounded by the line limit, whatever the file's size, and so is
//! what it reports ([`MAX_PROBLEMS`] problems, each message at most [`MAX_MESSAGE_BYTES`]).
//! [`lint_bytes`] lints bytes; [`lint_file`] reads a file (gzip by its magic bytes).

use std::io::BufRead;
use std::path::Path;

mod content;
mod report;
mod schema;
mod secrets;
mod walk;

use crate::{CassetteError, Header};
use report::Report;
pub use report::{Problem, MAX_MESSAGE_BYTES, MAX_PROBLEMS};

/// A single `dt_ms` above this is almost surely a timestamp, not a delay (10 minutes).
pub const MAX_DELAY_MS: f64 = 600_000.0;
/// A cassette longer than this in total is suspicious (1 hour).
pub const MAX_TOTAL_MS: f64 = 3_600_000.0;

/// The variable that sets how many bytes (after decompression) lint checks of one file.
pub const LINT_MAX_BYTES_ENV: &str = "PI_HARNESS_LINT_MAX_BYTES";

/// How many bytes of one file (after decompression) lint checks at most, unless
/// [`LINT_MAX_BYTES_ENV`] says: its time is bounded as its memory is. Every line costs a
/// parse and a scan, so a 458 KB zstd that inflates to gigabytes of short records took 842 s
/// of CPU; within this budget such a bomb ends in seconds (5 s of CPU on a debug build for a
/// 250 KB zstd of 3 GB), one problem naming it. The largest recorded cassette is 22 MB.
pub const DEFAULT_LINT_MAX_BYTES: u64 = 64 << 20;

/// [`DEFAULT_LINT_MAX_BYTES`], or what [`LINT_MAX_BYTES_ENV`] says (a positive integer).
fn lint_budget() -> u64 {
    std::env::var(LINT_MAX_BYTES_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|n| *n > 0)
        .unwrap_or(DEFAULT_LINT_MAX_BYTES)
}

/// Read and lint one file (gzip recognised by its magic bytes, `-` for stdin, within the
/// input limits). `Err` when the file cannot be read at all: that is the caller's input
/// error, not a problem of the cassette.
pub fn lint_file(path: &Path) -> Result<Vec<Problem>, CassetteError> {
    lint_file_with(path, &NamedSecrets::none())
}

/// Secrets lint looks for by their values, beyond the shapes it knows (API keys, tokens):
/// the variables named here and those the cassette's own header names as secret
/// (`expect.never_in_argv`: `{"env": NAME}`, and its literals), each variable's value looked
/// up by `value` (the caller's environment, typically). Values shorter than
/// [`crate::redact::MIN_SECRET_BYTES`] are not looked for.
pub struct NamedSecrets<'a> {
    /// Variables whose values must not appear (`cassette lint --secret-env NAME`).
    pub names: &'a [String],
    /// A variable's value, if it has one.
    pub value: &'a dyn Fn(&str) -> Option<String>,
}

impl NamedSecrets<'_> {
    /// No variable's value is known: only the header's literals are looked for.
    pub fn none() -> NamedSecrets<'static> {
        NamedSecrets {
            names: &[],
            value: &|_| None,
        }
    }

    /// (what to call it, value) for every secret a cassette with `header` has a value for
    /// here, long enough to be looked for.
    fn values(&self, header: &Header) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        let mut names: Vec<&str> = self.names.iter().map(String::as_str).collect();
        for s in &header.expect.never_in_argv {
            match s {
                crate::Secret::Env(n) => names.push(n),
                crate::Secret::Literal(v) => {
                    out.push(("a literal the header names as secret".into(), v.clone()))
                }
            }
        }
        names.sort_unstable();
        names.dedup();
        for n in names {
            if let Some(v) = (self.value)(n) {
                out.push((format!("${n}"), v));
            }
        }
        out.retain(|(_, v)| v.len() >= crate::redact::MIN_SECRET_BYTES);
        out
    }
}

/// [`lint_file`], also looking for the values of `secrets`.
pub fn lint_file_with(path: &Path, secrets: &NamedSecrets) -> Result<Vec<Problem>, CassetteError> {
    crate::input::require_regular_file(path)?;
    let limits = crate::Limits::from_env();
    let mut input = crate::input::open(path, &limits)?;
    lint_input(path, &mut input, limits.max_line_bytes, secrets)
}

/// Lint cassette bytes (plain or gzip); `path` only names the file in problems.
pub fn lint_bytes(path: &Path, data: &[u8]) -> Vec<Problem> {
    lint_bytes_with(path, data, &NamedSecrets::none())
}

/// [`lint_bytes`], also looking for the values of `secrets`.
pub fn lint_bytes_with(path: &Path, data: &[u8], secrets: &NamedSecrets) -> Vec<Problem> {
    let limits = crate::Limits::from_env();
    let input = crate::input::decompress(path, Box::new(data), &limits);
    let result =
        input.and_then(|mut input| lint_input(path, &mut input, limits.max_line_bytes, secrets));
    match result {
        Ok(problems) => problems,
        Err(e) => {
            let mut report = Report::new(path);
            report.add_error(e);
            report.finish()
        }
    }
}

/// Lint what `input` holds, a line at a time (lines up to `max_line` bytes). `Err` only
/// when reading fails for a reason that is not the input's content (a problem of the file,
/// such as a broken gzip stream or a limit passed, is reported as a problem).
fn lint_input(
    path: &Path,
    input: &mut dyn BufRead,
    max_line: usize,
    secrets: &NamedSecrets,
) -> Result<Vec<Problem>, CassetteError> {
    let mut report = Report::new(path);
    walk::walk(&mut report, input, (max_line, lint_budget()), secrets)?;
    Ok(report.finish())
}

#[cfg(test)]
mod tests {
    use super::secrets::{scan_text, secret_kind};

    /// Gemini CLI's real stderr names its error report by the words of the call and a stamp:
    /// no secret (before: "a long base64-like token"). A key is still one, stamp or not.
    #[test]
    fn gemini_s_error_report_name_is_no_secret_but_keys_still_are() {
        let line = "Error when talking to Gemini API Full report available at: <TMPDIR>/gemini-client-error-Turn.run-sendMessageStream-2026-11-26T05-52-28-797Z.json _ApiError";
        assert_eq!(scan_text(line, false), Vec::<String>::new());
        assert!(scan_text("at /tmp/report-2026-11-26T05:52:28.797Z.json", false).is_empty());
        for key in [
            "Xk9qZr2LmT8vWb4NcY7pHs3DjF6gKa1E",
            "aB3dE5gH7jK9mN1pQ3sT5vW7yZ-2026-11-26T05-52-28-797Z",
            "run-sendMessageStream9-2026-11-26T05-52-28-797Z",
        ] {
            assert_eq!(secret_kind(key), Some("a long base64-like token"), "{key}");
        }
    }

    #[test]
    fn camel_case_field_names_are_no_secrets_but_base64_still_is() {
        // Field names Claude Code writes (they were flagged before).
        for name in [
            "cacheCreationEphemeral1hInputTokens",
            "cacheCreationEphemeral5mInputTokens",
        ] {
            assert_eq!(secret_kind(name), None, "{name}");
        }
        assert_eq!(
            secret_kind("aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY"),
            Some("a long base64-like token")
        );
    }
    use super::*;

    const HEADER: &str = r#"{"format":"pi-cassette","version":1,"pi":{"version":"0.87.1","dialect":"delta-only"},"scenario":{"name":"t","description":"d"},"origin":{"kind":"imported","timing":"synthetic"}}"#;
    const SESSION: &str = r#"{"dt_ms":5,"stdout":{"type":"session","version":3,"id":"01a20059-666e-721c-9056-72c2e5075cbf","cwd":"/srv/demo"}}"#;

    fn lint(text: &str) -> Vec<String> {
        lint_bytes(Path::new("c.jsonl"), text.as_bytes())
            .iter()
            .map(|p| p.to_string())
            .collect()
    }

    #[test]
    fn a_clean_cassette_has_no_problems() {
        let text = format!("{HEADER}\n{SESSION}\n{{\"dt_ms\":5,\"exit\":0}}\n");
        assert_eq!(lint(&text), Vec::<String>::new());
    }

    #[test]
    fn a_recorded_run_starts_with_its_clis_first_event() {
        let recorded = r#""origin":{"kind":"recorded","timing":"measured"}}"#;
        let pi = HEADER.replace(
            r#""origin":{"kind":"imported","timing":"synthetic"}}"#,
            recorded,
        );
        let codex = pi.replace(
            r#""pi":{"version":"0.87.1","dialect":"delta-only"}"#,
            r#""codex":{"version":"0.169.0","dialect":"exec-json"}"#,
        );
        let thread = r#"{"dt_ms":5,"stdout":{"type":"thread.started","thread_id":"<THREAD_ID>"}}"#;
        let end = r#"{"dt_ms":5,"exit":0}"#;
        assert_eq!(
            lint(&format!("{codex}\n{thread}\n{end}\n")),
            Vec::<String>::new()
        );
        assert_eq!(
            lint(&format!("{codex}\n{SESSION}\n{end}\n")),
            ["c.jsonl:2: the first stdout line of a real Codex run is the `thread.started` header event"]
        );
        assert_eq!(
            lint(&format!("{pi}\n{thread}\n{end}\n")),
            ["c.jsonl:2: the first stdout line of a real pi run is the `session` header event"]
        );
        assert_eq!(
            lint(&format!("{pi}\n{SESSION}\n{end}\n")),
            Vec::<String>::new()
        );
    }

    #[test]
    fn reports_every_format_error_with_its_line() {
        let text = format!(
            "{HEADER}\n{SESSION}\n{{\"dt_ms\":-1,\"stdout\":{{}}}}\n\n{{\"dt_ms\":0,\"exit\":0}}\n{{\"dt_ms\":0,\"exit\":1}}\n"
        );
        let p = lint(&text);
        assert_eq!(p.len(), 3, "{p:#?}");
        assert!(
            p[0].starts_with("c.jsonl:3: record field `dt_ms`"),
            "{}",
            p[0]
        );
        assert_eq!(
            p[1],
            "c.jsonl:4: empty line (every line is one JSON object)"
        );
        assert_eq!(
            p[2],
            "c.jsonl:6: record after the final `exit` record on line 5 (exit, signal and hang end a cassette)"
        );
    }

    #[test]
    fn missing_ending_and_missing_final_newline() {
        let p = lint(&format!("{HEADER}\n{SESSION}"));
        assert_eq!(
            p,
            [
                "c.jsonl:2: the last line has no newline (every cassette line ends with \\n)",
                "c.jsonl:2: the last record must be `exit`, `signal` or `hang` (how the process ends)"
            ]
        );
        assert_eq!(
            lint(""),
            ["c.jsonl:1: empty file: a cassette starts with a header line"]
        );
    }

    #[test]
    fn schema_points_the_parser_lets_through() {
        let header = HEADER.replace(
            r#""origin""#,
            r#""expect":{"flags":{"--mode":"json"},"prompt":null},"origin""#,
        );
        let p = lint(&format!(
            "{header}\n{SESSION}\n{{\"dt_ms\":5,\"exit\":0}}\n"
        ));
        assert_eq!(p.len(), 2, "{p:#?}");
        assert!(p.iter().any(|m| m.contains("`expect.prompt` is null")));
        assert!(p
            .iter()
            .any(|m| m.contains("\"--mode\" is not a long flag name")));
    }

    #[test]
    fn timing_and_stream_sanity() {
        let text = format!(
            "{HEADER}\n{{\"dt_ms\":5,\"stdout\":{{\"type\":\"agent_start\"}}}}\n{{\"dt_ms\":3700000,\"exit\":0}}\n"
        );
        let p = lint(&text);
        assert!(
            p.iter()
                .any(|m| m.starts_with("c.jsonl:2: the first stdout line of a real pi run")),
            "{p:#?}"
        );
        assert!(
            p.iter()
                .any(|m| m.starts_with("c.jsonl:3: `dt_ms` 3700000 is over 10 minutes")),
            "{p:#?}"
        );
        assert!(
            p.iter()
                .any(|m| m.starts_with("c.jsonl: the delays add up to")),
            "{p:#?}"
        );
        // A wall-clock timestamp pasted as a delay is not a cassette at all.
        let p = lint(&format!(
            "{HEADER}\n{SESSION}\n{{\"dt_ms\":1795302188705,\"exit\":0}}\n"
        ));
        assert!(
            p.iter()
                .any(|m| m.starts_with("c.jsonl:3: record field `dt_ms`: at most 1000000000 ms")),
            "{p:#?}"
        );
        let wrong_dialect = HEADER.replace("delta-only", "snapshot+delta");
        let p = lint(&format!(
            "{wrong_dialect}\n{SESSION}\n{{\"dt_ms\":5,\"exit\":0}}\n"
        ));
        assert_eq!(p, ["c.jsonl:1: header: pi 0.87.1 speaks delta-only, but pi.dialect says snapshot+delta"]);
    }

    /// What lint missed before: a key as a `redactions` meaning, an AWS secret key, an
    /// `ASIA` key id, a short Bearer token, a key split across two stderr records, a key
    /// in a spawn id.
    /// One problem, one message: an unreadable final record is not also "no ending".
    #[test]
    fn a_bad_final_record_is_reported_once() {
        for last in [r#"{"dt_ms":0,"exit":256}"#, r#"{"dt_ms":1e308,"exit":0}"#] {
            let p = lint(&format!("{HEADER}\n{SESSION}\n{last}\n"));
            assert_eq!(p.len(), 1, "{p:#?}");
            assert!(p[0].starts_with("c.jsonl:3: record field"), "{p:#?}");
        }
    }

    #[test]
    fn finds_the_secrets_it_used_to_miss() {
        let header = HEADER.replace(
            r#""origin""#,
            r#""redactions":{"<API_KEY>":"sk-ant-api03-realKeyValue1234567890"},"origin""#,
        );
        let records = [
            r#"{"dt_ms":5,"stdout":{"type":"session","version":3,"id":"s","cwd":"<API_KEY>"}}"#,
            r#"{"dt_ms":5,"stdout":{"type":"x","aws":"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}}"#,
            r#"{"dt_ms":5,"stdout":{"type":"x","id":"ASIAIOSFODNN7EXAMPLE"}}"#,
            r#"{"dt_ms":5,"stdout":{"type":"x","h":"Authorization: Bearer abc123"}}"#,
            r#"{"dt_ms":5,"stderr":"401 invalid key sk-proj-abcdefg"}"#,
            r#"{"dt_ms":5,"stderr":"hijklmnop1234\n"}"#,
            r#"{"dt_ms":5,"spawn":{"id":"sk-proj-abcdefghijklmnop1234"}}"#,
            r#"{"dt_ms":5,"exit":0}"#,
        ];
        let p = lint(&format!(
            "{header}
{}
",
            records.join(
                "
"
            )
        ));
        let expected = [
            "c.jsonl:1: header: redactions: an API key (sk-...) sk-ant-a...",
            "c.jsonl:3: stdout: an AWS secret access key wJalrXUt...",
            "c.jsonl:4: stdout: an AWS access key id ASIAIOSF...",
            "c.jsonl:5: stdout: a Bearer token abc123:",
            "c.jsonl:6: stderr: an API key (sk-...) sk-proj-...: secrets must be replaced by placeholders (across records from here)",
            "c.jsonl:8: spawn: an API key (sk-...) sk-proj-...",
        ];
        for e in expected {
            assert!(
                p.iter().any(|m| m.starts_with(e)),
                "missing {e:?} in {p:#?}"
            );
        }
        assert_eq!(p.len(), expected.len(), "{p:#?}");
        // Placeholders and lowercase words after "bearer" are not tokens.
        assert!(scan_text("Authorization: Bearer <TOKEN>; bearer tokens expire", false).is_empty());
    }

    #[test]
    fn finds_secret_looking_values() {
        let text = format!(
            "{HEADER}\n{SESSION}\n{}\n{}\n{{\"dt_ms\":5,\"stderr\":\"reading /home/alice/.pi/agent/models.json\\n\"}}\n{{\"dt_ms\":5,\"exit\":0}}\n",
            r#"{"dt_ms":5,"stdout":{"type":"x","key":"sk-proj-abcdefghijklmnop1234"}}"#,
            r#"{"dt_ms":5,"stdout_text":"token 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}"#,
        );
        let p = lint(&text);
        assert_eq!(p.len(), 3, "{p:#?}");
        assert!(
            p[0].starts_with("c.jsonl:3: stdout: an API key (sk-...) sk-proj-..."),
            "{}",
            p[0]
        );
        assert!(
            p[1].starts_with("c.jsonl:4: stdout: a long hex token 9f86d081..."),
            "{}",
            p[1]
        );
        assert!(
            p[2].starts_with("c.jsonl:5: stderr: absolute home path \"/home/alice\""),
            "{}",
            p[2]
        );
        // Not secrets: uuids without a redaction claim, long runs of bulk data, short ids.
        assert!(scan_text("01a20059-666e-721c-9056-72c2e5075cbf call_1 c1", false).is_empty());
        assert!(scan_text(&"0123456789abcdefABCDEF".repeat(100), false).is_empty());
    }

    #[test]
    fn uuids_count_once_redactions_are_claimed() {
        let header = HEADER.replace(
            r#""origin""#,
            r#""redactions":{"<CWD>":"working directory","<UNUSED>":"x"},"origin""#,
        );
        let session = SESSION.replace("/srv/demo", "<CWD>");
        let p = lint(&format!(
            "{header}\n{session}\n{{\"dt_ms\":5,\"exit\":0}}\n"
        ));
        assert_eq!(
            p,
            [
                "c.jsonl:1: header: redaction placeholder \"<UNUSED>\" is listed but used nowhere",
                "c.jsonl:2: stdout: uuid 01a20059-666e-721c-9056-72c2e5075cbf left in a cassette that claims redactions: replace it with a placeholder",
            ]
        );
    }

    /// The boundary between two long records of one stream is scanned as one text: a key cut
    /// there is found, a long run of bulk data cut there is not a key.
    #[test]
    fn a_key_cut_between_two_long_records_is_found_and_bulk_data_is_not() {
        let pad = "words and more words ".repeat(200);
        let stderr = |text: &str| format!("{{\"dt_ms\":5,\"stderr\":{}}}", serde_json::json!(text));
        let key = format!(
            "{HEADER}\n{SESSION}\n{}\n{}\n{{\"dt_ms\":5,\"exit\":0}}\n",
            stderr(&format!("{pad}key sk-proj-abcdefg")),
            stderr(&format!("hijklmnop1234 {pad}")),
        );
        assert_eq!(
            lint(&key),
            ["c.jsonl:3: stderr: an API key (sk-...) sk-proj-...: secrets must be replaced by placeholders (across records from here)"]
        );
        let bulk = "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo0NTY3ODkw".repeat(60);
        let (a, b) = bulk.split_at(1500);
        let text = format!(
            "{HEADER}\n{SESSION}\n{}\n{}\n{{\"dt_ms\":5,\"exit\":0}}\n",
            stderr(&format!("{pad}{a}")),
            stderr(&format!("{b}{pad}")),
        );
        assert_eq!(lint(&text), Vec::<String>::new());
    }

    /// A key streamed a few bytes a record (as a model's deltas are), among thousands of short
    /// records, is found once across them; the short records are scanned together, a window's
    /// worth at a time (before, each record rescanned a 1 KiB window: 5-9 MB/s).
    #[test]
    fn a_key_streamed_over_many_short_records_is_found_once() {
        let stderr =
            |text: &str| format!("{{\"dt_ms\":5,\"stderr\":{}}}\n", serde_json::json!(text));
        let mut body = String::new();
        for _ in 0..3000 {
            body.push_str(&stderr("ok "));
        }
        for piece in [
            "key s", "k-pr", "oj-ab", "cdefgh", "ijklmn", "op1234", " done ",
        ] {
            body.push_str(&stderr(piece));
        }
        for _ in 0..3000 {
            body.push_str(&stderr("ok "));
        }
        let p = lint(&format!(
            "{HEADER}\n{SESSION}\n{body}{{\"dt_ms\":5,\"exit\":0}}\n"
        ));
        assert_eq!(
            p,
            ["c.jsonl:3: stderr: an API key (sk-...) sk-proj-...: secrets must be replaced by placeholders (across records from here)"]
        );
    }

    /// What lint keeps is bounded: past [`MAX_PROBLEMS`], problems are counted and said in
    /// one last line.
    #[test]
    fn problems_past_the_cap_are_counted() {
        let bad = "{\"dt_ms\":-1,\"stdout\":{}}\n".repeat(MAX_PROBLEMS + 10);
        let p = lint(&format!(
            "{HEADER}\n{SESSION}\n{bad}{{\"dt_ms\":5,\"exit\":0}}\n"
        ));
        assert_eq!(p.len(), MAX_PROBLEMS + 1);
        assert_eq!(
            p[MAX_PROBLEMS],
            "c.jsonl: 10 more problems not shown (lint shows the first 1000)"
        );
    }
}
