//! The hot scanner against the lines it must read, and the ones it must leave to serde.

use super::*;

#[test]
fn a_text_delta_is_read() {
    let line = br#"{"type":"message_update","usage":{"a":[1,-2.5e3,true,null]},"assistantMessageEvent":{"type":"text_delta","contentIndex":0,"delta":"a\n\"b\u00e9","partial":{"x":"y"}},"message":{"role":"assistant"}}"#;
    assert_eq!(
        scan(line, &mut Vec::new()),
        Some(Hot::Delta {
            thinking: false,
            delta: Cow::Owned("a\n\"b\u{e9}".into()),
            content_index: Some(0),
        })
    );
}

#[test]
fn pi152_updates_take_the_fast_path() {
    // Real pi 1.5.2 lines: `usage.reasoning`, `cost.totalFromProvider`, anthropic's
    // `cacheWrite1h`, `toolcall_start` with `id` and `toolName` inside the update.
    let mut memo = Vec::new();
    let usage = r#"{"input":100,"output":7,"cacheRead":0,"cacheWrite":0,"reasoning":0,"totalTokens":107,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0,"totalFromProvider":false}}"#;
    let line = |ame: &str| {
        format!(r#"{{"type":"message_update","usage":{usage},"assistantMessageEvent":{ame}}}"#)
    };
    assert_eq!(
        scan(
            line(r#"{"type":"thinking_delta","contentIndex":0,"delta":"Let me "}"#).as_bytes(),
            &mut memo
        ),
        Some(Hot::Delta {
            thinking: true,
            delta: Cow::Borrowed("Let me "),
            content_index: Some(0),
        })
    );
    assert_eq!(memo, usage.as_bytes());
    assert_eq!(
        scan(
            line(r#"{"type":"toolcall_start","contentIndex":2,"id":"call_1","toolName":"bash"}"#)
                .as_bytes(),
            &mut memo
        ),
        Some(Hot::Nothing)
    );
    let anthropic = r#"{"type":"message_update","usage":{"input":100,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":101,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0,"totalFromProvider":false},"cacheWrite1h":0},"assistantMessageEvent":{"type":"text_delta","contentIndex":1,"delta":"hi"}}"#;
    assert!(matches!(
        scan(anthropic.as_bytes(), &mut memo),
        Some(Hot::Delta {
            thinking: false,
            ..
        })
    ));
    // The keys the serde path reads for pi 1.x leave the line to it.
    for key in ["parentToolCallId", "aborted"] {
        let l = format!(
            r#"{{"type":"message_update","{key}":1,"assistantMessageEvent":{{"type":"text_delta","delta":"a"}}}}"#
        );
        assert_eq!(scan(l.as_bytes(), &mut Vec::new()), None, "{key}");
    }
}

#[test]
fn the_memo_skips_a_repeated_value_and_nothing_else() {
    let mut memo = Vec::new();
    let line = |usage: &str| {
        format!(
            r#"{{"type":"message_update","usage":{usage},"assistantMessageEvent":{{"type":"text_delta","delta":"a"}}}}"#
        )
    };
    assert!(scan(
        line(r#"{"input":0,"cost":{"total":0}}"#).as_bytes(),
        &mut memo
    )
    .is_some());
    assert_eq!(memo, br#"{"input":0,"cost":{"total":0}}"#);
    assert!(scan(
        line(r#"{"input":0,"cost":{"total":0}}"#).as_bytes(),
        &mut memo
    )
    .is_some());
    // The memo's bytes followed by more than a value allows: still rejected.
    assert!(scan(
        line(r#"{"input":0,"cost":{"total":0}}}"#).as_bytes(),
        &mut memo
    )
    .is_none());
    assert!(scan(
        line(r#"{"input":0,"cost":{"total":0}},"#).as_bytes(),
        &mut memo
    )
    .is_none());
    // A different value is scanned (and remembered).
    assert!(scan(
        line(r#"{"input":0,"cost":{"total":0e}}"#).as_bytes(),
        &mut memo
    )
    .is_none());
    assert!(scan(line("[1,2]").as_bytes(), &mut memo).is_some());
    assert_eq!(memo, b"[1,2]");
}

#[test]
fn other_updates_and_unusual_lines_fall_back_or_say_nothing() {
    let start = br#"{"type":"message_update","assistantMessageEvent":{"type":"text_start","contentIndex":0}}"#;
    assert_eq!(scan(start, &mut Vec::new()), Some(Hot::Nothing));
    for line in [
        // another event type
        &br#"{"type":"turn_start"}"#[..],
        // a snapshot the serde path would parse: partial before delta
        br#"{"type":"message_update","assistantMessageEvent":{"type":"text_delta","partial":{},"delta":"a"}}"#,
        // message after the type and before the update
        br#"{"type":"message_update","message":{},"assistantMessageEvent":{"type":"text_delta","delta":"a"}}"#,
        // repeated key, escaped key, lone surrogate, control character, trailing comma
        br#"{"type":"message_update","type":"message_update","assistantMessageEvent":{"type":"text_delta","delta":"a"}}"#,
        br#"{"typ\u0065":"message_update","assistantMessageEvent":{"type":"text_delta","delta":"a"}}"#,
        br#"{"type":"message_update","assistantMessageEvent":{"type":"text_delta","delta":"\ud800"}}"#,
        b"{\"type\":\"message_update\",\"assistantMessageEvent\":{\"type\":\"text_delta\",\"delta\":\"\x01\"}}",
        br#"{"type":"message_update","assistantMessageEvent":{"type":"text_delta","delta":"a",}}"#,
        // a content index the serde path reads as a float
        br#"{"type":"message_update","assistantMessageEvent":{"type":"text_delta","contentIndex":1e0,"delta":"a"}}"#,
        // trailing bytes, bad number, bad literal
        br#"{"type":"message_update","assistantMessageEvent":{"type":"text_delta","delta":"a"}} x"#,
        br#"{"type":"message_update","x":01,"assistantMessageEvent":{"type":"text_delta","delta":"a"}}"#,
        br#"{"type":"message_update","x":tru,"assistantMessageEvent":{"type":"text_delta","delta":"a"}}"#,
    ] {
        assert_eq!(scan(line, &mut Vec::new()), None, "{}", String::from_utf8_lossy(line));
    }
}

#[test]
fn the_string_scan_finds_specials_at_every_offset() {
    for at in 0..20 {
        let mut body = vec![b'a'; 20];
        body[at] = 0x1f;
        let mut line =
            br#"{"type":"message_update","assistantMessageEvent":{"type":"text_delta","delta":""#
                .to_vec();
        line.extend_from_slice(&body);
        line.extend_from_slice(b"\"}}");
        assert_eq!(scan(&line, &mut Vec::new()), None);
        body[at] = b'"';
        let mut line =
            br#"{"type":"message_update","assistantMessageEvent":{"type":"text_delta","delta":""#
                .to_vec();
        line.extend_from_slice(&body);
        line.extend_from_slice(b"\"}}");
        assert_eq!(
            scan(&line, &mut Vec::new()),
            None,
            "quote at {at} ends the string early"
        );
    }
    let with = |body: &[u8]| {
        let mut line =
            br#"{"type":"message_update","assistantMessageEvent":{"type":"text_delta","delta":""#
                .to_vec();
        line.extend_from_slice(body);
        line.extend_from_slice(b"\"}}");
        scan(&line, &mut Vec::new()).map(|h| match h {
            Hot::Delta { delta, .. } => Some(delta.into_owned()),
            Hot::ToolCallEnd(_) | Hot::Nothing => None,
        })
    };
    for len in [3, 9, 17, 40] {
        for at in 0..len - 1 {
            let mut body = vec![b'a'; len];
            body[at] = 0xff;
            assert_eq!(with(&body), None, "invalid UTF-8 at {at} of {len}");
            body[at] = 0xc3;
            body[at + 1] = 0xa9;
            let text = String::from_utf8(body.clone()).unwrap();
            assert_eq!(with(&body), Some(Some(text)));
        }
    }
}
