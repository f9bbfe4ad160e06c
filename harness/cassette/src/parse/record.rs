//! Reading and checking one record line: its delay, exactly one action (two-way actions
//! only in a version 2 cassette), the fields that qualify an action (`newline`, `match`,
//! `reply`), and each kind's own rules. A `stdout` JSON payload borrows from the line.

use std::borrow::Cow;
use std::path::Path;

use base64::Engine as _;
use serde::Deserialize;

use crate::error::shown;
use crate::raw::RawRecord;
use crate::{
    ActionRef, CassetteError, ClientLine, Form, Record, RecordRef, CLIENT_SIGNALS,
    FORMAT_VERSION_TWO_WAY, MAX_DT_MS, SIGNAL_NAMES,
};

/// Read and check one record line into an owned [`Record`].
pub(crate) fn parse_record(
    path: &Path,
    lineno: usize,
    text: &str,
    version: u32,
) -> Result<Record, CassetteError> {
    parse_record_ref(path, lineno, text, version).map(RecordRef::into_owned)
}

/// Read and check one record line; a `stdout` JSON payload borrows from `text`.
pub(crate) fn parse_record_ref<'a>(
    path: &Path,
    lineno: usize,
    text: &'a str,
    version: u32,
) -> Result<RecordRef<'a>, CassetteError> {
    let bad = |msg: String| CassetteError::invalid(path, lineno, msg);
    let raw: RawRecord = serde_json::from_str(text).map_err(|e| bad(format!("record: {e}")))?;
    let dt_ms = delay(raw.dt_ms).map_err(bad)?;
    let key = action_key(&raw, version).map_err(bad)?;
    check_qualifiers(&raw, key).map_err(bad)?;
    let reply = raw.reply;
    let action = decode_action(raw, key).map_err(bad)?;
    if let ActionRef::Stdout { body, .. } = &action {
        check_session_line(body).map_err(bad)?;
    }
    Ok(RecordRef {
        dt_ms,
        action,
        reply,
        line: lineno,
    })
}

/// The record's `dt_ms`: present, a non-negative number, at most [`MAX_DT_MS`].
fn delay(dt_ms: Option<f64>) -> Result<f64, String> {
    let dt_ms = dt_ms.ok_or_else(|| "record field `dt_ms` missing".to_string())?;
    if !dt_ms.is_finite() || dt_ms < 0.0 {
        return Err(format!(
            "record field `dt_ms`: must be a non-negative number, found {dt_ms}"
        ));
    }
    if dt_ms > MAX_DT_MS {
        return Err(format!(
            "record field `dt_ms`: at most {MAX_DT_MS} ms (a wait of days is a `hang`), found {dt_ms:e}"
        ));
    }
    Ok(dt_ms)
}

/// The one action field the record sets; a two-way field (or `match`, `reply`) only in a
/// cassette of version 2.
fn action_key(raw: &RawRecord, version: u32) -> Result<&'static str, String> {
    let mut present: Vec<&'static str> = Vec::new();
    let one_way = [
        ("stdout", raw.stdout.is_some()),
        ("stdout_text", raw.stdout_text.is_some()),
        ("stdout_b64", raw.stdout_b64.is_some()),
        ("stderr", raw.stderr.is_some()),
        ("stderr_b64", raw.stderr_b64.is_some()),
        ("exit", raw.exit.is_some()),
        ("signal", raw.signal.is_some()),
        ("hang", raw.hang.is_some()),
        ("spawn", raw.spawn.is_some()),
    ];
    let two_way = [
        ("stdin", raw.stdin.is_some()),
        ("stdin_text", raw.stdin_text.is_some()),
        ("stdin_close", raw.stdin_close.is_some()),
        ("client_signal", raw.client_signal.is_some()),
        ("request", raw.request.is_some()),
        ("reap", raw.reap.is_some()),
    ];
    for (key, set) in one_way.into_iter().chain(two_way) {
        if set {
            present.push(key);
        }
    }
    if version < FORMAT_VERSION_TWO_WAY {
        let only_two_way = two_way
            .iter()
            .map(|(k, set)| (*k, *set))
            .chain([
                ("match", raw.fields.is_some()),
                ("reply", raw.reply.is_some()),
            ])
            .find(|(_, set)| *set);
        if let Some((key, _)) = only_two_way {
            return Err(format!(
                "record field `{key}`: a two-way record; only a version {FORMAT_VERSION_TWO_WAY} cassette (\"version\":2,\"mode\":\"rpc\") has them"
            ));
        }
    }
    match present.as_slice() {
        [one] => Ok(*one),
        [] if version >= FORMAT_VERSION_TWO_WAY => Err(
            "record has no action: expected one of stdout, stdout_text, stdout_b64, stderr, stderr_b64, exit, signal, hang, spawn, stdin, stdin_text, stdin_close, client_signal, request, reap".into(),
        ),
        [] => Err(
            "record has no action: expected one of stdout, stdout_text, stdout_b64, stderr, stderr_b64, exit, signal, hang, spawn".into(),
        ),
        many => Err(format!(
            "record has several actions ({}); one per line",
            many.join(", ")
        )),
    }
}

