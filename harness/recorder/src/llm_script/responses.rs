//! One script turn rendered as an OpenAI Responses API stream (`POST /v1/responses`).
//!
//! This module owns the Responses wire's event sequence, as the real API streams it and as
//! its clients read it (pi's `openai-responses` provider, Codex's `wire_api = "responses"`):
//! `response.created`, `response.in_progress`, then one output item per part of the turn
//! (a `reasoning` item with its summary deltas, a `message` item with its `output_text`
//! deltas, a `function_call` item per tool with its argument deltas), each opened by
//! `response.output_item.added` and closed by `response.output_item.done` carrying the
//! whole item (clients rebuild the item from it, not from the deltas), and last the terminal
//! event with the whole response and its `usage`: `response.completed`, or
//! `response.incomplete` for a turn whose `finish` is not `stop`/`tool_calls`. Every event
//! is `event: TYPE` + `data: JSON` and carries its `sequence_number`. Pure: no I/O.

use serde_json::{json, Value};

use super::{arg_pieces, text_chunks, usage_of, ToolCall, Turn};

/// The terminal status and `incomplete_details` a turn's `finish` maps to: `stop` and
/// `tool_calls` (or none) complete; `length` is cut by the output-token limit; any other
/// reason is an incomplete response naming it.
fn terminal(turn: &Turn) -> (&'static str, Value) {
    match turn.finish.as_deref() {
        None | Some("stop") | Some("tool_calls") => ("completed", Value::Null),
        Some("length") => ("incomplete", json!({"reason": "max_output_tokens"})),
        Some(other) => ("incomplete", json!({"reason": other})),
    }
}

/// The events written so far, numbered as they are added.
struct Events {
    out: Vec<String>,
}

impl Events {
    /// Add the event `kind` with the fields of `v` (an object) and its sequence number.
    fn push(&mut self, kind: &str, mut v: Value) {
        v["type"] = json!(kind);
        v["sequence_number"] = json!(self.out.len());
        self.out.push(format!("event: {kind}\ndata: {v}\n\n"));
    }
}

/// `base` with the fields of `extra` added (both objects).
fn with(base: &Value, extra: Value) -> Value {
    let mut v = base.clone();
    for (k, x) in extra.as_object().into_iter().flatten() {
        v[k] = x.clone();
    }
    v
}

/// The SSE events of `turn` for request number `request` (1-based, used in ids).
pub(super) fn events(turn: &Turn, model: &str, request: usize) -> Vec<String> {
    let id = format!("resp_{request}");
    let response = |status: &str, output: Vec<Value>, usage: Value, incomplete: Value| {
        json!({
            "id": id, "object": "response", "created_at": 1_700_000_000u64, "status": status,
            "model": model, "output": output, "usage": usage, "incomplete_details": incomplete,
            "error": null, "parallel_tool_calls": true, "tool_choice": "auto", "tools": [],
        })
    };
    let mut ev = Events { out: Vec::new() };
    let started = json!({"response": response("in_progress", vec![], Value::Null, Value::Null)});
    ev.push("response.created", started.clone());
    ev.push("response.in_progress", started);
    let mut items: Vec<Value> = Vec::new();
    if !turn.reasoning.is_empty() {
        let item = reasoning_item(&mut ev, turn, items.len(), request);
        items.push(item);
    }
    if turn.text_repeat.is_some() || !turn.text.is_empty() {
        let item = message_item(&mut ev, turn, items.len(), request);
        items.push(item);
    }
    for (i, tool) in turn.tools.iter().enumerate() {
        let item = function_call_item(&mut ev, tool, items.len(), format!("fc_{request}_{i}"));
        items.push(item);
    }
    let u = usage_of(turn);
    let usage = json!({
        "input_tokens": u.input, "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": u.output, "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": u.input + u.output,
    });
    let (status, incomplete) = terminal(turn);
    let kind = if status == "completed" {
        "response.completed"
    } else {
        "response.incomplete"
    };
    ev.push(
        kind,
        json!({"response": response(status, items, usage, incomplete)}),
    );
    ev.out
}

/// The turn's reasoning as a `reasoning` item at `index` with one summary part; the item.
fn reasoning_item(ev: &mut Events, turn: &Turn, index: usize, request: usize) -> Value {
    let item_id = format!("rs_{request}");
    let text: String = turn.reasoning.concat();
    let at = json!({"item_id": item_id, "output_index": index, "summary_index": 0});
    ev.push(
        "response.output_item.added",
        json!({"output_index": index,
               "item": {"id": item_id, "type": "reasoning", "summary": []}}),
    );
    ev.push(
        "response.reasoning_summary_part.added",
        with(&at, json!({"part": {"type": "summary_text", "text": ""}})),
    );
    for r in &turn.reasoning {
        ev.push(
            "response.reasoning_summary_text.delta",
            with(&at, json!({"delta": r})),
        );
    }
    ev.push(
        "response.reasoning_summary_text.done",
        with(&at, json!({"text": text})),
    );
    ev.push(
        "response.reasoning_summary_part.done",
        with(&at, json!({"part": {"type": "summary_text", "text": text}})),
    );
    let item = json!({"id": item_id, "type": "reasoning",
                      "summary": [{"type": "summary_text", "text": text}]});
    ev.push(
        "response.output_item.done",
        json!({"output_index": index, "item": item}),
    );
    item
}

