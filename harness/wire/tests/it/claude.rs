//! Tests of the Claude Code stream-json mapper (`pi_wire::claude`): the exact normalized
//! messages of real Claude Code 2.1.330 captures (`tests/data/claude/`, see its README),
//! hand-made records for the rules the captures do not reach, and property tests (no
//! panic, the same output whatever the chunking, each run ending in exactly one terminal).
//!
//! The expected messages were written from the records of each capture, not from the
//! mapper's output.

use pi_wire::claude::{map_all, ClaudeMapper};
use pi_wire::mapper::{EndCause, MapperOptions, StreamEnd};
use pi_wire::message::{
    ExitInfo, Failure, FailureReason, InvalidLine, Message, RetrySource, Usage,
};
use proptest::prelude::*;
use proptest::sample::{select, Index};
use serde_json::{json, Value};

use pi_testkit::invariants::check_structure;

// ---------------------------------------------------------------------------
// Helpers

const FIXTURES: &[&str] = &[
    "01_text",
    "02_thinking",
    "03_tool_allowed",
    "04_tool_denied",
    "04c_tool_deny_interrupt",
    "05a_http401",
    "05k_cut_stream_slow",
    "06_interrupt_mid_text",
    "07_sigterm_mid_tool",
    "08b_two_turns_queued",
    "13_no_partial_messages",
];

fn fixture(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/tests/data/claude/{name}.stdout.jsonl",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn exited(code: i32) -> StreamEnd {
    StreamEnd::eof(Some(ExitInfo {
        code: Some(code),
        signal: None,
    }))
}

/// How each capture's process ended (`captures/SUMMARY.md`).
fn recorded_end(name: &str) -> StreamEnd {
    match name {
        "04c_tool_deny_interrupt" | "05a_http401" => exited(1),
        "07_sigterm_mid_tool" => exited(143),
        _ => exited(0),
    }
}

fn map(name: &str, end: StreamEnd) -> Vec<Message> {
    map_all(&fixture(name), end, MapperOptions::default())
}

fn started(id: &str) -> Message {
    Message::SessionStarted {
        session_id: id.into(),
    }
}

fn text(t: &str) -> Message {
    Message::Assistant { text: t.into() }
}

fn thought(t: &str) -> Message {
    Message::AssistantThought { text: t.into() }
}

fn call(id: &str, command: &str) -> Message {
    Message::ToolCall {
        id: id.into(),
        name: "Bash".into(),
        arguments: json!({ "command": command }).into(),
    }
}

fn done(id: &str, result: Value) -> Message {
    Message::ToolCompleted {
        id: id.into(),
        result: result.into(),
    }
}

fn tool_failed(id: &str, error: Value) -> Message {
    Message::ToolFailed {
        id: id.into(),
        error: error.into(),
    }
}

fn usage(input: u64, output: u64, cost: f64) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: output,
        cache_read_tokens: 0,
        cache_write_tokens: 0,
        total_tokens: input + output,
        cost_usd: cost,
    }
}

/// The `usage` message and `terminal.completed` a successful `result` gives.
fn completed(u: Usage) -> [Message; 2] {
    [
        Message::Usage(u.clone()),
        Message::TerminalCompleted {
            stop_reason: "end_turn".into(),
            usage: u,
        },
    ]
}

fn failure(reason: FailureReason, message: &str) -> Failure {
    Failure {
        reason,
        message: message.into(),
        exit: None,
        stderr_tail: None,
        invalid_lines: Vec::new(),
        invalid_lines_dropped: 0,
    }
}

/// Split the output into runs: each ends at a terminal; a tail without one is a run too.
fn runs(out: &[Message]) -> Vec<Vec<Message>> {
    let mut runs = vec![Vec::new()];
    for m in out {
        runs.last_mut().expect("one run at least").push(m.clone());
        if m.is_terminal() {
            runs.push(Vec::new());
        }
    }
    if runs.last().is_some_and(Vec::is_empty) {
        runs.pop();
    }
    runs
}

/// Every run keeps the structure rules (one terminal, last; tools; no empty text; at most
/// one session message), and the output ends with a terminal.
fn check_runs(out: &[Message]) -> Result<(), String> {
    if !out.last().is_some_and(Message::is_terminal) {
        return Err(format!(
            "the output does not end with a terminal: {:?}",
            out.last()
        ));
    }
    for (i, run) in runs(out).iter().enumerate() {
        check_structure(run).map_err(|e| format!("run {}: {e}", i + 1))?;
    }
    Ok(())
}

fn jsonl(records: &[Value]) -> Vec<u8> {
    records
        .iter()
        .map(|r| format!("{r}\n"))
        .collect::<String>()
        .into_bytes()
}

// Hand-made records, in Claude Code's shapes.

fn init(session: &str) -> Value {
    json!({"type":"system","subtype":"init","session_id":session,"cwd":"/w"})
}

fn se(msg: &str, event: Value) -> Value {
    json!({"type":"stream_event","event":event,"session_id":"s","parent_tool_use_id":null,"api_message_id":msg})
}

fn se_start(msg: &str) -> Value {
    se(
        msg,
        json!({"type":"message_start","message":{"id":msg,"content":[]}}),
    )
}

fn se_text(msg: &str, index: u64, t: &str) -> Value {
    se(
        msg,
        json!({"type":"content_block_delta","index":index,"delta":{"type":"text_delta","text":t}}),
    )
}

fn se_thinking(msg: &str, index: u64, t: &str) -> Value {
    se(
        msg,
        json!({"type":"content_block_delta","index":index,"delta":{"type":"thinking_delta","thinking":t}}),
    )
}

