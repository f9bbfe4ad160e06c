//! The client side of a two-way (version 2) cassette, as pure rules: does a line a client
//! sent match the line the recording's client sent, and how a recorded response carries
//! the replaying client's own `id`. fake-pi applies them while it replays; `cassette show`
//! and tests use them too, so the rule lives in one place.

use serde_json::Value;

use crate::{Action, ClientLine, Header, Record};

/// The two-way protocol of a cassette: which field of a client line is its own id (never
/// compared, echoed in the answer) and which fields the agent ignores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Protocol {
    /// pi's `--mode rpc`: a command's `id`, echoed first in its `response`.
    #[default]
    Rpc,
    /// Claude Code's stream-json input: a host `control_request`'s `request_id`, echoed as
    /// `response.request_id` of the `control_response`; a line's `session_id` and `uuid`
    /// are not compared (the CLI does not act on them).
    StreamJson,
}

impl Protocol {
    /// The protocol of a two-way cassette (`Rpc` for anything but `stream-json`).
    pub fn of(header: &Header) -> Protocol {
        header
            .mode
            .as_deref()
            .and_then(Protocol::of_mode)
            .unwrap_or_default()
    }

    /// The protocol a header's `mode` (an agent's
    /// [`two_way`](pi_grammar::AgentSpec::two_way)) names.
    pub fn of_mode(mode: &str) -> Option<Protocol> {
        [Protocol::Rpc, Protocol::StreamJson]
            .into_iter()
            .find(|p| p.mode() == mode)
    }

    /// The `mode` a cassette of this protocol has.
    pub fn mode(self) -> &'static str {
        match self {
            Protocol::Rpc => "rpc",
            Protocol::StreamJson => "stream-json",
        }
    }

    /// The id a client line carries (its JSON text), if any.
    fn id_of(self, line: &serde_json::Map<String, Value>) -> Option<String> {
        match self {
            Protocol::Rpc => line.get("id").map(Value::to_string),
            Protocol::StreamJson => (line.get("type").and_then(Value::as_str)
                == Some("control_request"))
            .then(|| line.get("request_id").map(Value::to_string))
            .flatten(),
        }
    }

    /// Is `field` of a client line `line` left out of the comparison?
    fn ignores(self, field: &str, line: &serde_json::Map<String, Value>) -> bool {
        match self {
            Protocol::Rpc => field == "id",
            Protocol::StreamJson => {
                matches!(field, "session_id" | "uuid")
                    || (field == "request_id"
                        && line.get("type").and_then(Value::as_str) == Some("control_request"))
            }
        }
    }

    /// A recorded answer with the replaying client's id in place of the recorded one.
    pub fn echo(self, body: &[u8], id: Option<&str>) -> Vec<u8> {
        match self {
            Protocol::Rpc => with_id(body, id),
            Protocol::StreamJson => with_request_id(body, id),
        }
    }
}

/// What a two-way cassette's client does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientAction {
    /// Writes this JSON line (as recorded).
    Line(String),
    /// Writes this line as it is (not JSON, or an empty line).
    Raw(String),
    /// Closes stdin.
    Close,
    /// Sends this signal (`SIGTERM`, `SIGINT`, `SIGHUP`).
    Signal(String),
}

/// One client action, where it stands: its cassette line and how many stdout lines come
/// before it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientStep {
    /// The cassette line of the action's record.
    pub line: usize,
    /// How many stdout lines the replay writes before it.
    pub after_stdout_lines: u64,
    /// What the client does.
    pub action: ClientAction,
}

/// The client's actions among `records`, in order (none for a json-mode cassette).
pub fn client_steps(records: &[Record]) -> Vec<ClientStep> {
    let mut out = Vec::new();
    let mut seen = 0;
    for r in records {
        let action = match &r.action {
            Action::Stdout(_) => {
                seen += 1;
                continue;
            }
            Action::Stdin(l) => ClientAction::Line(l.json.clone()),
            Action::StdinText(t) => ClientAction::Raw(t.clone()),
            Action::StdinClose => ClientAction::Close,
            Action::ClientSignal(s) => ClientAction::Signal(s.clone()),
            _ => continue,
        };
        out.push(ClientStep {
            line: r.line,
            after_stdout_lines: seen,
            action,
        });
    }
    out
}

