//! One stdout line to its handler: the line framing hands over (or its report when it is
//! over the cap), read by the one-pass paths (`hot` for `message_update`, `fast` for the
//! rest) or by serde into the same [`Event`], its problems reported, and its type routed to
//! `assistant`, `tools` or the session and agent events handled here.

use serde::de::IgnoredAny;

use super::schema::{parse_event, Event, Lv, RawJson};
use super::state::{OpenMessage, State};
use super::{fast, hot};
use crate::framing::Line;
use crate::message::{Message, RetrySource};

/// Event types that are understood and deliberately produce nothing.
const IGNORED_EVENTS: &[&str] = &[
    "turn_start",
    "turn_end",
    "auto_retry_end",
    "compaction_end",
    "queue_update",
    "entry_appended",
    "session_info_changed",
    "thinking_level_changed",
    "summarization_retry_scheduled",
    "summarization_retry_attempt_start",
    "summarization_retry_finished",
    "bash_execution_update",
];

impl State {
    /// One line from the framing: an event, or a line over the cap (reported).
    pub(super) fn line(&mut self, line: Line<'_>, out: &mut Vec<Message>) {
        self.stats.lines += 1;
        match line {
            Line::Oversized {
                number,
                bytes,
                head,
            } => {
                self.stats.invalid_lines += 1;
                self.stats.oversized_lines += 1;
                self.invalid
                    .oversized(number, bytes, self.opts.max_line_bytes, head);
            }
            Line::Complete { number, bytes } => self.event(number, bytes, out),
        }
    }

    fn event(&mut self, n: u64, raw: &[u8], out: &mut Vec<Message>) {
        // The hot lines (`message_update`) in one pass; anything unusual takes the serde path.
        let hot = if self.fast {
            hot::scan(raw, &mut self.hot_memo)
        } else {
            None
        };
        if let Some(hot) = hot {
            self.open.get_or_insert_with(OpenMessage::default);
            match hot {
                hot::Hot::Delta {
                    thinking,
                    delta,
                    content_index,
                } => self.on_delta(thinking, &delta, content_index, out),
                hot::Hot::ToolCallEnd(tc) => self.on_toolcall_end(n, raw, RawJson(tc), out),
                hot::Hot::Nothing => {}
            }
            return;
        }
        // An `Event` is big: filled in place, never moved.
        let lossy: String;
        let mut ev = Event::default();
        // The other lines, in one pass too when nothing is unusual about them.
        if self.fast {
            self.fast_memo.tool_results_matter = !self.held.is_empty();
            if fast::scan(raw, &mut self.fast_memo, &mut ev) {
                if let Lv::Str(k) = &ev.kind {
                    let kind = k.clone();
                    return self.dispatch(n, raw, &kind, &mut ev, out);
                }
            }
            ev = Event::default();
        }
        let first = raw.iter().find(|b| !b.is_ascii_whitespace());
        if first != Some(&b'{') {
            let problem = match first {
                None => "empty line".to_string(),
                Some(_) => match serde_json::from_slice::<IgnoredAny>(raw) {
                    Ok(_) => "not a JSON object".to_string(),
                    Err(e) => format!("not JSON: {e}"),
                },
            };
            return self.bad(n, raw, problem);
        }
        if let Err(e) = parse_event(raw, &mut ev) {
            if std::str::from_utf8(raw).is_ok() {
                return self.bad(n, raw, format!("not JSON: {e}"));
            }
            // JSON whose strings hold invalid UTF-8: decoded lossily (U+FFFD) the line
            // still says what happened, so it is used, and reported.
            lossy = String::from_utf8_lossy(raw).into_owned();
            ev = Event::default();
            if parse_event(lossy.as_bytes(), &mut ev).is_err() {
                return self.bad(n, raw, format!("not JSON: {e}"));
            }
            self.bad(
                n,
                raw,
                "invalid UTF-8, decoded lossily (U+FFFD); the event was used".into(),
            );
        }
        let kind = match &ev.kind {
            Lv::Str(k) => k.clone(),
            Lv::Absent => return self.bad(n, raw, "no \"type\"".into()),
            _ => return self.bad(n, raw, "\"type\" is not a string".into()),
        };
        self.dispatch(n, raw, &kind, &mut ev, out);
    }

    /// One event, read by either path.
    fn dispatch(
        &mut self,
        n: u64,
        raw: &[u8],
        kind: &str,
        ev: &mut Event<'_>,
        out: &mut Vec<Message>,
    ) {
        match kind {
            "session" => self.on_session(n, raw, ev, out),
            "agent_start" => {
                self.end_seen = false;
                self.settled = false;
                self.aborted = false;
                self.retry_pending = false;
            }
            "agent_end" => self.on_agent_end(ev),
            "agent_settled" => {
                self.end_seen = true;
                self.settled = true;
                // pi 1.1.0+: `aborted: true` when the run ended because it was aborted.
                self.aborted = ev.aborted.as_bool() == Some(true);
            }
            "auto_retry_start" => {
                self.end_seen = false;
                self.settled = false;
                if self.retry_pending {
                    return; // this retry was announced already (a repeated line)
                }
                self.retry_pending = true;
                out.push(Message::RetryScheduled {
                    source: RetrySource::Pi,
                    attempt: ev.attempt.as_u64().unwrap_or(0).min(u32::MAX as u64) as u32,
                    max_attempts: ev.max_attempts.as_u64().unwrap_or(0).min(u32::MAX as u64) as u32,
                    delay_ms: ev.delay_ms.as_u64().unwrap_or(0),
                    error: ev.error_message.as_str().unwrap_or("").to_string(),
                });
            }
            "compaction_start" => self.settled = false,
            "message_start" => self.on_message_start(n, raw, ev, out),
            "message_update" => self.on_message_update(n, raw, ev, out),
            "message_end" => self.on_message_end(n, raw, ev, out),
            "tool_execution_start" | "tool_execution_update" | "tool_execution_end" => {
                self.on_tool(n, raw, kind, ev, out)
            }
            k if IGNORED_EVENTS.contains(&k) => {}
            k => {
                self.stats.unknown_events += 1;
                let problem = format!("unknown event type {k:?} (ignored)");
                self.invalid.record(n, raw.len() as u64, problem, raw);
            }
        }
    }

    fn on_session(&mut self, n: u64, raw: &[u8], ev: &Event<'_>, out: &mut Vec<Message>) {
        let Some(id) = ev.id.as_str() else {
            return self.bad(n, raw, "`session` without a string `id`".into());
        };
        match &self.session {
            None => {
                self.session = Some(id.to_string());
                let session_id = id.to_string();
                out.push(if self.opts.resumed_session {
                    Message::SessionResumed { session_id }
                } else {
                    Message::SessionStarted { session_id }
                });
            }
            Some(first) if first == id => {}
            Some(_) => self.bad(
                n,
                raw,
                "a second `session` header with another id (ignored)".into(),
            ),
        }
    }

    fn on_agent_end(&mut self, ev: &Event<'_>) {
        match ev.will_retry.as_bool() {
            Some(true) => {
                self.end_seen = false;
                self.settled = false;
            }
            Some(false) => {
                self.end_seen = true;
                self.settled = true;
            }
            None => {
                // pi 0.73.1 does not say; a retry can only follow an error.
                self.end_seen = true;
                self.settled = self.last_stop.as_deref() != Some("error");
            }
        }
    }
}
