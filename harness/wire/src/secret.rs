//! Keeping one secret (the API key a caller hands pi) out of the normalized stream,
//! wherever pi echoes it: in answer text split across deltas, tool arguments and results,
//! retry errors, failure messages, the stderr tail and excerpts of bad lines.
//!
//! [`SecretFilter`] sits between the mapper and whoever reads the stream. Answer text is
//! streamed, so the filter holds back the end of a delta while it could be the start of the
//! key and lets it go with the next delta (or before the next other message): the text a
//! reader concatenates equals the whole text with every occurrence replaced, and never
//! contains the key. Everything else is scrubbed string by string. The replacement is
//! chosen per key so that it can neither contain the key nor form it with its neighbours.
//!
//! ```
//! use pi_wire::message::Message;
//! use pi_wire::secret::SecretFilter;
//!
//! let mut f = SecretFilter::new("sk-test-123456").unwrap();
//! let mut out = Vec::new();
//! for piece in ["your key is sk-te", "st-123456, ", "keep it safe"] {
//!     f.filter(Message::Assistant { text: piece.into() }, &mut out);
//! }
//! f.finish(&mut out);
//! let text: String = out
//!     .iter()
//!     .map(|m| match m {
//!         Message::Assistant { text } => text.as_str(),
//!         _ => "",
//!     })
//!     .collect();
//! assert_eq!(text, "your key is [REDACTED], keep it safe");
//! ```

use serde_json::Value;

use crate::message::{Failure, Json, Message};

/// Replacements, tried in order; their characters differ so that any key clashes with few.
const REPLACEMENTS: &[&str] = &[
    "[REDACTED]",
    "<redacted>",
    "***",
    "###",
    "%%%",
    "@@@",
    "~~~",
];

/// A partial key at the cut edge of an excerpt or tail is dropped from this length up.
const MIN_PARTIAL: usize = 4;

/// Replaces one secret everywhere in a stream of messages.
#[derive(Debug, Clone)]
pub struct SecretFilter {
    /// The key as pi would print it, and as it appears inside a JSON string.
    forms: Vec<String>,
    replacement: &'static str,
    /// The end of the answer text not yet passed on: a proper prefix of the key.
    held: String,
}

impl SecretFilter {
    /// A filter for `key`; `None` for an empty key (nothing to hide).
    pub fn new(key: &str) -> Option<SecretFilter> {
        if key.is_empty() {
            return None;
        }
        let mut forms = vec![key.to_string()];
        let escaped = serde_json::to_string(key).expect("a string serializes");
        let escaped = &escaped[1..escaped.len() - 1];
        if escaped != key {
            forms.push(escaped.to_string());
        }
        let replacement = REPLACEMENTS
            .iter()
            .copied()
            .find(|r| forms.iter().all(|k| clash_free(r, k)))
            // Seven replacements with disjoint characters: a key clashes with at most
            // three (its first character, its last, or containment).
            .unwrap_or(REPLACEMENTS[0]);
        Some(SecretFilter {
            forms,
            replacement,
            held: String::new(),
        })
    }