/// What a client line that matched gives the replay: the `id` it carried (its JSON text,
/// as sent), to be echoed in the responses that answer it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Matched {
    /// The `id` the client's line carried (its JSON text), if any.
    pub id: Option<String>,
}

/// One way a client line differs from the recorded one: the field (`None` for the whole
/// line), what the recording has, what the client sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    /// The field that differs; `None` for the whole line.
    pub field: Option<String>,
    /// What the recording has.
    pub expected: String,
    /// What the client sent.
    pub actual: String,
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.field {
            Some(field) => write!(
                f,
                "field `{field}`: expected {}, got {}",
                self.expected, self.actual
            ),
            None => write!(f, "expected {}, got {}", self.expected, self.actual),
        }
    }
}

/// The JSON text of `v`, or `absent`.
fn shown(v: Option<&Value>) -> String {
    v.map_or_else(|| "no such field".to_string(), Value::to_string)
}

/// A line, as a client wrote it, for a message (at most 200 characters).
pub fn excerpt(line: &[u8]) -> String {
    let text = String::from_utf8_lossy(line);
    let mut out: String = text.chars().take(200).collect();
    if out.len() < text.len() {
        out.push('…');
    }
    format!("{out:?}")
}

/// Does `line` (one line without its `\n`; a trailing `\r` is whitespace, as pi reads it)
/// match the recorded JSON line `expected`? Compared by meaning: key order and spacing do
/// not matter; `type` always, then the record's `match` fields, or every field but `id`.
pub fn match_json(expected: &ClientLine, line: &[u8]) -> Result<Matched, Vec<Difference>> {
    match_line(Protocol::Rpc, expected, line)
}

/// [`match_json`] under `protocol`'s rules for ids and ignored fields.
pub fn match_line(
    protocol: Protocol,
    expected: &ClientLine,
    line: &[u8],
) -> Result<Matched, Vec<Difference>> {
    let want: Value = match serde_json::from_str(&expected.json) {
        Ok(v) => v,
        // The reader checked it is JSON; a failure here would be a reader bug.
        Err(e) => {
            return Err(vec![Difference {
                field: None,
                expected: format!("the recorded line ({e})"),
                actual: excerpt(line),
            }])
        }
    };
    let got: Value = match serde_json::from_slice(line) {
        Ok(v) => v,
        Err(_) => {
            return Err(vec![Difference {
                field: None,
                expected: format!("the JSON line {}", expected.json),
                actual: format!("a line that is not JSON: {}", excerpt(line)),
            }])
        }
    };
    let (Value::Object(w), Value::Object(g)) = (&want, &got) else {
        return if want == got {
            Ok(Matched { id: None })
        } else {
            Err(vec![Difference {
                field: None,
                expected: want.to_string(),
                actual: got.to_string(),
            }])
        };
    };
    let mut fields: Vec<&str> = vec!["type"];
    match &expected.fields {
        Some(list) => fields.extend(list.iter().map(String::as_str)),
        None => fields.extend(w.keys().chain(g.keys()).map(String::as_str)),
    }
    fields.sort_unstable();
    fields.dedup();
    let differences: Vec<Difference> = fields
        .into_iter()
        .filter(|f| !protocol.ignores(f, w) && !protocol.ignores(f, g) && w.get(*f) != g.get(*f))
        .map(|f| Difference {
            field: Some(f.to_string()),
            expected: shown(w.get(f)),
            actual: shown(g.get(f)),
        })
        .collect();
    if differences.is_empty() {
        Ok(Matched {
            id: protocol.id_of(g),
        })
    } else {
        Err(differences)
    }
}

/// Does `line` match a recorded `stdin_text` line? Byte for byte.
pub fn match_text(expected: &str, line: &[u8]) -> Result<Matched, Vec<Difference>> {
    if line == expected.as_bytes() {
        Ok(Matched { id: None })
    } else {
        Err(vec![Difference {
            field: None,
            expected: format!("the line {}", excerpt(expected.as_bytes())),
            actual: format!("the line {}", excerpt(line)),
        }])
    }
}

