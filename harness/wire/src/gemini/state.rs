//! The state machine behind [`GeminiMapper`](super::GeminiMapper): what is remembered
//! between lines (the session, the current assistant message's text, the tools seen, the
//! usage, how the `result` ended the run, the last `error` event, the bad lines) and how
//! each stream-json event changes it (see the `gemini` module docs for the rules).

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::exit::{verdict, Outcome, Verdict};
use crate::diagnostics::{last_line_except, parse_object, InvalidLines};
use crate::framing::Line;
use crate::mapper::{EndCause, MapperOptions, StreamEnd};
use crate::message::{Failure, Message, Usage};

/// Everything the state machine knows between lines (see the module docs).
#[derive(Debug)]
pub(super) struct State {
    opts: MapperOptions,
    /// `finish` was called: nothing more is read.
    pub(super) finished: bool,
    /// How the last `result` ended the run; `None` before one.
    pub(super) outcome: Option<Outcome>,
    /// The session id announced.
    session: Option<String>,
    /// Sum of the `usage` messages given.
    usage: Usage,
    /// The last `error` event's message (`warning: ` before a warning's).
    last_error: Option<String>,
    /// The text of the current assistant message (the chunks since the last tool event).
    text: String,
    /// Tool ids seen, and whether their result came.
    tools: HashMap<String, bool>,
    /// Bad lines and notes, bounded.
    invalid: InvalidLines,
}

/// The fields of a `tool_result` that are not the tool's result.
const NOT_RESULT: &[&str] = &["type", "timestamp", "tool_id"];

impl State {
    pub(super) fn new(opts: MapperOptions) -> Self {
        let invalid = InvalidLines::new(opts.max_invalid_lines, opts.max_invalid_bytes);
        State {
            opts,
            finished: false,
            outcome: None,
            session: None,
            usage: Usage::default(),
            last_error: None,
            text: String::new(),
            tools: HashMap::new(),
            invalid,
        }
    }