    /// The text that replaces the key.
    pub fn replacement(&self) -> &'static str {
        self.replacement
    }

    /// Pass one message on (into `out`): zero, one or two messages come out.
    pub fn filter(&mut self, message: Message, out: &mut Vec<Message>) {
        match message {
            Message::Assistant { text } => {
                let mut buf = std::mem::take(&mut self.held);
                buf.push_str(&text);
                let mut clean = self.scrub(&buf);
                let keep = self.partial_suffix(&clean);
                self.held = clean.split_off(clean.len() - keep);
                if !clean.is_empty() {
                    out.push(Message::Assistant { text: clean });
                }
            }
            other => {
                self.finish(out);
                out.push(self.scrub_message(other));
            }
        }
    }

    /// Let go of held text (the stream ended without a terminal message).
    pub fn finish(&mut self, out: &mut Vec<Message>) {
        if !self.held.is_empty() {
            out.push(Message::Assistant {
                text: std::mem::take(&mut self.held),
            });
        }
    }

    /// `text` with every occurrence of the key (raw or JSON-escaped) replaced.
    pub fn scrub(&self, text: &str) -> String {
        let mut s = text.to_string();
        for form in &self.forms {
            if s.contains(form.as_str()) {
                s = s.replace(form.as_str(), self.replacement);
            }
        }
        if self.forms.iter().any(|f| s.contains(f.as_str())) {
            // Cannot happen with a clash-free replacement; never print the key regardless.
            return self.replacement.to_string();
        }
        s
    }

    /// Length of the longest suffix of `text` that is a proper prefix of a form of the key.
    fn partial_suffix(&self, text: &str) -> usize {
        let mut best = 0;
        for form in &self.forms {
            for n in (1..form.len().min(text.len() + 1)).rev() {
                if n > best
                    && form.is_char_boundary(n)
                    && text.is_char_boundary(text.len() - n)
                    && text.ends_with(&form[..n])
                {
                    best = n;
                    break;
                }
            }
        }
        best
    }

    /// `text` scrubbed, then a partial key cut at its start (`head`) or end (`tail`) dropped:
    /// what a bounded excerpt or tail may hold.
    fn scrub_cut(&self, text: &str, head: bool, tail: bool) -> String {
        let mut s = self.scrub(text);
        for form in &self.forms {
            if tail {
                let n = self.partial_suffix(&s);
                if n >= MIN_PARTIAL {
                    s.truncate(s.len() - n);
                }
            }
            if head {
                for n in (MIN_PARTIAL..form.len()).rev() {
                    let start = form.len() - n;
                    if form.is_char_boundary(start)
                        && s.is_char_boundary(n.min(s.len()))
                        && s.starts_with(&form[start..])
                    {
                        s.drain(..n);
                        break;
                    }
                }
            }
        }
        s
    }

    fn scrub_value(&self, v: &mut Value) {
        match v {
            Value::String(s) => *s = self.scrub(s),
            Value::Array(items) => items.iter_mut().for_each(|i| self.scrub_value(i)),
            Value::Object(map) => {
                let keys: Vec<String> = map.keys().cloned().collect();
                for k in keys {
                    let mut value = map.remove(&k).expect("the key was just listed");
                    self.scrub_value(&mut value);
                    map.insert(self.scrub(&k), value);
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }

    fn scrub_message(&self, message: Message) -> Message {
        let s = |t: String| self.scrub(&t);
        // A payload is read, scrubbed as a value (an escaped echo included) and written again.
        let v = |x: Json| {
            let mut x = x.to_value();
            self.scrub_value(&mut x);
            Json::from(x)
        };
        match message {
            Message::SessionStarted { session_id } => Message::SessionStarted {
                session_id: s(session_id),
            },
            Message::SessionResumed { session_id } => Message::SessionResumed {
                session_id: s(session_id),
            },
            Message::Assistant { text } => Message::Assistant { text: s(text) },
            Message::AssistantThought { text } => Message::AssistantThought { text: s(text) },
            Message::ToolCall {
                id,
                name,
                arguments,
            } => Message::ToolCall {
                id: s(id),
                name: s(name),
                arguments: v(arguments),
            },
            Message::ToolUpdate { id, partial } => Message::ToolUpdate {
                id: s(id),
                partial: v(partial),
            },
            Message::ToolCompleted { id, result } => Message::ToolCompleted {
                id: s(id),
                result: v(result),
            },
            Message::ToolFailed { id, error } => Message::ToolFailed {
                id: s(id),
                error: v(error),
            },
            Message::RetryScheduled {
                source,
                attempt,
                max_attempts,
                delay_ms,
                error,
            } => Message::RetryScheduled {
                source,
                attempt,
                max_attempts,
                delay_ms,
                error: s(error),
            },
            Message::TerminalCompleted { stop_reason, usage } => Message::TerminalCompleted {
                stop_reason: s(stop_reason),
                usage,
            },
            Message::TerminalFailed(f) => Message::TerminalFailed(Failure {
                message: s(f.message),
                exit: f.exit.map(|mut e| {
                    e.signal = e.signal.map(s);
                    e
                }),
                // The end of stderr: its first line may begin inside the key.
                stderr_tail: f.stderr_tail.map(|t| self.scrub_cut(&t, true, false)),
                invalid_lines: f
                    .invalid_lines
                    .into_iter()
                    .map(|mut l| {
                        // The start of a line: it may end inside the key.
                        l.excerpt = self.scrub_cut(&l.excerpt, false, true);
                        l.problem = self.scrub(&l.problem);
                        l
                    })
                    .collect(),
                ..f
            }),
            m @ (Message::Usage(_) | Message::TerminalCancelled { .. }) => m,
        }
    }
}

/// `replacement` may stand for `key`: it does not contain the key, the key does not contain
/// it, and neither overlaps the other at an edge (so no key forms across a boundary).
fn clash_free(replacement: &str, key: &str) -> bool {
    let overlaps = |a: &str, b: &str| {
        (1..a.len().min(b.len()) + 1).any(|n| {
            b.is_char_boundary(n) && a.is_char_boundary(a.len() - n) && a.ends_with(&b[..n])
        })
    };
    !replacement.contains(key)
        && !key.contains(replacement)
        && !overlaps(replacement, key)
        && !overlaps(key, replacement)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{ExitInfo, FailureReason, InvalidLine};
    use proptest::prelude::*;

    fn run(filter: &mut SecretFilter, messages: Vec<Message>) -> Vec<Message> {
        let mut out = Vec::new();
        for m in messages {
            filter.filter(m, &mut out);
        }
        filter.finish(&mut out);
        out
    }

    fn text(messages: &[Message]) -> String {
        messages
            .iter()
            .filter_map(|m| match m {
                Message::Assistant { text } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    /// Tool payloads are kept as the text pi wrote: a key echoed there with JSON escapes
    /// (`\u0073k-...`, `\/`) is found in the value, and the payload written again without it.
    #[test]
    fn a_key_escaped_in_a_tool_payload_is_scrubbed() {
        let key = "sk-ant/123";
        let mut f = SecretFilter::new(key).unwrap();
        let payload =
            Json::from_text(r#"{"out":"\u0073k-ant\/123 and sk-ant/123","sk-ant\/123":1}"#)
                .unwrap();
        let out = run(
            &mut f,
            vec![Message::ToolCompleted {
                id: "t".into(),
                result: payload,
            }],
        );
        let Message::ToolCompleted { result, .. } = &out[0] else {
            panic!("{out:?}")
        };
        assert_eq!(
            result.to_value(),
            serde_json::json!({"out": "[REDACTED] and [REDACTED]", "[REDACTED]": 1})
        );
        assert!(!serde_json::to_string(&out).unwrap().contains("123"));
    }

    #[test]
    fn the_replacement_never_clashes_with_the_key() {
        assert_eq!(
            SecretFilter::new("sk-1234").unwrap().replacement(),
            "[REDACTED]"
        );
        // A key that starts where "[REDACTED]" ends, or contains it, gets another.
        assert_eq!(
            SecretFilter::new("D]abc").unwrap().replacement(),
            "<redacted>"
        );
        assert_eq!(
            SecretFilter::new("x[REDACTED]y").unwrap().replacement(),
            "<redacted>"
        );
        assert_eq!(SecretFilter::new("a").unwrap().replacement(), "[REDACTED]");
        assert_eq!(SecretFilter::new("R").unwrap().replacement(), "<redacted>");
        assert!(SecretFilter::new("").is_none());
    }

    #[test]
    fn every_place_pi_echoes_a_key() {
        let key = "sk-ant-api03-SECRET\"quoted\"";
        let escaped = r#"sk-ant-api03-SECRET\"quoted\""#;
        let mut f = SecretFilter::new(key).unwrap();
        let out = run(
            &mut f,
            vec![
                Message::Assistant {
                    text: "key: sk-ant-api03-SEC".into(),
                },
                Message::Assistant {
                    text: "RET\"quoted\" ok".into(),
                },
                Message::ToolCall {
                    id: "t1".into(),
                    name: "bash".into(),
                    arguments: serde_json::json!({"command": format!("echo {key}"), key: [key]})
                        .into(),
                },
                Message::RetryScheduled {
                    source: crate::message::RetrySource::Pi,
                    attempt: 1,
                    max_attempts: 3,
                    delay_ms: 10,
                    error: format!("401 invalid api key {key}"),
                },
                Message::TerminalFailed(Failure {
                    reason: FailureReason::ModelError,
                    message: format!("401 invalid api key {key}"),
                    exit: Some(ExitInfo {
                        code: Some(0),
                        signal: None,
                    }),
                    stderr_tail: Some(format!("{}\nError: {key}\n", &key[6..])),
                    invalid_lines: vec![InvalidLine {
                        line: 3,
                        bytes: 900,
                        problem: "not JSON".into(),
                        excerpt: format!("{{\"x\":\"{escaped} {}", &escaped[..10]),
                    }],
                    invalid_lines_dropped: 0,
                }),
            ],
        );
        assert_eq!(text(&out), "key: [REDACTED] ok");
        let json = serde_json::to_string(&out).unwrap();
        assert!(!json.contains("SECRET"), "{json}");
        assert!(!json.contains("sk-ant-api"), "{json}");
        match out.last() {
            Some(Message::TerminalFailed(f)) => {
                assert_eq!(f.message, "401 invalid api key [REDACTED]");
                assert_eq!(f.stderr_tail.as_deref(), Some("\nError: [REDACTED]\n"));
                assert_eq!(f.invalid_lines[0].excerpt, "{\"x\":\"[REDACTED] ");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn text_without_the_key_passes_unchanged_in_the_same_pieces() {
        let mut f = SecretFilter::new("sk-123456").unwrap();
        let pieces = ["Hello", " wor", "ld s", "k-12 no"];
        let out = run(
            &mut f,
            pieces
                .iter()
                .map(|p| Message::Assistant { text: (*p).into() })
                .collect(),
        );
        assert_eq!(text(&out), "Hello world sk-12 no");
        // Only the piece that ended in "sk-12" was held back, and released with the next.
        assert_eq!(out.len(), 4);
    }

    /// Every string a reader sees in `v`: values everywhere, object keys inside payloads
    /// (tool arguments and results), not the protocol's own tags and field names.
    fn all_strings(v: &Value, payload: bool, out: &mut Vec<String>) {
        match v {
            Value::String(s) => out.push(s.clone()),
            Value::Array(a) => a.iter().for_each(|i| all_strings(i, payload, out)),
            Value::Object(m) => m.iter().for_each(|(k, i)| {
                if payload {
                    out.push(k.clone());
                }
                all_strings(i, payload, out)
            }),
            _ => {}
        }
    }

    fn reader_strings(m: &Message) -> Vec<String> {
        let mut out = Vec::new();
        if let Value::Object(top) = serde_json::to_value(m).unwrap() {
            for (k, v) in &top {
                // The protocol's own tags (`type`, the failure `reason`, the retry `source`) are not text.
                if !["type", "reason", "source"].contains(&k.as_str()) {
                    let payload = ["arguments", "partial", "result", "error"].contains(&k.as_str());
                    all_strings(v, payload, &mut out);
                }
            }
        }
        out
    }

    fn key_strategy() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-zA-Z0-9_-]{1,40}",
            "[a-c\"\\\\\\[\\]<>*#%@~ é\u{1F600}\n]{1,12}",
            "sk-[a-z]{0,4}",
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

        /// For any key and any text that holds it anywhere, cut into any pieces: the
        /// reader's concatenation is the whole text scrubbed, and no output holds the key.
        #[test]
        fn no_output_holds_the_key(
            key in key_strategy(),
            parts in proptest::collection::vec("[a-c\"\\[\\]<>D ]{0,6}", 1..8),
            cuts in proptest::collection::vec(0usize..64, 0..6),
        ) {
            let whole = parts.join(&key);
            // Cut `whole` into pieces at char boundaries.
            let mut bounds: Vec<usize> = cuts
                .iter()
                .map(|c| c % (whole.len() + 1))
                .filter(|&c| whole.is_char_boundary(c))
                .collect();
            bounds.push(0);
            bounds.push(whole.len());
            bounds.sort_unstable();
            bounds.dedup();
            let pieces: Vec<Message> = bounds
                .windows(2)
                .map(|w| Message::Assistant { text: whole[w[0]..w[1]].to_string() })
                .collect();
            let mut f = SecretFilter::new(&key).unwrap();
            let mut input = pieces;
            input.push(Message::ToolCall {
                id: key.clone(),
                name: format!("{key}{key}"),
                arguments: serde_json::json!({ key.clone(): whole.clone() }).into(),
            });
            input.push(Message::TerminalFailed(Failure {
                reason: FailureReason::ModelError,
                message: whole.clone(),
                exit: None,
                stderr_tail: Some(whole.clone()),
                invalid_lines: vec![],
                invalid_lines_dropped: 0,
            }));
            let out = run(&mut f, input);
            let reader = text(&out);
            prop_assert_eq!(&reader, &f.scrub(&whole));
            prop_assert!(!reader.contains(key.as_str()));
            let escaped = serde_json::to_string(&key).unwrap();
            let escaped = &escaped[1..escaped.len() - 1];
            for m in &out {
                for s in reader_strings(m) {
                    prop_assert!(!s.contains(key.as_str()), "{:?} in {:?}", key, s);
                    prop_assert!(!s.contains(escaped), "{:?} in {:?}", escaped, s);
                }
            }
        }
    }
}