/// A recorded response (`body`, a JSON object as pi wrote it: `id` first when there is
/// one) with the replaying client's `id` instead of the recorded one: first, as pi puts
/// it, or no `id` at all when the client sent none.
pub fn with_id(body: &[u8], id: Option<&str>) -> Vec<u8> {
    const KEY: &[u8] = b"{\"id\":";
    let rest: &[u8] = match body.strip_prefix(KEY) {
        Some(after) => {
            let mut values =
                serde_json::Deserializer::from_slice(after).into_iter::<serde::de::IgnoredAny>();
            match values.next() {
                Some(Ok(_)) => {
                    let end = values.byte_offset();
                    match after[end..].strip_prefix(b",") {
                        Some(more) => more,
                        // `{"id":1}` alone: nothing after it.
                        None => &after[end..],
                    }
                }
                _ => return body.to_vec(),
            }
        }
        None => match body.strip_prefix(b"{") {
            Some(r) => r,
            None => return body.to_vec(),
        },
    };
    let mut out = Vec::with_capacity(body.len() + 16);
    out.push(b'{');
    if let Some(id) = id {
        out.extend_from_slice(b"\"id\":");
        out.extend_from_slice(id.as_bytes());
        if !rest.starts_with(b"}") {
            out.push(b',');
        }
    }
    out.extend_from_slice(rest);
    out
}

