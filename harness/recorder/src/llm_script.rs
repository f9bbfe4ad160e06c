//! Scripts for the scripted LLM server (see `cassettes/scripts/README.md`).
//!
//! This module owns the script data model (what the fake model answers, request by
//! request), reading it with `file: field: problem` errors, and rendering one answer
//! into the exact bytes of an OpenAI chat-completions or Anthropic messages SSE stream
//! (the OpenAI Responses stream is [`responses`]'s, Google's Gemini API [`gemini`]'s). It is
//! pure: no sockets, no clocks
//! (delays are data the server acts on).

mod gemini;
mod responses;

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use serde_json::{json, Value};

/// A whole script: the answers in request order, plus the files of the scenario's workspace.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// What the script is for (not used by the server).
    #[serde(default)]
    pub description: Option<String>,
    /// Files to create in pi's working directory before it starts (relative path -> content).
    #[serde(default)]
    pub files: BTreeMap<String, String>,
    /// One entry per HTTP request, in order (an entry with `repeat: N` answers N requests).
    pub turns: Vec<Turn>,
    /// What to answer once the turns are used up.
    #[serde(default)]
    pub after_last: AfterLast,
}

/// What the server answers once a script's turns are used up (`after_last`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AfterLast {
    /// HTTP 500 naming the problem, with `x-should-retry: false`.
    #[default]
    Error,
    /// Answer with the last turn again.
    RepeatLast,
}

/// One answer.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Turn {
    /// Reasoning (thinking) chunks, streamed first.
    #[serde(default)]
    pub reasoning: Vec<String>,
    /// Text chunks, streamed after the reasoning.
    #[serde(default)]
    pub text: Vec<String>,
    /// Extra text chunks: `chunk` repeated `count` times, after `text` (long answers).
    #[serde(default)]
    pub text_repeat: Option<Repeat>,
    /// Tool calls, streamed after the text; arguments in pieces of `chunk_bytes`.
    #[serde(default)]
    pub tools: Vec<ToolCall>,
    /// Finish reason; default `tool_calls` when there are tools, else `stop`.
    #[serde(default)]
    pub finish: Option<String>,
    /// Token usage reported at the end; default input 100, output = number of chunks.
    #[serde(default)]
    pub usage: Option<Usage>,
    /// Wait this long before the response head.
    #[serde(default)]
    pub first_byte_delay_ms: u64,
    /// Wait this long before each SSE event.
    #[serde(default)]
    pub chunk_delay_ms: u64,
    /// Write each event in two pieces, cut inside its first multi-byte UTF-8 character.
    #[serde(default)]
    pub split_utf8: bool,
    /// Send the first N events, then stay silent until the client hangs up.
    #[serde(default)]
    pub stall_after: Option<usize>,
    /// Send the first N events, then drop the connection mid-stream (no terminating chunk).
    #[serde(default)]
    pub cut_after: Option<usize>,
    /// An HTTP error instead of a stream.
    #[serde(default)]
    pub status: Option<u16>,
    /// Error message; the body becomes the API's usual error object.
    #[serde(default)]
    pub msg: Option<String>,
    /// Error body, verbatim (a string) or as JSON; wins over `msg`.
    #[serde(default)]
    pub body: Option<Value>,
    /// Extra response headers (for example `x-should-retry: false`).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// This turn answers that many consecutive requests (default 1).
    #[serde(default)]
    pub repeat: Option<u32>,
}

/// A text chunk repeated (`text_repeat`): long answers without long scripts.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Repeat {
    /// The chunk.
    pub chunk: String,
    /// How many times it is streamed.
    pub count: usize,
}

/// A tool call the model makes.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolCall {
    /// The call's id.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments object; serialized compactly and streamed in pieces.
    pub args: Value,
    /// Size of the argument pieces in bytes (cut on character boundaries). Default 8.
    #[serde(default)]
    pub chunk_bytes: Option<usize>,
}

/// Token usage a turn reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Usage {
    /// Input tokens.
    pub input: u64,
    /// Output tokens.
    pub output: u64,
}

/// Which wire protocol a request came in on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    /// `POST /v1/chat/completions`
    OpenAi,
    /// `POST /v1/messages`
    Anthropic,
    /// `POST /v1/responses` (the OpenAI Responses API)
    Responses,
}

