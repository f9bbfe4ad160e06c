//! Which row a stdout line goes in, per agent dialect, read from the event's `type` (and the
//! few fields that say more: pi's `assistantMessageEvent.type` and message role, Claude
//! Code's `subtype`, content blocks and stream deltas, Codex's `item.type`, Gemini CLI's
//! `role`). A type the page does not know, a line that is not a JSON object or has no
//! `type`, goes to [`Lane::Other`]: never dropped. Each line also gets a short kind label
//! (`message_update · text_delta`), at most [`LABEL_MAX`] bytes of the event's own words.

use std::borrow::Cow;

use pi_grammar::Agent;
use serde::Deserialize;
use serde_json::value::RawValue;

use super::model::Lane;

/// The longest kind label, in bytes (the words come from the event itself).
pub const LABEL_MAX: usize = 64;

/// The most content blocks of one Claude Code message whose kind is remembered (a
/// `content_block_stop` names only its index).
const MAX_BLOCKS: usize = 64;

/// What a stdout line is: its row and kind label.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kind {
    /// The row.
    pub lane: Lane,
    /// The label: the event's type, and what it says more.
    pub label: String,
}

/// The fields the classification reads; everything else is skipped unread. Each field but
/// `type` is kept raw and read on its own ([`field`]), so one of an unexpected shape (Codex's
/// `message` is a string, pi's an object) is only absent, never a reason to misread the rest.
#[derive(Deserialize, Default)]
#[serde(default)]
struct Probe<'a> {
    #[serde(rename = "type", borrow)]
    ty: Option<Cow<'a, str>>,
    #[serde(borrow)]
    subtype: Option<&'a RawValue>,
    #[serde(borrow)]
    role: Option<&'a RawValue>,
    #[serde(borrow)]
    command: Option<&'a RawValue>,
    #[serde(borrow)]
    message: Option<&'a RawValue>,
    #[serde(rename = "assistantMessageEvent", borrow)]
    assistant_event: Option<&'a RawValue>,
    #[serde(borrow)]
    item: Option<&'a RawValue>,
    #[serde(borrow)]
    event: Option<&'a RawValue>,
}

/// A raw field read as `T`; `None` when it is absent or of another shape.
fn field<'a, T: Deserialize<'a>>(raw: Option<&'a RawValue>) -> Option<T> {
    raw.and_then(|r| serde_json::from_str(r.get()).ok())
}

/// A raw field's `type`, when it is an object with a string `type`.
fn type_of(raw: Option<&RawValue>) -> Option<String> {
    field::<Typed>(raw).and_then(|t| t.ty)
}

/// A raw field's string value.
fn string(raw: Option<&RawValue>) -> Option<String> {
    field::<String>(raw)
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Typed {
    #[serde(rename = "type")]
    ty: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Message<'a> {
    #[serde(borrow)]
    role: Option<&'a RawValue>,
    #[serde(borrow)]
    content: Option<&'a RawValue>,
}

impl Message<'_> {
    /// The `type` of each content block (none when the content is text).
    fn blocks(&self) -> Vec<String> {
        field::<Vec<&RawValue>>(self.content)
            .unwrap_or_default()
            .into_iter()
            .filter_map(|b| type_of(Some(b)))
            .collect()
    }
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct StreamEvent<'a> {
    #[serde(rename = "type", borrow)]
    ty: Option<&'a RawValue>,
    #[serde(borrow)]
    index: Option<&'a RawValue>,
    #[serde(borrow)]
    content_block: Option<&'a RawValue>,
    #[serde(borrow)]
    delta: Option<&'a RawValue>,
}

/// Reads one stdout line after another for one agent's dialect (Claude Code's content
/// blocks are remembered by index within a message).
#[derive(Debug, Clone)]
pub struct Classifier {
    agent: Agent,
    blocks: Vec<Lane>,
}

impl Classifier {
    /// For the dialect of `agent`.
    pub fn new(agent: Agent) -> Classifier {
        Classifier {
            agent,
            blocks: Vec::new(),
        }
    }

