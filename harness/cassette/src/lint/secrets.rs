//! The redaction scan of `cassette lint`: values that look like secrets (API keys, tokens,
//! AWS keys, long base64 runs) or machine-specific data (uuids in a cassette that claims
//! redactions), in the header, each record, and runs of streamed text read as one; and
//! placeholders listed but used nowhere.

use super::report::Report;
use crate::{Action, Cassette, Form};

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
    {
        return Some("a long base64-like token");
    }
    None
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
    let lower = text.to_ascii_lowercase();
    let mut from = 0;
    while let Some(at) = lower[from..].find("bearer ") {
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

/// Scan the header, every record and each run of streamed text (stderr, raw stdout)
/// for secrets; report placeholders the header lists but nothing uses.
pub(super) fn check_redaction(report: &mut Report, c: &Cassette) {
    let claims = !c.header.redactions.is_empty();
    let header = serde_json::to_value(&c.header).unwrap_or_default();
    let mut strings = Vec::new();
    collect_strings(&header, &mut strings, true);
    let mut text_seen = String::new();
    for s in &strings {
        for m in scan_text(s, claims) {
            report.add(1, format!("header: {m}"));
        }
        text_seen.push_str(s);
        text_seen.push('\n');
    }
    // The redactions map: its placeholders and meanings must not be secrets themselves.
    for (placeholder, meaning) in &c.header.redactions {
        for text in [placeholder, meaning] {
            for m in scan_text(text, false) {
                report.add(1, format!("header: redactions: {m}"));
            }
        }
    }
    // A run of consecutive stderr records (or of raw stdout text) is one stream to a
    // reader: a key cut across two records is still a key.
    let mut run: Option<(&'static str, usize, String)> = None;
    let end_run = |run: &mut Option<(&'static str, usize, String)>, report: &mut Report| {
        if let Some((what, line, joined)) = run.take() {
            for m in scan_text(&joined, claims) {
                let msg = format!("{what}: {m} (across records from here)");
                if !report
                    .problems
                    .iter()
                    .any(|p| p.message.ends_with(&format!("{what}: {m}")))
                {
                    report.add(line, msg);
                }
            }
        }
    };
    for r in &c.records {
        let (what, data, streamed) = match &r.action {
            Action::Stdout(b) => ("stdout", &b.data, !matches!(b.form, Form::Json { .. })),
            Action::Stderr(b) => ("stderr", &b.data, true),
            Action::Spawn(spec) => {
                let v = serde_json::to_value(spec).unwrap_or_default();
                let mut strings = Vec::new();
                collect_strings(&v, &mut strings, false);
                for s in strings {
                    for m in scan_text(&s, claims) {
                        report.add(r.line, format!("spawn: {m}"));
                    }
                }
                continue;
            }
            _ => continue,
        };
        let text = String::from_utf8_lossy(data);
        for m in scan_text(&text, claims) {
            report.add(r.line, format!("{what}: {m}"));
        }
        text_seen.push_str(&text);
        match &mut run {
            Some((w, _, joined)) if streamed && *w == what => joined.push_str(&text),
            _ => {
                end_run(&mut run, report);
                if streamed {
                    run = Some((what, r.line, text.into_owned()));
                }
            }
        }
    }
    end_run(&mut run, report);
    for placeholder in c.header.redactions.keys() {
        // The numbered-UUID family is used when one of its members is.
        let probe = match placeholder.strip_suffix("<N>") {
            Some(prefix) if prefix == crate::FIXED_UUID_PREFIX => prefix,
            _ => placeholder.as_str(),
        };
        if !text_seen.contains(probe) {
            report.add(
                1,
                format!("header: redaction placeholder {placeholder:?} is listed but used nowhere"),
            );
        }
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
