//! The script format and the OpenAI chat-completions and Anthropic renderings.

use super::*;

fn data_lines(reply: &Reply) -> Vec<Value> {
    let Reply::Stream { pieces, .. } = reply else {
        panic!("not a stream: {reply:?}")
    };
    let all: Vec<u8> = pieces.iter().flat_map(|p| p.bytes.clone()).collect();
    String::from_utf8(all)
        .unwrap()
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter(|l| *l != "[DONE]")
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn openai_stream_has_reasoning_text_tool_pieces_finish_and_usage() {
    let s = Script::parse(
        r#"{"turns":[{"reasoning":["hm"],"text":["a","b"],
            "tools":[{"id":"call_1","name":"bash","args":{"command":"echo hi"}}]}]}"#,
    )
    .unwrap();
    let (_, t) = s.turn_for(0).unwrap();
    let v = data_lines(&render(t, Api::OpenAi, "m", 3));
    assert_eq!(v[0]["id"], "c3");
    assert_eq!(v[1]["choices"][0]["delta"]["reasoning_content"], "hm");
    assert_eq!(v[2]["choices"][0]["delta"]["content"], "a");
    assert_eq!(
        v[4]["choices"][0]["delta"]["tool_calls"][0]["function"]["name"],
        "bash"
    );
    let args: String = v[5..]
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"].as_str())
        .collect();
    assert_eq!(args, r#"{"command":"echo hi"}"#);
    let finish = &v[v.len() - 2];
    assert_eq!(finish["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(v.last().unwrap()["usage"]["completion_tokens"], 4);
}

#[test]
fn anthropic_stream_orders_blocks_and_maps_stop_reason() {
    let s = Script::parse(r#"{"turns":[{"text":["x"]}]}"#).unwrap();
    let v = data_lines(&render(&s.turns[0], Api::Anthropic, "m", 1));
    let types: Vec<&str> = v.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop"
        ]
    );
    assert_eq!(v[4]["delta"]["stop_reason"], "end_turn");
}

#[test]
fn repeat_and_after_last_pick_turns() {
    let s = Script::parse(r#"{"turns":[{"status":500,"repeat":2},{"text":["ok"]}]}"#).unwrap();
    assert_eq!(s.turn_for(0).unwrap().0, 0);
    assert_eq!(s.turn_for(1).unwrap().0, 0);
    assert_eq!(s.turn_for(2).unwrap().0, 1);
    assert!(s.turn_for(3).is_none());
    assert_eq!(s.capacity(), Some(3));
    let s = Script::parse(r#"{"turns":[{"text":["ok"]}],"after_last":"repeat_last"}"#).unwrap();
    assert_eq!(s.turn_for(9).unwrap().0, 0);
}

#[test]
fn bad_scripts_name_the_field() {
    let e = Script::parse(r#"{"turns":[{"text":["a"]},{"status":200}]}"#).unwrap_err();
    assert!(e.contains("turns[1].status"), "{e}");
    let e = Script::parse(r#"{"turns":[{"status":500,"text":["a"]}]}"#).unwrap_err();
    assert!(e.contains("turns[0]: `status`"), "{e}");
    let e = Script::parse(r#"{"turns":[{"txt":["a"]}]}"#).unwrap_err();
    assert!(e.contains("unknown field `txt`"), "{e}");
    // No turns: the run never reaches the model; nothing to repeat then.
    let none = Script::parse(r#"{"turns":[]}"#).unwrap();
    assert!(none.expects_no_request());
    assert_eq!(none.capacity(), Some(0));
    assert!(!Script::parse(r#"{"turns":[{"text":["a"]}]}"#)
        .unwrap()
        .expects_no_request());
    let e = Script::parse(r#"{"turns":[],"after_last":"repeat_last"}"#).unwrap_err();
    assert!(e.contains("no last turn to repeat"), "{e}");
    let e = Script::parse(r#"{"turns":[{"status":100}]}"#).unwrap_err();
    assert!(e.contains("turns[0].status: 100"), "{e}");
    let e = Script::parse(r#"{"turns":[{"status":500,"headers":{"x(y)":"1"}}]}"#).unwrap_err();
    assert!(e.contains(r#"bad header name "x(y)""#), "{e}");
    let e = Script::parse(r#"{"turns":[{"status":500,"headers":{"x":"a\u0000"}}]}"#).unwrap_err();
    assert!(e.contains("control character"), "{e}");
    assert!(Script::parse(r#"{"turns":[{"status":503,"headers":{"x-é":"1"}}]}"#).is_err());
    Script::parse(r#"{"turns":[{"status":503,"headers":{"Retry-After":"0 \té"}}]}"#).unwrap();
}

#[test]
fn cut_and_stall_limit_events_and_split_cuts_inside_a_character() {
    let s = Script::parse(r#"{"turns":[{"text":["é","b","c"],"cut_after":2,"split_utf8":true}]}"#)
        .unwrap();
    let Reply::Stream { pieces, end, .. } = render(&s.turns[0], Api::OpenAi, "m", 1) else {
        panic!()
    };
    assert_eq!(end, StreamEnd::Cut);
    // role chunk (ASCII, one piece) + "é" chunk split in two.
    assert_eq!(pieces.len(), 3);
    assert!(std::str::from_utf8(&pieces[1].bytes).is_err());
    assert_eq!(arg_pieces("aé", 1), ["a", "é"]);
}
