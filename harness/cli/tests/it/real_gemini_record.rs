//! `pi-harness record --agent gemini` with the real Gemini CLI (CI's real Gemini lane,
//! `PI_HARNESS_REAL_GEMINI` naming `pi-harness install gemini 0.61.0 --print-path`): a text,
//! a tool and an HTTP 400 scenario of the committed scripts recorded, each cassette's header
//! read back (Gemini CLI under `gemini`, dialect `gemini-stream-json`, what it ran with), its
//! stdout mapped by `pi_wire::gemini::map_all` to what the script implies, the model requests
//! the server logged; a signal to the process group mid-tool (the tool's shell orphaned, as
//! `spawn` records, and killed by the recorder); a run that never reaches the model fails with
//! exit 1 and writes nothing; and nothing is left running. Skips (saying why) when the
//! variable is unset.

use std::path::{Path, PathBuf};
use std::time::Duration;

use pi_cassette::{Action, Cassette, Dialect, FlagRule, Secret, SessionUse, SignalAction};
use pi_testkit::{World, MARKER_VAR};
use pi_wire::mapper::{MapperOptions, StreamEnd};
use pi_wire::message::{ExitInfo, Message};

use crate::util::{pih, repo};

fn real_gemini() -> Option<PathBuf> {
    let gemini = std::env::var_os("PI_HARNESS_REAL_GEMINI").map(PathBuf::from);
    if gemini.is_none() {
        eprintln!(
            "skip: PI_HARNESS_REAL_GEMINI not set (pi-harness install gemini 0.61.0 --print-path)"
        );
    }
    gemini
}

/// Gemini CLI's arguments for `prompt`, as the corpus gives them.
fn gemini_args(prompt: &str) -> Vec<String> {
    [
        "--output-format",
        "stream-json",
        "-m",
        "gemini-2.5-flash",
        "-y",
        "-p",
        prompt,
    ]
    .map(String::from)
    .to_vec()
}

/// Record the committed script `name` into the world with the real CLI (`flags` before `--`);
/// the cassette's path and the command's output.
fn record(
    w: &World,
    gemini: &Path,
    name: &str,
    flags: &[&str],
    args: &[String],
) -> (PathBuf, std::process::Output) {
    let out = w.path().join(format!("{name}.cassette.jsonl"));
    let o = pih()
        .env(MARKER_VAR, w.marker())
        .args([
            "record",
            "--agent",
            "gemini",
            "--timeout",
            "120",
            "--script",
        ])
        .arg(repo().join(format!("cassettes/scripts/gemini/{name}.llm.json")))
        .arg("--pi")
        .arg(gemini)
        .arg("--out")
        .arg(&out)
        .arg("--request-log")
        .arg(out.with_extension("requests"))
        .args(flags)
        .arg("--")
        .args(args)
        .timeout(Duration::from_secs(180))
        .output()
        .unwrap();
    (out, o)
}

/// The script's text turns, each turn's chunks joined (what the mapper joins), read with
/// serde_json apart from the recorder.
fn script_texts(name: &str) -> Vec<String> {
    let path = repo().join(format!("cassettes/scripts/gemini/{name}.llm.json"));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    v["turns"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["text"].as_array())
        .map(|chunks| chunks.iter().map(|c| c.as_str().unwrap()).collect())
        .collect()
}

/// The messages the Gemini mapper makes of the cassette's stdout and exit code.
fn mapped(c: &Cassette) -> Vec<Message> {
    let code = c.records.iter().find_map(|r| match r.action {
        Action::Exit(c) => Some(c),
        _ => None,
    });
    let end = StreamEnd::eof(Some(ExitInfo { code, signal: None }));
    pi_wire::gemini::map_all(&c.stdout_bytes(), end, MapperOptions::default())
}

/// The assistant texts of `messages`, consecutive chunks joined.
fn texts(messages: &[Message]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut joining = false;
    for m in messages {
        match m {
            Message::Assistant { text } if joining => out.last_mut().unwrap().push_str(text),
            Message::Assistant { text } => {
                out.push(text.clone());
                joining = true;
            }
            _ => joining = false,
        }
    }
    out
}

