//! The checks on what a cassette says, beyond its format, kept up as its lines go by: timing
//! (delays that look like timestamps, a total over an hour, `measured` timing on a hand-made
//! cassette), stream sanity for a real run (the dialect its pi version speaks, the `session`
//! line first), and the secrets (the shapes `secrets` knows, and the values the caller names).

use super::report::Report;
use super::secrets::Scan;
use super::{NamedSecrets, MAX_DELAY_MS, MAX_TOTAL_MS};
use crate::{ActionRef, Dialect, Header, OriginKind, RecordRef, TimingKind};

/// The state of the content checks of one file.
pub(super) struct Content {
    /// A real run (not hand-made): the stream rules apply.
    real: bool,
    /// The `type` of the first stdout line of a real run: pi's `session`, Codex's
    /// `thread.started`; `None` for a two-way cassette (RPC, stream-json) and for Gemini CLI.
    first_event: Option<&'static str>,
    /// The delays so far, added up.
    total_ms: f64,
    /// A stdout record was seen (the first one is checked).
    seen_stdout: bool,
    /// The redaction scan.
    scan: Scan,
    /// The secrets looked for by value: (what to call it, value).
    named: Vec<(String, String)>,
}

impl Content {
    /// Start on a file whose header (line 1) is `header`: its own checks are made now.
    pub(super) fn new(report: &mut Report, header: &Header, secrets: &NamedSecrets) -> Self {
        if header.origin.timing == TimingKind::Measured
            && header.origin.kind == OriginKind::HandMade
        {
            report.add(
                1,
                "header: origin.timing is `measured` but the cassette is hand-made",
            );
        }
        let real = header.origin.kind != OriginKind::HandMade;
        if real {
            if let Some(d) = Dialect::for_pi_version(&header.pi.version) {
                if d != header.pi.dialect {
                    report.add(
                        1,
                        format!(
                            "header: pi {} speaks {d}, but pi.dialect says {}",
                            header.pi.version, header.pi.dialect
                        ),
                    );
                }
            }
        }
        Content {
            real,
            first_event: if header.mode.is_some() {
                None
            } else {
                match header.agent() {
                    pi_grammar::Agent::Pi | pi_grammar::Agent::Claude => Some("session"),
                    pi_grammar::Agent::Codex => Some("thread.started"),
                    // Gemini CLI may print a terminal warning before `init` (without its
                    // relaunch).
                    pi_grammar::Agent::Gemini => None,
                }
            },
            total_ms: 0.0,
            seen_stdout: false,
            scan: Scan::new(report, header),
            named: secrets.values(header),
        }
    }

    /// Look for the named secrets in line `lineno` as written (`raw`, raw or JSON-escaped) and
    /// in its decoded `payload`: one problem per secret found (its value never shown).
    pub(super) fn line(
        &mut self,
        report: &mut Report,
        lineno: usize,
        raw: &[u8],
        payload: Option<&[u8]>,
    ) {
        for name in crate::redact::secrets_in_line(raw, payload, &self.named) {
            report.add(
                lineno,
                format!("holds the value of {name} (a secret): put a placeholder in its place"),
            );
        }
    }

    /// Check one record that parsed.
    pub(super) fn record(&mut self, report: &mut Report, r: &RecordRef) {
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
        self.total_ms += r.dt_ms;
        if let ActionRef::Stdout { body, .. } = &r.action {
            let first = !std::mem::replace(&mut self.seen_stdout, true);
            if let (true, true, Some(want)) = (first, self.real, self.first_event) {
                let is_first = serde_json::from_slice::<serde_json::Value>(body)
                    .is_ok_and(|v| v.get("type").and_then(|t| t.as_str()) == Some(want));
                if !is_first {
                    let cli = if want == "session" { "pi" } else { "Codex" };
                    report.add(
                        r.line,
                        format!("the first stdout line of a real {cli} run is the `{want}` header event"),
                    );
                }
            }
        }
        self.scan.record(report, r);
    }

    /// The checks at the end of the file.
    pub(super) fn finish(self, report: &mut Report) {
        if self.total_ms > MAX_TOTAL_MS {
            report.add(
                0,
                format!(
                    "the delays add up to {:.0} s (over an hour): timing looks wrong",
                    self.total_ms / 1000.0
                ),
            );
        }
        self.scan.finish(report);
    }
}
