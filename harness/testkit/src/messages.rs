//! Reading a list of normalized messages in assertions.

use pi_wire::message::Message;

/// The assistant text of a run, concatenated.
pub fn text_of(msgs: &[Message]) -> String {
    msgs.iter()
        .filter_map(|m| match m {
            Message::Assistant { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// The run's terminal message; panics unless there is exactly one and it is last.
pub fn terminal(msgs: &[Message]) -> &Message {
    let n = msgs.iter().filter(|m| m.is_terminal()).count();
    assert_eq!(n, 1, "expected exactly one terminal: {msgs:#?}");
    let last = msgs.last().expect("one terminal");
    assert!(last.is_terminal(), "terminal is not last: {msgs:#?}");
    last
}