/// One piece of a streamed body, written after waiting `delay_ms`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Piece {
    /// Milliseconds to wait before writing it.
    pub delay_ms: u64,
    /// What is written.
    pub bytes: Vec<u8>,
}

/// What the server does for one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// An HTTP error with a complete body.
    Error {
        /// The HTTP status (4xx or 5xx).
        status: u16,
        /// Extra response headers.
        headers: Vec<(String, String)>,
        /// The response body.
        body: Vec<u8>,
        /// Milliseconds to wait before the response head.
        first_byte_delay_ms: u64,
    },
    /// A 200 SSE stream.
    Stream {
        /// Extra response headers.
        headers: Vec<(String, String)>,
        /// The body, piece by piece.
        pieces: Vec<Piece>,
        /// Milliseconds to wait before the response head.
        first_byte_delay_ms: u64,
        /// After the pieces: end normally, stall, or cut.
        end: StreamEnd,
    },
    /// A 200 JSON body (Gemini's `generateContent`), in pieces as one stream event is, so
    /// that delays, `split_utf8`, `cut_after` and `stall_after` act on it alike.
    Json {
        /// Extra response headers.
        headers: Vec<(String, String)>,
        /// The body, piece by piece.
        pieces: Vec<Piece>,
        /// Milliseconds to wait before the response head.
        first_byte_delay_ms: u64,
        /// After the pieces: end normally, stall, or cut.
        end: StreamEnd,
    },
}

/// How a streamed answer ends after its pieces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamEnd {
    /// The terminating chunk: a complete response.
    Complete,
    /// Silence until the client hangs up (or the server stops).
    Stall,
    /// The connection dropped mid-stream (no terminating chunk).
    Cut,
}

/// A script problem, naming the file and the field.
#[derive(Debug, thiserror::Error)]
#[error("{file}: {message}")]
#[non_exhaustive]
pub struct ScriptError {
    /// The script file.
    pub file: String,
    /// What is wrong, naming the field (`turns[0].status: ...`).
    pub message: String,
}

impl Script {
    /// Read and check a script file.
    pub fn load(path: &Path) -> Result<Script, ScriptError> {
        let err = |message: String| ScriptError {
            file: path.display().to_string(),
            message,
        };
        let text = std::fs::read_to_string(path).map_err(|e| err(format!("cannot read: {e}")))?;
        Script::parse(&text).map_err(err)
    }

    /// Parse and check script text; the error names the field.
    pub fn parse(text: &str) -> Result<Script, String> {
        let script: Script = serde_json::from_str(text).map_err(|e| format!("{e}"))?;
        script.check()?;
        Ok(script)
    }

    fn check(&self) -> Result<(), String> {
        // No turns: the run never reaches the model (see `expects_no_request`).
        if self.turns.is_empty() && self.after_last == AfterLast::RepeatLast {
            return Err(
                "`after_last`: \"repeat_last\" with no turns: there is no last turn to repeat (`\"turns\": []` says the run never reaches the model)"
                    .into(),
            );
        }
        for (i, t) in self.turns.iter().enumerate() {
            let at = |field: &str| format!("turns[{i}].{field}");
            if let Some(s) = t.status {
                // 1xx are not final answers (HTTP cannot end a request with one).
                if !(201..=599).contains(&s) {
                    return Err(format!(
                        "{}: {s} is not an HTTP error status (use 4xx or 5xx; omit it for a stream)",
                        at("status")
                    ));
                }
                let streamed = !t.reasoning.is_empty()
                    || !t.text.is_empty()
                    || t.text_repeat.is_some()
                    || !t.tools.is_empty();
                if streamed {
                    return Err(format!(
                        "turns[{i}]: `status` (an HTTP error) cannot be combined with reasoning/text/tools"
                    ));
                }
            } else if t.msg.is_some() || t.body.is_some() {
                return Err(format!(
                    "turns[{i}]: `msg`/`body` describe an HTTP error and need `status`"
                ));
            }
            if t.stall_after.is_some() && t.cut_after.is_some() {
                return Err(format!(
                    "turns[{i}]: `stall_after` and `cut_after` exclude each other"
                ));
            }
            if t.repeat == Some(0) {
                return Err(format!("{}: must be at least 1", at("repeat")));
            }
            for (j, tool) in t.tools.iter().enumerate() {
                if tool.id.is_empty() || tool.name.is_empty() {
                    return Err(format!(
                        "turns[{i}].tools[{j}]: `id` and `name` must be set"
                    ));
                }
                if tool.chunk_bytes == Some(0) {
                    return Err(format!(
                        "turns[{i}].tools[{j}].chunk_bytes: must be at least 1"
                    ));
                }
            }
            for name in t.headers.keys() {
                if name.is_empty() || !name.bytes().all(is_token_byte) {
                    return Err(format!("{}: bad header name {name:?}", at("headers")));
                }
            }
            for (name, value) in &t.headers {
                if value.contains(['\r', '\n']) {
                    return Err(format!(
                        "{}: value of {name:?} contains a line break",
                        at("headers")
                    ));
                }
                if value.chars().any(|c| c.is_ascii_control() && c != '\t') {
                    return Err(format!(
                        "{}: value of {name:?} contains a control character",
                        at("headers")
                    ));
                }
            }
        }
        Ok(())
    }

