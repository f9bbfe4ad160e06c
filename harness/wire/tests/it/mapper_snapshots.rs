//! The mapper over every committed cassette, with its output kept as an insta snapshot
//! (`harness/wire/tests/it/snapshots/`), plus the invariants on each (`pi_testkit::invariants::map_and_check`;
//! a Codex cassette goes through Codex's mapper and its invariants, `codex_corpus`; a Gemini
//! CLI cassette through Gemini's, `gemini_corpus`);
//! and over the real pi 1.5.2 captures of `tests/data/pi152/` (raw stdout, all exited 0).
//! The stream end comes from the cassette's final record: exit code or signal after EOF;
//! a hang is cancelled. Strings over 400 bytes are shortened in the snapshot (a fault
//! cassette carries a 4 MiB tool output); the invariants are checked on the full output.

use pi_cassette::Cassette;
use pi_grammar::Agent;
use pi_wire::mapper::{map_all, MapperOptions, StreamEnd};
use pi_wire::message::{ExitInfo, Message};
use serde_json::Value;

use pi_testkit::invariants::*;

use crate::codex_corpus::map_and_check_codex;
use crate::gemini_corpus::map_and_check_gemini;

const KEEP: usize = 200;

fn shorten_str(s: &mut String) {
    if s.len() > 2 * KEEP {
        let mut end = KEEP;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        *s = format!("{}... <{} bytes in all>", &s[..end], s.len());
    }
}

/// Long strings become their first `KEEP` bytes plus a note of the full length.
fn shorten(v: &mut Value) {
    match v {
        Value::String(s) => shorten_str(s),
        Value::Array(items) => items.iter_mut().for_each(shorten),
        Value::Object(map) => map.values_mut().for_each(shorten),
        _ => {}
    }
}

fn shorten_message(m: &mut Message) {
    match m {
        Message::Assistant { text } | Message::AssistantThought { text } => shorten_str(text),
        Message::ToolCall { arguments: v, .. }
        | Message::ToolUpdate { partial: v, .. }
        | Message::ToolCompleted { result: v, .. }
        | Message::ToolFailed { error: v, .. } => {
            let mut value = v.to_value();
            shorten(&mut value);
            *v = value.into();
        }
        Message::TerminalFailed(f) => {
            if let Some(t) = &mut f.stderr_tail {
                shorten_str(t)
            }
        }
        _ => {}
    }
}

#[test]
fn mapper_output_for_every_cassette() {
    insta::glob!("../../../../cassettes", "**/*.cassette.jsonl*", |path| {
        let c = Cassette::load(path).unwrap_or_else(|e| panic!("{e}"));
        if c.header.mode.is_some() {
            return; // an RPC session: its stdout answers commands, not one json-mode run
        }
        let agent = c.header.agent();
        let out = match agent {
            Agent::Pi => map_and_check(&c),
            Agent::Codex => map_and_check_codex(&c),
            Agent::Gemini => map_and_check_gemini(&c),
            // Every Claude Code cassette is two-way, left out above.
            Agent::Claude => panic!("{}: a one-way Claude Code cassette", path.display()),
        };
        let out = out.unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mut shown = out;
        shown.iter_mut().for_each(shorten_message);
        insta::with_settings!({
            description => format!("{} ({} {}, {})", c.header.scenario.description, agent.display_name(), c.header.pi.version, c.header.pi.dialect),
            omit_expression => true,
        }, {
            insta::assert_yaml_snapshot!(shown);
        });
    });
}

#[test]
fn mapper_output_for_pi152_captures() {
    insta::glob!("../data/pi152", "*.stdout.jsonl", |path| {
        let stdout = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let exit = ExitInfo {
            code: Some(0),
            signal: None,
        };
        let out = map_all(
            &stdout,
            StreamEnd::eof(Some(exit)),
            MapperOptions::default(),
        );
        let check = check_structure(&out)
            .and_then(|()| check_text_invariant(&stdout, &out))
            .and_then(|()| check_thoughts(&stdout, &out))
            .and_then(|()| check_usage(&stdout, &out));
        check.unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mut shown = out;
        shown.iter_mut().for_each(shorten_message);
        insta::with_settings!({
            description => "real pi 1.5.2 stdout, exit 0".to_string(),
            omit_expression => true,
        }, {
            insta::assert_yaml_snapshot!(shown);
        });
    });
}
