//! The comparison with the validation floor is fair: every line that
//! `serde_json::from_slice::<IgnoredAny>` rejects is reported invalid by the mapper
//! (counted in `MapperStats::invalid_lines`). Lines come from the benchmark inputs,
//! truncated, with bytes overwritten or inserted, plus arbitrary bytes.
//!
//! The mapper reads its hot lines (`message_update`) with a hand-written scanner and
//! everything else with serde: the second half checks the two agree, line for line,
//! on the same mutated lines and on synthesized `message_update` lines whose fields
//! come in any order.

use std::sync::OnceLock;

use pi_wire::mapper::{Mapper, MapperOptions, StreamEnd};
use pi_wire::message::{ExitInfo, Message};
use proptest::prelude::*;
use proptest::sample::{select, Index};
use serde::de::IgnoredAny;

use crate::util::{apply, byte_edit};

/// Lines of the benchmark inputs short enough to mutate quickly (every line of 0.87.1 and
/// of the tool loop, the first lines of the 0.73.1 long answer).
fn lines() -> &'static [Vec<u8>] {
    static LINES: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    LINES.get_or_init(|| {
        let inputs = benches::inputs().unwrap_or_else(|e| panic!("{e}"));
        let mut out = Vec::new();
        for input in &inputs {
            out.extend(
                benches::split_lines(&input.stdout)
                    .filter(|l| l.len() <= 8 << 10)
                    .map(<[u8]>::to_vec),
            );
        }
        assert!(out.len() > 1000, "too few sample lines: {}", out.len());
        out
    })
}

/// What the mapper says about one line: was it counted invalid?
fn mapper_flags(line: &[u8]) -> bool {
    let mut m = Mapper::new(MapperOptions::default());
    let mut out = Vec::new();
    m.push(line, &mut out);
    m.push(b"\n", &mut out);
    m.stats().invalid_lines == 1
}

/// The same, after `warm` (a valid line) went through the same mapper: the fast
/// scanner's memo then holds the values it validated there.
fn mapper_flags_after(warm: &[u8], line: &[u8]) -> bool {
    let mut m = Mapper::new(MapperOptions::default());
    let mut out = Vec::new();
    m.push(warm, &mut out);
    m.push(b"\n", &mut out);
    let before = m.stats().invalid_lines;
    m.push(line, &mut out);
    m.push(b"\n", &mut out);
    m.stats().invalid_lines == before + 1
}

fn serde_rejects(line: &[u8]) -> bool {
    serde_json::from_slice::<IgnoredAny>(line).is_err()
}

/// What the mapper makes of one line (after a `message_start`, so deltas land in an open
/// message), finished at EOF: the messages before the terminal, the terminal's kind, and
/// how many lines were invalid.
/// `warm` is pushed first (a line, possibly empty), so the fast scanner's memo holds
/// what it validated there.
fn mapped(warm: &[u8], line: &[u8]) -> (Vec<Message>, &'static str, u64) {
    let mut m = Mapper::new(MapperOptions::default());
    let mut out = Vec::new();
    m.push(
        b"{\"type\":\"message_start\",\"message\":{\"role\":\"assistant\",\"timestamp\":1}}\n",
        &mut out,
    );
    if !warm.is_empty() {
        m.push(warm, &mut out);
        m.push(b"\n", &mut out);
    }
    m.push(line, &mut out);
    m.push(b"\n", &mut out);
    let exit = ExitInfo {
        code: Some(0),
        signal: None,
    };
    m.finish(StreamEnd::eof(Some(exit)), &mut out);
    let terminal = out.pop().expect("a terminal").kind();
    (out, terminal, m.stats().invalid_lines)
}

/// The same line, made to take the mapper's serde path: a leading `"id"` key (which a
/// `message_update` does not use) makes the fast scanner give up. `None` when the line
/// does not start with `{` followed by a key.
fn via_serde(line: &[u8]) -> Option<Vec<u8>> {
    let rest = line.strip_prefix(b"{")?;
    if rest.trim_ascii_start().first() != Some(&b'"') {
        return None;
    }
    let mut v = b"{\"id\":0,".to_vec();
    v.extend_from_slice(rest);
    Some(v)
}

