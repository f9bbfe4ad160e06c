//! The naive baseline: a mapper that parses each line into a `serde_json::Value` and picks
//! out what the real mapper emits. See [`naive_map`].

use std::collections::HashMap;

use pi_wire::message::{Failure, FailureReason, Json, Message, Usage};
use serde_json::{Map, Value};

use crate::{exit0, split_lines};

/// A fair naive mapper: each line parsed into a `serde_json::Value` (so the 0.73.1
/// snapshots are built and dropped), then the information the real mapper emits is picked
/// out of the tree: the session id, every text delta (`message_update` /
/// `assistantMessageEvent.text_delta`), tool calls (`toolcall_end`, the tool calls of
/// `message_end` and `tool_execution_*`, once per id), tool updates and results, usage per
/// assistant message and a terminal from the last `stopReason` / `agent_end`.
///
/// It does not do what the real mapper does on top (snapshot-only producers, divergence
/// checks, thought buffering, retry bookkeeping, bounded diagnostics), so it is, if anything,
/// a little flattered.
pub fn naive_map(stdout: &[u8]) -> Vec<Message> {
    let mut naive = Naive::default();
    for line in split_lines(stdout) {
        naive.line(line);
    }
    naive.finish()
}

/// What the naive mapper keeps between lines.
#[derive(Default)]
struct Naive {
    out: Vec<Message>,
    session: Option<String>,
    /// Tool call id -> done.
    tools: HashMap<String, bool>,
    usage_sum: Usage,
    last_stop: Option<String>,
    last_error: Option<String>,
    end_seen: bool,
    invalid: u64,
}

impl Naive {
    /// One line of pi's stdout.
    fn line(&mut self, line: &[u8]) {
        let Ok(Value::Object(ev)) = serde_json::from_slice::<Value>(line) else {
            self.invalid += 1;
            return;
        };
        let Some(kind) = ev.get("type").and_then(Value::as_str) else {
            self.invalid += 1;
            return;
        };
        match kind {
            "session" if self.session.is_none() => {
                if let Some(id) = ev.get("id").and_then(Value::as_str) {
                    self.session = Some(id.to_string());
                    self.out.push(Message::SessionStarted {
                        session_id: id.to_string(),
                    });
                }
            }
            "agent_start" => self.end_seen = false,
            "agent_end" | "agent_settled" => {
                self.end_seen = ev.get("willRetry").and_then(Value::as_bool) != Some(true)
            }
            "message_update" => self.message_update(&ev),
            "message_end" => self.message_end(&ev),
            "tool_execution_start" | "tool_execution_update" | "tool_execution_end" => {
                self.tool_execution(kind, &ev)
            }
            _ => {}
        }
    }

    /// A tool call, the first time its id is seen.
    fn announce(&mut self, id: &str, name: Option<&Value>, args: Option<&Value>) {
        if self.tools.contains_key(id) {
            return;
        }
        self.tools.insert(id.to_string(), false);
        self.out.push(Message::ToolCall {
            id: id.to_string(),
            name: name.and_then(Value::as_str).unwrap_or("").to_string(),
            arguments: args.map_or_else(Json::null, Json::from),
        });
    }

    /// A text delta, or a tool call complete in the stream.
    fn message_update(&mut self, ev: &Map<String, Value>) {
        let Some(ame) = ev.get("assistantMessageEvent") else {
            return;
        };
        match ame.get("type").and_then(Value::as_str) {
            Some("text_delta") => {
                if let Some(d) = ame.get("delta").and_then(Value::as_str) {
                    if !d.is_empty() {
                        self.out.push(Message::Assistant {
                            text: d.to_string(),
                        });
                    }
                }
            }
            Some("toolcall_end") => {
                if let Some(tc) = ame.get("toolCall") {
                    if let Some(id) = tc.get("id").and_then(Value::as_str) {
                        self.announce(id, tc.get("name"), tc.get("arguments"));
                    }
                }
            }
            _ => {}
        }
    }

    /// An assistant message's tool calls, its usage, its stop reason and error.
    fn message_end(&mut self, ev: &Map<String, Value>) {
        let Some(m) = ev.get("message") else { return };
        if m.get("role").and_then(Value::as_str) != Some("assistant") {
            return;
        }
        if let Some(content) = m.get("content").and_then(Value::as_array) {
            for block in content {
                if block.get("type").and_then(Value::as_str) == Some("toolCall") {
                    if let Some(id) = block.get("id").and_then(Value::as_str) {
                        self.announce(id, block.get("name"), block.get("arguments"));
                    }
                }
            }
        }
        let usage = usage(m.get("usage"));
        self.usage_sum.add(&usage);
        self.out.push(Message::Usage(usage));
        self.last_stop = m
            .get("stopReason")
            .and_then(Value::as_str)
            .map(str::to_string);
        self.last_error = m
            .get("errorMessage")
            .and_then(Value::as_str)
            .map(str::to_string);
    }

    /// A tool's start, update or end: announced once, updated, completed or failed once.
    fn tool_execution(&mut self, kind: &str, ev: &Map<String, Value>) {
        let Some(id) = ev.get("toolCallId").and_then(Value::as_str) else {
            self.invalid += 1;
            return;
        };
        self.announce(id, ev.get("toolName"), ev.get("args"));
        let done = self.tools.get_mut(id).expect("announced above");
        if *done {
            return;
        }
        if kind == "tool_execution_update" {
            if let Some(p) = ev.get("partialResult") {
                self.out.push(Message::ToolUpdate {
                    id: id.to_string(),
                    partial: p.into(),
                });
            }
        } else if kind == "tool_execution_end" {
            *done = true;
            let result = ev.get("result").map_or_else(Json::null, Json::from);
            self.out.push(
                if ev.get("isError").and_then(Value::as_bool) == Some(true) {
                    Message::ToolFailed {
                        id: id.to_string(),
                        error: result,
                    }
                } else {
                    Message::ToolCompleted {
                        id: id.to_string(),
                        result,
                    }
                },
            );
        }
    }

    /// The messages, ended by a terminal from the last stop reason and whether the agent ended.
    fn finish(mut self) -> Vec<Message> {
        self.out
            .push(match (self.end_seen, self.last_stop.as_deref()) {
                (true, Some("error" | "aborted")) | (false, _) => {
                    Message::TerminalFailed(Failure {
                        reason: if self.end_seen {
                            FailureReason::ModelError
                        } else {
                            FailureReason::MissingTerminalEvent
                        },
                        message: self
                            .last_error
                            .unwrap_or_else(|| format!("{} invalid lines", self.invalid)),
                        exit: Some(exit0()),
                        stderr_tail: None,
                        invalid_lines: Vec::new(),
                        invalid_lines_dropped: 0,
                    })
                }
                (true, stop) => Message::TerminalCompleted {
                    stop_reason: stop.unwrap_or("none").to_string(),
                    usage: self.usage_sum,
                },
            });
        self.out
    }
}

/// An assistant message's `usage` object (zeros for what is missing).
fn usage(u: Option<&Value>) -> Usage {
    let n = |k: &str| {
        u.and_then(|u| u.get(k))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    Usage {
        input_tokens: n("input"),
        output_tokens: n("output"),
        cache_read_tokens: n("cacheRead"),
        cache_write_tokens: n("cacheWrite"),
        total_tokens: n("totalTokens"),
        cost_usd: u
            .and_then(|u| u.get("cost"))
            .and_then(|c| c.get("total"))
            .and_then(Value::as_f64)
            .unwrap_or(0.0),
    }
}