/// A recorded `control_response` (`body`) with the replaying host's `request_id` (JSON
/// text) in place of the recorded one: the first `"request_id":` value is replaced, as the
/// CLI writes it (`{"type":"control_response","response":{"subtype":..,"request_id":..}}`).
/// Without an id, or without that key, the body is kept.
pub fn with_request_id(body: &[u8], id: Option<&str>) -> Vec<u8> {
    const KEY: &[u8] = b"\"request_id\":";
    let (Some(id), Some(at)) = (id, memchr::memmem::find(body, KEY)) else {
        return body.to_vec();
    };
    let start = at + KEY.len();
    let mut values =
        serde_json::Deserializer::from_slice(&body[start..]).into_iter::<serde::de::IgnoredAny>();
    let Some(Ok(_)) = values.next() else {
        return body.to_vec();
    };
    let end = start + values.byte_offset();
    let mut out = Vec::with_capacity(body.len() + id.len());
    out.extend_from_slice(&body[..start]);
    out.extend_from_slice(id.as_bytes());
    out.extend_from_slice(&body[end..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(json: &str, fields: Option<&[&str]>) -> ClientLine {
        ClientLine {
            json: json.into(),
            fields: fields.map(|f| f.iter().map(|s| s.to_string()).collect()),
        }
    }

    #[test]
    fn a_command_matches_by_meaning_and_gives_its_id() {
        let rec = line(r#"{"id":"p1","type":"prompt","message":"hi"}"#, None);
        let m = match_json(&rec, br#"{ "message" : "hi", "type":"prompt", "id": 7 }"#).unwrap();
        assert_eq!(m.id.as_deref(), Some("7"));
        let m = match_json(&rec, b"{\"type\":\"prompt\",\"message\":\"hi\"}\r").unwrap();
        assert_eq!(m.id, None);
    }

    #[test]
    fn a_different_command_names_each_field() {
        let rec = line(r#"{"id":"p1","type":"prompt","message":"hi"}"#, None);
        let e = match_json(
            &rec,
            br#"{"id":"p1","type":"prompt","message":"hello","streamingBehavior":"steer"}"#,
        )
        .unwrap_err();
        let shown: Vec<String> = e.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                r#"field `message`: expected "hi", got "hello""#,
                r#"field `streamingBehavior`: expected no such field, got "steer""#,
            ]
        );
        let e = match_json(&rec, b"this is not json").unwrap_err();
        assert!(e[0].actual.contains("not JSON"), "{e:?}");
    }

    #[test]
    fn match_fields_narrow_the_comparison_but_type_always_counts() {
        let rec = line(
            r#"{"type":"prompt","message":"hi","images":[]}"#,
            Some(&["message"]),
        );
        assert!(match_json(&rec, br#"{"type":"prompt","message":"hi"}"#).is_ok());
        let e = match_json(&rec, br#"{"type":"steer","message":"hi"}"#).unwrap_err();
        assert_eq!(e[0].field.as_deref(), Some("type"));
    }

    #[test]
    fn stream_json_lines_ignore_session_and_echo_request_ids() {
        let user = line(
            r#"{"type":"user","session_id":"","parent_tool_use_id":null,"message":{"role":"user","content":"hi"}}"#,
            None,
        );
        let sent = br#"{"type":"user","session_id":"abc","message":{"role":"user","content":"hi"},"parent_tool_use_id":null}"#;
        assert_eq!(
            match_line(Protocol::StreamJson, &user, sent).unwrap().id,
            None
        );
        // Under RPC rules the session id counts.
        assert!(match_json(&user, sent).is_err());
        let interrupt = line(
            r#"{"type":"control_request","request_id":"int-1","request":{"subtype":"interrupt"}}"#,
            None,
        );
        let m = match_line(
            Protocol::StreamJson,
            &interrupt,
            br#"{"type":"control_request","request_id":"mine","request":{"subtype":"interrupt"}}"#,
        )
        .unwrap();
        assert_eq!(m.id.as_deref(), Some(r#""mine""#));
        // An answer to the CLI's permission request: its request_id is compared (it must
        // be the one the CLI issued) and nothing is echoed.
        let allow = line(
            r#"{"type":"control_response","response":{"subtype":"success","request_id":"r-9","response":{"behavior":"allow"}}}"#,
            None,
        );
        let e = match_line(
            Protocol::StreamJson,
            &allow,
            br#"{"type":"control_response","response":{"subtype":"success","request_id":"r-8","response":{"behavior":"allow"}}}"#,
        )
        .unwrap_err();
        assert_eq!(e[0].field.as_deref(), Some("response"));
        let deny = br#"{"type":"control_response","response":{"subtype":"success","request_id":"r-9","response":{"behavior":"deny","message":"no"}}}"#;
        assert!(match_line(Protocol::StreamJson, &allow, deny).is_err());
        let rec = br#"{"type":"control_response","response":{"subtype":"success","request_id":"int-1","response":{"still_queued":[]}}}"#;
        assert_eq!(
            Protocol::StreamJson.echo(rec, Some(r#""mine""#)),
            br#"{"type":"control_response","response":{"subtype":"success","request_id":"mine","response":{"still_queued":[]}}}"#
        );
        assert_eq!(Protocol::StreamJson.echo(rec, None), rec.to_vec());
    }

    #[test]
    fn text_lines_match_byte_for_byte() {
        assert!(match_text("this is not json", b"this is not json").is_ok());
        assert!(match_text("", b"").is_ok());
        assert!(match_text("this is not json", b"this is not json ").is_err());
    }

    #[test]
    fn responses_carry_the_replaying_clients_id() {
        let rec = br#"{"id":"p1","type":"response","command":"prompt","success":true}"#;
        assert_eq!(
            with_id(rec, Some("42")),
            br#"{"id":42,"type":"response","command":"prompt","success":true}"#
        );
        assert_eq!(
            with_id(rec, None),
            br#"{"type":"response","command":"prompt","success":true}"#
        );
        let no_id = br#"{"type":"response","command":"prompt","success":true}"#;
        assert_eq!(
            with_id(no_id, Some(r#""x""#)),
            br#"{"id":"x","type":"response","command":"prompt","success":true}"#
        );
        // An id that is an object with commas inside is skipped whole.
        let odd = br#"{"id":{"a":1,"b":[2,3]},"type":"response"}"#;
        assert_eq!(with_id(odd, Some("1")), br#"{"id":1,"type":"response"}"#);
        assert_eq!(with_id(br#"{"id":1}"#, None), b"{}");
        assert_eq!(with_id(b"{}", Some("1")), br#"{"id":1}"#);
    }
}
