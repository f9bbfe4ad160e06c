//! The state machine behind [`ClaudeMapper`](super::ClaudeMapper): what is remembered
//! between lines (the run, the session, the API message being received, the tools, the
//! running cost, the bad lines of the run) and how each record changes it (see the
//! `claude` module docs for the rules).

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::diagnostics::{last_line, parse_object, InvalidLines};
use crate::framing::Line;
use crate::mapper::{EndCause, MapperOptions, StreamEnd};
use crate::message::{ExitInfo, Failure, FailureReason, Message, RetrySource, Usage};

/// Everything the state machine knows between lines (see the module docs).
#[derive(Debug)]
pub(super) struct State {
    opts: MapperOptions,
    /// `finish` was called: nothing more is read.
    pub(super) finished: bool,
    /// `result` records seen.
    pub(super) turns: usize,
    /// A record of a turn was seen since the last `result` (or the start).
    run_open: bool,
    /// The session id announced last.
    session: Option<String>,
    /// A session message was emitted in the current run.
    session_in_run: bool,
    /// The API message being received.
    msg: Option<ApiMessage>,
    /// Tools of the current run.
    tools: HashMap<String, ToolState>,
    /// `total_cost_usd` of the previous `result` (Claude's running total).
    last_total_cost: Option<f64>,
    /// Bad lines and notes of the current run, bounded.
    invalid: InvalidLines,
}

/// One API message (`msg_…`), from its first record or event to its end.
#[derive(Debug, Default)]
struct ApiMessage {
    id: Option<String>,
    /// Opened by a `stream_event` (partial messages are on): it ends at `message_stop`.
    streamed: bool,
    texts: Vec<TextBlock>,
    thoughts: Vec<ThoughtBlock>,
}

#[derive(Debug)]
struct TextBlock {
    index: Option<u64>,
    /// Text emitted for this block so far.
    emitted: String,
    /// Its `assistant` record was seen.
    recorded: bool,
}

#[derive(Debug)]
struct ThoughtBlock {
    index: Option<u64>,
    deltas: String,
    /// The whole thinking as the `assistant` record gives it.
    record: Option<String>,
}

#[derive(Debug, Default)]
struct ToolState {
    announced: bool,
    ended: bool,
}

/// `system` subtypes that are understood and map to nothing.
const IGNORED_SYSTEM: &[&str] = &[
    "status",
    "thinking_tokens",
    "task_started",
    "task_notification",
    "permission_denied",
];

/// Record types that are understood and map to nothing.
const IGNORED_TYPES: &[&str] = &[
    "tool_progress",
    "control_request",
    "control_response",
    "control_cancel_request",
];

impl State {
    pub(super) fn new(opts: MapperOptions) -> Self {
        let invalid = InvalidLines::new(opts.max_invalid_lines, opts.max_invalid_bytes);
        State {
            opts,
            finished: false,
            turns: 0,
            run_open: false,
            session: None,
            session_in_run: false,
            msg: None,
            tools: HashMap::new(),
            last_total_cost: None,
            invalid,
        }
    }

    /// One line from the framing: a record, or a line over the cap (noted).
    pub(super) fn line(&mut self, line: Line<'_>, out: &mut Vec<Message>) {
        match line {
            Line::Oversized {
                number,
                bytes,
                head,
            } => {
                self.invalid
                    .oversized(number, bytes, self.opts.max_line_bytes, head);
            }
            Line::Complete { number, bytes } => {
                if let Some(rec) = self.parse(number, bytes) {
                    self.dispatch(number, bytes, &rec, out);
                }
            }
        }
    }

    /// Keep a bad line (or a note about a line) for diagnostics, within the bounds.
    fn bad(&mut self, line: u64, raw: &[u8], problem: impl Into<String>) {
        self.invalid
            .record(line, raw.len() as u64, problem.into(), raw);
    }

    /// One line as a JSON object, or `None` (recorded) when it is not one.
    fn parse(&mut self, n: u64, raw: &[u8]) -> Option<Map<String, Value>> {
        parse_object(&mut self.invalid, n, raw)
    }

