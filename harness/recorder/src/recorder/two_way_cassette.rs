//! A two-way run turned into a cassette (pure): the timeline of the client's actions and the
//! CLI's output ([`Timed`]) written as the client's transcript that `import --mode rpc`
//! reads, the run-specific values to redact (pi's session id; Claude Code's session id,
//! the UUIDs it invents and its pid), and the version 2 cassette built through
//! `pi_cassette::import_rpc` with its expectations and origin.

use std::io::Write as _;
use std::path::Path;
use std::time::Duration;

use nix::sys::signal::Signal;
use pi_cassette::redact::{Redactor, FIXED_UUID_PREFIX};
use pi_cassette::{Cassette, Origin, OriginKind, TimingKind};
use serde_json::Value;

use super::header::{
    claude_expect, description, expect_from_args, scenario_name, session_use, two_way_source,
};
use super::process::{ms, Captured, Ending};
use super::{RecordError, RecordOptions};
use pi_grammar::Agent;

/// What happened in an RPC recording, in order: the client's actions and pi's output.
#[derive(Debug, Clone)]
pub enum Timed {
    /// The client wrote this line (without `\n`).
    Wrote(String),
    /// The client closed pi's stdin.
    Closed,
    /// The client sent pi this signal.
    Signalled(Signal),
    /// pi's output.
    Out(Captured),
}

/// What a two-way run produced.
pub(crate) struct TwoWayRun {
    /// The client's actions and the CLI's output, sorted by time.
    pub(crate) timeline: Vec<(Duration, Timed)>,
    pub(crate) ending: Ending,
    /// When pi's exit was seen.
    pub(crate) exited_at: Duration,
    /// Processes left after pi ended (killed by the recorder).
    pub(crate) leftovers: Vec<String>,
}

/// Claude Code's run-specific values in a recording: its session id (`<SESSION_ID>`), the
/// other UUIDs it invents (message uuids, permission request ids), in order of first
/// appearance, as fixed UUIDs `00000000-0000-4000-8000-00000000NNNN` (still UUIDs, so a
/// host that checks their shape accepts them; consistent, so a request id the host echoes
/// stays the one the CLI issued), and its process id inside the socket path.
fn claude_redactions(timeline: &[(Duration, Timed)], redactor: &mut Redactor) {
    let mut uuids: Vec<String> = Vec::new();
    let mut pids: Vec<String> = Vec::new();
    let mut session: Option<String> = None;
    for (_, e) in timeline {
        let text = match e {
            Timed::Out(Captured::Line(l, _)) => String::from_utf8_lossy(l),
            Timed::Wrote(l) => std::borrow::Cow::Borrowed(l.as_str()),
            _ => continue,
        };
        if let Ok(v) = serde_json::from_str::<Value>(&text) {
            if v["type"] == "system" && v["subtype"] == "init" {
                if let Some(id) = v["session_id"].as_str() {
                    let p = Agent::Claude.spec().placeholders.session_id;
                    redactor.literal(id, p.text, p.means);
                    session = Some(id.to_string());
                }
            }
        }
        let b = text.as_bytes();
        for i in 0..b.len().saturating_sub(35) {
            // UUIDs are ASCII: a window that is not is no UUID (and no char boundary matters).
            let Ok(cand) = std::str::from_utf8(&b[i..i + 36]) else {
                continue;
            };
            if is_uuid(cand) && !uuids.iter().any(|u| u == cand) && session.as_deref() != Some(cand)
            {
                uuids.push(cand.to_string());
            }
        }
        let mut rest = &text[..];
        while let Some(at) = rest.find("cc-socks/") {
            rest = &rest[at + 9..];
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            if !digits.is_empty() && rest[digits.len()..].starts_with(".sock") {
                pids.push(format!("cc-socks/{digits}.sock"));
            }
        }
    }
    for (n, u) in uuids.iter().enumerate() {
        redactor.literal(
            u,
            &format!("{FIXED_UUID_PREFIX}{:012}", n + 1),
            "UUIDs Claude Code invents (uuid, request_id), numbered in order",
        );
    }
    for p in pids {
        redactor.literal(
            &p,
            "cc-socks/<PID>.sock",
            "Claude Code's pid in its socket path",
        );
    }
}

