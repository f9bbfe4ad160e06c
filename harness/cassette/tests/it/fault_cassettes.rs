//! Generator and guard for the hand-made fault cassettes in `cassettes/faults/`.
//!
//! Each fault is built from a committed imported cassette of a real pi run (so the
//! surrounding stream has real pi's shape) with one fault added. The test regenerates
//! every fault in memory and fails when a committed file differs, is missing or is not
//! produced by this generator. To rewrite the files after changing the generator:
//!
//! ```sh
//! PI_HARNESS_BLESS=1 cargo test -p pi-cassette --test it fault_cassettes
//! ```

use pi_cassette::{
    Action, Cassette, Dialect, Expect, FlagRule, Header, Origin, OriginKind, PiSource,
    ProcessBehaviour, Record, Scenario, Spawn, TimingKind, FORMAT_NAME, FORMAT_VERSION,
};

use crate::util::cassettes_dir;

const SPACING_MS: f64 = 5.0;
/// The generator the committed faults name in `origin.source`. It is this file's path
/// from before the crate's tests became one binary (`tests/it/`): changing it changes
/// every committed fault (a rewrite with `PI_HARNESS_BLESS=1`), so it stays as recorded.
const GENERATOR: &str = "harness/cassette/tests/fault_cassettes.rs";

/// The stdout lines (each with its `\n`) of a committed imported cassette.
fn base_lines(name: &str) -> (Cassette, Vec<Vec<u8>>) {
    let c = Cassette::load(&cassettes_dir().join(name)).unwrap();
    let lines = c
        .records
        .iter()
        .filter_map(|r| match &r.action {
            Action::Stdout(b) => Some(b.data.clone()),
            _ => None,
        })
        .collect();
    (c, lines)
}

/// Replace the first `from` in `line` by `to`; panics when absent (the base changed).
fn replace(line: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let at = line
        .windows(from.len())
        .position(|w| w == from)
        .unwrap_or_else(|| {
            panic!(
                "{:?} not found in {:?}",
                String::from_utf8_lossy(from),
                String::from_utf8_lossy(line)
            )
        });
    [&line[..at], to, &line[at + from.len()..]].concat()
}

/// Check a base line is the event we think it is (guards the line numbers below).
fn expect_event(lines: &[Vec<u8>], lineno: usize, needle: &str) {
    let line = String::from_utf8_lossy(&lines[lineno - 1]);
    assert!(
        line.contains(needle),
        "base line {lineno} should contain {needle:?}: {line}"
    );
}

struct Fault {
    file: &'static str,
    cassette: Cassette,
}

struct Builder {
    header: Header,
    records: Vec<Record>,
}

impl Builder {
    fn new(
        base: &Cassette,
        base_file: &str,
        scenario: &str,
        description: &str,
        tags: &[&str],
        notes: Option<&str>,
    ) -> Builder {
        Builder {
            header: Header {
                format: FORMAT_NAME.into(),
                version: FORMAT_VERSION,
                mode: None,
                pi: base.header.pi.clone(),
                scenario: Scenario {
                    name: scenario.into(),
                    description: description.into(),
                    tags: tags.iter().map(|t| t.to_string()).collect(),
                },
                expect: base.header.expect.clone(),
                process: ProcessBehaviour::default(),
                redactions: Default::default(),
                origin: Origin {
                    kind: OriginKind::HandMade,
                    source: Some(format!("{GENERATOR} from cassettes/{base_file}")),
                    timing: TimingKind::Synthetic,
                    notes: notes.map(str::to_string),
                },
            },
            records: Vec::new(),
        }
    }

    fn line(&mut self, bytes: &[u8]) -> &mut Self {
        let (body, newline) = match bytes.strip_suffix(b"\n") {
            Some(body) => (body, true),
            None => (bytes, false),
        };
        self.records
            .push(Record::stdout_line(SPACING_MS, body, newline));
        self
    }

    fn lines(&mut self, lines: &[Vec<u8>]) -> &mut Self {
        for l in lines {
            self.line(l);
        }
        self
    }

