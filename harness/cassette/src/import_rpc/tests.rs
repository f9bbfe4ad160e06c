//! Transcripts to two-way cassettes: records, replies and timing; pi's raw stdout kept and
//! checked; bad transcripts named by line; a client's SIGKILL; a Claude Code host's
//! transcript with its tool run.

use super::*;
use crate::import::Ending;
use crate::Action;

fn opts() -> ImportOptions {
    ImportOptions::new("1.5.2", "t", "d", Ending::Exit(0))
}

const TRANSCRIPT: &str = r#"{"t_ms": 1, "note": "started"}
{"t_ms": 2.5, "stdin": {"id": "p1", "type": "prompt", "message": "hi"}}
{"t_ms": 600, "stdout": {"id": "p1", "type": "response", "command": "prompt", "success": true}}
{"t_ms": 601, "stdout": {"type": "message_start", "message": {"role": "assistant"}}}
{"t_ms": 602, "stdin": {"type": "get_state"}}
{"t_ms": 603, "stdout": {"type": "response", "command": "get_state", "success": true}}
{"t_ms": 604, "stdin_raw": "not json"}
{"t_ms": 605, "stdout": {"type": "response", "command": "parse", "success": false}}
{"t_ms": 700, "stdin_close": true}
{"t_ms": 730, "exit": 0}
{"t_ms": 731, "ps": []}
"#;

#[test]
fn a_transcript_becomes_a_two_way_cassette() {
    let requests = br#"{"index":1,"messages":[]}"#;
    let more = TwoWayInputs {
        requests: Some((Path::new("r"), requests)),
        ..TwoWayInputs::default()
    };
    let c = import_transcript(Path::new("t"), TRANSCRIPT.as_bytes(), &opts(), &more).unwrap();
    assert_eq!(c.header.version, 2);
    assert_eq!(c.header.mode.as_deref(), Some("rpc"));
    assert_eq!(c.header.origin.timing, TimingKind::Measured);
    let keys: Vec<&str> = c.records.iter().map(|r| r.action.key()).collect();
    assert_eq!(
        keys,
        [
            "stdin",
            "stdout",
            "request",
            "stdout",
            "stdin",
            "stdout",
            "stdin_text",
            "stdout",
            "stdin_close",
            "exit"
        ]
    );
    let replies: Vec<Option<u32>> = c.records.iter().map(|r| r.reply).collect();
    assert_eq!(
        replies[1],
        Some(0),
        "the prompt's response names line 0 by id"
    );
    assert_eq!(replies[5], Some(1), "get_state without id: by command");
    assert_eq!(replies[7], None, "a parse error answers no command");
    assert_eq!(c.records[1].dt_ms, 597.5);
    assert_eq!(c.records[9].dt_ms, 30.0);
    // Written and read back: the same cassette.
    let back = Cassette::parse(Path::new("x"), c.to_jsonl().as_bytes()).unwrap();
    assert_eq!(back.records.len(), c.records.len());
    assert_eq!(back.stdout_bytes(), c.stdout_bytes());
}

#[test]
fn raw_stdout_keeps_pis_bytes_and_must_agree() {
    let t = "{\"stdin\": {\"type\": \"get_state\"}}\n{\"stdout\": {\"type\": \"response\", \"command\": \"get_state\"}}\n{\"exit\": 0}\n";
    let raw = b"{\"type\":\"response\",\"command\":\"get_state\"}\n";
    let more = TwoWayInputs {
        raw_stdout: Some((Path::new("raw"), raw)),
        ..TwoWayInputs::default()
    };
    let c = import_transcript(Path::new("t"), t.as_bytes(), &opts(), &more).unwrap();
    assert_eq!(c.stdout_bytes(), raw);
    let other = b"{\"type\":\"response\",\"command\":\"get_messages\"}\n";
    let more = TwoWayInputs {
        raw_stdout: Some((Path::new("raw"), other)),
        ..TwoWayInputs::default()
    };
    let e = import_transcript(Path::new("t"), t.as_bytes(), &opts(), &more).unwrap_err();
    assert!(e.to_string().contains("t:2:"), "{e}");
    assert!(e.to_string().contains("not the next line of raw"), "{e}");
}

