//! The mapper's one-pass paths (`mapper/hot.rs` for `message_update`, `mapper/fast.rs` for
//! every other line, with its memo of message bodies) must give exactly what the serde
//! path gives: the same messages, the same terminal, the same counters, whatever the line.
//! Here the reference is the same mapper with its one-pass paths switched off
//! (`Mapper::set_fast_paths(false)`), over whole recorded runs in which one line is
//! mutated (so the memo is warm: a mutated `turn_end` or `agent_end` is read after the
//! bodies it repeats), and over synthesized message and tool lines whose fields come in any
//! order, repeated, escaped, or of odd types and numbers.

use std::sync::OnceLock;

use pi_wire::mapper::{Mapper, MapperOptions, MapperStats, StreamEnd};
use pi_wire::message::{ExitInfo, Message};
use proptest::prelude::*;
use proptest::sample::{select, Index};

use crate::util::{apply, byte_or_field_edit};

/// Recorded runs (stdout lines) small enough to map twice per case.
fn runs() -> &'static [Vec<Vec<u8>>] {
    static RUNS: OnceLock<Vec<Vec<Vec<u8>>>> = OnceLock::new();
    RUNS.get_or_init(|| {
        let dir = benches::cassette_dir();
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.ends_with(".cassette.jsonl"))
            .collect();
        names.sort();
        let mut out = Vec::new();
        for name in names {
            let stdout = benches::load_stdout(&name).unwrap_or_else(|e| panic!("{e}"));
            if stdout.len() > 256 << 10 {
                continue; // the long answers: their lines are covered by mapper_validates.rs
            }
            if !stdout.is_empty() {
                out.push(benches::split_lines(&stdout).map(<[u8]>::to_vec).collect());
            }
        }
        assert!(out.len() >= 20, "too few recorded runs: {}", out.len());
        out
    })
}

/// Everything a mapper says about `lines`, with or without its one-pass paths.
fn map(lines: &[Vec<u8>], fast: bool) -> (Vec<Message>, MapperStats) {
    let mut m = Mapper::new(MapperOptions::default());
    m.set_fast_paths(fast);
    let mut out = Vec::new();
    for l in lines {
        m.push(l, &mut out);
        m.push(b"\n", &mut out);
    }
    let exit = ExitInfo {
        code: Some(0),
        signal: None,
    };
    m.finish(StreamEnd::eof(Some(exit)), &mut out);
    (out, m.stats())
}

/// A scalar or small value, in the shapes the serde path reads leniently.
fn odd_value() -> impl Strategy<Value = &'static str> {
    select(vec![
        "\"call_1\"",
        "\"assistant\"",
        "\"toolResult\"",
        "\"user\"",
        "\"a\\nb\\u00e9\"",
        "\"\\ud83d\\ude00\"",
        "\"\\udc00\"",
        "0",
        "7",
        "-0",
        "-3",
        "1.5",
        "1e2",
        "18446744073709551616",
        "1e400",
        "true",
        "false",
        "null",
        "[]",
        "{}",
        "[1,{\"a\":null}]",
    ])
}