/// `newline`, `match` and `reply` only where they mean something.
fn check_qualifiers(raw: &RawRecord, key: &str) -> Result<(), String> {
    if raw.newline.is_some() && !matches!(key, "stdout" | "stdout_text") {
        return Err(format!(
            "record field `newline` only applies to stdout and stdout_text, not `{key}`"
        ));
    }
    if raw.fields.is_some() && key != "stdin" {
        return Err(format!(
            "record field `match` only applies to stdin, not `{key}`"
        ));
    }
    if raw.reply.is_some() && key != "stdout" {
        return Err(format!(
            "record field `reply` only applies to stdout (a JSON response), not `{key}`"
        ));
    }
    if raw.reply.is_some() && !raw.stdout.is_some_and(|v| v.get().starts_with('{')) {
        return Err(
            "record field `reply`: the stdout line must be a JSON object (a response)".into(),
        );
    }
    Ok(())
}

/// The action stored under `key` (the one [`action_key`] found), checked by its kind's rules.
fn decode_action<'a>(raw: RawRecord<'a>, key: &str) -> Result<ActionRef<'a>, String> {
    match key {
        "stdout" | "stdout_text" | "stdout_b64" | "stderr" | "stderr_b64" => {
            decode_output(raw, key)
        }
        "exit" | "signal" | "hang" => decode_ending(raw, key),
        "spawn" => {
            let spawn = crate::shape::spawn(raw.spawn.unwrap().get())?;
            Ok(ActionRef::Spawn(spawn))
        }
        _ => decode_client(raw, key),
    }
}

/// What the process writes: stdout and stderr in their stored forms.
fn decode_output<'a>(raw: RawRecord<'a>, key: &str) -> Result<ActionRef<'a>, String> {
    let newline = raw.newline.unwrap_or(true);
    let b64 = base64::engine::general_purpose::STANDARD;
    let decode = |field: &str, s: &str| {
        b64.decode(s)
            .map_err(|e| format!("record field `{field}`: invalid base64: {e}"))
    };
    Ok(match key {
        "stdout" => ActionRef::Stdout {
            body: Cow::Borrowed(raw.stdout.unwrap().get().as_bytes()),
            form: Form::Json { newline },
        },
        "stdout_text" => ActionRef::Stdout {
            body: cow_bytes(raw.stdout_text.unwrap()),
            form: Form::Text { newline },
        },
        "stdout_b64" => ActionRef::Stdout {
            body: Cow::Owned(decode("stdout_b64", raw.stdout_b64.as_deref().unwrap())?),
            form: Form::Base64,
        },
        "stderr" => ActionRef::Stderr {
            body: cow_bytes(raw.stderr.unwrap()),
            form: Form::Text { newline: false },
        },
        "stderr_b64" => ActionRef::Stderr {
            body: Cow::Owned(decode("stderr_b64", raw.stderr_b64.as_deref().unwrap())?),
            form: Form::Base64,
        },
        _ => unreachable!("decode_action sends only output keys here"),
    })
}

