//! Property test of the secret filter behind the mapper: real recorded pi streams made to
//! echo an arbitrary key anywhere (inside any JSON string of any line: answer deltas, tool
//! arguments and results, error messages, ids; or in a line that is not JSON), mapped in
//! arbitrary chunks and filtered: no string a reader gets holds the key, and a stream
//! that never held the key comes out unchanged.

use std::sync::OnceLock;

use pi_cassette::Cassette;
use pi_testkit::invariants::all_cassettes;
use pi_wire::mapper::{Mapper, MapperOptions, StreamEnd};
use pi_wire::message::{ExitInfo, Message};
use pi_wire::secret::SecretFilter;
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::Value;

/// The stdout lines of every committed cassette small enough to map many times.
fn streams() -> &'static [Vec<Vec<u8>>] {
    static STREAMS: OnceLock<Vec<Vec<Vec<u8>>>> = OnceLock::new();
    STREAMS.get_or_init(|| {
        all_cassettes()
            .iter()
            .filter_map(|p| {
                let c = Cassette::load(p).unwrap_or_else(|e| panic!("{e}"));
                let stdout = c.stdout_bytes();
                (stdout.len() < 100_000 && !stdout.is_empty()).then(|| {
                    stdout
                        .split(|&b| b == b'\n')
                        .filter(|l| !l.is_empty())
                        .map(<[u8]>::to_vec)
                        .collect()
                })
            })
            .collect()
    })
}

fn count_leaves(v: &Value) -> usize {
    match v {
        Value::String(_) => 1,
        Value::Array(a) => a.iter().map(count_leaves).sum(),
        Value::Object(m) => m.values().map(count_leaves).sum(),
        _ => 0,
    }
}

/// The `n`th string leaf of a JSON value.
fn nth_leaf<'a>(v: &'a mut Value, n: &mut usize) -> Option<&'a mut String> {
    match v {
        Value::String(s) if *n == 0 => Some(s),
        Value::String(_) => {
            *n -= 1;
            None
        }
        Value::Array(a) => a.iter_mut().find_map(|i| nth_leaf(i, n)),
        Value::Object(m) => m.values_mut().find_map(|i| nth_leaf(i, n)),
        _ => None,
    }
}

/// `line` with `key` inserted into one of its JSON strings (or the line itself when it
/// is not JSON), at a char boundary chosen by `at`.
fn echo(line: &[u8], key: &str, which: Index, at: Index) -> Vec<u8> {
    let Ok(mut v) = serde_json::from_slice::<Value>(line) else {
        let mut l = line.to_vec();
        l.extend_from_slice(key.as_bytes());
        return l;
    };
    let leaves = count_leaves(&v);
    if leaves == 0 {
        return line.to_vec();
    }
    let mut n = which.index(leaves);
    let s = nth_leaf(&mut v, &mut n).expect("the leaf was counted");
    let bounds: Vec<usize> = (0..=s.len()).filter(|&i| s.is_char_boundary(i)).collect();
    s.insert_str(bounds[at.index(bounds.len())], key);
    serde_json::to_vec(&v).expect("serializes")
}

fn map(lines: &[Vec<u8>], chunk: usize, key: Option<&str>) -> Vec<Message> {
    let mut bytes = Vec::new();
    for l in lines {
        bytes.extend_from_slice(l);
        bytes.push(b'\n');
    }
    let mut mapper = Mapper::new(MapperOptions::default());
    let mut filter = key.and_then(SecretFilter::new);
    let mut out = Vec::new();
    let mut pass = |msgs: Vec<Message>, out: &mut Vec<Message>| match &mut filter {
        Some(f) => msgs.into_iter().for_each(|m| f.filter(m, out)),
        None => out.extend(msgs),
    };
    for c in bytes.chunks(chunk.max(1)) {
        let mut msgs = Vec::new();
        mapper.push(c, &mut msgs);
        pass(msgs, &mut out);
    }
    let end = StreamEnd::eof(Some(ExitInfo {
        code: Some(0),
        signal: None,
    }));
    let mut msgs = Vec::new();
    mapper.finish(end, &mut msgs);
    pass(msgs, &mut out);
    if let Some(f) = &mut filter {
        f.finish(&mut out);
    }
    out
}

/// Every string a reader sees: values everywhere, object keys only inside tool payloads.
fn reader_strings(m: &Message) -> Vec<String> {
    fn walk(v: &Value, payload: bool, out: &mut Vec<String>) {
        match v {
            Value::String(s) => out.push(s.clone()),
            Value::Array(a) => a.iter().for_each(|i| walk(i, payload, out)),
            Value::Object(o) => o.iter().for_each(|(k, i)| {
                if payload {
                    out.push(k.clone());
                }
                walk(i, payload, out)
            }),
            _ => {}
        }
    }
    let mut out = Vec::new();
    if let Value::Object(top) = serde_json::to_value(m).expect("serializes") {
        for (k, v) in &top {
            // The protocol's own tags (`type`, the failure `reason`, the retry `source`) are not text.
            if !["type", "reason", "source"].contains(&k.as_str()) {
                walk(
                    v,
                    ["arguments", "partial", "result", "error"].contains(&k.as_str()),
                    &mut out,
                );
            }
        }
    }
    out
}

/// Consecutive answer pieces joined into one.
fn joined(messages: Vec<Message>) -> Vec<Message> {
    let mut out: Vec<Message> = Vec::new();
    for m in messages {
        match (out.last_mut(), m) {
            (Some(Message::Assistant { text }), Message::Assistant { text: more }) => {
                text.push_str(&more)
            }
            (_, m) => out.push(m),
        }
    }
    out
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        "sk-[a-zA-Z0-9_-]{8,40}",
        "[a-zA-Z0-9\"\\\\/+= é\u{1F600}]{6,24}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 150, ..ProptestConfig::default() })]

    #[test]
    fn an_echoed_key_reaches_no_reader(
        key in key(),
        stream in any::<Index>(),
        echoes in proptest::collection::vec((any::<Index>(), any::<Index>(), any::<Index>()), 1..6),
        chunk in 1usize..4096,
    ) {
        let lines = &streams()[stream.index(streams().len())];
        prop_assume!(!lines.iter().any(|l| l.windows(key.len()).any(|w| w == key.as_bytes())));
        // Untouched, the filter changes nothing but where answer text is cut.
        prop_assert_eq!(
            joined(map(lines, chunk, Some(&key))),
            joined(map(lines, chunk, None))
        );
        let mut echoed = lines.clone();
        for (line, which, at) in &echoes {
            let i = line.index(echoed.len());
            echoed[i] = echo(&echoed[i], &key, *which, *at);
        }
        let escaped = serde_json::to_string(&key).unwrap();
        let escaped = &escaped[1..escaped.len() - 1];
        let out = map(&echoed, chunk, Some(&key));
        let text: String = out
            .iter()
            .filter_map(|m| match m {
                Message::Assistant { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        prop_assert!(!text.contains(key.as_str()), "answer text holds the key: {:?}", text);
        for m in &out {
            for s in reader_strings(m) {
                prop_assert!(!s.contains(key.as_str()) && !s.contains(escaped), "{:?} in {:?}", key, m);
            }
        }
        prop_assert!(out.last().is_some_and(Message::is_terminal));
    }
}