/// A message body (`message_start`/`message_end`) built from parts in any order.
fn body() -> impl Strategy<Value = String> {
    let block = (
        proptest::option::of(select(vec![
            "\"text\"",
            "\"thinking\"",
            "\"toolCall\"",
            "3",
        ])),
        proptest::option::of(odd_value()),
        proptest::option::of(select(vec!["\"call_1\"", "\"call_2\"", "null", "5"])),
        proptest::option::of(select(vec!["{\"command\":\"ls\"}", "null", "[1]"])),
        any::<bool>(),
    )
        .prop_map(|(kind, text, id, args, dup)| {
            let mut f = Vec::new();
            f.extend(kind.map(|k| format!("\"type\":{k}")));
            f.extend(text.map(|t| format!("\"text\":{t}")));
            f.extend(text.map(|t| format!("\"thinking\":{t}")));
            f.extend(id.map(|i| format!("\"id\":{i}")));
            f.push("\"name\":\"bash\"".to_string());
            f.extend(args.map(|a| format!("\"arguments\":{a}")));
            if dup {
                f.push("\"name\":\"read\"".to_string());
            }
            format!("{{{}}}", f.join(","))
        });
    let content = prop_oneof![
        proptest::collection::vec(block, 0..3).prop_map(|b| format!("[{}]", b.join(","))),
        odd_value().prop_map(str::to_string),
    ];
    let usage = prop_oneof![
        Just("{\"input\":100,\"output\":7,\"cacheRead\":0,\"cacheWrite\":0,\"totalTokens\":107,\"cost\":{\"input\":0,\"total\":0.0123}}".to_string()),
        (odd_value(), odd_value()).prop_map(|(a, b)| format!("{{\"input\":{a},\"cost\":{{\"total\":{b}}}}}")),
        Just("{\"input\":1,\"input\":2}".to_string()),
        Just("{\"cost\":{\"total\":1,\"total\":2}}".to_string()),
        odd_value().prop_map(str::to_string),
    ];
    (
        proptest::option::of(odd_value()),
        proptest::option::of(content),
        proptest::option::of(usage),
        proptest::option::of(select(vec![
            "\"stop\"",
            "\"toolUse\"",
            "\"error\"",
            "\"aborted\"",
            "1",
        ])),
        proptest::option::of(odd_value()),
        proptest::option::of(select(vec!["1700000000000", "\"t\"", "null", "1.5"])),
        proptest::option::of(odd_value()),
        proptest::option::of(select(vec!["[{\"id\":\"n1\"}]", "null", "{}"])),
        (any::<bool>(), any::<Index>()),
    )
        .prop_map(
            |(role, content, usage, stop, err, ts, call, nested, (dup, order))| {
                let mut f = Vec::new();
                f.extend(role.map(|v| format!("\"role\":{v}")));
                f.extend(content.map(|v| format!("\"content\":{v}")));
                f.extend(usage.map(|v| format!("\"usage\":{v}")));
                f.extend(stop.map(|v| format!("\"stopReason\":{v}")));
                f.extend(err.map(|v| format!("\"errorMessage\":{v}")));
                f.extend(ts.map(|v| format!("\"timestamp\":{v}")));
                f.extend(call.map(|v| format!("\"toolCallId\":{v}")));
                f.extend(nested.map(|v| format!("\"nestedCalls\":{v}")));
                f.push("\"api\":\"openai-completions\"".to_string());
                if dup {
                    f.push("\"role\":\"assistant\"".to_string());
                }
                let n = f.len();
                f.rotate_left(order.index(n));
                format!("{{{}}}", f.join(","))
            },
        )
}

/// A line that is not a `message_update`: message, tool, turn and agent events, the
/// session header, retries; fields in any order.
fn other_line() -> impl Strategy<Value = Vec<u8>> {
    let kind = select(vec![
        "\"message_start\"",
        "\"message_end\"",
        "\"tool_execution_start\"",
        "\"tool_execution_update\"",
        "\"tool_execution_end\"",
        "\"turn_end\"",
        "\"agent_end\"",
        "\"agent_settled\"",
        "\"auto_retry_start\"",
        "\"session\"",
        "\"no_such_event\"",
        "3",
        "\"message_st\\u0061rt\"",
    ]);
    (
        kind,
        proptest::option::of(body()),
        proptest::collection::vec(
            (
                select(vec![
                    "id",
                    "toolCallId",
                    "toolName",
                    "args",
                    "partialResult",
                    "result",
                    "isError",
                    "willRetry",
                    "attempt",
                    "maxAttempts",
                    "delayMs",
                    "errorMessage",
                    "parentToolCallId",
                    "aborted",
                    "messages",
                    "toolResults",
                    "other",
                ]),
                odd_value(),
            ),
            0..5,
        ),
        any::<Index>(),
    )
        .prop_map(|(kind, message, fields, order)| {
            let mut f = vec![format!("\"type\":{kind}")];
            f.extend(message.map(|m| format!("\"message\":{m}")));
            f.extend(fields.iter().map(|(k, v)| format!("\"{k}\":{v}")));
            let n = f.len();
            f.swap(order.index(n), n - 1);
            format!("{{{}}}", f.join(",")).into_bytes()
        })
}

