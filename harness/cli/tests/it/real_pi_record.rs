//! `pi-harness record` with real pi under the caller's production names (CI's real-pi lane):
//! a wrapper that passes `--provider anthropic --model claude-sonnet-4-5`, and one that passes
//! no model flags and relies on settings.json, record on each pinned pi and replay unchanged
//! with fake-pi; an OpenAI-compatible provider (groq) records over chat completions, and
//! `openai` over the Responses API (reasoning, a tool call, usage); a provider whose wire
//! the server does not speak (google) and a run that never reaches the model (a missing
//! `@file`) fail with exit 1 and write nothing. Claude Code
//! (`PI_HARNESS_REAL_CLAUDE`) records under the host's own `--model` and replays with it.
//!
//! Runs for each of `PI_HARNESS_REAL_PI73`, `PI_HARNESS_REAL_PI87`, `PI_HARNESS_REAL_PI152`
//! that names a real pi (`scripts/install-pi.sh --print-path VERSION`); skips otherwise.

use std::path::{Path, PathBuf};
use std::time::Duration;

use pi_cassette::Cassette;
use pi_testkit::{World, MARKER_VAR};

use crate::util::pih;

const PROMPT: &str = "Say hello.";

/// `pi-harness record` of real `pi` into `out` with the recorder's `extra` options and
/// pi's `pi_args` (then the prompt); its output.
fn record(
    w: &World,
    pi: &Path,
    out: &Path,
    extra: &[&str],
    pi_args: &[&str],
) -> std::process::Output {
    let script = w.write(
        "hello.llm.json",
        r#"{"turns":[{"text":["Hello ","there."]}]}"#,
    );
    pih()
        .env(MARKER_VAR, w.marker())
        .args(["record", "--timeout", "120", "--script"])
        .arg(&script)
        .arg("--out")
        .arg(out)
        .arg("--pi")
        .arg(pi)
        .arg("--request-log")
        .arg(out.with_extension("requests"))
        .args(extra)
        .arg("--")
        .args(pi_args)
        .args(["--no-session", PROMPT])
        .timeout(Duration::from_secs(180))
        .output()
        .unwrap()
}

/// The first request the scripted server logged for the recording into `out`.
fn first_request(out: &Path) -> serde_json::Value {
    let log = std::fs::read_to_string(out.with_extension("requests")).unwrap();
    serde_json::from_str(log.lines().next().expect("a model request")).unwrap()
}

/// fake-pi replaying `cassette` as the wrapper calls pi (`args`, then the prompt), with the
/// world's agent dir; its exit status and stdout.
fn replay(w: &World, cassette: &Path, args: &[&str]) -> (Option<i32>, String) {
    let o = w
        .fake_pi(cassette)
        .args(args)
        .args(["--no-session", PROMPT])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    if o.status.code() != Some(0) {
        eprintln!("fake-pi said: {stderr}");
    }
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
    )
}