fn se_stop(msg: &str) -> Value {
    se(msg, json!({"type":"message_stop"}))
}

fn assistant(msg: &str, blocks: Value) -> Value {
    json!({"type":"assistant","message":{"id":msg,"role":"assistant","content":blocks},"parent_tool_use_id":null,"session_id":"s"})
}

fn text_block(t: &str) -> Value {
    json!({"type":"text","text":t})
}

fn thinking_block(t: &str) -> Value {
    json!({"type":"thinking","thinking":t,"signature":"sig"})
}

fn tool_use(id: &str, command: &str) -> Value {
    json!({"type":"tool_use","id":id,"name":"Bash","input":{"command":command}})
}

fn tool_result(id: &str, content: Value, is_error: bool) -> Value {
    json!({"type":"user","message":{"role":"user","content":[
        {"type":"tool_result","tool_use_id":id,"content":content,"is_error":is_error}]},
        "parent_tool_use_id":null,"session_id":"s"})
}

fn result_ok(input: u64, output: u64, cost: f64) -> Value {
    json!({"type":"result","subtype":"success","is_error":false,"stop_reason":"end_turn",
        "terminal_reason":"completed","result":"…","total_cost_usd":cost,
        "usage":{"input_tokens":input,"output_tokens":output,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}})
}

// ---------------------------------------------------------------------------
// 1. The captures, message by message

#[test]
fn text_turn() {
    let mut want = vec![
        started("8070c0de-ee68-446d-83cc-74f1dd4d2a6c"),
        text("Hello "),
        text("there."),
    ];
    want.extend(completed(usage(100, 2, 0.00044)));
    assert_eq!(map("01_text", exited(0)), want);
}

#[test]
fn thinking_comes_after_the_text_of_its_message() {
    let mut want = vec![
        started("7b309d6c-e823-4a27-a952-1f7fe4096fbc"),
        text("The answer "),
        text("is 4."),
        thought("Let me think."),
    ];
    want.extend(completed(usage(100, 4, 0.00048)));
    assert_eq!(map("02_thinking", exited(0)), want);
}

#[test]
fn tools_allowed_keep_the_models_input() {
    // The host allowed toolu_03 `touch y` with updatedInput `touch z`: the call says what
    // the model asked for.
    let mut want = vec![
        started("6d7c2c46-c6db-4a05-8dfc-debc95c718d5"),
        text("Running echo."),
        call("toolu_01", "echo hi"),
        done("toolu_01", json!("hi")),
        text("Now touch."),
        call("toolu_02", "touch x"),
        done("toolu_02", json!("(Bash completed with no output)")),
        call("toolu_03", "touch y"),
        done("toolu_03", json!("(Bash completed with no output)")),
        text("Done."),
    ];
    want.extend(completed(usage(400, 6, 0.00172)));
    assert_eq!(map("03_tool_allowed", exited(0)), want);
}

#[test]
fn tool_denied_fails_the_tool_not_the_turn() {
    let mut want = vec![
        started("ea791f44-a597-4b48-8206-90e4f5071686"),
        text("Touching."),
        call("toolu_01", "touch x"),
        tool_failed(
            "toolu_01",
            json!("Denied by host: the tool runs elsewhere."),
        ),
        text("It was denied."),
    ];
    want.extend(completed(usage(200, 3, 0.0008600000000000001)));
    assert_eq!(map("04_tool_denied", exited(0)), want);
}

#[test]
fn deny_with_interrupt_is_an_aborted_turn() {
    let rejection =
        "The user doesn't want to proceed with this tool use. The tool use was rejected \
        (eg. if it was a file edit, the new_string was NOT written to the file). STOP what you are \
        doing and wait for the user to tell you how to proceed.";
    let want = vec![
        started("aec48683-ad11-4d8f-86b2-abc512733d8d"),
        text("Touching."),
        call("toolu_01", "touch x"),
        tool_failed("toolu_01", json!(rejection)),
        // `[Request interrupted by user for tool use]`: nothing.
        Message::Usage(usage(100, 2, 0.00044)),
        Message::TerminalFailed(failure(FailureReason::Aborted, "aborted_tools")),
    ];
    assert_eq!(map("04c_tool_deny_interrupt", exited(1)), want);
}

#[test]
fn api_error_after_a_retry() {
    // The synthetic assistant record's text is Claude's error text: it is the terminal's
    // message, not an answer.
    let want = vec![
        started("55a6dc77-f5de-472a-8ba3-45205422c593"),
        Message::RetryScheduled {
            source: RetrySource::Pi,
            attempt: 1,
            max_attempts: 1,
            delay_ms: 567,
            error: "401: authentication_failed".into(),
        },
        Message::Usage(usage(0, 0, 0.0)),
        Message::TerminalFailed(failure(
            FailureReason::ModelError,
            "Invalid API key · Fix external API key",
        )),
    ];
    assert_eq!(map("05a_http401", exited(1)), want);
}

#[test]
fn a_cut_stream_keeps_the_text_it_streamed_and_marks_the_retry() {
    let mut want = vec![
        started("2fde028d-fca9-491f-b0a7-c04910e26579"),
        text("partial "),
        Message::RetryScheduled {
            source: RetrySource::Pi,
            attempt: 1,
            max_attempts: 1,
            delay_ms: 566,
            error: "stream: unknown".into(),
        },
        text("second try"),
    ];
    want.extend(completed(usage(200, 2, 0.00088)));
    assert_eq!(map("05k_cut_stream_slow", exited(0)), want);
}

