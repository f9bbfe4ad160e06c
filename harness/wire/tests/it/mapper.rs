//! Unit tests of the mapper, one section per point of its contract
//! (`docs/normalized-stream.md`). Hand-made event lines plus the committed real cassettes.

use pi_wire::mapper::{map_all, EndCause, Mapper, MapperOptions, StreamEnd};
use pi_wire::message::{ExitInfo, Failure, FailureReason, Message, RetrySource, Usage};
use serde_json::{json, Value};

use pi_testkit::invariants::*;

// ---------------------------------------------------------------------------
// Builders for pi events (0.87.1 shapes unless said otherwise).

fn jsonl(events: &[Value]) -> String {
    events.iter().map(|e| format!("{e}\n")).collect()
}

fn session(id: &str) -> Value {
    json!({"type":"session","version":3,"id":id,"timestamp":"t","cwd":"/w"})
}

fn assistant_start(ts: u64) -> Value {
    json!({"type":"message_start","message":{"role":"assistant","content":[],"stopReason":"pending","timestamp":ts}})
}

fn text_delta(index: u64, delta: &str) -> Value {
    json!({"type":"message_update","assistantMessageEvent":{"type":"text_delta","contentIndex":index,"delta":delta}})
}

fn thinking_delta(index: u64, delta: &str) -> Value {
    json!({"type":"message_update","assistantMessageEvent":{"type":"thinking_delta","contentIndex":index,"delta":delta}})
}

/// A snapshot-only producer's update: the whole message so far, no delta.
fn snapshot(content: Value) -> Value {
    json!({"type":"message_update","assistantMessageEvent":{"type":"text_delta","contentIndex":0,
        "partial":{"role":"assistant","content":content}}})
}

fn text(t: &str) -> Value {
    json!({"type":"text","text":t})
}

fn thinking(t: &str) -> Value {
    json!({"type":"thinking","thinking":t,"thinkingSignature":"reasoning_content"})
}

fn tool_block(id: &str, args: Value) -> Value {
    json!({"type":"toolCall","id":id,"name":"bash","arguments":args})
}

fn usage_json(input: u64, output: u64) -> Value {
    json!({"input":input,"output":output,"cacheRead":1,"cacheWrite":2,"totalTokens":input+output+3,
        "cost":{"input":0.1,"output":0.2,"cacheRead":0,"cacheWrite":0,"total":0.25}})
}

fn assistant_end(ts: u64, content: Value, stop: &str) -> Value {
    json!({"type":"message_end","message":{"role":"assistant","content":content,"stopReason":stop,
        "timestamp":ts,"usage":usage_json(10,5)}})
}

fn assistant_error_end(ts: u64, stop: &str, error: &str) -> Value {
    json!({"type":"message_end","message":{"role":"assistant","content":[],"stopReason":stop,
        "errorMessage":error,"timestamp":ts,"usage":usage_json(0,0)}})
}

fn tool_start(id: &str, args: Value) -> Value {
    json!({"type":"tool_execution_start","toolCallId":id,"toolName":"bash","args":args})
}

fn tool_update(id: &str, partial: &str) -> Value {
    json!({"type":"tool_execution_update","toolCallId":id,"toolName":"bash","args":{},
        "partialResult":{"content":[{"type":"text","text":partial}]}})
}

fn tool_end(id: &str, result: &str, is_error: bool) -> Value {
    json!({"type":"tool_execution_end","toolCallId":id,"toolName":"bash",
        "result":{"content":[{"type":"text","text":result}]},"isError":is_error})
}

fn agent_end(will_retry: Option<bool>) -> Value {
    match will_retry {
        Some(w) => json!({"type":"agent_end","messages":[],"willRetry":w}),
        None => json!({"type":"agent_end","messages":[]}),
    }
}

fn exit0() -> StreamEnd {
    StreamEnd::eof(Some(ExitInfo {
        code: Some(0),
        signal: None,
    }))
}

fn map(stdout: &str) -> Vec<Message> {
    map_all(stdout.as_bytes(), exit0(), MapperOptions::default())
}