    /// One line from the framing: an event, or a line over the cap (noted).
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
                if let Some(event) = parse_object(&mut self.invalid, number, bytes) {
                    self.dispatch(number, bytes, &event, out);
                }
            }
        }
    }

    /// Keep a bad line (or a note about a line) for diagnostics, within the bounds.
    fn bad(&mut self, line: u64, raw: &[u8], problem: impl Into<String>) {
        self.invalid
            .record(line, raw.len() as u64, problem.into(), raw);
    }

    fn dispatch(&mut self, n: u64, raw: &[u8], ev: &Map<String, Value>, out: &mut Vec<Message>) {
        let kind = match ev.get("type") {
            Some(Value::String(k)) => k.as_str(),
            None => return self.bad(n, raw, "no \"type\""),
            Some(_) => return self.bad(n, raw, "\"type\" is not a string"),
        };
        match kind {
            "init" => self.on_init(n, raw, ev, out),
            "message" => self.on_message(n, raw, ev, out),
            "tool_use" => self.on_tool_use(n, raw, ev, out),
            "tool_result" => self.on_tool_result(n, raw, ev, out),
            "error" => match ev.get("message").and_then(Value::as_str) {
                Some(message) => {
                    self.last_error = Some(match ev.get("severity").and_then(Value::as_str) {
                        Some("warning") => format!("warning: {message}"),
                        _ => message.to_string(),
                    });
                }
                None => self.bad(n, raw, "`error` without a string `message`"),
            },
            "result" => self.on_result(ev, out),
            k => {
                let problem = format!("unknown event type {k:?} (ignored)");
                self.bad(n, raw, problem);
            }
        }
    }

    fn on_init(&mut self, n: u64, raw: &[u8], ev: &Map<String, Value>, out: &mut Vec<Message>) {
        let Some(id) = ev.get("session_id").and_then(Value::as_str) else {
            return self.bad(n, raw, "`init` without a string `session_id`");
        };
        match &self.session {
            Some(known) if known == id => {}
            Some(_) => self.bad(n, raw, "a second `init` with another session id (ignored)"),
            None => {
                self.session = Some(id.to_string());
                let session_id = id.to_string();
                out.push(if self.opts.resumed_session {
                    Message::SessionResumed { session_id }
                } else {
                    Message::SessionStarted { session_id }
                });
            }
        }
    }

    /// A `message`: the prompt's echo gives nothing; an assistant chunk is a piece of the
    /// current message; a whole assistant message gives what continues its text.
    fn on_message(&mut self, n: u64, raw: &[u8], ev: &Map<String, Value>, out: &mut Vec<Message>) {
        let Some(content) = ev.get("content").and_then(Value::as_str) else {
            return self.bad(n, raw, "`message` whose `content` is not a string");
        };
        match ev.get("role").and_then(Value::as_str) {
            Some("user") => {}
            Some("assistant") if ev.get("delta") == Some(&Value::Bool(true)) => {
                if !content.is_empty() {
                    self.text.push_str(content);
                    out.push(Message::Assistant {
                        text: content.to_string(),
                    });
                }
            }
            Some("assistant") => match content.strip_prefix(self.text.as_str()) {
                Some("") => {}
                Some(rest) => {
                    let rest = rest.to_string();
                    self.text.push_str(&rest);
                    out.push(Message::Assistant { text: rest });
                }
                None => self.bad(
                    n,
                    raw,
                    "a whole assistant `message` that does not continue the text streamed (ignored)",
                ),
            },
            Some(role) => {
                let problem = format!("`message` of unknown role {role:?} (ignored)");
                self.bad(n, raw, problem);
            }
            None => self.bad(n, raw, "`message` without a string `role`"),
        }
    }

    fn on_tool_use(&mut self, n: u64, raw: &[u8], ev: &Map<String, Value>, out: &mut Vec<Message>) {
        let Some(id) = ev.get("tool_id").and_then(Value::as_str) else {
            return self.bad(n, raw, "`tool_use` without a string `tool_id`");
        };
        if self.tools.contains_key(id) {
            return self.bad(
                n,
                raw,
                "a second `tool_use` of the same `tool_id` (ignored)",
            );
        }
        self.text.clear();
        self.tools.insert(id.to_string(), false);
        out.push(Message::ToolCall {
            id: id.to_string(),
            name: ev
                .get("tool_name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            arguments: ev.get("parameters").cloned().unwrap_or(Value::Null).into(),
        });
    }

    fn on_tool_result(
        &mut self,
        n: u64,
        raw: &[u8],
        ev: &Map<String, Value>,
        out: &mut Vec<Message>,
    ) {
        let Some(id) = ev.get("tool_id").and_then(Value::as_str) else {
            return self.bad(n, raw, "`tool_result` without a string `tool_id`");
        };
        self.text.clear();
        match self.tools.get(id) {
            Some(true) => {
                return self.bad(
                    n,
                    raw,
                    "a second `tool_result` of the same `tool_id` (ignored)",
                )
            }
            Some(false) => {}
            None => out.push(Message::ToolCall {
                id: id.to_string(),
                name: String::new(),
                arguments: Value::Null.into(),
            }),
        }
        self.tools.insert(id.to_string(), true);
        let payload: Map<String, Value> = ev
            .iter()
            .filter(|(k, _)| !NOT_RESULT.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let id = id.to_string();
        let payload = Value::Object(payload).into();
        out.push(match ev.get("status").and_then(Value::as_str) {
            Some("success") => Message::ToolCompleted {
                id,
                result: payload,
            },
            _ => Message::ToolFailed { id, error: payload },
        });
    }

    /// `result`: one `usage`, and the run's outcome (the last `result` decides).
    fn on_result(&mut self, ev: &Map<String, Value>, out: &mut Vec<Message>) {
        let usage = usage_of(ev.get("stats"));
        add_saturating(&mut self.usage, &usage);
        out.push(Message::Usage(usage));
        let status = ev.get("status").and_then(Value::as_str);
        self.outcome = Some(if status == Some("success") {
            Outcome::Completed
        } else {
            let message = ev
                .get("error")
                .and_then(|e| e.get("message"))
                .and_then(Value::as_str)
                .map(str::to_string)
                .or_else(|| self.last_error.clone())
                .unwrap_or_else(|| match status {
                    Some(s) => format!("gemini's result has status {s:?} and no error message"),
                    None => "gemini's result has no status".to_string(),
                });
            Outcome::Failed(message)
        });
    }

    /// End of stdout: exactly one terminal.
    pub(super) fn finish(&mut self, end: StreamEnd, out: &mut Vec<Message>) {
        self.finished = true;
        let StreamEnd {
            exit,
            stderr_tail,
            cause,
        } = end;
        let (reason, message) = match cause {
            EndCause::Cancelled => {
                out.push(Message::TerminalCancelled { exit });
                return;
            }
            EndCause::Failed { reason, message } => (reason, message),
            EndCause::Eof => {
                let detail = self.last_error.clone().or_else(|| {
                    stderr_tail
                        .as_deref()
                        .and_then(|t| last_line_except(t, noise))
                });
                match verdict(self.outcome.as_ref(), exit.as_ref(), detail.as_deref()) {
                    Verdict::Completed => {
                        out.push(Message::TerminalCompleted {
                            stop_reason: "none".into(),
                            usage: self.usage.clone(),
                        });
                        return;
                    }
                    Verdict::Failed(reason, message) => (reason, message),
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
    }
}

/// Lines of Gemini's stderr that say nothing about how a run ended (measured on 0.61.0):
/// its start-up notices, and the frames and closing lines of the stack traces it prints
/// after each failed attempt. Not quoted in a failure message.
fn noise(line: &str) -> bool {
    const STARTUP: &[&str] = &[
        "Warning: 256-color support not detected.",
        "YOLO mode is enabled.",
        "Ripgrep is not available.",
        "[STARTUP] ",
    ];
    STARTUP.iter().any(|p| line.starts_with(p))
        || line.starts_with("at ")
        || line == "}"
        || line
            .strip_prefix("status: ")
            .is_some_and(|s| s.bytes().all(|b| b.is_ascii_digit()))
}

/// A `result`'s `stats`: `input` (the uncached part of `input_tokens`, else
/// `input_tokens` minus `cached`), `cached` read from the cache, `output_tokens`, and
/// Gemini's `total_tokens` (else input plus output). Missing or malformed numbers count
/// as 0.
fn usage_of(stats: Option<&Value>) -> Usage {
    let get = |k: &str| stats.and_then(|s| s.get(k)).and_then(as_count);
    let cached = get("cached").unwrap_or(0);
    let all_input = get("input_tokens").unwrap_or(0);
    let input_tokens = get("input").unwrap_or(all_input.saturating_sub(cached));
    let output_tokens = get("output_tokens").unwrap_or(0);
    Usage {
        input_tokens,
        output_tokens,
        cache_read_tokens: cached,
        cache_write_tokens: 0,
        total_tokens: get("total_tokens").unwrap_or(all_input.saturating_add(output_tokens)),
        cost_usd: 0.0,
    }
}

/// `total += u`, each count saturating (a damaged stream cannot overflow it).
fn add_saturating(total: &mut Usage, u: &Usage) {
    total.input_tokens = total.input_tokens.saturating_add(u.input_tokens);
    total.output_tokens = total.output_tokens.saturating_add(u.output_tokens);
    total.cache_read_tokens = total.cache_read_tokens.saturating_add(u.cache_read_tokens);
    total.cache_write_tokens = total
        .cache_write_tokens
        .saturating_add(u.cache_write_tokens);
    total.total_tokens = total.total_tokens.saturating_add(u.total_tokens);
}

/// A count: a non-negative integer, or a float with no fractional part.
fn as_count(v: &Value) -> Option<u64> {
    v.as_u64().or_else(|| {
        v.as_f64()
            .filter(|f| *f >= 0.0 && f.fract() == 0.0 && *f < 1.8e19)
            .map(|f| f as u64)
    })
}
