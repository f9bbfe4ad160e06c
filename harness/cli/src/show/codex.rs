//! What `show` says of a Codex cassette (`codex exec --json`, header key `codex`): the
//! recorded words with Codex's grammar, and the replay: `codex exec [resume --last] FLAGS
//! PROMPT` run as fake-pi with a fresh `CODEX_HOME` whose `config.toml` gives the recorded
//! provider, model, sandbox and approval, checked against the matching contract as fake-pi
//! checks it (`pi_cassette::matching::codex`), a note for whatever it cannot satisfy.

use std::collections::BTreeMap;
use std::path::Path;

use pi_cassette::matching::codex::{check, CodexCall};
use pi_cassette::{Action, Expect, FlagRule, SessionUse};
use pi_grammar::codex::{self, Codex, Layer};

use super::model::Word;
use super::quoted;
use super::read::Recording;
use super::replay::{listing_notes, replay_env, Replay};

/// The provider ids Codex has built in (no `[model_providers]` table needed).
const BUILT_IN: &[&str] = &["openai", "oss", "ollama", "lmstudio"];

/// Whether Codex's `--key` takes a value (unknown options are taken as switches).
fn takes_value(cli: &Codex, key: &str) -> bool {
    cli.option(key).is_some_and(|o| o.value_name.is_some())
}

/// The recorded command line as words: `exec` (and `resume`), the flags, the prompt.
pub(super) fn recorded_words(e: &Expect, cli: &Codex) -> Vec<Word> {
    let mut words = vec![Word::Flag("exec".into())];
    if e.session == Some(SessionUse::Resumed) {
        words.push(Word::Flag("resume".into()));
    }
    for (key, rule) in &e.flags {
        match rule {
            FlagRule::Present(false) => {}
            FlagRule::Present(true) => {
                words.push(Word::Flag(format!("--{key}")));
                if takes_value(cli, key) {
                    words.push(Word::Unrecorded);
                }
            }
            FlagRule::Value(v) => {
                words.push(Word::Flag(format!("--{key}")));
                words.push(Word::Value(v.clone()));
            }
        }
    }
    for m in e.argv_messages.iter().flatten() {
        words.push(Word::Value(m.clone()));
    }
    words
}

/// The `config.toml` that gives the recorded effective values (its lines), and the same
/// values as Codex's layers hold them (dotted keys).
pub(super) fn config(e: &Expect) -> (Vec<String>, BTreeMap<String, String>) {
    let eff = e.effective.clone().unwrap_or_default();
    let mut lines = Vec::new();
    let mut values = BTreeMap::new();
    for (key, value) in [
        ("model", &eff.model),
        ("model_provider", &eff.provider),
        ("sandbox_mode", &eff.sandbox),
        ("approval_policy", &eff.approval),
    ] {
        if let Some(v) = value {
            lines.push(format!("{key} = {}", quoted(v)));
            values.insert(key.to_string(), v.clone());
        }
    }
    // A provider of the caller's own is defined, its key read from the expected variable.
    if let Some(p) = eff.provider.as_deref().filter(|p| !BUILT_IN.contains(p)) {
        lines.push(format!("[model_providers.{}]", quoted(p)));
        let mut table = vec![
            ("name", p.to_string()),
            ("base_url", "http://127.0.0.1:9/v1".to_string()),
            ("wire_api", "responses".to_string()),
        ];
        if let Some(k) = e.env.first() {
            table.push(("env_key", k.clone()));
        }
        for (k, v) in table {
            lines.push(format!("{k} = {}", quoted(&v)));
            values.insert(format!("model_providers.{p}.{k}"), v);
        }
    }
    (lines, values)
}