#[test]
fn interrupt_mid_text_then_a_second_turn() {
    // Turn 1: the aborted assistant record repeats what the deltas streamed (nothing more);
    // its result says 0 tokens and a cost of 0.0005. Turn 2 is the same session (no second
    // session.started) and Claude's running cost total 0.00092 includes turn 1's 0.0005.
    let mut want = vec![
        started("bac695f6-a73b-49da-8fe6-65b6f053129f"),
        text("word "),
        text("word "),
        text("word "),
        Message::Usage(usage(0, 0, 0.0005)),
        Message::TerminalFailed(failure(FailureReason::Aborted, "aborted_streaming")),
        text("after interrupt"),
    ];
    want.extend(completed(usage(100, 1, 0.00092 - 0.0005)));
    let out = map("06_interrupt_mid_text", exited(0));
    assert_eq!(out, want);
    assert_eq!(runs(&out).len(), 2);
}

#[test]
fn two_queued_turns_are_two_runs() {
    let mut want = vec![
        started("2b24eb9b-254e-466b-ab2d-11abb2738a9f"),
        text("First."),
    ];
    want.extend(completed(usage(100, 1, 0.00042)));
    want.push(text("Second."));
    // total_cost_usd says 0.00084 (both turns).
    want.extend(completed(usage(100, 1, 0.00084 - 0.00042)));
    let mut mapper = ClaudeMapper::new(MapperOptions::default());
    let mut out = Vec::new();
    mapper.push(&fixture("08b_two_turns_queued"), &mut out);
    assert_eq!(mapper.turns_finished(), 2);
    mapper.finish(exited(0), &mut out);
    assert_eq!(out, want, "finish adds nothing after the last result");
}

#[test]
fn without_partial_messages_the_records_carry_everything() {
    // msg_1: thinking, text, tool_use; its thinking comes out when the user record (the
    // tool result) shows the message is over; msg_2 ends at the result.
    let mut want = vec![
        started("04ac13de-f7f5-4ed5-b407-254fe4ae6aaa"),
        text("Run."),
        call("toolu_01", "echo hi"),
        thought("hm"),
        done("toolu_01", json!("hi")),
        text("ok"),
    ];
    want.extend(completed(usage(200, 4, 0.00088)));
    assert_eq!(map("13_no_partial_messages", exited(0)), want);
}

fn sigterm_prefix() -> Vec<Message> {
    vec![
        started("2d320ec5-8a3f-4f98-8a68-3602aee7ad8f"),
        text("Sleeping."),
        call("toolu_01", "sh slow.sh"),
        tool_failed("toolu_01", json!("Exit code 137")),
        // `system/status` (a request about to be made), then stdout ends: no result.
    ]
}

#[test]
fn sigterm_mid_tool_as_recorded_exit_143() {
    // Claude handles SIGTERM and exits 143 itself: the capture has an exit code.
    let mut want = sigterm_prefix();
    want.push(Message::TerminalFailed(Failure {
        exit: Some(ExitInfo {
            code: Some(143),
            signal: None,
        }),
        ..failure(FailureReason::ProcessExit, "claude exited with code 143")
    }));
    assert_eq!(map("07_sigterm_mid_tool", exited(143)), want);
}

#[test]
fn sigterm_mid_tool_killed_by_the_signal() {
    let end = StreamEnd {
        exit: Some(ExitInfo {
            code: None,
            signal: Some("SIGTERM".into()),
        }),
        stderr_tail: Some("last words\n\n".into()),
        cause: EndCause::Eof,
    };
    let mut want = sigterm_prefix();
    want.push(Message::TerminalFailed(Failure {
        exit: end.exit.clone(),
        stderr_tail: end.stderr_tail.clone(),
        ..failure(
            FailureReason::ProcessSignal,
            "claude was killed by SIGTERM before the turn ended: last words",
        )
    }));
    assert_eq!(map("07_sigterm_mid_tool", end), want);
}

#[test]
fn sigterm_mid_tool_cancelled_or_failed_by_the_caller() {
    let exit = Some(ExitInfo {
        code: Some(143),
        signal: None,
    });
    let mut want = sigterm_prefix();
    want.push(Message::TerminalCancelled { exit: exit.clone() });
    let cancelled = StreamEnd {
        exit: exit.clone(),
        stderr_tail: None,
        cause: EndCause::Cancelled,
    };
    assert_eq!(map("07_sigterm_mid_tool", cancelled), want);

    let timeout = StreamEnd {
        exit: exit.clone(),
        stderr_tail: None,
        cause: EndCause::Failed {
            reason: FailureReason::Timeout,
            message: "no output for 60 s".into(),
        },
    };
    let mut want = sigterm_prefix();
    want.push(Message::TerminalFailed(Failure {
        exit,
        ..failure(FailureReason::Timeout, "no output for 60 s")
    }));
    assert_eq!(map("07_sigterm_mid_tool", timeout), want);
}

#[test]
fn a_stdout_cut_at_exit_0_is_a_missing_terminal_event() {
    let mut want = sigterm_prefix();
    want.push(Message::TerminalFailed(Failure {
        exit: Some(ExitInfo {
            code: Some(0),
            signal: None,
        }),
        ..failure(
            FailureReason::MissingTerminalEvent,
            "claude's stdout ended without the `result` record that ends a turn",
        )
    }));
    assert_eq!(map("07_sigterm_mid_tool", exited(0)), want);
}

