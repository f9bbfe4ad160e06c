//! `pi-harness record --agent codex` with the real Codex CLI (CI's real Codex lane,
//! `PI_HARNESS_REAL_CODEX` naming `pi-harness install codex 0.169.0 --print-path`): a text
//! and a tool scenario of the committed scripts recorded under the production names
//! (`--provider openai --model gpt-5.5`), each cassette's header read back (Codex under
//! `codex`, dialect `exec-json`, what it ran with), its stdout mapped by
//! `pi_wire::codex::map_all` to the messages the script implies, the model request the
//! server logged, and nothing left running; a run that never reaches the model fails with
//! exit 1 and writes nothing. Skips (saying why) when the variable is unset.

use std::path::{Path, PathBuf};
use std::time::Duration;

use pi_cassette::{Action, Cassette, Dialect, SessionUse};
use pi_testkit::{World, MARKER_VAR};
use pi_wire::mapper::{MapperOptions, StreamEnd};
use pi_wire::message::{ExitInfo, Message};

use crate::util::{pih, repo};

fn real_codex() -> Option<PathBuf> {
    let codex = std::env::var_os("PI_HARNESS_REAL_CODEX").map(PathBuf::from);
    if codex.is_none() {
        eprintln!(
            "skip: PI_HARNESS_REAL_CODEX not set (pi-harness install codex 0.169.0 --print-path)"
        );
    }
    codex
}

/// Record the committed script `name` into the world with real Codex; the command's output.
fn record(w: &World, codex: &Path, name: &str, prompt: &str) -> (PathBuf, std::process::Output) {
    let out = w.path().join(format!("{name}.cassette.jsonl"));
    let o = pih()
        .env(MARKER_VAR, w.marker())
        .args(["record", "--agent", "codex", "--timeout", "120"])
        .args(["--provider", "openai", "--model", "gpt-5.5", "--script"])
        .arg(repo().join(format!("cassettes/scripts/codex/{name}.llm.json")))
        .arg("--pi")
        .arg(codex)
        .arg("--out")
        .arg(&out)
        .arg("--request-log")
        .arg(out.with_extension("requests"))
        .args(["--", "exec", "--json", "--skip-git-repo-check", prompt])
        .timeout(Duration::from_secs(180))
        .output()
        .unwrap();
    (out, o)
}

/// The script's text turns, each turn's chunks joined (what Codex shows as one
/// `agent_message`), read with serde_json apart from the recorder.
fn script_texts(name: &str, field: &str) -> Vec<String> {
    let path = repo().join(format!("cassettes/scripts/codex/{name}.llm.json"));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    v["turns"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t[field].as_array())
        .map(|chunks| chunks.iter().map(|c| c.as_str().unwrap()).collect())
        .collect()
}

/// The cassette's stdout, its exit code, and the messages the Codex mapper makes of them.
fn mapped(c: &Cassette) -> Vec<Message> {
    let mut stdout = Vec::new();
    let mut code = None;
    for r in &c.records {
        match &r.action {
            Action::Stdout(b) => stdout.extend_from_slice(&b.data),
            Action::Exit(c) => code = Some(*c),
            _ => {}
        }
    }
    let end = StreamEnd::eof(Some(ExitInfo { code, signal: None }));
    pi_wire::codex::map_all(&stdout, end, MapperOptions::default())
}

