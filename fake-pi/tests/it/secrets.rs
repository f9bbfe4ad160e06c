//! A value the cassette marks secret (`expect.never_in_argv`) is said by no line of fake-pi's
//! own, whatever message path it takes: each kind of mismatch (the prompt, the model, a
//! flag's value, a follow-up, the argv check itself) as pi, Codex, Gemini CLI and Claude
//! Code, a two-way client's line, and `FAKE_PI_REPORT`. Every byte fake-pi writes (stdout,
//! stderr, the report) is searched for the value.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::util::*;

/// The key a caller put where it does not belong.
const KEY: &str = "sk-live-5ecret-0123456789abcdef";

/// A copy of the committed cassette `name` in the world whose header also marks `var`
/// secret (and, when `syntax`, compares the flags literally, `--model fake-model` among them).
fn marked(w: &World, name: &str, var: &str, syntax: bool) -> PathBuf {
    let text = std::fs::read_to_string(repo_cassette(name)).unwrap();
    let (head, rest) = text.split_once('\n').unwrap();
    let mut header: serde_json::Value = serde_json::from_str(head).unwrap();
    header["expect"]["never_in_argv"] = serde_json::json!([{ "env": var }]);
    if syntax {
        header["expect"]["syntax"] = true.into();
        header["expect"]["flags"]["model"] = "fake-model".into();
    }
    let file = Path::new(name).file_name().unwrap().to_string_lossy();
    w.write(&format!("secret-{file}"), format!("{header}\n{rest}"))
}

/// Run `cmd` (its report in the world), feeding `stdin`; then search every byte it wrote.
/// Returns fake-pi's own lines, for the caller to check that the path it meant was taken.
fn run_and_grep(w: &World, what: &str, mut cmd: Command, stdin: &[u8]) -> Vec<String> {
    let report = w
        .path()
        .join(format!("report-{}.jsonl", what.replace(' ', "-")));
    let mut child = cmd
        .env("FAKE_PI_REPORT", &report)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let _ = input.write_all(stdin);
    drop(input);
    let out = child.wait_with_output().unwrap();
    let report_bytes = std::fs::read(&report).unwrap_or_default();
    for (stream, bytes) in [
        ("stdout", &out.stdout),
        ("stderr", &out.stderr),
        ("FAKE_PI_REPORT", &report_bytes),
    ] {
        let text = String::from_utf8_lossy(bytes);
        assert!(
            !text.contains(KEY) && !text.contains(&KEY[..20]),
            "{what}: the secret is on {stream}:\n{text}"
        );
    }
    assert_eq!(out.status.code(), Some(99), "{what}: {}", {
        String::from_utf8_lossy(&out.stderr)
    });
    assert!(!report_bytes.is_empty(), "{what}: nothing reported");
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.starts_with("fake-pi: "))
        .map(str::to_string)
        .collect()
}

/// `lines` name each of `fields` in a mismatch line, and mask the secret somewhere.
fn assert_said(what: &str, lines: &[String], fields: &[&str]) {
    for f in fields {
        assert!(
            lines.iter().any(|l| l.contains(&format!(": {f}"))),
            "{what}: no {f} line in {lines:#?}"
        );
    }
    assert!(
        lines.iter().any(|l| l.contains("[REDACTED]")),
        "{what}: nothing masked in {lines:#?}"
    );
}

