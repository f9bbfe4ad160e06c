//! Claude Code's Bash tool calls as a stream-json transcript shows them: which call the
//! host allowed, where each ends (pure bookkeeping for `--spawn-tools`).

use std::collections::HashMap;

use serde_json::Value;

/// Claude Code's Bash tool calls as a transcript shows them: where each starts running and
/// ends (pure bookkeeping for `spawn_tools`).
#[derive(Debug, Default)]
pub(super) struct ClaudeTools {
    /// Bash `tool_use` id -> its command.
    pub(super) commands: HashMap<String, String>,
    /// A `can_use_tool` request id (JSON text) -> the tool_use it asks about.
    asked: HashMap<String, String>,
    /// The `message.id` of the last `assistant` record; whether `stream_event`s came.
    last_message: Option<String>,
    partial: bool,
}

impl ClaudeTools {
    /// Does this stdout record answer a model request, so the request goes before it? A
    /// call that started: a `message_start` stream event, or (without partial messages) an
    /// `assistant` record of a new message. A call that failed: the `system/api_retry` the
    /// CLI writes before trying again, or the `<synthetic>` assistant text it invents once it
    /// gives up (before, a failed call's request was placed after the turn's `result`).
    pub(super) fn model_call_starts(&mut self, v: &Value) -> bool {
        match v.get("type").and_then(Value::as_str) {
            Some("stream_event") => {
                self.partial = true;
                v["event"]["type"] == "message_start"
            }
            Some("system") => v["subtype"] == "api_retry",
            Some("assistant") if v["message"]["model"] == "<synthetic>" => true,
            Some("assistant") if !self.partial => {
                let id = v["message"]["id"].as_str().map(str::to_string);
                let new = id.is_some() && id != self.last_message;
                self.last_message = id;
                new && v["message"]["model"] != "<synthetic>"
            }
            _ => false,
        }
    }

    /// A stdout record: the Bash calls that ended (their tool result), and (always none
    /// today) the ones that started running. A command the CLI runs without asking (`ls`,
    /// `echo`) is not modelled as a process: whether its permission check or the end of
    /// the model's message comes first is a race, so where it starts cannot be told from
    /// the stdout order alone.
    pub(super) fn stdout(&mut self, v: &Value) -> (Vec<String>, Vec<String>) {
        match v.get("type").and_then(Value::as_str) {
            Some("assistant") => {
                for block in v["message"]["content"].as_array().into_iter().flatten() {
                    if block["type"] == "tool_use" && block["name"] == "Bash" {
                        if let (Some(id), Some(cmd)) =
                            (block["id"].as_str(), block["input"]["command"].as_str())
                        {
                            self.commands.insert(id.to_string(), cmd.to_string());
                        }
                    }
                }
                (Vec::new(), Vec::new())
            }
            Some("control_request") if v["request"]["subtype"] == "can_use_tool" => {
                if let (Some(tool), Some(rid)) =
                    (v["request"]["tool_use_id"].as_str(), v.get("request_id"))
                {
                    if self.commands.contains_key(tool) {
                        self.asked.insert(rid.to_string(), tool.to_string());
                    }
                }
                (Vec::new(), Vec::new())
            }
            Some("user") => {
                let ended = v["message"]["content"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|b| b["type"] == "tool_result")
                    .filter_map(|b| b["tool_use_id"].as_str().map(str::to_string))
                    .collect();
                (ended, Vec::new())
            }
            _ => (Vec::new(), Vec::new()),
        }
    }

    /// The host's line: the Bash call it allowed, if it answered a `can_use_tool` with
    /// `allow` (the command it runs is the host's `updatedInput` when it gave one).
    pub(super) fn allowed(&mut self, v: &Value) -> Option<String> {
        if v.get("type").and_then(Value::as_str) != Some("control_response") {
            return None;
        }
        let r = &v["response"];
        if r["subtype"] != "success" || r["response"]["behavior"] != "allow" {
            return None;
        }
        let id = self.asked.remove(&r.get("request_id")?.to_string())?;
        if let Some(cmd) = r["response"]["updatedInput"]["command"].as_str() {
            self.commands.insert(id.clone(), cmd.to_string());
        }
        Some(id)
    }
}
