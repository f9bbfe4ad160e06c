//! The assistant's messages: text from deltas, from snapshots (snapshot-only producers,
//! with the replayed prefix of the previous turn dropped) and from `message_end` (what the
//! deltas missed, once, or a divergence reported); thoughts buffered until a message ends
//! other than with `toolUse`; the tool calls a message carries.

use std::borrow::Cow;

use super::fast;
use super::schema::{Event, Lv, MessageBody, MsgField, Obj, RawJson, ToolCallBlock};
use super::state::{OpenMessage, Stamp, State};
use crate::message::Message;

impl State {
    fn take_message<'a>(
        &mut self,
        n: u64,
        raw: &[u8],
        field: MsgField<'a>,
        what: &str,
    ) -> Option<Box<MessageBody<'a>>> {
        let parsed = match field {
            MsgField::Absent => {
                self.bad(n, raw, "message event without `message`".into());
                return None;
            }
            MsgField::Body(body) => body,
            MsgField::Raw(text) => match serde_json::from_str::<Obj<MessageBody<'a>>>(text.get()) {
                Ok(Obj(body)) => body.map(Box::new),
                Err(e) => {
                    self.bad(n, raw, format!("{what}: {e}"));
                    return None;
                }
            },
        };
        if parsed.is_none() {
            self.bad(n, raw, format!("{what} is not an object"));
        }
        parsed
    }

    pub(super) fn on_message_start(
        &mut self,
        n: u64,
        raw: &[u8],
        ev: &mut Event<'_>,
        out: &mut Vec<Message>,
    ) {
        let message = std::mem::take(&mut ev.message);
        let Some(m) = self.take_message(n, raw, message, "`message`") else {
            return;
        };
        match m.role.as_str() {
            Some("assistant") => self.release_all(out),
            Some("toolResult") => return self.release(&m, out),
            Some(_) => return, // user, system, custom: nothing to say
            None => return self.bad(n, raw, "`message_start` without `message.role`".into()),
        }
        let ts = m.timestamp.map(|t| Stamp::new(t.get()));
        if let Some(open) = &self.open {
            if ts.is_some() && open.timestamp == ts {
                return; // the same start again
            }
            self.close_unfinished();
        }
        // The content of message_start is a snapshot that may already lead the deltas
        // (pi 0.87.1 puts the first thinking chunk there; 1.x may put the first chunk there
        // and repeat it in the first delta): never used. Text comes from the deltas, and
        // what they miss from message_end.
        self.open = Some(OpenMessage {
            timestamp: ts,
            ..OpenMessage::default()
        });
    }

    /// An assistant message ended without its `message_end`: its text stays as streamed,
    /// its thoughts wait for the next drain.
    pub(super) fn close_unfinished(&mut self) {
        if let Some(open) = self.open.take() {
            self.kept = format!("{}{}", open.replayed.unwrap_or_default(), open.emitted);
            self.note_thoughts_cut(open.thoughts_cut);
            self.keep_thoughts(open.thoughts.into_iter().map(|t| t.1));
        }
    }

    /// Say that the thinking streamed for a message was cut by `cut` bytes, when it was.
    fn note_thoughts_cut(&mut self, cut: u64) {
        if cut > 0 {
            let cap = self.opts.max_line_bytes;
            self.note(format!(
                "{cut} bytes of thinking dropped: past the {cap} bytes the mapper keeps of a message (its line cap)"
            ));
        }
    }

    pub(super) fn on_message_update(
        &mut self,
        n: u64,
        raw: &[u8],
        ev: &mut Event<'_>,
        out: &mut Vec<Message>,
    ) {
        self.open.get_or_insert_with(OpenMessage::default);
        let ame = ev.ame.0.take();
        let kind = ame.as_ref().and_then(|a| a.kind.as_str());
        match (kind, ame.as_ref()) {
            (Some("text_delta"), Some(a)) if a.delta.is_present() => {
                let Lv::Str(d) = &a.delta else {
                    return self.bad(n, raw, "`text_delta` whose `delta` is not a string".into());
                };
                self.on_delta(false, d, None, out);
            }
            (Some("thinking_delta"), Some(a)) if a.delta.is_present() => {
                let Lv::Str(d) = &a.delta else {
                    return self.bad(
                        n,
                        raw,
                        "`thinking_delta` whose `delta` is not a string".into(),
                    );
                };
                self.on_delta(true, d, a.content_index.as_u64(), out);
            }
            (Some("toolcall_end"), Some(a)) => {
                let Some(tc) = a.tool_call else {
                    return self.bad(n, raw, "`toolcall_end` without `toolCall`".into());
                };
                self.on_toolcall_end(n, raw, tc, out);
            }
            (Some("text_delta" | "thinking_delta"), _) | (None, _) => {
                // No delta: a snapshot-only producer.
                let partial = ame.and_then(|a| a.partial);
                let snapshot = match (partial, std::mem::take(&mut ev.message)) {
                    (Some(p), _) => Some(p),
                    (None, MsgField::Absent) => None,
                    (None, m) => Some(m),
                };
                if let Some(s) = snapshot {
                    self.on_snapshot(n, raw, s, out);
                }
            }
            // Update types without a delta by design, and unknown ones: nothing to take.
            _ => {}
        }
    }

    /// A `toolcall_end` update's `toolCall`.
    pub(super) fn on_toolcall_end(
        &mut self,
        n: u64,
        raw: &[u8],
        tc: RawJson<'_>,
        out: &mut Vec<Message>,
    ) {
        let block = match self.fast.then(|| fast::tool_call(tc.get())).flatten() {
            Some(b) => Ok(Obj(Some(b))),
            None => serde_json::from_str::<Obj<ToolCallBlock<'_>>>(tc.get()),
        };
        match block {
            Ok(Obj(Some(b))) => match b.id.as_str() {
                Some(id) => self.announce(id, b.name.as_str(), b.arguments, out),
                None => self.bad(n, raw, "`toolcall_end` without `toolCall.id`".into()),
            },
            Ok(Obj(None)) => self.bad(n, raw, "`toolCall` is not an object".into()),
            Err(e) => self.bad(n, raw, format!("`toolCall`: {e}")),
        }
    }

    /// A `text_delta` or `thinking_delta` with its string `delta` (an assistant message is open).
    pub(super) fn on_delta(
        &mut self,
        thinking: bool,
        d: &str,
        index: Option<u64>,
        out: &mut Vec<Message>,
    ) {
        self.sends_deltas = true;
        let cap = self.opts.max_line_bytes;
        let open = self.open.get_or_insert_with(OpenMessage::default);
        if thinking {
            open.keep(true, d, index, cap);
        } else if !d.is_empty() {
            open.keep(false, d, None, cap);
            out.push(Message::Assistant {
                text: d.to_string(),
            });
        }
    }

    fn on_snapshot(&mut self, n: u64, raw: &[u8], snapshot: MsgField<'_>, out: &mut Vec<Message>) {
        if self.sends_deltas {
            return; // this producer sends deltas: its snapshots lie, ignore them
        }
        let Some(body) = self.take_message(n, raw, snapshot, "snapshot") else {
            return;
        };
        let Some(content) = body.content else {
            return;
        };
        let open = self.open.get_or_insert_with(OpenMessage::default);
        let thoughts = content.thoughts();
        if !thoughts.is_empty() {
            open.thoughts = thoughts;
        }
        let text = content.text();
        let kept = &self.kept;
        if open.replayed.is_none() {
            if !open.emitted.is_empty() || kept.is_empty() || !kept.starts_with(text.as_ref()) {
                let replay =
                    !kept.is_empty() && open.emitted.is_empty() && text.starts_with(kept.as_str());
                open.replayed = Some(if replay { kept.clone() } else { String::new() });
            } else {
                return; // still (possibly) replaying the previous text: wait
            }
        }
        let replayed = open.replayed.as_deref().unwrap_or("");
        let own = text.strip_prefix(replayed).unwrap_or(&text);
        if let Some(new) = own.strip_prefix(open.emitted.as_str()) {
            if !new.is_empty() {
                open.emitted.push_str(new);
                out.push(Message::Assistant {
                    text: new.to_string(),
                });
            }
        }
        // Otherwise the snapshot lags (a prefix of what was emitted) or diverges: ignored.
    }

    pub(super) fn on_message_end(
        &mut self,
        n: u64,
        raw: &[u8],
        ev: &mut Event<'_>,
        out: &mut Vec<Message>,
    ) {
        let message = std::mem::take(&mut ev.message);
        let Some(m) = self.take_message(n, raw, message, "`message`") else {
            return;
        };
        match m.role.as_str() {
            Some("assistant") => self.release_all(out),
            Some("toolResult") => return self.release(&m, out),
            Some(_) => return,
            None => return self.bad(n, raw, "`message_end` without `message.role`".into()),
        }
        let ts = m.timestamp.map(|t| Stamp::new(t.get()));
        // The message_end of the message closed last, again (same timestamp, same text),
        // while no message with that timestamp is open: ignored.
        let repeated = ts.is_some()
            && ts == self.last_closed_ts
            && self.open.as_ref().map_or(true, |o| o.timestamp != ts)
            && m.content
                .as_ref()
                .is_some_and(|c| c.text() == self.kept.as_str());
        if repeated {
            return;
        }
        if let (Some(open), Some(t)) = (&self.open, &ts) {
            if open.timestamp.as_ref().is_some_and(|o| o != t) {
                self.close_unfinished();
            }
        }
        let mut open = self.open.take().unwrap_or_default();

        if let Some(content) = &m.content {
            let text = content.text();
            // The replayed prefix is dropped when the final text repeats it too; some
            // producers give the message's own text here.
            let replayed_len = match &open.replayed {
                Some(r) if text.starts_with(r.as_str()) => r.len(),
                Some(_) => 0,
                None if !self.sends_deltas
                    && open.emitted.is_empty()
                    && !self.kept.is_empty()
                    && text.starts_with(self.kept.as_str()) =>
                {
                    self.kept.len()
                }
                None => 0,
            };
            let own = &text[replayed_len..];
            if open.text_cut > 0 {
                // More was streamed than a line holds: the final text cannot continue it.
                let problem = format!(
                    "`message_end` not compared with the streamed text: {} bytes streamed, past the {} bytes the mapper keeps of a message (its line cap); nothing more emitted for this message",
                    open.emitted.len() as u64 + open.text_cut,
                    self.opts.max_line_bytes
                );
                self.invalid.record(n, raw.len() as u64, problem, raw);
            } else if let Some(rest) = own.strip_prefix(open.emitted.as_str()) {
                if !rest.is_empty() {
                    out.push(Message::Assistant {
                        text: rest.to_string(),
                    });
                }
            } else {
                self.stats.text_divergences += 1;
                let problem = format!(
                    "`message_end` text does not continue the streamed text (streamed {} bytes, final {} bytes, equal for the first {}); nothing more emitted for this message",
                    open.emitted.len(),
                    own.len(),
                    common_prefix(own, &open.emitted)
                );
                self.invalid.record(n, raw.len() as u64, problem, raw);
            }
            set_text(&mut self.kept, text);
            // message_end is authoritative for thoughts too.
            open.thoughts = content.thoughts();
            for call in content.tool_calls() {
                if let Some(id) = call.id.as_str() {
                    self.announce(id, call.name.as_str(), call.arguments, out);
                }
            }
        } else {
            self.kept = format!("{}{}", open.replayed.unwrap_or_default(), open.emitted);
            self.note_thoughts_cut(open.thoughts_cut);
        }
        self.keep_thoughts(open.thoughts.into_iter().map(|t| t.1));
        let stop = m.stop_reason.as_str().map(str::to_string);
        if stop.as_deref() != Some("toolUse") {
            self.drain_thoughts(out);
        }
        let usage = m.usage.0.map(|u| u.to_usage()).unwrap_or_default();
        self.usage.add(&usage);
        out.push(Message::Usage(usage));
        self.last_error = m.error_message.as_str().map(str::to_string);
        self.last_stop = stop;
        self.last_closed_ts = ts;
    }

    pub(super) fn drain_thoughts(&mut self, out: &mut Vec<Message>) {
        out.extend(
            self.pending_thoughts
                .drain(..)
                .map(|text| Message::AssistantThought { text }),
        );
    }
}

/// `dst` becomes `text`, reusing its buffer when `text` is borrowed.
fn set_text(dst: &mut String, text: Cow<'_, str>) {
    match text {
        Cow::Owned(s) => *dst = s,
        Cow::Borrowed(b) => {
            dst.clear();
            dst.push_str(b);
        }
    }
}

/// Length in bytes of the common prefix, on a char boundary.
fn common_prefix(a: &str, b: &str) -> usize {
    a.char_indices()
        .zip(b.chars())
        .find(|((_, x), y)| x != y)
        .map(|((i, _), _)| i)
        .unwrap_or_else(|| a.len().min(b.len()))
}
