//! Property tests of the mapper: arbitrary byte lines, arbitrary chunkings, and mutated
//! real streams (the committed cassettes with lines dropped, duplicated, truncated,
//! corrupted or inserted). No panic, exactly one terminal and it is last, the same output
//! whatever the chunking, and invariant 3 where the mutations leave the text alone.

use std::sync::OnceLock;

use pi_cassette::Cassette;
use pi_wire::mapper::{EndCause, MapperOptions, StreamEnd};
use pi_wire::message::{ExitInfo, FailureReason, Message};
use proptest::prelude::*;
use proptest::sample::{select, Index};

use pi_testkit::invariants::*;

struct Stream {
    cassette: Cassette,
    lines: Vec<Vec<u8>>,
    end: StreamEnd,
}

fn streams() -> &'static [Stream] {
    static STREAMS: OnceLock<Vec<Stream>> = OnceLock::new();
    STREAMS.get_or_init(|| {
        all_cassettes()
            .iter()
            // pi's streams only (Claude Code's have their own mapper and tests).
            .filter(|p| !p.parent().is_some_and(|d| d.ends_with("claude")))
            .map(|p| {
                let c = Cassette::load(p).unwrap_or_else(|e| panic!("{e}"));
                let stdout = c.stdout_bytes();
                let mut lines: Vec<Vec<u8>> =
                    stdout.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
                if lines.last().is_some_and(Vec::is_empty) {
                    lines.pop();
                }
                Stream {
                    lines,
                    end: end_of(&c),
                    cassette: c,
                }
            })
            .collect()
    })
}

fn real_lines() -> Vec<Vec<u8>> {
    streams().iter().flat_map(|s| s.lines.clone()).collect()
}

const TRICKY: &[&str] = &[
    "{}",
    "{\"type\":null}",
    "{\"type\":\"message_update\"}",
    "{\"type\":\"message_update\",\"assistantMessageEvent\":5}",
    "{\"type\":\"message_update\",\"assistantMessageEvent\":{\"type\":\"text_delta\",\"delta\":7}}",
    "{\"type\":\"message_update\",\"assistantMessageEvent\":{\"type\":\"text_delta\",\"delta\":\"\u{e9}\u{2028}\"}}",
    "{\"type\":\"message_update\",\"message\":{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"snap\"}]}}",
    "{\"type\":\"message_update\",\"assistantMessageEvent\":{\"type\":\"toolcall_end\",\"toolCall\":[1]}}",
    "{\"type\":\"message_start\",\"message\":{\"role\":\"assistant\",\"timestamp\":1}}",
    "{\"type\":\"message_end\",\"message\":{\"role\":\"assistant\",\"content\":\"a string\"}}",
    "{\"type\":\"message_end\",\"message\":{\"role\":\"assistant\",\"content\":[1,{\"type\":\"text\",\"text\":5},{\"type\":\"toolCall\"}],\"usage\":[]}}",
    "{\"type\":\"message_end\",\"message\":{\"role\":\"assistant\",\"stopReason\":\"error\",\"usage\":{\"input\":-1,\"output\":1.5e300}}}",
    "{\"type\":\"message_end\",\"message\":7}",
    "{\"type\":\"tool_execution_end\",\"toolCallId\":\"a\"}",
    "{\"type\":\"tool_execution_update\",\"toolCallId\":\"a\",\"partialResult\":null}",
    "{\"type\":\"tool_execution_start\",\"toolCallId\":{},\"args\":[]}",
    "{\"type\":\"agent_end\",\"willRetry\":\"yes\"}",
    "{\"type\":\"agent_end\",\"willRetry\":true}",
    "{\"type\":\"agent_settled\"}",
    "{\"type\":\"auto_retry_start\",\"attempt\":-1,\"maxAttempts\":1e99,\"delayMs\":\"soon\"}",
    "{\"type\":\"session\",\"id\":\"x\"}",
    "{\"type\":\"session\",\"id\":\"y\"}",
    "\"\u{2028}\"",
    "{\"type\":\"a\",\"type\":\"b\"}",
    "{\"type\":\"message_update\"} trailing",
    "  {\"type\":\"agent_start\"}  ",
    "\u{feff}{\"type\":\"agent_start\"}",
    "{\"type\":\"x\",\"k\":\"\\ud800\"}",
];