fn check_success(o: &std::process::Output, what: &str) {
    assert!(
        o.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

fn production_names(var: &str, version: &str) {
    let Some(pi) = std::env::var_os(var).map(PathBuf::from) else {
        eprintln!("skip: {var} not set");
        return;
    };
    let w = World::new("real-record-names");
    let anthropic = [
        "--mode",
        "json",
        "--provider",
        "anthropic",
        "--model",
        "claude-sonnet-4-5",
    ];

    // A wrapper that hard-codes its production provider and model.
    let flags = w.path().join("flags.cassette.jsonl");
    check_success(&record(&w, &pi, &flags, &[], &anthropic), "flags");
    let req = first_request(&flags);
    assert!(
        req["path"].as_str().unwrap().starts_with("/v1/messages"),
        "{req}"
    );
    assert_eq!(req["model"], "claude-sonnet-4-5");
    let c = Cassette::load(&flags).unwrap();
    assert_eq!(c.header.pi.version, version);
    let (code, stdout) = replay(&w, &flags, &anthropic);
    assert_eq!(code, Some(0), "pi {version}: the wrapper replays unchanged");
    assert!(stdout.contains("Hello there."), "{stdout}");

    // A wrapper that passes no model flags: settings.json names its provider and model.
    let settings = w.path().join("settings.cassette.jsonl");
    let names = ["--provider", "anthropic", "--model", "claude-sonnet-4-5"];
    check_success(
        &record(&w, &pi, &settings, &names, &["--mode", "json"]),
        "settings",
    );
    assert_eq!(first_request(&settings)["model"], "claude-sonnet-4-5");
    let (code, _) = replay(&w, &settings, &["--mode", "json"]);
    assert_eq!(
        code,
        Some(99),
        "pi {version}: without the settings the model differs"
    );
    std::fs::create_dir_all(w.agent_dir()).unwrap();
    w.write(
        "agent/settings.json",
        r#"{"defaultProvider":"anthropic","defaultModel":"claude-sonnet-4-5"}"#,
    );
    let (code, stdout) = replay(&w, &settings, &["--mode", "json"]);
    assert_eq!(
        code,
        Some(0),
        "pi {version}: replays with the wrapper's settings.json"
    );
    assert!(stdout.contains("Hello there."), "{stdout}");
    std::fs::remove_file(w.agent_dir().join("settings.json")).unwrap();

    // An OpenAI-compatible provider speaks chat completions to the server.
    let groq = w.path().join("groq.cassette.jsonl");
    let groq_args = [
        "--mode",
        "json",
        "--provider",
        "groq",
        "--model",
        "llama-3.3-70b-versatile",
    ];
    check_success(&record(&w, &pi, &groq, &[], &groq_args), "groq");
    let req = first_request(&groq);
    assert_eq!(req["path"], "/v1/chat/completions", "{req}");
    assert_eq!(req["model"], "llama-3.3-70b-versatile");
    assert_eq!(replay(&w, &groq, &groq_args).0, Some(0));

    // A provider of another wire: exit 1, nothing written.
    let google = w.path().join("google.cassette.jsonl");
    let o = record(
        &w,
        &pi,
        &google,
        &[],
        &[
            "--mode",
            "json",
            "--provider",
            "google",
            "--model",
            "gemini-2.5-pro",
        ],
    );
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.starts_with(&format!("error: pi {version} speaks "))
            && err.contains("google-generative-ai")
            && err.contains(" to provider `google` (model `gemini-2.5-pro`)"),
        "{err}"
    );
    assert!(!google.exists());

    // A run that never reaches the model (pi stops at a missing `@file`): exit 1, nothing
    // written, what pi said and the fix on one line.
    let missing = w.path().join("missing.cassette.jsonl");
    let o = record(
        &w,
        &pi,
        &missing,
        &[],
        &[&anthropic[..], &["@nofile.txt"]].concat(),
    );
    let err = String::from_utf8_lossy(&o.stderr);
    let last = err.lines().last().unwrap_or_default();
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        last.starts_with("error: pi (the server stood in for provider `anthropic`, model `claude-sonnet-4-5`) made no model request (Error: File not found: <CWD>/nofile.txt); nothing written"),
        "{last}"
    );
    assert!(last.contains(r#"`"turns": []`"#), "{last}");
    assert!(!missing.exists());
    w.assert_none_left_within(Duration::from_secs(5));
}

#[test]
fn production_names_record_and_replay_on_pi73() {
    production_names("PI_HARNESS_REAL_PI73", "0.73.1");
}

#[test]
fn production_names_record_and_replay_on_pi87() {
    production_names("PI_HARNESS_REAL_PI87", "0.87.1");
}

#[test]
fn production_names_record_and_replay_on_pi152() {
    production_names("PI_HARNESS_REAL_PI152", "1.5.2");
}

/// The wrapper's command line for `openai`.
const OPENAI_ARGS: [&str; 6] = [
    "--mode",
    "json",
    "--provider",
    "openai",
    "--model",
    "gpt-4.1",
];

/// `pi-harness record` of real `pi` with [`OPENAI_ARGS`] and `script` into `out`; its
/// output and the server's request log.
fn record_openai(
    w: &World,
    pi: &Path,
    script: &Path,
    out: &Path,
) -> (std::process::Output, Vec<serde_json::Value>) {
    let o = pih()
        .env(MARKER_VAR, w.marker())
        .args(["record", "--timeout", "120", "--script"])
        .arg(script)
        .arg("--out")
        .arg(out)
        .arg("--pi")
        .arg(pi)
        .arg("--request-log")
        .arg(out.with_extension("requests"))
        .arg("--")
        .args(OPENAI_ARGS)
        .args(["--no-session", PROMPT])
        .timeout(Duration::from_secs(180))
        .output()
        .unwrap();
    let log = std::fs::read_to_string(out.with_extension("requests")).unwrap_or_default();
    let reqs = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (o, reqs)
}

/// The wrapper's `--provider openai --model gpt-4.1` on pi `version` (from `var`): pi speaks
/// the OpenAI Responses API to the server (reasoning, a bash tool call, text, usage), the
/// tool's output goes back in the second request, and fake-pi replays the wrapper's command
/// line unchanged with what real pi printed; an HTTP 400 reaches pi as its error message.
fn openai_over_responses(var: &str, version: &str) {
    let Some(pi) = std::env::var_os(var).map(PathBuf::from) else {
        eprintln!("skip: {var} not set");
        return;
    };
    let w = World::new("real-record-openai");
    let script = w.write(
        "openai.llm.json",
        r#"{"turns":[
            {"reasoning":["Let me ","check."],"text":["Running it."],
             "tools":[{"id":"call_r1","name":"bash","args":{"command":"echo hi-from-tool"}}],
             "usage":{"input":21,"output":9}},
            {"text":["Done: ","hi."],"usage":{"input":40,"output":3}}]}"#,
    );
    let out = w.path().join("openai.cassette.jsonl");
    let (o, reqs) = record_openai(&w, &pi, &script, &out);
    check_success(&o, "openai");
    assert_eq!(reqs.len(), 2, "pi {version}: {reqs:?}");
    for r in &reqs {
        assert_eq!(r["path"], "/v1/responses", "pi {version}: {r}");
        assert_eq!(r["model"], "gpt-4.1");
        assert_eq!(r["status"], 200);
    }
    assert!(reqs[0]["tools"]
        .as_array()
        .unwrap()
        .contains(&"bash".into()));
    // The tool ran and its output went back to the model as the call's output.
    let second = reqs[1]["messages"].to_string();
    assert!(second.contains("hi-from-tool"), "pi {version}: {second}");
    assert!(second.contains("call_r1"), "pi {version}: {second}");
    let c = Cassette::load(&out).unwrap();
    assert_eq!(c.header.pi.version, version);
    let (code, stdout) = replay(&w, &out, &OPENAI_ARGS);
    assert_eq!(code, Some(0), "pi {version}: the wrapper replays unchanged");
    let events: Vec<serde_json::Value> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    // The first answer: its reasoning, its tool call and its usage, as pi read them.
    let first = events
        .iter()
        .find(|e| e["type"] == "message_end" && e["message"]["role"] == "assistant")
        .unwrap_or_else(|| panic!("pi {version}: no assistant message_end in {stdout}"));
    let m = &first["message"];
    assert_eq!(m["stopReason"], "toolUse", "pi {version}: {m}");
    assert_eq!(
        (&m["usage"]["input"], &m["usage"]["output"]),
        (&21.into(), &9.into()),
        "pi {version}: {m}"
    );
    let content = m["content"].as_array().unwrap();
    assert!(
        content.iter().any(|b| b["thinking"] == "Let me check."),
        "pi {version}: {m}"
    );
    assert!(
        content
            .iter()
            .any(|b| b["type"] == "toolCall" && b["name"] == "bash"),
        "pi {version}: {m}"
    );
    let ended = events
        .iter()
        .find(|e| e["type"] == "tool_execution_end")
        .unwrap_or_else(|| panic!("pi {version}: no tool_execution_end in {stdout}"));
    assert_eq!(ended["toolName"], "bash");
    assert!(ended.to_string().contains("hi-from-tool"), "{ended}");
    let last = events
        .iter()
        .rev()
        .find(|e| e["type"] == "message_end")
        .unwrap_or_else(|| panic!("pi {version}: no message_end in {stdout}"));
    assert!(last.to_string().contains("Done: hi."), "{last}");

    // An HTTP 400 on the Responses route: pi reads the status and the error body's message,
    // makes no other request, and the recording replays as it ended.
    let script = w.write(
        "openai-400.llm.json",
        r#"{"turns":[{"status":400,"msg":"bad request from the script"}]}"#,
    );
    let out = w.path().join("openai-400.cassette.jsonl");
    let (o, reqs) = record_openai(&w, &pi, &script, &out);
    check_success(&o, "openai 400");
    assert_eq!(reqs.len(), 1, "pi {version}: {reqs:?}");
    assert_eq!(reqs[0]["status"], 400);
    let (_, stdout) = replay(&w, &out, &OPENAI_ARGS);
    let failed = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|e| e["type"] == "message_end" && e["message"]["role"] == "assistant")
        .unwrap_or_else(|| panic!("pi {version}: no assistant message_end in {stdout}"));
    let m = &failed["message"];
    assert_eq!(m["stopReason"], "error", "pi {version}: {m}");
    let said = m["errorMessage"].as_str().unwrap_or_default();
    assert!(
        said.contains("400") && said.contains("bad request from the script"),
        "pi {version}: {said}"
    );
    w.assert_none_left_within(Duration::from_secs(5));
}