#[test]
fn every_capture_keeps_the_structure_rules_per_run() {
    for name in FIXTURES {
        let data = fixture(name);
        let out = map_all(&data, recorded_end(name), MapperOptions::default());
        check_runs(&out).unwrap_or_else(|e| panic!("{name}: {e}"));
        let results = data
            .split(|&b| b == b'\n')
            .filter_map(|l| serde_json::from_slice::<Value>(l).ok())
            .filter(|r| r["type"] == "result")
            .count();
        let open_at_end = *name == "07_sigterm_mid_tool";
        assert_eq!(
            runs(&out).len(),
            results + usize::from(open_at_end),
            "{name}"
        );
        // No bad line in a real capture: a failed terminal carries none.
        for m in &out {
            if let Message::TerminalFailed(f) = m {
                assert_eq!(f.invalid_lines, [], "{name}");
            }
        }
    }
}

// ---------------------------------------------------------------------------
// 2. Rules on hand-made records

#[test]
fn no_output_at_all_still_ends_with_one_terminal() {
    let want = |reason, message: &str, code| {
        vec![Message::TerminalFailed(Failure {
            exit: Some(ExitInfo {
                code: Some(code),
                signal: None,
            }),
            ..failure(reason, message)
        })]
    };
    assert_eq!(
        map_all(b"", exited(0), MapperOptions::default()),
        want(
            FailureReason::MissingTerminalEvent,
            "claude's stdout ended without the `result` record that ends a turn",
            0
        )
    );
    let end = StreamEnd {
        stderr_tail: Some("Error: Input must be provided either through stdin or as a prompt argument when using --print\n".into()),
        ..exited(1)
    };
    let mut got = map_all(b"", end.clone(), MapperOptions::default());
    let Some(Message::TerminalFailed(f)) = got.pop() else {
        panic!("no terminal.failed")
    };
    assert!(got.is_empty());
    assert_eq!(f.reason, FailureReason::ProcessExit);
    assert_eq!(
        f.message,
        "claude exited with code 1: Error: Input must be provided either through stdin or as a prompt argument when using --print"
    );
    assert_eq!(f.stderr_tail, end.stderr_tail);
    // Cancelled before anything came.
    let cancelled = StreamEnd {
        exit: None,
        stderr_tail: None,
        cause: EndCause::Cancelled,
    };
    assert_eq!(
        map_all(b"", cancelled, MapperOptions::default()),
        [Message::TerminalCancelled { exit: None }]
    );
}

#[test]
fn records_outside_a_turn_open_no_run() {
    // An idle interrupt's control_response after the last result, then exit 0: one run.
    let mut lines = vec![
        init("s-1"),
        assistant("m1", json!([text_block("hi")])),
        result_ok(1, 1, 0.5),
    ];
    lines.push(json!({"type":"control_response","response":{"subtype":"success","request_id":"i","response":{"still_queued":[]}}}));
    lines
        .push(json!({"type":"system","subtype":"status","status":"requesting","session_id":"s-1"}));
    lines.push(
        json!({"type":"system","subtype":"task_notification","task_id":"t","status":"completed"}),
    );
    let out = map_all(&jsonl(&lines), exited(143), MapperOptions::default());
    let mut want = vec![started("s-1"), text("hi")];
    want.extend(completed(usage(1, 1, 0.5)));
    assert_eq!(out, want);
}

#[test]
fn a_record_after_the_last_result_opens_a_run_that_finish_ends() {
    let lines = [
        init("s-1"),
        result_ok(1, 1, 0.5),
        init("s-1"),
        se_start("m2"),
        se_text("m2", 0, "par"),
    ];
    let mut mapper = ClaudeMapper::new(MapperOptions::default());
    let mut out = Vec::new();
    mapper.push(&jsonl(&lines), &mut out);
    assert_eq!(out.iter().filter(|m| m.is_terminal()).count(), 1);
    mapper.finish(exited(0), &mut out);
    let len = out.len();
    mapper.finish(exited(0), &mut out);
    assert_eq!(out.len(), len, "a second finish adds nothing");
    mapper.push(&jsonl(&[result_ok(1, 1, 1.0)]), &mut out);
    assert_eq!(out.len(), len, "push after finish is ignored");
    assert_eq!(mapper.turns_finished(), 1);
    let kinds: Vec<&str> = out.iter().map(Message::kind).collect();
    assert_eq!(
        kinds,
        [
            "session.started",
            "usage",
            "terminal.completed",
            "assistant",
            "terminal.failed"
        ]
    );
}

#[test]
fn session_started_once_per_session_and_resumed_on_request() {
    let lines = [
        init("a"),
        result_ok(0, 0, 0.0),
        init("a"),
        result_ok(0, 0, 0.0),
        init("b"),
        result_ok(0, 0, 0.0),
    ];
    let sessions = |opts: MapperOptions| -> Vec<Message> {
        map_all(&jsonl(&lines), exited(0), opts)
            .into_iter()
            .filter(|m| {
                matches!(
                    m,
                    Message::SessionStarted { .. } | Message::SessionResumed { .. }
                )
            })
            .collect()
    };
    assert_eq!(
        sessions(MapperOptions::default()),
        [started("a"), started("b")]
    );
    let resumed = MapperOptions {
        resumed_session: true,
        ..MapperOptions::default()
    };
    assert_eq!(
        sessions(resumed),
        [
            Message::SessionResumed {
                session_id: "a".into()
            },
            started("b")
        ]
    );
    // Two session ids in one turn: the second is reported, not announced.
    let out = map_all(
        &jsonl(&[init("a"), init("b")]),
        exited(0),
        MapperOptions::default(),
    );
    assert_eq!(out[0], started("a"));
    let Some(Message::TerminalFailed(f)) = out.last() else {
        panic!("{out:?}")
    };
    assert_eq!(out.len(), 2);
    assert_eq!(f.invalid_lines.len(), 1);
    assert_eq!(f.invalid_lines[0].line, 2);
}

