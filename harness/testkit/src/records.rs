//! Cassette record lines for hand-made runs.

/// A stdout record holding one JSON line, `dt_ms` after the previous record.
pub fn out(dt_ms: u64, json: &str) -> String {
    format!(r#"{{"dt_ms":{dt_ms},"stdout":{json}}}"#)
}

/// The `exit` record that ends a run with `code`.
pub fn exit(code: i32) -> String {
    format!(r#"{{"dt_ms":0,"exit":{code}}}"#)
}

/// A short, complete pi 0.87.1 run answering `text`: [`conversation`], then exit 0.
pub fn answer(text: &str) -> Vec<String> {
    let mut lines = conversation(text);
    lines.push(exit(0));
    lines
}

/// The stdout records of a short, complete pi 0.87.1 conversation answering `text`, with
/// no ending (add an `exit`, a `signal` or a `hang` record).
pub fn conversation(text: &str) -> Vec<String> {
    let t = serde_json::to_string(text).expect("a string serializes");
    vec![
        out(
            0,
            r#"{"type":"session","version":3,"id":"sess-1","timestamp":"T","cwd":"/w"}"#,
        ),
        out(0, r#"{"type":"agent_start"}"#),
        out(0, r#"{"type":"turn_start"}"#),
        out(
            0,
            r#"{"type":"message_start","message":{"role":"assistant","content":[],"stopReason":"pending"}}"#,
        ),
        out(
            0,
            r#"{"type":"message_update","assistantMessageEvent":{"type":"text_start","contentIndex":0}}"#,
        ),
        out(
            0,
            &format!(
                r#"{{"type":"message_update","assistantMessageEvent":{{"type":"text_delta","contentIndex":0,"delta":{t}}}}}"#
            ),
        ),
        out(
            0,
            &format!(
                r#"{{"type":"message_update","assistantMessageEvent":{{"type":"text_end","contentIndex":0,"content":{t}}}}}"#
            ),
        ),
        out(
            0,
            &format!(
                r#"{{"type":"message_end","message":{{"role":"assistant","content":[{{"type":"text","text":{t}}}],"usage":{{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3,"cost":{{"total":0}}}},"stopReason":"stop"}}}}"#
            ),
        ),
        out(
            0,
            &format!(
                r#"{{"type":"turn_end","message":{{"role":"assistant","content":[{{"type":"text","text":{t}}}],"stopReason":"stop"}},"toolResults":[]}}"#
            ),
        ),
        out(0, r#"{"type":"agent_end","messages":[],"willRetry":false}"#),
        out(0, r#"{"type":"agent_settled"}"#),
    ]
}