#[test]
fn bad_transcripts_name_the_line() {
    for (t, want) in [
        (
            "{\"stdin\": {}}\n{\"bogus\": 1}\n",
            "t:2: unknown entry `bogus`",
        ),
        ("{\"stdin\": {}, \"stdout\": {}}\n", "t:1: several actions"),
        ("[1]\n", "t:1: not a JSON object"),
        (
            "{\"send_signal\": \"SIGUSR1\"}\n",
            "does not answer SIGUSR1",
        ),
        (
            "{\"exit\": 0}\n{\"stdout\": {}}\n",
            "t:2: `stdout` after pi ended (line 1)",
        ),
        ("{\"stdin\": {}}\n", "does not say how pi ended"),
    ] {
        let more = TwoWayInputs::default();
        let e = import_transcript(Path::new("t"), t.as_bytes(), &opts(), &more).unwrap_err();
        assert!(e.to_string().contains(want), "{t}: {e}");
    }
}

#[test]
fn a_client_sigkill_ends_in_hang() {
    let t = "{\"stdin\": {\"type\": \"prompt\", \"message\": \"x\"}}\n{\"send_signal\": \"SIGKILL\"}\n{\"signal\": \"SIGKILL\"}\n";
    let c = import_transcript(
        Path::new("t"),
        t.as_bytes(),
        &opts(),
        &TwoWayInputs::default(),
    )
    .unwrap();
    assert_eq!(c.ending(), &Action::Hang);
}

/// A Claude Code host's transcript (shortened from a real one): the CLI's permission
/// prompt, the host's allow, the tool's run, an interrupt of the host's own.
const CLAUDE: &str = r#"{"t_ms": 1, "stdin": {"type": "user", "session_id": "", "message": {"role": "user", "content": "touch x"}}}
{"t_ms": 700, "stdout": {"type": "system", "subtype": "init", "session_id": "s-1"}}
{"t_ms": 710, "stdout": {"type": "stream_event", "event": {"type": "message_start"}}}
{"t_ms": 720, "stdout": {"type": "assistant", "message": {"id": "msg_1", "content": [{"type": "tool_use", "id": "toolu_01", "name": "Bash", "input": {"command": "touch x"}}]}}}
{"t_ms": 730, "stdout": {"type": "stream_event", "event": {"type": "message_stop"}}}
{"t_ms": 740, "stdout": {"type": "control_request", "request_id": "r-9", "request": {"subtype": "can_use_tool", "tool_name": "Bash", "input": {"command": "touch x"}, "tool_use_id": "toolu_01"}}}
{"t_ms": 741, "stdin": {"type": "control_response", "response": {"subtype": "success", "request_id": "r-9", "response": {"behavior": "allow"}}}}
{"t_ms": 800, "stdout": {"type": "user", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "", "is_error": false}]}}}
{"t_ms": 810, "stdin": {"type": "control_request", "request_id": "int-1", "request": {"subtype": "interrupt"}}}
{"t_ms": 820, "stdout": {"type": "control_response", "response": {"subtype": "success", "request_id": "int-1", "response": {"still_queued": []}}}}
{"t_ms": 830, "stdin_close": true}
{"t_ms": 900, "exit": 0}
"#;