/// A `message_update` line built from parts in any order: the event type, the update
/// (type, delta, content index and snapshot in any order), the whole-message snapshot,
/// other keys.
fn synthesized_update() -> impl Strategy<Value = Vec<u8>> {
    let kind = select(vec![
        "\"text_delta\"",
        "\"thinking_delta\"",
        "\"text_start\"",
        "\"toolcall_delta\"",
        "\"toolcall_end\"",
        "1",
        "\"text_d\\u0065lta\"",
    ]);
    let delta = select(vec![
        "\"word \"",
        "\"\"",
        "\"a\\n\\\"b\\u00e9\\/\"",
        "\"\\ud83d\\ude00\"",
        "\"\\udc00\"",
        "3",
        "null",
        "\"\u{e9}\u{1F600}\"",
    ]);
    let index = select(vec![
        "0",
        "2",
        "1.0",
        "-0",
        "1e2",
        "\"0\"",
        "18446744073709551616",
    ]);
    let snapshot = select(vec![
        "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"Hi there\"}]}",
        "{\"role\":\"assistant\",\"role\":\"assistant\"}",
        "{\"content\":\"\\ud800\"}",
        "[]",
        "{}",
    ]);
    let ame_parts = (
        kind,
        proptest::option::of(delta),
        proptest::option::of(index),
        proptest::option::of(snapshot.clone()),
        proptest::option::of(Just("\"toolCall\":{\"id\":\"t1\",\"name\":\"bash\"}")),
        any::<Index>(),
    );
    (
        ame_parts,
        proptest::option::of(snapshot),
        proptest::option::of(select(vec![
            "\"usage\":{\"input\":0,\"cost\":{\"total\":1e400}}",
            "\"typ\\u0065\":\"turn_start\"",
            "\"type\":\"message_update\"",
            "\"assistantMessageEvent\":{\"type\":\"text_delta\",\"delta\":\"x\"}",
        ])),
        any::<Index>(),
    )
        .prop_map(|((k, d, i, p, tc, ame_order), msg, other, order)| {
            let mut ame = vec![format!("\"type\":{k}")];
            ame.extend(d.map(|d| format!("\"delta\":{d}")));
            ame.extend(i.map(|i| format!("\"contentIndex\":{i}")));
            ame.extend(p.map(|p| format!("\"partial\":{p}")));
            ame.extend(tc.map(str::to_string));
            let n = ame.len();
            ame.rotate_left(ame_order.index(n));
            let mut top = vec![
                "\"type\":\"message_update\"".to_string(),
                format!("\"assistantMessageEvent\":{{{}}}", ame.join(",")),
            ];
            top.extend(msg.map(|m| format!("\"message\":{m}")));
            top.extend(other.map(str::to_string));
            let n = top.len();
            top.swap(order.index(n), n - 1);
            format!("{{{}}}", top.join(",")).into_bytes()
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn the_fast_path_and_the_serde_path_agree_on_mutated_lines(
        line in select(lines()),
        edits in proptest::collection::vec(byte_edit(), 0..4),
    ) {
        // The unmutated line first: the scanner's memo then holds its values, and the
        // mutated line is read through it.
        let mutated = apply(line.clone(), &edits);
        if let Some(slow) = via_serde(&mutated) {
            prop_assert_eq!(
                mapped(&line, &mutated),
                mapped(&line, &slow),
                "{:?}",
                String::from_utf8_lossy(&mutated)
            );
        }
    }

    #[test]
    fn the_fast_path_and_the_serde_path_agree_on_synthesized_updates(
        line in synthesized_update(),
        edits in proptest::collection::vec(byte_edit(), 0..2),
    ) {
        let line = apply(line, &edits);
        if let Some(slow) = via_serde(&line) {
            prop_assert_eq!(mapped(b"", &line), mapped(b"", &slow), "{:?}", String::from_utf8_lossy(&line));
        }
        if serde_rejects(&line) {
            prop_assert!(mapper_flags(&line), "{:?}", String::from_utf8_lossy(&line));
        }
    }

    #[test]
    fn every_line_serde_rejects_is_reported_invalid(
        line in select(lines()),
        edits in proptest::collection::vec(byte_edit(), 0..4),
    ) {
        let mutated = apply(line.clone(), &edits);
        if serde_rejects(&mutated) {
            prop_assert!(
                mapper_flags(&mutated),
                "serde_json rejects this line, the mapper did not report it: {:?}",
                String::from_utf8_lossy(&mutated)
            );
            prop_assert!(
                mapper_flags_after(&line, &mutated),
                "after the unmutated line: {:?}",
                String::from_utf8_lossy(&mutated)
            );
        }
    }

    #[test]
    fn arbitrary_bytes_serde_rejects_are_reported_invalid(
        line in proptest::collection::vec(any::<u8>(), 0..40),
    ) {
        let line: Vec<u8> = line.into_iter().filter(|&b| b != b'\n').collect();
        if serde_rejects(&line) {
            prop_assert!(mapper_flags(&line), "{:?}", String::from_utf8_lossy(&line));
        }
    }
}

/// The property is not vacuous: the edits do produce lines serde_json rejects, and
/// untouched recorded lines are accepted by both.
#[test]
fn the_samples_cover_both_sides() {
    let ls = lines();
    assert!(ls.iter().all(|l| !serde_rejects(l) && !mapper_flags(l)));
    let cut = ls[0][..ls[0].len() / 2].to_vec();
    assert!(serde_rejects(&cut) && mapper_flags(&cut));
    // A control character inside a key: serde_json rejects it, so must the mapper
    // (it once read keys as raw bytes, which skips that check).
    let key = b"{\"type\":\"agent_start\",\"\x00x\":1}";
    assert!(serde_rejects(key) && mapper_flags(key));
    let escape = b"{\"type\":\"agent_start\",\"\\qx\":1}";
    assert!(serde_rejects(escape) && mapper_flags(escape));
}