/// The turn's text as an assistant `message` item at `index`; the item.
fn message_item(ev: &mut Events, turn: &Turn, index: usize, request: usize) -> Value {
    let item_id = format!("msg_{request}");
    let text: String = text_chunks(turn).collect();
    let at = json!({"item_id": item_id, "output_index": index, "content_index": 0});
    ev.push(
        "response.output_item.added",
        json!({"output_index": index, "item": {"id": item_id, "type": "message",
               "status": "in_progress", "role": "assistant", "content": []}}),
    );
    ev.push(
        "response.content_part.added",
        with(
            &at,
            json!({"part": {"type": "output_text", "text": "", "annotations": []}}),
        ),
    );
    for t in text_chunks(turn) {
        ev.push(
            "response.output_text.delta",
            with(&at, json!({"delta": t, "logprobs": []})),
        );
    }
    ev.push(
        "response.output_text.done",
        with(&at, json!({"text": text, "logprobs": []})),
    );
    let part = json!({"type": "output_text", "text": text, "annotations": []});
    ev.push(
        "response.content_part.done",
        with(&at, json!({"part": part})),
    );
    let item = json!({"id": item_id, "type": "message", "status": "completed",
                      "role": "assistant", "content": [part]});
    ev.push(
        "response.output_item.done",
        json!({"output_index": index, "item": item}),
    );
    item
}

/// One tool call as a `function_call` item `item_id` at `index`, its arguments in pieces of
/// `chunk_bytes`; the item.
fn function_call_item(ev: &mut Events, tool: &ToolCall, index: usize, item_id: String) -> Value {
    let args = tool.args.to_string();
    let item = |status: &str, arguments: &str| {
        json!({"id": item_id, "type": "function_call", "status": status,
               "arguments": arguments, "call_id": tool.id, "name": tool.name})
    };
    ev.push(
        "response.output_item.added",
        json!({"output_index": index, "item": item("in_progress", "")}),
    );
    for p in arg_pieces(&args, tool.chunk_bytes.unwrap_or(8)) {
        ev.push(
            "response.function_call_arguments.delta",
            json!({"item_id": item_id, "output_index": index, "delta": p}),
        );
    }
    ev.push(
        "response.function_call_arguments.done",
        json!({"item_id": item_id, "output_index": index, "arguments": args}),
    );
    let done = item("completed", &args);
    ev.push(
        "response.output_item.done",
        json!({"output_index": index, "item": done}),
    );
    done
}

#[cfg(test)]
mod tests {
    use super::super::{render, Api, Reply, Script};
    use serde_json::Value;

    /// The stream's events as (the `event:` line, the data), checking they agree.
    fn events(script: &str) -> Vec<(String, Value)> {
        let s = Script::parse(script).unwrap();
        let Reply::Stream { pieces, .. } = render(&s.turns[0], Api::Responses, "gpt-x", 2) else {
            panic!("not a stream")
        };
        let all: Vec<u8> = pieces.iter().flat_map(|p| p.bytes.clone()).collect();
        let text = String::from_utf8(all).unwrap();
        text.split_terminator("\n\n")
            .map(|block| {
                let (head, data) = block.split_once('\n').unwrap();
                let kind = head.strip_prefix("event: ").unwrap().to_string();
                let v: Value = serde_json::from_str(data.strip_prefix("data: ").unwrap()).unwrap();
                assert_eq!(v["type"], kind.as_str(), "event line and type agree");
                (kind, v)
            })
            .collect()
    }

