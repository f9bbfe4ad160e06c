//! The comparison with the validation floor is fair: every line that
//! `serde_json::from_slice::<IgnoredAny>` rejects is reported invalid by the mapper
//! (counted in `MapperStats::invalid_lines`). Lines come from the benchmark inputs,
//! truncated, with bytes overwritten or inserted, plus arbitrary bytes.

use std::sync::OnceLock;

use pi_harness::mapper::{Mapper, MapperOptions};
use proptest::prelude::*;
use proptest::sample::{select, Index};
use serde::de::IgnoredAny;

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

fn serde_rejects(line: &[u8]) -> bool {
    serde_json::from_slice::<IgnoredAny>(line).is_err()
}

#[derive(Debug, Clone)]
enum Edit {
    Truncate(Index),
    Overwrite(Index, u8),
    Insert(Index, Vec<u8>),
}

fn apply(mut line: Vec<u8>, edits: &[Edit]) -> Vec<u8> {
    for e in edits {
        match e {
            Edit::Truncate(at) => line.truncate(at.index(line.len() + 1)),
            Edit::Overwrite(at, b) if !line.is_empty() => {
                let i = at.index(line.len());
                line[i] = *b;
            }
            Edit::Overwrite(..) => {}
            Edit::Insert(at, bytes) => {
                let i = at.index(line.len() + 1);
                line.splice(i..i, bytes.iter().copied());
            }
        }
    }
    // A `\n` would make two lines: the property is about one.
    line.retain(|&b| b != b'\n');
    line
}

fn edit_strategy() -> impl Strategy<Value = Edit> {
    // JSON-significant bytes, invalid UTF-8 and control characters are the interesting ones.
    let byte = prop_oneof![
        select(b"{}[]\":,\\ 0-.eE\x00\x1f\x7f\xc3\xa9\xff\xed\xa0\x80tfn".to_vec()),
        any::<u8>(),
    ];
    prop_oneof![
        any::<Index>().prop_map(Edit::Truncate),
        (any::<Index>(), byte.clone()).prop_map(|(i, b)| Edit::Overwrite(i, b)),
        (any::<Index>(), proptest::collection::vec(byte, 1..4))
            .prop_map(|(i, v)| Edit::Insert(i, v)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn every_line_serde_rejects_is_reported_invalid(
        line in select(lines()),
        edits in proptest::collection::vec(edit_strategy(), 0..4),
    ) {
        let line = apply(line.clone(), &edits);
        if serde_rejects(&line) {
            prop_assert!(
                mapper_flags(&line),
                "serde_json rejects this line, the mapper did not report it: {:?}",
                String::from_utf8_lossy(&line)
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
