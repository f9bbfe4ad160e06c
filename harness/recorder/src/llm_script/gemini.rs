//! One script turn rendered as Google's Gemini API answer (`POST /v1beta/models/M:…`).
//!
//! This module owns the Gemini wire, as the real API answers and as its clients read it
//! (Gemini CLI through `@google/genai`): `streamGenerateContent?alt=sse` streams
//! `GenerateContentResponse` chunks as SSE `data:` lines, one per script chunk (a `thought:
//! true` text part per reasoning chunk, a text part per text chunk, a `functionCall` part per
//! tool), the last one carrying the candidate's `finishReason` and the whole `usageMetadata`;
//! `generateContent` answers the same turn whole, as one JSON body. Every chunk names the
//! requested model as its `modelVersion` (Gemini CLI groups its usage statistics by it).
//! Errors are Google's `{"error":{"code","message","status"}}`. Pure: no I/O.
//!
//! The wire has no place for a tool call's id: the API sends `functionCall` with its `name`
//! and whole `args` (never in pieces), and the client makes its own ids. So the script's
//! `id` and `chunk_bytes` are not sent.

use serde_json::{json, Value};

use super::{text_chunks, usage_of, Turn};

/// The candidate's `finishReason` for the turn's `finish`: `stop`, `tool_calls` (Gemini
/// ends a function call with `STOP`) or none give `STOP`; `length` gives `MAX_TOKENS`;
/// `content_filter` gives `SAFETY`; any other value is sent upper-cased (`recitation` →
/// `RECITATION`, `malformed_function_call` → `MALFORMED_FUNCTION_CALL`).
fn finish_reason(turn: &Turn) -> String {
    match turn.finish.as_deref() {
        None | Some("stop") | Some("tool_calls") => "STOP".to_string(),
        Some("length") => "MAX_TOKENS".to_string(),
        Some("content_filter") => "SAFETY".to_string(),
        Some(other) => other.to_ascii_uppercase(),
    }
}

/// The `usageMetadata` of a chunk: the prompt's count on every chunk, the whole usage on the
/// last one. `candidatesTokenCount` is the script's `usage.output` (by default the number of
/// text chunks and tools), `thoughtsTokenCount` (only when the turn thinks) the number of
/// reasoning chunks, `totalTokenCount` their sum with the prompt's.
fn usage_metadata(turn: &Turn, last: bool) -> Value {
    let u = usage_of(turn);
    if !last {
        return json!({"promptTokenCount": u.input, "totalTokenCount": u.input});
    }
    let thoughts = turn.reasoning.len() as u64;
    let candidates = if turn.usage.is_some() {
        u.output
    } else {
        u.output.saturating_sub(thoughts)
    };
    let mut v = json!({
        "promptTokenCount": u.input,
        "candidatesTokenCount": candidates,
        "totalTokenCount": u.input + candidates + thoughts,
    });
    if thoughts > 0 {
        v["thoughtsTokenCount"] = json!(thoughts);
    }
    v
}

/// One `GenerateContentResponse` holding `parts`; the last one of a turn carries its finish.
fn response(turn: &Turn, model: &str, request: usize, parts: Vec<Value>, last: bool) -> Value {
    let mut candidate = json!({"content": {"role": "model", "parts": parts}, "index": 0});
    if last {
        candidate["finishReason"] = json!(finish_reason(turn));
    }
    json!({
        "candidates": [candidate],
        "usageMetadata": usage_metadata(turn, last),
        "modelVersion": model,
        "responseId": format!("gem_{request}"),
    })
}

/// The turn's parts in wire order, one per script chunk: thoughts, text, function calls.
fn parts(turn: &Turn) -> Vec<Value> {
    let thoughts = turn
        .reasoning
        .iter()
        .map(|r| json!({"text": r, "thought": true}));
    let text = text_chunks(turn).map(|t| json!({"text": t}));
    let calls = turn
        .tools
        .iter()
        .map(|t| json!({"functionCall": {"name": t.name, "args": t.args}}));
    thoughts.chain(text).chain(calls).collect()
}