    fn dispatch(&mut self, n: u64, raw: &[u8], rec: &Map<String, Value>, out: &mut Vec<Message>) {
        let kind = match rec.get("type") {
            Some(Value::String(k)) => k.as_str(),
            None => return self.bad(n, raw, "no \"type\""),
            Some(_) => return self.bad(n, raw, "\"type\" is not a string"),
        };
        // Records of a subagent (the Task tool's own model calls and tools).
        let subagent = !matches!(rec.get("parent_tool_use_id"), None | Some(Value::Null));
        match kind {
            "system" => match rec.get("subtype").and_then(Value::as_str) {
                Some("init") => {
                    self.run_open = true;
                    self.close_message(out);
                    self.on_init(n, raw, rec, out);
                }
                Some("api_retry") => {
                    self.run_open = true;
                    self.close_message(out);
                    self.on_retry(rec, out);
                }
                Some(s) if IGNORED_SYSTEM.contains(&s) => {}
                Some(s) => {
                    let problem = format!("unknown system subtype {s:?} (ignored)");
                    self.bad(n, raw, problem);
                }
                None => self.bad(n, raw, "`system` without a string `subtype`"),
            },
            "stream_event" | "assistant" | "user" if subagent => {}
            "stream_event" => {
                self.run_open = true;
                self.on_stream_event(n, raw, rec, out);
            }
            "assistant" => {
                self.run_open = true;
                self.on_assistant(n, raw, rec, out);
            }
            "user" => {
                self.run_open = true;
                self.on_user(n, raw, rec, out);
            }
            "result" => self.on_result(rec, out),
            k if IGNORED_TYPES.contains(&k) => {}
            k => {
                let problem = format!("unknown record type {k:?} (ignored)");
                self.bad(n, raw, problem);
            }
        }
    }

    fn on_init(&mut self, n: u64, raw: &[u8], rec: &Map<String, Value>, out: &mut Vec<Message>) {
        let Some(id) = rec.get("session_id").and_then(Value::as_str) else {
            return self.bad(n, raw, "`system/init` without a string `session_id`");
        };
        if self.session.as_deref() == Some(id) {
            return;
        }
        if self.session_in_run {
            return self.bad(
                n,
                raw,
                "a second `system/init` with another session id in the same turn (ignored)",
            );
        }
        let resumed = self.opts.resumed_session && self.session.is_none();
        self.session = Some(id.to_string());
        self.session_in_run = true;
        let session_id = id.to_string();
        out.push(if resumed {
            Message::SessionResumed { session_id }
        } else {
            Message::SessionStarted { session_id }
        });
    }

