//! Human rendering of the normalized stream, for a terminal.
//!
//! Pure: [`Renderer::render`] turns one message into the text to print. Assistant text is
//! printed inline as it streams; thoughts (dimmed, prefixed), tool calls, updates and results,
//! retries and the session line are set apart on their own lines; the terminal outcome comes
//! last with its reason, exit code or signal, stderr tail and invalid lines. Colours (ANSI) only
//! when asked for: the caller decides with [`super::use_color`].

use std::collections::HashMap;
use std::fmt::Write as _;

use serde_json::Value;

use pi_wire::message::{Failure, Message, RetrySource, Usage};

/// Longest rendering of a tool argument or result, in characters.
const MAX_VALUE_CHARS: usize = 400;
/// Most lines of a tool result or stderr tail shown.
const MAX_LINES: usize = 8;

/// ANSI styles, or nothing when colour is off.
#[derive(Debug, Clone, Copy)]
struct Paint(bool);

impl Paint {
    fn wrap(self, code: &str, s: &str) -> String {
        if self.0 && !s.is_empty() {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }
    fn dim(self, s: &str) -> String {
        self.wrap("2", s)
    }
    fn bold(self, s: &str) -> String {
        self.wrap("1", s)
    }
    fn red(self, s: &str) -> String {
        self.wrap("1;31", s)
    }
    fn green(self, s: &str) -> String {
        self.wrap("1;32", s)
    }
    fn yellow(self, s: &str) -> String {
        self.wrap("33", s)
    }
    fn cyan(self, s: &str) -> String {
        self.wrap("36", s)
    }
}

/// Renders messages one at a time, remembering whether streamed text left a line open.
#[derive(Debug)]
pub struct Renderer {
    paint: Paint,
    /// Assistant text was printed and its line is not finished.
    open_line: bool,
    /// Tool output already shown, per tool call id (updates carry the whole output so far).
    shown: HashMap<String, String>,
}

impl Renderer {
    /// A renderer at the start of a stream; ANSI colours with `color`.
    pub fn new(color: bool) -> Self {
        Renderer {
            paint: Paint(color),
            open_line: false,
            shown: HashMap::new(),
        }
    }