/// The SSE chunks of `turn` (`streamGenerateContent?alt=sse`) for request number `request`
/// (1-based, used in `responseId`). A turn with nothing to say still sends one chunk, an
/// empty text part, to carry its finish and usage.
pub(super) fn events(turn: &Turn, model: &str, request: usize) -> Vec<String> {
    let mut parts = parts(turn);
    if parts.is_empty() {
        parts.push(json!({"text": ""}));
    }
    let n = parts.len();
    parts
        .into_iter()
        .enumerate()
        .map(|(i, p)| {
            let chunk = response(turn, model, request, vec![p], i + 1 == n);
            format!("data: {chunk}\r\n\r\n")
        })
        .collect()
}

/// The whole answer of `turn` (`generateContent`): the reasoning as one thought part, the
/// text as one part, a part per function call, the finish and the whole usage.
pub(super) fn whole(turn: &Turn, model: &str, request: usize) -> String {
    let mut parts = Vec::new();
    if !turn.reasoning.is_empty() {
        parts.push(json!({"text": turn.reasoning.concat(), "thought": true}));
    }
    if !turn.text.is_empty() || turn.text_repeat.is_some() {
        parts.push(json!({"text": text_chunks(turn).collect::<String>()}));
    }
    for t in &turn.tools {
        parts.push(json!({"functionCall": {"name": t.name, "args": t.args}}));
    }
    if parts.is_empty() {
        parts.push(json!({"text": ""}));
    }
    response(turn, model, request, parts, true).to_string()
}

/// Google's error body for an HTTP `status`: `{"error":{"code","message","status"}}`, the
/// status named as Google's APIs name it (`UNKNOWN` for a code they do not map).
pub(super) fn error_body(status: u16, msg: &str) -> String {
    let name = match status {
        400 => "INVALID_ARGUMENT",
        401 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        409 => "ABORTED",
        429 => "RESOURCE_EXHAUSTED",
        499 => "CANCELLED",
        500 => "INTERNAL",
        501 => "NOT_IMPLEMENTED",
        503 => "UNAVAILABLE",
        504 => "DEADLINE_EXCEEDED",
        _ => "UNKNOWN",
    };
    json!({"error": {"code": status, "message": msg, "status": name}}).to_string()
}

#[cfg(test)]
mod tests {
    use super::super::{render_gemini, Reply, Script, StreamEnd};
    use serde_json::Value;

    fn turn(script: &str) -> super::Turn {
        Script::parse(script).unwrap().turns.remove(0)
    }

    /// The stream's chunks, checking each is one `data:` line ended by a blank line.
    fn chunks(script: &str) -> Vec<Value> {
        let Reply::Stream { pieces, end, .. } =
            render_gemini(&turn(script), "gemini-2.5-flash", 3, true)
        else {
            panic!("not a stream")
        };
        assert_eq!(end, StreamEnd::Complete);
        pieces
            .iter()
            .map(|p| {
                let text = std::str::from_utf8(&p.bytes).unwrap();
                let data = text.strip_prefix("data: ").unwrap();
                let data = data.strip_suffix("\r\n\r\n").expect("one event per piece");
                serde_json::from_str(data).unwrap()
            })
            .collect()
    }

    fn parts(c: &Value) -> &Vec<Value> {
        c["candidates"][0]["content"]["parts"].as_array().unwrap()
    }

    #[test]
    fn text_chunks_stream_as_text_parts_and_the_last_carries_finish_and_usage() {
        let c = chunks(
            r#"{"turns":[{"text":["Hello ","from the ","fake model."],"usage":{"input":11,"output":7}}]}"#,
        );
        assert_eq!(c.len(), 3, "one chunk per script chunk");
        let text: Vec<&str> = c
            .iter()
            .map(|c| parts(c)[0]["text"].as_str().unwrap())
            .collect();
        assert_eq!(text, ["Hello ", "from the ", "fake model."]);
        for x in &c {
            assert_eq!(x["modelVersion"], "gemini-2.5-flash");
            assert_eq!(x["responseId"], "gem_3");
            assert_eq!(x["candidates"][0]["content"]["role"], "model");
            assert_eq!(x["candidates"][0]["index"], 0);
            assert_eq!(parts(x).len(), 1);
            assert_eq!(x["usageMetadata"]["promptTokenCount"], 11);
        }
        assert!(c[..2]
            .iter()
            .all(|x| x["candidates"][0]["finishReason"].is_null()));
        assert!(c[..2]
            .iter()
            .all(|x| x["usageMetadata"]["candidatesTokenCount"].is_null()));
        let last = &c[2];
        assert_eq!(last["candidates"][0]["finishReason"], "STOP");
        let u = &last["usageMetadata"];
        assert_eq!(
            (
                &u["promptTokenCount"],
                &u["candidatesTokenCount"],
                &u["totalTokenCount"]
            ),
            (&11.into(), &7.into(), &18.into())
        );
        assert!(
            u.get("thoughtsTokenCount").is_none(),
            "no thinking, no thoughts count"
        );
    }

