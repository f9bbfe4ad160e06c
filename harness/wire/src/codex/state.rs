//! The state machine behind [`CodexMapper`](super::CodexMapper): what is remembered
//! between lines (the thread, how the turn ended, the items seen, the usage, the fatal
//! error, the bad lines) and how each `codex exec --json` event changes it (see the
//! `codex` module docs for the rules).

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use crate::diagnostics::{last_line_except, parse_object, InvalidLines};
use crate::framing::Line;
use crate::mapper::{EndCause, MapperOptions, StreamEnd};
use crate::message::{ExitInfo, Failure, FailureReason, Message, RetrySource, Usage};

/// How the last turn ended.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Outcome {
    /// `turn.completed`.
    Completed,
    /// `turn.failed`, with its message.
    Failed(String),
}

/// Everything the state machine knows between lines (see the module docs).
#[derive(Debug)]
pub(super) struct State {
    opts: MapperOptions,
    /// `finish` was called: nothing more is read.
    pub(super) finished: bool,
    /// How the last turn ended; `None` while a turn is open or before any.
    pub(super) outcome: Option<Outcome>,
    /// The thread id announced.
    session: Option<String>,
    /// Sum of the `usage` messages given.
    usage: Usage,
    /// The last `error` event that is not a reconnect: the turn's fatal error.
    last_error: Option<String>,
    /// Text emitted so far per `agent_message` item id.
    texts: HashMap<String, String>,
    /// `reasoning` items seen but not completed, in order, with their last text.
    open_thoughts: Vec<(String, String)>,
    /// `reasoning` item ids whose thought was given.
    thoughts_done: HashSet<String>,
    /// Tool-like items by id.
    tools: HashMap<String, ToolState>,
    /// Bad lines and notes, bounded.
    invalid: InvalidLines,
}

#[derive(Debug, Default)]
struct ToolState {
    ended: bool,
    /// The item as the last `tool.update` gave it.
    last_partial: Option<Value>,
}

/// Item types that are tool calls, with the fields that make up their arguments.
const TOOL_ITEMS: &[(&str, &[&str])] = &[
    ("command_execution", &["command"]),
    ("file_change", &["changes"]),
    ("mcp_tool_call", &["server", "tool", "arguments"]),
    ("web_search", &["query", "action"]),
    (
        "collab_tool_call",
        &["tool", "sender_thread_id", "receiver_thread_ids", "prompt"],
    ),
];

/// Item types that are understood and map to nothing: the running plan, and Codex's
/// warnings (`error` items: "Model metadata for `M` not found ...", config warnings).
const IGNORED_ITEMS: &[&str] = &["todo_list", "error"];

