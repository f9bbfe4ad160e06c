//! `pi-harness cassette lint`: checks cassette files and reports every problem as
//! `file:line: what`.
//!
//! This module owns the checks beyond "does it parse": it reports all format errors
//! of a file rather than the first (each line checked on its own, then the rules
//! across lines), the two points where `cassette-v1.schema.json` is stricter than the
//! parser, timing sanity, stream sanity for real runs, and a redaction scan for values
//! that look like secrets or machine-specific data (the `secrets` module). [`lint_bytes`] is pure;
//! [`lint_file`] reads a file (gzip by `.gz`).

use std::io::Read;
use std::path::Path;

mod report;
mod secrets;

use crate::parse::{parse_header, parse_record, Replies};
use crate::{
    Action, Cassette, CassetteError, Dialect, Header, OriginKind, Record, TimingKind,
    FORMAT_VERSION,
};
pub use report::Problem;
use report::Report;
use secrets::check_redaction;

/// A single `dt_ms` above this is almost surely a timestamp, not a delay (10 minutes).
pub const MAX_DELAY_MS: f64 = 600_000.0;
/// A cassette longer than this in total is suspicious (1 hour).
pub const MAX_TOTAL_MS: f64 = 3_600_000.0;

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

    /// (what to call it, value) for every secret of `c` with a value known here.
    fn values(&self, c: &Cassette) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        let mut names: Vec<&str> = self.names.iter().map(String::as_str).collect();
        for s in &c.header.expect.never_in_argv {
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
        out
    }
}