#[test]
fn thinking_from_deltas_when_the_record_never_comes() {
    // Two thinking blocks streamed; only the first one's record comes; the message stops.
    let lines = [
        init("s"),
        se_start("m1"),
        se_thinking("m1", 0, "a"),
        se_thinking("m1", 0, "b"),
        assistant("m1", json!([thinking_block("ab!")])),
        se_thinking("m1", 1, "c"),
        se_thinking("m1", 1, "d"),
        se_text("m1", 2, "T"),
        se_stop("m1"),
        se_start("m2"),
        se_thinking("m2", 0, ""),
        se_text("m2", 1, "U"),
        // No message_stop for m2: the result ends it.
        result_ok(1, 1, 0.0),
    ];
    let out = map_all(&jsonl(&lines), exited(0), MapperOptions::default());
    let mut want = vec![
        started("s"),
        text("T"),
        thought("ab!"),
        thought("cd"),
        text("U"),
    ];
    want.extend(completed(usage(1, 1, 0.0)));
    assert_eq!(out, want);
}

#[test]
fn a_new_message_ends_the_open_one() {
    // m1 never gets its message_stop (the stream was cut); m2's start drains its thought.
    let lines = [
        init("s"),
        se_start("m1"),
        se_thinking("m1", 0, "t1"),
        se_start("m2"),
        se_text("m2", 0, "x"),
        se_stop("m2"),
    ];
    let out = map_all(&jsonl(&lines), exited(0), MapperOptions::default());
    assert_eq!(out[..3], [started("s"), thought("t1"), text("x")]);
    // An unfinished message's thinking is drained at finish, before the terminal.
    let lines = [init("s"), se_start("m1"), se_thinking("m1", 0, "late")];
    let out = map_all(&jsonl(&lines), exited(0), MapperOptions::default());
    assert_eq!(out[..2], [started("s"), thought("late")]);
    assert!(out[2].is_terminal());
}

#[test]
fn assistant_records_add_only_what_was_not_streamed() {
    let lines = [
        init("s"),
        se_start("m1"),
        se_text("m1", 0, "Hel"),
        // An aborted record holding more than was streamed: the rest comes out.
        json!({"type":"assistant","message":{"id":"m1","content":[text_block("Hello")]},"parent_tool_use_id":null,"aborted":true}),
        se_text("m1", 1, "A"),
        // A record that does not continue the streamed text: nothing, noted.
        assistant("m1", json!([text_block("B")])),
        // A second text block streamed nothing: the record gives it all.
        assistant("m1", json!([text_block("whole")])),
        se_stop("m1"),
    ];
    let out = map_all(&jsonl(&lines), exited(0), MapperOptions::default());
    assert_eq!(
        out[..5],
        [
            started("s"),
            text("Hel"),
            text("lo"),
            text("A"),
            text("whole")
        ]
    );
    let Some(Message::TerminalFailed(f)) = out.last() else {
        panic!("{out:?}")
    };
    assert_eq!(out.len(), 6);
    assert_eq!(f.reason, FailureReason::MissingTerminalEvent);
    assert_eq!(f.invalid_lines.len(), 1);
    assert_eq!(f.invalid_lines[0].line, 6);
    assert!(
        f.invalid_lines[0].problem.contains("does not continue"),
        "{f:?}"
    );
}

#[test]
fn tools_once_per_id_and_results_as_they_are() {
    let array = json!([{"type":"text","text":"part 1"},{"type":"text","text":"part 2"}]);
    let lines = [
        init("s"),
        assistant("m1", json!([tool_use("t1", "ls"), tool_use("t2", "cat")])),
        assistant("m1", json!([tool_use("t1", "ls again")])),
        tool_result("t1", array.clone(), false),
        tool_result("t1", json!("again"), true),
        tool_result("t2", json!("boom"), true),
        // A result whose call was lost.
        tool_result("t9", json!("orphan"), false),
        // Subagent records: nothing.
        json!({"type":"assistant","message":{"id":"sub","content":[text_block("sub text"),tool_use("t5","x")]},"parent_tool_use_id":"t1"}),
        json!({"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t5","content":"x"}]},"parent_tool_use_id":"t1"}),
        // A replayed user message and a plain text one: nothing.
        json!({"type":"user","message":{"role":"user","content":"hi"},"isReplay":true}),
        json!({"type":"user","message":{"role":"user","content":[{"type":"text","text":"[Request interrupted by user]"}]}}),
        result_ok(2, 2, 0.0),
    ];
    let out = map_all(&jsonl(&lines), exited(0), MapperOptions::default());
    let mut want = vec![
        started("s"),
        call("t1", "ls"),
        call("t2", "cat"),
        done("t1", array),
        tool_failed("t2", json!("boom")),
        Message::ToolCall {
            id: "t9".into(),
            name: "".into(),
            arguments: Value::Null.into(),
        },
        done("t9", json!("orphan")),
    ];
    want.extend(completed(usage(2, 2, 0.0)));
    assert_eq!(out, want);
}

