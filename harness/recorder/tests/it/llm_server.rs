//! The scripted LLM server over a real TCP socket, driven by a raw HTTP/1.1 client.

use std::time::Duration;

use pi_recorder::llm_script::Script;
use pi_recorder::llm_server::{LlmServer, ServerOptions};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    /// The body after chunked decoding.
    body: Vec<u8>,
    /// Whether the terminating zero-length chunk arrived.
    complete: bool,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
    /// The JSON payloads of the SSE `data:` lines (without `[DONE]`), and whether `[DONE]` came.
    fn sse(&self) -> (Vec<Value>, bool) {
        let text = String::from_utf8(self.body.clone()).unwrap();
        let mut done = false;
        let mut out = Vec::new();
        for line in text.lines() {
            if let Some(d) = line.strip_prefix("data: ") {
                if d == "[DONE]" {
                    done = true;
                } else {
                    out.push(serde_json::from_str(d).unwrap());
                }
            }
        }
        (out, done)
    }
}

async fn post(addr: std::net::SocketAddr, path: &str, body: &Value) -> Response {
    post_with_key(addr, path, body, "Authorization: Bearer sk-test").await
}

/// [`post`] with `key_header` (a whole header line, or "" for none) as its API key.
async fn post_with_key(
    addr: std::net::SocketAddr,
    path: &str,
    body: &Value,
    key_header: &str,
) -> Response {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let body = body.to_string();
    let key_header = if key_header.is_empty() {
        String::new()
    } else {
        format!("{key_header}\r\n")
    };
    let req = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\n{key_header}Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut raw))
        .await
        .expect("the server closes the connection")
        .unwrap();
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8(raw[..split].to_vec()).unwrap();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .map(|l| {
            let (k, v) = l.split_once(':').unwrap();
            (k.trim().to_string(), v.trim().to_string())
        })
        .collect();
    let rest = &raw[split + 4..];
    let chunked = headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v == "chunked");
    if !chunked {
        return Response {
            status,
            headers,
            body: rest.to_vec(),
            complete: true,
        };
    }
    let mut body = Vec::new();
    let mut pos = 0;
    let mut complete = false;
    while let Some(eol) = rest[pos..].windows(2).position(|w| w == b"\r\n") {
        let size =
            usize::from_str_radix(std::str::from_utf8(&rest[pos..pos + eol]).unwrap(), 16).unwrap();
        pos += eol + 2;
        if size == 0 {
            complete = true;
            break;
        }
        body.extend_from_slice(&rest[pos..pos + size]);
        pos += size + 2;
    }
    Response {
        status,
        headers,
        body,
        complete,
    }
}

fn chat(prompt: &str) -> Value {
    serde_json::json!({"model": "fake-model", "stream": true,
        "messages": [{"role": "user", "content": prompt}],
        "tools": [{"type": "function", "function": {"name": "bash", "parameters": {}}}]})
}