    /// The turn answering the `n`-th request (0-based), or `None` when the script is used up.
    pub fn turn_for(&self, n: usize) -> Option<(usize, &Turn)> {
        let mut left = n;
        for (i, t) in self.turns.iter().enumerate() {
            let times = t.repeat.unwrap_or(1) as usize;
            if left < times {
                return Some((i, t));
            }
            left -= times;
        }
        match self.after_last {
            AfterLast::Error => None,
            AfterLast::RepeatLast => self.turns.last().map(|t| (self.turns.len() - 1, t)),
        }
    }

    /// How many requests the script answers before it runs out (`None` = unbounded).
    pub fn capacity(&self) -> Option<usize> {
        match self.after_last {
            AfterLast::RepeatLast => None,
            AfterLast::Error => Some(
                self.turns
                    .iter()
                    .map(|t| t.repeat.unwrap_or(1) as usize)
                    .sum(),
            ),
        }
    }

    /// The script says the run it plays for never reaches the model: no turns (`"turns":
    /// []`). A recording that made no model request is an error unless this holds, and one
    /// that made a request gets HTTP 500 and is refused as exhausted.
    pub fn expects_no_request(&self) -> bool {
        self.turns.is_empty()
    }
}

/// A byte allowed in an HTTP header name (RFC 9110 `tchar`).
fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// The reply when the script has no turn left for request `n` (0-based).
pub fn exhausted_reply(api: Api, n: usize, capacity: usize) -> Reply {
    exhausted(n, capacity, |status, msg| error_body(api, status, msg))
}

/// [`exhausted_reply`] on Google's Gemini API.
pub fn exhausted_gemini_reply(n: usize, capacity: usize) -> Reply {
    exhausted(n, capacity, gemini::error_body)
}

fn exhausted(n: usize, capacity: usize, api_body: impl Fn(u16, &str) -> String) -> Reply {
    let msg = format!(
        "pi-harness serve-llm: the script has no answer for request {} (it answers {capacity})",
        n + 1
    );
    Reply::Error {
        status: 500,
        headers: vec![("x-should-retry".into(), "false".into())],
        body: api_body(500, &msg).into_bytes(),
        first_byte_delay_ms: 0,
    }
}

fn error_body(api: Api, status: u16, msg: &str) -> String {
    match api {
        Api::OpenAi | Api::Responses => {
            json!({"error":{"message":msg,"type":error_type(status),"code":null}})
        }
        Api::Anthropic => json!({"type":"error","error":{"type":error_type(status),"message":msg}}),
    }
    .to_string()
}

fn error_type(status: u16) -> &'static str {
    match status {
        400 => "invalid_request_error",
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        429 => "rate_limit_error",
        529 => "overloaded_error",
        _ => "api_error",
    }
}

/// Render the reply to request number `request` (1-based, used in response ids).
pub fn render(turn: &Turn, api: Api, model: &str, request: usize) -> Reply {
    if let Some(reply) = error_reply(turn, |status, msg| error_body(api, status, msg)) {
        return reply;
    }
    let events = match api {
        Api::OpenAi => openai_events(turn, model, request),
        Api::Anthropic => anthropic_events(turn, model, request),
        Api::Responses => responses::events(turn, model, request),
    };
    let (headers, pieces, first_byte_delay_ms, end) = pieces(turn, events);
    Reply::Stream {
        headers,
        pieces,
        first_byte_delay_ms,
        end,
    }
}