    /// The text to print for `m` (possibly empty).
    pub fn render(&mut self, m: &Message) -> String {
        let p = self.paint;
        if let Message::Assistant { text } = m {
            if !text.is_empty() {
                self.open_line = !text.ends_with('\n');
            }
            return text.clone();
        }
        let block = match m {
            Message::Assistant { .. } => unreachable!("handled above"),
            Message::SessionStarted { session_id } => p.dim(&format!("[session {session_id}]")),
            Message::SessionResumed { session_id } => {
                p.dim(&format!("[session {session_id}, resumed]"))
            }
            Message::AssistantThought { text } => {
                let lines: Vec<String> = text
                    .trim_end()
                    .lines()
                    .map(|l| p.dim(&format!("thinking| {l}")))
                    .collect();
                lines.join("\n")
            }
            Message::ToolCall {
                id,
                name,
                arguments,
            } => {
                format!(
                    "{} {} {}",
                    p.cyan(&format!("-> tool {name}")),
                    p.dim(&format!("({id})")),
                    short(&arguments.to_value())
                )
            }
            Message::ToolUpdate { id, partial } => {
                // Show only what is new since the last update, like a terminal would.
                let text = value_text(&partial.to_value());
                let shown = self.shown.entry(id.clone()).or_default();
                let new = match text.strip_prefix(shown.as_str()) {
                    Some(rest) => rest.to_string(),
                    None => text.clone(),
                };
                *shown = text;
                if new.trim().is_empty() {
                    return String::new();
                }
                let lines: Vec<String> = cut_lines(&new)
                    .iter()
                    .map(|l| p.dim(&format!("   | {l}")))
                    .collect();
                lines.join("\n")
            }
            Message::ToolCompleted { id, result } => {
                let text = value_text(&result.to_value());
                match self.shown.remove(id) {
                    // The output was streamed already.
                    Some(shown) if shown == text => p.green(&format!("<- tool {id} done")),
                    _ => format!(
                        "{}{}",
                        p.green(&format!("<- tool {id} done:")),
                        indent(&cut_lines(&text))
                    ),
                }
            }
            Message::ToolFailed { id, error } => {
                self.shown.remove(id);
                format!(
                    "{}{}",
                    p.red(&format!("<- tool {id} failed:")),
                    indent(&cut_lines(&value_text(&error.to_value())))
                )
            }
            Message::RetryScheduled {
                source,
                attempt,
                max_attempts,
                delay_ms,
                error,
            } => {
                let who = match source {
                    RetrySource::Pi => "pi retries",
                    RetrySource::Caller => "retrying (the answer above is discarded)",
                };
                p.yellow(&format!(
                    "~~ {who}: attempt {attempt}/{max_attempts} in {}: {}",
                    human_ms(*delay_ms),
                    first_line(error)
                ))
            }
            // Per-message usage is summed in the terminal line.
            Message::Usage(_) => return String::new(),
            Message::TerminalCompleted { stop_reason, usage } => {
                format!(
                    "{} {}",
                    p.green("== completed"),
                    p.dim(&format!("(stop: {stop_reason}; {})", usage_text(usage)))
                )
            }
            Message::TerminalFailed(f) => failure(p, f),
            Message::TerminalCancelled { exit } => {
                let how = exit
                    .as_ref()
                    .map(exit_text)
                    .map(|e| format!(" ({e})"))
                    .unwrap_or_default();
                p.yellow(&format!("== cancelled{how}"))
            }
        };
        let mut out = String::new();
        if self.open_line {
            out.push('\n');
            self.open_line = false;
        }
        out.push_str(&block);
        out.push('\n');
        out
    }
}

fn failure(p: Paint, f: &Failure) -> String {
    let reason = serde_json::to_value(f.reason)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    let mut s = p.red(&format!("== failed: {reason}: {}", first_line(&f.message)));
    if let Some(e) = &f.exit {
        let _ = write!(s, "\n   {}", exit_text(e));
    }
    if let Some(tail) = f.stderr_tail.as_deref().filter(|t| !t.trim().is_empty()) {
        let lines: Vec<&str> = tail.trim_end().lines().collect();
        let from = lines.len().saturating_sub(MAX_LINES);
        let _ = write!(s, "\n   {}", p.bold("stderr (end):"));
        for l in &lines[from..] {
            let _ = write!(s, "\n   | {l}");
        }
    }
    if !f.invalid_lines.is_empty() || f.invalid_lines_dropped > 0 {
        let total = f.invalid_lines.len() as u64 + f.invalid_lines_dropped;
        let _ = write!(
            s,
            "\n   {}",
            p.bold(&format!("invalid stdout lines: {total}"))
        );
        for l in &f.invalid_lines {
            let _ = write!(
                s,
                "\n   line {} ({} bytes): {}: {}",
                l.line,
                l.bytes,
                l.problem,
                truncate(&l.excerpt, 120)
            );
        }
        if f.invalid_lines_dropped > 0 {
            let _ = write!(s, "\n   ... and {} more not kept", f.invalid_lines_dropped);
        }
    }
    s
}

fn exit_text(e: &pi_wire::message::ExitInfo) -> String {
    match (&e.code, &e.signal) {
        (_, Some(sig)) => format!("pi died by {sig}"),
        (Some(code), None) => format!("pi exited with code {code}"),
        (None, None) => "pi's exit status unknown".into(),
    }
}

fn usage_text(u: &Usage) -> String {
    format!(
        "tokens: {} in, {} out, {} total; cost ${:.4}",
        u.input_tokens, u.output_tokens, u.total_tokens, u.cost_usd
    )
}

fn human_ms(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms} ms")
    } else {
        format!("{:.1} s", ms as f64 / 1000.0)
    }
}

fn first_line(s: &str) -> String {
    let mut lines = s.trim().lines();
    let first = lines.next().unwrap_or_default();
    if lines.next().is_some() {
        format!("{} ...", truncate(first, 200))
    } else {
        truncate(first, 200)
    }
}

fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let cut: String = s.chars().take(max).collect();
        format!("{cut}...")
    }
}

/// A value on one line: compact JSON, cut at [`MAX_VALUE_CHARS`].
fn short(v: &Value) -> String {
    truncate(&v.to_string().replace('\n', "\\n"), MAX_VALUE_CHARS)
}

/// The readable text of a tool result: pi's `content[].text` joined, a string as it is,
/// anything else as compact JSON.
fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Object(o) => match o.get("content").and_then(Value::as_array) {
            Some(items) => items
                .iter()
                .filter_map(|i| i.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n"),
            None => v.to_string(),
        },
        _ => v.to_string(),
    }
}

/// At most [`MAX_LINES`] lines of `text`, each cut at [`MAX_VALUE_CHARS`].
fn cut_lines(text: &str) -> Vec<String> {
    let all: Vec<&str> = text.trim_end().lines().collect();
    let mut out: Vec<String> = all
        .iter()
        .take(MAX_LINES)
        .map(|l| truncate(l, MAX_VALUE_CHARS))
        .collect();
    if all.len() > MAX_LINES {
        out.push(format!("... ({} more lines)", all.len() - MAX_LINES));
    }
    if out.is_empty() {
        out.push("(empty)".into());
    }
    out
}

