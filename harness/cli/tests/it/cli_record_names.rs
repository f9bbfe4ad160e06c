//! `pi-harness record` under the caller's own provider and model, a recording that never
//! reached the model, `record --ignore` and `cassette relax`: with the bash "pi" of
//! `cli_record` (no real pi needed; `real_pi_record` does the same with real pi).

use std::path::Path;

use pi_cassette::{Action, Cassette};
use pi_testkit::World;

use crate::cli_record::{assert_nothing_left, record_with, setup};
use crate::util::{cassettes, pih};

/// What the recorded "pi" wrote on stderr.
fn recorded_stderr(c: &Cassette) -> String {
    let bytes: Vec<u8> = c
        .records
        .iter()
        .filter_map(|r| match &r.action {
            Action::Stderr(b) => Some(b.data.clone()),
            _ => None,
        })
        .flatten()
        .collect();
    String::from_utf8(bytes).unwrap()
}

fn stderr_of(a: &assert_cmd::assert::Assert) -> String {
    String::from_utf8_lossy(&a.get_output().stderr).into_owned()
}

/// Before: pi failing without a key for its provider (0 model requests) was recorded with
/// exit 0, a cassette of pi failing and no warning.
#[test]
fn a_recording_that_never_reached_the_model_fails_and_writes_nothing() {
    let mut s = setup();
    let out = s.path().join("nokey.cassette.jsonl");
    let fake = [
        "--mode",
        "json",
        "--provider",
        "fake",
        "--model",
        "fake-model",
    ];
    let a = record_with(&s, &out, "norequest", &[], &fake).code(1);
    let err = stderr_of(&a);
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(
        err.starts_with(
            "error: pi (the server stood in for provider `fake`, model `fake-model`) made no model request (Error: No API key found for openai.); nothing written"
        ),
        "{err}"
    );
    assert!(err.contains(r#"`"turns": []`"#), "the fix is named: {err}");
    assert!(!out.exists());
    assert_nothing_left(&s);

    // The script says the run never reaches the model: recorded as it is.
    s.script = s.world.write("none.json", r#"{"turns":[]}"#);
    record_with(&s, &out, "norequest", &[], &fake).success();
    let c = Cassette::load(&out).unwrap();
    assert_eq!(c.ending(), &Action::Exit(1));
    assert_eq!(recorded_stderr(&c), "Error: No API key found for openai.\n");
    assert_nothing_left(&s);
}

#[test]
fn a_provider_the_server_does_not_stand_in_for_fails_and_writes_nothing() {
    let s = setup();
    let out = s.path().join("refused.cassette.jsonl");
    for (provider, model, api) in [
        ("google", "gemini-2.5-pro", "google-generative-ai"),
        (
            "amazon-bedrock",
            "anthropic.claude-sonnet-4",
            "bedrock-converse-stream",
        ),
    ] {
        let a = record_with(
            &s,
            &out,
            "",
            &[],
            &["--mode", "json", "--provider", provider, "--model", model],
        )
        .code(1);
        let err = stderr_of(&a);
        assert_eq!(err.lines().count(), 1, "one line: {err}");
        assert!(
            err.starts_with(&format!(
                "error: pi 0.87.1 speaks {api} to provider `{provider}` (model `{model}`), which the scripted LLM server does not serve"
            )),
            "{err}"
        );
        assert!(err.contains("--ignore provider model"), "the fix: {err}");
        assert!(!out.exists());
    }
    // pi never ran: nothing reached the server.
    let log = std::fs::read_to_string(s.path().join("requests.jsonl")).unwrap_or_default();
    assert_eq!(log, "");
    assert_nothing_left(&s);
}

/// A wrapper that relies on settings.json: `record --provider --model` go into the
/// recording's settings.json and models.json, and into the cassette's expectation.
#[test]
fn production_names_go_to_the_agent_dir_and_the_expectation() {
    let s = setup();
    let out = s.path().join("groq.cassette.jsonl");
    record_with(
        &s,
        &out,
        "agentdir",
        &["--provider", "groq", "--model", "llama-3.3-70b-versatile"],
        &["--mode", "json", "--no-session"],
    )
    .success();
    let c = Cassette::load(&out).unwrap();
    let said: serde_json::Value = {
        // models.json then settings.json, pretty-printed one after the other.
        let text = recorded_stderr(&c);
        let mut it = serde_json::Deserializer::from_str(&text).into_iter::<serde_json::Value>();
        let models = it.next().unwrap().unwrap();
        let settings = it.next().unwrap().unwrap();
        serde_json::json!({"models": models, "settings": settings})
    };
    let groq = &said["models"]["providers"]["groq"];
    assert_eq!(groq["api"], "openai-completions", "groq's own wire");
    assert_eq!(groq["models"][0]["id"], "llama-3.3-70b-versatile");
    assert_eq!(said["settings"]["defaultProvider"], "groq");
    assert_eq!(said["settings"]["defaultModel"], "llama-3.3-70b-versatile");
    let eff = c.header.expect.effective.as_ref().unwrap();
    assert_eq!(eff.provider.as_deref(), Some("groq"));
    assert_eq!(eff.model.as_deref(), Some("llama-3.3-70b-versatile"));
    assert_nothing_left(&s);

    // Named twice, differently: refused before anything runs.
    let a = record_with(
        &s,
        &s.path().join("both.cassette.jsonl"),
        "",
        &["--provider", "groq", "--model", "llama-3.3-70b-versatile"],
        &[
            "--mode",
            "json",
            "--provider",
            "fake",
            "--model",
            "fake-model",
        ],
    )
    .code(2);
    assert!(
        stderr_of(&a).contains("pi's command line names fake/fake-model"),
        "{}",
        stderr_of(&a)
    );
}

#[test]
fn record_ignore_writes_the_fields_a_replay_does_not_compare() {
    let s = setup();
    let out = s.path().join("loose.cassette.jsonl");
    record_with(
        &s,
        &out,
        "",
        &["--ignore", "model", "thinking", "--ignore", "env"],
        &[
            "--mode",
            "json",
            "--provider",
            "fake",
            "--model",
            "fake-model",
        ],
    )
    .success();
    let c = Cassette::load(&out).unwrap();
    assert_eq!(c.header.expect.irrelevant, vec!["model", "thinking", "env"]);
    let a = record_with(&s, &out, "", &["--ignore", "colour"], &["--mode", "json"]).code(2);
    assert!(
        stderr_of(&a).contains("\"colour\" is not a field a cassette can ignore"),
        "{}",
        stderr_of(&a)
    );
    assert_nothing_left(&s);
}

/// fake-pi replaying `cassette` under `--provider anthropic --model claude-sonnet-4-5`.
fn replay_under_another_model(w: &World, cassette: &Path) -> std::process::Output {
    w.fake_pi(cassette)
        .args([
            "--mode",
            "json",
            "--provider",
            "anthropic",
            "--model",
            "claude-sonnet-4-5",
            "list files",
        ])
        .output()
        .unwrap()
}

#[test]
fn a_relaxed_cassette_replays_under_another_model_and_show_says_what_is_ignored() {
    let w = World::new("cli_relax");
    let c = w.path().join("tool_bash.cassette.jsonl");
    std::fs::copy(cassettes().join("tool_bash.pi87.cassette.jsonl"), &c).unwrap();
    let before = std::fs::read(&c).unwrap();
    let refused = replay_under_another_model(&w, &c);
    assert_eq!(
        refused.status.code(),
        Some(99),
        "recorded under fake/fake-model"
    );

    let a = pih()
        .args(["cassette", "relax"])
        .arg(&c)
        .args(["--ignore", "provider", "model"])
        .assert()
        .success();
    assert_eq!(
        stderr_of(&a),
        format!(
            "{}: a replay no longer compares provider, model (ignored now: provider, model)\n",
            c.display()
        )
    );
    let replay = replay_under_another_model(&w, &c);
    assert_eq!(
        replay.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&replay.stderr)
    );
    // The records are kept: only the header changed.
    let after = std::fs::read(&c).unwrap();
    let body = |b: &[u8]| b.splitn(2, |&x| x == b'\n').nth(1).unwrap().to_vec();
    assert_eq!(body(&after), body(&before));

    let show = pih().args(["cassette", "show"]).arg(&c).assert().success();
    let text = String::from_utf8_lossy(&show.get_output().stdout).into_owned();
    assert!(
        text.contains("\n  not compared          provider, model\n"),
        "{text}"
    );
    assert!(
        text.contains("\n  provider              any (irrelevant for this cassette)\n"),
        "{text}"
    );
    let json = pih()
        .args(["cassette", "show", "--json"])
        .arg(&c)
        .assert()
        .success();
    let j: serde_json::Value = serde_json::from_slice(&json.get_output().stdout).unwrap();
    assert_eq!(
        j["expects"]["irrelevant"],
        serde_json::json!(["provider", "model"])
    );

    // Again: nothing to add. A gzip cassette stays gzip. A bad field: one line, exit 2.
    let a = pih()
        .args(["cassette", "relax"])
        .arg(&c)
        .args(["--ignore", "model"])
        .assert()
        .success();
    assert!(stderr_of(&a).contains("already ignores provider, model; unchanged"));
    let gz = w.path().join("t.cassette.jsonl.gz");
    pih()
        .args(["cassette", "relax"])
        .arg(&c)
        .args(["--ignore", "env", "--out"])
        .arg(&gz)
        .assert()
        .success();
    assert_eq!(&std::fs::read(&gz).unwrap()[..2], &[0x1f, 0x8b]);
    assert_eq!(
        Cassette::load(&gz).unwrap().header.expect.irrelevant,
        vec!["provider", "model", "env"]
    );
    // A zstd cassette relaxed in place stays zstd.
    let zst = w.path().join("t.cassette.jsonl.zst");
    std::fs::write(
        &zst,
        pi_cassette::output::zstd(&std::fs::read(&c).unwrap()).unwrap(),
    )
    .unwrap();
    pih()
        .args(["cassette", "relax"])
        .arg(&zst)
        .args(["--ignore", "thinking"])
        .assert()
        .success();
    assert_eq!(
        &std::fs::read(&zst).unwrap()[..4],
        &[0x28, 0xb5, 0x2f, 0xfd]
    );
    assert_eq!(
        Cassette::load(&zst).unwrap().header.expect.irrelevant,
        vec!["provider", "model", "thinking"]
    );
    let a = pih()
        .args(["cassette", "relax"])
        .arg(&c)
        .args(["--ignore", "colour"])
        .assert()
        .code(2);
    let err = stderr_of(&a);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("\"colour\" is not a field a cassette can ignore"),
        "{err}"
    );
    w.assert_none_left();
}

#[test]
fn show_says_what_a_relaxed_claude_code_cassette_ignores() {
    let w = World::new("cli_relax_claude");
    let c = w.path().join("claude_text.cassette.jsonl");
    std::fs::copy(
        cassettes().join("claude/claude_text.cc21332.cassette.jsonl"),
        &c,
    )
    .unwrap();
    let show = |c: &Path| {
        let a = pih().args(["cassette", "show"]).arg(c).assert().success();
        String::from_utf8_lossy(&a.get_output().stdout).into_owned()
    };
    assert!(!show(&c).contains("not compared"));
    pih()
        .args(["cassette", "relax"])
        .arg(&c)
        .args(["--ignore", "model"])
        .assert()
        .success();
    let text = show(&c);
    assert!(text.contains("\n  not compared          model\n"), "{text}");
    pih().args(["cassette", "lint"]).arg(&c).assert().success();
}