#[tokio::test]
async fn a_scripted_exchange_streams_errors_and_logs() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("requests.jsonl");
    let script = Script::parse(
        r#"{"turns":[
            {"reasoning":["hm"],"text":["Hel","lo"],"tools":[{"id":"call_1","name":"bash","args":{"command":"ls -la"}}]},
            {"status":503,"msg":"overloaded","headers":{"x-should-retry":"false","retry-after":"0"}},
            {"text":["partial","never sent"],"cut_after":2},
            {"text":["anthropic"]}
        ]}"#,
    )
    .unwrap();
    let server = LlmServer::start(
        script,
        ServerOptions {
            port: 0,
            log_path: Some(log.clone()),
            ..ServerOptions::default()
        },
    )
    .await
    .unwrap();
    assert!(server.addr().ip().is_loopback());

    // 1: the stream, chunk by chunk.
    let r = post(server.addr(), "/v1/chat/completions", &chat("first prompt")).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    assert!(r.complete);
    let (chunks, done) = r.sse();
    assert!(done, "a complete stream ends with data: [DONE]");
    let deltas: Vec<&Value> = chunks
        .iter()
        .filter_map(|c| c["choices"].get(0))
        .map(|c| &c["delta"])
        .collect();
    assert_eq!(deltas[0]["role"], "assistant");
    assert_eq!(deltas[1]["reasoning_content"], "hm");
    let text: String = deltas
        .iter()
        .filter_map(|d| d["content"].as_str())
        .collect();
    assert_eq!(text, "Hello");
    let call = deltas
        .iter()
        .find(|d| d["tool_calls"][0]["id"] == "call_1")
        .unwrap();
    assert_eq!(call["tool_calls"][0]["function"]["name"], "bash");
    let args: String = deltas
        .iter()
        .filter_map(|d| d["tool_calls"][0]["function"]["arguments"].as_str())
        .collect();
    assert_eq!(
        serde_json::from_str::<Value>(&args).unwrap(),
        serde_json::json!({"command": "ls -la"})
    );
    let finish: Vec<&str> = chunks
        .iter()
        .filter_map(|c| c["choices"].get(0)?.get("finish_reason")?.as_str())
        .collect();
    assert_eq!(finish, ["tool_calls"]);
    assert_eq!(chunks.last().unwrap()["usage"]["prompt_tokens"], 100);

    // 2: an HTTP error with its headers and the API's error object.
    let r = post(
        server.addr(),
        "/v1/chat/completions",
        &chat("second prompt"),
    )
    .await;
    assert_eq!(r.status, 503);
    assert_eq!(r.header("x-should-retry"), Some("false"));
    assert_eq!(r.header("retry-after"), Some("0"));
    let body: Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(body["error"]["message"], "overloaded");

    // 3: cut after two events: no terminating chunk, no [DONE].
    let r = post(server.addr(), "/v1/chat/completions", &chat("third")).await;
    assert_eq!(r.status, 200);
    assert!(!r.complete);
    let (chunks, done) = r.sse();
    assert!(!done);
    assert_eq!(chunks.len(), 2);

    // 4: Anthropic messages streaming.
    let r = post(
        server.addr(),
        "/v1/messages?beta=true",
        &serde_json::json!({"model": "claude-x", "stream": true, "system": "be brief",
            "messages": [{"role": "user", "content": [{"type": "text", "text": "fourth"}]}]}),
    )
    .await;
    let (events, _) = r.sse();
    assert_eq!(events[0]["type"], "message_start");
    assert_eq!(events[0]["message"]["model"], "claude-x");
    assert_eq!(events[2]["delta"]["text"], "anthropic");
    assert_eq!(events.last().unwrap()["type"], "message_stop");

    // 5: the script is used up: a 500 that says so.
    let r = post(server.addr(), "/v1/chat/completions", &chat("fifth")).await;
    assert_eq!(r.status, 500);
    assert!(String::from_utf8_lossy(&r.body).contains("no answer for request 5"));

    // An unknown path is a 404, also logged.
    let r = post(server.addr(), "/v2/nothing", &chat("x")).await;
    assert_eq!(r.status, 404);

    // The log: in memory and on disk, prompts included, the key never.
    let reqs = server.requests();
    assert_eq!(reqs.len(), 6);
    assert!(reqs[0].mentions("first prompt") && !reqs[0].mentions("second prompt"));
    assert!(reqs[1].mentions("second prompt"));
    assert!(reqs[3].mentions("be brief"));
    assert_eq!(reqs[0].tools, ["bash"]);
    assert_eq!(
        reqs.iter().map(|r| r.status).collect::<Vec<_>>(),
        [200, 503, 200, 200, 500, 404]
    );
    assert_eq!(reqs[4].turn, None);
    server.shutdown().await;
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 6);
    assert_eq!(lines[0]["index"], 1);
    assert_eq!(lines[0]["path"], "/v1/chat/completions");
    assert_eq!(lines[0]["messages"][0]["content"], "first prompt");
    assert_eq!(lines[3]["path"], "/v1/messages?beta=true");
    assert!(!text.contains("sk-test"), "the API key must not be logged");
}