#[test]
fn a_secret_is_in_no_mismatch_line_nor_the_report_as_pi() {
    let w = World::new("secret-pi");
    let c = marked(
        &w,
        "recorded/text_only.pi87.cassette.jsonl",
        "PIH_KEY",
        true,
    );
    let mut cmd = w.fake_pi(&c);
    cmd.env("PIH_KEY", KEY).args([
        "--mode",
        "json",
        "--session-dir",
        "s",
        "--provider",
        "fake",
        "--model",
        KEY,
        &format!("Say {KEY}."),
        &format!("then {KEY}"),
    ]);
    let said = run_and_grep(&w, "pi argv", cmd, b"");
    assert_said(
        "pi",
        &said,
        &[
            "expect.effective.model",
            "expect.prompt",
            "expect.follow_ups",
            "expect.flags.model",
            "expect.argv_messages",
            "expect.never_in_argv[0]",
        ],
    );
    // The prompt on stdin (no argv message): its mismatch line too.
    let mut cmd = w.fake_pi(&marked(
        &w,
        "recorded/text_only.pi87.cassette.jsonl",
        "PIH_KEY",
        false,
    ));
    cmd.env("PIH_KEY", KEY).args([
        "--mode",
        "json",
        "--provider",
        "fake",
        "--model",
        "fake-model",
    ]);
    let said = run_and_grep(&w, "pi stdin", cmd, format!("my key is {KEY}").as_bytes());
    assert_said("pi stdin", &said, &["expect.prompt"]);
    w.assert_none_left();
}

#[test]
fn a_secret_is_in_no_mismatch_line_nor_the_report_as_codex_and_gemini() {
    let w = World::new("secret-codex-gemini");
    let home = w.path().join("codex-home");
    std::fs::create_dir_all(&home).unwrap();
    let mut cmd = w.fake_pi(&repo_cassette("codex/codex_text.cx0169.cassette.jsonl"));
    cmd.env("CODEX_HOME", &home)
        .env("CODEX_API_KEY", KEY)
        .args([
            "exec",
            "--json",
            "--skip-git-repo-check",
            "-m",
            KEY,
            &format!("Say {KEY}."),
        ]);
    let said = run_and_grep(&w, "codex", cmd, b"");
    assert_said(
        "codex",
        &said,
        &[
            "expect.effective.model",
            "expect.prompt",
            "expect.never_in_argv[0]",
        ],
    );
    let mut cmd = w.fake_pi(&repo_cassette(
        "gemini/gemini_long_answer.gm061.cassette.jsonl",
    ));
    cmd.env("HOME", w.path())
        .env("GEMINI_API_KEY", KEY)
        .env_remove("GEMINI_MODEL")
        .env_remove("GEMINI_CLI_NO_RELAUNCH")
        .env_remove("SANDBOX")
        .args([
            "--output-format",
            "stream-json",
            "--yolo",
            "-m",
            KEY,
            "-p",
            &format!("Say {KEY}."),
        ]);
    let said = run_and_grep(&w, "gemini", cmd, b"");
    assert_said(
        "gemini",
        &said,
        &[
            "expect.effective.model",
            "expect.prompt",
            "expect.never_in_argv[0]",
        ],
    );
    w.assert_none_left();
}

#[test]
fn a_secret_is_in_no_mismatch_line_nor_the_report_as_claude_and_as_a_client() {
    let w = World::new("secret-claude-rpc");
    let c = marked(
        &w,
        "claude/claude_text.cc21330.cassette.jsonl",
        "ANTHROPIC_API_KEY",
        false,
    );
    let mut cmd = w.fake_pi(&c);
    cmd.env("ANTHROPIC_API_KEY", KEY).args([
        "-p",
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
        "--verbose",
        "--include-partial-messages",
        "--permission-prompt-tool",
        KEY,
    ]);
    let said = run_and_grep(&w, "claude", cmd, b"");
    assert_said("claude", &said, &["expect.never_in_argv[0]"]);
    // A two-way client whose line carries the key: its mismatch quotes the line.
    let c = marked(
        &w,
        "rpc/rpc_two_prompts.pi152.cassette.jsonl",
        "PIH_KEY",
        false,
    );
    let mut cmd = w.fake_pi(&c);
    cmd.env("PIH_KEY", KEY).args([
        "--mode",
        "rpc",
        "--no-session",
        "--provider",
        "fake",
        "--model",
        "fake-model",
    ]);
    let line = format!("{{\"type\":\"prompt\",\"message\":\"my key is {KEY}\"}}\n");
    let said = run_and_grep(&w, "rpc client", cmd, line.as_bytes());
    assert!(
        said.iter()
            .any(|l| l.starts_with("fake-pi: client mismatch: ") && l.contains("[REDACTED]")),
        "{said:#?}"
    );
    w.assert_none_left();
}