fn deep_nesting() -> Vec<u8> {
    let mut v = b"{\"type\":\"x\",\"a\":".to_vec();
    v.extend_from_slice(&[b'['; 300]);
    v.extend_from_slice(&[b']'; 300]);
    v.push(b'}');
    v
}

fn line_strategy() -> impl Strategy<Value = Vec<u8>> {
    let real = real_lines();
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..60),
        select(real.clone()),
        (select(real), any::<Index>()).prop_map(|(l, i)| l[..i.index(l.len() + 1)].to_vec()),
        select(TRICKY).prop_map(|s| s.as_bytes().to_vec()),
        Just(deep_nesting()),
    ]
}

fn end_strategy() -> impl Strategy<Value = StreamEnd> {
    let exit = |code: Option<i32>, signal: Option<&str>| {
        Some(ExitInfo {
            code,
            signal: signal.map(str::to_string),
        })
    };
    prop_oneof![
        Just(StreamEnd::eof(exit(Some(0), None))),
        Just(StreamEnd::eof(exit(Some(1), None))),
        Just(StreamEnd::eof(exit(None, Some("SIGKILL")))),
        Just(StreamEnd::eof(None)),
        Just(StreamEnd {
            exit: exit(Some(143), None),
            stderr_tail: Some("bye".into()),
            cause: EndCause::Cancelled
        }),
        Just(StreamEnd {
            exit: None,
            stderr_tail: None,
            cause: EndCause::Failed {
                reason: FailureReason::OutputLimit,
                message: "too much".into()
            }
        }),
    ]
}

fn join(lines: &[Vec<u8>], crlf: bool, final_newline: bool) -> Vec<u8> {
    let sep: &[u8] = if crlf { b"\r\n" } else { b"\n" };
    let mut out = lines.join(sep);
    if final_newline && !lines.is_empty() {
        out.extend_from_slice(sep);
    }
    out
}

fn small_opts() -> MapperOptions {
    MapperOptions {
        max_line_bytes: 4096,
        max_invalid_lines: 8,
        max_invalid_bytes: 512,
        ..MapperOptions::default()
    }
}

fn check_bounds(out: &[Message], opts: &MapperOptions) -> Result<(), String> {
    if let Some(Message::TerminalFailed(f)) = out.last() {
        let bytes: usize = f.invalid_lines.iter().map(|l| l.excerpt.len()).sum();
        if f.invalid_lines.len() > opts.max_invalid_lines || bytes > opts.max_invalid_bytes {
            return Err(format!(
                "{} invalid lines, {bytes} excerpt bytes",
                f.invalid_lines.len()
            ));
        }
    }
    Ok(())
}

#[derive(Debug, Clone)]
enum Mutation {
    Drop,
    Duplicate,
    Truncate(Index),
    Corrupt(Index, u8),
    InsertGarbage(Vec<u8>),
}

fn mutation_strategy() -> impl Strategy<Value = (Mutation, Index)> {
    let m = prop_oneof![
        Just(Mutation::Drop),
        Just(Mutation::Duplicate),
        any::<Index>().prop_map(Mutation::Truncate),
        (any::<Index>(), any::<u8>()).prop_map(|(i, b)| Mutation::Corrupt(i, b)),
        proptest::collection::vec(any::<u8>(), 0..20).prop_map(Mutation::InsertGarbage),
    ];
    (m, any::<Index>())
}

/// Apply mutations to lines whose index `allowed` accepts; returns the new lines.
fn mutate(
    lines: &[Vec<u8>],
    mutations: &[(Mutation, Index)],
    allowed: impl Fn(&[u8]) -> bool,
) -> Vec<Vec<u8>> {
    let mut lines = lines.to_vec();
    for (m, at) in mutations {
        let candidates: Vec<usize> = (0..lines.len()).filter(|&i| allowed(&lines[i])).collect();
        if candidates.is_empty() {
            break;
        }
        let i = candidates[at.index(candidates.len())];
        match m {
            Mutation::Drop => {
                lines.remove(i);
            }
            Mutation::Duplicate => lines.insert(i, lines[i].clone()),
            Mutation::Truncate(cut) => {
                let n = cut.index(lines[i].len() + 1);
                lines[i].truncate(n)
            }
            Mutation::Corrupt(pos, byte) => {
                if !lines[i].is_empty() {
                    let p = pos.index(lines[i].len());
                    lines[i][p] = *byte;
                }
            }
            Mutation::InsertGarbage(g) => lines.insert(i, g.clone()),
        }
    }
    lines
}