#[tokio::test]
async fn a_stalled_stream_holds_until_the_server_stops() {
    let script = Script::parse(r#"{"turns":[{"text":["a","b"],"stall_after":1}]}"#).unwrap();
    let server = LlmServer::start(script, ServerOptions::default())
        .await
        .unwrap();
    let addr = server.addr();
    let client = tokio::spawn(async move { post(addr, "/v1/chat/completions", &chat("x")).await });
    // The request is logged once the server has read it; the stream then stalls.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while server.requests().is_empty() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "request never logged"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(!client.is_finished());
    // Stopping the server closes the stalled connection.
    server.shutdown().await;
    let r = tokio::time::timeout(Duration::from_secs(10), client)
        .await
        .unwrap()
        .unwrap();
    assert!(!r.complete);
    assert_eq!(r.sse().0.len(), 1);
}

/// The OpenAI Responses route (`POST /v1/responses`, what pi's `openai` provider and Codex
/// call): a stream with a function call and usage, an HTTP error status with its
/// retry headers and OpenAI's error body, a stream cut before its terminal event; the log
/// keeps the request's `input`, `instructions` and tool names.
#[tokio::test]
async fn the_responses_route_streams_a_function_call_an_error_status_and_a_cut() {
    let script = Script::parse(
        r#"{"turns":[
            {"text":["Let me ","look."],"tools":[{"id":"call_9","name":"bash","args":{"command":"ls"}}],
             "usage":{"input":50,"output":7}},
            {"status":429,"msg":"Rate limit reached","headers":{"retry-after-ms":"10","x-should-retry":"true"}},
            {"text":["cut","here"],"cut_after":3}
        ]}"#,
    )
    .unwrap();
    let server = LlmServer::start(script, ServerOptions::default())
        .await
        .unwrap();
    let request = serde_json::json!({"model": "gpt-4.1", "stream": true, "instructions": "Be brief.",
        "input": [{"role": "user", "content": [{"type": "input_text", "text": "list files"}]}],
        "tools": [{"type": "function", "name": "bash", "parameters": {}}]});

    let r = post(server.addr(), "/v1/responses", &request).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    assert!(r.complete);
    // Each event names its type twice: the SSE `event:` line and the data's `type`.
    let text = String::from_utf8(r.body.clone()).unwrap();
    let kinds: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("event: "))
        .collect();
    let (events, done) = r.sse();
    assert!(!done, "no [DONE] on the Responses wire");
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, types);
    assert_eq!(
        types,
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.output_item.added",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    assert_eq!(events[0]["response"]["model"], "gpt-4.1");
    let call = &events[13]["item"];
    assert_eq!(call["type"], "function_call");
    assert_eq!(call["call_id"], "call_9");
    assert_eq!(call["name"], "bash");
    assert_eq!(call["arguments"], r#"{"command":"ls"}"#);
    let done = &events[14]["response"];
    assert_eq!(done["status"], "completed");
    assert_eq!(done["output"][1], *call);
    assert_eq!(done["usage"]["input_tokens"], 50);
    assert_eq!(done["usage"]["output_tokens"], 7);
    assert_eq!(done["usage"]["total_tokens"], 57);

    let r = post(server.addr(), "/v1/responses", &request).await;
    assert_eq!(r.status, 429);
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.header("retry-after-ms"), Some("10"));
    assert_eq!(r.header("x-should-retry"), Some("true"));
    let body: Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(body["error"]["message"], "Rate limit reached");
    assert_eq!(body["error"]["type"], "rate_limit_error");

    // Cut after three events: no terminal event, no terminating chunk.
    let r = post(server.addr(), "/v1/responses", &request).await;
    assert_eq!(r.status, 200);
    assert!(!r.complete);
    let (events, _) = r.sse();
    assert_eq!(events.len(), 3);
    assert!(events.iter().all(|e| e["type"] != "response.completed"));

    let log = server.requests();
    assert_eq!(log.len(), 3);
    assert_eq!(log[0].path, "/v1/responses");
    assert_eq!(log[0].model.as_deref(), Some("gpt-4.1"));
    assert_eq!(log[0].tools, ["bash"]);
    assert!(log[0].mentions("list files"), "input is logged as messages");
    assert!(
        log[0].mentions("Be brief."),
        "instructions are logged as system"
    );
    assert_eq!(
        log.iter().map(|r| r.status).collect::<Vec<_>>(),
        [200, 429, 200]
    );
    server.shutdown().await;
}