/// Render the reply to request number `request` on Google's Gemini API for `model` (the
/// model of the request's path): `streamGenerateContent` when `stream`, else
/// `generateContent`. Not an [`Api`]: the recorder never serves pi's providers on it.
pub fn render_gemini(turn: &Turn, model: &str, request: usize, stream: bool) -> Reply {
    if let Some(reply) = error_reply(turn, gemini::error_body) {
        return reply;
    }
    if stream {
        let (headers, pieces, first_byte_delay_ms, end) =
            pieces(turn, gemini::events(turn, model, request));
        return Reply::Stream {
            headers,
            pieces,
            first_byte_delay_ms,
            end,
        };
    }
    let (headers, pieces, first_byte_delay_ms, end) =
        pieces(turn, vec![gemini::whole(turn, model, request)]);
    Reply::Json {
        headers,
        pieces,
        first_byte_delay_ms,
        end,
    }
}

/// The HTTP error a turn with a `status` is, its body from `api_body(status, msg)` unless
/// the turn gives one; `None` for a stream.
fn error_reply(turn: &Turn, api_body: impl Fn(u16, &str) -> String) -> Option<Reply> {
    let status = turn.status?;
    let body = match (&turn.body, &turn.msg) {
        (Some(Value::String(s)), _) => s.clone(),
        (Some(v), _) => v.to_string(),
        (None, Some(msg)) => api_body(status, msg),
        (None, None) => api_body(status, &format!("HTTP {status}")),
    };
    Some(Reply::Error {
        status,
        headers: headers_of(turn),
        body: body.into_bytes(),
        first_byte_delay_ms: turn.first_byte_delay_ms,
    })
}

fn headers_of(turn: &Turn) -> Vec<(String, String)> {
    turn.headers
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// The events as the pieces the server writes (after `cut_after`/`stall_after`, split by
/// `split_utf8`, with the delays), with the turn's headers, first-byte delay and end.
fn pieces(turn: &Turn, events: Vec<String>) -> (Vec<(String, String)>, Vec<Piece>, u64, StreamEnd) {
    let limit = turn.stall_after.or(turn.cut_after).unwrap_or(usize::MAX);
    let end = if turn.stall_after.is_some() {
        StreamEnd::Stall
    } else if turn.cut_after.is_some() {
        StreamEnd::Cut
    } else {
        StreamEnd::Complete
    };
    let mut pieces = Vec::new();
    for ev in events.into_iter().take(limit) {
        let bytes = ev.into_bytes();
        let split = if turn.split_utf8 {
            utf8_split_point(&bytes)
        } else {
            None
        };
        let delay_ms = turn.chunk_delay_ms;
        match split {
            Some(at) => {
                pieces.push(Piece {
                    delay_ms,
                    bytes: bytes[..at].to_vec(),
                });
                pieces.push(Piece {
                    delay_ms: 0,
                    bytes: bytes[at..].to_vec(),
                });
            }
            None => pieces.push(Piece { delay_ms, bytes }),
        }
    }
    (headers_of(turn), pieces, turn.first_byte_delay_ms, end)
}

/// A byte index inside the first multi-byte UTF-8 character, if there is one.
pub fn utf8_split_point(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|&b| b >= 0xC0).map(|i| i + 1)
}

fn sse_data(v: &Value) -> String {
    format!("data: {v}\n\n")
}

fn text_chunks(turn: &Turn) -> impl Iterator<Item = &str> {
    let repeat = turn
        .text_repeat
        .iter()
        .flat_map(|r| std::iter::repeat(r.chunk.as_str()).take(r.count));
    turn.text.iter().map(String::as_str).chain(repeat)
}

/// Argument pieces of at most `size` bytes, cut on character boundaries.
pub fn arg_pieces(args: &str, size: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < args.len() {
        let mut end = (start + size).min(args.len());
        while !args.is_char_boundary(end) {
            end += 1;
        }
        out.push(&args[start..end]);
        start = end;
    }
    out
}

fn usage_of(turn: &Turn) -> Usage {
    turn.usage.unwrap_or_else(|| {
        let chunks = turn.reasoning.len()
            + turn.text.len()
            + turn.text_repeat.as_ref().map_or(0, |r| r.count)
            + turn.tools.len();
        Usage {
            input: 100,
            output: chunks as u64,
        }
    })
}

