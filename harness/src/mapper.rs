//! TEMPORARY stand-in for the mapper (the real one is developed on the `mapper` branch);
//! only the public API matters here. Replaced at merge.

use crate::message::{ExitInfo, Failure, FailureReason, Message, Usage};

#[derive(Debug, Clone)]
pub struct MapperOptions {
    pub max_line_bytes: usize,
    pub max_invalid_lines: usize,
    pub max_invalid_bytes: usize,
    pub resumed_session: bool,
}

impl Default for MapperOptions {
    fn default() -> Self {
        MapperOptions {
            max_line_bytes: 16 << 20,
            max_invalid_lines: 32,
            max_invalid_bytes: 16 << 10,
            resumed_session: false,
        }
    }
}

#[derive(Debug, Clone)]
pub struct StreamEnd {
    pub exit: Option<ExitInfo>,
    pub stderr_tail: Option<String>,
    pub cause: EndCause,
}

#[derive(Debug, Clone)]
pub enum EndCause {
    Eof,
    Cancelled,
    Failed {
        reason: FailureReason,
        message: String,
    },
}

#[derive(Debug, Default, Clone, Copy)]
pub struct MapperStats {
    pub lines: u64,
    pub bytes: u64,
    pub invalid_lines: u64,
}

#[derive(Debug, Default)]
pub struct Mapper {
    buf: Vec<u8>,
    ended: bool,
    settled: bool,
    finished: bool,
    stats: MapperStats,
}

impl Mapper {
    pub fn new(_opts: MapperOptions) -> Self {
        Mapper::default()
    }
    pub fn push(&mut self, chunk: &[u8], out: &mut Vec<Message>) {
        self.stats.bytes += chunk.len() as u64;
        self.buf.extend_from_slice(chunk);
        while let Some(i) = self.buf.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.buf.drain(..=i).collect();
            self.line(&line[..line.len() - 1], out);
        }
    }
    fn line(&mut self, line: &[u8], out: &mut Vec<Message>) {
        self.stats.lines += 1;
        let Ok(v) = serde_json::from_slice::<serde_json::Value>(line) else {
            self.stats.invalid_lines += 1;
            return;
        };
        match v["type"].as_str() {
            Some("session") => out.push(Message::SessionStarted {
                session_id: v["id"].as_str().unwrap_or_default().into(),
            }),
            Some("message_update") => {
                let e = &v["assistantMessageEvent"];
                if e["type"] == "text_delta" {
                    out.push(Message::Assistant {
                        text: e["delta"].as_str().unwrap_or_default().into(),
                    });
                }
            }
            Some("agent_end") => self.ended = true,
            Some("agent_settled") => self.settled = true,
            Some("auto_retry_start") => self.ended = false,
            _ => {}
        }
    }
    pub fn finish(&mut self, end: StreamEnd, out: &mut Vec<Message>) {
        if self.finished {
            return;
        }
        self.finished = true;
        let fail = |reason, message: String| {
            Message::TerminalFailed(Failure {
                reason,
                message,
                exit: end.exit.clone(),
                stderr_tail: end.stderr_tail.clone(),
                invalid_lines: vec![],
                invalid_lines_dropped: 0,
            })
        };
        out.push(match end.cause {
            EndCause::Cancelled => Message::TerminalCancelled {
                exit: end.exit.clone(),
            },
            EndCause::Failed {
                reason,
                ref message,
            } => fail(reason, message.clone()),
            EndCause::Eof if self.ended => Message::TerminalCompleted {
                stop_reason: "stop".into(),
                usage: Usage::default(),
            },
            EndCause::Eof => fail(FailureReason::MissingTerminalEvent, "no end event".into()),
        });
    }
    pub fn is_settled(&self) -> bool {
        self.settled
    }
    pub fn stats(&self) -> MapperStats {
        self.stats
    }
}
