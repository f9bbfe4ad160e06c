//! Reading a cassette's meaning: [`facts`] turns what `show` read of a cassette
//! ([`Recording`]) into the [`Facts`] model,
//! with the effective values of `pi_cassette::matching::expected` (the same rule fake-pi
//! applies) checked against the cassette's pi version first.

use std::path::Path;

use pi_cassette::matching;
use pi_cassette::{Action, EffectiveExpect, Expect, SignalAction};
use pi_grammar::{Agent, Grammar};

use super::codex;
use super::model::{
    Ending, Expects, Facts, Grandchild, Output, Process, Program, Scenario, SignalAnswer, Signals,
    Word,
};
use super::read::Recording;
use super::replay::{self, Replay};

/// What the call is compared on: the effective values, the follow-ups and where the prompt
/// was; and the recorded command line as words.
struct Call {
    want: EffectiveExpect,
    follow_ups: Option<Vec<String>>,
    delivery: Option<&'static str>,
    recorded: Vec<Word>,
}

/// Gather the facts; an error (the header's expectations cannot hold) as `header field ...`.
pub fn facts(c: &Recording, path: Option<&Path>) -> Result<Facts, String> {
    match c.header.agent() {
        Agent::Claude => {
            // Nothing of pi's matching: the recorded options are the command line.
            let grammar = Grammar::nearest(pi_grammar::KNOWN_VERSIONS[0]);
            let call = Call {
                want: EffectiveExpect::default(),
                follow_ups: None,
                delivery: None,
                recorded: replay::recorded_words(&c.header.expect, &grammar),
            };
            let replay = replay::claude_replay(c, path);
            return Ok(assemble(c, path, true, call, replay));
        }
        Agent::Codex => return Ok(codex_facts(c, path)),
        Agent::Gemini => return Ok(gemini_facts(c, path)),
        Agent::Pi => {}
    }
    let version = &c.header.pi.version;
    let known = c.header.pi.grammar();
    let grammar = known.unwrap_or_else(|| Grammar::nearest(version));
    if known.is_some() {
        matching::validate(&c.header.expect, &grammar)?;
    }
    let e = &c.header.expect;
    let want = matching::expected(e, &grammar);
    let follow_ups = match (&e.follow_ups, &e.argv_messages) {
        (Some(f), _) => Some(f.clone()),
        (None, Some(m)) if !e.syntax => Some(m.iter().skip(1).cloned().collect()),
        _ => None,
    };
    let prompts = replay::prompts(e, follow_ups.as_deref());
    let mut replay = replay::replay(c, &grammar, &want, &prompts, path);
    if known.is_none() {
        replay.notes.insert(
            0,
            format!(
                "fake-pi cannot replay pi {version}: it knows pi {} (exit 98)",
                pi_grammar::KNOWN_VERSIONS.join(", ")
            ),
        );
    }
    let call = Call {
        want,
        follow_ups,
        delivery: prompts.delivery,
        recorded: replay::recorded_words(e, &grammar),
    };
    Ok(assemble(c, path, known.is_some(), call, replay))
}

/// A Codex cassette's facts: the recorded effective values as they are (Codex resolves
/// them from flags, `-c` and config.toml; nothing is implied), its command line read with
/// its release's grammar, the `codex exec` replay.
fn codex_facts(c: &Recording, path: Option<&Path>) -> Facts {
    let e = &c.header.expect;
    let cli = c.header.pi.codex();
    let words = codex::recorded_words(e, &cli.unwrap_or_else(pi_grammar::codex::Codex::latest));
    let call = Call {
        want: e.effective.clone().unwrap_or_default(),
        follow_ups: None,
        delivery: replay::prompts(e, None).delivery,
        recorded: words,
    };
    let replay = codex::codex_replay(c, cli, path);
    assemble(c, path, cli.is_some(), call, replay)
}

