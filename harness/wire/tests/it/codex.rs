//! Tests of the Codex `exec --json` mapper (`pi_wire::codex`): the real Codex 0.169.0
//! captures of `tests/data/codex/` (see its README) mapped with the end each run had, kept
//! as reviewed insta snapshots and checked with the stream invariants
//! (`pi_testkit::invariants::check_structure`, and the text of every `agent_message` item
//! read independently with serde_json); hand-made events for the rules the captures do
//! not reach; and properties (no panic, one terminal, the same output in any chunking).

use pi_wire::codex::{map_all, CodexMapper};
use pi_wire::mapper::{EndCause, MapperOptions, StreamEnd};
use pi_wire::message::{ExitInfo, FailureReason, Message, RetrySource, Usage};
use proptest::prelude::*;
use proptest::sample::{select, Index};
use serde_json::{json, Value};

use pi_testkit::invariants::check_structure;

// ---------------------------------------------------------------------------
// Helpers

/// Every capture, with how its process ended (`tests/data/codex/README.md`).
const CAPTURES: &[(&str, Option<i32>, Option<&str>)] = &[
    ("text", Some(0), None),
    ("tool", Some(0), None),
    ("FAIL400", Some(1), None),
    ("FAIL500", Some(1), None),
    ("FAIL500-default-retries", Some(1), None),
    ("SIGINT-mid-tool", Some(1), None),
    ("SIGTERM-mid-tool", None, Some("SIGTERM")),
    ("SIGKILL-mid-tool", None, Some("SIGKILL")),
    ("native-SIGTERM-mid-tool", None, Some("SIGTERM")),
    ("native-SIGKILL-mid-tool", None, Some("SIGKILL")),
];