    /// The kind of a stdout line stored as JSON (`stdout`); `json` is its text.
    pub fn json(&mut self, json: &[u8]) -> Kind {
        if !json.trim_ascii_start().starts_with(b"{") {
            return other("not an object");
        }
        let Ok(p) = serde_json::from_slice::<Probe>(json) else {
            return other("unreadable type");
        };
        let Some(ty) = p.ty.as_deref() else {
            return other("no type");
        };
        let (lane, more) = match self.agent {
            Agent::Pi => pi(ty, &p),
            Agent::Claude => self.claude(ty, &p),
            Agent::Codex => codex(ty, &p),
            Agent::Gemini => gemini(ty, &p),
        };
        let label = match more {
            Some(m) if !m.is_empty() => format!("{ty} · {m}"),
            _ => ty.to_string(),
        };
        Kind {
            lane,
            label: short(&label),
        }
    }

    fn claude(&mut self, ty: &str, p: &Probe) -> (Lane, Option<String>) {
        let sub = string(p.subtype);
        match ty {
            "system" => {
                let lane = match sub.as_deref() {
                    Some("api_retry") => Lane::Retry,
                    Some("thinking_tokens") => Lane::Thinking,
                    Some("init" | "status" | "compact_boundary" | "hook_response") => Lane::Session,
                    _ => Lane::Other,
                };
                (lane, sub)
            }
            "assistant" | "user" => {
                let blocks = field::<Message>(p.message)
                    .map(|m| m.blocks())
                    .unwrap_or_default();
                let lane = if blocks.iter().any(|b| b.contains("tool")) {
                    Lane::Tool
                } else if ty == "user" {
                    Lane::Session
                } else if !blocks.is_empty() && blocks.iter().all(|b| b.contains("thinking")) {
                    Lane::Thinking
                } else {
                    Lane::Text
                };
                (lane, Some(blocks.join(",")))
            }
            "stream_event" => self.claude_stream(p),
            // The CLI asks the host (`can_use_tool`) with the request's subtype inside.
            "control_request" => (Lane::Tool, sub),
            "control_response" => (Lane::Reply, sub),
            "result" => (Lane::Result, sub),
            _ => (Lane::Other, sub),
        }
    }

    /// A Claude Code `stream_event`: the message's frame as text, a block by its kind.
    fn claude_stream(&mut self, p: &Probe) -> (Lane, Option<String>) {
        let Some(ev) = field::<StreamEvent>(p.event) else {
            return (Lane::Other, None);
        };
        let ety = string(ev.ty).unwrap_or_default();
        let index = field::<u64>(ev.index).and_then(|i| usize::try_from(i).ok());
        let lane = match ety.as_str() {
            "message_start" => {
                self.blocks.clear();
                Lane::Text
            }
            "message_delta" | "message_stop" => Lane::Text,
            "content_block_start" => {
                let lane = block_lane(type_of(ev.content_block).as_deref());
                if let Some(i) = index.filter(|i| *i < MAX_BLOCKS) {
                    if self.blocks.len() <= i {
                        self.blocks.resize(i + 1, Lane::Text);
                    }
                    self.blocks[i] = lane;
                }
                lane
            }
            "content_block_delta" => match type_of(ev.delta).as_deref() {
                Some("text_delta" | "citations_delta") => Lane::Text,
                Some("thinking_delta" | "signature_delta") => Lane::Thinking,
                Some("input_json_delta") => Lane::Tool,
                _ => Lane::Other,
            },
            "content_block_stop" => index
                .and_then(|i| self.blocks.get(i).copied())
                .unwrap_or(Lane::Text),
            _ => Lane::Other,
        };
        (lane, Some(ety))
    }
}

/// A Claude Code content block's row, by its `type`.
fn block_lane(ty: Option<&str>) -> Lane {
    match ty {
        Some(t) if t.contains("thinking") => Lane::Thinking,
        Some(t) if t.contains("tool") => Lane::Tool,
        Some("text") => Lane::Text,
        _ => Lane::Other,
    }
}