/// A lowercase UUID that is not one of the fixed ones the recorder numbers.
fn is_uuid(s: &str) -> bool {
    s.len() == 36
        && s.bytes().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => b == b'-',
            _ => b.is_ascii_hexdigit() && !b.is_ascii_uppercase(),
        })
        && !s.starts_with(FIXED_UUID_PREFIX)
}

/// The session id an RPC session reports (`get_state`'s `data.sessionId`), if any.
fn rpc_session_id(timeline: &[(Duration, Timed)]) -> Option<String> {
    timeline.iter().find_map(|(_, e)| {
        let Timed::Out(Captured::Line(l, _)) = e else {
            return None;
        };
        memchr::memmem::find(l, b"\"sessionId\"")?;
        let v: Value = serde_json::from_slice(l).ok()?;
        v["data"]["sessionId"].as_str().map(str::to_string)
    })
}

/// The client's transcript of an RPC recording, redacted, as `import --mode rpc` reads it,
/// and pi's stdout bytes (redacted the same way) for the byte-for-byte check (pure).
pub fn rpc_transcript(
    timeline: &[(Duration, Timed)],
    (ending, exited_at): (Ending, Duration),
    redactor: &mut Redactor,
) -> (Vec<u8>, Vec<u8>) {
    let mut transcript = Vec::new();
    let mut stdout = Vec::new();
    let mut last = Duration::ZERO;
    let push = |t: Duration, key: &str, value: String, transcript: &mut Vec<u8>| {
        let _ = writeln!(transcript, "{{\"t_ms\":{},\"{key}\":{value}}}", ms(t));
    };
    // A line as verbatim JSON under `key`, or as a JSON string under `key_text`.
    let line = |t: Duration, key: &str, red: String, transcript: &mut Vec<u8>| {
        if pi_cassette::is_verbatim_json(&red) {
            push(t, key, red, transcript);
        } else {
            push(
                t,
                &format!("{key}_text"),
                Value::from(red).to_string(),
                transcript,
            );
        }
    };
    for (t, e) in timeline {
        last = *t;
        match e {
            Timed::Wrote(l) => line(*t, "stdin", redactor.apply(l), &mut transcript),
            Timed::Closed => push(*t, "stdin_close", "true".into(), &mut transcript),
            Timed::Signalled(sig) => push(
                *t,
                "send_signal",
                Value::from(sig.as_str()).to_string(),
                &mut transcript,
            ),
            Timed::Out(Captured::Line(bytes, newline)) => {
                let red = redactor.apply(&String::from_utf8_lossy(bytes));
                stdout.extend_from_slice(red.as_bytes());
                if *newline {
                    stdout.push(b'\n');
                }
                line(*t, "stdout", red, &mut transcript);
            }
            Timed::Out(Captured::Stderr(bytes)) => {
                let red = redactor.apply(&String::from_utf8_lossy(bytes));
                push(*t, "stderr", Value::from(red).to_string(), &mut transcript);
            }
        }
    }
    // The exit, when it was seen (after the last output, which may drain after it).
    let last = last.max(exited_at);
    match ending {
        Ending::Code(c) => push(last, "exit", c.to_string(), &mut transcript),
        Ending::Signal(s) => push(
            last,
            "signal",
            Value::from(s.as_str()).to_string(),
            &mut transcript,
        ),
    }
    (transcript, stdout)
}

