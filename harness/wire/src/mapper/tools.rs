//! The tools: `tool.call` once per id (from the model's message or, in a damaged stream,
//! from the tool's own events), updates without repeats, one end per tool; nested calls of
//! pi 1.x reported only through their parent, whose end is held until its toolResult
//! message adds `nestedCalls`.

use serde_json::Value;

use super::schema::{Event, Lv, MessageBody, RawJson};
use super::state::{Held, State, ToolState};
use crate::json::Json;
use crate::message::Message;

impl State {
    /// Emit `tool.call` once per id.
    pub(super) fn announce(
        &mut self,
        id: &str,
        name: Option<&str>,
        args: Option<RawJson<'_>>,
        out: &mut Vec<Message>,
    ) {
        // Most calls find the tool announced already: no key allocated for them.
        if !self.tools.contains_key(id) {
            self.tools.insert(id.to_string(), ToolState::default());
        }
        let Some(tool) = self.tools.get_mut(id) else {
            return;
        };
        if tool.announced {
            return;
        }
        tool.announced = true;
        out.push(Message::ToolCall {
            id: id.to_string(),
            name: name.unwrap_or("").to_string(),
            arguments: args.map(to_json).unwrap_or_else(Json::null),
        });
    }

    /// The toolResult message of a tool whose end is held: that end, with the message's
    /// `nestedCalls` added to the result.
    pub(super) fn release(&mut self, m: &MessageBody<'_>, out: &mut Vec<Message>) {
        if self.held.is_empty() {
            return;
        }
        let Some(id) = m.tool_call_id.as_str() else {
            return;
        };
        if let Some(i) = self.held.iter().position(|h| h.id == id) {
            let mut held = self.held.remove(i);
            if let Some(nested) = m.nested_calls {
                if let Value::Object(mut result) = held.result.to_value() {
                    // pi's own result wins if it ever carries the field itself.
                    result
                        .entry("nestedCalls")
                        .or_insert_with(|| to_json(nested).to_value());
                    held.result = Json::from(Value::Object(result));
                }
            }
            out.push(held.into_message());
        }
    }

    /// Held ends whose toolResult message did not come (a damaged or cut stream): as
    /// they are, in the order the tools ended.
    pub(super) fn release_all(&mut self, out: &mut Vec<Message>) {
        out.extend(self.held.drain(..).map(Held::into_message));
    }

    pub(super) fn on_tool(
        &mut self,
        n: u64,
        raw: &[u8],
        kind: &str,
        ev: &Event<'_>,
        out: &mut Vec<Message>,
    ) {
        let Some(id) = ev.tool_call_id.as_str() else {
            return self.bad(n, raw, format!("`{kind}` without a string `toolCallId`"));
        };
        match &ev.parent_tool_call_id {
            Lv::Absent => {}
            // A nested call (pi 0.99+: codemode, `ctx.executeTool`): not a call of the
            // model, reported by its parent (its updates, its result, and `nestedCalls` on
            // its toolResult message). Nothing of its own; the parent's end waits for
            // that message.
            Lv::Str(parent) => {
                if let Some(p) = self.tools.get_mut(parent.as_ref()) {
                    p.nested = true;
                } else {
                    let p = ToolState {
                        nested: true,
                        ..ToolState::default()
                    };
                    self.tools.insert(parent.to_string(), p);
                }
                return;
            }
            _ => {
                return self.bad(
                    n,
                    raw,
                    format!("`{kind}` whose `parentToolCallId` is not a string"),
                )
            }
        }
        // A damaged stream may have lost the call: announce it from what this event says.
        self.announce(id, ev.tool_name.as_str(), ev.args, out);
        let tool = self.tools.get_mut(id).expect("announced above");
        if tool.done {
            return;
        }
        match kind {
            "tool_execution_update" => {
                if let Some(p) = ev.partial_result {
                    if tool.last_partial.as_deref() != Some(p.get()) {
                        let last = tool.last_partial.get_or_insert_with(String::new);
                        last.clear();
                        last.push_str(p.get());
                        out.push(Message::ToolUpdate {
                            id: id.to_string(),
                            partial: to_json(p),
                        });
                    }
                }
            }
            "tool_execution_end" => {
                tool.done = true;
                tool.last_partial = None;
                let end = Held {
                    id: id.to_string(),
                    failed: ev.is_error.as_bool() == Some(true),
                    result: ev.result.map(to_json).unwrap_or_else(Json::null),
                };
                if tool.nested {
                    // Its toolResult message, next, carries `nestedCalls`.
                    self.held.push(end);
                } else {
                    out.push(end.into_message());
                }
            }
            _ => {}
        }
    }
}

fn to_json(raw: RawJson<'_>) -> Json {
    // The text was validated as JSON when the line was parsed.
    Json::validated(raw.get())
}
