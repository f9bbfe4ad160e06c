//! Tests of the Gemini CLI stream-json mapper (`pi_wire::gemini`): the real Gemini CLI
//! 0.61.0 captures of `tests/data/gemini/` (see its README) mapped with the end each run
//! had, kept as reviewed insta snapshots and checked with the stream invariants
//! (`pi_testkit::invariants::check_structure`, and the assistant chunks read independently
//! with serde_json); one test per measured fact (the exit-code rule, the missing `result`,
//! the prompt's echo, a failed tool); hand-made events for the rules the captures do not
//! reach; and properties (no panic, one terminal, the same output in any chunking).

use pi_wire::gemini::{map_all, GeminiMapper};
use pi_wire::mapper::{EndCause, MapperOptions, StreamEnd};
use pi_wire::message::{ExitInfo, FailureReason, Message, Usage};
use proptest::prelude::*;
use proptest::sample::{select, Index};
use serde_json::{json, Value};

use pi_testkit::invariants::check_structure;

// ---------------------------------------------------------------------------
// Helpers

/// Every capture, with how its process ended (`tests/data/gemini/README.md`): an exit
/// code, or `None` for a run the capture itself ended (mapped as cancelled).
const CAPTURES: &[(&str, Option<i32>)] = &[
    ("text", Some(0)),
    ("tool", Some(0)),
    ("FAIL400", Some(144)),
    ("FAIL400-norelaunch-merged", Some(144)),
    ("FAIL500-maxAttempts2", Some(244)),
    ("FAIL500", None),
    ("SIGTERM-mid-tool", None),
    ("SIGINT-mid-tool", None),
    ("SIGTERM-group-mid-tool", Some(0)),
    ("SIGINT-group-mid-tool", Some(0)),
    ("SIGTERM-norelaunch-mid-tool", Some(0)),
    ("SIGINT-norelaunch-mid-tool", Some(0)),
];