/// The header every recording here has: Codex 0.169.0 under `codex`, what it ran with.
fn check_header(c: &Cassette, prompt: &str) {
    let text = c.to_jsonl();
    let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(first["codex"]["version"], "0.169.0", "{first}");
    assert_eq!(first["codex"]["dialect"], "exec-json");
    assert!(
        first.get("pi").is_none() && first.get("mode").is_none(),
        "{first}"
    );
    assert_eq!(c.header.agent(), pi_grammar::Agent::Codex);
    assert_eq!(c.header.pi.dialect, Dialect::ExecJson);
    let e = &c.header.expect;
    let eff = e.effective.as_ref().unwrap();
    assert_eq!(eff.mode.as_deref(), Some("exec"));
    assert_eq!(
        eff.provider.as_deref(),
        Some("openai"),
        "the production name"
    );
    assert_eq!(eff.model.as_deref(), Some("gpt-5.5"));
    // The recorder's own config.toml (tools unsandboxed, never asking) is not the caller's.
    assert_eq!(eff.sandbox, None);
    assert_eq!(eff.approval, None);
    assert_eq!(e.argv_messages.as_deref(), Some(&[prompt.to_string()][..]));
    assert_eq!(e.env, ["CODEX_API_KEY"]);
    assert_eq!(e.session, Some(SessionUse::New));
    assert_eq!(
        c.header.redactions["<THREAD_ID>"],
        "Codex's thread id (a UUID)"
    );
    // Nothing of the recording machine: no temp paths, no key, no real thread id.
    assert!(
        !text.contains("/tmp/") && !text.contains("pih-key-"),
        "{text}"
    );
    assert!(text.contains("\"thread_id\":\"<THREAD_ID>\""), "{text}");
}