/// Text as bytes, still borrowed when it was.
fn cow_bytes(text: Cow<'_, str>) -> Cow<'_, [u8]> {
    match text {
        Cow::Borrowed(t) => Cow::Borrowed(t.as_bytes()),
        Cow::Owned(t) => Cow::Owned(t.into_bytes()),
    }
}

/// How the process ends: an exit status, a signal it dies by, or a hang.
fn decode_ending<'a>(raw: RawRecord<'a>, key: &str) -> Result<ActionRef<'a>, String> {
    Ok(match key {
        "exit" => {
            let code = raw.exit.unwrap();
            if !(0..=255).contains(&code) {
                return Err(format!(
                    "record field `exit`: exit codes are 0..=255, found {code}"
                ));
            }
            ActionRef::Exit(code)
        }
        "signal" => {
            let name = raw.signal.unwrap();
            if !SIGNAL_NAMES.contains(&name.as_str()) {
                return Err(format!(
                    "record field `signal`: unknown signal {name:?}; expected one of {}",
                    SIGNAL_NAMES.join(", ")
                ));
            }
            ActionRef::Signal(name)
        }
        "hang" => {
            if raw.hang != Some(true) {
                return Err("record field `hang`: must be true".into());
            }
            ActionRef::Hang
        }
        _ => unreachable!("decode_action sends only ending keys here"),
    })
}

/// The two-way records: what the client does, what the model was sent, a tool child gone.
fn decode_client<'a>(raw: RawRecord<'a>, key: &str) -> Result<ActionRef<'a>, String> {
    Ok(match key {
        "stdin" => {
            if let Some(fields) = &raw.fields {
                if let Some(f) = fields.iter().find(|f| f.is_empty() || *f == "id") {
                    return Err(format!(
                        "record field `match`: {f:?} is not a field to compare (the client's own `id` is echoed, never compared)"
                    ));
                }
            }
            ActionRef::Stdin(ClientLine {
                json: raw.stdin.unwrap().get().to_string(),
                fields: raw.fields,
            })
        }
        "stdin_text" => {
            let t = raw.stdin_text.unwrap();
            if t.contains('\n') {
                return Err(
                    "record field `stdin_text`: one line, without `\\n` (each stdin record is one line the client writes)".into(),
                );
            }
            ActionRef::StdinText(t)
        }
        "stdin_close" => {
            if raw.stdin_close != Some(true) {
                return Err("record field `stdin_close`: must be true".into());
            }
            ActionRef::StdinClose
        }
        "client_signal" => {
            let name = raw.client_signal.unwrap();
            if !CLIENT_SIGNALS.contains(&name.as_str()) {
                return Err(format!(
                    "record field `client_signal`: {name:?} is not one pi answers; expected one of {} (a client's SIGKILL is the end of a cassette that ends with `hang`)",
                    CLIENT_SIGNALS.join(", ")
                ));
            }
            ActionRef::ClientSignal(name)
        }
        "request" => {
            let r = raw.request.unwrap().get();
            if !r.starts_with('{') {
                return Err(
                    "record field `request`: must be a JSON object (the model request's log entry)"
                        .into(),
                );
            }
            ActionRef::Request(r.to_string())
        }
        "reap" => {
            let id = raw.reap.unwrap();
            if id.is_empty() {
                return Err("record field `reap`: the id of a `spawn` record".into());
            }
            ActionRef::Reap(id)
        }
        _ => unreachable!("every key is matched above"),
    })
}

/// A recorder's placeholder (`<SESSION_ID>`): `<`, capitals, digits or `_`, `>`.
fn is_placeholder(s: &str) -> bool {
    s.len() > 2
        && s.starts_with('<')
        && s.ends_with('>')
        && s[1..s.len() - 1]
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
}

/// A stdout line that is pi's `session` line names the session file fake-pi writes: its
/// `id` is a placeholder or a file-safe session id ([`pi_grammar::is_file_safe_session_id`]),
/// never a path. Any other line passes untouched.
fn check_session_line(body: &[u8]) -> Result<(), String> {
    if !body.starts_with(b"{\"type\":\"session\"") {
        return Ok(());
    }
    #[derive(Deserialize)]
    struct SessionLine<'a> {
        #[serde(borrow, default)]
        id: Option<Cow<'a, str>>,
    }
    let Ok(line) = serde_json::from_slice::<SessionLine>(body.trim_ascii_end()) else {
        // Not JSON (a text record that merely starts like one): nothing names a file.
        return Ok(());
    };
    match line.id.as_deref() {
        None => Ok(()),
        Some(id) if is_placeholder(id) || pi_grammar::is_file_safe_session_id(id) => Ok(()),
        Some(id) => Err(format!(
            "record field `stdout`: the `session` line's `id` {} is not a session id (1 to {} of A-Z a-z 0-9 . _ -, starting and ending with a letter or digit); fake-pi names the session file after it",
            shown(id),
            pi_grammar::MAX_SESSION_ID_BYTES
        )),
    }
}
