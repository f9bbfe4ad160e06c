//! The coarse wire stream of a cassette: pi's events (or Claude Code's records, or Codex's
//! or Gemini CLI's events), the client's actions, spawns, stderr and the ending, one line each, without what
//! varies run to run.

use std::fmt::Write as _;

use pi_cassette::{Action, Cassette};
use pi_grammar::Agent;
use serde_json::Value;

use super::lines::{short, sort_runs};

/// The text of a message's `content`: its `kind` blocks' `field`s joined, or the content
/// itself when it is a string.
fn text_of(content: &Value, kind: &str, field: &str) -> String {
    content
        .as_array()
        .map(|a| {
            a.iter()
                .filter(|b| b["type"] == kind)
                .filter_map(|b| b[field].as_str())
                .collect::<Vec<_>>()
                .join("")
        })
        .unwrap_or_else(|| content.as_str().unwrap_or_default().to_string())
}

/// A message's coarse lines: role, stop reason, error and tool, then its thinking, text and
/// tool calls.
fn message_lines(prefix: &str, m: &Value, out: &mut Vec<String>) {
    let role = m["role"].as_str().unwrap_or("?");
    let mut head = format!("{prefix} role={role}");
    if let Some(s) = m["stopReason"].as_str() {
        let _ = write!(head, " stop={s}");
    }
    if let Some(e) = m["errorMessage"].as_str() {
        let _ = write!(head, " error={}", short(e));
    }
    if let Some(t) = m["toolName"].as_str() {
        let _ = write!(head, " tool={t} isError={}", m["isError"]);
    }
    out.push(head);
    let content = &m["content"];
    for (kind, field) in [("thinking", "thinking"), ("text", "text")] {
        let t = text_of(content, kind, field);
        if !t.is_empty() {
            out.push(format!("  {kind}: {}", short(&t)));
        }
    }
    for call in content
        .as_array()
        .into_iter()
        .flatten()
        .filter(|b| b["type"] == "toolCall")
    {
        out.push(format!(
            "  toolCall {} {} {}",
            call["id"].as_str().unwrap_or("?"),
            call["name"].as_str().unwrap_or("?"),
            short(&call["arguments"].to_string())
        ));
    }
}

/// The coarse wire stream of a cassette (see the module doc).
pub fn wire_stream(c: &Cassette) -> Vec<String> {
    let mut out = Vec::new();
    let mut updates = 0usize;
    let mut stderr = String::new();
    // Gemini CLI's answer, printed chunk by chunk (`message` deltas): joined, as their cut
    // depends on the stream's chunks.
    let agent = c.header.agent();
    let gemini = agent == Agent::Gemini;
    let mut answer = String::new();
    let flush_answer = |answer: &mut String, out: &mut Vec<String>| {
        if !answer.is_empty() {
            out.push(format!(
                "message assistant {}",
                short(&std::mem::take(answer))
            ));
        }
    };
    // pi's `message_update`s, or Claude Code's content_block_delta stream events.
    let label = if agent == Agent::Claude {
        "content_block_delta"
    } else {
        "message_update"
    };
    let flush = |updates: &mut usize, out: &mut Vec<String>| {
        if *updates > 0 {
            out.push(format!("{label} x{updates}"));
            *updates = 0;
        }
    };
    for r in &c.records {
        if gemini && !matches!(r.action, Action::Stdout(_)) {
            flush_answer(&mut answer, &mut out);
        }
        match &r.action {
            Action::Stdout(b) => {
                let Ok(v) = serde_json::from_slice::<Value>(&b.data) else {
                    flush(&mut updates, &mut out);
                    out.push(format!(
                        "non-json stdout {}",
                        short(&String::from_utf8_lossy(&b.data))
                    ));
                    continue;
                };
                let ty = v["type"].as_str().unwrap_or("?").to_string();
                if ty == "message_update"
                    || (ty == "stream_event" && v["event"]["type"] == "content_block_delta")
                {
                    updates += 1;
                    continue;
                }
                match agent {
                    Agent::Claude => {
                        if let Some(line) = claude_line(&ty, &v) {
                            flush(&mut updates, &mut out);
                            out.push(line);
                        }
                    }
                    Agent::Gemini => {
                        if v["type"] == "message" && v["role"] == "assistant" {
                            answer.push_str(v["content"].as_str().unwrap_or_default());
                            continue;
                        }
                        flush_answer(&mut answer, &mut out);
                        out.push(gemini_line(&ty, &v));
                    }
                    Agent::Codex => {
                        flush(&mut updates, &mut out);
                        out.push(codex_line(&ty, &v));
                    }
                    Agent::Pi => {
                        flush(&mut updates, &mut out);
                        pi_line(&ty, &v, &mut out);
                    }
                }
            }
            Action::Stderr(b) => stderr.push_str(&String::from_utf8_lossy(&b.data)),
            Action::Spawn(s) => {
                flush(&mut updates, &mut out);
                out.push(format!(
                    "spawn own_session={} grandchild={}",
                    s.own_session,
                    s.grandchild
                        .as_ref()
                        .map_or("none".to_string(), |g| format!(
                            "own_session={}",
                            g.own_session
                        ))
                ));
            }
            Action::Exit(code) => {
                flush(&mut updates, &mut out);
                out.push(format!("exit {code}"));
            }
            Action::Signal(s) => {
                flush(&mut updates, &mut out);
                out.push(format!("signal {s}"));
            }
            Action::Stdin(line) => {
                flush(&mut updates, &mut out);
                let v: Value = serde_json::from_str(&line.json).unwrap_or(Value::Null);
                out.push(format!(
                    "client stdin {}",
                    v["type"].as_str().unwrap_or("(no type)")
                ));
            }
            Action::StdinText(t) => {
                flush(&mut updates, &mut out);
                out.push(format!("client stdin_text {}", short(t)));
            }
            Action::StdinClose => {
                flush(&mut updates, &mut out);
                out.push("client stdin_close".into());
            }
            Action::ClientSignal(sig) => {
                flush(&mut updates, &mut out);
                out.push(format!("client signal {sig}"));
            }
            Action::Request(_) => {
                flush(&mut updates, &mut out);
                out.push("model request".into());
            }
            Action::Reap(id) => {
                flush(&mut updates, &mut out);
                out.push(format!("reap {id}"));
            }
            Action::Hang => {
                flush(&mut updates, &mut out);
                let p = &c.header.process;
                out.push(format!(
                    "hang (on SIGTERM {:?}, on SIGINT {:?}, on SIGHUP {:?})",
                    p.on_sigterm, p.on_sigint, p.on_sighup
                ));
            }
        }
    }
    flush_answer(&mut answer, &mut out);
    flush(&mut updates, &mut out);
    sort_runs(&mut out, "tool_execution_end ");
    let stderr = stderr.trim();
    // Gemini CLI's stderr (start-up profiler notes, retry stack traces) varies with timing.
    if !stderr.is_empty() && !gemini {
        out.push(format!("stderr {}", short(stderr)));
    }
    out
}

