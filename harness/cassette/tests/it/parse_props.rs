//! Property test of the one cassette reader and lint: arbitrary bytes, and real cassettes
//! with their header values replaced by arbitrary JSON and their lines cut, repeated,
//! dropped or corrupted. No panic, and one verdict: when the reader refuses a file at
//! line N, lint reports a problem at line N.

use std::path::Path;

use pi_cassette::lint::lint_bytes;
use pi_cassette::{Cassette, CassetteError};
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::Value;

const SEEDS: &[&str] = &[
    include_str!("../../../../cassettes/tool_bash.pi87.cassette.jsonl"),
    include_str!("../../../../cassettes/sigint_mid_tool.pi73.cassette.jsonl"),
    include_str!("../../../../cassettes/faults/hang_child_ignores_sigterm.pi87.cassette.jsonl"),
    include_str!("../../../../cassettes/sigterm_mid_tool.pi152.cassette.jsonl"),
];

fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        Just(serde_json::json!(1e308)),
        Just(serde_json::json!(u64::MAX)),
        ".{0,12}".prop_map(Value::String),
        Just(Value::String("0.87.1".into())),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map("[a-z_]{1,8}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Every path to a value inside `v`, as JSON pointers.
fn pointers(v: &Value, at: String, out: &mut Vec<String>) {
    out.push(at.clone());
    match v {
        Value::Object(m) => m
            .iter()
            .for_each(|(k, v)| pointers(v, format!("{at}/{k}"), out)),
        Value::Array(a) => a
            .iter()
            .enumerate()
            .for_each(|(i, v)| pointers(v, format!("{at}/{i}"), out)),
        _ => {}
    }
}

#[derive(Debug, Clone)]
enum Mutation {
    /// Replace one value of one line's JSON (header or record) with arbitrary JSON.
    Value(Index, Index, Value),
    Drop(Index),
    Repeat(Index),
    Cut(Index, Index),
    Byte(Index, Index, u8),
    Swap(Index, Index),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        4 => (any::<Index>(), any::<Index>(), json()).prop_map(|(l, p, v)| Mutation::Value(l, p, v)),
        1 => any::<Index>().prop_map(Mutation::Drop),
        1 => any::<Index>().prop_map(Mutation::Repeat),
        1 => (any::<Index>(), any::<Index>()).prop_map(|(l, i)| Mutation::Cut(l, i)),
        1 => (any::<Index>(), any::<Index>(), any::<u8>()).prop_map(|(l, i, b)| Mutation::Byte(l, i, b)),
        1 => (any::<Index>(), any::<Index>()).prop_map(|(a, b)| Mutation::Swap(a, b)),
    ]
}

fn apply(lines: &mut Vec<Vec<u8>>, m: &Mutation) {
    if lines.is_empty() {
        return;
    }
    let n = lines.len();
    match m {
        Mutation::Value(l, p, v) => {
            let i = l.index(n);
            // Mostly the header: it is where the schema lives.
            let i = if p.index(3) == 0 { i } else { 0 };
            if let Ok(mut doc) = serde_json::from_slice::<Value>(&lines[i]) {
                let mut ptrs = Vec::new();
                pointers(&doc, String::new(), &mut ptrs);
                let ptr = &ptrs[p.index(ptrs.len())];
                if ptr.is_empty() {
                    doc = v.clone();
                } else if let Some(slot) = doc.pointer_mut(ptr) {
                    *slot = v.clone();
                }
                lines[i] = serde_json::to_vec(&doc).expect("serializes");
            }
        }
        Mutation::Drop(l) => {
            lines.remove(l.index(n));
        }
        Mutation::Repeat(l) => {
            let i = l.index(n);
            lines.insert(i, lines[i].clone());
        }
        Mutation::Cut(l, at) => {
            let i = l.index(n);
            let len = lines[i].len();
            lines[i].truncate(at.index(len + 1));
        }
        Mutation::Byte(l, at, b) => {
            let i = l.index(n);
            let len = lines[i].len();
            if len > 0 {
                lines[i][at.index(len)] = *b;
            }
        }
        Mutation::Swap(a, b) => lines.swap(a.index(n), b.index(n)),
    }
}

fn check(bytes: &[u8]) -> Result<(), TestCaseError> {
    let path = Path::new("m.cassette.jsonl");
    let parsed = Cassette::parse(path, bytes);
    let problems = lint_bytes(path, bytes);
    match parsed {
        Err(CassetteError::Invalid { at, message }) => {
            prop_assert!(
                problems.iter().any(|p| p.line == at.line),
                "reader refuses line {} ({}), lint reports {:?}",
                at.line,
                message,
                problems
            );
        }
        // `Io`, or any other way of failing (`CassetteError` is non-exhaustive).
        Err(e) => {
            prop_assert!(!problems.is_empty(), "reader: {e}; lint found nothing");
        }
        Ok(c) => {
            // What the reader accepts, it writes back and reads again to the same cassette.
            let again = Cassette::parse(path, c.to_jsonl().as_bytes());
            prop_assert!(again.is_ok(), "{:?}", again.err());
            prop_assert_eq!(again.unwrap().records.len(), c.records.len());
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        check(&bytes)?;
    }

    #[test]
    fn arbitrary_header_then_a_real_body(header in json()) {
        let mut text = serde_json::to_string(&header).unwrap();
        text.push('\n');
        text.push_str(SEEDS[0].split_once('\n').unwrap().1);
        check(text.as_bytes())?;
    }

    #[test]
    fn mutated_real_cassettes(
        seed in any::<Index>(),
        mutations in proptest::collection::vec(mutation(), 1..5),
    ) {
        let text = SEEDS[seed.index(SEEDS.len())];
        let mut lines: Vec<Vec<u8>> = text.lines().map(|l| l.as_bytes().to_vec()).collect();
        for m in &mutations {
            apply(&mut lines, m);
        }
        let mut bytes = lines.join(&b'\n');
        bytes.push(b'\n');
        check(&bytes)?;
    }
}