fn path(name: &str, ext: &str) -> String {
    format!(
        "{}/tests/data/gemini/{name}.{ext}",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn stdout(name: &str) -> Vec<u8> {
    let path = path(name, "stdout.jsonl");
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The capture's stderr; none for the one whose stderr went to its stdout.
fn stderr(name: &str) -> Vec<u8> {
    std::fs::read(path(name, "stderr")).unwrap_or_default()
}

/// The end the capture's process reached: its exit code, its stderr.
fn recorded_end(name: &str) -> StreamEnd {
    let (_, code) = CAPTURES
        .iter()
        .find(|(n, _)| *n == name)
        .unwrap_or_else(|| panic!("no capture {name}"));
    StreamEnd::recorded(*code, None, &stderr(name))
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

fn texts(out: &[Message]) -> Vec<&str> {
    out.iter()
        .filter_map(|m| match m {
            Message::Assistant { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

fn kinds(out: &[Message]) -> Vec<&'static str> {
    out.iter().map(Message::kind).collect()
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

/// The `content` of every assistant `message`, in order, read with serde_json
/// (independently of the mapper).
fn assistant_chunks(stdout: &[u8]) -> Vec<String> {
    stdout
        .split(|&b| b == b'\n')
        .filter_map(|l| serde_json::from_slice::<Value>(l).ok())
        .filter(|e| e["type"] == "message" && e["role"] == "assistant")
        .filter_map(|e| e["content"].as_str().map(str::to_string))
        .collect()
}

// Hand-made events, in Gemini's shapes.

fn init(id: &str) -> Value {
    json!({"type":"init","timestamp":"T","session_id":id,"model":"gemini-2.5-flash"})
}

fn user(content: &str) -> Value {
    json!({"type":"message","timestamp":"T","role":"user","content":content})
}

fn chunk(content: &str) -> Value {
    json!({"type":"message","timestamp":"T","role":"assistant","content":content,"delta":true})
}

fn tool_use(id: &str) -> Value {
    json!({"type":"tool_use","timestamp":"T","tool_name":"run_shell_command","tool_id":id,
        "parameters":{"command":"ls","description":"x"}})
}

fn tool_result(id: &str, status: &str) -> Value {
    json!({"type":"tool_result","timestamp":"T","tool_id":id,"status":status,"output":"out"})
}

fn result_ok(input: u64, cached: u64, output: u64) -> Value {
    json!({"type":"result","timestamp":"T","status":"success","stats":{
        "total_tokens":input + output,"input_tokens":input,"output_tokens":output,
        "cached":cached,"input":input - cached,"duration_ms":1,"tool_calls":0}})
}

fn result_error(message: &str) -> Value {
    json!({"type":"result","timestamp":"T","status":"error",
        "error":{"type":"unknown","message":message},"stats":{"total_tokens":0}})
}

fn error(severity: &str, message: &str) -> Value {
    json!({"type":"error","timestamp":"T","severity":severity,"message":message})
}

// ---------------------------------------------------------------------------
// 1. The captures: reviewed snapshots, invariants

#[test]
fn mapper_output_for_every_gemini_capture() {
    for (name, code) in CAPTURES {
        let raw = stdout(name);
        let out = map(name);
        check_structure(&out).unwrap_or_else(|e| panic!("{name}: {e}"));
        // Text invariant: the `assistant` texts are the assistant chunks, one for one.
        assert_eq!(texts(&out), assistant_chunks(&raw), "{name}");
        // A real stdout has no bad line (the merged one holds Gemini's stderr too).
        if let Message::TerminalFailed(f) = terminal(&out) {
            if *name != "FAIL400-norelaunch-merged" {
                assert_eq!(f.invalid_lines, [], "{name}");
            }
        }
        let end = match code {
            Some(c) => format!("exit {c}"),
            None => "ended by the capture (cancelled)".to_string(),
        };
        insta::with_settings!({
            description => format!("real Gemini CLI 0.61.0 `--output-format stream-json`, {name}, {end}"),
            omit_expression => true,
        }, {
            insta::assert_yaml_snapshot!(*name, out);
        });
    }
}

#[test]
fn text_is_one_piece_per_chunk_then_usage_and_completed() {
    let out = map("text");
    let usage = Usage {
        input_tokens: 11,
        output_tokens: 7,
        cache_read_tokens: 0,
        cache_write_tokens: 0,
        total_tokens: 18,
        cost_usd: 0.0,
    };
    let piece = |t: &str| Message::Assistant { text: t.into() };
    assert_eq!(
        out,
        [
            Message::SessionStarted {
                session_id: "ad991ad6-c69a-4a66-88db-bfec81ebc9db".into()
            },
            piece("Hello "),
            piece("from the "),
            piece("fake model."),
            Message::Usage(usage.clone()),
            Message::TerminalCompleted {
                stop_reason: "none".into(),
                usage
            },
        ]
    );
}

#[test]
fn the_prompt_echo_is_not_an_assistant_message() {
    // Every capture echoes the prompt as `message` role `user`: nothing of it comes out.
    for (name, _) in CAPTURES {
        let raw = String::from_utf8(stdout(name)).unwrap();
        let prompt = raw
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|e| e["type"] == "message" && e["role"] == "user")
            .unwrap_or_else(|| panic!("{name}: no prompt echo"));
        let prompt = prompt["content"].as_str().unwrap();
        let out = map(name);
        assert!(
            !texts(&out).iter().any(|t| t.contains(prompt)),
            "{name}: the prompt {prompt:?} came out as assistant text"
        );
    }
    // A stream of the echo alone has no assistant text at all.
    let out = map_all(
        &jsonl(&[init("s"), user("say hi"), result_ok(1, 0, 0)]),
        exited(0),
        MapperOptions::default(),
    );
    assert_eq!(
        kinds(&out),
        ["session.started", "usage", "terminal.completed"]
    );
}

#[test]
fn tool_is_a_call_and_its_result_then_the_answer() {
    let out = map("tool");
    assert_eq!(
        kinds(&out),
        [
            "session.started",
            "tool.call",
            "tool.completed",
            "assistant",
            "assistant",
            "assistant",
            "usage",
            "terminal.completed"
        ]
    );
    let id = "run_shell_command__run_shell_command_1795672339834_0";
    assert_eq!(
        out[1],
        Message::ToolCall {
            id: id.into(),
            name: "run_shell_command".into(),
            arguments: json!({"command":"echo hi-from-tool","description":"fake"}).into(),
        }
    );
    assert_eq!(
        out[2],
        Message::ToolCompleted {
            id: id.into(),
            result: json!({"status":"success","output":"hi-from-tool"}).into(),
        }
    );
}

#[test]
fn exit_144_with_a_result_error_is_a_model_error() {
    let f = failure(&map("FAIL400")).clone();
    assert_eq!(f.reason, FailureReason::ModelError);
    assert_eq!(
        f.message,
        r#"[API Error: {"error":{"code":400,"message":"fake: bad request","status":"INVALID_ARGUMENT"}}]"#
    );
    assert_eq!(f.exit.and_then(|e| e.code), Some(144));
    // 500 with `maxAttempts: 2`: exit 244, the same rule.
    let f = failure(&map("FAIL500-maxAttempts2")).clone();
    assert_eq!(f.reason, FailureReason::ModelError);
    assert!(f.message.contains("fake: internal"), "{}", f.message);
    // Whatever the exit code: the documented 1, or even 0.
    let lines = jsonl(&[init("s"), user("x"), result_error("boom")]);
    for end in [exited(0), exited(1), exited(144), killed("SIGTERM")] {
        let out = map_all(&lines, end, MapperOptions::default());
        assert_eq!(
            (failure(&out).reason, failure(&out).message.as_str()),
            (FailureReason::ModelError, "boom")
        );
    }
    // And a result that succeeded completes whatever the exit code.
    let ok = jsonl(&[init("s"), result_ok(3, 0, 1)]);
    for end in [exited(0), exited(244), killed("SIGTERM")] {
        let out = map_all(&ok, end, MapperOptions::default());
        assert!(matches!(terminal(&out), Message::TerminalCompleted { .. }));
    }
}

#[test]
fn exit_0_without_a_result_is_not_completed() {
    // A signal to the process group (or to the no-relaunch process): exit 0, no result.
    for name in [
        "SIGTERM-group-mid-tool",
        "SIGINT-group-mid-tool",
        "SIGTERM-norelaunch-mid-tool",
        "SIGINT-norelaunch-mid-tool",
    ] {
        let out = map(name);
        assert_eq!(
            kinds(&out),
            ["session.started", "tool.call", "terminal.failed"],
            "{name}"
        );
        let f = failure(&out);
        assert_eq!(f.reason, FailureReason::MissingTerminalEvent, "{name}");
        // Gemini's start-up lines on stderr are not quoted.
        assert_eq!(
            f.message,
            "gemini exited 0 without a `result` line (as it does when its process group is signalled)",
            "{name}"
        );
        assert_eq!(f.exit.as_ref().and_then(|e| e.code), Some(0));
    }
    // The caller that signalled the group to cancel says so: cancelled.
    let end = StreamEnd {
        exit: Some(ExitInfo {
            code: Some(0),
            signal: None,
        }),
        stderr_tail: None,
        cause: EndCause::Cancelled,
    };
    let out = map_all(
        &stdout("SIGTERM-group-mid-tool"),
        end,
        MapperOptions::default(),
    );
    assert!(matches!(terminal(&out), Message::TerminalCancelled { .. }));
}

#[test]
fn tool_result_error_is_tool_failed() {
    let lines = [
        init("s"),
        tool_use("t1"),
        json!({"type":"tool_result","timestamp":"T","tool_id":"t1","status":"error",
            "output":"","error":{"type":"invalid_tool_params","message":"no such file"}}),
        tool_use("t2"),
        tool_result("t2", "success"),
    ];
    let out = map_all(&jsonl(&lines), exited(0), MapperOptions::default());
    check_structure(&out).unwrap();
    assert_eq!(
        out[2],
        Message::ToolFailed {
            id: "t1".into(),
            error: json!({"status":"error","output":"",
                "error":{"type":"invalid_tool_params","message":"no such file"}})
            .into(),
        }
    );
    assert!(matches!(&out[4], Message::ToolCompleted { id, .. } if id == "t2"));
    // Any status other than success fails the tool; a missing one too.
    let lines = [
        tool_use("a"),
        tool_result("a", "cancelled"),
        json!({"type":"tool_result","tool_id":"b"}),
    ];
    let out = map_all(&jsonl(&lines), exited(0), MapperOptions::default());
    assert_eq!(
        kinds(&out),
        [
            "tool.call",
            "tool.failed",
            "tool.call",
            "tool.failed",
            "terminal.failed"
        ]
    );
}

#[test]
fn retries_stay_on_stderr_no_retry_messages() {
    // Default retries (10 attempts, still retrying when the capture ended the run) and
    // maxAttempts 2: Gemini writes its attempts to stderr only.
    for name in ["FAIL500", "FAIL500-maxAttempts2"] {
        let out = map(name);
        assert!(!out.iter().any(|m| m.kind() == "retry.scheduled"), "{name}");
    }
    assert_eq!(
        kinds(&map("FAIL500")),
        ["session.started", "terminal.cancelled"]
    );
}

#[test]
fn no_result_is_judged_by_the_exit_and_its_meaning() {
    let open = jsonl(&[init("s"), user("x"), tool_use("t")]);
    let f = |end: StreamEnd| failure(&map_all(&open, end, MapperOptions::default())).clone();
    let sig = f(killed("SIGKILL"));
    assert_eq!(sig.reason, FailureReason::ProcessSignal);
    assert_eq!(
        sig.message,
        "gemini was killed by SIGKILL before its `result`"
    );
    let auth = f(StreamEnd {
        stderr_tail: Some("Invalid auth method selected.\n".into()),
        ..exited(41)
    });
    assert_eq!(auth.reason, FailureReason::ProcessExit);
    assert_eq!(
        auth.message,
        "gemini exited with code 41 (an authentication error): Invalid auth method selected."
    );
    // A 500 & 255 without a result line: the attempt's line, not its stack trace.
    let http = f(StreamEnd {
        stderr_tail: Some(String::from_utf8(stderr("FAIL500-maxAttempts2")).unwrap()),
        ..exited(244)
    });
    let (head, quoted) = http.message.split_once("): ").unwrap();
    assert_eq!(
        head,
        "gemini exited with code 244 (HTTP 500 & 255, a model error"
    );
    // The last line that is not noise, cut at the excerpt bound.
    assert!(
        quoted.starts_with("Error when talking to Gemini API Full report available at:"),
        "{quoted}"
    );
    assert_eq!(quoted.len(), pi_wire::mapper::EXCERPT_BYTES);
    assert_eq!(f(exited(7)).message, "gemini exited with code 7");
    let unknown = f(StreamEnd::eof(None));
    assert_eq!(unknown.reason, FailureReason::MissingTerminalEvent);
    assert_eq!(
        unknown.message,
        "gemini's stdout ended without a `result` line"
    );
    // An `error` event is the detail, before stderr; a warning says so.
    let mut with_error = open.clone();
    with_error.extend_from_slice(&jsonl(&[error(
        "warning",
        "Loop detected, stopping execution",
    )]));
    let out = map_all(&with_error, exited(0), MapperOptions::default());
    assert_eq!(
        failure(&out).message,
        "gemini exited 0 without a `result` line (as it does when its process group is signalled): warning: Loop detected, stopping execution"
    );
    assert_eq!(
        kinds(&out),
        ["session.started", "tool.call", "terminal.failed"]
    );
    // A result error without a message takes the last error event's.
    let lines = jsonl(&[
        error("error", "Maximum session turns exceeded"),
        json!({"type":"result","status":"error"}),
    ]);
    let out = map_all(&lines, exited(53), MapperOptions::default());
    assert_eq!(failure(&out).message, "Maximum session turns exceeded");
    let out = map_all(
        &jsonl(&[json!({"type":"result"})]),
        exited(0),
        MapperOptions::default(),
    );
    assert_eq!(failure(&out).message, "gemini's result has no status");
    // The caller's failure wins over everything.
    let timeout = StreamEnd {
        exit: None,
        stderr_tail: None,
        cause: EndCause::Failed {
            reason: FailureReason::Timeout,
            message: "no output for 60 s".into(),
        },
    };
    let out = map_all(
        &jsonl(&[result_ok(1, 0, 1)]),
        timeout,
        MapperOptions::default(),
    );
    assert_eq!(failure(&out).reason, FailureReason::Timeout);
    // Empty stdout: still exactly one terminal.
    assert_eq!(map_all(b"", exited(0), MapperOptions::default()).len(), 1);
}

#[test]
fn usage_counts_cached_input_apart_and_is_settled_after_result() {
    let line = result_ok(100, 60, 7);
    let out = map_all(&jsonl(&[line]), exited(0), MapperOptions::default());
    assert_eq!(
        out[0],
        Message::Usage(Usage {
            input_tokens: 40,
            output_tokens: 7,
            cache_read_tokens: 60,
            cache_write_tokens: 0,
            total_tokens: 107,
            cost_usd: 0.0,
        })
    );
    // Without `input` and `total_tokens`: derived; malformed numbers count as 0.
    let line = json!({"type":"result","status":"success","stats":{"input_tokens":10,"cached":4,"output_tokens":"x"}});
    let Message::Usage(u) = &map_all(&jsonl(&[line]), exited(0), MapperOptions::default())[0]
    else {
        panic!()
    };
    assert_eq!(
        (
            u.input_tokens,
            u.cache_read_tokens,
            u.output_tokens,
            u.total_tokens
        ),
        (6, 4, 0, 10)
    );
    let data = stdout("text");
    let mut mapper = GeminiMapper::new(MapperOptions::default());
    let mut out = Vec::new();
    let last = data[..data.len() - 1]
        .iter()
        .rposition(|&b| b == b'\n')
        .unwrap();
    mapper.push(&data[..=last], &mut out);
    assert!(!mapper.is_settled());
    mapper.push(&data[last + 1..], &mut out);
    assert!(mapper.is_settled());
}

#[test]
fn whole_assistant_messages_continue_the_chunks_and_tools_split_messages() {
    let whole = |t: &str| json!({"type":"message","role":"assistant","content":t});
    let lines = [
        chunk("Hel"),
        chunk(""),
        whole("Hello!"),
        whole("Hello!"),
        tool_use("t"),
        tool_result("t", "success"),
        // A new message after the tool: a whole message stands on its own.
        whole("Done."),
        whole("Other"),
        json!({"type":"message","role":"system","content":"x"}),
    ];
    let out = map_all(&jsonl(&lines), exited(0), MapperOptions::default());
    assert_eq!(texts(&out), ["Hel", "lo!", "Done."]);
    let f = failure(&out);
    let problems: Vec<(u64, &str)> = f
        .invalid_lines
        .iter()
        .map(|l| (l.line, l.problem.as_str()))
        .collect();
    assert_eq!(
        problems,
        [
            (
                8,
                "a whole assistant `message` that does not continue the text streamed (ignored)"
            ),
            (9, "`message` of unknown role \"system\" (ignored)"),
        ]
    );
}

#[test]
fn invalid_lines_are_recorded_and_bounded() {
    let mut data = jsonl(&[init("s")]);
    data.extend_from_slice(b"not json\n[1]\n\n{\"no\":1}\n{\"type\":7}\n{\"type\":\"thought\"}\n");
    data.extend_from_slice(
        b"{\"type\":\"init\"}\n{\"type\":\"message\",\"role\":\"assistant\",\"content\":1}\n",
    );
    data.extend_from_slice(
        b"{\"type\":\"tool_use\"}\n{\"type\":\"tool_result\"}\n{\"type\":\"error\"}\n",
    );
    data.extend_from_slice(&jsonl(&[init("other"), tool_use("t"), tool_use("t")]));
    data.extend_from_slice(&jsonl(&[
        tool_result("t", "success"),
        tool_result("t", "success"),
    ]));
    data.extend_from_slice(
        b"{\"type\":\"message\",\"role\":\"assistant\",\"content\":\"\xff ok\",\"delta\":true}\n",
    );
    data.extend_from_slice(&[b'{'; 300]);
    data.push(b'\n');
    let opts = MapperOptions {
        max_line_bytes: 256,
        ..MapperOptions::default()
    };
    let out = map_all(&data, exited(0), opts);
    assert_eq!(texts(&out), ["\u{fffd} ok"]);
    let f = failure(&out);
    let problems: Vec<(u64, &str)> = f
        .invalid_lines
        .iter()
        .map(|l| (l.line, l.problem.as_str()))
        .collect();
    assert_eq!(
        problems,
        [
            (2, "not JSON: expected ident at line 1 column 2"),
            (3, "not a JSON object"),
            (4, "empty line"),
            (5, "no \"type\""),
            (6, "\"type\" is not a string"),
            (7, "unknown event type \"thought\" (ignored)"),
            (8, "`init` without a string `session_id`"),
            (9, "`message` whose `content` is not a string"),
            (10, "`tool_use` without a string `tool_id`"),
            (11, "`tool_result` without a string `tool_id`"),
            (12, "`error` without a string `message`"),
            (13, "a second `init` with another session id (ignored)"),
            (15, "a second `tool_use` of the same `tool_id` (ignored)"),
            (17, "a second `tool_result` of the same `tool_id` (ignored)"),
            (
                18,
                "invalid UTF-8, decoded lossily (U+FFFD); the record was used"
            ),
            (19, "over the line cap of 256 bytes"),
        ]
    );
    assert_eq!(f.invalid_lines[0].excerpt, "not json");
    // A completed run drops them: they are diagnostics of a failure.
    let mut ok = jsonl(&[init("s")]);
    ok.extend_from_slice(b"garbage\n");
    ok.extend_from_slice(&jsonl(&[result_ok(1, 0, 1)]));
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
fn merged_stderr_lines_are_bad_lines_and_the_result_still_decides() {
    // stdout and stderr in one file (2>&1): Gemini's stderr lines are noted, the rest
    // maps as the stdout alone does.
    let out = map("FAIL400-norelaunch-merged");
    let f = failure(&out);
    assert_eq!(f.reason, FailureReason::ModelError);
    assert_eq!(f.message, failure(&map("FAIL400")).message);
    assert_eq!(f.invalid_lines.len(), 17);
    assert!(f
        .invalid_lines
        .iter()
        .all(|l| l.problem.starts_with("not JSON")));
}

#[test]
fn sessions_once_and_resumed_on_request() {
    let lines = [init("a"), init("a")];
    let out = map_all(&jsonl(&lines), exited(0), MapperOptions::default());
    assert_eq!(kinds(&out), ["session.started", "terminal.failed"]);
    assert_eq!(failure(&out).invalid_lines, []);
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
    let mut mapper = GeminiMapper::new(MapperOptions::default());
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
    let mut mapper = GeminiMapper::new(opts);
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
        Just(exited(144)),
        Just(exited(41)),
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
    let id = || select(vec!["t1", "t2", "t3"]);
    let s = || select(vec!["", "a", "ab", "\u{e9}\u{2028}"]);
    prop_oneof![
        select(vec!["s1", "s2"]).prop_map(init),
        s().prop_map(user),
        s().prop_map(chunk),
        s().prop_map(|t| json!({"type":"message","role":"assistant","content":t})),
        id().prop_map(tool_use),
        (id(), select(vec!["success", "error"])).prop_map(|(i, st)| tool_result(i, st)),
        (0u64..3, 0u64..3).prop_map(|(a, c)| result_ok(a + 3, a, c)),
        s().prop_map(result_error),
        (select(vec!["warning", "error"]), s()).prop_map(|(sv, m)| error(sv, m)),
        Just(json!({"type":"mystery"})),
    ]
}

fn real_lines() -> Vec<Vec<u8>> {
    CAPTURES
        .iter()
        .flat_map(|(n, _)| {
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
    fn gemini_arbitrary_bytes(
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
    fn gemini_event_streams(
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