/// The replay of a Codex cassette: `exec` (`exec resume --last` for a resumed session), the
/// recorded flags, the prompt where the recording had it, `CODEX_HOME/config.toml` with the
/// recorded values; notes for what the command cannot satisfy.
pub(super) fn codex_replay(c: &Recording, cli: Option<Codex>, path: Option<&Path>) -> Replay {
    let e = &c.header.expect;
    let mut notes = vec![
        "fake-pi answers to any name: put a `codex` symlink to it on the host's PATH".to_string(),
    ];
    let mut argv = vec!["exec".to_string()];
    let resumed = e.session == Some(SessionUse::Resumed);
    if resumed {
        argv.push("resume".into());
        // fake-pi keeps no sessions: any earlier one, or none, is resumed alike.
        if !e.flags.contains_key("last") {
            argv.push("--last".into());
        }
    }
    for (key, rule) in &e.flags {
        match rule {
            FlagRule::Present(false) => {}
            FlagRule::Present(true) => {
                argv.push(format!("--{key}"));
                if cli.is_some_and(|x| takes_value(&x, key)) {
                    argv.push("VALUE".into());
                }
            }
            FlagRule::Value(v) => argv.extend([format!("--{key}"), v.clone()]),
        }
    }
    // Outside a Git repository Codex refuses to run without it (by meaning, the same call).
    if !e.syntax && !e.flags.contains_key("skip-git-repo-check") {
        argv.push("--skip-git-repo-check".into());
    }
    let stdin = match e.argv_messages.as_deref() {
        Some([]) => {
            argv.push("-".into());
            Some(e.prompt.clone().unwrap_or_default())
        }
        Some([first, ..]) => {
            argv.push(first.clone());
            None
        }
        None => {
            argv.push(e.prompt.clone().unwrap_or_else(|| "hello".into()));
            None
        }
    };
    let (lines, values) = config(e);
    let env = replay_env(e, path);
    if path.is_none() {
        notes.push("the cassette came on stdin: put its path in FAKE_PI_CASSETTE".into());
    }
    match cli {
        Some(cli) => notes.extend(contract_notes(
            e,
            &cli,
            &argv,
            stdin.as_deref(),
            values,
            &env,
        )),
        None => notes.push(format!(
            "fake-pi cannot replay Codex {}: it knows Codex {} (exit 98)",
            c.header.pi.version,
            codex::known_versions().join(", ")
        )),
    }
    let hangs = matches!(c.ending, Action::Hang);
    if hangs {
        notes.push(
            "the replay hangs like the recording: end it with a signal (Ctrl-C is SIGINT)".into(),
        );
        notes.push("SIGKILL of fake-pi (the node wrapper) leaves its native `codex` child and the tools running, orphaned, as the real CLI does: they end by themselves FAKE_PI_CODEX_ORPHAN_MS after (default 5000)".into());
    }
    if c.spawns.total > 0 {
        notes.push("it starts processes that may outlive it: `pi-harness leftovers -- sh -c '...'` around the command finds and kills them".into());
    }
    notes.extend(listing_notes(c));
    Replay {
        env,
        argv,
        stdin,
        stdin_lines: None,
        session_file: None,
        codex_config: Some(lines),
        gemini_settings: None,
        hangs,
        notes,
    }
}

/// The command must satisfy the matching contract: checked as fake-pi checks it, a note
/// for each refusal or mismatch.
fn contract_notes(
    e: &Expect,
    cli: &Codex,
    argv: &[String],
    stdin: Option<&str>,
    values: BTreeMap<String, String>,
    env: &[(String, String)],
) -> Vec<String> {
    let parsed = match cli.parse(argv) {
        Ok(p) => p,
        Err(stop) => {
            return vec![format!(
                "Codex {} refuses this command line: {}",
                cli.version(),
                stop.stderr.trim_end()
            )]
        }
    };
    let layers = [
        Layer {
            name: "config.toml".into(),
            values,
        },
        Layer {
            name: "-c".into(),
            values: BTreeMap::new(),
        },
    ];
    let effective = codex::effective(&parsed, &layers);
    let prompt = match (parsed.prompt.as_deref(), stdin) {
        (Some("-") | None, Some(s)) => s.to_string(),
        (Some(p), _) => p.to_string(),
        (None, None) => String::new(),
    };
    let lookup = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    let call = CodexCall {
        argv,
        parsed: &parsed,
        effective: &effective,
        prompt: Some(&prompt),
        env: &lookup,
    };
    check(e, &call)
        .into_iter()
        .map(|m| format!("this command line does not satisfy {m}"))
        .collect()
}