fn texts(messages: &[Message]) -> Vec<&str> {
    messages
        .iter()
        .filter_map(|m| match m {
            Message::Assistant { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

fn kinds(messages: &[Message]) -> Vec<&'static str> {
    messages.iter().map(Message::kind).collect()
}

fn failure(messages: &[Message]) -> &Failure {
    match messages.last() {
        Some(Message::TerminalFailed(f)) => f,
        other => panic!("expected terminal.failed, got {other:?}"),
    }
}

fn stop_reason(messages: &[Message]) -> &str {
    match messages.last() {
        Some(Message::TerminalCompleted { stop_reason, .. }) => stop_reason,
        other => panic!("expected terminal.completed, got {other:?}"),
    }
}

/// A one-message run around `body` (events of one assistant message).
fn simple_run(body: &[Value], end: Value) -> String {
    let mut events = vec![
        session("s1"),
        json!({"type":"agent_start"}),
        assistant_start(1),
    ];
    events.extend_from_slice(body);
    events.push(end);
    events.push(agent_end(Some(false)));
    events.push(json!({"type":"agent_settled"}));
    jsonl(&events)
}

fn mapped_cassette(name: &str) -> (Vec<u8>, Vec<Message>) {
    let c = load(name);
    let stdout = c.stdout_bytes();
    let out = map_all(&stdout, end_of(&c), MapperOptions::default());
    (stdout, out)
}

fn without_session(messages: Vec<Message>) -> Vec<Message> {
    messages
        .into_iter()
        .filter(|m| !matches!(m, Message::SessionStarted { .. }))
        .collect()
}

/// Turn a delta-only (0.87.1) stream into what a snapshot-only producer would write:
/// every text/thinking delta becomes an update holding the whole message so far, with
/// no `delta`; other updates are dropped. With `replay`, each assistant message after
/// the first repeats the previous message's final text as its prefix.
fn to_snapshot_only(stdout: &[u8], replay: bool) -> Vec<u8> {
    let mut out = Vec::new();
    let mut blocks: Vec<Value> = Vec::new();
    let mut previous = String::new();
    let prefix = |blocks: &mut Vec<Value>, previous: &str| {
        if replay && !previous.is_empty() {
            let first_text = blocks.iter_mut().find(|b| b["type"] == "text");
            match first_text {
                Some(b) => {
                    b["text"] = Value::String(format!("{previous}{}", b["text"].as_str().unwrap()))
                }
                None => blocks.push(text(previous)),
            }
        }
    };
    for line in stdout.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let mut v: Value = serde_json::from_slice(line).unwrap();
        match v["type"].as_str().unwrap() {
            "message_start" if v["message"]["role"] == "assistant" => blocks.clear(),
            "message_update" => {
                let ame = &v["assistantMessageEvent"];
                let (kind, field) = match ame["type"].as_str().unwrap() {
                    "text_delta" => ("text", "text"),
                    "thinking_delta" => ("thinking", "thinking"),
                    _ => continue,
                };
                let i = ame["contentIndex"].as_u64().unwrap() as usize;
                while blocks.len() <= i {
                    blocks.push(json!({"type":"placeholder"}));
                }
                if blocks[i]["type"] != kind {
                    blocks[i] = json!({"type":kind, field:""});
                }
                let grown = format!(
                    "{}{}",
                    blocks[i][field].as_str().unwrap(),
                    ame["delta"].as_str().unwrap()
                );
                blocks[i][field] = Value::String(grown);
                let mut snap: Vec<Value> = blocks
                    .iter()
                    .filter(|b| b["type"] != "placeholder")
                    .cloned()
                    .collect();
                prefix(&mut snap, &previous);
                v = json!({"type":"message_update","message":{"role":"assistant","content":snap}});
            }
            "message_end" if v["message"]["role"] == "assistant" => {
                let content = v["message"]["content"].as_array_mut().unwrap();
                let final_text: String = content
                    .iter()
                    .filter(|b| b["type"] == "text")
                    .map(|b| b["text"].as_str().unwrap().to_string())
                    .collect();
                prefix(content, &previous);
                previous = final_text;
                if replay {
                    // the producer's own idea of the message text includes the replay
                    let all: String = content
                        .iter()
                        .filter(|b| b["type"] == "text")
                        .map(|b| b["text"].as_str().unwrap().to_string())
                        .collect();
                    previous = all;
                }
            }
            _ => {}
        }
        out.extend_from_slice(v.to_string().as_bytes());
        out.push(b'\n');
    }
    out
}

// ---------------------------------------------------------------------------
// 1. Dialects give the same stream for the same conversation.

#[test]
fn p1_pi73_and_pi87_give_the_same_stream() {
    let (_, a) = mapped_cassette("tool_bash.pi73.cassette.jsonl");
    let (_, b) = mapped_cassette("tool_bash.pi87.cassette.jsonl");
    assert!(matches!(a[0], Message::SessionStarted { .. }));
    assert_eq!(without_session(a), without_session(b));
}

#[test]
fn p1_snapshot_only_producers_give_the_same_stream() {
    let c = load("tool_bash.pi87.cassette.jsonl");
    let stdout = c.stdout_bytes();
    let deltas = map_all(&stdout, end_of(&c), MapperOptions::default());
    for replay in [false, true] {
        let snap = to_snapshot_only(&stdout, replay);
        assert!(!String::from_utf8_lossy(&snap).contains("\"delta\""));
        let got = map_all(&snap, end_of(&c), MapperOptions::default());
        assert_eq!(got, deltas, "replay={replay}");
        check_text_invariant(&snap, &got).unwrap();
    }
}

#[test]
fn p1_lying_snapshots_of_pi73_are_ignored_when_deltas_exist() {
    // The thinking_delta line already holds the finished thinking and the text_start
    // line the finished text, as pi 0.73.1 does; the deltas are what counts.
    let full = json!({"role":"assistant","content":[thinking("abc"),text("Hello world")]});
    let body = [
        json!({"type":"message_update","assistantMessageEvent":{"type":"thinking_start","contentIndex":0,"partial":full},"message":full}),
        json!({"type":"message_update","assistantMessageEvent":{"type":"thinking_delta","contentIndex":0,"delta":"a","partial":full},"message":full}),
        json!({"type":"message_update","assistantMessageEvent":{"type":"thinking_delta","contentIndex":0,"delta":"bc","partial":full},"message":full}),
        json!({"type":"message_update","assistantMessageEvent":{"type":"text_start","contentIndex":1,"partial":full},"message":full}),
        json!({"type":"message_update","assistantMessageEvent":{"type":"text_delta","contentIndex":1,"delta":"Hello","partial":full},"message":full}),
        json!({"type":"message_update","assistantMessageEvent":{"type":"text_delta","contentIndex":1,"delta":" world","partial":{"role":"assistant","content":[]}},"message":full}),
    ];
    let out = map(&simple_run(
        &body,
        assistant_end(1, json!([thinking("abc"), text("Hello world")]), "stop"),
    ));
    assert_eq!(texts(&out), ["Hello", " world"]);
    assert_eq!(
        kinds(&out),
        [
            "session.started",
            "assistant",
            "assistant",
            "assistant.thought",
            "usage",
            "terminal.completed"
        ]
    );
}

// ---------------------------------------------------------------------------
// 2. Snapshots become deltas by prefix comparison.

#[test]
fn p2_replayed_prefix_of_the_previous_turn_is_not_emitted_twice() {
    // anchors.md: turn 1 "Alpha", tool, turn 2 snapshot "AlphaBeta" -> ["Alpha", "Beta"].
    let events = [
        session("s"),
        assistant_start(1),
        snapshot(json!([text("Alpha")])),
        assistant_end(
            1,
            json!([text("Alpha"), tool_block("t1", json!({"command":"ls"}))]),
            "toolUse",
        ),
        tool_start("t1", json!({"command":"ls"})),
        tool_end("t1", "ok", false),
        assistant_start(2),
        snapshot(json!([text("Alpha")])),
        snapshot(json!([text("AlphaBeta")])),
        assistant_end(2, json!([text("AlphaBeta")]), "stop"),
        agent_end(None),
    ];
    let out = map(&jsonl(&events));
    assert_eq!(texts(&out), ["Alpha", "Beta"]);
    assert_eq!(stop_reason(&out), "stop");
}

#[test]
fn p2_snapshots_grow_into_deltas_and_keep_whitespace() {
    let body = [
        snapshot(json!([text("He")])),
        snapshot(json!([text("He")])),
        snapshot(json!([text("Hello")])),
        snapshot(json!([text("Hello ")])),
        snapshot(json!([text("Hello \n")])),
        snapshot(json!([text("Hello \nyou")])),
    ];
    let out = map(&simple_run(
        &body,
        assistant_end(1, json!([text("Hello \nyou")]), "stop"),
    ));
    assert_eq!(texts(&out), ["He", "llo", " ", "\n", "you"]);
}

#[test]
fn p2_lagging_and_diverging_snapshots_emit_nothing() {
    // Documented rule: a snapshot that is a prefix of what was emitted (lagging) or that
    // does not continue it (diverging) is ignored; message_end settles the message.
    let body = [
        snapshot(json!([text("Hello wor")])),
        snapshot(json!([text("Hello")])),       // lags
        snapshot(json!([text("Help me")])),     // diverges
        snapshot(json!([text("Hello world")])), // continues
    ];
    let out = map(&simple_run(
        &body,
        assistant_end(1, json!([text("Hello world!")]), "stop"),
    ));
    assert_eq!(texts(&out), ["Hello wor", "ld", "!"]);
    assert_eq!(stop_reason(&out), "stop");
}

#[test]
fn p2_a_new_turn_that_does_not_replay_is_emitted_whole() {
    let events = [
        assistant_start(1),
        snapshot(json!([text("Alpha")])),
        assistant_end(1, json!([text("Alpha")]), "toolUse"),
        assistant_start(2),
        snapshot(json!([text("Al")])), // could still be a replay: held back
        snapshot(json!([text("Also")])), // it was not
        assistant_end(2, json!([text("Also this")]), "stop"),
        agent_end(None),
    ];
    assert_eq!(texts(&map(&jsonl(&events))), ["Alpha", "Also", " this"]);
}

// ---------------------------------------------------------------------------
// 3. message_end is authoritative; text never twice; the invariant on every cassette.

#[test]
fn p3_message_end_supplies_missed_text_once() {
    let body = [text_delta(0, "Hel")];
    let out = map(&simple_run(
        &body,
        assistant_end(1, json!([text("Hello")]), "stop"),
    ));
    assert_eq!(texts(&out), ["Hel", "lo"]);
    // Nothing streamed at all: the whole text comes at message_end.
    let out = map(&simple_run(
        &[],
        assistant_end(1, json!([text("Hi")]), "stop"),
    ));
    assert_eq!(texts(&out), ["Hi"]);
    // Everything streamed: nothing more.
    let body = [text_delta(0, "Hi")];
    let out = map(&simple_run(
        &body,
        assistant_end(1, json!([text("Hi")]), "stop"),
    ));
    assert_eq!(texts(&out), ["Hi"]);
}

#[test]
fn p3_divergent_message_end_emits_nothing_and_is_reported() {
    let body = [text_delta(0, "Hello"), text_delta(0, "Hello")]; // a duplicated line
    let stdout = simple_run(&body, assistant_end(1, json!([text("Hello")]), "stop"));
    let out = map(&stdout);
    assert_eq!(texts(&out), ["Hello", "Hello"]);
    assert_eq!(stop_reason(&out), "stop");
    // The divergence is kept for diagnostics: it shows when the run fails.
    let mut m = Mapper::new(MapperOptions::default());
    let mut out = Vec::new();
    m.push(stdout.as_bytes(), &mut out);
    assert_eq!(m.stats().text_divergences, 1);
    m.finish(
        StreamEnd {
            exit: None,
            stderr_tail: None,
            cause: EndCause::Failed {
                reason: FailureReason::Timeout,
                message: "timed out".into(),
            },
        },
        &mut out,
    );
    let f = failure(&out);
    assert_eq!(f.invalid_lines.len(), 1);
    assert_eq!(f.invalid_lines[0].line, 6);
    assert!(
        f.invalid_lines[0]
            .problem
            .contains("does not continue the streamed text"),
        "{f:?}"
    );
}

/// A message streams more than a line could hold: every delta is emitted as it comes, but
/// the mapper keeps only a line's worth of the text and thinking (it grew with the stream
/// before: 219 MB for 128 MB of deltas); `message_end` is then not compared, and a note says
/// so, as it does for the thinking it drops.
#[test]
fn p3_a_message_longer_than_the_line_cap_is_streamed_not_kept() {
    let opts = MapperOptions {
        max_line_bytes: 400,
        ..MapperOptions::default()
    };
    let deltas: Vec<String> = (0..20)
        .map(|i| format!("{i:02}{}", "x".repeat(48)))
        .collect();
    let mut body: Vec<Value> = deltas.iter().map(|d| text_delta(1, d)).collect();
    body.extend((0..20).map(|_| thinking_delta(0, &"t".repeat(50))));
    // Its message_end has no content: the thinking streamed is what is queued, cut.
    let end = json!({"type":"message_end","message":{"role":"assistant","stopReason":"stop",
        "timestamp":1,"usage":usage_json(10,5)}});
    let stdout = simple_run(&body, end);
    let mut m = Mapper::new(opts.clone());
    let mut out = Vec::new();
    m.push(stdout.as_bytes(), &mut out);
    assert_eq!(
        texts(&out),
        deltas.iter().map(String::as_str).collect::<Vec<_>>()
    );
    let thought: Vec<&str> = out
        .iter()
        .filter_map(|m| match m {
            Message::AssistantThought { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    // The text kept took all 400 bytes: no thinking fits beside it.
    assert!(thought.is_empty(), "{thought:?}");
    assert_eq!(m.stats().text_divergences, 0);
    m.finish(
        StreamEnd {
            exit: None,
            stderr_tail: None,
            cause: EndCause::Failed {
                reason: FailureReason::Timeout,
                message: "timed out".into(),
            },
        },
        &mut out,
    );
    let problems: Vec<String> = failure(&out)
        .invalid_lines
        .iter()
        .map(|l| l.problem.clone())
        .collect();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].starts_with(
            "1000 bytes of thinking dropped: past the 400 bytes the mapper keeps of a message"
        ),
        "{problems:?}"
    );

    // With a final text: not compared (it could not continue 1000 bytes), nothing repeated.
    let stdout = simple_run(
        &body[..20],
        assistant_end(1, json!([text(&deltas.concat()[..100])]), "stop"),
    );
    let mut m = Mapper::new(opts);
    let mut out = Vec::new();
    m.push(stdout.as_bytes(), &mut out);
    assert_eq!(texts(&out).len(), 20);
    m.finish(
        StreamEnd {
            exit: None,
            stderr_tail: None,
            cause: EndCause::Failed {
                reason: FailureReason::Timeout,
                message: "timed out".into(),
            },
        },
        &mut out,
    );
    let f = failure(&out);
    assert!(
        f.invalid_lines[0].problem.starts_with(
            "`message_end` not compared with the streamed text: 1000 bytes streamed, past the 400 bytes"
        ),
        "{f:?}"
    );
}

#[test]
fn p3_invariant_holds_on_every_cassette() {
    let all = all_cassettes();
    assert!(all.len() >= 7, "cassettes missing: {all:?}");
    for path in all {
        let c = pi_cassette::Cassette::load(&path).unwrap();
        map_and_check(&c).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
}

// ---------------------------------------------------------------------------
// 4. Thinking is buffered and drained in order, after the answer.

#[test]
fn p4_thoughts_wait_for_a_non_tool_use_end() {
    let events = [
        assistant_start(1),
        thinking_delta(0, "first "),
        thinking_delta(0, "thought"),
        text_delta(1, "Calling."),
        assistant_end(
            1,
            json!([
                thinking("first thought"),
                text("Calling."),
                tool_block("t", json!({}))
            ]),
            "toolUse",
        ),
        tool_start("t", json!({})),
        tool_end("t", "done", false),
        assistant_start(2),
        thinking_delta(0, "second"),
        text_delta(1, "Done."),
        assistant_end(2, json!([thinking("second"), text("Done.")]), "stop"),
        agent_end(Some(false)),
    ];
    let out = map(&jsonl(&events));
    let ks = kinds(&out);
    assert_eq!(
        ks,
        [
            "assistant",
            "tool.call",
            "usage",
            "tool.completed",
            "assistant",
            "assistant.thought",
            "assistant.thought",
            "usage",
            "terminal.completed"
        ]
    );
    let thoughts: Vec<_> = out
        .iter()
        .filter_map(|m| match m {
            Message::AssistantThought { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(thoughts, ["first thought", "second"]);
}

#[test]
fn p4_message_end_is_authoritative_for_thoughts_and_terminal_drains_the_rest() {
    // A duplicated thinking delta does not duplicate the thought.
    let body = [
        thinking_delta(0, "ab"),
        thinking_delta(0, "ab"),
        text_delta(1, "x"),
    ];
    let out = map(&simple_run(
        &body,
        assistant_end(1, json!([thinking("ab"), text("x")]), "stop"),
    ));
    assert!(out.contains(&Message::AssistantThought { text: "ab".into() }));
    assert_eq!(
        out.iter()
            .filter(|m| m.kind() == "assistant.thought")
            .count(),
        1
    );
    // Cancelled mid-message: buffered thinking is drained before terminal.cancelled.
    let stdout = jsonl(&[
        assistant_start(1),
        thinking_delta(0, "hm"),
        thinking_delta(0, "m"),
    ]);
    let end = StreamEnd {
        exit: None,
        stderr_tail: None,
        cause: EndCause::Cancelled,
    };
    let out = map_all(stdout.as_bytes(), end, MapperOptions::default());
    assert_eq!(
        out,
        [
            Message::AssistantThought { text: "hmm".into() },
            Message::TerminalCancelled { exit: None }
        ]
    );
}

// ---------------------------------------------------------------------------
// 5. Tools.

#[test]
fn p5_tools_once_per_id_updates_without_repeats_one_end() {
    let call = tool_block("t1", json!({"command":"ls -l"}));
    let events = [
        assistant_start(1),
        json!({"type":"message_update","assistantMessageEvent":{"type":"toolcall_start","contentIndex":0,"id":"t1","toolName":"bash"}}),
        json!({"type":"message_update","assistantMessageEvent":{"type":"toolcall_end","contentIndex":0,"toolCall":call}}),
        assistant_end(
            1,
            json!([call, tool_block("t2", json!({"command":"false"}))]),
            "toolUse",
        ),
        tool_start("t1", json!({"command":"ls -l"})),
        tool_start("t1", json!({"command":"ls -l"})),
        tool_update("t1", "a"),
        tool_update("t1", "a"),
        tool_update("t1", "ab"),
        tool_end("t1", "ab", false),
        tool_end("t1", "ab", false),
        tool_update("t1", "late"),
        tool_start("t2", json!({"command":"false"})),
        tool_end("t2", "exit 1", true),
        assistant_start(2),
        assistant_end(2, json!([text("ok")]), "stop"),
        agent_end(Some(false)),
    ];
    let out = map(&jsonl(&events));
    check_structure(&out).unwrap();
    let tools: Vec<&Message> = out
        .iter()
        .filter(|m| m.kind().starts_with("tool."))
        .collect();
    let result = |t: &str| json!({"content":[{"type":"text","text":t}]});
    assert_eq!(
        tools,
        [
            &Message::ToolCall {
                id: "t1".into(),
                name: "bash".into(),
                arguments: json!({"command":"ls -l"}).into()
            },
            &Message::ToolCall {
                id: "t2".into(),
                name: "bash".into(),
                arguments: json!({"command":"false"}).into()
            },
            &Message::ToolUpdate {
                id: "t1".into(),
                partial: result("a").into()
            },
            &Message::ToolUpdate {
                id: "t1".into(),
                partial: result("ab").into()
            },
            &Message::ToolCompleted {
                id: "t1".into(),
                result: result("ab").into()
            },
            &Message::ToolFailed {
                id: "t2".into(),
                error: result("exit 1").into()
            },
        ]
    );
}

/// pi (JavaScript) writes a broken string's lone surrogate as an escape (`"\ud800"`): valid
/// JSON that no Rust string can hold. Tool arguments and results holding one used to become
/// `null` (the whole payload lost, silently); they keep everything, the surrogate as U+FFFD.
#[test]
fn a_lone_surrogate_in_a_tool_payload_loses_nothing_else() {
    let stdout = [
        r#"{"type":"session","version":3,"id":"s","timestamp":"T","cwd":"/w"}"#,
        r#"{"type":"tool_execution_start","toolCallId":"t1","toolName":"bash","args":{"command":"printf '\ud800'"}}"#,
        r#"{"type":"tool_execution_update","toolCallId":"t1","toolName":"bash","args":{},"partialResult":{"content":[{"type":"text","text":"a\udc00"}]}}"#,
        r#"{"type":"tool_execution_end","toolCallId":"t1","toolName":"bash","result":{"content":[{"type":"text","text":"a\udc00b \ud83d\ude00"}]},"isError":false}"#,
        r#"{"type":"agent_end","messages":[]}"#,
    ]
    .join("\n");
    let out = map(&stdout);
    let tools: Vec<Value> = out
        .iter()
        .filter_map(|m| match m {
            Message::ToolCall { arguments: j, .. }
            | Message::ToolUpdate { partial: j, .. }
            | Message::ToolCompleted { result: j, .. } => Some(j.to_value()),
            _ => None,
        })
        .collect();
    assert_eq!(
        tools,
        [
            json!({"command": "printf '\u{fffd}'"}),
            json!({"content": [{"type": "text", "text": "a\u{fffd}"}]}),
            json!({"content": [{"type": "text", "text": "a\u{fffd}b \u{1f600}"}]}),
        ]
    );
    // Written out, the stream holds the same.
    let written = serde_json::to_string(&out).unwrap();
    assert!(written.contains(r#""text":"a�b 😀""#), "{written}");
}

// ---------------------------------------------------------------------------
// 6. Terminal truth.

#[test]
fn p6_agent_end_followed_by_a_retry_is_not_the_end() {
    let (_, out) = mapped_cassette("retry_then_success.pi73.cassette.jsonl");
    assert!(out.contains(&Message::RetryScheduled {
        source: RetrySource::Pi,
        attempt: 1,
        max_attempts: 3,
        delay_ms: 2000,
        error: "500 upstream boom".into()
    }));
    assert_eq!(stop_reason(&out), "stop");
    assert_eq!(texts(&out), ["recovered"]);

    // Stream cut after agent_end + auto_retry_start: no end event.
    let events = [
        assistant_start(1),
        assistant_error_end(1, "error", "500 boom"),
        agent_end(None),
        json!({"type":"auto_retry_start","attempt":1,"maxAttempts":3,"delayMs":2000,"errorMessage":"500 boom"}),
    ];
    let out = map(&jsonl(&events));
    assert_eq!(failure(&out).reason, FailureReason::MissingTerminalEvent);
    // 0.87.1: willRetry:true is not the end either, even before auto_retry_start.
    let events = [
        assistant_start(1),
        assistant_error_end(1, "error", "500"),
        agent_end(Some(true)),
    ];
    assert_eq!(
        failure(&map(&jsonl(&events))).reason,
        FailureReason::MissingTerminalEvent
    );
    // agent_settled is the end.
    let events = [
        assistant_start(1),
        assistant_end(1, json!([text("a")]), "stop"),
        json!({"type":"agent_settled"}),
    ];
    assert_eq!(stop_reason(&map(&jsonl(&events))), "stop");
}

#[test]
fn p6_error_and_aborted_fail_although_pi_exits_0() {
    let (_, out) = mapped_cassette("auth_401.pi73.cassette.jsonl");
    let f = failure(&out);
    assert_eq!(f.reason, FailureReason::ModelError);
    assert_eq!(f.message, "401 invalid api key");
    assert_eq!(
        f.exit,
        Some(ExitInfo {
            code: Some(0),
            signal: None
        })
    );
    let events = [
        assistant_start(1),
        text_delta(0, "par"),
        assistant_error_end(1, "aborted", "Request was aborted"),
        agent_end(Some(false)),
    ];
    let f = failure(&map(&jsonl(&events))).clone();
    assert_eq!(
        (f.reason, f.message.as_str()),
        (FailureReason::Aborted, "Request was aborted")
    );
}

#[test]
fn p6_missing_end_event_by_exit_code_signal_or_none_unless_cancelled() {
    let stdout = jsonl(&[session("s"), assistant_start(1), text_delta(0, "a")]);
    let end = |code: Option<i32>, signal: Option<&str>, stderr: Option<&str>| StreamEnd {
        exit: Some(ExitInfo {
            code,
            signal: signal.map(str::to_string),
        }),
        stderr_tail: stderr.map(str::to_string),
        cause: EndCause::Eof,
    };
    let run = |e| map_all(stdout.as_bytes(), e, MapperOptions::default());
    let out = run(end(Some(1), None, Some("Error: Unknown option: --x\n")));
    let f = failure(&out);
    assert_eq!(f.reason, FailureReason::ProcessExit);
    assert_eq!(
        f.message,
        "pi exited with code 1: Error: Unknown option: --x"
    );
    assert_eq!(
        f.stderr_tail.as_deref(),
        Some("Error: Unknown option: --x\n")
    );
    assert_eq!(
        failure(&run(end(None, Some("SIGINT"), None))).reason,
        FailureReason::ProcessSignal
    );
    assert_eq!(
        failure(&run(end(Some(0), None, None))).reason,
        FailureReason::MissingTerminalEvent
    );
    assert_eq!(
        failure(&run(StreamEnd::eof(None))).reason,
        FailureReason::MissingTerminalEvent
    );
    let out = run(StreamEnd {
        exit: Some(ExitInfo {
            code: Some(143),
            signal: None,
        }),
        stderr_tail: None,
        cause: EndCause::Cancelled,
    });
    assert_eq!(
        out.last(),
        Some(&Message::TerminalCancelled {
            exit: Some(ExitInfo {
                code: Some(143),
                signal: None
            })
        })
    );
    // Provider-side failures keep their reason.
    let out = run(StreamEnd {
        exit: None,
        stderr_tail: None,
        cause: EndCause::Failed {
            reason: FailureReason::SpawnFailed,
            message: "no such file: pi".into(),
        },
    });
    assert_eq!(
        (failure(&out).reason, failure(&out).message.as_str()),
        (FailureReason::SpawnFailed, "no such file: pi")
    );
}

#[test]
fn p6_usage_is_per_message_and_summed_at_the_end() {
    let events = [
        assistant_start(1),
        assistant_end(1, json!([text("a"), tool_block("t", json!({}))]), "toolUse"),
        assistant_start(2),
        assistant_end(2, json!([text("b")]), "length"),
        agent_end(Some(false)),
    ];
    let out = map(&jsonl(&events));
    let one = Usage {
        input_tokens: 10,
        output_tokens: 5,
        cache_read_tokens: 1,
        cache_write_tokens: 2,
        total_tokens: 18,
        cost_usd: 0.25,
    };
    assert_eq!(
        out.iter()
            .filter(|m| **m == Message::Usage(one.clone()))
            .count(),
        2
    );
    let mut two = one.clone();
    two.add(&one);
    assert_eq!(
        out.last(),
        Some(&Message::TerminalCompleted {
            stop_reason: "length".into(),
            usage: two
        })
    );
}

#[test]
fn p6_is_settled_follows_the_end_events() {
    let mut m = Mapper::new(MapperOptions::default());
    let mut out = Vec::new();
    let mut feed = |m: &mut Mapper, v: Value| m.push(format!("{v}\n").as_bytes(), &mut out);
    feed(&mut m, assistant_start(1));
    feed(&mut m, assistant_error_end(1, "error", "529 overloaded"));
    feed(&mut m, agent_end(None)); // 0.73.1 after an error: a retry may follow
    assert!(!m.is_settled());
    feed(
        &mut m,
        json!({"type":"auto_retry_start","attempt":1,"maxAttempts":3,"delayMs":1,"errorMessage":"x"}),
    );
    feed(&mut m, json!({"type":"agent_start"}));
    feed(&mut m, assistant_start(2));
    feed(&mut m, assistant_end(2, json!([text("ok")]), "stop"));
    feed(&mut m, agent_end(Some(true)));
    assert!(!m.is_settled());
    feed(&mut m, agent_end(Some(false)));
    assert!(m.is_settled());
    feed(&mut m, json!({"type":"agent_start"}));
    assert!(!m.is_settled());
    feed(&mut m, json!({"type":"agent_settled"}));
    assert!(m.is_settled());
    let mut m2 = Mapper::new(MapperOptions::default());
    feed(&mut m2, assistant_start(1));
    feed(&mut m2, assistant_end(1, json!([text("ok")]), "stop"));
    feed(&mut m2, agent_end(None)); // 0.73.1 after a success: nothing can follow
    assert!(m2.is_settled());
}

#[test]
fn p6_session_resumed_when_asked() {
    let opts = MapperOptions {
        resumed_session: true,
        ..MapperOptions::default()
    };
    let out = map_all(
        jsonl(&[session("abc"), session("abc")]).as_bytes(),
        exit0(),
        opts,
    );
    assert_eq!(
        out[0],
        Message::SessionResumed {
            session_id: "abc".into()
        }
    );
    assert_eq!(out.len(), 2);
}

// ---------------------------------------------------------------------------
// 7. Bad lines never break the stream.

#[test]
fn p7_bad_lines_are_collected_with_line_numbers() {
    let stdout = [
        r#"{"type":"session","id":"s"}"#,
        "not json at all",
        "[1,2,3]",
        r#"{"no":"type"}"#,
        r#"{"type":7}"#,
        r#"{"type":"brand_new_event","x":1}"#,
        "",
        r#"{"type":"message_start","message":{"role":"assistant","timestamp":1}}"#,
        r#"{"type":"message_update","assistantMessageEvent":{"type":"text_delta","delta":"hi"}}"#,
        r#"{"type":"message_update","assistantMessageEvent":{"type":"text_del"#,
    ]
    .join("\n");
    let out = map(&stdout);
    assert_eq!(texts(&out), ["hi"]);
    let f = failure(&out);
    assert_eq!(f.reason, FailureReason::MissingTerminalEvent);
    let got: Vec<(u64, &str)> = f
        .invalid_lines
        .iter()
        .map(|l| (l.line, l.problem.as_str()))
        .collect();
    assert_eq!(got.len(), 7, "{got:?}");
    assert_eq!(got[0].0, 2);
    assert!(got[0].1.starts_with("not JSON"), "{got:?}");
    assert_eq!(got[1], (3, "not a JSON object"));
    assert_eq!(got[2], (4, "no \"type\""));
    assert_eq!(got[3], (5, "\"type\" is not a string"));
    assert_eq!(
        got[4],
        (6, "unknown event type \"brand_new_event\" (ignored)")
    );
    assert_eq!(got[5], (7, "empty line"));
    assert_eq!(got[6].0, 10);
    assert!(got[6].1.starts_with("not JSON: EOF"), "{got:?}");
    assert_eq!(f.invalid_lines[1].excerpt, "[1,2,3]");
    assert_eq!(f.invalid_lines[1].bytes, 7);
}

#[test]
fn p7_unknown_events_do_not_fail_a_run_and_bad_lines_are_bounded() {
    let mut events = vec![json!({"type":"brand_new_event"}).to_string()];
    events.push(jsonl(&[
        assistant_start(1),
        assistant_end(1, json!([text("a")]), "stop"),
        agent_end(Some(false)),
    ]));
    let out = map(&events.join("\n"));
    assert_eq!(stop_reason(&out), "stop");

    let noise: String = (0..100)
        .map(|i| format!("garbage {i} {}\n", "z".repeat(1000)))
        .collect();
    let opts = MapperOptions {
        max_invalid_lines: 5,
        max_invalid_bytes: 300,
        ..MapperOptions::default()
    };
    let mut m = Mapper::new(opts);
    let mut out = Vec::new();
    m.push(noise.as_bytes(), &mut out);
    assert_eq!(m.stats().invalid_lines, 100);
    m.finish(exit0(), &mut out);
    let f = failure(&out);
    assert_eq!(f.invalid_lines.len(), 5);
    assert_eq!(f.invalid_lines_dropped, 95);
    let total: usize = f.invalid_lines.iter().map(|l| l.excerpt.len()).sum();
    assert!(total <= 300, "{total}");
    assert_eq!(f.invalid_lines[0].excerpt.len(), 200);
    assert_eq!(f.invalid_lines[0].bytes, 1010);
    assert_eq!(f.invalid_lines[4].line, 5);
}

#[test]
fn p7_known_events_missing_what_they_need_are_reported() {
    let stdout = jsonl(&[
        json!({"type":"tool_execution_end","result":{}}),
        json!({"type":"message_end"}),
        json!({"type":"session","id":5}),
    ]);
    let f = failure(&map(&stdout)).clone();
    let problems: Vec<&str> = f.invalid_lines.iter().map(|l| l.problem.as_str()).collect();
    assert_eq!(
        problems,
        [
            "`tool_execution_end` without a string `toolCallId`",
            "message event without `message`",
            "`session` without a string `id`"
        ]
    );
}

// ---------------------------------------------------------------------------
// 8. Framing.

#[test]
fn p8_crlf_no_final_newline_split_utf8_and_u2028() {
    let body = [
        text_delta(0, "héllo\u{2028}wörld 😀"),
        text_delta(0, "\r\n"),
    ];
    let lf = simple_run(
        &body,
        assistant_end(1, json!([text("héllo\u{2028}wörld 😀\r\n")]), "stop"),
    );
    let expected = map(&lf);
    assert_eq!(texts(&expected), ["héllo\u{2028}wörld 😀", "\r\n"]);
    let crlf = lf.replace('\n', "\r\n");
    assert_eq!(map(&crlf), expected);
    let unterminated = lf.strip_suffix('\n').unwrap();
    assert_eq!(map(unterminated), expected);
    // Byte-at-a-time chunking splits every multi-byte character.
    let cuts: Vec<usize> = (0..crlf.len()).collect();
    assert_eq!(
        map_chunked(crlf.as_bytes(), &cuts, exit0(), MapperOptions::default()),
        expected
    );
}

#[test]
fn p8_lines_over_the_cap_are_skipped_and_reported_with_their_size() {
    let huge = text_delta(0, &"x".repeat(5000)).to_string();
    let stdout = format!(
        "{}{huge}\n{}",
        jsonl(&[assistant_start(1)]),
        jsonl(&[text_delta(0, "ok")])
    );
    let opts = MapperOptions {
        max_line_bytes: 1000,
        ..MapperOptions::default()
    };
    let out = map_all(stdout.as_bytes(), exit0(), opts);
    assert_eq!(texts(&out), ["ok"]);
    let f = failure(&out);
    assert_eq!(f.invalid_lines.len(), 1);
    let bad = &f.invalid_lines[0];
    assert_eq!((bad.line, bad.bytes), (2, huge.len() as u64));
    assert_eq!(bad.problem, "over the line cap of 1000 bytes");
    // The excerpt is the line's head, kept without buffering the rest.
    assert_eq!(bad.excerpt, huge[..pi_wire::framing::OVERSIZED_HEAD_BYTES]);
}

#[test]
fn stats_count_lines_bytes_and_bad_lines() {
    let stdout = "{\"type\":\"agent_start\"}\nnope\n{\"type\":\"x\"}";
    let mut m = Mapper::new(MapperOptions::default());
    let mut out = Vec::new();
    m.push(stdout.as_bytes(), &mut out);
    m.finish(exit0(), &mut out);
    let s = m.stats();
    assert_eq!(
        (s.lines, s.bytes, s.invalid_lines, s.unknown_events),
        (3, stdout.len() as u64, 1, 1)
    );
}

#[test]
fn repeated_lines_other_than_deltas_change_nothing() {
    // Every line except the delta-carrying updates written twice: session, message
    // start/end (same timestamp), tool events, turn/agent events are all deduplicated.
    for name in [
        "tool_bash.pi73.cassette.jsonl",
        "tool_bash.pi87.cassette.jsonl",
        "retry_then_success.pi73.cassette.jsonl",
    ] {
        let c = load(name);
        let stdout = c.stdout_bytes();
        let expected = map_all(&stdout, end_of(&c), MapperOptions::default());
        let mut doubled = Vec::new();
        for line in stdout.split_inclusive(|&b| b == b'\n') {
            doubled.extend_from_slice(line);
            if !line.starts_with(br#"{"type":"message_update""#) {
                doubled.extend_from_slice(line);
            }
        }
        assert!(doubled.len() > stdout.len());
        let got = map_all(&doubled, end_of(&c), MapperOptions::default());
        assert_eq!(got, expected, "{name}");
    }
}

#[test]
fn defaults_and_send() {
    let o = MapperOptions::default();
    assert_eq!(
        (
            o.max_line_bytes,
            o.max_invalid_lines,
            o.max_invalid_bytes,
            o.resumed_session
        ),
        (16 << 20, 32, 16 << 10, false)
    );
    // The async provider moves the mapper across tasks.
    fn send<T: Send + 'static>() {}
    send::<Mapper>();
    // Nothing after finish.
    let mut m = Mapper::new(o);
    let mut out = Vec::new();
    m.finish(exit0(), &mut out);
    m.push(jsonl(&[session("late")]).as_bytes(), &mut out);
    assert_eq!(out.len(), 1);
}

#[test]
fn p7_invalid_utf8_inside_strings_is_decoded_lossily_and_reported() {
    let mut stdout = jsonl(&[assistant_start(1)]).into_bytes();
    stdout.extend_from_slice(
        b"{\"type\":\"message_update\",\"assistantMessageEvent\":{\"type\":\"text_delta\",\"contentIndex\":0,\"delta\":\"I\xe2\x80ll\"}}\n",
    );
    let out = map_all(&stdout, exit0(), MapperOptions::default());
    assert_eq!(texts(&out), ["I\u{fffd}ll"]);
    let f = failure(&out);
    assert_eq!(f.invalid_lines.len(), 1);
    assert_eq!(f.invalid_lines[0].line, 2);
    assert_eq!(
        f.invalid_lines[0].problem,
        "invalid UTF-8, decoded lossily (U+FFFD); the event was used"
    );
}

#[test]
fn p1_recorded_pairs_of_both_versions_give_the_same_stream() {
    // Same scripted conversation recorded with real 0.73.1, 0.87.1 and 1.5.2. (Scenarios
    // whose pi error texts differ between versions are left out; `tool.update`s depend on
    // how the tool's output was chunked in time, so they are left out of the comparison.)
    for name in [
        "anthropic_tool_bash",
        "long_answer",
        "markdown_whitespace",
        "read_missing",
        "text_only",
        "thinking_text",
        "tool_loop",
        "unicode_split",
    ] {
        let find = |v: &str| {
            all_cassettes()
                .into_iter()
                .find(|p| {
                    let f = p.file_name().unwrap().to_string_lossy();
                    p.parent().unwrap().ends_with("recorded")
                        && f.starts_with(&format!("{name}.{v}.cassette.jsonl"))
                })
                .unwrap_or_else(|| panic!("recorded/{name}.{v} missing"))
        };
        let map = |p: std::path::PathBuf| {
            let c = pi_cassette::Cassette::load(&p).unwrap();
            let mut msgs = map_all(&c.stdout_bytes(), end_of(&c), MapperOptions::default());
            msgs.retain(|m| !matches!(m, Message::ToolUpdate { .. }));
            msgs
        };
        let a = map(find("pi73"));
        assert!(a.len() > 3, "{name}");
        assert_eq!(a, map(find("pi87")), "{name}: pi73 vs pi87");
        // pi 1.x adds `structuredContent` to tool results; everything else is the same.
        let mut c = map(find("pi152"));
        for m in &mut c {
            if let Message::ToolCompleted { result, .. }
            | Message::ToolFailed { error: result, .. } = m
            {
                let mut v = result.to_value();
                if let Some(o) = v.as_object_mut() {
                    o.remove("structuredContent");
                }
                *result = v.into();
            }
        }
        assert_eq!(a, c, "{name}: pi73 vs pi152");
    }
}

// ---------------------------------------------------------------------------
// 9. pi 1.x: nested tool calls, structuredContent, agent_settled.aborted, the first
// chunk in message_start, stopReason "deferred"; and real 1.5.2 captures.

/// A tool event of pi 1.5.2, `tool_execution_{kind}`: an id `p/n` is a nested call made
/// by `p` (pi's ids for them), so it carries `parentToolCallId: "p"`.
fn tool_ev(kind: &str, id: &str, extra: Value) -> Value {
    let name = match id {
        "cm" => "codemode",
        i if i.ends_with("/2") => "read",
        _ => "bash",
    };
    let mut e = json!({"type":format!("tool_execution_{kind}"),"toolCallId":id,"toolName":name,
        "args":{"x":id}});
    if let Some((parent, _)) = id.split_once('/') {
        e["parentToolCallId"] = json!(parent);
    }
    for (k, v) in extra.as_object().unwrap() {
        e[k] = v.clone();
    }
    e
}

fn tool_result_message(kind: &str, id: &str, nested: Option<Value>) -> Value {
    let mut m = json!({"role":"toolResult","toolCallId":id,"toolName":"codemode",
        "content":[{"type":"text","text":"Script completed"}],"isError":false,"durationMs":5,
        "timestamp":7});
    if let Some(n) = nested {
        m["nestedCalls"] = n;
    }
    json!({"type":kind,"message":m})
}

/// A codemode call `cm` that runs `cm/1` (bash, ok) and `cm/2` (read, fails) in parallel
/// beside a plain top-level bash call `b`, ending in `parent_error`.
fn codemode_run(parent_error: bool, with_result_messages: bool) -> Vec<Value> {
    let nested = json!({"calls":[
        {"id":"cm/1","name":"bash","status":"ok","arguments":{"command":"echo hi"},"durationMs":3},
        {"id":"cm/2","name":"read","status":"error","arguments":{"path":"nope"},"error":"ENOENT"}],
        "complete":true});
    let cm_result = json!({"content":[{"type":"text","text":"Script completed"}],
        "details":{"calls":[{"id":"cm/1","status":"ok"},{"id":"cm/2","status":"error"}]}});
    let mut events = vec![
        session("s1"),
        json!({"type":"agent_start"}),
        assistant_start(1),
        assistant_end(
            1,
            json!([
                {"type":"toolCall","id":"cm","name":"codemode","arguments":{"code":"..."}},
                tool_block("b", json!({"command":"true"}))
            ]),
            "toolUse",
        ),
        tool_ev("start", "cm", json!({})),
        tool_ev("start", "b", json!({})),
        tool_ev(
            "update",
            "cm",
            json!({"partialResult":{"content":[],"details":{"calls":[]}}}),
        ),
        tool_ev("start", "cm/1", json!({})),
        tool_ev("start", "cm/2", json!({})),
        tool_ev(
            "update",
            "cm/1",
            json!({"partialResult":{"content":[{"type":"text","text":"hi\n"}]}}),
        ),
        tool_ev(
            "end",
            "cm/1",
            json!({"result":{"content":[{"type":"text","text":"hi\n"}],
                "structuredContent":{"output":"hi\n","exit_code":0}},"isError":false,"durationMs":3}),
        ),
        tool_ev(
            "end",
            "cm/2",
            json!({"result":{"content":[{"type":"text","text":"ENOENT"}],"details":{}},"isError":true}),
        ),
        tool_ev(
            "update",
            "cm",
            json!({"partialResult":{"content":[],"details":{"calls":[{"id":"cm/1","status":"ok"}]}}}),
        ),
        tool_ev(
            "end",
            "cm",
            json!({"result":cm_result,"isError":parent_error,"durationMs":9}),
        ),
        tool_ev(
            "end",
            "b",
            json!({"result":{"content":[{"type":"text","text":""}],
                "structuredContent":{"output":"","exit_code":0}},"isError":false,"durationMs":1}),
        ),
    ];
    if with_result_messages {
        events.extend([
            tool_result_message("message_start", "cm", Some(nested.clone())),
            tool_result_message("message_end", "cm", Some(nested)),
            tool_result_message("message_start", "b", None),
            tool_result_message("message_end", "b", None),
            assistant_start(2),
            text_delta(0, "done"),
            assistant_end(2, json!([text("done")]), "stop"),
            agent_end(Some(false)),
            json!({"type":"agent_settled","aborted":false}),
        ]);
    }
    events
}

/// The parent's toolResult message may start before its end: the `message_end` that then
/// repeats the remembered `message_start` body still releases the held end, with
/// `nestedCalls` (the body memo must not take it for an inert repeat).
#[test]
fn pi1_a_tool_result_message_started_before_the_end_still_releases_it() {
    let mut events = codemode_run(false, true);
    let at = |events: &[Value], pred: &dyn Fn(&Value) -> bool| {
        events.iter().position(pred).expect("event present")
    };
    let start = at(&events, &|e| {
        e["type"] == "message_start" && e["message"]["toolCallId"] == "cm"
    });
    let moved = events.remove(start);
    let end = at(&events, &|e| {
        e["type"] == "tool_execution_end" && e["toolCallId"] == "cm"
    });
    events.insert(end, moved);
    // `type` first, as pi writes it (serde_json sorts keys; a `message` before the `type`
    // would take the mapper's serde path, not the one-pass path with its memo).
    let pi_order = |events: &[Value]| -> String {
        events
            .iter()
            .map(|e| {
                let mut rest = e.as_object().unwrap().clone();
                let kind = rest.remove("type").unwrap();
                let rest = serde_json::to_string(&rest).unwrap();
                format!("{{\"type\":{kind},{}\n", &rest[1..])
            })
            .collect()
    };
    let reordered = map(&pi_order(&events));
    let in_order = map(&pi_order(&codemode_run(false, true)));
    let completed = |out: &[Message]| {
        out.iter()
            .find_map(|m| match m {
                Message::ToolCompleted { id, result } if id == "cm" => Some(result.to_value()),
                _ => None,
            })
            .expect("cm completed")
    };
    assert!(
        completed(&reordered).get("nestedCalls").is_some(),
        "{reordered:?}"
    );
    assert_eq!(completed(&reordered), completed(&in_order));
}

fn tool_messages(out: &[Message]) -> Vec<Message> {
    out.iter()
        .filter(|m| m.kind().starts_with("tool."))
        .cloned()
        .collect()
}

#[test]
fn pi1_nested_calls_surface_only_through_their_parent() {
    let out = map(&jsonl(&codemode_run(false, true)));
    check_structure(&out).unwrap();
    let mut cm_result = json!({"content":[{"type":"text","text":"Script completed"}],
        "details":{"calls":[{"id":"cm/1","status":"ok"},{"id":"cm/2","status":"error"}]}});
    cm_result["nestedCalls"] = json!({"calls":[
        {"id":"cm/1","name":"bash","status":"ok","arguments":{"command":"echo hi"},"durationMs":3},
        {"id":"cm/2","name":"read","status":"error","arguments":{"path":"nope"},"error":"ENOENT"}],
        "complete":true});
    assert_eq!(
        tool_messages(&out),
        [
            Message::ToolCall {
                id: "cm".into(),
                name: "codemode".into(),
                arguments: json!({"code":"..."}).into()
            },
            Message::ToolCall {
                id: "b".into(),
                name: "bash".into(),
                arguments: json!({"command":"true"}).into()
            },
            Message::ToolUpdate {
                id: "cm".into(),
                partial: json!({"content":[],"details":{"calls":[]}}).into()
            },
            Message::ToolUpdate {
                id: "cm".into(),
                partial: json!({"content":[],"details":{"calls":[{"id":"cm/1","status":"ok"}]}})
                    .into()
            },
            // The plain tool ends when pi says so; the parent's end waits for its
            // toolResult message, which carries nestedCalls.
            Message::ToolCompleted {
                id: "b".into(),
                result: json!({"content":[{"type":"text","text":""}],
                    "structuredContent":{"output":"","exit_code":0}})
                .into()
            },
            Message::ToolCompleted {
                id: "cm".into(),
                result: cm_result.clone().into()
            },
        ]
    );
    assert_eq!(texts(&out), ["done"]);
    assert_eq!(stop_reason(&out), "stop");
    // A parent that fails: the same, as tool.failed.
    let out = map(&jsonl(&codemode_run(true, true)));
    check_structure(&out).unwrap();
    assert!(out.contains(&Message::ToolFailed {
        id: "cm".into(),
        error: cm_result.into()
    }));
    // Nothing of the nested calls is reported as a bad line either.
    assert!(matches!(
        out.last(),
        Some(Message::TerminalCompleted { .. })
    ));
}

#[test]
fn pi1_a_held_parent_end_is_not_lost_without_its_tool_result_message() {
    let cm_result = json!({"content":[{"type":"text","text":"Script completed"}],
        "details":{"calls":[{"id":"cm/1","status":"ok"},{"id":"cm/2","status":"error"}]}});
    let parent_end = Message::ToolCompleted {
        id: "cm".into(),
        result: cm_result.into(),
    };
    // The stream stops after the tool ends (pi killed): the end comes out at finish,
    // before the terminal, without nestedCalls.
    let stdout = jsonl(&codemode_run(false, false));
    let killed = StreamEnd::eof(Some(ExitInfo {
        code: None,
        signal: Some("SIGKILL".into()),
    }));
    let out = map_all(stdout.as_bytes(), killed, MapperOptions::default());
    check_structure(&out).unwrap();
    assert_eq!(out[out.len() - 2], parent_end);
    assert_eq!(failure(&out).reason, FailureReason::ProcessSignal);
    // The toolResult messages were lost but the run goes on: the end comes out before the
    // next assistant message.
    let mut events = codemode_run(false, false);
    events.extend([
        assistant_start(2),
        text_delta(0, "done"),
        assistant_end(2, json!([text("done")]), "stop"),
        agent_end(Some(false)),
    ]);
    let out = map(&jsonl(&events));
    check_structure(&out).unwrap();
    let at = out.iter().position(|m| *m == parent_end).unwrap();
    assert_eq!(
        out[at + 1],
        Message::Assistant {
            text: "done".into()
        }
    );
    // A toolResult message without nestedCalls releases the end with the result as it is.
    let mut events = codemode_run(false, false);
    events.push(tool_result_message("message_end", "cm", None));
    let out = map(&jsonl(&events));
    assert!(out.contains(&parent_end));
}

#[test]
fn pi1_nested_events_never_announce_a_tool_and_bad_parents_are_reported() {
    // Only nested events: no tool message at all (the parent's own events were lost).
    let events = [
        assistant_start(1),
        tool_ev("start", "p/1", json!({})),
        tool_ev(
            "end",
            "p/1",
            json!({"result":{"content":[]},"isError":false}),
        ),
        tool_ev("start", "q", json!({"parentToolCallId":7})),
    ];
    let out = map(&jsonl(&events));
    assert_eq!(tool_messages(&out), []);
    let f = failure(&out);
    assert_eq!(
        f.invalid_lines
            .iter()
            .map(|l| (l.line, l.problem.as_str()))
            .collect::<Vec<_>>(),
        [(
            4,
            "`tool_execution_start` whose `parentToolCallId` is not a string"
        )]
    );
}

#[test]
fn pi1_structured_content_and_other_result_fields_pass_through() {
    // pi 1.5.2's bash and read results (`structuredContent`, `isError` inside the result,
    // no `details`), and fields nobody knows yet: the result is pi's object, whole.
    let bash_fail = json!({"content":[{"type":"text","text":"oops\n\n\nCommand exited with code 3"}],
        "structuredContent":{"output":"oops\n","truncated":false,"exit_code":3,"wall_time_seconds":0},
        "isError":true,"futureField":[1,{"a":null}]});
    let read_ok =
        json!({"content":[{"type":"text","text":"# demo\n"}],"structuredContent":"# demo\n"});
    let partial =
        json!({"content":[{"type":"text","text":"oo"}],"structuredContent":{"partial":true}});
    let events = [
        assistant_start(1),
        assistant_end(
            1,
            json!([tool_block("a", json!({})), tool_block("b", json!({}))]),
            "toolUse",
        ),
        tool_start("a", json!({})),
        json!({"type":"tool_execution_update","toolCallId":"a","toolName":"bash","args":{},
            "partialResult":partial}),
        json!({"type":"tool_execution_end","toolCallId":"a","toolName":"bash","result":bash_fail,
            "isError":true,"durationMs":27}),
        json!({"type":"tool_execution_end","toolCallId":"b","toolName":"read","result":read_ok,
            "isError":false,"durationMs":3}),
        agent_end(Some(false)),
    ];
    let out = map(&jsonl(&events));
    assert!(out.contains(&Message::ToolUpdate {
        id: "a".into(),
        partial: partial.into()
    }));
    assert!(out.contains(&Message::ToolFailed {
        id: "a".into(),
        error: bash_fail.into()
    }));
    assert!(out.contains(&Message::ToolCompleted {
        id: "b".into(),
        result: read_ok.into()
    }));
}

#[test]
fn pi1_agent_settled_aborted_makes_the_run_aborted() {
    let run = |stop: &str, error: Option<&str>, settled: Value, end: StreamEnd| {
        let mut last = json!({"type":"message_end","message":{"role":"assistant",
            "content":[tool_block("t", json!({}))],"stopReason":stop,"timestamp":1,"usage":usage_json(1,1)}});
        if let Some(e) = error {
            last["message"]["errorMessage"] = json!(e);
        }
        let events = [
            session("s"),
            json!({"type":"agent_start"}),
            assistant_start(1),
            last,
            tool_start("t", json!({})),
            tool_end("t", "cancelled", true),
            agent_end(Some(false)),
            settled,
        ];
        map_all(jsonl(&events).as_bytes(), end, MapperOptions::default())
    };
    let aborted = json!({"type":"agent_settled","aborted":true});
    let exit = |code| {
        StreamEnd::eof(Some(ExitInfo {
            code: Some(code),
            signal: None,
        }))
    };
    // Aborted during a tool: the last message says toolUse, agent_settled says aborted.
    let out = run("toolUse", None, aborted.clone(), exit(0));
    check_structure(&out).unwrap();
    let f = failure(&out);
    assert_eq!(
        (f.reason, f.message.as_str()),
        (
            FailureReason::Aborted,
            "the run was aborted (agent_settled.aborted)"
        )
    );
    assert_eq!(
        f.exit,
        Some(ExitInfo {
            code: Some(0),
            signal: None
        })
    );
    // Aborted while waiting to retry an error: aborted, with pi's error.
    let out = run("error", Some("500 boom"), aborted.clone(), exit(143));
    let f = failure(&out);
    assert_eq!(
        (f.reason, f.message.as_str()),
        (
            FailureReason::Aborted,
            "the run was aborted (agent_settled.aborted): 500 boom"
        )
    );
    // stopReason "aborted" keeps its message.
    let out = run(
        "aborted",
        Some("Request was aborted"),
        aborted.clone(),
        exit(0),
    );
    assert_eq!(failure(&out).message, "Request was aborted");
    // The caller cancelled: cancelled, whatever pi says.
    let cancelled = StreamEnd {
        exit: Some(ExitInfo {
            code: Some(143),
            signal: None,
        }),
        stderr_tail: None,
        cause: EndCause::Cancelled,
    };
    let out = run("toolUse", None, aborted.clone(), cancelled);
    assert!(matches!(
        out.last(),
        Some(Message::TerminalCancelled { .. })
    ));
    // aborted:false (and 0.87.1's agent_settled without it) change nothing.
    for settled in [
        json!({"type":"agent_settled","aborted":false}),
        json!({"type":"agent_settled"}),
        json!({"type":"agent_settled","aborted":"yes"}),
    ] {
        assert_eq!(
            stop_reason(&run("toolUse", None, settled, exit(0))),
            "toolUse"
        );
    }
    // A new run after an aborted one (RPC-like): only the last agent_settled counts.
    let events = [
        json!({"type":"agent_start"}),
        assistant_start(1),
        assistant_end(1, json!([text("a")]), "stop"),
        agent_end(Some(false)),
        aborted,
        json!({"type":"agent_start"}),
        assistant_start(2),
        assistant_end(2, json!([text("b")]), "stop"),
        agent_end(Some(false)),
        json!({"type":"agent_settled","aborted":false}),
    ];
    assert_eq!(stop_reason(&map(&jsonl(&events))), "stop");
}

#[test]
fn pi1_a_first_chunk_in_message_start_is_never_doubled() {
    // message_start already holds the first chunk and the first delta repeats it.
    let start = |content: Value| {
        json!({"type":"message_start","message":{"role":"assistant","content":content,
            "stopReason":"pending","timestamp":1,"thinkingLevel":"medium"}})
    };
    let events = [
        session("s"),
        start(json!([thinking("Let"), text("Hel")])),
        thinking_delta(0, "Let"),
        thinking_delta(0, " me"),
        text_delta(1, "Hel"),
        text_delta(1, "lo"),
        assistant_end(1, json!([thinking("Let me"), text("Hello")]), "stop"),
        agent_end(Some(false)),
    ];
    let out = map(&jsonl(&events));
    assert_eq!(texts(&out), ["Hel", "lo"]);
    assert!(out.contains(&Message::AssistantThought {
        text: "Let me".into()
    }));
    check_structure(&out).unwrap();
    check_text_invariant(jsonl(&events).as_bytes(), &out).unwrap();
    // message_start holds text but no delta ever comes: the text comes whole from
    // message_end, once; a later message with deltas in the same run is unaffected.
    let events = [
        session("s"),
        start(json!([text("Hello")])),
        assistant_end(1, json!([text("Hello")]), "stop"),
        json!({"type":"message_start","message":{"role":"assistant","content":[text("Again")],"timestamp":2}}),
        text_delta(0, "Again"),
        text_delta(0, "!"),
        assistant_end(2, json!([text("Again!")]), "stop"),
        agent_end(Some(false)),
    ];
    let out = map(&jsonl(&events));
    assert_eq!(texts(&out), ["Hello", "Again", "!"]);
    check_text_invariant(jsonl(&events).as_bytes(), &out).unwrap();
    // Cut before message_end: only what the deltas said (message_start's copy is not
    // taken for text the deltas did not confirm).
    let events = [
        session("s"),
        start(json!([text("Hel")])),
        text_delta(0, "Hel"),
    ];
    let out = map(&jsonl(&events));
    assert_eq!(texts(&out), ["Hel"]);
    let events = [session("s"), start(json!([text("Hel")]))];
    assert_eq!(texts(&map(&jsonl(&events))), Vec::<&str>::new());
}

#[test]
fn pi1_deferred_stop_completes_with_stop_reason_deferred() {
    // A deferred response (pi 1.x): no content, a handle to fetch it later, zero usage.
    let events = [
        session("s"),
        json!({"type":"agent_start"}),
        assistant_start(1),
        json!({"type":"message_end","message":{"role":"assistant","content":[],"stopReason":"deferred",
            "deferred":{"provider":"p","modelId":"m","api":"a","id":"deferred:1:x","pollAfterMs":500},
            "usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,
                "cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"timestamp":1}}),
        agent_end(Some(false)),
        json!({"type":"agent_settled","aborted":false}),
    ];
    let out = map(&jsonl(&events));
    assert_eq!(
        kinds(&out),
        ["session.started", "usage", "terminal.completed"]
    );
    assert_eq!(stop_reason(&out), "deferred");
}

/// The 1.5.2 captures in `tests/data/pi152/` (all exited 0), with the terminal each ends in.
const PI152: &[(&str, &str)] = &[
    ("auth_401", "terminal.failed"),
    ("codemode_error", "terminal.completed"),
    ("codemode_nested", "terminal.completed"),
    ("http500_then_success", "terminal.completed"),
    ("stream_cut", "terminal.completed"),
    ("tool_bash", "terminal.completed"),
    ("tools_parallel_one_fails", "terminal.completed"),
];

fn pi152(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/tests/data/pi152/{name}.stdout.jsonl",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The pi events of a stdout, as JSON values.
fn events_of(stdout: &[u8]) -> Vec<Value> {
    stdout
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect()
}

#[test]
fn pi152_captures_map_with_every_invariant() {
    for &(name, terminal) in PI152 {
        let stdout = pi152(name);
        let mut m = Mapper::new(MapperOptions::default());
        let mut out = Vec::new();
        m.push(&stdout, &mut out);
        m.finish(exit0(), &mut out);
        let stats = m.stats();
        assert_eq!(
            (
                stats.invalid_lines,
                stats.unknown_events,
                stats.text_divergences
            ),
            (0, 0, 0),
            "{name}"
        );
        check_structure(&out).unwrap_or_else(|e| panic!("{name}: {e}"));
        check_text_invariant(&stdout, &out).unwrap_or_else(|e| panic!("{name}: {e}"));
        check_thoughts(&stdout, &out).unwrap_or_else(|e| panic!("{name}: {e}"));
        check_usage(&stdout, &out).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(out.last().unwrap().kind(), terminal, "{name}");
        if let Message::TerminalFailed(f) = out.last().unwrap() {
            assert!(f.invalid_lines.is_empty(), "{name}: {f:?}");
        }
        // Any chunking gives the same stream (the fast path's memo included).
        let cuts: Vec<usize> = (0..stdout.len()).step_by(97).collect();
        assert_eq!(
            map_chunked(&stdout, &cuts, exit0(), MapperOptions::default()),
            out,
            "{name}"
        );

        // Tools: a tool.call exactly for the model's calls (the toolCall blocks of the
        // assistant messages), each with one end; nothing for nested ids.
        let events = events_of(&stdout);
        let mut model_calls: Vec<String> = Vec::new();
        let mut nested: Vec<String> = Vec::new();
        for e in &events {
            if e["type"] == "message_end" && e["message"]["role"] == "assistant" {
                for b in e["message"]["content"].as_array().unwrap() {
                    if b["type"] == "toolCall" {
                        model_calls.push(b["id"].as_str().unwrap().to_string());
                    }
                }
            }
            if e.get("parentToolCallId").is_some() {
                nested.push(e["toolCallId"].as_str().unwrap().to_string());
            }
        }
        let called: Vec<String> = out
            .iter()
            .filter_map(|m| match m {
                Message::ToolCall { id, .. } => Some(id.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(called, model_calls, "{name}");
        for id in &called {
            let ends = out
                .iter()
                .filter(|m| {
                    matches!(m, Message::ToolCompleted { id: i, .. } | Message::ToolFailed { id: i, .. } if i == id)
                })
                .count();
            assert_eq!(ends, 1, "{name}: {id}");
        }
        for m in &out {
            let id = match m {
                Message::ToolCall { id, .. }
                | Message::ToolUpdate { id, .. }
                | Message::ToolCompleted { id, .. }
                | Message::ToolFailed { id, .. } => id,
                _ => continue,
            };
            assert!(!nested.contains(id), "{name}: nested {id} surfaced");
        }
        // Every tool end carries pi's whole tool_execution_end.result, plus the
        // toolResult message's nestedCalls where the tool made nested calls.
        for e in events
            .iter()
            .filter(|e| e["type"] == "tool_execution_end" && e.get("parentToolCallId").is_none())
        {
            let id = e["toolCallId"].as_str().unwrap();
            let mut expected = e["result"].clone();
            let nested_calls = events.iter().find_map(|r| {
                (r["type"] == "message_end"
                    && r["message"]["role"] == "toolResult"
                    && r["message"]["toolCallId"] == id)
                    .then(|| r["message"].get("nestedCalls").cloned())
                    .flatten()
            });
            if let Some(n) = nested_calls {
                expected["nestedCalls"] = n;
            }
            let got = out
                .iter()
                .find_map(|m| match m {
                    Message::ToolCompleted { id: i, result } if i == id => Some(result),
                    Message::ToolFailed { id: i, error } if i == id => Some(error),
                    _ => None,
                })
                .unwrap();
            assert_eq!(*got, expected, "{name}: {id}");
        }
    }
}

#[test]
fn pi152_fast_and_serde_paths_agree() {
    // Every `message_update` line of the captures takes the fast path; a leading `"id"`
    // key (which an update does not use) sends it down the serde path instead. Same
    // stream, no bad line either way.
    let mut updates = 0;
    for &(name, _) in PI152 {
        let stdout = pi152(name);
        let mut via_serde = Vec::new();
        for line in stdout.split_inclusive(|&b| b == b'\n') {
            match line.strip_prefix(br#"{"type":"message_update""#) {
                Some(rest) => {
                    updates += 1;
                    via_serde.extend_from_slice(br#"{"id":0,"type":"message_update""#);
                    via_serde.extend_from_slice(rest);
                }
                None => via_serde.extend_from_slice(line),
            }
        }
        let run = |data: &[u8]| {
            let mut m = Mapper::new(MapperOptions::default());
            let mut out = Vec::new();
            m.push(data, &mut out);
            m.finish(exit0(), &mut out);
            (out, m.stats().invalid_lines)
        };
        let (fast, bad) = run(&stdout);
        assert_eq!(bad, 0, "{name}");
        assert_eq!(run(&via_serde), (fast, 0), "{name}");
    }
    assert_eq!(updates, 97);
}

#[test]
fn pi152_codemode_results_carry_nested_calls_and_bash_structured_content() {
    let out = map(std::str::from_utf8(&pi152("codemode_nested")).unwrap());
    let result = out
        .iter()
        .find_map(|m| match m {
            Message::ToolCompleted { id, result } if id == "call_cm" => Some(result.to_value()),
            _ => None,
        })
        .unwrap();
    let calls: Vec<(&str, &str)> = result["nestedCalls"]["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["id"].as_str().unwrap(), c["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        calls,
        [
            ("call_cm/1", "ok"),
            ("call_cm/2", "ok"),
            ("call_cm/3", "error")
        ]
    );
    assert_eq!(result["nestedCalls"]["complete"], true);
    assert_eq!(
        result["nestedCalls"]["calls"][0]["arguments"],
        json!({"command":"echo nested-hi"})
    );
    let out = map(std::str::from_utf8(&pi152("codemode_error")).unwrap());
    let error = out
        .iter()
        .find_map(|m| match m {
            Message::ToolFailed { id, error } if id == "call_cx" => Some(error.to_value()),
            _ => None,
        })
        .unwrap();
    assert_eq!(error["nestedCalls"]["calls"][0]["id"], "call_cx/1");
    let out = map(std::str::from_utf8(&pi152("tools_parallel_one_fails")).unwrap());
    assert!(out.contains(&Message::ToolFailed {
        id: "call_c".into(),
        error: json!({"content":[{"type":"text","text":"oops\n\n\nCommand exited with code 3"}],
            "structuredContent":{"output":"oops\n","truncated":false,"exit_code":3,"wall_time_seconds":0},
            "isError":true}).into()
    }));
}

#[test]
fn pi152_repeated_lines_other_than_deltas_change_nothing() {
    // As `repeated_lines_other_than_deltas_change_nothing`, on 1.5.2 with nested calls:
    // a repeated nested event or toolResult message neither surfaces nor releases twice.
    for &(name, _) in PI152 {
        let stdout = pi152(name);
        let expected = map_all(&stdout, exit0(), MapperOptions::default());
        let mut doubled = Vec::new();
        for line in stdout.split_inclusive(|&b| b == b'\n') {
            doubled.extend_from_slice(line);
            if !line.starts_with(br#"{"type":"message_update""#) {
                doubled.extend_from_slice(line);
            }
        }
        assert_eq!(
            map_all(&doubled, exit0(), MapperOptions::default()),
            expected,
            "{name}"
        );
    }
}