/// Which of `item.started`, `item.updated`, `item.completed`.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    Started,
    Updated,
    Completed,
}

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
            texts: HashMap::new(),
            open_thoughts: Vec::new(),
            thoughts_done: HashSet::new(),
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
            "thread.started" => self.on_thread(n, raw, ev, out),
            "turn.started" => self.outcome = None,
            "turn.completed" => {
                let usage = usage_of(ev.get("usage"));
                add_saturating(&mut self.usage, &usage);
                out.push(Message::Usage(usage));
                self.outcome = Some(Outcome::Completed);
            }
            "turn.failed" => {
                let message = ev
                    .get("error")
                    .and_then(|e| e.get("message"))
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .or_else(|| self.last_error.clone())
                    .unwrap_or_else(|| "the turn failed (turn.failed has no message)".into());
                self.outcome = Some(Outcome::Failed(message));
            }
            "error" => match ev.get("message").and_then(Value::as_str) {
                Some(message) => match reconnect(message) {
                    Some(retry) => out.push(retry),
                    None => self.last_error = Some(message.to_string()),
                },
                None => self.bad(n, raw, "`error` without a string `message`"),
            },
            "item.started" => self.on_item(n, raw, ev, Phase::Started, out),
            "item.updated" => self.on_item(n, raw, ev, Phase::Updated, out),
            "item.completed" => self.on_item(n, raw, ev, Phase::Completed, out),
            k => {
                let problem = format!("unknown event type {k:?} (ignored)");
                self.bad(n, raw, problem);
            }
        }
    }

    fn on_thread(&mut self, n: u64, raw: &[u8], ev: &Map<String, Value>, out: &mut Vec<Message>) {
        let Some(id) = ev.get("thread_id").and_then(Value::as_str) else {
            return self.bad(n, raw, "`thread.started` without a string `thread_id`");
        };
        match &self.session {
            Some(known) if known == id => {}
            Some(_) => self.bad(
                n,
                raw,
                "a second `thread.started` with another thread id (ignored)",
            ),
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

    fn on_item(
        &mut self,
        n: u64,
        raw: &[u8],
        ev: &Map<String, Value>,
        phase: Phase,
        out: &mut Vec<Message>,
    ) {
        let Some(item) = ev.get("item").and_then(Value::as_object) else {
            return self.bad(n, raw, "item event without an object `item`");
        };
        let Some(id) = item.get("id").and_then(Value::as_str) else {
            return self.bad(n, raw, "item without a string `id`");
        };
        let Some(kind) = item.get("type").and_then(Value::as_str) else {
            return self.bad(n, raw, "item without a string `type`");
        };
        match kind {
            "agent_message" => match item.get("text").and_then(Value::as_str) {
                Some(text) => self.agent_text(n, raw, id, text, out),
                None => self.bad(n, raw, "`agent_message` whose `text` is not a string"),
            },
            "reasoning" => {
                let text = item.get("text").and_then(Value::as_str).unwrap_or("");
                self.reasoning(id, text, phase, out);
            }
            k if IGNORED_ITEMS.contains(&k) => {}
            k => match TOOL_ITEMS.iter().find(|(t, _)| *t == k) {
                Some((name, fields)) => self.tool(id, name, fields, item, phase, out),
                None => {
                    let problem = format!("unknown item type {k:?} (ignored)");
                    self.bad(n, raw, problem);
                }
            },
        }
    }

    /// An `agent_message` item's text: what continues the text emitted for its id.
    fn agent_text(&mut self, n: u64, raw: &[u8], id: &str, text: &str, out: &mut Vec<Message>) {
        let emitted = self.texts.entry(id.to_string()).or_default();
        match text.strip_prefix(emitted.as_str()) {
            Some("") => {}
            Some(rest) => {
                emitted.push_str(rest);
                out.push(Message::Assistant {
                    text: rest.to_string(),
                });
            }
            None => {
                let problem = format!(
                    "`agent_message` text does not continue the text emitted for {id} ({} bytes emitted, {} bytes now); nothing more emitted for it",
                    emitted.len(),
                    text.len()
                );
                self.bad(n, raw, problem);
            }
        }
    }

    /// A `reasoning` item: its thought at completion (once per id), its last text kept
    /// until then.
    fn reasoning(&mut self, id: &str, text: &str, phase: Phase, out: &mut Vec<Message>) {
        if self.thoughts_done.contains(id) {
            return;
        }
        let open = self.open_thoughts.iter().position(|(i, _)| i == id);
        if phase != Phase::Completed {
            match open {
                Some(at) => self.open_thoughts[at].1 = text.to_string(),
                None => self.open_thoughts.push((id.to_string(), text.to_string())),
            }
            return;
        }
        if let Some(at) = open {
            self.open_thoughts.remove(at);
        }
        self.thoughts_done.insert(id.to_string());
        if !text.is_empty() {
            out.push(Message::AssistantThought {
                text: text.to_string(),
            });
        }
    }

    /// A tool-like item: announced at its first event, updated when it changed, ended at
    /// its completion (once).
    fn tool(
        &mut self,
        id: &str,
        name: &str,
        fields: &[&str],
        item: &Map<String, Value>,
        phase: Phase,
        out: &mut Vec<Message>,
    ) {
        let tool = match self.tools.get_mut(id) {
            Some(tool) => tool,
            None => {
                let arguments: Map<String, Value> = fields
                    .iter()
                    .filter_map(|f| item.get(*f).map(|v| (f.to_string(), v.clone())))
                    .collect();
                out.push(Message::ToolCall {
                    id: id.to_string(),
                    name: name.to_string(),
                    arguments: Value::Object(arguments).into(),
                });
                self.tools.entry(id.to_string()).or_default()
            }
        };
        if tool.ended {
            return;
        }
        let whole = Value::Object(item.clone());
        match phase {
            Phase::Started => {}
            Phase::Updated => {
                if tool.last_partial.as_ref() != Some(&whole) {
                    tool.last_partial = Some(whole.clone());
                    out.push(Message::ToolUpdate {
                        id: id.to_string(),
                        partial: whole.into(),
                    });
                }
            }
            Phase::Completed => {
                tool.ended = true;
                let failed = item
                    .get("status")
                    .and_then(Value::as_str)
                    .is_some_and(|s| s != "completed");
                let id = id.to_string();
                out.push(if failed {
                    Message::ToolFailed {
                        id,
                        error: whole.into(),
                    }
                } else {
                    Message::ToolCompleted {
                        id,
                        result: whole.into(),
                    }
                });
            }
        }
    }

    /// End of stdout: the thoughts still open, then exactly one terminal.
    pub(super) fn finish(&mut self, end: StreamEnd, out: &mut Vec<Message>) {
        self.finished = true;
        for (_, text) in self.open_thoughts.drain(..) {
            if !text.is_empty() {
                out.push(Message::AssistantThought { text });
            }
        }
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
            EndCause::Eof => match self.outcome.clone() {
                Some(Outcome::Completed) => {
                    out.push(Message::TerminalCompleted {
                        stop_reason: "none".into(),
                        usage: self.usage.clone(),
                    });
                    return;
                }
                Some(Outcome::Failed(message)) => (FailureReason::ModelError, message),
                None => self.without_outcome(&exit, stderr_tail.as_deref()),
            },
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

    /// The failure of a stdout that ended with no turn ended: how the process ended, with
    /// Codex's fatal `error` event or else the last stderr line that is not start-up noise.
    fn without_outcome(
        &self,
        exit: &Option<ExitInfo>,
        stderr_tail: Option<&str>,
    ) -> (FailureReason, String) {
        let detail = self
            .last_error
            .clone()
            .or_else(|| stderr_tail.and_then(|t| last_line_except(t, startup_noise)));
        let with_detail = |s: String| match &detail {
            Some(d) => format!("{s}: {d}"),
            None => s,
        };
        match exit {
            Some(ExitInfo {
                signal: Some(sig), ..
            }) => (
                FailureReason::ProcessSignal,
                with_detail(format!("codex was killed by {sig} before the turn ended")),
            ),
            Some(ExitInfo { code: Some(c), .. }) if *c != 0 => (
                FailureReason::ProcessExit,
                with_detail(format!("codex exited with code {c}")),
            ),
            _ => (
                FailureReason::MissingTerminalEvent,
                "codex's stdout ended without `turn.completed` or `turn.failed`".to_string(),
            ),
        }
    }
}

/// Lines Codex writes to stderr on every start (measured on 0.169.0), which say nothing
/// about how a run ended: not quoted in a failure message.
fn startup_noise(line: &str) -> bool {
    line == "Reading additional input from stdin..."
        || line.starts_with("WARNING: proceeding, even though we could not create PATH aliases")
}

/// `Reconnecting... N/M (reason)`: Codex retrying the model stream, as `retry.scheduled`.
fn reconnect(message: &str) -> Option<Message> {
    let rest = message.strip_prefix("Reconnecting... ")?;
    let (counts, reason) = match rest.split_once(' ') {
        Some((counts, reason)) => (counts, reason.trim()),
        None => (rest, ""),
    };
    let (attempt, max) = counts.split_once('/')?;
    let attempt: u32 = attempt.parse().ok()?;
    let max_attempts: u32 = max.parse().ok()?;
    let reason = reason
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .unwrap_or(reason);
    Some(Message::RetryScheduled {
        source: RetrySource::Pi,
        attempt,
        max_attempts,
        delay_ms: 0,
        error: if reason.is_empty() {
            "unknown".into()
        } else {
            reason.to_string()
        },
    })
}

/// A `turn.completed` `usage`: Codex's `input_tokens` include the cached reads and the
/// cache writes, so `input_tokens` here is what remains; `total_tokens` is Codex's input
/// plus output. Missing or malformed numbers count as 0.
fn usage_of(u: Option<&Value>) -> Usage {
    let n = |k: &str| u.and_then(|u| u.get(k)).and_then(as_count).unwrap_or(0);
    let input = n("input_tokens");
    let cache_read_tokens = n("cached_input_tokens");
    let cache_write_tokens = n("cache_write_input_tokens");
    let output_tokens = n("output_tokens");
    Usage {
        input_tokens: input
            .saturating_sub(cache_read_tokens)
            .saturating_sub(cache_write_tokens),
        output_tokens,
        cache_read_tokens,
        cache_write_tokens,
        total_tokens: input.saturating_add(output_tokens),
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