/// The coarse line(s) of one pi stdout event (none for `tool_execution_update`, whose
/// number depends on timing).
fn pi_line(ty: &str, v: &Value, out: &mut Vec<String>) {
    match ty {
        "message_start" | "message_end" => message_lines(ty, &v["message"], out),
        "turn_end" => out.push(format!(
            "turn_end toolResults={}",
            v["toolResults"].as_array().map_or(0, Vec::len)
        )),
        "agent_end" => out.push(format!(
            "agent_end messages={}{}",
            v["messages"].as_array().map_or(0, Vec::len),
            v.get("willRetry")
                .map(|w| format!(" willRetry={w}"))
                .unwrap_or_default()
        )),
        "tool_execution_start" => out.push(format!(
            "tool_execution_start {} {} {}",
            v["toolCallId"].as_str().unwrap_or("?"),
            v["toolName"].as_str().unwrap_or("?"),
            short(&v["args"].to_string())
        )),
        "tool_execution_update" => {}
        "tool_execution_end" => out.push(format!(
            "tool_execution_end {} {} isError={} {}",
            v["toolCallId"].as_str().unwrap_or("?"),
            v["toolName"].as_str().unwrap_or("?"),
            v["isError"],
            short(&text_of(&v["result"]["content"], "text", "text"))
        )),
        "auto_retry_start" => out.push(format!(
            "auto_retry_start attempt={} max={} delayMs={} error={}",
            v["attempt"],
            v["maxAttempts"],
            v["delayMs"],
            short(v["errorMessage"].as_str().unwrap_or(""))
        )),
        "auto_retry_end" => out.push(format!(
            "auto_retry_end success={} attempt={}{}",
            v["success"],
            v["attempt"],
            v["finalError"]
                .as_str()
                .map(|e| format!(" finalError={}", short(e)))
                .unwrap_or_default()
        )),
        "session" => out.push(format!("session version={}", v["version"])),
        "response" => out.push(format!(
            "response {} success={}",
            v["command"].as_str().unwrap_or("?"),
            v["success"]
        )),
        other => out.push(other.to_string()),
    }
}

/// One Codex `exec --json` event in the coarse stream: its type, an item's type and what it
/// says (an answer's text, a command and its output and status), an error's message; the
/// thread id and usage left out.
fn codex_line(ty: &str, v: &Value) -> String {
    let item = &v["item"];
    let said = |k: &str| item[k].as_str().map(short);
    match ty {
        "item.started" | "item.updated" | "item.completed" => {
            let mut line = format!("{ty} {}", item["type"].as_str().unwrap_or("?"));
            for part in [said("text"), said("message"), said("command")]
                .into_iter()
                .flatten()
            {
                let _ = write!(line, " {part}");
            }
            if let Some(o) = item["aggregated_output"].as_str().filter(|o| !o.is_empty()) {
                let _ = write!(line, " output={}", short(o));
            }
            if let Some(st) = item["status"].as_str() {
                let _ = write!(line, " status={st}");
            }
            line
        }
        "error" => format!("error {}", short(v["message"].as_str().unwrap_or(""))),
        "turn.failed" => format!(
            "turn.failed {}",
            short(v["error"]["message"].as_str().unwrap_or(""))
        ),
        other => other.to_string(),
    }
}