/// The version 2 cassette of a two-way run of `version` with `args`: redacted with
/// `redactor` (plus the session ids and Claude Code's invented values), built from the
/// transcript, pi's stdout and the server's request `log`; only the placeholders that
/// appear in it are listed, the numbered UUIDs as one.
pub(crate) fn cassette(
    opts: &RecordOptions,
    version: &str,
    args: &[String],
    run: &TwoWayRun,
    mut redactor: Redactor,
    log: &str,
    settings: &pi_grammar::AgentSettings,
) -> Result<Cassette, RecordError> {
    let claude = opts.agent == Agent::Claude;
    if let Some(id) = rpc_session_id(&run.timeline) {
        let p = Agent::Pi.spec().placeholders.session_id;
        redactor.literal(&id, p.text, p.means);
    }
    if claude {
        claude_redactions(&run.timeline, &mut redactor);
    }
    let (transcript, stdout) =
        rpc_transcript(&run.timeline, (run.ending, run.exited_at), &mut redactor);
    let log: String = log
        .lines()
        .map(|l| format!("{}\n", redactor.apply(l)))
        .collect();
    let mut iopts = pi_cassette::import::ImportOptions::new(
        version,
        &scenario_name(opts),
        &description(opts, version),
        pi_cassette::import::Ending::Hang,
    );
    iopts.tags = opts.tags.clone();
    let redacted_args: Vec<String> = args.iter().map(|a| redactor.apply(a)).collect();
    if claude {
        // The import checks a Claude cassette names the CLI's options.
        iopts.expect = claude_expect(&redacted_args).map_err(RecordError::Expect)?;
    }
    let mut cassette = pi_cassette::import_rpc::import_transcript(
        Path::new("(the recording's transcript)"),
        &transcript,
        &iopts,
        &pi_cassette::import_rpc::TwoWayInputs {
            raw_stdout: Some((Path::new("(pi's stdout)"), &stdout)),
            requests: Some((Path::new("(the request log)"), log.as_bytes())),
            ending: None,
            spawn_tools: true,
            protocol: opts
                .agent
                .spec()
                .two_way
                .and_then(pi_cassette::two_way::Protocol::of_mode)
                .unwrap_or_default(),
        },
    )
    .map_err(RecordError::Import)?;
    cassette.header.expect = if claude {
        let mut expect = iopts.expect.clone();
        expect.stdin = opts
            .stdin_terminal
            .then_some(pi_cassette::StdinKind::Terminal);
        expect
    } else {
        expect_from_args(
            version,
            &redacted_args,
            None,
            settings,
            session_use(opts, &redacted_args),
        )
        .map_err(RecordError::Expect)?
    };
    cassette.header.origin = Origin {
        kind: OriginKind::Recorded,
        source: Some(two_way_source(opts, &redacted_args)),
        timing: TimingKind::Measured,
        notes: (!run.leftovers.is_empty()).then(|| {
            format!(
                "processes left after pi ended (killed by the recorder): {}",
                run.leftovers.join(", ")
            )
        }),
    };
    list_used_redactions(&mut cassette, &redactor);
    Ok(cassette)
}

/// The header's `redactions`: the placeholders of `redactor` that appear in the cassette,
/// Claude Code's numbered UUIDs listed once.
fn list_used_redactions(cassette: &mut Cassette, redactor: &Redactor) {
    let body = cassette.to_jsonl();
    cassette.header.redactions = redactor
        .used()
        .iter()
        .filter(|(p, _)| body.contains(p.as_str()))
        .map(|(p, d)| (p.clone(), d.clone()))
        .collect();
    // The numbered UUIDs are one redaction, listed once.
    let before = cassette.header.redactions.len();
    cassette
        .header
        .redactions
        .retain(|p, _| !p.starts_with(FIXED_UUID_PREFIX));
    if cassette.header.redactions.len() < before {
        cassette.header.redactions.insert(
            format!("{FIXED_UUID_PREFIX}<N>"),
            "UUIDs Claude Code invents (message uuids, permission request ids), numbered in order of first appearance".into(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_redactions_number_invented_uuids_and_keep_the_session_apart() {
        let sid = "5e551011-aaaa-4bbb-8ccc-0123456789ab";
        let rid = "bd0992e7-1111-4222-8333-444455556666";
        let line = |t: &str| {
            (
                Duration::ZERO,
                Timed::Out(Captured::Line(t.as_bytes().to_vec(), true)),
            )
        };
        let timeline = vec![
            // A long non-ASCII text before the ids: windows over it are not char boundaries.
            line(&format!(
                r#"{{"type":"assistant","text":"{}"}}"#,
                "—".repeat(40)
            )),
            line(&format!(
                r#"{{"type":"system","subtype":"init","session_id":"{sid}","messaging_socket_path":"/t/cc-socks/4242.sock"}}"#
            )),
            line(&format!(
                r#"{{"type":"control_request","request_id":"{rid}"}}"#
            )),
            (
                Duration::ZERO,
                Timed::Wrote(format!(
                    r#"{{"type":"control_response","response":{{"request_id":"{rid}"}}}}"#
                )),
            ),
        ];
        let mut r = Redactor::new();
        claude_redactions(&timeline, &mut r);
        assert_eq!(
            r.apply(&format!("{sid} {rid} /t/cc-socks/4242.sock")),
            "<SESSION_ID> 00000000-0000-4000-8000-000000000001 /t/cc-socks/<PID>.sock"
        );
    }
}