/// Lines that carry assistant text: every `message_update` and the assistant
/// `message_start`/`message_end`. Mutating them may legitimately break invariant 3.
fn carries_text(line: &[u8]) -> bool {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(&String::from_utf8_lossy(line)) else {
        return false;
    };
    match v["type"].as_str() {
        Some("message_update") => true,
        Some("message_start" | "message_end") => v["message"]["role"] == "assistant",
        _ => false,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_lines_never_panic_and_end_once(
        lines in proptest::collection::vec(line_strategy(), 0..30),
        crlf in any::<bool>(),
        final_newline in any::<bool>(),
        cuts in proptest::collection::vec(any::<usize>(), 0..12),
        end in end_strategy(),
    ) {
        let data = join(&lines, crlf, final_newline);
        let cuts: Vec<usize> = cuts.iter().map(|c| c % (data.len() + 1)).collect();
        let whole = map_chunked(&data, &[], end.clone(), small_opts());
        check_structure(&whole).map_err(TestCaseError::fail)?;
        check_bounds(&whole, &small_opts()).map_err(TestCaseError::fail)?;
        let chunked = map_chunked(&data, &cuts, end, small_opts());
        prop_assert_eq!(chunked, whole);
    }

    #[test]
    fn mutated_real_streams_never_panic_and_end_once(
        which in any::<Index>(),
        mutations in proptest::collection::vec(mutation_strategy(), 1..6),
        cuts in proptest::collection::vec(any::<usize>(), 0..12),
    ) {
        let s = &streams()[which.index(streams().len())];
        let lines = mutate(&s.lines, &mutations, |_| true);
        let data = join(&lines, false, true);
        let cuts: Vec<usize> = cuts.iter().map(|c| c % (data.len() + 1)).collect();
        let whole = map_chunked(&data, &[], s.end.clone(), MapperOptions::default());
        check_structure(&whole).map_err(TestCaseError::fail)?;
        let chunked = map_chunked(&data, &cuts, s.end.clone(), MapperOptions::default());
        prop_assert_eq!(chunked, whole);
    }

    #[test]
    fn mutations_that_leave_the_text_alone_keep_invariant_3(
        which in any::<Index>(),
        mutations in proptest::collection::vec(mutation_strategy(), 1..6),
    ) {
        let s = &streams()[which.index(streams().len())];
        let lines = mutate(&s.lines, &mutations, |l| !carries_text(l));
        let data = join(&lines, false, true);
        let out = map_chunked(&data, &[], s.end.clone(), MapperOptions::default());
        check_structure(&out).map_err(TestCaseError::fail)?;
        check_thoughts(&data, &out).map_err(TestCaseError::fail)?;
        // The text is what it was before the mutation: right on every message, except
        // where a fault cassette damaged the deltas themselves.
        let original = join(&s.lines, false, true);
        let before = map_chunked(&original, &[], s.end.clone(), MapperOptions::default());
        let expected = text_mismatches(&original, &before).map_err(TestCaseError::fail)?;
        let got = text_mismatches(&data, &out).map_err(TestCaseError::fail)?;
        prop_assert_eq!(got, expected);
    }
}

#[test]
fn unmutated_streams_pass_every_check() {
    // The checks above are not vacuous: on the real streams they see text and thoughts.
    let mut saw_text = false;
    let mut saw_thought = false;
    for s in streams() {
        let out = map_and_check(&s.cassette).unwrap();
        saw_text |= out.iter().any(|m| m.kind() == "assistant");
        saw_thought |= out.iter().any(|m| m.kind() == "assistant.thought");
    }
    assert!(saw_text && saw_thought);
}

#[test]
fn a_dropped_text_delta_breaks_the_check_that_guards_invariant_3() {
    // The invariant check can fail: drop a middle text delta of a real stream.
    let s = streams()
        .iter()
        .find(|s| {
            s.lines
                .iter()
                .filter(|l| l.windows(12).any(|w| w == b"\"text_delta\""))
                .count()
                > 2
        })
        .expect("a cassette with several text deltas");
    let i = s
        .lines
        .iter()
        .position(|l| l.windows(12).any(|w| w == b"\"text_delta\""))
        .unwrap()
        + 1;
    let mut lines = s.lines.clone();
    lines.remove(i);
    let data = join(&lines, false, true);
    let out = map_chunked(&data, &[], s.end.clone(), MapperOptions::default());
    assert!(check_text_invariant(&data, &out).is_err());
    check_structure(&out).unwrap();
}