    #[test]
    fn a_turn_streams_reasoning_text_and_a_function_call_then_completes_with_usage() {
        let ev = events(
            r#"{"turns":[{"reasoning":["think ","more"],"text":["Hel","lo"],
                "tools":[{"id":"call_7","name":"bash","args":{"command":"ls -la"},"chunk_bytes":5}],
                "usage":{"input":12,"output":34}}]}"#,
        );
        let kinds: Vec<&str> = ev.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(kinds[..2], ["response.created", "response.in_progress"]);
        assert_eq!(ev[0].1["response"]["id"], "resp_2");
        assert_eq!(ev[0].1["response"]["model"], "gpt-x");
        // Sequence numbers count every event from 0.
        for (i, (_, v)) in ev.iter().enumerate() {
            assert_eq!(v["sequence_number"], i as u64);
        }
        let of = |kind: &str| -> Vec<&Value> {
            ev.iter()
                .filter(|(k, _)| k == kind)
                .map(|(_, v)| v)
                .collect()
        };
        let added = of("response.output_item.added");
        let types: Vec<&str> = added
            .iter()
            .map(|v| v["item"]["type"].as_str().unwrap())
            .collect();
        assert_eq!(types, ["reasoning", "message", "function_call"]);
        let reasoning: String = of("response.reasoning_summary_text.delta")
            .iter()
            .map(|v| v["delta"].as_str().unwrap())
            .collect();
        assert_eq!(reasoning, "think more");
        let text: Vec<&str> = of("response.output_text.delta")
            .iter()
            .map(|v| v["delta"].as_str().unwrap())
            .collect();
        assert_eq!(text, ["Hel", "lo"]);
        assert!(of("response.output_text.delta")
            .iter()
            .all(|v| v["output_index"] == 1));
        let args = of("response.function_call_arguments.delta");
        assert_eq!(args[0]["delta"], r#"{"com"#, "pieces of chunk_bytes");
        let joined: String = args.iter().map(|v| v["delta"].as_str().unwrap()).collect();
        assert_eq!(joined, r#"{"command":"ls -la"}"#);
        assert_eq!(
            of("response.function_call_arguments.done")[0]["arguments"],
            joined.as_str()
        );
        // Each item is closed whole: clients rebuild it from output_item.done.
        let done = of("response.output_item.done");
        assert_eq!(done[0]["item"]["summary"][0]["text"], "think more");
        assert_eq!(done[1]["item"]["content"][0]["text"], "Hello");
        assert_eq!(done[1]["item"]["role"], "assistant");
        let call = &done[2]["item"];
        assert_eq!(
            (
                &call["call_id"],
                &call["name"],
                &call["arguments"],
                &call["output_index"]
            ),
            (
                &Value::from("call_7"),
                &Value::from("bash"),
                &Value::from(joined.as_str()),
                &Value::Null
            )
        );
        assert_eq!(done[2]["output_index"], 2);
        let (last, v) = ev.last().unwrap();
        assert_eq!(last, "response.completed");
        let r = &v["response"];
        assert_eq!(r["status"], "completed");
        assert_eq!(r["output"].as_array().unwrap().len(), 3);
        assert_eq!(r["output"][2], *call);
        let u = &r["usage"];
        assert_eq!(
            (&u["input_tokens"], &u["output_tokens"], &u["total_tokens"]),
            (&12.into(), &34.into(), &46.into())
        );
        assert_eq!(u["input_tokens_details"]["cached_tokens"], 0);
        assert_eq!(u["output_tokens_details"]["reasoning_tokens"], 0);
    }

    #[test]
    fn a_text_only_turn_has_one_message_item_and_finish_length_is_incomplete() {
        let ev = events(r#"{"turns":[{"text":["a"]}]}"#);
        let kinds: Vec<&str> = ev.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            kinds,
            [
                "response.created",
                "response.in_progress",
                "response.output_item.added",
                "response.content_part.added",
                "response.output_text.delta",
                "response.output_text.done",
                "response.content_part.done",
                "response.output_item.done",
                "response.completed"
            ]
        );
        let ev = events(r#"{"turns":[{"text":["a"],"finish":"length"}]}"#);
        let (last, v) = ev.last().unwrap();
        assert_eq!(last, "response.incomplete");
        assert_eq!(v["response"]["status"], "incomplete");
        assert_eq!(
            v["response"]["incomplete_details"]["reason"],
            "max_output_tokens"
        );
        let ev = events(r#"{"turns":[{"text":["a"],"finish":"content_filter"}]}"#);
        assert_eq!(
            ev.last().unwrap().1["response"]["incomplete_details"]["reason"],
            "content_filter"
        );
        // A tool call finishes as a completed response (the client sees the function call).
        let ev = events(r#"{"turns":[{"tools":[{"id":"c","name":"n","args":{}}]}]}"#);
        assert_eq!(ev.last().unwrap().0, "response.completed");
    }

    #[test]
    fn an_error_turn_is_an_http_status_with_openai_s_error_body() {
        let s = Script::parse(
            r#"{"turns":[{"status":429,"msg":"slow down","headers":{"retry-after":"1"}}]}"#,
        )
        .unwrap();
        let Reply::Error {
            status,
            headers,
            body,
            ..
        } = render(&s.turns[0], Api::Responses, "m", 1)
        else {
            panic!("not an error")
        };
        assert_eq!(status, 429);
        assert_eq!(headers, [("retry-after".to_string(), "1".to_string())]);
        let v: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["error"]["message"], "slow down");
        assert_eq!(v["error"]["type"], "rate_limit_error");
    }
}