#[test]
fn result_subtypes() {
    let result = |fields: Value| {
        let mut r = json!({"type":"result","usage":{"input_tokens":1,"output_tokens":2,
            "cache_read_input_tokens":3,"cache_creation_input_tokens":4},"total_cost_usd":0.25});
        r.as_object_mut()
            .unwrap()
            .extend(fields.as_object().unwrap().clone());
        let out = map_all(&jsonl(&[r]), exited(1), MapperOptions::default());
        assert_eq!(out.len(), 2, "{out:?}");
        assert_eq!(
            out[0],
            Message::Usage(Usage {
                input_tokens: 1,
                output_tokens: 2,
                cache_read_tokens: 3,
                cache_write_tokens: 4,
                total_tokens: 10,
                cost_usd: 0.25
            })
        );
        out[1].clone()
    };
    let failed = |reason, message: &str| Message::TerminalFailed(failure(reason, message));
    assert_eq!(
        result(
            json!({"subtype":"success","is_error":true,"terminal_reason":"prompt_too_long","result":"Prompt is too long"})
        ),
        failed(FailureReason::ModelError, "Prompt is too long")
    );
    assert_eq!(
        result(
            json!({"subtype":"error_during_execution","is_error":true,"terminal_reason":"aborted_streaming","stop_reason":null})
        ),
        failed(FailureReason::Aborted, "aborted_streaming")
    );
    assert_eq!(
        result(json!({"subtype":"error_max_turns","is_error":true,"errors":["a","b"]})),
        failed(FailureReason::ModelError, "error_max_turns: a; b")
    );
    assert_eq!(
        result(json!({"subtype":"error_max_budget_usd","is_error":true})),
        failed(FailureReason::ModelError, "error_max_budget_usd")
    );
    let Message::TerminalCompleted { stop_reason, usage } =
        result(json!({"subtype":"success","is_error":false,"stop_reason":"max_tokens"}))
    else {
        panic!()
    };
    assert_eq!(
        (stop_reason.as_str(), usage.total_tokens),
        ("max_tokens", 10)
    );
    let Message::TerminalCompleted { stop_reason, .. } = result(json!({"is_error":false})) else {
        panic!()
    };
    assert_eq!(stop_reason, "none");
}

#[test]
fn usage_cost_is_the_turns_share_of_the_running_total() {
    let lines = [
        init("s"),
        result_ok(1, 1, 0.5),
        init("s"),
        json!({"type":"result","subtype":"success","is_error":false,"usage":{}}),
        init("s"),
        result_ok(1, 1, 0.75),
        init("s"),
        // The total went down (a counter reset): taken as it is.
        result_ok(1, 1, 0.125),
    ];
    let costs: Vec<f64> = map_all(&jsonl(&lines), exited(0), MapperOptions::default())
        .into_iter()
        .filter_map(|m| match m {
            Message::Usage(u) => Some(u.cost_usd),
            _ => None,
        })
        .collect();
    assert_eq!(costs, [0.5, 0.0, 0.25, 0.125]);
}

#[test]
fn retry_records() {
    let lines = [
        init("s"),
        json!({"type":"system","subtype":"api_retry","attempt":2,"max_retries":10,"retry_delay_ms":1201,"error_status":529,"error":"overloaded"}),
        json!({"type":"system","subtype":"api_retry","attempt":"x"}),
    ];
    let out = map_all(&jsonl(&lines), exited(0), MapperOptions::default());
    assert_eq!(
        out[1..3],
        [
            Message::RetryScheduled {
                source: RetrySource::Pi,
                attempt: 2,
                max_attempts: 10,
                delay_ms: 1201,
                error: "529: overloaded".into()
            },
            Message::RetryScheduled {
                source: RetrySource::Pi,
                attempt: 0,
                max_attempts: 0,
                delay_ms: 0,
                error: "stream: unknown".into()
            }
        ]
    );
}

#[test]
fn bad_lines_are_recorded_per_run_and_bounded() {
    let mut data = jsonl(&[init("s"), result_ok(0, 0, 0.0)]);
    data.extend_from_slice(b"not json\n[1]\n\n{\"no\":1}\n{\"type\":7}\n{\"type\":\"bogus\"}\n");
    data.extend_from_slice(b"{\"type\":\"system\",\"subtype\":\"compact_boundary\"}\n");
    data.extend_from_slice(b"{\"type\":\"stream_event\",\"event\":{\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":1}}}\n");
    data.extend_from_slice(b"{\"type\":\"user\",\"message\":{\"content\":[{\"type\":\"tool_result\",\"content\":\"x\"}]}}\n");
    data.extend_from_slice(b"{\"type\":\"stream_event\",\"event\":{\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"\xff ok\"}}}\n");
    data.extend_from_slice(&[b'{'; 300]);
    data.push(b'\n');
    let opts = MapperOptions {
        max_line_bytes: 256,
        ..MapperOptions::default()
    };
    let out = map_all(&data, exited(0), opts);
    // Run 1 completed (its bad lines, none, are not shown); run 2 is open at the end.
    let kinds: Vec<&str> = out.iter().map(Message::kind).collect();
    assert_eq!(
        kinds,
        [
            "session.started",
            "usage",
            "terminal.completed",
            "assistant",
            "terminal.failed"
        ]
    );
    assert_eq!(out[3], text("\u{fffd} ok"));
    let Some(Message::TerminalFailed(f)) = out.last() else {
        panic!()
    };
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
            (8, "unknown record type \"bogus\" (ignored)"),
            (9, "unknown system subtype \"compact_boundary\" (ignored)"),
            (10, "`text_delta` whose `text` is not a string"),
            (11, "`tool_result` block without a string `tool_use_id`"),
            (
                12,
                "invalid UTF-8, decoded lossily (U+FFFD); the record was used"
            ),
            (13, "over the line cap of 256 bytes"),
        ]
    );
    assert_eq!(
        f.invalid_lines[0],
        InvalidLine {
            line: 3,
            bytes: 8,
            problem: "not JSON: expected ident at line 1 column 2".into(),
            excerpt: "not json".into()
        }
    );
    assert_eq!(f.invalid_lines[10].bytes, 300);

    // Bounds: at most max_invalid_lines kept, the rest counted.
    let garbage = "x\n".repeat(40);
    let opts = MapperOptions {
        max_invalid_lines: 5,
        max_invalid_bytes: 3,
        ..MapperOptions::default()
    };
    let Some(Message::TerminalFailed(f)) = map_all(garbage.as_bytes(), exited(0), opts).pop()
    else {
        panic!()
    };
    assert_eq!(f.invalid_lines.len(), 5);
    assert_eq!(f.invalid_lines_dropped, 35);
    let excerpts: usize = f.invalid_lines.iter().map(|l| l.excerpt.len()).sum();
    assert!(excerpts <= 3);
}

