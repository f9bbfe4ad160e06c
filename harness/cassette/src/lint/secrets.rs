//! The redaction scan of `cassette lint`: values that look like secrets (API keys, tokens,
//! AWS keys, long base64 runs) or machine-specific data (uuids in a cassette that claims
//! redactions), in the header, each record, and across the boundaries of runs of streamed
//! text; and placeholders listed but used nowhere. Record by record, with bounded state.

use super::report::Report;
use crate::{ActionRef, Form, Header, RecordRef};

/// What a secret-looking token is, if it is one.
pub(super) fn secret_kind(token: &str) -> Option<&'static str> {
    let len = token.len();
    let has = |f: fn(char) -> bool| token.chars().any(f);
    if token.starts_with("sk-") && len >= 20 {
        return Some("an API key (sk-...)");
    }
    if (token.starts_with("ghp_") || token.starts_with("gho_") || token.starts_with("github_pat_"))
        && len >= 30
    {
        return Some("a GitHub token");
    }
    if (token.starts_with("xoxb-") || token.starts_with("xoxp-")) && len >= 20 {
        return Some("a Slack token");
    }
    // Long-term (AKIA) and temporary (ASIA) access keys, and the other AWS unique ids.
    const AWS_ID_PREFIXES: &[&str] = &[
        "AKIA", "ASIA", "AGPA", "AIDA", "AROA", "AIPA", "ANPA", "ANVA", "APKA", "ABIA", "ACCA",
    ];
    if len == 20
        && AWS_ID_PREFIXES.iter().any(|p| token.starts_with(p))
        && token[4..]
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
    {
        return Some("an AWS access key id");
    }
    if token.starts_with("AIza") && len == 39 {
        return Some("a Google API key");
    }
    if !(32..=256).contains(&len) {
        return None; // short ids, or bulk data rather than a credential
    }
    if token.chars().all(|c| c.is_ascii_hexdigit()) {
        return Some("a long hex token");
    }
    if has(|c| c.is_ascii_uppercase())
        && has(|c| c.is_ascii_lowercase())
        && has(|c| c.is_ascii_digit())
        && !is_camel_case_name(token)
        && !is_stamped_name(token)
    {
        return Some("a long base64-like token");
    }
    None
}

/// A name made of words and a date-time stamp, as in the error report Gemini CLI names on
/// stderr (`gemini-client-error-Turn.run-sendMessageStream-2026-11-26T05-52-28-797Z.json`):
/// once its stamps (`YYYY-MM-DDTHH-MM-SS[-mmm]Z`, `-` or `:` between the time's parts) are
/// taken out, no digit is left, only letters and `-`/`_` (words). A key holds digits outside
/// any stamp.
fn is_stamped_name(token: &str) -> bool {
    let b = token.as_bytes();
    let mut rest = Vec::with_capacity(b.len());
    let mut i = 0;
    let mut stamps = 0;
    while i < b.len() {
        match stamp_len(&b[i..]) {
            Some(n) => {
                stamps += 1;
                i += n;
            }
            None => {
                rest.push(b[i]);
                i += 1;
            }
        }
    }
    stamps > 0
        && rest
            .iter()
            .all(|c| c.is_ascii_alphabetic() || matches!(c, b'-' | b'_'))
}

/// The length of a date-time stamp at the start of `b`: `YYYY-MM-DDTHH?MM?SS`, then
/// optionally `?mmm` (any digits) and a `Z`, where `?` is `-` or `:`.
fn stamp_len(b: &[u8]) -> Option<usize> {
    let digits =
        |at: usize, n: usize| b.len() >= at + n && b[at..at + n].iter().all(u8::is_ascii_digit);
    let sep = |at: usize| matches!(b.get(at), Some(b'-' | b':'));
    let fixed = digits(0, 4)
        && b.get(4) == Some(&b'-')
        && digits(5, 2)
        && b.get(7) == Some(&b'-')
        && digits(8, 2)
        && b.get(10) == Some(&b'T')
        && digits(11, 2)
        && sep(13)
        && digits(14, 2)
        && sep(16)
        && digits(17, 2);
    if !fixed {
        return None;
    }
    let mut n = 19;
    if matches!(b.get(n), Some(b'-' | b'.')) && b.get(n + 1).is_some_and(u8::is_ascii_digit) {
        n += 1;
        while b.get(n).is_some_and(u8::is_ascii_digit) {
            n += 1;
        }
    }
    if b.get(n) == Some(&b'Z') {
        n += 1;
    }
    Some(n)
}