/// One line stays on the label's line; more go below it, indented.
fn indent(lines: &[String]) -> String {
    if lines.len() == 1 {
        format!(" {}", lines[0])
    } else {
        lines.iter().map(|l| format!("\n   {l}")).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pi_wire::message::{ExitInfo, FailureReason, InvalidLine};
    use serde_json::json;

    fn render_all(msgs: &[Message], color: bool) -> String {
        let mut r = Renderer::new(color);
        msgs.iter().map(|m| r.render(m)).collect()
    }

    #[test]
    fn text_streams_inline_and_blocks_start_on_their_own_line() {
        let msgs = vec![
            Message::SessionStarted {
                session_id: "s1".into(),
            },
            Message::AssistantThought {
                text: "plan it\nthen act".into(),
            },
            Message::Assistant {
                text: "Let me ".into(),
            },
            Message::Assistant {
                text: "look.".into(),
            },
            Message::ToolCall {
                id: "c1".into(),
                name: "bash".into(),
                arguments: json!({"command": "ls"}).into(),
            },
            Message::ToolCompleted {
                id: "c1".into(),
                result: json!({"content": [{"type": "text", "text": "a.txt\nb.txt"}]}).into(),
            },
            Message::Assistant {
                text: "Two files.".into(),
            },
            Message::Usage(Usage::default()),
            Message::TerminalCompleted {
                stop_reason: "stop".into(),
                usage: Usage {
                    input_tokens: 3,
                    output_tokens: 4,
                    total_tokens: 7,
                    ..Usage::default()
                },
            },
        ];
        let text = render_all(&msgs, false);
        assert_eq!(
            text,
            "[session s1]\nthinking| plan it\nthinking| then act\nLet me look.\n-> tool bash (c1) {\"command\":\"ls\"}\n<- tool c1 done:\n   a.txt\n   b.txt\nTwo files.\n== completed (stop: stop; tokens: 3 in, 4 out, 7 total; cost $0.0000)\n"
        );
        assert!(!text.contains('\x1b'));
    }

    #[test]
    fn failure_shows_reason_exit_stderr_and_invalid_lines() {
        let f = Failure {
            reason: FailureReason::ProcessExit,
            message: "pi exited with code 1".into(),
            exit: Some(ExitInfo {
                code: Some(1),
                signal: None,
            }),
            stderr_tail: Some("noise\nError: Unknown model\n".into()),
            invalid_lines: vec![InvalidLine {
                line: 2,
                bytes: 5,
                problem: "not JSON".into(),
                excerpt: "oops!".into(),
            }],
            invalid_lines_dropped: 3,
        };
        let text = render_all(
            &[
                Message::Assistant {
                    text: "partial".into(),
                },
                Message::TerminalFailed(f),
            ],
            false,
        );
        assert_eq!(
            text,
            "partial\n== failed: process_exit: pi exited with code 1\n   pi exited with code 1\n   stderr (end):\n   | noise\n   | Error: Unknown model\n   invalid stdout lines: 4\n   line 2 (5 bytes): not JSON: oops!\n   ... and 3 more not kept\n"
        );
    }

    #[test]
    fn colour_only_when_asked() {
        let msgs = [
            Message::AssistantThought { text: "hm".into() },
            Message::TerminalCancelled {
                exit: Some(ExitInfo {
                    code: Some(143),
                    signal: None,
                }),
            },
        ];
        let plain = render_all(&msgs, false);
        assert_eq!(
            plain,
            "thinking| hm\n== cancelled (pi exited with code 143)\n"
        );
        let coloured = render_all(&msgs, true);
        assert!(
            coloured.contains("\x1b[2mthinking| hm\x1b[0m"),
            "{coloured:?}"
        );
        assert!(coloured.contains("\x1b[33m== cancelled"), "{coloured:?}");
    }

    #[test]
    fn retries_are_announced() {
        let m = Message::RetryScheduled {
            source: RetrySource::Caller,
            attempt: 2,
            max_attempts: 3,
            delay_ms: 1500,
            error: "503 Service Unavailable".into(),
        };
        assert_eq!(
            render_all(&[m], false),
            "~~ retrying (the answer above is discarded): attempt 2/3 in 1.5 s: 503 Service Unavailable\n"
        );
    }

    #[test]
    fn tool_updates_show_only_new_output() {
        let upd = |t: &str| Message::ToolUpdate {
            id: "c".into(),
            partial: json!({"content": [{"type": "text", "text": t}]}).into(),
        };
        let msgs = [
            upd(""),
            upd("hi\n"),
            upd("hi\nthere\n"),
            Message::ToolCompleted {
                id: "c".into(),
                result: json!({"content": [{"type": "text", "text": "hi\nthere\n"}]}).into(),
            },
            Message::ToolFailed {
                id: "d".into(),
                error: json!("boom").into(),
            },
        ];
        assert_eq!(
            render_all(&msgs, false),
            "   | hi\n   | there\n<- tool c done\n<- tool d failed: boom\n"
        );
    }

    #[test]
    fn long_tool_output_is_cut() {
        let many: String = (0..20).map(|i| format!("line {i}\n")).collect();
        let text = render_all(
            &[Message::ToolCompleted {
                id: "c".into(),
                result: json!(many).into(),
            }],
            false,
        );
        assert!(text.contains("line 7\n   ... (12 more lines)\n"), "{text}");
        assert!(!text.contains("line 8"));
    }
}