    fn on_retry(&mut self, rec: &Map<String, Value>, out: &mut Vec<Message>) {
        let num = |k: &str| rec.get(k).and_then(as_count).unwrap_or(0);
        let status = match rec.get("error_status") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            _ => "stream".to_string(),
        };
        let error = rec
            .get("error")
            .and_then(Value::as_str)
            .unwrap_or("unknown");
        out.push(Message::RetryScheduled {
            source: RetrySource::Pi,
            attempt: num("attempt").min(u32::MAX as u64) as u32,
            max_attempts: num("max_retries").min(u32::MAX as u64) as u32,
            delay_ms: num("retry_delay_ms"),
            error: format!("{status}: {error}"),
        });
    }

    /// The open API message if it is `id` (or either id is unknown), else a new one.
    fn message(
        &mut self,
        id: Option<&str>,
        streamed: bool,
        out: &mut Vec<Message>,
    ) -> &mut ApiMessage {
        let same = match (&self.msg, id) {
            (Some(m), Some(id)) => m.id.as_deref().map_or(true, |open| open == id),
            (Some(_), None) => true,
            (None, _) => false,
        };
        if !same {
            self.close_message(out);
        }
        let m = self.msg.get_or_insert_with(ApiMessage::default);
        if m.id.is_none() {
            m.id = id.map(str::to_string);
        }
        m.streamed |= streamed;
        m
    }

    /// The open API message ends: its thoughts, one per thinking block, in order.
    fn close_message(&mut self, out: &mut Vec<Message>) {
        if let Some(m) = self.msg.take() {
            out.extend(
                m.thoughts
                    .into_iter()
                    .map(|t| t.record.unwrap_or(t.deltas))
                    .filter(|t| !t.is_empty())
                    .map(|text| Message::AssistantThought { text }),
            );
        }
    }

    fn on_stream_event(
        &mut self,
        n: u64,
        raw: &[u8],
        rec: &Map<String, Value>,
        out: &mut Vec<Message>,
    ) {
        let Some(event) = rec.get("event").and_then(Value::as_object) else {
            return self.bad(n, raw, "`stream_event` without an object `event`");
        };
        let api_id = rec.get("api_message_id").and_then(Value::as_str);
        match event.get("type").and_then(Value::as_str) {
            Some("message_start") => {
                let id = api_id.or_else(|| {
                    event
                        .get("message")
                        .and_then(|m| m.get("id"))
                        .and_then(Value::as_str)
                });
                let repeated = matches!(
                    (&self.msg, id),
                    (Some(ApiMessage { id: Some(open), .. }), Some(id)) if open == id
                );
                if !repeated {
                    self.close_message(out);
                    self.message(id, true, out);
                }
            }
            Some("content_block_delta") => {
                let index = event.get("index").and_then(as_count);
                let Some(delta) = event.get("delta").and_then(Value::as_object) else {
                    return self.bad(n, raw, "`content_block_delta` without an object `delta`");
                };
                match delta.get("type").and_then(Value::as_str) {
                    Some("text_delta") => {
                        let Some(text) = delta.get("text").and_then(Value::as_str) else {
                            return self.bad(n, raw, "`text_delta` whose `text` is not a string");
                        };
                        let m = self.message(api_id, true, out);
                        let block = match m
                            .texts
                            .iter()
                            .rposition(|b| !b.recorded && b.index == index)
                        {
                            Some(i) => &mut m.texts[i],
                            None => {
                                m.texts.push(TextBlock {
                                    index,
                                    emitted: String::new(),
                                    recorded: false,
                                });
                                m.texts.last_mut().expect("just pushed")
                            }
                        };
                        if !text.is_empty() {
                            block.emitted.push_str(text);
                            out.push(Message::Assistant {
                                text: text.to_string(),
                            });
                        }
                    }
                    Some("thinking_delta") => {
                        let Some(text) = delta.get("thinking").and_then(Value::as_str) else {
                            return self.bad(
                                n,
                                raw,
                                "`thinking_delta` whose `thinking` is not a string",
                            );
                        };
                        let m = self.message(api_id, true, out);
                        match m
                            .thoughts
                            .iter_mut()
                            .rev()
                            .find(|t| t.record.is_none() && t.index == index)
                        {
                            Some(t) => t.deltas.push_str(text),
                            None => m.thoughts.push(ThoughtBlock {
                                index,
                                deltas: text.to_string(),
                                record: None,
                            }),
                        }
                    }
                    // input_json_delta, signature_delta, ...: the records say it whole.
                    _ => {}
                }
            }
            Some("message_stop") => {
                let ours = match (&self.msg, api_id) {
                    (Some(m), Some(id)) => m.id.as_deref().map_or(true, |open| open == id),
                    (Some(_), None) => true,
                    (None, _) => false,
                };
                if ours {
                    self.close_message(out);
                }
            }
            // content_block_start/stop, message_delta, unknown events: nothing to take.
            _ => {}
        }
    }

    fn on_assistant(
        &mut self,
        n: u64,
        raw: &[u8],
        rec: &Map<String, Value>,
        out: &mut Vec<Message>,
    ) {
        if rec.get("is_api_error_message") == Some(&Value::Bool(true)) {
            // Claude's own error text in a synthetic message; the result says it.
            return;
        }
        let Some(message) = rec.get("message").and_then(Value::as_object) else {
            return self.bad(n, raw, "`assistant` without an object `message`");
        };
        let id = message.get("id").and_then(Value::as_str);
        self.message(id, false, out);
        match message.get("content") {
            Some(Value::Array(blocks)) => {
                for block in blocks {
                    self.assistant_block(n, raw, block, out);
                }
            }
            Some(Value::String(text)) => self.record_text(n, raw, text, out),
            _ => {}
        }
    }

    fn assistant_block(&mut self, n: u64, raw: &[u8], block: &Value, out: &mut Vec<Message>) {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                if let Some(text) = block.get("text").and_then(Value::as_str) {
                    self.record_text(n, raw, text, out);
                }
            }
            Some("thinking") => {
                if let Some(text) = block.get("thinking").and_then(Value::as_str) {
                    let m = self.msg.get_or_insert_with(ApiMessage::default);
                    match m.thoughts.iter_mut().find(|t| t.record.is_none()) {
                        Some(t) => t.record = Some(text.to_string()),
                        None => m.thoughts.push(ThoughtBlock {
                            index: None,
                            deltas: String::new(),
                            record: Some(text.to_string()),
                        }),
                    }
                }
            }
            Some("tool_use") => {
                let Some(id) = block.get("id").and_then(Value::as_str) else {
                    return self.bad(n, raw, "`tool_use` block without a string `id`");
                };
                let name = block.get("name").and_then(Value::as_str).unwrap_or("");
                let input = block.get("input").cloned().unwrap_or(Value::Null);
                self.announce(id, name, input, out);
            }
            // redacted_thinking, server tools, ...: nothing of ours.
            _ => {}
        }
    }

    /// A text block of an `assistant` record: what its deltas did not stream yet.
    fn record_text(&mut self, n: u64, raw: &[u8], text: &str, out: &mut Vec<Message>) {
        let m = self.msg.get_or_insert_with(ApiMessage::default);
        let Some(block) = m.texts.iter_mut().find(|b| !b.recorded) else {
            m.texts.push(TextBlock {
                index: None,
                emitted: text.to_string(),
                recorded: true,
            });
            if !text.is_empty() {
                out.push(Message::Assistant {
                    text: text.to_string(),
                });
            }
            return;
        };
        block.recorded = true;
        match text.strip_prefix(block.emitted.as_str()) {
            Some(rest) => {
                if !rest.is_empty() {
                    block.emitted.push_str(rest);
                    out.push(Message::Assistant {
                        text: rest.to_string(),
                    });
                }
            }
            None => {
                let problem = format!(
                    "`assistant` text does not continue the streamed text (streamed {} bytes, final {} bytes); nothing more emitted for this block",
                    block.emitted.len(),
                    text.len()
                );
                self.bad(n, raw, problem);
            }
        }
    }

    fn on_user(&mut self, n: u64, raw: &[u8], rec: &Map<String, Value>, out: &mut Vec<Message>) {
        if rec.get("isReplay") == Some(&Value::Bool(true)) {
            return;
        }
        // Without partial messages nothing else says the API message ended.
        if self.msg.as_ref().is_some_and(|m| !m.streamed) {
            self.close_message(out);
        }
        let Some(Value::Array(blocks)) = rec.get("message").and_then(|m| m.get("content")) else {
            return; // a plain user text (`[Request interrupted by user]`): nothing to say
        };
        for block in blocks {
            if block.get("type").and_then(Value::as_str) != Some("tool_result") {
                continue;
            }
            let Some(id) = block.get("tool_use_id").and_then(Value::as_str) else {
                self.bad(n, raw, "`tool_result` block without a string `tool_use_id`");
                continue;
            };
            let content = block.get("content").cloned().unwrap_or(Value::Null);
            let failed = block.get("is_error") == Some(&Value::Bool(true));
            self.end_tool(id, failed, content, out);
        }
    }

    /// Emit `tool.call` once per id (within the run).
    fn announce(&mut self, id: &str, name: &str, arguments: Value, out: &mut Vec<Message>) {
        let tool = self.tools.entry(id.to_string()).or_default();
        if tool.announced {
            return;
        }
        tool.announced = true;
        out.push(Message::ToolCall {
            id: id.to_string(),
            name: name.to_string(),
            arguments: arguments.into(),
        });
    }

    fn end_tool(&mut self, id: &str, failed: bool, value: Value, out: &mut Vec<Message>) {
        // A damaged stream may have lost the call: announce it from what we know.
        self.announce(id, "", Value::Null, out);
        let tool = self.tools.entry(id.to_string()).or_default();
        if tool.ended {
            return;
        }
        tool.ended = true;
        out.push(if failed {
            Message::ToolFailed {
                id: id.to_string(),
                error: value.into(),
            }
        } else {
            Message::ToolCompleted {
                id: id.to_string(),
                result: value.into(),
            }
        });
    }

    fn on_result(&mut self, rec: &Map<String, Value>, out: &mut Vec<Message>) {
        self.close_message(out);
        let usage = self.usage(rec);
        out.push(Message::Usage(usage.clone()));
        let text = |k: &str| rec.get(k).and_then(Value::as_str);
        let subtype = text("subtype");
        let failed = match rec.get("is_error") {
            Some(Value::Bool(b)) => *b,
            _ => subtype.is_some_and(|s| s != "success"),
        };
        if !failed {
            out.push(Message::TerminalCompleted {
                stop_reason: text("stop_reason").unwrap_or("none").to_string(),
                usage,
            });
        } else {
            let (reason, message) = match subtype {
                None | Some("success") => (
                    FailureReason::ModelError,
                    text("result")
                        .unwrap_or("the turn failed (the result has no text)")
                        .to_string(),
                ),
                Some("error_during_execution") => (
                    FailureReason::Aborted,
                    text("terminal_reason")
                        .unwrap_or("error_during_execution")
                        .to_string(),
                ),
                Some(other) => {
                    let detail = text("result").map(str::to_string).or_else(|| {
                        let errors: Vec<&str> = rec
                            .get("errors")
                            .and_then(Value::as_array)
                            .map(|a| a.iter().filter_map(Value::as_str).collect())
                            .unwrap_or_default();
                        (!errors.is_empty()).then(|| errors.join("; "))
                    });
                    let message = match detail {
                        Some(d) => format!("{other}: {d}"),
                        None => other.to_string(),
                    };
                    (FailureReason::ModelError, message)
                }
            };
            out.push(Message::TerminalFailed(Failure {
                reason,
                message,
                exit: None,
                stderr_tail: None,
                invalid_lines: self.invalid.take(),
                invalid_lines_dropped: self.invalid.dropped(),
            }));
        }
        self.end_run();
        self.turns += 1;
    }

    /// The `usage` of a `result`: its token counts, and the cost of this turn.
    fn usage(&mut self, rec: &Map<String, Value>) -> Usage {
        let u = rec.get("usage");
        let n = |k: &str| u.and_then(|u| u.get(k)).and_then(as_count).unwrap_or(0);
        let input_tokens = n("input_tokens");
        let output_tokens = n("output_tokens");
        let cache_read_tokens = n("cache_read_input_tokens");
        let cache_write_tokens = n("cache_creation_input_tokens");
        let total = rec
            .get("total_cost_usd")
            .and_then(Value::as_f64)
            .filter(|c| c.is_finite() && *c >= 0.0);
        let cost_usd = match (total, self.last_total_cost) {
            (Some(t), Some(prev)) if t >= prev => t - prev,
            (Some(t), _) => t,
            (None, _) => 0.0,
        };
        if total.is_some() {
            self.last_total_cost = total;
        }
        Usage {
            input_tokens,
            output_tokens,
            cache_read_tokens,
            cache_write_tokens,
            total_tokens: input_tokens
                .saturating_add(output_tokens)
                .saturating_add(cache_read_tokens)
                .saturating_add(cache_write_tokens),
            cost_usd,
        }
    }

    /// A run ended (its terminal was emitted): the next records start a new one.
    fn end_run(&mut self) {
        self.run_open = false;
        self.session_in_run = false;
        self.msg = None;
        self.tools.clear();
        self.invalid.clear();
    }

    /// End of stdout: one terminal if a run is open (or there was none at all).
    pub(super) fn finish(&mut self, end: StreamEnd, out: &mut Vec<Message>) {
        self.finished = true;
        if !self.run_open && self.turns > 0 {
            return; // every turn ended with its result
        }
        self.close_message(out);
        let StreamEnd {
            exit,
            stderr_tail,
            cause,
        } = end;
        let (reason, message) = match cause {
            EndCause::Cancelled => {
                out.push(Message::TerminalCancelled { exit });
                self.end_run();
                return;
            }
            EndCause::Failed { reason, message } => (reason, message),
            EndCause::Eof => {
                let last = stderr_tail.as_deref().and_then(last_line);
                let with_stderr = |s: String| match &last {
                    Some(l) => format!("{s}: {l}"),
                    None => s,
                };
                match &exit {
                    Some(ExitInfo {
                        signal: Some(sig), ..
                    }) => (
                        FailureReason::ProcessSignal,
                        with_stderr(format!("claude was killed by {sig} before the turn ended")),
                    ),
                    Some(ExitInfo { code: Some(c), .. }) if *c != 0 => (
                        FailureReason::ProcessExit,
                        with_stderr(format!("claude exited with code {c}")),
                    ),
                    _ => (
                        FailureReason::MissingTerminalEvent,
                        "claude's stdout ended without the `result` record that ends a turn"
                            .to_string(),
                    ),
                }
            }
        };
        out.push(Message::TerminalFailed(Failure {
            reason,
            message,
            exit,
            stderr_tail,
            invalid_lines: self.invalid.take(),
            invalid_lines_dropped: self.invalid.dropped(),
        }));
        self.end_run();
    }
}

/// A count: a non-negative integer, or a float with no fractional part.
fn as_count(v: &Value) -> Option<u64> {
    v.as_u64().or_else(|| {
        v.as_f64()
            .filter(|f| *f >= 0.0 && f.fract() == 0.0 && *f < 1.8e19)
            .map(|f| f as u64)
    })
}