/// A camelCase identifier (`cacheCreationEphemeral1hInputTokens`, a field name Claude Code
/// writes): starts lower case, every capital opens a word of at least three letters, at most
/// three digits. Random base64 of that length almost never has this shape (each capital
/// followed by two lower-case letters: about 1 in 6; a 32-character token has ~8 capitals).
fn is_camel_case_name(token: &str) -> bool {
    let b = token.as_bytes();
    b.first().is_some_and(u8::is_ascii_lowercase)
        && b.iter().all(u8::is_ascii_alphanumeric)
        && b.iter().filter(|c| c.is_ascii_digit()).count() <= 3
        && b.iter().enumerate().all(|(i, c)| {
            !c.is_ascii_uppercase()
                || (b.get(i + 1).is_some_and(u8::is_ascii_lowercase)
                    && b.get(i + 2).is_some_and(u8::is_ascii_lowercase))
        })
}

/// 40 base64 characters (`/` and `+` included), mixed case with a digit or a `/`/`+`: the
/// shape of an AWS secret access key.
fn is_aws_secret(token: &str) -> bool {
    let t = token.trim_matches('=');
    t.len() == 40
        && t.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '/' || c == '+')
        && t.chars().any(|c| c.is_ascii_uppercase())
        && t.chars().any(|c| c.is_ascii_lowercase())
        && t.chars()
            .any(|c| c.is_ascii_digit() || c == '/' || c == '+')
        && !t.starts_with('/')
}

/// A uuid: five hex groups of 8, 4, 4, 4 and 12 digits.
fn is_uuid(token: &str) -> bool {
    let parts: Vec<&str> = token.split('-').collect();
    parts.len() == 5
        && parts
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(p, n)| p.len() == n && p.chars().all(|c| c.is_ascii_hexdigit()))
}

/// A character a key or token is made of (a run of them is one token).
fn token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '+' | '/' | '=')
}