/// pi's `--mode json` and `--mode rpc` events.
fn pi(ty: &str, p: &Probe) -> (Lane, Option<String>) {
    match ty {
        "session"
        | "agent_start"
        | "turn_start"
        | "turn_end"
        | "agent_settled"
        | "entry_appended"
        | "queue_update"
        | "auto_compaction_start"
        | "auto_compaction_end" => (Lane::Session, None),
        "message_update" => {
            let sub = type_of(p.assistant_event);
            let lane = match sub.as_deref() {
                Some(s) if s.starts_with("text_") || s == "start" || s == "done" => Lane::Text,
                Some(s) if s.starts_with("thinking_") => Lane::Thinking,
                Some(s) if s.starts_with("toolcall_") => Lane::Tool,
                Some("error") => Lane::Result,
                _ => Lane::Other,
            };
            (lane, sub)
        }
        "message_start" | "message_end" => {
            let role = field::<Message>(p.message).and_then(|m| string(m.role));
            let lane = match role.as_deref() {
                Some("assistant") => Lane::Text,
                Some("toolResult") => Lane::Tool,
                Some("user" | "system") => Lane::Session,
                _ => Lane::Other,
            };
            (lane, role)
        }
        "tool_execution_start" | "tool_execution_update" | "tool_execution_end" => {
            (Lane::Tool, None)
        }
        "auto_retry_start" | "auto_retry_end" => (Lane::Retry, None),
        "agent_end" => (Lane::Result, None),
        "response" => (Lane::Reply, string(p.command)),
        _ => (Lane::Other, None),
    }
}

/// Codex CLI's `exec --json` events.
fn codex(ty: &str, p: &Probe) -> (Lane, Option<String>) {
    match ty {
        "thread.started" | "turn.started" => (Lane::Session, None),
        "item.started" | "item.updated" | "item.completed" => {
            let it = type_of(p.item);
            let lane = match it.as_deref() {
                Some("agent_message") => Lane::Text,
                Some("reasoning") => Lane::Thinking,
                Some(
                    "command_execution" | "mcp_tool_call" | "file_change" | "web_search"
                    | "todo_list" | "collab_tool_call",
                ) => Lane::Tool,
                _ => Lane::Other,
            };
            (lane, it)
        }
        "turn.completed" | "turn.failed" => (Lane::Result, None),
        // While it retries Codex says "Reconnecting... 1/5" in an `error` event.
        "error" => match string(p.message) {
            Some(m) if m.starts_with("Reconnecting") => (Lane::Retry, None),
            _ => (Lane::Result, None),
        },
        _ => (Lane::Other, None),
    }
}

/// Gemini CLI's stream-json events.
fn gemini(ty: &str, p: &Probe) -> (Lane, Option<String>) {
    match ty {
        "init" => (Lane::Session, None),
        "message" => {
            let role = string(p.role);
            let lane = match role.as_deref() {
                Some("assistant") => Lane::Text,
                Some("user") => Lane::Session,
                _ => Lane::Other,
            };
            (lane, role)
        }
        "thought" => (Lane::Thinking, None),
        "tool_use" | "tool_result" => (Lane::Tool, None),
        "result" | "error" => (Lane::Result, None),
        _ => (Lane::Other, None),
    }
}

/// The kind of a line that is not a JSON object with a `type`.
pub fn other(why: &str) -> Kind {
    Kind {
        lane: Lane::Other,
        label: why.to_string(),
    }
}