/// What comes before the synthesized line: an open assistant message with a tool call,
/// a tool that ran, and the bodies `turn_end`/`agent_end` repeat (so the memo is warm).
const CONTEXT: &[&str] = &[
    r#"{"type":"session","version":3,"id":"s1","timestamp":"t","cwd":"/"}"#,
    r#"{"type":"agent_start"}"#,
    r#"{"type":"message_start","message":{"role":"system","content":"","sections":{"a":"b"}}}"#,
    r#"{"type":"message_end","message":{"role":"system","content":"","sections":{"a":"b"}}}"#,
    r#"{"type":"message_start","message":{"role":"assistant","content":[],"usage":{"input":0},"stopReason":"pending","timestamp":1700000000000}}"#,
    r#"{"type":"message_update","assistantMessageEvent":{"type":"text_delta","contentIndex":0,"delta":"Hi"}}"#,
    r#"{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"Hi"},{"type":"toolCall","id":"call_1","name":"bash","arguments":{"command":"ls"}}],"usage":{"input":100,"output":7,"cost":{"total":0.5}},"stopReason":"toolUse","timestamp":1700000000000}}"#,
    r#"{"type":"tool_execution_start","toolCallId":"call_1","toolName":"bash","args":{"command":"ls"}}"#,
];

fn with_context(line: &[u8]) -> Vec<Vec<u8>> {
    let mut lines: Vec<Vec<u8>> = CONTEXT.iter().map(|l| l.as_bytes().to_vec()).collect();
    lines.push(line.to_vec());
    // The same again after it: a repeated body, read through the memo.
    lines.push(line.to_vec());
    lines
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn one_mutated_line_in_a_recorded_run(
        run in select(runs()),
        at in any::<Index>(),
        edits in proptest::collection::vec(byte_or_field_edit(), 0..4),
    ) {
        let mut lines = run.clone();
        let i = at.index(lines.len());
        lines[i] = apply(lines[i].clone(), &edits);
        prop_assert_eq!(
            map(&lines, true),
            map(&lines, false),
            "line {}: {:?}",
            i,
            String::from_utf8_lossy(&lines[i])
        );
    }

    #[test]
    fn synthesized_message_and_tool_lines(
        line in other_line(),
        edits in proptest::collection::vec(byte_or_field_edit(), 0..2),
    ) {
        let line = apply(line, &edits);
        let lines = with_context(&line);
        prop_assert_eq!(map(&lines, true), map(&lines, false), "{:?}", String::from_utf8_lossy(&line));
    }
}

/// Every recorded run maps the same both ways, unmutated.
#[test]
fn every_recorded_run_maps_the_same_both_ways() {
    for run in runs() {
        assert_eq!(map(run, true), map(run, false));
    }
    for input in benches::inputs().unwrap_or_else(|e| panic!("{e}")) {
        let lines: Vec<Vec<u8>> = benches::split_lines(&input.stdout)
            .map(<[u8]>::to_vec)
            .collect();
        assert_eq!(map(&lines, true), map(&lines, false), "{}", input.name);
    }
}

/// The generators are not vacuous: they reach both paths' verdicts.
#[test]
fn the_synthesized_lines_cover_valid_and_invalid() {
    let valid = br#"{"type":"message_end","message":{"role":"toolResult","toolCallId":"call_1","content":[{"type":"text","text":"x"}],"timestamp":1}}"#;
    let (_, stats) = map(&with_context(valid), true);
    assert_eq!(stats.invalid_lines, 0);
    let dup = br#"{"type":"message_end","message":{"role":"toolResult","role":"user"}}"#;
    let (_, fast) = map(&with_context(dup), true);
    let (_, slow) = map(&with_context(dup), false);
    assert_eq!(fast, slow);
    assert_eq!(fast.invalid_lines, 2);
}
