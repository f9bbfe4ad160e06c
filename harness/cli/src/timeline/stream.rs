//! The normalized stream (what `map --json` and `run --json` print) as rows of the same page:
//! each message in the row of its kind, by its `type`.

use super::model::Lane;

/// The row of a normalized message of type `ty`.
pub fn lane_of(ty: &str) -> Lane {
    match ty {
        t if t.starts_with("session.") => Lane::Session,
        "assistant" => Lane::Text,
        "assistant.thought" => Lane::Thinking,
        t if t.starts_with("tool.") => Lane::Tool,
        t if t.starts_with("retry.") => Lane::Retry,
        t if t.starts_with("terminal.") || t == "usage" => Lane::Result,
        _ => Lane::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_of_message_has_its_row() {
        for (ty, lane) in [
            ("session.started", Lane::Session),
            ("assistant", Lane::Text),
            ("assistant.thought", Lane::Thinking),
            ("tool.call", Lane::Tool),
            ("tool.failed", Lane::Tool),
            ("retry.scheduled", Lane::Retry),
            ("usage", Lane::Result),
            ("terminal.cancelled", Lane::Result),
            ("a.later.kind", Lane::Other),
        ] {
            assert_eq!(lane_of(ty), lane, "{ty}");
        }
    }
}
