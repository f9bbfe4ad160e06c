//! What `show` says of a Gemini CLI cassette (`gemini --output-format stream-json`, header
//! key `gemini`): the recorded options as words, and the replay: the options again with the
//! prompt by `--prompt`, fake-pi under the name `gemini`.

use std::path::Path;

use pi_cassette::{Action, Expect, FlagRule};

use super::model::Word;
use super::read::Recording;
use super::replay::{listing_notes, replay_env, Replay};

/// The recorded command line as words: the options, then `--prompt` and the prompt.
pub(super) fn recorded_words(e: &Expect) -> Vec<Word> {
    let mut words = Vec::new();
    for (key, rule) in &e.flags {
        match rule {
            FlagRule::Present(false) => {}
            FlagRule::Present(true) => words.push(Word::Flag(format!("--{key}"))),
            FlagRule::Value(v) => {
                words.push(Word::Flag(format!("--{key}")));
                words.push(Word::Value(v.clone()));
            }
        }
    }
    if let Some(p) = prompt(e) {
        words.push(Word::Flag("--prompt".into()));
        words.push(Word::Value(p));
    }
    words
}

fn prompt(e: &Expect) -> Option<String> {
    e.prompt
        .clone()
        .or_else(|| e.argv_messages.as_ref().and_then(|m| m.first().cloned()))
}

/// The `settings.json` of the replay's fresh `GEMINI_CLI_HOME`: what only settings say.
fn settings_json(e: &Expect) -> String {
    match e.effective.as_ref().and_then(|x| x.max_attempts) {
        Some(n) => format!("{{\"general\":{{\"maxAttempts\":{n}}}}}"),
        None => "{}".into(),
    }
}

/// The replay of a Gemini CLI cassette as a command line.
pub(super) fn gemini_replay(c: &Recording, path: Option<&Path>) -> Replay {
    let e = &c.header.expect;
    let mut argv = Vec::new();
    for w in recorded_words(e) {
        match w {
            Word::Flag(f) | Word::Value(f) => argv.push(f),
            Word::Unrecorded => argv.push("VALUE".into()),
        }
    }
    let mut notes = vec![
        "fake-pi answers to any name: put a `gemini` symlink to it on the host's PATH".to_string(),
    ];
    let hangs = matches!(c.ending, Action::Hang);
    if hangs {
        notes.push(
            "the replay hangs like the recording: end it with a signal to its process group (Gemini CLI's own process ignores SIGTERM and SIGINT); the tools it leaves running end by themselves after FAKE_PI_GEMINI_ORPHAN_MS (5 s)".into(),
        );
    }
    notes.extend(listing_notes(c));
    Replay {
        env: replay_env(e, path),
        argv,
        stdin: None,
        stdin_lines: None,
        session_file: None,
        codex_config: None,
        gemini_settings: Some(settings_json(e)),
        hangs,
        notes,
    }
}