/// A Gemini CLI cassette's facts: the recorded effective values as they are, its options as
/// recorded, the replay under the name `gemini`.
fn gemini_facts(c: &Recording, path: Option<&Path>) -> Facts {
    let e = &c.header.expect;
    let call = Call {
        want: e.effective.clone().unwrap_or_default(),
        follow_ups: None,
        delivery: None,
        recorded: super::gemini::recorded_words(e),
    };
    let replay = super::gemini::gemini_replay(c, path);
    assemble(c, path, c.header.pi.gemini().is_some(), call, replay)
}

/// The whole model, from the cassette and what its call means.
fn assemble(
    c: &Recording,
    path: Option<&Path>,
    replayable: bool,
    call: Call,
    replay: Replay,
) -> Facts {
    let h = &c.header;
    let total = c.duration_ms;
    let setup = super::setup::setup(h.agent(), &h.expect, &call.want, &replay);
    Facts {
        file: path.map(Path::to_path_buf),
        scenario: Scenario {
            name: h.scenario.name.clone(),
            description: h.scenario.description.clone(),
            tags: h.scenario.tags.clone(),
        },
        pi: Program {
            version: h.pi.version.clone(),
            dialect: h.pi.dialect,
            replayable,
            agent: h.agent(),
        },
        origin: h.origin.clone(),
        expects: expects(&h.expect, call),
        ending: match &c.ending {
            Action::Exit(code) => Ending::Exit {
                code: *code,
                after_ms: total,
            },
            Action::Signal(sig) => Ending::Signal {
                signal: sig.clone(),
                after_ms: total,
            },
            _ => Ending::Hang { after_ms: total },
        },
        signals: signals(c),
        processes: processes(c),
        processes_left_out: c.spawns.left_out(),
        placeholders: h.redactions.clone(),
        output: Output {
            stdout_lines: c.stdout_lines,
            stdout_bytes: c.stdout_bytes,
            stderr_bytes: c.stderr_bytes,
            duration_ms: total,
        },
        client: c.client.as_ref().map(|client| client.steps.kept.clone()),
        client_left_out: c
            .client
            .as_ref()
            .map_or(0, |client| client.steps.left_out()),
        replay,
        setup,
        bundled: None,
    }
}

fn expects(e: &Expect, call: Call) -> Expects {
    Expects {
        any: e.is_empty(),
        effective: call.want,
        irrelevant: e.irrelevant.clone(),
        prompt: e.prompt.clone(),
        prompt_delivery: call.delivery,
        follow_ups: call.follow_ups,
        session: e.session,
        env: e.env.clone(),
        never_in_argv: e.never_in_argv.clone(),
        syntax: e.syntax,
        flags: e.flags.clone(),
        argv_messages: e.argv_messages.clone(),
        recorded: call.recorded,
    }
}

/// The processes started, as listed.
fn processes(c: &Recording) -> Vec<Process> {
    c.spawns
        .kept
        .iter()
        .map(|(at_ms, s)| Process {
            id: s.id.clone(),
            at_ms: *at_ms,
            argv: s.argv.clone(),
            own_session: s.own_session,
            ignore_sigterm: s.ignore_sigterm,
            hold_stdout: s.hold_stdout,
            lifetime_ms: s.lifetime_ms,
            grandchild: s.grandchild.as_ref().map(|g| Grandchild {
                argv: g.argv.clone(),
                own_session: g.own_session,
                ignore_sigterm: g.ignore_sigterm,
                hold_stdout: g.hold_stdout,
            }),
        })
        .collect()
}

fn signals(c: &Recording) -> Signals {
    let p = &c.header.process;
    let answer = |action: &SignalAction, pi: SignalAction| SignalAnswer {
        action: action.clone(),
        pi_default: *action == pi,
    };
    Signals {
        sigterm: answer(&p.on_sigterm, SignalAction::pi_sigterm()),
        sigint: answer(&p.on_sigint, SignalAction::pi_sigint()),
        sighup: answer(&p.on_sighup, SignalAction::pi_sighup()),
    }
}
