//! Which client line a response answers: the client lines seen so far (their `id` and
//! `type`) and which of them were answered (see the parent module's doc for the rule).

use std::collections::HashSet;

use serde_json::Value;

use crate::two_way::Protocol;

/// The client lines of a transcript so far, in order, and the ones answered.
#[derive(Debug, Default)]
pub(super) struct ClientLines {
    /// The `id` (JSON text) and `type` of each client line.
    lines: Vec<(Option<String>, Option<String>)>,
    answered: HashSet<usize>,
}

impl ClientLines {
    /// A JSON line the client wrote.
    pub(super) fn json(&mut self, protocol: Protocol, line: &Value) {
        self.lines.push((
            client_id(protocol, line),
            line.get("type").and_then(Value::as_str).map(str::to_string),
        ));
    }

    /// A line the client wrote that is not one JSON value: it has neither `id` nor `type`.
    pub(super) fn text(&mut self) {
        self.lines.push((None, None));
    }

    /// The index of the client line `response` answers, if it is a response to one.
    pub(super) fn reply_to(&mut self, protocol: Protocol, response: &Value) -> Option<u32> {
        reply_to(protocol, response, &self.lines, &mut self.answered)
    }
}

/// The id a client line carries under `protocol` (its JSON text).
fn client_id(protocol: Protocol, line: &Value) -> Option<String> {
    match protocol {
        Protocol::Rpc => line.get("id").map(Value::to_string),
        Protocol::StreamJson => (line.get("type").and_then(Value::as_str)
            == Some("control_request"))
        .then(|| line.get("request_id").map(Value::to_string))
        .flatten(),
    }
}

/// Which client line a response answers (see the module doc).
fn reply_to(
    protocol: Protocol,
    response: &Value,
    client: &[(Option<String>, Option<String>)],
    answered: &mut HashSet<usize>,
) -> Option<u32> {
    if protocol == Protocol::StreamJson {
        // A control_response names the host's control_request by `request_id`.
        if response.get("type").and_then(Value::as_str) != Some("control_response") {
            return None;
        }
        let id = response["response"].get("request_id")?.to_string();
        let k = client
            .iter()
            .rposition(|(i, _)| i.as_deref() == Some(id.as_str()))?;
        answered.insert(k);
        return u32::try_from(k).ok();
    }
    if response.get("type").and_then(Value::as_str) != Some("response") {
        return None;
    }
    let k = match response.get("id") {
        Some(id) => {
            let id = id.to_string();
            client
                .iter()
                .rposition(|(i, _)| i.as_deref() == Some(id.as_str()))?
        }
        None => {
            let command = response.get("command")?.as_str()?;
            client.iter().enumerate().position(|(k, (id, ty))| {
                id.is_none() && ty.as_deref() == Some(command) && !answered.contains(&k)
            })?
        }
    };
    answered.insert(k);
    u32::try_from(k).ok()
}