    fn text(&mut self, text: &str) -> &mut Self {
        self.line(format!("{text}\n").as_bytes())
    }

    fn then(&mut self, dt_ms: f64, action: Action) -> &mut Self {
        self.records.push(Record::new(dt_ms, action));
        self
    }

    fn done(&mut self, file: &'static str) -> Fault {
        Fault {
            file,
            cassette: Cassette {
                header: self.header.clone(),
                records: std::mem::take(&mut self.records),
            },
        }
    }
}

const PI87: &str = "tool_bash.pi87.cassette.jsonl";
const PI73: &str = "tool_bash.pi73.cassette.jsonl";

fn stray_non_json_lines() -> Fault {
    let (base, l) = base_lines(PI87);
    expect_event(&l, 1, r#""type":"session""#);
    expect_event(&l, 32, r#""type":"tool_execution_end""#);
    Builder::new(
        &base,
        PI87,
        "stray_non_json_lines",
        "tool_bash (0.87.1) with non-JSON lines between events: a dotenv banner after the session line, an empty line and a whitespace-only line inside the assistant stream, and an ANSI-coloured warning after the tool result. Every pi event is still there, unchanged; a reader must keep going (and may report the stray lines as diagnostics).",
        &["fault", "non-json", "stray-output", "tool", "bash"],
        Some("Such lines come from things that print to stdout inside pi's process: extensions, dotenv, Node warnings."),
    )
    .lines(&l[..1])
    .text("[dotenv@17.2.3] injecting env (0) from .env")
    .lines(&l[1..12])
    .text("")
    .lines(&l[12..16])
    .text("   \t")
    .lines(&l[16..32])
    .text("\u{1b}[33mwarning\u{1b}[39m: extension \"notify\" failed to load: Cannot find module 'node-notifier'")
    .lines(&l[32..])
    .then(SPACING_MS, Action::Exit(0))
    .done("stray_non_json_lines.pi87.cassette.jsonl")
}

fn non_object_json_line() -> Fault {
    let (base, l) = base_lines(PI87);
    Builder::new(
        &base,
        PI87,
        "non_object_json_line",
        "tool_bash (0.87.1) with JSON lines that are not objects between events: an array holding an event-like object, a string, a number, null and true. They are valid JSON but not pi events; a reader must neither crash nor treat the array's object as an event.",
        &["fault", "non-object-json", "stray-output", "tool", "bash"],
        None,
    )
    .lines(&l[..2])
    .text(r#"[{"type":"agent_start"}]"#)
    .lines(&l[2..9])
    .text(r#""ready""#)
    .text("42")
    .lines(&l[9..28])
    .text("null")
    .lines(&l[28..45])
    .text("true")
    .lines(&l[45..])
    .then(SPACING_MS, Action::Exit(0))
    .done("non_object_json_line.pi87.cassette.jsonl")
}

fn missing_type() -> Fault {
    let (base, l) = base_lines(PI87);
    expect_event(
        &l,
        14,
        r#""type":"text_delta","contentIndex":1,"delta":"I'll ""#,
    );
    // A copy of the first text delta with its event `type` key removed.
    let untyped = replace(&l[13], br#"{"type":"message_update","#, b"{");
    Builder::new(
        &base,
        PI87,
        "missing_type",
        "tool_bash (0.87.1) with JSON objects that have no `type`: a log record after agent_start, and a copy of the first text_delta event with its top-level `type` removed (inserted right after the real one, so the answer text is unchanged if it is skipped). A reader must skip or report them, not crash and not emit text twice.",
        &["fault", "missing-type", "stray-output", "tool", "bash"],
        None,
    )
    .lines(&l[..2])
    .text(r#"{"level":"info","msg":"extension loaded","name":"notify"}"#)
    .lines(&l[2..14])
    .line(&untyped)
    .lines(&l[14..])
    .then(SPACING_MS, Action::Exit(0))
    .done("missing_type.pi87.cassette.jsonl")
}

fn final_line_without_newline() -> Fault {
    let (base, l) = base_lines(PI87);
    expect_event(&l, 47, r#"{"type":"agent_settled"}"#);
    let last = l[46].strip_suffix(b"\n").unwrap().to_vec();
    Builder::new(
        &base,
        PI87,
        "final_line_without_newline",
        "tool_bash (0.87.1) whose last line, {\"type\":\"agent_settled\"}, has no terminating newline before exit 0. A reader must still deliver that line at EOF.",
        &["fault", "no-final-newline", "tool", "bash"],
        None,
    )
    .lines(&l[..46])
    .line(&last)
    .then(SPACING_MS, Action::Exit(0))
    .done("final_line_without_newline.pi87.cassette.jsonl")
}

fn invalid_utf8() -> Fault {
    let (base, l) = base_lines(PI87);
    expect_event(&l, 14, r#""delta":"I'll ""#);
    expect_event(&l, 30, r#""text":"hi\n""#);
    let delta = replace(&l[13], br#""delta":"I'll ""#, b"\"delta\":\"I\xe2\x80ll \"");
    let tool = replace(&l[29], br#""text":"hi\n""#, b"\"text\":\"hi\xff\xfe\\n\"");
    Builder::new(
        &base,
        PI87,
        "invalid_utf8",
        "tool_bash (0.87.1) with invalid UTF-8 inside two JSON strings: the first text_delta holds a truncated 3-byte sequence (E2 80) in place of an apostrophe, and a tool_execution_update's output holds the bytes FF FE. Those lines are stored as stdout_b64. A reader must not crash; lossy decoding (U+FFFD) keeps the rest of the line usable.",
        &["fault", "invalid-utf8", "binary", "tool", "bash"],
        None,
    )
    .lines(&l[..13])
    .line(&delta)
    .lines(&l[14..29])
    .line(&tool)
    .lines(&l[30..])
    .then(SPACING_MS, Action::Exit(0))
    .done("invalid_utf8.pi87.cassette.jsonl")
}

/// Length of the giant text in the 4 MiB line.
const HUGE: usize = 4 * 1024 * 1024;

fn huge_line() -> Fault {
    let (base, l) = base_lines(PI87);
    expect_event(
        &l,
        30,
        r#""partialResult":{"content":[{"type":"text","text":"hi\n"}]"#,
    );
    let chunk = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_";
    let big: String = chunk.repeat(HUGE / chunk.len());
    assert_eq!(big.len(), HUGE);
    let line = replace(
        &l[29],
        br#""text":"hi\n""#,
        format!(r#""text":"hi\n{big}""#).as_bytes(),
    );
    Builder::new(
        &base,
        PI87,
        "huge_line_4mib",
        "tool_bash (0.87.1) where one tool_execution_update line is just over 4 MiB (a tool printing one enormous line of output); the final tool result is the normal short one. Stored gzip-compressed. A reader with a line cap must fail or truncate that line cleanly and say so; one without must not choke.",
        &["fault", "huge-line", "line-cap", "tool", "bash"],
        None,
    )
    .lines(&l[..29])
    .line(&line)
    .lines(&l[30..])
    .then(SPACING_MS, Action::Exit(0))
    .done("huge_line_4mib.pi87.cassette.jsonl.gz")
}

fn hang_after_output() -> Fault {
    let (base, l) = base_lines(PI87);
    expect_event(&l, 16, r#""type":"text_delta""#);
    Builder::new(
        &base,
        PI87,
        "hang_after_output",
        "tool_bash (0.87.1) cut after the third text_delta (line 16 of the real stream): the process stays alive and silent with stdout open, as pi does when the provider stalls mid-stream. Only the caller's timeout or cancellation ends it (SIGTERM: exit 143).",
        &["fault", "hang", "stall", "timeout", "cancel"],
        None,
    )
    .lines(&l[..16])
    .then(SPACING_MS, Action::Hang)
    .done("hang_after_output.pi87.cassette.jsonl")
}

fn hang_child_ignores_sigterm() -> Fault {
    let (base, l) = base_lines(PI87);
    expect_event(
        &l,
        28,
        r#""type":"tool_execution_start","toolCallId":"call_1""#,
    );
    Builder::new(
        &base,
        PI87,
        "hang_child_ignores_sigterm",
        "tool_bash (0.87.1) up to the first tool_execution_update, with the bash tool's child started in its own session (setsid) and ignoring SIGTERM; then the process hangs. SIGTERM to pi makes pi SIGKILL its tracked child and exit 143, but a caller that kills pi another way (SIGINT, SIGKILL) or signals the tree with SIGTERM leaves the child running: it must find it and use SIGKILL.",
        &["fault", "hang", "child-process", "ignore-sigterm", "own-session", "orphan", "cancel"],
        None,
    )
    .lines(&l[..28])
    .then(
        0.0,
        Action::Spawn(Spawn {
            id: "call_1".into(),
            own_session: true,
            ignore_sigterm: true,
            hold_stdout: false,
            grandchild: None,
            lifetime_ms: None,
            // What pi's bash tool runs for this call: `ps` shows it, not fake-pi.
            argv: Some(vec![
                "/bin/bash".into(),
                "-c".into(),
                "echo hi; ls /srv/demo".into(),
            ]),
        }),
    )
    .lines(&l[28..29])
    .then(SPACING_MS, Action::Hang)
    .done("hang_child_ignores_sigterm.pi87.cassette.jsonl")
}

fn exit1_with_stderr() -> Fault {
    let (base, _) = base_lines(PI73);
    let mut b = Builder::new(
        &base,
        PI73,
        "exit1_unknown_option",
        "pi 0.73.1 given --exclude-tools, which only 0.87.1 knows: nothing on stdout, 'Error: Unknown option: --exclude-tools' on stderr, exit 1 (measured with real 0.73.1). A caller must surface stderr and the exit code, not report an empty successful run.",
        &["fault", "exit-1", "stderr", "cli-error", "version-mismatch"],
        Some("Measured: pi 0.73.1 --mode json --provider fake --model fake-model --exclude-tools bash hi -> stderr as recorded, exit 1. The expectations leave --exclude-tools out: a 0.73.1 fake-pi given that flag rejects it by itself with these same bytes; this cassette replays the CLI-error shape (stderr, exit 1, no stdout) for any caller."),
    );
    b.header.expect = Expect {
        flags: [
            ("mode", FlagRule::Value("json".into())),
            ("provider", FlagRule::Value("fake".into())),
            ("model", FlagRule::Value("fake-model".into())),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect(),
        ..Expect::default()
    };
    b.records.push(Record::stderr_chunk(
        80.0,
        b"Error: Unknown option: --exclude-tools\n",
    ));
    b.then(1.0, Action::Exit(1))
        .done("exit1_unknown_option.pi73.cassette.jsonl")
}

fn sigkill_mid_stream() -> Fault {
    let (base, l) = base_lines(PI87);
    expect_event(&l, 20, r#""type":"toolcall_delta""#);
    Builder::new(
        &base,
        PI87,
        "sigkill_mid_stream",
        "tool_bash (0.87.1) killed by SIGKILL (as by the OOM killer) in the middle of the tool call's argument deltas: no message_end, no agent_end, stdout closes, the process dies by signal 9. A caller must report a failed run, not a finished one.",
        &["fault", "killed", "sigkill", "truncated-stream"],
        None,
    )
    .lines(&l[..20])
    .then(SPACING_MS, Action::Signal("SIGKILL".into()))
    .done("sigkill_mid_stream.pi87.cassette.jsonl")
}

// ---- snapshot-only producer with a replayed prefix -------------------------------

const USAGE0: &str = r#"{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}"#;
const TOOL_CALL: &str = r#"{"type":"toolCall","id":"call_1","name":"bash","arguments":{"command":"echo hi; ls /srv/demo"}}"#;

fn js(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

fn text_block(text: &str) -> String {
    format!(r#"{{"type":"text","text":{}}}"#, js(text))
}

fn assistant(content: &[String], stop: &str, ts: u64) -> String {
    format!(
        r#"{{"role":"assistant","content":[{}],"api":"openai-completions","provider":"fake","model":"fake-model","usage":{USAGE0},"stopReason":"{stop}","timestamp":{ts}}}"#,
        content.join(",")
    )
}

fn update(event: &str, index: usize, extra: &str, msg: &str) -> String {
    format!(
        r#"{{"type":"message_update","assistantMessageEvent":{{"type":"{event}","contentIndex":{index}{extra},"partial":{msg}}},"message":{msg}}}"#
    )
}

/// The message inside a `{"type":"message_end","message":...}` line.
fn message_of(line: &[u8]) -> String {
    let s = std::str::from_utf8(line).unwrap().trim_end();
    s.strip_prefix(r#"{"type":"message_end","message":"#)
        .and_then(|s| s.strip_suffix('}'))
        .unwrap_or_else(|| panic!("not a message_end line: {s}"))
        .to_string()
}

fn replayed_prefix_snapshot_only() -> Fault {
    let (base, l) = base_lines(PI73);
    expect_event(&l, 5, r#""type":"message_end","message":{"role":"user""#);
    expect_event(&l, 26, r#""type":"tool_execution_start""#);
    expect_event(
        &l,
        32,
        r#""type":"message_end","message":{"role":"toolResult""#,
    );
    let user = message_of(&l[4]);
    let tool_result = message_of(&l[31]);
    let t1 = 1795302188805;
    let t2 = 1795302188945;
    let turn1 = "I'll list the files.";
    let mut b = Builder::new(
        &base,
        PI73,
        "replayed_prefix_snapshot_only",
        "A snapshot-only producer (older pi, or the agent behind a pi provider extension): message_update carries only full snapshots (`partial`, `message`), no `delta`. Turn 1 says \"I'll list the files.\" and calls bash; after the tool, every turn-2 snapshot starts with turn 1's text again (\"I'll list the files.The directory ...\"), text_end included. message_end, turn_end and agent_end hold the true turn-2 text \"The directory has a server.\". A mapper that diffs snapshots must emit \"I'll list the files.\" once and then only \"The directory has a server.\".",
        &["fault", "snapshot-only", "replayed-prefix", "tool", "bash"],
        Some("Shapes follow pi 0.73.1 (events, messages, tool lines copied from tool_bash.pi73) with the delta fields removed and the snapshots made exact; pi.version names the 0.73.1 shapes, pi.dialect says snapshot-only."),
    );
    b.header.pi = PiSource::new("0.73.1", Dialect::SnapshotOnly);
    b.lines(&l[..5]);
    // Turn 1: text then a tool call, snapshots only.
    let msg = |content: &[String], stop: &str, ts| assistant(content, stop, ts);
    b.text(&format!(
        r#"{{"type":"message_start","message":{}}}"#,
        msg(&[], "stop", t1)
    ));
    b.text(&update(
        "text_start",
        0,
        "",
        &msg(&[text_block("")], "stop", t1),
    ));
    for upto in ["I'll ", "I'll list ", turn1] {
        b.text(&update(
            "text_delta",
            0,
            "",
            &msg(&[text_block(upto)], "stop", t1),
        ));
    }
    b.text(&update(
        "text_end",
        0,
        &format!(r#","content":{}"#, js(turn1)),
        &msg(&[text_block(turn1)], "stop", t1),
    ));
    let start_call = TOOL_CALL.replace(
        r#""arguments":{"command":"echo hi; ls /srv/demo"}"#,
        r#""arguments":{}"#,
    );
    b.text(&update(
        "toolcall_start",
        1,
        "",
        &msg(&[text_block(turn1), start_call], "stop", t1),
    ));
    let final1 = msg(&[text_block(turn1), TOOL_CALL.to_string()], "toolUse", t1);
    b.text(&update(
        "toolcall_end",
        1,
        &format!(r#","toolCall":{TOOL_CALL}"#),
        &final1,
    ));
    b.text(&format!(r#"{{"type":"message_end","message":{final1}}}"#));
    // The tool run, as real pi 0.73.1 printed it.
    b.lines(&l[25..32]);
    b.text(&format!(
        r#"{{"type":"turn_end","message":{final1},"toolResults":[{tool_result}]}}"#
    ));
    // Turn 2: every snapshot replays turn 1's text as a prefix.
    b.text(r#"{"type":"turn_start"}"#);
    b.text(&format!(
        r#"{{"type":"message_start","message":{}}}"#,
        msg(&[], "stop", t2)
    ));
    b.text(&update(
        "text_start",
        0,
        "",
        &msg(&[text_block(turn1)], "stop", t2),
    ));
    let answer = "The directory has a server.";
    for upto in ["The ", "The directory ", "The directory has ", answer] {
        let snap = format!("{turn1}{upto}");
        b.text(&update(
            "text_delta",
            0,
            "",
            &msg(&[text_block(&snap)], "stop", t2),
        ));
    }
    let snap = format!("{turn1}{answer}");
    b.text(&update(
        "text_end",
        0,
        &format!(r#","content":{}"#, js(&snap)),
        &msg(&[text_block(&snap)], "stop", t2),
    ));
    let final2 = msg(&[text_block(answer)], "stop", t2);
    b.text(&format!(r#"{{"type":"message_end","message":{final2}}}"#));
    b.text(&format!(
        r#"{{"type":"turn_end","message":{final2},"toolResults":[]}}"#
    ));
    b.text(&format!(
        r#"{{"type":"agent_end","messages":[{user},{final1},{tool_result},{final2}]}}"#
    ));
    b.then(SPACING_MS, Action::Exit(0))
        .done("replayed_prefix_snapshot_only.pi73.cassette.jsonl")
}

fn all_faults() -> Vec<Fault> {
    vec![
        stray_non_json_lines(),
        non_object_json_line(),
        missing_type(),
        replayed_prefix_snapshot_only(),
        final_line_without_newline(),
        invalid_utf8(),
        huge_line(),
        hang_after_output(),
        hang_child_ignores_sigterm(),
        exit1_with_stderr(),
        sigkill_mid_stream(),
    ]
}

#[test]
fn committed_fault_cassettes_match_their_generator() {
    let dir = cassettes_dir().join("faults");
    let faults = all_faults();
    let bless = std::env::var_os("PI_HARNESS_BLESS").is_some_and(|v| v == "1");
    let mut problems = Vec::new();
    for f in &faults {
        let path = dir.join(f.file);
        // Every generated cassette must itself be valid and round-trip.
        let text = f.cassette.to_jsonl();
        let reparsed = Cassette::parse(&path, text.as_bytes())
            .unwrap_or_else(|e| panic!("generated {} is invalid: {e}", f.file));
        assert_eq!(reparsed.to_jsonl(), text, "{} does not round-trip", f.file);
        if bless {
            f.cassette.save(&path).unwrap();
            continue;
        }
        match Cassette::load(&path) {
            Ok(c) if c.to_jsonl() == text => {}
            Ok(_) => problems.push(format!("{} differs from its generator", path.display())),
            Err(e) => problems.push(format!("{e}")),
        }
    }
    let known: Vec<&str> = faults.iter().map(|f| f.file).collect();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if name.contains(".cassette.jsonl") && !known.contains(&name.as_str()) {
            problems.push(format!(
                "cassettes/faults/{name} is not made by {GENERATOR}"
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "{}\nrewrite with: PI_HARNESS_BLESS=1 cargo test -p pi-cassette --test it fault_cassettes",
        problems.join("\n")
    );
}

fn fault(name: &str) -> &'static Cassette {
    static FAULTS: std::sync::OnceLock<Vec<Fault>> = std::sync::OnceLock::new();
    &FAULTS
        .get_or_init(all_faults)
        .iter()
        .find(|f| f.file.starts_with(name))
        .unwrap()
        .cassette
}

fn stdout_lines(c: &Cassette) -> Vec<Vec<u8>> {
    c.records
        .iter()
        .filter_map(|r| match &r.action {
            Action::Stdout(b) => Some(b.data.clone()),
            _ => None,
        })
        .collect()
}

fn is_object_with_type(line: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(line)
        .ok()
        .is_some_and(|v| v.get("type").is_some_and(|t| t.is_string()))
}

#[test]
fn each_fault_shows_its_fault() {
    // Stray lines: some lines are not JSON at all.
    let c = fault("stray_non_json_lines");
    let bad = stdout_lines(c)
        .iter()
        .filter(|l| serde_json::from_slice::<serde_json::Value>(l).is_err())
        .count();
    assert_eq!(bad, 4);

    // Non-object JSON: valid JSON, not objects.
    let c = fault("non_object_json_line");
    let non_objects = stdout_lines(c)
        .iter()
        .filter_map(|l| serde_json::from_slice::<serde_json::Value>(l).ok())
        .filter(|v| !v.is_object())
        .count();
    assert_eq!(non_objects, 5);

    // Missing type: objects without `type`.
    let c = fault("missing_type");
    let untyped = stdout_lines(c)
        .iter()
        .filter(|l| !is_object_with_type(l))
        .count();
    assert_eq!(untyped, 2);

    // Final line: no newline.
    let c = fault("final_line_without_newline");
    assert!(c.stdout_bytes().ends_with(b"{\"type\":\"agent_settled\"}"));

    // Invalid UTF-8: exactly two lines, stored as base64.
    let c = fault("invalid_utf8");
    let b64 = c
        .records
        .iter()
        .filter(|r| r.action.key() == "stdout_b64")
        .count();
    assert_eq!(b64, 2);
    assert!(std::str::from_utf8(&c.stdout_bytes()).is_err());

    // Huge line: one line longer than 4 MiB, all others short.
    let c = fault("huge_line_4mib");
    let lens: Vec<usize> = stdout_lines(c).iter().map(Vec::len).collect();
    assert_eq!(lens.iter().filter(|&&n| n > HUGE).count(), 1);
    assert!(lens.iter().filter(|&&n| n <= HUGE).all(|&n| n < 64 * 1024));

    // Endings.
    assert_eq!(fault("hang_after_output").ending(), &Action::Hang);
    assert_eq!(
        fault("sigkill_mid_stream").ending(),
        &Action::Signal("SIGKILL".into())
    );
    let c = fault("exit1_unknown_option");
    assert_eq!(c.ending(), &Action::Exit(1));
    assert!(c.stdout_bytes().is_empty());
    assert_eq!(
        c.stderr_bytes(),
        b"Error: Unknown option: --exclude-tools\n"
    );
    let c = fault("hang_child_ignores_sigterm");
    assert_eq!(c.ending(), &Action::Hang);
    assert!(c.records.iter().any(|r| matches!(&r.action,
        Action::Spawn(s) if s.own_session && s.ignore_sigterm)));
}

#[test]
fn snapshot_only_fault_replays_the_previous_turn_as_prefix() {
    let c = fault("replayed_prefix_snapshot_only");
    assert_eq!(c.header.pi.dialect, Dialect::SnapshotOnly);
    let events: Vec<serde_json::Value> = stdout_lines(c)
        .iter()
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect();
    // No deltas anywhere.
    assert!(events
        .iter()
        .all(|e| e["assistantMessageEvent"].get("delta").is_none()));
    let snapshot_texts: Vec<&str> = events
        .iter()
        .filter(|e| e["assistantMessageEvent"]["type"] == "text_delta")
        .map(|e| e["message"]["content"][0]["text"].as_str().unwrap())
        .collect();
    assert_eq!(
        snapshot_texts,
        [
            "I'll ",
            "I'll list ",
            "I'll list the files.",
            "I'll list the files.The ",
            "I'll list the files.The directory ",
            "I'll list the files.The directory has ",
            "I'll list the files.The directory has a server.",
        ]
    );
    let ends: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["type"] == "message_end" && e["message"]["role"] == "assistant")
        .collect();
    assert_eq!(ends.len(), 2);
    assert_eq!(
        ends[1]["message"]["content"][0]["text"],
        "The directory has a server."
    );
    let agent_end = events.iter().find(|e| e["type"] == "agent_end").unwrap();
    assert_eq!(agent_end["messages"].as_array().unwrap().len(), 4);
}