/// One Gemini CLI stream-json event in the coarse stream (an answer's chunks are joined by
/// the caller): its type and what it says (the user's prompt, a tool's name and parameters,
/// its status and output, an error's message, the result's status and error); ids, times
/// and stats left out.
fn gemini_line(ty: &str, v: &Value) -> String {
    let s = |k: &Value| short(k.as_str().unwrap_or_default());
    match ty {
        "init" => format!("init model={}", s(&v["model"])),
        "message" => format!("message {} {}", s(&v["role"]), s(&v["content"])),
        "tool_use" => format!(
            "tool_use {} {}",
            s(&v["tool_name"]),
            short(&v["parameters"].to_string())
        ),
        "tool_result" => format!(
            "tool_result status={} output={}",
            s(&v["status"]),
            s(&v["output"])
        ),
        "error" => format!("error severity={} {}", s(&v["severity"]), s(&v["message"])),
        "result" => format!(
            "result status={} error={}",
            s(&v["status"]),
            s(&v["error"]["message"])
        ),
        other => other.to_string(),
    }
}

/// One Claude Code stdout record in the coarse stream, or nothing for what depends on
/// timing (`system/task_*`, `tool_progress`, `system/thinking_tokens`) or races the
/// permission prompt (`content_block_stop`, `message_stop`: whether the CLI's
/// `can_use_tool` comes before or after them varies run to run).
fn claude_line(ty: &str, v: &Value) -> Option<String> {
    let s = |k: &Value| k.as_str().unwrap_or("?").to_string();
    Some(match ty {
        "system" => match v["subtype"].as_str().unwrap_or("?") {
            "init" => format!(
                "system init model={} permissionMode={} version={}",
                s(&v["model"]),
                s(&v["permissionMode"]),
                s(&v["claude_code_version"])
            ),
            "status" => format!("system status {}", s(&v["status"])),
            "api_retry" => format!(
                "system api_retry attempt={} max={} status={} error={}",
                v["attempt"],
                v["max_retries"],
                v["error_status"],
                s(&v["error"])
            ),
            "thinking_tokens" | "task_started" | "task_notification" => return None,
            other => format!("system {other}"),
        },
        "stream_event" => {
            let e = &v["event"];
            match e["type"].as_str().unwrap_or("?") {
                "content_block_stop" | "message_stop" => return None,
                "content_block_start" => format!(
                    "stream_event content_block_start {}",
                    s(&e["content_block"]["type"])
                ),
                "message_delta" => format!(
                    "stream_event message_delta stop_reason={}",
                    e["delta"]["stop_reason"]
                ),
                other => format!("stream_event {other}"),
            }
        }
        "assistant" => {
            let blocks: Vec<String> = v["message"]["content"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|b| match b["type"].as_str().unwrap_or("?") {
                    "text" => format!("text {}", short(b["text"].as_str().unwrap_or(""))),
                    "thinking" => {
                        format!("thinking {}", short(b["thinking"].as_str().unwrap_or("")))
                    }
                    "tool_use" => format!(
                        "tool_use {} {} {}",
                        s(&b["id"]),
                        s(&b["name"]),
                        short(&b["input"].to_string())
                    ),
                    other => other.to_string(),
                })
                .collect();
            format!(
                "assistant{} {}",
                if v["aborted"] == true { " aborted" } else { "" },
                blocks.join(" | ")
            )
        }
        "user" => {
            let content = &v["message"]["content"];
            match content.as_array() {
                Some(blocks) => {
                    let parts: Vec<String> = blocks
                        .iter()
                        .map(|b| match b["type"].as_str().unwrap_or("?") {
                            "tool_result" => format!(
                                "tool_result {} is_error={} {}",
                                s(&b["tool_use_id"]),
                                b["is_error"],
                                short(&b["content"].to_string())
                            ),
                            "text" => format!("text {}", short(b["text"].as_str().unwrap_or(""))),
                            other => other.to_string(),
                        })
                        .collect();
                    format!("user {}", parts.join(" | "))
                }
                None => format!("user text {}", short(content.as_str().unwrap_or(""))),
            }
        }
        "result" => format!(
            "result {} is_error={} terminal_reason={} stop_reason={} {}",
            s(&v["subtype"]),
            v["is_error"],
            s(&v["terminal_reason"]),
            v["stop_reason"],
            short(v["result"].as_str().unwrap_or(""))
        ),
        "control_request" => format!(
            "control_request {} {}",
            s(&v["request"]["subtype"]),
            v["request"]["tool_name"].as_str().unwrap_or("")
        ),
        "control_response" => format!("control_response {}", s(&v["response"]["subtype"])),
        "tool_progress" => return None,
        other => other.to_string(),
    })
}