/// The model requests the server logged for the recording into `out`.
fn requests(out: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(out.with_extension("requests"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn real_codex_records_text_and_tool_under_production_names() {
    let Some(codex) = real_codex() else { return };
    let w = World::new("real-codex-record");

    let (out, o) = record(&w, &codex, "codex_text", "Say hello.");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let c = Cassette::load(&out).unwrap();
    check_header(&c, "Say hello.");
    assert!(matches!(c.records.last().unwrap().action, Action::Exit(0)));
    let messages = mapped(&c);
    let kinds: Vec<&str> = messages.iter().map(Message::kind).collect();
    assert_eq!(
        kinds,
        [
            "session.started",
            "assistant",
            "usage",
            "terminal.completed"
        ]
    );
    assert_eq!(
        messages[1],
        Message::Assistant {
            text: script_texts("codex_text", "text")[0].clone()
        }
    );
    // A wrapper that calls `codex exec --json --skip-git-repo-check -m gpt-5.5 PROMPT` with a
    // CODEX_HOME of its own (here an empty one) replays it with fake-pi as codex.
    let home = w.path().join("empty-codex-home");
    std::fs::create_dir_all(&home).unwrap();
    let replay = w
        .fake_pi(&out)
        .env("CODEX_HOME", &home)
        .env("CODEX_API_KEY", "sk-replay")
        .env("FAKE_PI_VALUES", "recorded")
        .args([
            "exec",
            "--json",
            "--skip-git-repo-check",
            "-m",
            "gpt-5.5",
            "Say hello.",
        ])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(
        replay.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&replay.stderr)
    );
    assert_eq!(replay.stdout, c.stdout_bytes());
    let reqs = requests(&out);
    assert_eq!(reqs.len(), 1);
    assert_eq!(reqs[0]["path"], "/v1/responses");
    assert_eq!(reqs[0]["model"], "gpt-5.5");
    assert_eq!(reqs[0]["has_api_key"], true);

    let (out, o) = record(&w, &codex, "codex_tool", "Run the echo.");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let c = Cassette::load(&out).unwrap();
    check_header(&c, "Run the echo.");
    let messages = mapped(&c);
    let kinds: Vec<&str> = messages.iter().map(Message::kind).collect();
    assert_eq!(
        kinds,
        [
            "session.started",
            "assistant.thought",
            "assistant",
            "tool.call",
            "tool.completed",
            "assistant",
            "usage",
            "terminal.completed"
        ]
    );
    let texts: Vec<String> = messages
        .iter()
        .filter_map(|m| match m {
            Message::Assistant { text } => Some(text.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(texts, script_texts("codex_tool", "text"));
    let completed = messages
        .iter()
        .find_map(|m| match m {
            Message::ToolCompleted { result, .. } => Some(result.to_value()),
            _ => None,
        })
        .unwrap();
    assert_eq!(completed["aggregated_output"], "hi-from-codex-tool\n");
    assert_eq!(completed["exit_code"], 0);
    // The second request carries the tool's output back to the model.
    let reqs = requests(&out);
    assert_eq!(reqs.len(), 2);
    assert!(
        reqs[1].to_string().contains("hi-from-codex-tool"),
        "{}",
        reqs[1]
    );
    w.assert_none_left_within(Duration::from_secs(2));
}

#[test]
fn real_codex_that_never_reaches_the_model_writes_nothing() {
    let Some(codex) = real_codex() else { return };
    let w = World::new("real-codex-no-request");
    let out = w.path().join("none.cassette.jsonl");
    let o = pih()
        .env(MARKER_VAR, w.marker())
        .args(["record", "--agent", "codex", "--timeout", "120", "--script"])
        .arg(repo().join("cassettes/scripts/codex/codex_text.llm.json"))
        .arg("--pi")
        .arg(&codex)
        .arg("--out")
        .arg(&out)
        // A provider the run's config.toml does not define: Codex stops before any request.
        .args(["--", "exec", "--json", "--skip-git-repo-check"])
        .args(["-c", "model_provider=\"nowhere\"", "Say hello."])
        .timeout(Duration::from_secs(180))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    let last = stderr.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("error: Codex (the server stood in for provider `fake`, model `fake-model`) made no model request"),
        "{stderr}"
    );
    assert!(!out.exists());
    w.assert_none_left_within(Duration::from_secs(2));
}

/// `record --record-mode once --replay-with fake-pi` as a test world's `codex` runs it: a
/// wrapper's call with no model, no key and an empty CODEX_HOME of the world's is recorded,
/// then replayed with what the recording needs that the recorder gave real Codex itself (the
/// key of its provider, config.toml with the model), so the first call passes as the next
/// ones do. Before, the replay right after the recording was refused (exit 99: model,
/// provider and key), and only a later world got the cassette's setup.
#[test]
fn real_codex_record_once_then_replay_passes_with_no_setup_of_the_callers() {
    let Some(codex) = real_codex() else {
        return;
    };
    let w = World::new("real_codex_once");
    let home = w.path().join("codex-home");
    std::fs::create_dir(&home).unwrap();
    let script = w.write(
        "hello.llm.json",
        r#"{"turns": [{"text": ["Hi ", "there."]}]}"#,
    );
    let out = w.path().join("hello.cassette.jsonl");
    let run = || {
        pih()
            .env(MARKER_VAR, w.marker())
            .env("CODEX_HOME", &home)
            .env_remove("CI")
            .env_remove("FAKE_API_KEY")
            .args([
                "record",
                "--agent",
                "codex",
                "--record-mode",
                "once",
                "--script",
            ])
            .arg(&script)
            .arg("--out")
            .arg(&out)
            .arg("--pi")
            .arg(&codex)
            .arg("--replay-with")
            .arg(pi_testkit::fake_pi())
            .args([
                "--",
                "exec",
                "--json",
                "--skip-git-repo-check",
                "Say hello.",
            ])
            .write_stdin("")
            .timeout(Duration::from_secs(180))
            .output()
            .unwrap()
    };
    for pass in ["records, then replays", "replays"] {
        let o = run();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "{pass}: {err}");
        assert!(
            String::from_utf8_lossy(&o.stdout)
                .contains(r#""type":"agent_message","text":"Hi there.""#),
            "{pass}: {err}"
        );
        assert!(!err.contains("expectation mismatch"), "{pass}: {err}");
    }
    assert!(std::fs::read_to_string(home.join("config.toml"))
        .unwrap()
        .contains("model"));
    w.assert_none_left_within(Duration::from_secs(5));
}