/// Problems in one piece of text (a payload or a header string).
pub(super) fn scan_text(text: &str, claims_redaction: bool) -> Vec<String> {
    let mut out = Vec::new();
    for prefix in ["/home/", "/Users/", "/root/"] {
        let mut from = 0;
        while let Some(at) = text[from..].find(prefix) {
            let start = from + at;
            let rest = &text[start + prefix.len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
                .collect();
            if !name.is_empty() || prefix == "/root/" {
                let shown = format!("{prefix}{name}");
                let msg = format!(
                    "absolute home path {shown:?}: replace it with a placeholder such as <HOME>"
                );
                if !out.contains(&msg) {
                    out.push(msg);
                }
            }
            from = start + prefix.len();
        }
    }
    // `Bearer <token>`, however short the token (a placeholder such as `<TOKEN>` is fine).
    // Found without a lower-case copy of the text: a line may be as long as the line limit.
    let mut from = 0;
    while let Some(at) = text.as_bytes()[from..]
        .windows(7)
        .position(|w| w.eq_ignore_ascii_case(b"bearer "))
    {
        let start = from + at + "bearer ".len();
        let token: String = text[start..]
            .chars()
            .take_while(|&c| token_char(c) || c == '.' || c == '~')
            .collect();
        if token.len() >= 6 && !token.chars().all(|c| c.is_ascii_lowercase()) {
            out.push(format!(
                "a Bearer token {}: secrets must be replaced by placeholders",
                shorten(&token)
            ));
        }
        from = start;
    }
    // Tokens: runs of base64/identifier characters, with a `/` only inside base64.
    for token in text.split(|c: char| !token_char(c)) {
        if is_aws_secret(token) {
            out.push(format!(
                "an AWS secret access key {}: secrets must be replaced by placeholders",
                shorten(token)
            ));
            continue;
        }
        for piece in token.split('/') {
            let piece = piece.trim_matches('=');
            if piece.is_empty() {
                continue;
            }
            if claims_redaction && is_uuid(piece) && !piece.starts_with(crate::FIXED_UUID_PREFIX) {
                out.push(format!(
                    "uuid {piece} left in a cassette that claims redactions: replace it with a placeholder"
                ));
            } else if let Some(kind) = secret_kind(piece) {
                out.push(format!(
                    "{kind} {}: secrets must be replaced by placeholders",
                    shorten(piece)
                ));
            }
        }
    }
    out
}

/// A secret as a problem shows it: its first 8 bytes when it is longer than 12.
fn shorten(s: &str) -> String {
    if s.len() <= 12 {
        s.to_string()
    } else {
        format!("{}...", &s[..8])
    }
}

/// How much of each side of a boundary between two records of one stream is scanned as one
/// text (bytes): more than the longest token a secret can be (256).
const WINDOW: usize = 1024;

/// The most messages remembered for one run of streamed text (to report a secret found across
/// records once); past it, a secret may be reported again.
const RUN_MEMORY: usize = 256;

/// The redaction scan, kept up record by record: each header string and payload on its own,
/// each boundary between consecutive records of one stream (a key cut across two records is
/// still a key), and which listed placeholders were used. Holds bounded state.
pub(super) struct Scan {
    /// The header lists redactions: uuids left over are problems.
    claims: bool,
    /// Listed placeholders not seen yet: (as listed, what is looked for).
    unseen: Vec<(String, String)>,
    /// The run of streamed text going on.
    run: Option<Run>,
}

/// Consecutive records of one stream (stderr, or raw stdout text).
struct Run {
    what: &'static str,
    /// Where the run started: a secret found across records is reported there.
    line: usize,
    /// The end of the text scanned across boundaries so far, from a token boundary.
    tail: String,
    /// Short records' text after `tail`, not scanned across its boundaries yet: they are
    /// scanned together once there is a window's worth (or the run ends), so that a run of
    /// many short records costs about its bytes, not a window per record.
    pending: String,
    /// Messages already reported for this run's records and boundaries.
    said: std::collections::HashSet<String>,
}

impl Scan {
    /// Scan the header (line 1): its strings and its redactions map.
    pub(super) fn new(report: &mut Report, header: &Header) -> Self {
        let claims = !header.redactions.is_empty();
        let mut scan = Scan {
            claims,
            unseen: header
                .redactions
                .keys()
                .map(|placeholder| {
                    // The numbered-UUID family is used when one of its members is.
                    let probe = match placeholder.strip_suffix("<N>") {
                        Some(prefix) if prefix == crate::FIXED_UUID_PREFIX => prefix,
                        _ => placeholder.as_str(),
                    };
                    (placeholder.clone(), probe.to_string())
                })
                .collect(),
            run: None,
        };
        let value = serde_json::to_value(header).unwrap_or_default();
        let mut strings = Vec::new();
        collect_strings(&value, &mut strings, true);
        for s in &strings {
            for m in scan_text(s, claims) {
                report.add(1, format!("header: {m}"));
            }
            scan.seen(s);
        }
        // The redactions map: its placeholders and meanings must not be secrets themselves.
        for (placeholder, meaning) in &header.redactions {
            for text in [placeholder, meaning] {
                for m in scan_text(text, false) {
                    report.add(1, format!("header: redactions: {m}"));
                }
            }
        }
        scan
    }

    /// Mark the placeholders `text` uses as used.
    fn seen(&mut self, text: &str) {
        self.unseen
            .retain(|(_, probe)| !text.contains(probe.as_str()));
    }

    /// Scan one record.
    pub(super) fn record(&mut self, report: &mut Report, r: &RecordRef) {
        let claims = self.claims;
        let (what, data, streamed) = match &r.action {
            ActionRef::Stdout { body, form } => {
                ("stdout", body, !matches!(form, Form::Json { .. }))
            }
            ActionRef::Stderr { body, .. } => ("stderr", body, true),
            ActionRef::Spawn(spec) => {
                let v = serde_json::to_value(spec).unwrap_or_default();
                let mut strings = Vec::new();
                collect_strings(&v, &mut strings, false);
                for s in strings {
                    for m in scan_text(&s, claims) {
                        report.add(r.line, format!("spawn: {m}"));
                    }
                }
                return;
            }
            _ => return,
        };
        let text = String::from_utf8_lossy(data);
        let mut said = Vec::new();
        for m in scan_text(&text, claims) {
            let message = format!("{what}: {m}");
            report.add(r.line, message.clone());
            said.push(message);
        }
        self.seen(&text);
        let continues = streamed && self.run.as_ref().is_some_and(|run| run.what == what);
        if !continues {
            self.end_run(report);
            self.run = streamed.then(|| Run {
                what,
                line: r.line,
                tail: tail(&text).to_string(),
                pending: String::new(),
                said: said.into_iter().take(RUN_MEMORY).collect(),
            });
            return;
        }
        let run = self.run.as_mut().expect("a run goes on");
        if run.pending.len() + text.len() < WINDOW {
            run.pending.push_str(&text);
            remember(run, said);
            return;
        }
        // The boundaries so far, and this record's start, as one text.
        let window = format!("{}{}{}", run.tail, run.pending, head(&text));
        self.boundaries(report, what, &window, &mut said);
        let run = self.run.as_mut().expect("a run goes on");
        run.tail = if text.len() >= WINDOW {
            tail(&text).to_string()
        } else {
            tail(&format!("{}{}{text}", run.tail, run.pending)).to_string()
        };
        run.pending.clear();
        remember(run, said);
    }

    /// The run of streamed text ends: what it holds unscanned across boundaries is scanned.
    fn end_run(&mut self, report: &mut Report) {
        let Some(run) = self.run.as_mut() else {
            return;
        };
        if run.pending.is_empty() {
            return;
        }
        let window = format!("{}{}", run.tail, std::mem::take(&mut run.pending));
        let what = run.what;
        self.boundaries(report, what, &window, &mut Vec::new());
    }

    /// Scan `window`, text across record boundaries of the run going on: a problem not said
    /// for one record is reported at the run's start; the placeholders it uses are seen.
    fn boundaries(
        &mut self,
        report: &mut Report,
        what: &str,
        window: &str,
        said: &mut Vec<String>,
    ) {
        let claims = self.claims;
        let run = self.run.as_mut().expect("a run goes on");
        for m in scan_text(window, claims) {
            let message = format!("{what}: {m}");
            if !said.contains(&message) && !run.said.contains(&message) {
                report.add(run.line, format!("{message} (across records from here)"));
                said.push(message.clone());
                if run.said.len() < RUN_MEMORY {
                    run.said.insert(message);
                }
            }
        }
        self.unseen
            .retain(|(_, probe)| !window.contains(probe.as_str()));
    }

    /// The placeholders the header lists that nothing used.
    pub(super) fn finish(mut self, report: &mut Report) {
        self.end_run(report);
        for (placeholder, _) in self.unseen {
            report.add(
                1,
                format!("header: redaction placeholder {placeholder:?} is listed but used nowhere"),
            );
        }
    }
}

/// Remember what was said for a run's records (at most [`RUN_MEMORY`] messages).
fn remember(run: &mut Run, said: Vec<String>) {
    for m in said {
        if run.said.len() < RUN_MEMORY {
            run.said.insert(m);
        }
    }
}

/// A character that may be part of a token (a key, a base64 run, a path's piece).
fn in_token(c: char) -> bool {
    token_char(c) || c == '.' || c == '~'
}

/// The last [`WINDOW`] bytes of `text` or fewer, starting just after a character that is
/// no part of a token (so the first token in it is whole); empty when there is none (the
/// text ends in a run longer than any secret).
fn tail(text: &str) -> &str {
    let mut from = text.len().saturating_sub(WINDOW);
    while !text.is_char_boundary(from) {
        from += 1;
    }
    match text[from..].char_indices().find(|&(_, c)| !in_token(c)) {
        Some((i, c)) => &text[from + i + c.len_utf8()..],
        None if from == 0 => text,
        None => "",
    }
}

/// The first [`WINDOW`] bytes of `text` or fewer, ending at a character that is no part of
/// a token (so the last token in it is whole); all of `text` when it is that short.
fn head(text: &str) -> &str {
    if text.len() <= WINDOW {
        return text;
    }
    let mut to = WINDOW;
    while !text.is_char_boundary(to) {
        to -= 1;
    }
    match text[..to].rfind(|c: char| !in_token(c)) {
        Some(i) => &text[..i],
        None => "",
    }
}

/// String values of a JSON value (the `redactions` map itself is skipped at the top).
fn collect_strings(v: &serde_json::Value, out: &mut Vec<String>, top: bool) {
    match v {
        serde_json::Value::String(s) => out.push(s.clone()),
        serde_json::Value::Array(a) => a.iter().for_each(|v| collect_strings(v, out, false)),
        serde_json::Value::Object(o) => {
            for (k, v) in o {
                if top && k == "redactions" {
                    continue;
                }
                out.push(k.clone());
                collect_strings(v, out, false);
            }
        }
        _ => {}
    }
}