/// `label` within [`LABEL_MAX`] bytes, cut at a character boundary.
fn short(label: &str) -> String {
    if label.len() <= LABEL_MAX {
        return label.to_string();
    }
    let mut end = LABEL_MAX - 1;
    while !label.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &label[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(agent: Agent, lines: &[&str]) -> Vec<(Lane, String)> {
        let mut c = Classifier::new(agent);
        lines
            .iter()
            .map(|l| {
                let k = c.json(l.as_bytes());
                (k.lane, k.label)
            })
            .collect()
    }

    #[test]
    fn every_dialect_is_read_by_its_type_and_unknown_kinds_are_other() {
        use Lane::*;
        assert_eq!(
            kind(
                Agent::Pi,
                &[
                    r#"{"type":"session"}"#,
                    r#"{"type":"message_update","assistantMessageEvent":{"type":"thinking_delta"}}"#,
                    r#"{"type":"message_update","assistantMessageEvent":{"type":"toolcall_end"}}"#,
                    r#"{"type":"message_end","message":{"role":"toolResult","content":"x"}}"#,
                    r#"{"type":"auto_retry_start"}"#,
                    r#"{"type":"agent_end"}"#,
                    r#"{"type":"response","command":"prompt"}"#,
                    r#"{"type":"brand_new"}"#,
                    r#"{"no":"type"}"#,
                    r#"[1]"#,
                    r#"{"type":5}"#,
                ]
            ),
            vec![
                (Session, "session".into()),
                (Thinking, "message_update · thinking_delta".into()),
                (Tool, "message_update · toolcall_end".into()),
                (Tool, "message_end · toolResult".into()),
                (Retry, "auto_retry_start".into()),
                (Result, "agent_end".into()),
                (Reply, "response · prompt".into()),
                (Other, "brand_new".into()),
                (Other, "no type".into()),
                (Other, "not an object".into()),
                (Other, "unreadable type".into()),
            ]
        );
        let claude = kind(
            Agent::Claude,
            &[
                r#"{"type":"system","subtype":"init"}"#,
                r#"{"type":"system","subtype":"api_retry"}"#,
                r#"{"type":"stream_event","event":{"type":"message_start"}}"#,
                r#"{"type":"stream_event","event":{"type":"content_block_start","index":1,"content_block":{"type":"tool_use"}}}"#,
                r#"{"type":"stream_event","event":{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta"}}}"#,
                r#"{"type":"stream_event","event":{"type":"content_block_stop","index":1}}"#,
                r#"{"type":"assistant","message":{"content":[{"type":"thinking"}]}}"#,
                r#"{"type":"user","message":{"content":[{"type":"tool_result"}]}}"#,
                r#"{"type":"result","subtype":"success"}"#,
            ],
        );
        let lanes: Vec<Lane> = claude.iter().map(|k| k.0).collect();
        assert_eq!(
            lanes,
            [Session, Retry, Text, Tool, Tool, Tool, Thinking, Tool, Result]
        );
        let codex = kind(
            Agent::Codex,
            &[
                r#"{"type":"thread.started"}"#,
                r#"{"type":"item.completed","item":{"type":"reasoning"}}"#,
                r#"{"type":"item.started","item":{"type":"command_execution"}}"#,
                r#"{"type":"item.completed","item":{"type":"agent_message"}}"#,
                r#"{"type":"turn.failed"}"#,
            ],
        );
        let lanes: Vec<Lane> = codex.iter().map(|k| k.0).collect();
        assert_eq!(lanes, [Session, Thinking, Tool, Text, Result]);
        let gemini = kind(
            Agent::Gemini,
            &[
                r#"{"type":"init"}"#,
                r#"{"type":"message","role":"user"}"#,
                r#"{"type":"message","role":"assistant","delta":true}"#,
                r#"{"type":"tool_use"}"#,
                r#"{"type":"result"}"#,
                r#"{"type":"later_kind"}"#,
            ],
        );
        let lanes: Vec<Lane> = gemini.iter().map(|k| k.0).collect();
        assert_eq!(lanes, [Session, Session, Text, Tool, Result, Other]);
    }

    #[test]
    fn a_label_is_bounded_whatever_the_event_says() {
        let long = format!(r#"{{"type":"{}"}}"#, "é".repeat(200));
        let k = Classifier::new(Agent::Pi).json(long.as_bytes());
        assert!(k.label.len() <= LABEL_MAX + "…".len(), "{}", k.label.len());
    }
}