#[test]
fn bad_lines_of_a_turn_go_to_that_turns_failure() {
    let mut data = jsonl(&[init("s")]);
    data.extend_from_slice(b"garbage\n");
    data.extend_from_slice(&jsonl(&[
        json!({"type":"result","subtype":"success","is_error":true,"result":"API Error"}),
    ]));
    data.extend_from_slice(&jsonl(&[init("s")]));
    data.extend_from_slice(b"more garbage\n");
    data.extend_from_slice(&jsonl(&[result_ok(0, 0, 0.0)]));
    let out = map_all(&data, exited(0), MapperOptions::default());
    let Message::TerminalFailed(f) = &out[2] else {
        panic!("{out:?}")
    };
    assert_eq!(f.invalid_lines.len(), 1);
    assert_eq!(f.invalid_lines[0].line, 2);
    assert!(
        matches!(out[4], Message::TerminalCompleted { .. }),
        "{out:?}"
    );
}

#[test]
fn crlf_and_a_final_line_without_newline() {
    let data = fixture("01_text");
    let want = map_all(&data, exited(0), MapperOptions::default());
    let crlf: Vec<u8> = String::from_utf8(data.clone())
        .unwrap()
        .replace('\n', "\r\n")
        .into_bytes();
    assert_eq!(map_all(&crlf, exited(0), MapperOptions::default()), want);
    let unterminated = &data[..data.len() - 1];
    assert_eq!(
        map_all(unterminated, exited(0), MapperOptions::default()),
        want
    );
}

// ---------------------------------------------------------------------------
// 3. Properties

fn map_chunked(data: &[u8], cuts: &[usize], end: StreamEnd, opts: MapperOptions) -> Vec<Message> {
    let mut cuts: Vec<usize> = cuts.iter().map(|&c| c.min(data.len())).collect();
    cuts.sort_unstable();
    let mut mapper = ClaudeMapper::new(opts);
    let mut out = Vec::new();
    let mut at = 0;
    for c in cuts {
        mapper.push(&data[at..c], &mut out);
        at = c;
        let terminals = out.iter().filter(|m| m.is_terminal()).count();
        assert_eq!(
            terminals,
            mapper.turns_finished(),
            "push emits a terminal only at a result"
        );
    }
    mapper.push(&data[at..], &mut out);
    mapper.finish(end.clone(), &mut out);
    let len = out.len();
    mapper.finish(end, &mut out);
    assert_eq!(out.len(), len, "a second finish appended messages");
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
    let exit = |code: Option<i32>, signal: Option<&str>| {
        Some(ExitInfo {
            code,
            signal: signal.map(str::to_string),
        })
    };
    prop_oneof![
        Just(exited(0)),
        Just(exited(1)),
        Just(StreamEnd::eof(exit(None, Some("SIGKILL")))),
        Just(StreamEnd::eof(None)),
        Just(StreamEnd {
            exit: exit(Some(143), None),
            stderr_tail: Some("bye".into()),
            cause: EndCause::Cancelled
        }),
        Just(StreamEnd {
            exit: None,
            stderr_tail: None,
            cause: EndCause::Failed {
                reason: FailureReason::OutputLimit,
                message: "too much".into()
            }
        }),
    ]
}