/// Google's Gemini API (`POST /v1beta/models/M:streamGenerateContent?alt=sse`, what Gemini
/// CLI calls, and `:generateContent`): text chunks as SSE `data:` lines with the path's
/// model as `modelVersion`, a function call, an HTTP 400 with Google's error body and the
/// turn's headers, the same turn whole as one JSON body, a stream cut before its finish;
/// the request log (memory and file) keeps the path's model, `contents`,
/// `systemInstruction`, the declared functions, and that a key came, never the key.
#[tokio::test]
async fn the_gemini_routes_stream_chunks_a_function_call_an_error_a_whole_body_and_a_cut() {
    let dir = tempfile::tempdir().unwrap();
    let log_path = dir.path().join("requests.jsonl");
    let script = Script::parse(
        r#"{"turns":[
            {"text":["Hello ","there."],"usage":{"input":11,"output":7}},
            {"tools":[{"id":"call_1","name":"run_shell_command","args":{"command":"echo hi"}}]},
            {"status":400,"msg":"fake: bad request","headers":{"x-test":"1"}},
            {"reasoning":["hm"],"text":["whole"]},
            {"text":["cut","here"],"cut_after":1}
        ]}"#,
    )
    .unwrap();
    let server = LlmServer::start(
        script,
        ServerOptions {
            log_path: Some(log_path.clone()),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let request = serde_json::json!({
        "contents": [{"role": "user", "parts": [{"text": "say hi"}]}],
        "systemInstruction": {"role": "user", "parts": [{"text": "You are terse."}]},
        "tools": [{"functionDeclarations": [{"name": "run_shell_command", "parameters": {}}]}],
        "generationConfig": {"thinkingConfig": {"includeThoughts": true}}});
    let stream = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse";
    let key = "x-goog-api-key: secret-key";

    let r = post_with_key(server.addr(), stream, &request, key).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    assert!(r.complete);
    let (chunks, done) = r.sse();
    assert!(!done, "no [DONE] on Gemini's wire");
    let text: Vec<&str> = chunks
        .iter()
        .map(|c| {
            c["candidates"][0]["content"]["parts"][0]["text"]
                .as_str()
                .unwrap()
        })
        .collect();
    assert_eq!(text, ["Hello ", "there."]);
    assert!(chunks
        .iter()
        .all(|c| c["modelVersion"] == "gemini-2.5-flash"));
    let last = &chunks[1];
    assert_eq!(last["candidates"][0]["finishReason"], "STOP");
    assert_eq!(last["usageMetadata"]["promptTokenCount"], 11);
    assert_eq!(last["usageMetadata"]["candidatesTokenCount"], 7);
    assert_eq!(last["usageMetadata"]["totalTokenCount"], 18);

    let r = post_with_key(server.addr(), stream, &request, key).await;
    let (chunks, _) = r.sse();
    assert_eq!(chunks.len(), 1);
    let call = &chunks[0]["candidates"][0]["content"]["parts"][0]["functionCall"];
    assert_eq!(
        *call,
        serde_json::json!({"name": "run_shell_command", "args": {"command": "echo hi"}})
    );

    let r = post_with_key(server.addr(), stream, &request, key).await;
    assert_eq!(r.status, 400);
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.header("x-test"), Some("1"));
    let body: Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(
        body,
        serde_json::json!({"error": {"code": 400, "message": "fake: bad request", "status": "INVALID_ARGUMENT"}})
    );

    // generateContent, the key as a query parameter: the turn whole, one JSON body.
    let whole = "/v1beta/models/gemini-2.5-pro:generateContent?key=secret-key";
    let r = post_with_key(server.addr(), whole, &request, "").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert!(r.complete);
    let body: Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(
        body["candidates"][0]["content"]["parts"],
        serde_json::json!([{"text": "hm", "thought": true}, {"text": "whole"}])
    );
    assert_eq!(body["modelVersion"], "gemini-2.5-pro");
    assert_eq!(body["usageMetadata"]["thoughtsTokenCount"], 1);

    // Cut after one chunk: no finishReason, no terminating chunk.
    let r = post_with_key(server.addr(), stream, &request, "").await;
    assert_eq!(r.status, 200);
    assert!(!r.complete);
    let (chunks, _) = r.sse();
    assert_eq!(chunks.len(), 1);
    assert!(chunks[0]["candidates"][0]["finishReason"].is_null());

    let log = server.requests();
    assert_eq!(
        log.iter().map(|r| r.status).collect::<Vec<_>>(),
        [200, 200, 400, 200, 200]
    );
    assert_eq!(log[0].path, stream);
    assert_eq!(log[0].model.as_deref(), Some("gemini-2.5-flash"));
    assert_eq!(log[3].model.as_deref(), Some("gemini-2.5-pro"));
    assert_eq!(log[0].tools, ["run_shell_command"]);
    assert!(log[0].mentions("say hi"), "contents are logged as messages");
    assert!(
        log[0].mentions("You are terse."),
        "systemInstruction as system"
    );
    assert_eq!(
        log.iter().map(|r| r.has_api_key).collect::<Vec<_>>(),
        [true, true, true, true, false]
    );
    assert_eq!(
        log[3].path,
        "/v1beta/models/gemini-2.5-pro:generateContent?key=REDACTED"
    );
    server.shutdown().await;
    let file = std::fs::read_to_string(&log_path).unwrap();
    assert_eq!(file.lines().count(), 5);
    assert!(!file.contains("secret-key"), "the key is never logged");
    let first: Value = serde_json::from_str(file.lines().next().unwrap()).unwrap();
    assert_eq!(first["model"], "gemini-2.5-flash");
    assert_eq!(first["messages"], request["contents"]);
    assert_eq!(first["system"], request["systemInstruction"]);
    assert_eq!(first["tools"], serde_json::json!(["run_shell_command"]));
    assert_eq!(first["turn"], 0);
}