    #[test]
    fn a_function_call_is_a_whole_part_without_the_script_s_id() {
        let c = chunks(
            r#"{"turns":[{"text":["Running."],"tools":[
                {"id":"call_1","name":"run_shell_command","args":{"command":"echo hi","description":"x"},"chunk_bytes":3},
                {"id":"call_2","name":"read_file","args":{"absolute_path":"/tmp/a"}}]}]}"#,
        );
        assert_eq!(c.len(), 3);
        assert_eq!(parts(&c[0])[0]["text"], "Running.");
        let call = &parts(&c[1])[0]["functionCall"];
        assert_eq!(call["name"], "run_shell_command");
        // Whole, as an object (not a JSON string, not in chunk_bytes pieces); no id.
        assert_eq!(
            call["args"],
            serde_json::json!({"command": "echo hi", "description": "x"})
        );
        assert_eq!(call.as_object().unwrap().len(), 2);
        assert!(!c[1].to_string().contains("call_1"));
        assert_eq!(parts(&c[2])[0]["functionCall"]["name"], "read_file");
        // A function call ends with STOP (Gemini has no tool-call finish reason).
        assert_eq!(c[2]["candidates"][0]["finishReason"], "STOP");
        // Default usage: prompt 100, one candidate token per text chunk and tool.
        assert_eq!(c[2]["usageMetadata"]["candidatesTokenCount"], 3);
        assert_eq!(c[2]["usageMetadata"]["totalTokenCount"], 103);
    }

    #[test]
    fn thinking_streams_as_thought_parts_first_and_is_counted_apart() {
        let c = chunks(r#"{"turns":[{"reasoning":["Let me ","think."],"text":["ok"]}]}"#);
        assert_eq!(c.len(), 3);
        assert_eq!(
            parts(&c[0])[0],
            serde_json::json!({"text": "Let me ", "thought": true})
        );
        assert_eq!(parts(&c[1])[0]["thought"], true);
        assert_eq!(parts(&c[2])[0], serde_json::json!({"text": "ok"}));
        let u = &c[2]["usageMetadata"];
        assert_eq!(u["thoughtsTokenCount"], 2);
        assert_eq!(u["candidatesTokenCount"], 1);
        assert_eq!(u["totalTokenCount"], 103);
        // A script's usage.output is the candidates' count; thoughts add to the total.
        let c = chunks(
            r#"{"turns":[{"reasoning":["r"],"text":["t"],"usage":{"input":5,"output":9}}]}"#,
        );
        let u = &c[1]["usageMetadata"];
        assert_eq!(
            (
                &u["candidatesTokenCount"],
                &u["thoughtsTokenCount"],
                &u["totalTokenCount"]
            ),
            (&9.into(), &1.into(), &15.into())
        );
    }

    #[test]
    fn finish_reasons_map_to_gemini_s_and_an_empty_turn_still_finishes() {
        let finish = |f: &str| {
            let c = chunks(&format!(r#"{{"turns":[{{"text":["a"],"finish":"{f}"}}]}}"#));
            c.last().unwrap()["candidates"][0]["finishReason"].clone()
        };
        assert_eq!(finish("length"), "MAX_TOKENS");
        assert_eq!(finish("stop"), "STOP");
        assert_eq!(finish("content_filter"), "SAFETY");
        assert_eq!(finish("malformed_function_call"), "MALFORMED_FUNCTION_CALL");
        let c = chunks(r#"{"turns":[{}]}"#);
        assert_eq!(c.len(), 1);
        assert_eq!(parts(&c[0])[0], serde_json::json!({"text": ""}));
        assert_eq!(c[0]["candidates"][0]["finishReason"], "STOP");
    }

    #[test]
    fn generate_content_answers_the_same_turn_whole_as_one_json_body() {
        let t = turn(
            r#"{"turns":[{"reasoning":["a","b"],"text":["Hel","lo"],"text_repeat":{"chunk":"!","count":2},
                "tools":[{"id":"c","name":"run_shell_command","args":{"command":"ls"}}],
                "finish":"length","usage":{"input":4,"output":6}}]}"#,
        );
        let Reply::Json {
            pieces,
            end,
            headers,
            ..
        } = render_gemini(&t, "gemini-x", 1, false)
        else {
            panic!("not a JSON body")
        };
        assert_eq!(
            (pieces.len(), end, headers.len()),
            (1, StreamEnd::Complete, 0)
        );
        let v: Value = serde_json::from_slice(&pieces[0].bytes).unwrap();
        assert_eq!(
            v["candidates"][0]["content"]["parts"],
            serde_json::json!([{"text": "ab", "thought": true}, {"text": "Hello!!"},
                               {"functionCall": {"name": "run_shell_command", "args": {"command": "ls"}}}])
        );
        assert_eq!(v["candidates"][0]["finishReason"], "MAX_TOKENS");
        assert_eq!(v["modelVersion"], "gemini-x");
        assert_eq!(v["usageMetadata"]["totalTokenCount"], 12);
        // stall_after 0: the head, never the body.
        let t = turn(r#"{"turns":[{"text":["a"],"stall_after":0}]}"#);
        let Reply::Json { pieces, end, .. } = render_gemini(&t, "m", 1, false) else {
            panic!("not a JSON body")
        };
        assert_eq!((pieces.len(), end), (0, StreamEnd::Stall));
    }

    #[test]
    fn an_error_turn_is_google_s_error_body_with_the_turn_s_headers() {
        let error = |script: &str| {
            let Reply::Error {
                status,
                headers,
                body,
                ..
            } = render_gemini(&turn(script), "m", 1, true)
            else {
                panic!("not an error")
            };
            (
                status,
                headers,
                serde_json::from_slice::<Value>(&body).unwrap(),
            )
        };
        let (status, headers, v) = error(r#"{"turns":[{"status":400,"msg":"fake: bad request"}]}"#);
        assert_eq!((status, headers.len()), (400, 0));
        assert_eq!(
            v,
            serde_json::json!({"error": {"code": 400, "message": "fake: bad request", "status": "INVALID_ARGUMENT"}})
        );
        let (_, headers, v) = error(r#"{"turns":[{"status":503,"headers":{"retry-after":"2"}}]}"#);
        assert_eq!(headers, [("retry-after".to_string(), "2".to_string())]);
        assert_eq!(v["error"]["status"], "UNAVAILABLE");
        assert_eq!(v["error"]["message"], "HTTP 503");
        for (code, name) in [
            (500, "INTERNAL"),
            (429, "RESOURCE_EXHAUSTED"),
            (418, "UNKNOWN"),
        ] {
            let (_, _, v) = error(&format!(r#"{{"turns":[{{"status":{code},"msg":"m"}}]}}"#));
            assert_eq!(
                (v["error"]["code"].as_u64(), v["error"]["status"].as_str()),
                (Some(code), Some(name))
            );
        }
        // A body given verbatim wins.
        let (_, _, v) = error(r#"{"turns":[{"status":500,"body":{"x":1}}]}"#);
        assert_eq!(v, serde_json::json!({"x": 1}));
        let Reply::Error {
            body,
            status,
            headers,
            ..
        } = super::super::exhausted_gemini_reply(2, 2)
        else {
            panic!()
        };
        let v: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(
            (status, v["error"]["status"].as_str()),
            (500, Some("INTERNAL"))
        );
        assert!(v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no answer for request 3"));
        assert_eq!(
            headers,
            [("x-should-retry".to_string(), "false".to_string())]
        );
    }
}
