//! The normalized stream (what `map --json` and `run --json` print) as rows of the same page:
//! each message in the row of its kind, by its `type`.

use std::io::{self, Write};

use pi_wire::message::Message;

use super::model::Lane;
use super::page::{tenth, Page};

/// Messages drawn as they come, each numbered (its "line" on the page: its place in the
/// stream) and put in the row of its kind.
#[derive(Debug, Default)]
pub struct StreamSection {
    n: usize,
}

impl StreamSection {
    /// Draw `m`, at `t` ms, in the section `page` has open.
    pub fn message<W: Write>(&mut self, page: &mut Page<W>, t: f64, m: &Message) -> io::Result<()> {
        self.n += 1;
        let json = serde_json::to_string(m).unwrap_or_default();
        let ty = serde_json::from_str::<serde_json::Value>(&json)
            .ok()
            .and_then(|v| v["type"].as_str().map(str::to_string))
            .unwrap_or_else(|| "message".into());
        page.item(tenth(t), lane_of(&ty), &ty, self.n, json.as_bytes())
    }

    /// How many messages were drawn.
    pub fn count(&self) -> usize {
        self.n
    }
}

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