#[test]
fn openai_records_over_the_responses_api_on_pi73() {
    openai_over_responses("PI_HARNESS_REAL_PI73", "0.73.1");
}

#[test]
fn openai_records_over_the_responses_api_on_pi87() {
    openai_over_responses("PI_HARNESS_REAL_PI87", "0.87.1");
}

#[test]
fn openai_records_over_the_responses_api_on_pi152() {
    openai_over_responses("PI_HARNESS_REAL_PI152", "1.5.2");
}

/// Claude Code (`PI_HARNESS_REAL_CLAUDE`, CI's real Claude Code lane) records a stream-json
/// session under the host's own `--model`: the model request carries it, the cassette expects
/// it, and fake-pi as `claude` replays the host's session with it (and refuses another
/// model, naming the option).
#[test]
fn claude_code_records_under_its_own_model() {
    let Some(claude) = std::env::var_os("PI_HARNESS_REAL_CLAUDE").map(PathBuf::from) else {
        eprintln!("skip: PI_HARNESS_REAL_CLAUDE not set");
        return;
    };
    let w = World::new("real-record-claude-model");
    let scripts = crate::util::repo().join("cassettes/scripts/claude");
    let out = w.path().join("claude.cassette.jsonl");
    let args = [
        "-p",
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
        "--verbose",
        "--permission-prompt-tool",
        "stdio",
    ];
    let o = pih()
        .env(MARKER_VAR, w.marker())
        .args([
            "record",
            "--agent",
            "claude",
            "--timeout",
            "120",
            "--script",
        ])
        .arg(scripts.join("claude_text.llm.json"))
        .arg("--client-script")
        .arg(scripts.join("claude_text.client.json"))
        .arg("--pi")
        .arg(&claude)
        .arg("--out")
        .arg(&out)
        .arg("--request-log")
        .arg(out.with_extension("requests"))
        .arg("--")
        .args(args)
        .args(["--model", "claude-sonnet-4-5"])
        .timeout(Duration::from_secs(180))
        .output()
        .unwrap();
    check_success(&o, "claude");
    assert_eq!(first_request(&out)["model"], "claude-sonnet-4-5");
    let c = Cassette::load(&out).unwrap();
    assert_eq!(
        c.header.expect.flags.get("model"),
        Some(&pi_cassette::FlagRule::Value("claude-sonnet-4-5".into()))
    );
    // The host's lines, as its client script sent them.
    let mut input = Vec::new();
    for step in pi_cassette::two_way::client_steps(&c.records) {
        if let pi_cassette::two_way::ClientAction::Line(l) = step.action {
            input.extend_from_slice(l.as_bytes());
            input.push(b'\n');
        }
    }
    let replay = |model: &str| {
        use std::io::Write as _;
        let mut child = w
            .fake_pi(&out)
            .args(args)
            .args(["--model", model])
            .env("ANTHROPIC_API_KEY", "k")
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let _ = stdin.write_all(&input);
        drop(stdin);
        let o = child.wait_with_output().unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let (code, err) = replay("claude-sonnet-4-5");
    assert_eq!(code, Some(0), "{err}");
    let (code, err) = replay("claude-opus-4-1");
    assert_eq!(code, Some(99), "{err}");
    assert!(
        err.contains("--model: expected \"claude-sonnet-4-5\""),
        "{err}"
    );
    w.assert_none_left_within(Duration::from_secs(5));
}
