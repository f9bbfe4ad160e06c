//! Unit tests of `show`: where the prompt was, the flags by meaning, the replay command
//! line, the shell's status for a signal.

use super::text::signal_status;
use super::*;
use pi_cassette::{EffectiveExpect, Expect};

fn expect(json: &str) -> Expect {
    serde_json::from_str(json).unwrap()
}

#[test]
fn prompt_delivery() {
    let p = prompts(&expect(r#"{"prompt":"Hi.","argv_messages":[]}"#), Some(&[]));
    assert_eq!(
        (p.stdin.as_deref(), p.argv.len(), p.delivery),
        (Some("Hi."), 0, Some("stdin"))
    );
    let e = expect(r#"{"prompt":"Hi.","argv_messages":["Hi.","more"]}"#);
    let p = prompts(&e, Some(&["more".to_string()]));
    assert_eq!((p.stdin, p.argv), (None, vec!["Hi.".into(), "more".into()]));
    let e = expect(r#"{"prompt":"ctx: Hi.","argv_messages":["Hi."]}"#);
    let p = prompts(&e, Some(&[]));
    assert_eq!(
        (p.stdin.as_deref(), p.argv, p.delivery),
        (Some("ctx: "), vec!["Hi.".to_string()], Some("stdin+argv"))
    );
    // v1 without argv_messages: the prompt in argv.
    let p = prompts(&expect(r#"{"prompt":"list files"}"#), None);
    assert_eq!((p.stdin, p.argv), (None, vec!["list files".to_string()]));
    // No expectations: any prompt.
    assert_eq!(prompts(&Expect::default(), None).argv, ["hello"]);
}

#[test]
fn flags_by_meaning() {
    let w = EffectiveExpect {
        mode: Some("json".into()),
        provider: Some("fake".into()),
        model: Some("fake-model".into()),
        thinking: Some("medium".into()),
        tools: Some(vec![
            "write".into(),
            "read".into(),
            "edit".into(),
            "bash".into(),
        ]),
        system_prompt: Some(String::new()),
        no_mcp: Some(false),
        ..EffectiveExpect::default()
    };
    assert_eq!(
        meaning_flags(&w).join(" "),
        "--mode json --provider fake --model fake-model"
    );
    let w = EffectiveExpect {
        mode: Some("rpc".into()),
        thinking: Some("high".into()),
        tools: Some(vec!["read".into()]),
        system_prompt: Some("Be brief.".into()),
        append_system_prompt: Some(vec!["a".into(), "b".into()]),
        no_context_files: Some(true),
        ..EffectiveExpect::default()
    };
    assert_eq!(
        meaning_flags(&w),
        [
            "--mode",
            "rpc",
            "--thinking",
            "high",
            "--tools",
            "read",
            "--system-prompt",
            "Be brief.",
            "--append-system-prompt",
            "a",
            "--append-system-prompt",
            "b",
            "--no-context-files"
        ]
    );
    let none = EffectiveExpect {
        tools: Some(vec![]),
        ..EffectiveExpect::default()
    };
    assert_eq!(meaning_flags(&none), ["--mode", "json", "--no-tools"]);
}

#[test]
fn command_lines() {
    let r = Replay {
        env: vec![
            ("FAKE_PI_CASSETTE".into(), "/c/x y.jsonl".into()),
            ("FAKE_PI_SPEED".into(), "0".into()),
        ],
        argv: vec!["--mode".into(), "json".into(), "Say hello.".into()],
        stdin: None,
        stdin_lines: None,
        session_file: None,
        codex_config: None,
        gemini_settings: None,
        hangs: false,
        notes: vec![],
    };
    assert_eq!(
        r.command_line(),
        "FAKE_PI_CASSETTE='/c/x y.jsonl' FAKE_PI_SPEED=0 PI_CODING_AGENT_DIR=\"$(mktemp -d)\" fake-pi --mode json 'Say hello.' </dev/null"
    );
    let r = Replay {
        argv: vec!["--session".into(), SESSION_FILE.into()],
        stdin: Some("it's".into()),
        session_file: Some(
            r#"{"type":"session","version":3,"id":"x","timestamp":"T","cwd":"CWD"}"#.into(),
        ),
        ..r
    };
    assert_eq!(
        r.command_line(),
        r#"d="$(mktemp -d)" && printf '{"type":"session","version":3,"id":"x","timestamp":"T","cwd":"%s"}\n' "$PWD" > "$d/session.jsonl" && printf %s 'it'\''s' | FAKE_PI_CASSETTE='/c/x y.jsonl' FAKE_PI_SPEED=0 PI_CODING_AGENT_DIR="$d" fake-pi --session "$d/session.jsonl""#
    );
    // A two-way cassette: the client's lines piped one per line, an empty one kept.
    let r = Replay {
        argv: vec!["--mode".into(), "rpc".into()],
        stdin: None,
        stdin_lines: Some(vec![r#"{"type":"get_state"}"#.into(), String::new()]),
        session_file: None,
        ..r
    };
    assert_eq!(
        r.command_line(),
        r#"printf '%s\n' '{"type":"get_state"}' '' | FAKE_PI_CASSETTE='/c/x y.jsonl' FAKE_PI_SPEED=0 PI_CODING_AGENT_DIR="$(mktemp -d)" fake-pi --mode rpc"#
    );
    // A Codex cassette: config.toml written into a fresh CODEX_HOME, one argument a line
    // (a quote in a value kept), the prompt on stdin as `-`.
    let r = Replay {
        argv: vec!["exec".into(), "--json".into(), "-".into()],
        stdin: Some("hi".into()),
        stdin_lines: None,
        codex_config: Some(vec![r#"model = "it's""#.into()]),
        ..r
    };
    assert_eq!(
        r.command_line(),
        r#"d="$(mktemp -d)" && printf '%s\n' 'model = "it'\''s"' > "$d/config.toml" && printf %s hi | FAKE_PI_CASSETTE='/c/x y.jsonl' FAKE_PI_SPEED=0 CODEX_HOME="$d" fake-pi exec --json -"#
    );
}

#[test]
fn signal_statuses() {
    assert_eq!(signal_status("SIGKILL"), Some(137));
    assert_eq!(signal_status("SIGTERM"), Some(143));
    assert_eq!(signal_status("NOPE"), None);
}
