//! What the mapper property suites share: edits that damage a recorded line the way a
//! broken writer, a truncated pipe or a hostile input would.

use proptest::prelude::*;
use proptest::sample::{select, Index};

/// One damage done to a line.
#[derive(Debug, Clone)]
pub enum Edit {
    Truncate(Index),
    Overwrite(Index, u8),
    Insert(Index, Vec<u8>),
}

/// `line` with `edits` applied in order. A `\n` would make two lines and the properties are
/// about one, so every `\n` is dropped at the end.
pub fn apply(mut line: Vec<u8>, edits: &[Edit]) -> Vec<u8> {
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
    line.retain(|&b| b != b'\n');
    line
}

/// Byte-level edits: JSON-significant bytes, invalid UTF-8 and control characters are the
/// interesting ones, plus any byte.
pub fn byte_edit() -> BoxedStrategy<Edit> {
    let byte = prop_oneof![
        select(b"{}[]\":,\\ 0-.eE\x00\x1f\x7f\xc3\xa9\xff\xed\xa0\x80tfnuUdD8aF".to_vec()),
        any::<u8>(),
    ];
    prop_oneof![
        any::<Index>().prop_map(Edit::Truncate),
        (any::<Index>(), byte.clone()).prop_map(|(i, b)| Edit::Overwrite(i, b)),
        (any::<Index>(), proptest::collection::vec(byte, 1..4))
            .prop_map(|(i, v)| Edit::Insert(i, v)),
    ]
    .boxed()
}

/// Byte-level edits, or a whole field inserted anywhere: a repeated key, a `null` where an
/// object belongs, an escape, a lone surrogate, an odd number.
pub fn byte_or_field_edit() -> BoxedStrategy<Edit> {
    let field = select(vec![
        &b"\"role\":\"user\","[..],
        b"\"usage\":null,",
        b"\"content\":null,",
        b"\"timestamp\":null,",
        b"\"type\":\"message_end\",",
        b"\"toolCallId\":\"call_1\",",
        b"\"isError\":true,",
        b"\"x\":[{\"y\":-0.5e-3}],",
        b"\"total\":1.5,",
        b"\\u00e9",
        b"\\ud800",
    ]);
    prop_oneof![
        3 => byte_edit(),
        1 => (any::<Index>(), field).prop_map(|(i, t)| Edit::Insert(i, t.to_vec())),
    ]
    .boxed()
}