#[test]
fn a_claude_transcript_ties_answers_by_request_id_and_runs_the_allowed_tool() {
    let mut o = ImportOptions::new("2.1.330", "t", "d", Ending::Exit(0));
    let more = TwoWayInputs {
        spawn_tools: true,
        protocol: Protocol::StreamJson,
        ..TwoWayInputs::default()
    };
    // The options are required, by their long names.
    let e = import_transcript(Path::new("t"), CLAUDE.as_bytes(), &o, &more).unwrap_err();
    assert!(
        e.to_string().contains("give the Claude Code options"),
        "{e}"
    );
    o.expect.flags.insert("p".into(), FlagRule::Present(true));
    let e = import_transcript(Path::new("t"), CLAUDE.as_bytes(), &o, &more).unwrap_err();
    assert!(
        e.to_string()
            .contains("--flag p: Claude Code has no option --p"),
        "{e}"
    );
    o.expect.flags.clear();
    o.expect
        .flags
        .insert("print".into(), FlagRule::Present(true));
    o.expect
        .flags
        .insert("input-format".into(), FlagRule::Value("stream-json".into()));
    let more = TwoWayInputs {
        spawn_tools: true,
        protocol: Protocol::StreamJson,
        ..TwoWayInputs::default()
    };
    let c = import_transcript(Path::new("t"), CLAUDE.as_bytes(), &o, &more).unwrap();
    assert_eq!(c.header.mode.as_deref(), Some("stream-json"));
    assert_eq!(c.header.pi.dialect, crate::Dialect::StreamJson);
    assert_eq!(c.header.expect.env, ["ANTHROPIC_API_KEY"]);
    assert!(c
        .header
        .to_json()
        .contains(r#","claude":{"version":"2.1.330""#));
    let kinds: Vec<String> = c
        .records
        .iter()
        .map(|r| match &r.action {
            Action::Stdout(b) => {
                let v: Value = serde_json::from_slice(&b.data).unwrap();
                format!("out {}", v["type"].as_str().unwrap())
            }
            Action::Stdin(l) => {
                let v: Value = serde_json::from_str(&l.json).unwrap();
                format!("in {}", v["type"].as_str().unwrap())
            }
            Action::Spawn(s) => format!("spawn {}", s.id),
            Action::Reap(id) => format!("reap {id}"),
            Action::StdinClose => "close".into(),
            Action::Exit(c) => format!("exit {c}"),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "in user",
            "out system",
            "out stream_event",
            "out assistant",
            "out stream_event",
            "out control_request",
            "in control_response",
            // The tool runs from the host's allow to its result.
            "spawn toolu_01",
            "reap toolu_01",
            "out user",
            "in control_request",
            "out control_response",
            "close",
            "exit 0",
        ]
    );
    // The CLI's answer to the interrupt names the host's line (index 2 of the host's
    // lines) by its request_id; the CLI's own permission prompt is no reply.
    let replies: Vec<Option<u32>> = c.records.iter().map(|r| r.reply).collect();
    assert_eq!(replies[11], Some(2));
    assert!(replies[..11].iter().all(Option::is_none));
    // Round trip through the one reader.
    let back = crate::Cassette::parse(Path::new("t"), c.to_jsonl().as_bytes()).unwrap();
    assert_eq!(back.to_jsonl(), c.to_jsonl());
    // SIGINT interrupts the turn, then the CLI exits 0.
    assert_eq!(
        c.header.process.on_sigint,
        crate::SignalAction::CleanupExit { code: 0 }
    );
}

/// `host` entries of a stream-json transcript are annotations, as FORMAT.md says (the
/// importer refused them); a stdin close after the ending is refused, naming its line.
#[test]
fn host_entries_are_annotations_and_nothing_follows_the_ending() {
    let mut o = ImportOptions::new("2.1.330", "t", "d", Ending::Exit(0));
    o.expect
        .flags
        .insert("print".into(), FlagRule::Present(true));
    let more = TwoWayInputs {
        spawn_tools: true,
        protocol: Protocol::StreamJson,
        ..TwoWayInputs::default()
    };
    let with_host = CLAUDE.replacen(
        "{\"t_ms\": 700,",
        "{\"t_ms\": 2, \"host\": \"sent the prompt\"}\n{\"t_ms\": 700,",
        1,
    );
    let plain = import_transcript(Path::new("t"), CLAUDE.as_bytes(), &o, &more).unwrap();
    let c = import_transcript(Path::new("t"), with_host.as_bytes(), &o, &more).unwrap();
    assert_eq!(c.records, plain.records);
    let late = CLAUDE.replace(
        "{\"t_ms\": 830, \"stdin_close\": true}\n{\"t_ms\": 900, \"exit\": 0}\n",
        "{\"t_ms\": 900, \"exit\": 0}\n{\"t_ms\": 930, \"stdin_close\": true}\n",
    );
    assert_ne!(late, CLAUDE);
    let e = import_transcript(Path::new("t"), late.as_bytes(), &o, &more).unwrap_err();
    assert_eq!(
        e.to_string(),
        "t:12: `stdin_close` after pi ended (line 11); nothing but annotations may follow"
    );
}

/// A Claude Code turn whose model calls failed: each failed attempt's request goes before the
/// line that reports it (the `api_retry`, or the `<synthetic>` text the CLI invents when it
/// gives up), the successful one's before its `message_start`; none after the `result`.
#[test]
fn a_retried_claude_call_has_its_requests_before_the_lines_they_caused() {
    let mut o = ImportOptions::new("2.1.330", "t", "d", Ending::Exit(0));
    o.expect
        .flags
        .insert("print".into(), FlagRule::Present(true));
    let transcript = r#"{"t_ms": 1, "stdin": {"type": "user", "session_id": "", "message": {"role": "user", "content": "hi"}}}
{"t_ms": 700, "stdout": {"type": "system", "subtype": "init", "session_id": "s-1"}}
{"t_ms": 710, "stdout": {"type": "system", "subtype": "api_retry", "attempt": 1}}
{"t_ms": 720, "stdout": {"type": "stream_event", "event": {"type": "message_start"}}}
{"t_ms": 730, "stdout": {"type": "assistant", "message": {"id": "msg_1", "model": "m", "content": [{"type": "text", "text": "hello"}]}}}
{"t_ms": 740, "stdout": {"type": "result", "subtype": "success", "is_error": false}}
{"t_ms": 750, "stdin": {"type": "user", "session_id": "", "message": {"role": "user", "content": "again"}}}
{"t_ms": 760, "stdout": {"type": "system", "subtype": "init", "session_id": "s-1"}}
{"t_ms": 770, "stdout": {"type": "assistant", "message": {"id": "x", "model": "<synthetic>", "content": [{"type": "text", "text": "API Error: 500"}]}}}
{"t_ms": 780, "stdout": {"type": "result", "subtype": "success", "is_error": true}}
{"t_ms": 790, "stdin_close": true}
{"t_ms": 800, "exit": 1}
"#;
    let log = [529, 200, 500]
        .iter()
        .enumerate()
        .map(|(i, s)| format!("{{\"index\":{i},\"status\":{s}}}\n"))
        .collect::<String>();
    let more = TwoWayInputs {
        protocol: Protocol::StreamJson,
        requests: Some((Path::new("log"), log.as_bytes())),
        ..TwoWayInputs::default()
    };
    let c = import_transcript(Path::new("t"), transcript.as_bytes(), &o, &more).unwrap();
    let kinds: Vec<String> = c
        .records
        .iter()
        .map(|r| match &r.action {
            Action::Request(q) => {
                let v: Value = serde_json::from_str(q).unwrap();
                format!("request {}", v["status"])
            }
            Action::Stdout(b) => {
                let v: Value = serde_json::from_slice(&b.data).unwrap();
                let t = v["type"].as_str().unwrap().to_string();
                match v["subtype"].as_str() {
                    Some(s) => format!("out {t}/{s}"),
                    None => format!("out {t}"),
                }
            }
            Action::Stdin(_) => "in".into(),
            Action::StdinClose => "close".into(),
            Action::Exit(c) => format!("exit {c}"),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "in",
            "out system/init",
            "request 529",
            "out system/api_retry",
            "request 200",
            "out stream_event",
            "out assistant",
            "out result/success",
            "in",
            "out system/init",
            "request 500",
            "out assistant",
            "out result/success",
            "close",
            "exit 1",
        ]
    );
}