/// [`lint_file`], also looking for the values of `secrets`.
pub fn lint_file_with(path: &Path, secrets: &NamedSecrets) -> Result<Vec<Problem>, CassetteError> {
    crate::input::require_regular_file(path)?;
    let mut input = crate::input::open(path, &crate::Limits::from_env())?;
    let mut data = Vec::new();
    match input.read_to_end(&mut data) {
        Ok(_) => Ok(lint_bytes_with(path, &data, secrets)),
        // Past a size limit, or a broken gzip stream: a problem of this file.
        Err(e)
            if e.kind() == std::io::ErrorKind::Other
                || e.kind() == std::io::ErrorKind::InvalidInput
                || e.kind() == std::io::ErrorKind::InvalidData =>
        {
            Ok(vec![Problem {
                file: path.to_path_buf(),
                line: 0,
                message: format!("cannot be read as a cassette: {e}"),
            }])
        }
        Err(source) => Err(CassetteError::Io {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Lint cassette bytes; `path` only names the file in problems.
pub fn lint_bytes(path: &Path, data: &[u8]) -> Vec<Problem> {
    lint_bytes_with(path, data, &NamedSecrets::none())
}

/// [`lint_bytes`], also looking for the values of `secrets`.
pub fn lint_bytes_with(path: &Path, data: &[u8], secrets: &NamedSecrets) -> Vec<Problem> {
    let mut report = Report {
        file: path,
        problems: Vec::new(),
    };
    let (header, records) = check_lines(&mut report, data);
    if report.problems.is_empty() {
        // The parser is the authority: lint never passes what it rejects.
        match Cassette::parse(path, data) {
            Ok(c) => {
                check_content(&mut report, &c);
                check_named_secrets(&mut report, &c, secrets);
            }
            Err(e) => report.add_error(e),
        }
    } else if let Some(header) = header {
        // Format errors found; still scan what did parse for secrets.
        let c = Cassette { header, records };
        check_redaction(&mut report, &c);
        check_named_secrets(&mut report, &c, secrets);
    }
    report.problems
}

/// A line that holds a secret's value: one problem per line and secret (the value is never
/// shown).
fn check_named_secrets(report: &mut Report, c: &Cassette, secrets: &NamedSecrets) {
    for (line, name) in crate::redact::lines_holding(c, &secrets.values(c)) {
        report.add(
            line,
            format!("holds the value of {name} (a secret): put a placeholder in its place"),
        );
    }
}

/// Every line on its own, then the rules across lines. Returns what parsed.
fn check_lines(report: &mut Report, data: &[u8]) -> (Option<Header>, Vec<Record>) {
    if data.is_empty() {
        report.add(1, "empty file: a cassette starts with a header line");
        return (None, Vec::new());
    }
    if !data.ends_with(b"\n") {
        let lines = data.split(|&b| b == b'\n').count();
        report.add(
            lines,
            "the last line has no newline (every cassette line ends with \\n)",
        );
    }
    let body = data.strip_suffix(b"\n").unwrap_or(data);
    let mut header = None;
    let mut records: Vec<Record> = Vec::new();
    let mut ending: Option<(usize, &'static str)> = None;
    let mut replies = Replies::default();
    // The last line is a record that could not be read: its error says enough.
    let mut unreadable_last = false;
    let total_lines = body.split(|&b| b == b'\n').count();
    for (idx, raw) in body.split(|&b| b == b'\n').enumerate() {
        let lineno = idx + 1;
        if raw.is_empty() {
            report.add(lineno, "empty line (every line is one JSON object)");
            continue;
        }
        let text = match std::str::from_utf8(raw) {
            Ok(t) => t,
            Err(e) => {
                report.add(
                    lineno,
                    format!(
                        "not UTF-8 at byte {} (binary data belongs in a *_b64 field)",
                        e.valid_up_to()
                    ),
                );
                continue;
            }
        };
        if idx == 0 {
            match parse_header(report.file, lineno, text) {
                Ok(h) => {
                    check_schema_extras(report, lineno, text);
                    header = Some(h);
                }
                Err(e) => {
                    // Without a header the rest cannot be read as records (raw pi output?).
                    report.add_error(e);
                    return (None, Vec::new());
                }
            }
            continue;
        }
        let version = header.as_ref().map_or(FORMAT_VERSION, |h| h.version);
        match parse_record(report.file, lineno, text, version) {
            Ok(r) => {
                let (spawn, reap) = match &r.action {
                    Action::Spawn(s) => (Some(s.id.as_str()), None),
                    Action::Reap(id) => (None, Some(id.as_str())),
                    _ => (None, None),
                };
                let client_line = matches!(r.action, Action::Stdin(_) | Action::StdinText(_));
                if let Err(what) = replies.check(client_line, spawn, reap, r.reply) {
                    report.add(lineno, what);
                }
                if let Some((at, key)) = ending {
                    report.add(
                        lineno,
                        format!("record after the final `{key}` record on line {at} (exit, signal and hang end a cassette)"),
                    );
                }
                if r.action.is_final() && ending.is_none() {
                    ending = Some((lineno, r.action.key()));
                }
                records.push(r);
            }
            Err(e) => {
                unreadable_last = idx + 1 == total_lines;
                report.add_error(e);
            }
        }
    }
    let lines = total_lines;
    if header.is_some() && lines == 1 {
        report.add(
            1,
            "no records after the header: a cassette must at least say how the process ends",
        );
    } else if ending.is_none() && lines > 1 && !unreadable_last {
        report.add(
            lines,
            "the last record must be `exit`, `signal` or `hang` (how the process ends)",
        );
    }
    (header, records)
}

/// What the schema rejects and the parser lets through: `null` for an optional
/// field, and flag names that are not plain long names.
fn check_schema_extras(report: &mut Report, lineno: usize, text: &str) {
    let Ok(value) = serde_json::from_str::<serde_json::Value>(text) else {
        return;
    };
    fn nulls(v: &serde_json::Value, at: &str, out: &mut Vec<String>) {
        if let Some(obj) = v.as_object() {
            for (k, v) in obj {
                let here = if at.is_empty() {
                    k.clone()
                } else {
                    format!("{at}.{k}")
                };
                if v.is_null() {
                    out.push(here);
                } else {
                    nulls(v, &here, out);
                }
            }
        }
    }
    let mut found = Vec::new();
    nulls(&value, "", &mut found);
    for field in found {
        report.add(
            lineno,
            format!("header field `{field}` is null: leave an optional field out instead"),
        );
    }
    if let Some(flags) = value.pointer("/expect/flags").and_then(|f| f.as_object()) {
        for name in flags.keys() {
            let ok = name
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphanumeric())
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
            if !ok {
                report.add(
                    lineno,
                    format!("header field `expect.flags`: {name:?} is not a long flag name without dashes (write \"mode\", not \"--mode\")"),
                );
            }
        }
    }
}

/// Checks on a parsed cassette: timing, stream sanity, redaction.
fn check_content(report: &mut Report, c: &Cassette) {
    check_timing(report, c);
    check_stream(report, c);
    check_redaction(report, c);
}

/// Delays that look like timestamps, a total over an hour, `measured` timing on a hand-made cassette.
fn check_timing(report: &mut Report, c: &Cassette) {
    let mut total = 0.0;
    for r in &c.records {
        if r.dt_ms > MAX_DELAY_MS {
            report.add(
                r.line,
                format!(
                    "`dt_ms` {} is over {} minutes: a delay since the previous record, not a timestamp?",
                    r.dt_ms,
                    MAX_DELAY_MS / 60_000.0
                ),
            );
        }
        total += r.dt_ms;
    }
    if total > MAX_TOTAL_MS {
        report.add(
            0,
            format!(
                "the delays add up to {:.0} s (over an hour): timing looks wrong",
                total / 1000.0
            ),
        );
    }
    if c.header.origin.timing == TimingKind::Measured
        && c.header.origin.kind == OriginKind::HandMade
    {
        report.add(
            1,
            "header: origin.timing is `measured` but the cassette is hand-made",
        );
    }
}

/// For a real run: the dialect its pi version speaks, and the `session` line first (not in RPC mode).
fn check_stream(report: &mut Report, c: &Cassette) {
    let h = &c.header;
    if h.origin.kind == OriginKind::HandMade {
        return; // faults break these rules on purpose
    }
    if let Some(d) = Dialect::for_pi_version(&h.pi.version) {
        if d != h.pi.dialect {
            report.add(
                1,
                format!(
                    "header: pi {} speaks {d}, but pi.dialect says {}",
                    h.pi.version, h.pi.dialect
                ),
            );
        }
    }
    let first = c.records.iter().find_map(|r| match &r.action {
        Action::Stdout(b) => Some((r.line, &b.data)),
        _ => None,
    });
    if let Some((line, data)) = first {
        let is_session = serde_json::from_slice::<serde_json::Value>(data)
            .ok()
            .is_some_and(|v| v.get("type").and_then(|t| t.as_str()) == Some("session"));
        // In RPC mode pi writes no `session` line (its first line answers a command).
        if !is_session && h.mode.is_none() {
            report.add(
                line,
                "the first stdout line of a real pi run is the `session` header event",
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::secrets::{scan_text, secret_kind};

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
                "c.jsonl:2: stdout: uuid 01a20059-666e-721c-9056-72c2e5075cbf left in a cassette that claims redactions: replace it with a placeholder",
                "c.jsonl:1: header: redaction placeholder \"<UNUSED>\" is listed but used nowhere",
            ]
        );
    }
}
