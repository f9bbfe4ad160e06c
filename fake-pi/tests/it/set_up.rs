//! The Rust testkit gets the same setup from the cassette as the Python and Node helpers
//! (`World::fake_pi_set_up`): for each agent, a call that sets no key and writes no config
//! replays the committed cassette as recorded, and the same call without the setup is refused.

use std::io::Write;
use std::process::{Command, Output, Stdio};

use crate::util::*;

/// Run `cmd` with `args` and `stdin` written then closed.
fn run(mut cmd: Command, args: &[&str], stdin: &str) -> Output {
    let mut child = cmd
        .args(args)
        .env("FAKE_PI_VALUES", "recorded")
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

/// With the setup: the recording's stdout and exit 0; without (an empty home of the world's
/// for the agents that read one): refused.
fn replays_with_the_setup_alone(test: &str, rel: &str, args: &[&str], stdin: &str) {
    let w = World::new(test);
    let cassette = repo_cassette(rel);
    let c = pi_cassette::Cassette::load(&cassette).unwrap();
    let out = run(w.fake_pi_set_up(&cassette), args, stdin);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{rel}: {err}");
    assert_eq!(out.stdout, c.stdout_bytes(), "{rel}: {err}");
    let empty = w.path().join("empty-home");
    std::fs::create_dir_all(&empty).unwrap();
    let mut bare = w.fake_pi(&cassette);
    bare.env("CODEX_HOME", &empty)
        .env("GEMINI_CLI_HOME", &empty)
        .env_remove("CODEX_API_KEY")
        .env_remove("GEMINI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY");
    let out = run(bare, args, stdin);
    assert_ne!(out.status.code(), Some(0), "{rel} passes without its setup");
    w.assert_none_left();
}

#[test]
fn pi_replays_with_the_testkit_setup() {
    replays_with_the_setup_alone(
        "setup_pi",
        "recorded/text_only.pi87.cassette.jsonl",
        &["--mode", "json", "Say hello."],
        "",
    );
}

#[test]
fn codex_replays_with_the_testkit_setup() {
    replays_with_the_setup_alone(
        "setup_codex",
        "codex/codex_text.cx0169.cassette.jsonl",
        &["exec", "--json", "--skip-git-repo-check", "Say hello."],
        "",
    );
}

#[test]
fn gemini_replays_with_the_testkit_setup() {
    replays_with_the_setup_alone(
        "setup_gemini",
        "gemini/gemini_text.gm061.cassette.jsonl",
        &[
            "--model",
            "gemini-2.5-flash",
            "--output-format",
            "stream-json",
            "--yolo",
            "--prompt",
            "Say hello.",
        ],
        "",
    );
}

#[test]
fn claude_replays_with_the_testkit_setup() {
    replays_with_the_setup_alone(
        "setup_claude",
        "claude/claude_text.cc21330.cassette.jsonl",
        &[
            "-p",
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
            "--verbose",
            "--include-partial-messages",
            "--permission-prompt-tool",
            "stdio",
        ],
        "{\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":\"say hi\"},\"parent_tool_use_id\":null,\"session_id\":\"\"}\n",
    );
}