fn real_lines() -> Vec<Vec<u8>> {
    FIXTURES
        .iter()
        .flat_map(|n| {
            fixture(n)
                .split(|&b| b == b'\n')
                .filter(|l| !l.is_empty())
                .map(<[u8]>::to_vec)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Records in Claude's shapes with small random ids, indexes and flags, so that sequences
/// hit every rule (reopened messages, repeated ids, results anywhere, ...).
fn record_strategy() -> impl Strategy<Value = Value> {
    let id = || select(vec!["m1", "m2", "m3"]);
    let tid = || select(vec!["t1", "t2"]);
    let s = || select(vec!["", "a", "b ", "\u{e9}\u{2028}"]);
    prop_oneof![
        select(vec!["s1", "s2"]).prop_map(init),
        id().prop_map(se_start),
        id().prop_map(se_stop),
        (id(), 0u64..3, s()).prop_map(|(m, i, t)| se_text(m, i, t)),
        (id(), 0u64..3, s()).prop_map(|(m, i, t)| se_thinking(m, i, t)),
        (id(), s()).prop_map(|(m, t)| assistant(m, json!([text_block(t)]))),
        (id(), s()).prop_map(|(m, t)| assistant(m, json!([thinking_block(t)]))),
        (id(), tid()).prop_map(|(m, t)| assistant(m, json!([tool_use(t, "c")]))),
        (id(), s(), any::<bool>()).prop_map(|(m, t, aborted)| json!({"type":"assistant",
            "message":{"id":m,"content":t},"aborted":aborted,"is_api_error_message":!aborted})),
        (tid(), any::<bool>()).prop_map(|(t, e)| tool_result(t, json!("r"), e)),
        Just(
            json!({"type":"user","message":{"content":[{"type":"text","text":"[Request interrupted by user]"}]}})
        ),
        Just(
            json!({"type":"system","subtype":"api_retry","attempt":1,"max_retries":2,"retry_delay_ms":5,"error_status":null,"error":"unknown"})
        ),
        Just(json!({"type":"system","subtype":"status","status":"requesting"})),
        Just(json!({"type":"control_response","response":{}})),
        (0u64..3, 0.0f64..1.0).prop_map(|(n, c)| result_ok(n, n, c)),
        Just(
            json!({"type":"result","subtype":"error_during_execution","is_error":true,"terminal_reason":"aborted_tools"})
        ),
        Just(json!({"type":"result","subtype":"success","is_error":true,"result":"API Error"})),
    ]
}

fn line_strategy() -> impl Strategy<Value = Vec<u8>> {
    let real = real_lines();
    prop_oneof![
        4 => record_strategy().prop_map(|r| r.to_string().into_bytes()),
        1 => proptest::collection::vec(any::<u8>(), 0..40),
        1 => select(real.clone()),
        1 => (select(real), any::<Index>()).prop_map(|(l, i)| l[..i.index(l.len() + 1)].to_vec()),
    ]
}

fn check_bounds(out: &[Message], opts: &MapperOptions) -> Result<(), String> {
    for m in out {
        if let Message::TerminalFailed(f) = m {
            let bytes: usize = f.invalid_lines.iter().map(|l| l.excerpt.len()).sum();
            if f.invalid_lines.len() > opts.max_invalid_lines || bytes > opts.max_invalid_bytes {
                return Err(format!(
                    "{} invalid lines, {bytes} excerpt bytes",
                    f.invalid_lines.len()
                ));
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Arbitrary bytes: no panic, runs well formed, and the chunking changes nothing.
    #[test]
    fn arbitrary_bytes(
        data in proptest::collection::vec(any::<u8>(), 0..600),
        cuts in proptest::collection::vec(any::<usize>(), 0..8),
        end in end_strategy(),
    ) {
        let whole = map_all(&data, end.clone(), small_opts());
        check_runs(&whole).map_err(TestCaseError::fail)?;
        let chunked = map_chunked(&data, &cuts, end, small_opts());
        prop_assert_eq!(chunked, whole);
    }

    /// Streams of records (hand-made shapes, real lines, cut lines, garbage): runs well
    /// formed, one terminal per result plus at most one from finish, bounds kept, and the
    /// same output in any chunking.
    #[test]
    fn record_streams(
        lines in proptest::collection::vec(line_strategy(), 0..40),
        cuts in proptest::collection::vec(any::<usize>(), 0..8),
        end in end_strategy(),
    ) {
        let mut data = lines.join(&b'\n');
        data.push(b'\n');
        let opts = small_opts();
        let mut mapper = ClaudeMapper::new(opts.clone());
        let mut whole = Vec::new();
        mapper.push(&data, &mut whole);
        let results = mapper.turns_finished();
        prop_assert_eq!(whole.iter().filter(|m| m.is_terminal()).count(), results);
        mapper.finish(end.clone(), &mut whole);
        let terminals = whole.iter().filter(|m| m.is_terminal()).count();
        prop_assert!(terminals == results || terminals == results + 1);
        prop_assert!(terminals >= 1);
        check_runs(&whole).map_err(TestCaseError::fail)?;
        check_bounds(&whole, &opts).map_err(TestCaseError::fail)?;
        let chunked = map_chunked(&data, &cuts, end, opts);
        prop_assert_eq!(chunked, whole);
    }

    /// Each real capture, in any chunking, gives what it gives in one push.
    #[test]
    fn captures_in_any_chunking(
        name in select(FIXTURES.to_vec()),
        cuts in proptest::collection::vec(any::<Index>(), 0..12),
    ) {
        let data = fixture(name);
        let cuts: Vec<usize> = cuts.iter().map(|i| i.index(data.len() + 1)).collect();
        let whole = map_all(&data, recorded_end(name), MapperOptions::default());
        let chunked = map_chunked(&data, &cuts, recorded_end(name), MapperOptions::default());
        prop_assert_eq!(chunked, whole);
    }

    /// Captures with lines dropped or duplicated: still well formed runs.
    #[test]
    fn damaged_captures(
        name in select(FIXTURES.to_vec()),
        edits in proptest::collection::vec((any::<Index>(), any::<bool>()), 0..6),
        end in end_strategy(),
    ) {
        let mut lines: Vec<Vec<u8>> = fixture(name)
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .map(<[u8]>::to_vec)
            .collect();
        for (at, drop) in edits {
            if lines.is_empty() {
                break;
            }
            let i = at.index(lines.len());
            if drop {
                lines.remove(i);
            } else {
                lines.insert(i, lines[i].clone());
            }
        }
        let data = lines.join(&b'\n');
        let out = map_all(&data, end, MapperOptions::default());
        check_runs(&out).map_err(TestCaseError::fail)?;
    }
}