fn openai_events(turn: &Turn, model: &str, request: usize) -> Vec<String> {
    let id = format!("c{request}");
    let chunk = |delta: Value, finish: Value| {
        sse_data(&json!({
            "id": id, "object": "chat.completion.chunk", "created": 1_700_000_000u64, "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]
        }))
    };
    let mut out = vec![chunk(json!({"role": "assistant"}), Value::Null)];
    for r in &turn.reasoning {
        out.push(chunk(json!({"reasoning_content": r}), Value::Null));
    }
    for t in text_chunks(turn) {
        out.push(chunk(json!({"content": t}), Value::Null));
    }
    for (i, tool) in turn.tools.iter().enumerate() {
        out.push(chunk(
            json!({"tool_calls": [{"index": i, "id": tool.id, "type": "function",
                    "function": {"name": tool.name, "arguments": ""}}]}),
            Value::Null,
        ));
        let args = tool.args.to_string();
        for p in arg_pieces(&args, tool.chunk_bytes.unwrap_or(8)) {
            out.push(chunk(
                json!({"tool_calls": [{"index": i, "function": {"arguments": p}}]}),
                Value::Null,
            ));
        }
    }
    let finish = turn.finish.clone().unwrap_or_else(|| {
        if turn.tools.is_empty() {
            "stop"
        } else {
            "tool_calls"
        }
        .to_string()
    });
    out.push(chunk(json!({}), Value::String(finish)));
    let u = usage_of(turn);
    out.push(sse_data(&json!({
        "id": id, "object": "chat.completion.chunk", "created": 1_700_000_000u64, "model": model,
        "choices": [],
        "usage": {"prompt_tokens": u.input, "completion_tokens": u.output, "total_tokens": u.input + u.output}
    })));
    out.push("data: [DONE]\n\n".to_string());
    out
}

fn anthropic_events(turn: &Turn, model: &str, request: usize) -> Vec<String> {
    let ev = |name: &str, v: Value| format!("event: {name}\ndata: {v}\n\n");
    let u = usage_of(turn);
    let mut out = vec![ev(
        "message_start",
        json!({"type": "message_start", "message": {
            "id": format!("msg_{request}"), "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": u.input, "output_tokens": 1}}}),
    )];
    let mut index = 0usize;
    if !turn.reasoning.is_empty() {
        out.push(ev(
            "content_block_start",
            json!({"type": "content_block_start", "index": index,
                   "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
        ));
        for r in &turn.reasoning {
            out.push(ev(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index,
                       "delta": {"type": "thinking_delta", "thinking": r}}),
            ));
        }
        out.push(ev(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": index,
                   "delta": {"type": "signature_delta", "signature": format!("sig-{request}")}}),
        ));
        out.push(ev(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        ));
        index += 1;
    }
    if turn.text_repeat.is_some() || !turn.text.is_empty() {
        out.push(ev(
            "content_block_start",
            json!({"type": "content_block_start", "index": index,
                   "content_block": {"type": "text", "text": ""}}),
        ));
        for t in text_chunks(turn) {
            out.push(ev(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index,
                       "delta": {"type": "text_delta", "text": t}}),
            ));
        }
        out.push(ev(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        ));
        index += 1;
    }
    for tool in &turn.tools {
        out.push(ev(
            "content_block_start",
            json!({"type": "content_block_start", "index": index,
                   "content_block": {"type": "tool_use", "id": tool.id, "name": tool.name, "input": {}}}),
        ));
        let args = tool.args.to_string();
        for p in arg_pieces(&args, tool.chunk_bytes.unwrap_or(8)) {
            out.push(ev(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index,
                       "delta": {"type": "input_json_delta", "partial_json": p}}),
            ));
        }
        out.push(ev(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        ));
        index += 1;
    }
    let stop = match turn.finish.as_deref() {
        Some("length") => "max_tokens".to_string(),
        Some("tool_calls") => "tool_use".to_string(),
        Some("stop") => "end_turn".to_string(),
        Some(other) => other.to_string(),
        None if turn.tools.is_empty() => "end_turn".to_string(),
        None => "tool_use".to_string(),
    };
    out.push(ev(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
               "usage": {"output_tokens": u.output}}),
    ));
    out.push(ev("message_stop", json!({"type": "message_stop"})));
    out
}

#[cfg(test)]
mod tests;