fn data(name: &str, ext: &str) -> Vec<u8> {
    let path = format!(
        "{}/tests/data/codex/{name}.{ext}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn stdout(name: &str) -> Vec<u8> {
    data(name, "stdout.jsonl")
}

/// The end the capture's process reached: its exit code or signal, its stderr.
fn recorded_end(name: &str) -> StreamEnd {
    let (_, code, signal) = CAPTURES
        .iter()
        .find(|(n, ..)| *n == name)
        .unwrap_or_else(|| panic!("no capture {name}"));
    StreamEnd::recorded(*code, *signal, &data(name, "stderr"))
}

fn map(name: &str) -> Vec<Message> {
    map_all(&stdout(name), recorded_end(name), MapperOptions::default())
}

fn exited(code: i32) -> StreamEnd {
    StreamEnd::eof(Some(ExitInfo {
        code: Some(code),
        signal: None,
    }))
}

fn killed(signal: &str) -> StreamEnd {
    StreamEnd::eof(Some(ExitInfo {
        code: None,
        signal: Some(signal.into()),
    }))
}

fn jsonl(events: &[Value]) -> Vec<u8> {
    events
        .iter()
        .map(|e| format!("{e}\n"))
        .collect::<String>()
        .into_bytes()
}

fn text_of(out: &[Message]) -> String {
    out.iter()
        .filter_map(|m| match m {
            Message::Assistant { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

fn terminal(out: &[Message]) -> &Message {
    out.last().expect("a terminal")
}

fn failure(out: &[Message]) -> &pi_wire::message::Failure {
    match terminal(out) {
        Message::TerminalFailed(f) => f,
        other => panic!("not terminal.failed: {other:?}"),
    }
}

/// The text of every completed `agent_message` item, in order, read with serde_json
/// (independently of the mapper).
fn agent_texts(stdout: &[u8]) -> Vec<String> {
    stdout
        .split(|&b| b == b'\n')
        .filter_map(|l| serde_json::from_slice::<Value>(l).ok())
        .filter(|e| e["type"] == "item.completed" && e["item"]["type"] == "agent_message")
        .filter_map(|e| e["item"]["text"].as_str().map(str::to_string))
        .collect()
}

// Hand-made events, in Codex's shapes.

fn thread(id: &str) -> Value {
    json!({"type":"thread.started","thread_id":id})
}

fn turn_started() -> Value {
    json!({"type":"turn.started"})
}

fn item(phase: &str, item: Value) -> Value {
    json!({"type":format!("item.{phase}"),"item":item})
}

fn agent(id: &str, text: &str) -> Value {
    item(
        "completed",
        json!({"id":id,"type":"agent_message","text":text}),
    )
}

fn command(phase: &str, id: &str, output: &str, exit: Option<i32>, status: &str) -> Value {
    item(
        phase,
        json!({"id":id,"type":"command_execution","command":"/bin/bash -lc 'ls'",
            "aggregated_output":output,"exit_code":exit,"status":status}),
    )
}

fn turn_completed(input: u64, cached: u64, output: u64) -> Value {
    json!({"type":"turn.completed","usage":{"input_tokens":input,"cached_input_tokens":cached,
        "cache_write_input_tokens":0,"output_tokens":output,"reasoning_output_tokens":0}})
}

fn turn_failed(message: &str) -> Value {
    json!({"type":"turn.failed","error":{"message":message}})
}

fn error(message: &str) -> Value {
    json!({"type":"error","message":message})
}

// ---------------------------------------------------------------------------
// 1. The captures: reviewed snapshots, invariants, and what each run did

#[test]
fn mapper_output_for_every_codex_capture() {
    for (name, code, signal) in CAPTURES {
        let raw = stdout(name);
        let out = map(name);
        check_structure(&out).unwrap_or_else(|e| panic!("{name}: {e}"));
        // Text invariant: the `assistant` texts are the agent_message items' texts.
        assert_eq!(text_of(&out), agent_texts(&raw).concat(), "{name}");
        // A real capture has no bad line.
        if let Message::TerminalFailed(f) = terminal(&out) {
            assert_eq!(f.invalid_lines, [], "{name}");
        }
        let end = match (code, signal) {
            (_, Some(sig)) => format!("killed by {sig}"),
            (Some(c), None) => format!("exit {c}"),
            (None, None) => "cancelled".to_string(),
        };
        insta::with_settings!({
            description => format!("real Codex 0.169.0 `exec --json`, {name}, {end}"),
            omit_expression => true,
        }, {
            insta::assert_yaml_snapshot!(*name, out);
        });
    }
}

#[test]
fn text_completes_with_the_answer_and_its_usage() {
    let out = map("text");
    let usage = Usage {
        input_tokens: 11,
        output_tokens: 7,
        cache_read_tokens: 0,
        cache_write_tokens: 0,
        total_tokens: 18,
        cost_usd: 0.0,
    };
    assert_eq!(
        out,
        [
            Message::SessionStarted {
                session_id: "01a21667-5a1d-7050-9a78-bcb7d2773f6b".into()
            },
            Message::Assistant {
                text: "Hello from the fake model.".into()
            },
            Message::Usage(usage.clone()),
            Message::TerminalCompleted {
                stop_reason: "none".into(),
                usage
            },
        ]
    );
}

#[test]
fn tool_is_a_command_execution_call_with_its_item_as_result() {
    let out = map("tool");
    let kinds: Vec<&str> = out.iter().map(Message::kind).collect();
    assert_eq!(
        kinds,
        [
            "session.started",
            "tool.call",
            "tool.completed",
            "assistant",
            "usage",
            "terminal.completed"
        ]
    );
    assert_eq!(
        out[1],
        Message::ToolCall {
            id: "item_1".into(),
            name: "command_execution".into(),
            arguments: json!({"command":"/bin/bash -lc 'echo hi-from-tool'"}).into(),
        }
    );
    let Message::ToolCompleted { id, result } = &out[2] else {
        panic!("{:?}", out[2])
    };
    assert_eq!(id, "item_1");
    let result = result.to_value();
    assert_eq!(result["aggregated_output"], "hi-from-tool\n");
    assert_eq!(result["exit_code"], 0);
    assert_eq!(result["status"], "completed");
}

#[test]
fn model_errors_fail_the_run_with_codexs_message() {
    // HTTP 400: the server's body, raw.
    let f = failure(&map("FAIL400")).clone();
    assert_eq!(f.reason, FailureReason::ModelError);
    assert_eq!(
        f.message,
        r#"{"error": {"message": "fake: bad request", "type": "invalid_request_error", "code": "bad"}}"#
    );
    assert_eq!(f.exit.as_ref().and_then(|e| e.code), Some(1));
    assert!(f.stderr_tail.is_some());
    // HTTP 500 with retries off: a generic message; the server's body is lost.
    let f = failure(&map("FAIL500")).clone();
    assert_eq!(f.reason, FailureReason::ModelError);
    assert_eq!(
        f.message,
        "We\u{2019}re currently experiencing high demand, which may cause temporary errors."
    );
}

#[test]
fn default_retries_are_five_retry_messages_then_the_failure() {
    let out = map("FAIL500-default-retries");
    let retries: Vec<(u32, u32, &str)> = out
        .iter()
        .filter_map(|m| match m {
            Message::RetryScheduled {
                source: RetrySource::Pi,
                attempt,
                max_attempts,
                delay_ms: 0,
                error,
            } => Some((*attempt, *max_attempts, error.as_str())),
            _ => None,
        })
        .collect();
    let reason =
        "We\u{2019}re currently experiencing high demand, which may cause temporary errors.";
    assert_eq!(retries, (1..=5).map(|n| (n, 5, reason)).collect::<Vec<_>>());
    assert_eq!(failure(&out).reason, FailureReason::ModelError);
    assert_eq!(failure(&out).message, reason);
}

#[test]
fn signals_mid_tool_leave_the_call_open_and_say_how_codex_ended() {
    for name in [
        "SIGINT-mid-tool",
        "SIGTERM-mid-tool",
        "SIGKILL-mid-tool",
        "native-SIGTERM-mid-tool",
        "native-SIGKILL-mid-tool",
    ] {
        let out = map(name);
        let kinds: Vec<&str> = out.iter().map(Message::kind).collect();
        assert_eq!(
            kinds,
            ["session.started", "tool.call", "terminal.failed"],
            "{name}"
        );
        let f = failure(&out);
        let (reason, message) = match name {
            // SIGINT: Codex interrupts the turn and exits 1; its stderr's last line says
            // it could not record the rollout.
            "SIGINT-mid-tool" => (
                FailureReason::ProcessExit,
                "codex exited with code 1: 2026-11-26T05:51:05.281250Z ERROR codex_core::session: failed to record rollout items: thread 01a21668-4cfa-7d01-b2fa-90babad0f722 not found".to_string(),
            ),
            _ => {
                let sig = if name.contains("SIGTERM") { "SIGTERM" } else { "SIGKILL" };
                (
                    FailureReason::ProcessSignal,
                    // Codex's start-up lines on stderr are not quoted.
                    format!("codex was killed by {sig} before the turn ended"),
                )
            }
        };
        assert_eq!(
            (f.reason, f.message.as_str()),
            (reason, message.as_str()),
            "{name}"
        );
    }
}

#[test]
fn sigterm_reported_as_exit_code_143_is_a_process_exit() {
    // The notes say "dies by SIGTERM (143)": a caller that sees the code (a shell's view,
    // or a wrapper that exits 128 + n) gets process_exit, not process_signal.
    let end = StreamEnd::recorded(Some(143), None, &data("SIGTERM-mid-tool", "stderr"));
    let out = map_all(&stdout("SIGTERM-mid-tool"), end, MapperOptions::default());
    let f = failure(&out);
    assert_eq!(f.reason, FailureReason::ProcessExit);
    assert_eq!(f.message, "codex exited with code 143");
}

#[test]
fn a_caller_that_cancels_mid_tool_gets_terminal_cancelled() {
    let exit = Some(ExitInfo {
        code: None,
        signal: Some("SIGTERM".into()),
    });
    let end = StreamEnd {
        exit: exit.clone(),
        stderr_tail: None,
        cause: EndCause::Cancelled,
    };
    let out = map_all(&stdout("SIGTERM-mid-tool"), end, MapperOptions::default());
    assert_eq!(out.last(), Some(&Message::TerminalCancelled { exit }));
    assert_eq!(out.len(), 3);
}

// ---------------------------------------------------------------------------
// 2. Rules on hand-made events

#[test]
fn an_unknown_item_type_is_noted_and_changes_nothing_else() {
    let lines = [
        thread("t"),
        turn_started(),
        item(
            "completed",
            json!({"id":"item_0","type":"plan","text":"1. do it"}),
        ),
        agent("item_1", "done"),
        turn_completed(3, 0, 1),
    ];
    let out = map_all(&jsonl(&lines), exited(0), MapperOptions::default());
    let kinds: Vec<&str> = out.iter().map(Message::kind).collect();
    assert_eq!(
        kinds,
        [
            "session.started",
            "assistant",
            "usage",
            "terminal.completed"
        ]
    );
    // Shown when the run fails for another reason.
    let out = map_all(&jsonl(&lines[..4]), exited(0), MapperOptions::default());
    let f = failure(&out);
    assert_eq!(f.reason, FailureReason::MissingTerminalEvent);
    assert_eq!(f.invalid_lines.len(), 1);
    assert_eq!(f.invalid_lines[0].line, 3);
    assert_eq!(
        f.invalid_lines[0].problem,
        "unknown item type \"plan\" (ignored)"
    );
}

#[test]
fn invalid_lines_are_recorded_and_bounded() {
    let mut data = jsonl(&[thread("t"), turn_started()]);
    data.extend_from_slice(b"not json\n[1]\n\n{\"no\":1}\n{\"type\":7}\n{\"type\":\"bogus\"}\n");
    data.extend_from_slice(
        b"{\"type\":\"item.completed\",\"item\":{\"type\":\"agent_message\",\"text\":\"x\"}}\n",
    );
    data.extend_from_slice(b"{\"type\":\"item.completed\",\"item\":{\"id\":\"i\",\"type\":\"agent_message\",\"text\":1}}\n");
    data.extend_from_slice(b"{\"type\":\"thread.started\"}\n");
    data.extend_from_slice(b"{\"type\":\"error\"}\n");
    data.extend_from_slice(b"{\"type\":\"item.completed\",\"item\":{\"id\":\"j\",\"type\":\"agent_message\",\"text\":\"\xff ok\"}}\n");
    data.extend_from_slice(&[b'{'; 300]);
    data.push(b'\n');
    let opts = MapperOptions {
        max_line_bytes: 256,
        ..MapperOptions::default()
    };
    let out = map_all(&data, exited(0), opts);
    assert_eq!(text_of(&out), "\u{fffd} ok");
    let f = failure(&out);
    let problems: Vec<(u64, &str)> = f
        .invalid_lines
        .iter()
        .map(|l| (l.line, l.problem.as_str()))
        .collect();
    assert_eq!(
        problems,
        [
            (3, "not JSON: expected ident at line 1 column 2"),
            (4, "not a JSON object"),
            (5, "empty line"),
            (6, "no \"type\""),
            (7, "\"type\" is not a string"),
            (8, "unknown event type \"bogus\" (ignored)"),
            (9, "item without a string `id`"),
            (10, "`agent_message` whose `text` is not a string"),
            (11, "`thread.started` without a string `thread_id`"),
            (12, "`error` without a string `message`"),
            (
                13,
                "invalid UTF-8, decoded lossily (U+FFFD); the record was used"
            ),
            (14, "over the line cap of 256 bytes"),
        ]
    );
    assert_eq!(f.invalid_lines[0].excerpt, "not json");
    assert_eq!(f.invalid_lines[11].bytes, 300);
    // A completed run drops them: they are diagnostics of a failure.
    let mut ok = jsonl(&[thread("t")]);
    ok.extend_from_slice(b"garbage\n");
    ok.extend_from_slice(&jsonl(&[turn_completed(1, 0, 1)]));
    assert!(matches!(
        terminal(&map_all(&ok, exited(0), MapperOptions::default())),
        Message::TerminalCompleted { .. }
    ));
    // Bounds: at most max_invalid_lines kept, the rest counted.
    let opts = MapperOptions {
        max_invalid_lines: 5,
        max_invalid_bytes: 3,
        ..MapperOptions::default()
    };
    let out = map_all("x\n".repeat(40).as_bytes(), exited(0), opts);
    let f = failure(&out);
    assert_eq!(f.invalid_lines.len(), 5);
    assert_eq!(f.invalid_lines_dropped, 35);
    assert!(
        f.invalid_lines
            .iter()
            .map(|l| l.excerpt.len())
            .sum::<usize>()
            <= 3
    );
}

#[test]
fn no_turn_end_at_eof_is_judged_by_the_exit() {
    let open = jsonl(&[
        thread("t"),
        turn_started(),
        command("started", "item_1", "", None, "in_progress"),
    ]);
    let f = |end: StreamEnd| failure(&map_all(&open, end, MapperOptions::default())).clone();
    let clean = f(exited(0));
    assert_eq!(clean.reason, FailureReason::MissingTerminalEvent);
    assert_eq!(
        clean.message,
        "codex's stdout ended without `turn.completed` or `turn.failed`"
    );
    let code = f(StreamEnd {
        stderr_tail: Some("first\nError: boom\n\n".into()),
        ..exited(2)
    });
    assert_eq!(code.reason, FailureReason::ProcessExit);
    assert_eq!(code.message, "codex exited with code 2: Error: boom");
    assert_eq!(code.stderr_tail.as_deref(), Some("first\nError: boom\n\n"));
    let sig = f(killed("SIGKILL"));
    assert_eq!(sig.reason, FailureReason::ProcessSignal);
    assert_eq!(
        sig.message,
        "codex was killed by SIGKILL before the turn ended"
    );
    assert_eq!(
        sig.exit,
        Some(ExitInfo {
            code: None,
            signal: Some("SIGKILL".into())
        })
    );
    // Codex's start-up lines are not quoted, whatever comes before them.
    let noise = f(StreamEnd {
        stderr_tail: Some("Error: real cause\nWARNING: proceeding, even though we could not create PATH aliases: x\nReading additional input from stdin...\n".into()),
        ..exited(1)
    });
    assert_eq!(noise.message, "codex exited with code 1: Error: real cause");
    // A fatal `error` event with no `turn.failed` after it: the message says it.
    let mut with_error = open.clone();
    with_error.extend_from_slice(&jsonl(&[error("stream disconnected")]));
    let out = map_all(&with_error, exited(1), MapperOptions::default());
    assert_eq!(
        failure(&out).message,
        "codex exited with code 1: stream disconnected"
    );
    // Empty stdout: still exactly one terminal.
    assert_eq!(map_all(b"", exited(0), MapperOptions::default()).len(), 1);
    // The caller's failure wins over everything.
    let timeout = StreamEnd {
        exit: None,
        stderr_tail: None,
        cause: EndCause::Failed {
            reason: FailureReason::Timeout,
            message: "no output for 60 s".into(),
        },
    };
    assert_eq!(f(timeout).reason, FailureReason::Timeout);
}

#[test]
fn the_turns_end_decides_whatever_the_exit() {
    let done = jsonl(&[thread("t"), agent("item_0", "hi"), turn_completed(5, 0, 1)]);
    let out = map_all(&done, killed("SIGTERM"), MapperOptions::default());
    assert!(matches!(terminal(&out), Message::TerminalCompleted { .. }));
    // turn.failed without a message: the fatal error event before it, else a default.
    let failed = jsonl(&[
        thread("t"),
        error("boom"),
        json!({"type":"turn.failed","error":{}}),
    ]);
    let out = map_all(&failed, exited(1), MapperOptions::default());
    assert_eq!(
        (failure(&out).reason, failure(&out).message.as_str()),
        (FailureReason::ModelError, "boom")
    );
    let out = map_all(
        &jsonl(&[json!({"type":"turn.failed"})]),
        exited(1),
        MapperOptions::default(),
    );
    assert_eq!(
        failure(&out).message,
        "the turn failed (turn.failed has no message)"
    );
    // A turn.started after the end reopens the run: an EOF now has no end.
    let reopened = jsonl(&[thread("t"), turn_completed(1, 0, 1), turn_started()]);
    let mut mapper = CodexMapper::new(MapperOptions::default());
    let mut out = Vec::new();
    mapper.push(&reopened[..reopened.len() - 24], &mut out);
    assert!(mapper.is_settled());
    mapper.push(&reopened[reopened.len() - 24..], &mut out);
    assert!(!mapper.is_settled());
    mapper.finish(exited(0), &mut out);
    assert_eq!(failure(&out).reason, FailureReason::MissingTerminalEvent);
    // Two turns that completed: their usage is summed in the terminal.
    let two = jsonl(&[
        thread("t"),
        turn_started(),
        turn_completed(10, 4, 2),
        turn_started(),
        turn_completed(20, 0, 3),
    ]);
    let out = map_all(&two, exited(0), MapperOptions::default());
    let Message::TerminalCompleted { usage, .. } = terminal(&out) else {
        panic!("{out:?}")
    };
    assert_eq!(
        (
            usage.input_tokens,
            usage.cache_read_tokens,
            usage.output_tokens,
            usage.total_tokens
        ),
        (26, 4, 5, 35)
    );
}

#[test]
fn usage_counts_cached_input_apart() {
    let line = json!({"type":"turn.completed","usage":{"input_tokens":100,"cached_input_tokens":60,
        "cache_write_input_tokens":10,"output_tokens":7,"reasoning_output_tokens":3}});
    let out = map_all(&jsonl(&[line]), exited(0), MapperOptions::default());
    assert_eq!(
        out[0],
        Message::Usage(Usage {
            input_tokens: 30,
            output_tokens: 7,
            cache_read_tokens: 60,
            cache_write_tokens: 10,
            total_tokens: 107,
            cost_usd: 0.0,
        })
    );
    // Missing or malformed numbers count as 0; a cached count above the input saturates.
    let line =
        json!({"type":"turn.completed","usage":{"input_tokens":"x","cached_input_tokens":5}});
    let Message::Usage(u) = &map_all(&jsonl(&[line]), exited(0), MapperOptions::default())[0]
    else {
        panic!()
    };
    assert_eq!(
        (u.input_tokens, u.cache_read_tokens, u.total_tokens),
        (0, 5, 0)
    );
}

#[test]
fn reconnect_errors_are_retries_and_others_are_the_fatal_error() {
    let lines = [
        error("Reconnecting... 2/5 (stream closed before response.completed)"),
        error("Reconnecting... 3/5"),
        error("Reconnecting... x/5 (not a count)"),
    ];
    let out = map_all(&jsonl(&lines), exited(1), MapperOptions::default());
    assert_eq!(
        out[..2],
        [
            Message::RetryScheduled {
                source: RetrySource::Pi,
                attempt: 2,
                max_attempts: 5,
                delay_ms: 0,
                error: "stream closed before response.completed".into()
            },
            Message::RetryScheduled {
                source: RetrySource::Pi,
                attempt: 3,
                max_attempts: 5,
                delay_ms: 0,
                error: "unknown".into()
            }
        ]
    );
    assert_eq!(out.len(), 3);
    assert_eq!(
        failure(&out).message,
        "codex exited with code 1: Reconnecting... x/5 (not a count)"
    );
}

#[test]
fn agent_text_continues_per_item_and_divergence_is_noted() {
    // Were a release to stream the item's text: only what is new comes out.
    let lines = [
        item(
            "started",
            json!({"id":"a","type":"agent_message","text":"Hel"}),
        ),
        item(
            "updated",
            json!({"id":"a","type":"agent_message","text":"Hello"}),
        ),
        agent("a", "Hello!"),
        agent("a", "Hello!"),
        agent("b", ""),
        agent("c", "Second."),
        // Does not continue "Second.": nothing, noted.
        agent("c", "Other"),
    ];
    let out = map_all(&jsonl(&lines), exited(0), MapperOptions::default());
    let texts: Vec<&str> = out
        .iter()
        .filter_map(|m| match m {
            Message::Assistant { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(texts, ["Hel", "lo", "!", "Second."]);
    let f = failure(&out);
    assert_eq!(f.invalid_lines.len(), 1);
    assert_eq!(f.invalid_lines[0].line, 7);
    assert!(f.invalid_lines[0].problem.contains("does not continue"));
}

#[test]
fn reasoning_gives_one_thought_at_completion_and_open_ones_at_finish() {
    let reasoning = |phase: &str, id: &str, text: &str| {
        item(phase, json!({"id":id,"type":"reasoning","text":text}))
    };
    let lines = [
        reasoning("started", "r0", "thin"),
        reasoning("completed", "r0", "thinking"),
        reasoning("completed", "r0", "again"),
        reasoning("completed", "r1", ""),
        agent("a", "answer"),
        reasoning("updated", "r2", "unfinished"),
    ];
    let out = map_all(&jsonl(&lines), killed("SIGTERM"), MapperOptions::default());
    let kinds: Vec<(&str, String)> = out
        .iter()
        .map(|m| {
            let t = match m {
                Message::Assistant { text } | Message::AssistantThought { text } => text.clone(),
                _ => String::new(),
            };
            (m.kind(), t)
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("assistant.thought", "thinking".to_string()),
            ("assistant", "answer".to_string()),
            ("assistant.thought", "unfinished".to_string()),
            ("terminal.failed", String::new()),
        ]
    );
}

#[test]
fn tool_items_call_update_and_end_once() {
    let lines = [
        command("started", "c1", "", None, "in_progress"),
        command("updated", "c1", "a", None, "in_progress"),
        command("updated", "c1", "a", None, "in_progress"),
        command("updated", "c1", "ab", None, "in_progress"),
        command("completed", "c1", "ab\nexit 2", Some(2), "failed"),
        command("completed", "c1", "late", Some(0), "completed"),
        command("completed", "c2", "", None, "declined"),
        // A file change is only reported completed: call and end at once.
        item(
            "completed",
            json!({"id":"f1","type":"file_change","changes":[{"path":"a.txt","kind":"add"}],"status":"completed"}),
        ),
        item(
            "started",
            json!({"id":"m1","type":"mcp_tool_call","server":"s","tool":"t","arguments":{"x":1},"result":null,"error":null,"status":"in_progress"}),
        ),
        item(
            "completed",
            json!({"id":"w1","type":"web_search","id_":"ws","query":"rust","action":{"type":"search"}}),
        ),
        // Codex's warnings and its plan: nothing.
        item(
            "completed",
            json!({"id":"e1","type":"error","message":"Model metadata not found"}),
        ),
        item(
            "started",
            json!({"id":"p1","type":"todo_list","items":[{"text":"x","completed":false}]}),
        ),
    ];
    let out = map_all(&jsonl(&lines), exited(0), MapperOptions::default());
    check_structure(&out).unwrap();
    let summary: Vec<(&str, String)> = out
        .iter()
        .map(|m| match m {
            Message::ToolCall {
                id,
                name,
                arguments,
            } => (m.kind(), format!("{id} {name} {}", arguments.to_value())),
            Message::ToolUpdate { id, partial } => (
                m.kind(),
                format!("{id} {}", partial.to_value()["aggregated_output"]),
            ),
            Message::ToolCompleted { id, result } => {
                (m.kind(), format!("{id} {}", result.to_value()["status"]))
            }
            Message::ToolFailed { id, error } => {
                (m.kind(), format!("{id} {}", error.to_value()["status"]))
            }
            _ => (m.kind(), String::new()),
        })
        .collect();
    let s = |k: &'static str, v: &str| (k, v.to_string());
    assert_eq!(
        summary,
        [
            s(
                "tool.call",
                r#"c1 command_execution {"command":"/bin/bash -lc 'ls'"}"#
            ),
            s("tool.update", r#"c1 "a""#),
            s("tool.update", r#"c1 "ab""#),
            s("tool.failed", r#"c1 "failed""#),
            s(
                "tool.call",
                r#"c2 command_execution {"command":"/bin/bash -lc 'ls'"}"#
            ),
            s("tool.failed", r#"c2 "declined""#),
            s(
                "tool.call",
                r#"f1 file_change {"changes":[{"kind":"add","path":"a.txt"}]}"#
            ),
            s("tool.completed", r#"f1 "completed""#),
            s(
                "tool.call",
                r#"m1 mcp_tool_call {"arguments":{"x":1},"server":"s","tool":"t"}"#
            ),
            s(
                "tool.call",
                r#"w1 web_search {"action":{"type":"search"},"query":"rust"}"#
            ),
            s("tool.completed", "w1 null"),
            s("terminal.failed", ""),
        ]
    );
}

#[test]
fn sessions_once_and_resumed_on_request() {
    let lines = [thread("a"), thread("a"), thread("b")];
    let out = map_all(&jsonl(&lines), exited(0), MapperOptions::default());
    assert_eq!(
        out[0],
        Message::SessionStarted {
            session_id: "a".into()
        }
    );
    assert_eq!(out.len(), 2);
    let f = failure(&out);
    assert_eq!(f.invalid_lines.len(), 1);
    assert_eq!(f.invalid_lines[0].line, 3);
    let resumed = MapperOptions {
        resumed_session: true,
        ..MapperOptions::default()
    };
    let out = map_all(&jsonl(&lines[..1]), exited(0), resumed);
    assert_eq!(
        out[0],
        Message::SessionResumed {
            session_id: "a".into()
        }
    );
}

#[test]
fn finish_once_push_after_finish_ignored_and_crlf_the_same() {
    let data = stdout("tool");
    let want = map_all(&data, exited(0), MapperOptions::default());
    let mut mapper = CodexMapper::new(MapperOptions::default());
    let mut out = Vec::new();
    mapper.push(&data, &mut out);
    assert!(
        !out.iter().any(Message::is_terminal),
        "push gave a terminal"
    );
    mapper.finish(exited(0), &mut out);
    mapper.finish(exited(0), &mut out);
    mapper.push(&data, &mut out);
    assert_eq!(out, want);
    let crlf = String::from_utf8(data.clone())
        .unwrap()
        .replace('\n', "\r\n");
    assert_eq!(
        map_all(crlf.as_bytes(), exited(0), MapperOptions::default()),
        want
    );
    assert_eq!(
        map_all(&data[..data.len() - 1], exited(0), MapperOptions::default()),
        want
    );
}

// ---------------------------------------------------------------------------
// 3. Properties

fn map_chunked(data: &[u8], cuts: &[usize], end: StreamEnd, opts: MapperOptions) -> Vec<Message> {
    let mut cuts: Vec<usize> = cuts.iter().map(|&c| c.min(data.len())).collect();
    cuts.sort_unstable();
    let mut mapper = CodexMapper::new(opts);
    let mut out = Vec::new();
    let mut at = 0;
    for c in cuts {
        mapper.push(&data[at..c], &mut out);
        at = c;
        assert!(
            !out.iter().any(Message::is_terminal),
            "push gave a terminal"
        );
    }
    mapper.push(&data[at..], &mut out);
    mapper.finish(end, &mut out);
    out
}

fn small_opts() -> MapperOptions {
    MapperOptions {
        max_line_bytes: 4096,
        max_invalid_lines: 8,
        max_invalid_bytes: 512,
        ..MapperOptions::default()
    }
}

fn end_strategy() -> impl Strategy<Value = StreamEnd> {
    prop_oneof![
        Just(exited(0)),
        Just(exited(1)),
        Just(killed("SIGTERM")),
        Just(StreamEnd::eof(None)),
        Just(StreamEnd {
            exit: None,
            stderr_tail: Some("bye".into()),
            cause: EndCause::Cancelled
        }),
    ]
}

fn event_strategy() -> impl Strategy<Value = Value> {
    let id = || select(vec!["i1", "i2", "i3"]);
    let s = || select(vec!["", "a", "ab", "\u{e9}\u{2028}"]);
    let phase = || select(vec!["started", "updated", "completed"]);
    let status = || select(vec!["in_progress", "completed", "failed", "declined"]);
    prop_oneof![
        select(vec!["t1", "t2"]).prop_map(thread),
        Just(turn_started()),
        (0u64..3, 0u64..3, 0u64..3).prop_map(|(a, b, c)| turn_completed(a, b, c)),
        s().prop_map(turn_failed),
        select(vec![
            "boom",
            "Reconnecting... 1/5 (x)",
            "Reconnecting... 9/9"
        ])
        .prop_map(error),
        (phase(), id(), s())
            .prop_map(|(p, i, t)| item(p, json!({"id":i,"type":"agent_message","text":t}))),
        (phase(), id(), s())
            .prop_map(|(p, i, t)| item(p, json!({"id":i,"type":"reasoning","text":t}))),
        (phase(), id(), s(), status()).prop_map(|(p, i, o, st)| command(p, i, o, None, st)),
        (phase(), id()).prop_map(|(p, i)| item(p, json!({"id":i,"type":"mystery"}))),
    ]
}

fn real_lines() -> Vec<Vec<u8>> {
    CAPTURES
        .iter()
        .flat_map(|(n, ..)| {
            stdout(n)
                .split(|&b| b == b'\n')
                .filter(|l| !l.is_empty())
                .map(<[u8]>::to_vec)
                .collect::<Vec<_>>()
        })
        .collect()
}

fn line_strategy() -> impl Strategy<Value = Vec<u8>> {
    let real = real_lines();
    prop_oneof![
        4 => event_strategy().prop_map(|e| e.to_string().into_bytes()),
        1 => proptest::collection::vec(any::<u8>(), 0..40),
        1 => select(real.clone()),
        1 => (select(real), any::<Index>()).prop_map(|(l, i)| l[..i.index(l.len() + 1)].to_vec()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// Arbitrary bytes: no panic, one terminal last, and the chunking changes nothing.
    #[test]
    fn codex_arbitrary_bytes(
        data in proptest::collection::vec(any::<u8>(), 0..600),
        cuts in proptest::collection::vec(any::<usize>(), 0..8),
        end in end_strategy(),
    ) {
        let whole = map_all(&data, end.clone(), small_opts());
        check_structure(&whole).map_err(TestCaseError::fail)?;
        prop_assert_eq!(map_chunked(&data, &cuts, end, small_opts()), whole);
    }

    /// Streams of events (hand-made shapes, real lines, cut lines, garbage): the structure
    /// rules, the bounds on bad lines, and the same output in any chunking.
    #[test]
    fn codex_event_streams(
        lines in proptest::collection::vec(line_strategy(), 0..40),
        cuts in proptest::collection::vec(any::<usize>(), 0..8),
        end in end_strategy(),
    ) {
        let mut data = lines.join(&b'\n');
        data.push(b'\n');
        let opts = small_opts();
        let whole = map_all(&data, end.clone(), opts.clone());
        check_structure(&whole).map_err(TestCaseError::fail)?;
        if let Some(Message::TerminalFailed(f)) = whole.last() {
            let bytes: usize = f.invalid_lines.iter().map(|l| l.excerpt.len()).sum();
            prop_assert!(f.invalid_lines.len() <= opts.max_invalid_lines);
            prop_assert!(bytes <= opts.max_invalid_bytes);
        }
        prop_assert_eq!(map_chunked(&data, &cuts, end, opts), whole);
    }
}
