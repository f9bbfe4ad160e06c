//! Every cassette through the reference provider with fake-pi as a real subprocess at
//! instant speed: every invariant holds, no process carrying the run's marker is left, and
//! the committed expected stream (`conformance/expected/<case>.json[.gz]`, the one stored
//! copy of the provider's stream for each case) equals this run's output.
//! A stale expected file fails with its per-field differences and the command that
//! rewrites it: `PI_HARNESS_BLESS=1` rewrites stale expected files instead of failing.

use crate::util::*;
use conformance::conform;
use conformance::expected::stale_text;
use pi_cassette::Cassette;

/// The command that rewrites the stale expected files.
const BLESS: &str = "PI_HARNESS_BLESS=1 cargo test -p conformance --test it suite::every_cassette_through_the_reference_provider";
/// Stale cases whose differences are shown (all are named).
const SHOWN_STALE: usize = 10;

#[test]
fn every_cassette_through_the_reference_provider() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let root = cassettes_dir();
    let bless = std::env::var_os("PI_HARNESS_BLESS").is_some_and(|v| v == "1");
    let mut stale = Vec::new();
    insta::glob!("../../../cassettes", "**/*.cassette.jsonl*", |path| {
        let c = Cassette::load(path).unwrap_or_else(|e| panic!("{e}"));
        let case = conform::case_of(&root, path, &conformance::outline::Outline::of(&c));
        let world = World::new(&case.name);
        let msgs = rt.block_on(run_case(&world, &case));
        world.assert_none_left_within(SETTLE);
        match c.header.agent() {
            // Claude Code's runs: one terminal per turn, the last message a terminal (the
            // per-run rules live in pi_wire::claude's tests).
            pi_grammar::Agent::Claude => match msgs.last() {
                Some(m) if m.is_terminal() => Ok(()),
                other => Err(format!("a Claude case ends with a terminal, not {other:?}")),
            },
            pi_grammar::Agent::Codex => {
                check_codex_invariants(&c, case.request.session.is_some(), &msgs)
            }
            pi_grammar::Agent::Gemini => check_gemini_invariants(&c, &msgs),
            pi_grammar::Agent::Pi if c.header.mode.is_some() => check_rpc_invariants(&c, &msgs),
            pi_grammar::Agent::Pi => check_invariants(&c, &msgs),
        }
        .unwrap_or_else(|e| panic!("{}: {e}", case.name));
        if case.request.cancel_after_idle_ms.is_some() {
            assert!(
                matches!(
                    msgs.last(),
                    Some(pi_wire::message::Message::TerminalCancelled { .. })
                ),
                "{}: a hang case ends cancelled: {:?}",
                case.name,
                msgs.last()
            );
        }

        let vals = values(&msgs);
        let expected = conform::expected_of(&case, &root, vals).expect("expected record");
        match conform::load_expected(&expected_dir(), &case.name) {
            Ok(committed) if committed == expected => {}
            _ if bless => {
                conform::write_expected(&expected_dir(), &expected).expect("write expected");
            }
            Ok(committed) => stale.push((case.name.clone(), stale_text(&committed, &expected))),
            Err(e) => stale.push((case.name.clone(), format!("{}:\n      {e}\n", case.name))),
        }
    });
    let names: Vec<&String> = stale.iter().map(|(name, _)| name).collect();
    let shown: String = stale
        .iter()
        .take(SHOWN_STALE)
        .map(|(_, t)| t.as_str())
        .collect();
    let more = match stale.len().saturating_sub(SHOWN_STALE) {
        0 => String::new(),
        n => format!("... and {n} more stale cases\n"),
    };
    assert!(
        stale.is_empty(),
        "expected streams out of date (rerun with PI_HARNESS_BLESS=1 and review the diff): {names:?}\n{shown}{more}update them with:\n  {BLESS}"
    );
}

#[test]
fn every_case_has_an_expected_file_and_no_file_is_orphaned() {
    let cases = conform::discover(&cassettes_dir()).expect("cases");
    let names: std::collections::BTreeSet<String> = cases.iter().map(|c| c.name.clone()).collect();
    let mut files = Vec::new();
    let mut dirs = vec![expected_dir()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).expect("expected dir") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                dirs.push(p);
            } else {
                let rel = p
                    .strip_prefix(expected_dir())
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                files.push(
                    pi_cassette::input::without_compression_suffix(&rel)
                        .trim_end_matches(".json")
                        .to_string(),
                );
            }
        }
    }
    for f in &files {
        assert!(names.contains(f), "expected file without a cassette: {f}");
    }
    for n in &names {
        assert!(files.contains(n), "no expected file for case {n}");
    }
}