/// The header every recording here has: Gemini CLI 0.61.0 under `gemini`, what it ran with.
fn check_header(c: &Cassette, prompt: &str, max_attempts: u32) {
    let text = c.to_jsonl();
    let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(first["gemini"]["version"], "0.61.0", "{first}");
    assert_eq!(first["gemini"]["dialect"], "gemini-stream-json");
    assert!(
        first.get("pi").is_none() && first.get("mode").is_none(),
        "{first}"
    );
    assert_eq!(c.header.agent(), pi_grammar::Agent::Gemini);
    assert_eq!(c.header.pi.dialect, Dialect::GeminiStreamJson);
    let e = &c.header.expect;
    assert_eq!(
        e.flags["output-format"],
        FlagRule::Value("stream-json".into())
    );
    assert_eq!(e.flags["model"], FlagRule::Value("gemini-2.5-flash".into()));
    assert_eq!(e.flags["yolo"], FlagRule::Present(true));
    assert!(!e.flags.contains_key("prompt"));
    assert_eq!(e.argv_messages.as_deref(), Some(&[prompt.to_string()][..]));
    assert_eq!(e.prompt.as_deref(), Some(prompt));
    assert_eq!(e.env, ["GEMINI_API_KEY"]);
    assert_eq!(e.never_in_argv, [Secret::Env("GEMINI_API_KEY".into())]);
    assert_eq!(e.session, Some(SessionUse::New));
    let eff = e.effective.as_ref().unwrap();
    assert_eq!(eff.mode.as_deref(), Some("stream-json"));
    assert_eq!(eff.model.as_deref(), Some("gemini-2.5-flash"));
    assert_eq!(eff.approval.as_deref(), Some("yolo"));
    assert_eq!(eff.max_attempts, Some(max_attempts));
    // The recorder's way to its server (auth type, base URL, trust) is not the caller's.
    assert_eq!(eff.provider, None);
    assert_eq!(
        c.header.process.on_sigterm,
        SignalAction::Exit { code: 0 },
        "as measured"
    );
    // Nothing of the recording machine: no temp paths, no key, no real session id or time.
    assert!(
        !text.contains("/tmp/") && !text.contains("pih-key-") && !text.contains("\"20"),
        "{text}"
    );
    assert!(text.contains("\"session_id\":\"<SESSION_ID>\""), "{text}");
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
fn real_gemini_records_text_a_tool_and_a_400() {
    let Some(gemini) = real_gemini() else { return };
    let w = World::new("real-gemini-record");

    let (out, o) = record(&w, &gemini, "gemini_text", &[], &gemini_args("Say hello."));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let c = Cassette::load(&out).unwrap();
    check_header(&c, "Say hello.", 10);
    assert!(matches!(c.records.last().unwrap().action, Action::Exit(0)));
    let messages = mapped(&c);
    assert_eq!(texts(&messages), script_texts("gemini_text"));
    assert_eq!(messages.last().unwrap().kind(), "terminal.completed");
    let reqs = requests(&out);
    assert_eq!(reqs.len(), 1, "-m: no routing request");
    assert!(
        reqs[0]["path"]
            .as_str()
            .unwrap()
            .starts_with("/v1beta/models/gemini-2.5-flash:streamGenerateContent"),
        "{}",
        reqs[0]
    );

    let (out, o) = record(
        &w,
        &gemini,
        "gemini_tool",
        &[],
        &gemini_args("Run the echo."),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let c = Cassette::load(&out).unwrap();
    check_header(&c, "Run the echo.", 10);
    let messages = mapped(&c);
    assert_eq!(texts(&messages), script_texts("gemini_tool"));
    let completed = messages
        .iter()
        .find_map(|m| match m {
            Message::ToolCompleted { result, .. } => Some(result.to_value()),
            _ => None,
        })
        .unwrap();
    assert!(
        completed.to_string().contains("hi-from-gemini-tool"),
        "{completed}"
    );
    // The second request carries the tool's output back to the model.
    let reqs = requests(&out);
    assert_eq!(reqs.len(), 2);
    assert!(
        reqs[1].to_string().contains("hi-from-gemini-tool"),
        "{}",
        reqs[1]
    );

    // A 400: Gemini's `result` says error, and it exits with the status & 255.
    let (out, o) = record(
        &w,
        &gemini,
        "gemini_model_error",
        &["--setting", "general.maxAttempts=3"],
        &gemini_args("Say hello."),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let c = Cassette::load(&out).unwrap();
    check_header(&c, "Say hello.", 3);
    assert!(matches!(
        c.records.last().unwrap().action,
        Action::Exit(144)
    ));
    assert_eq!(mapped(&c).last().unwrap().kind(), "terminal.failed");
    assert_eq!(requests(&out).len(), 1, "a 400 is not retried");
    w.assert_none_left_within(Duration::from_secs(2));
}

#[test]
fn real_gemini_signalled_as_a_group_mid_tool_leaves_its_tool_as_spawns_and_nothing_running() {
    let Some(gemini) = real_gemini() else { return };
    let w = World::new("real-gemini-group-signal");
    let (out, o) = record(
        &w,
        &gemini,
        "gemini_sigterm_group_mid_tool",
        &[
            "--signal",
            "SIGTERM",
            "--signal-to",
            "group",
            "--at",
            "tool_use+1500",
            "--allow-exhausted",
        ],
        &gemini_args("Run it."),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let c = Cassette::load(&out).unwrap();
    check_header(&c, "Run it.", 10);
    // It exited 0 at once (measured, not the CLI's own record: no `result` line), its tool's
    // shell, in a session of its own, lived on.
    assert!(matches!(c.records.last().unwrap().action, Action::Hang));
    let stdout = String::from_utf8(c.stdout_bytes()).unwrap();
    assert!(!stdout.contains("\"type\":\"result\""), "{stdout}");
    let spawns: Vec<&pi_cassette::Spawn> = c
        .records
        .iter()
        .filter_map(|r| match &r.action {
            Action::Spawn(s) => Some(s),
            _ => None,
        })
        .collect();
    assert_eq!(spawns.len(), 1, "{}", c.to_jsonl());
    assert!(spawns[0].own_session);
    let notes = c.header.origin.notes.as_deref().unwrap();
    assert!(
        notes.contains("exited with code 0") && notes.contains("killed by the recorder"),
        "{notes}"
    );
    // The recorder killed the orphaned tool tree: nothing of the marker is left.
    w.assert_none_left_within(Duration::from_secs(2));
}

#[test]
fn real_gemini_that_never_reaches_the_model_writes_nothing() {
    let Some(gemini) = real_gemini() else { return };
    let w = World::new("real-gemini-no-request");
    // An auth type the CLI refuses with its base URL: it stops before any request.
    let (out, o) = record(
        &w,
        &gemini,
        "gemini_text",
        &["--setting", "security.auth.selectedType=nowhere"],
        &gemini_args("Say hello."),
    );
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    let last = stderr.lines().last().unwrap_or_default();
    assert!(
        last.starts_with(
            "error: Gemini CLI (the server stood in for Google's Gemini API) made no model request"
        ),
        "{stderr}"
    );
    assert!(!out.exists());
    w.assert_none_left_within(Duration::from_secs(2));
}
