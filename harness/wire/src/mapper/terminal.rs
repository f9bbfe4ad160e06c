//! Terminal truth: how [`StreamEnd`] and what the run said (its last stop reason and
//! error, `agent_end`/`agent_settled`, an abort) become exactly one terminal message, with
//! the bad lines kept for a failure.

use super::end::{EndCause, StreamEnd};
use super::state::State;
use crate::diagnostics::last_line;
use crate::message::{ExitInfo, Failure, FailureReason, Message};

impl State {
    pub(super) fn finish(&mut self, end: StreamEnd, out: &mut Vec<Message>) {
        self.finished = true;
        self.close_unfinished();
        self.release_all(out);
        self.drain_thoughts(out);
        let StreamEnd {
            exit,
            stderr_tail,
            cause,
        } = end;
        let (reason, message) = match cause {
            EndCause::Cancelled => {
                out.push(Message::TerminalCancelled { exit });
                return;
            }
            EndCause::Failed { reason, message } => (reason, message),
            EndCause::Eof if self.end_seen => match self.last_stop.as_deref() {
                Some("aborted") => (
                    FailureReason::Aborted,
                    self.last_error
                        .clone()
                        .unwrap_or_else(|| "the run was aborted".into()),
                ),
                // pi 1.1.0+ says so in agent_settled, whatever the last message says (an
                // abort during a tool or a retry's wait leaves `toolUse` or `error` there).
                _ if self.aborted => (
                    FailureReason::Aborted,
                    match &self.last_error {
                        Some(e) => format!("the run was aborted (agent_settled.aborted): {e}"),
                        None => "the run was aborted (agent_settled.aborted)".into(),
                    },
                ),
                Some("error") => (
                    FailureReason::ModelError,
                    self.last_error
                        .clone()
                        .unwrap_or_else(|| "the model call failed (no errorMessage)".into()),
                ),
                stop => {
                    out.push(Message::TerminalCompleted {
                        stop_reason: stop.unwrap_or("none").to_string(),
                        usage: self.usage.clone(),
                    });
                    return;
                }
            },
            EndCause::Eof => {
                let last = stderr_tail.as_deref().and_then(last_line);
                let with_stderr = |s: String| match last {
                    Some(l) => format!("{s}: {l}"),
                    None => s,
                };
                match &exit {
                    Some(ExitInfo {
                        signal: Some(sig), ..
                    }) => (
                        FailureReason::ProcessSignal,
                        with_stderr(format!("pi was killed by {sig} before the run ended")),
                    ),
                    Some(ExitInfo {
                        code: Some(c), ..
                    }) if *c != 0 => (
                        FailureReason::ProcessExit,
                        with_stderr(format!("pi exited with code {c}")),
                    ),
                    _ => (
                        FailureReason::MissingTerminalEvent,
                        "pi's stdout ended without the event that ends a run (agent_end not followed by a retry, or agent_settled)".to_string(),
                    ),
                }
            }
        };
        out.push(Message::TerminalFailed(Failure {
            reason,
            message,
            exit,
            stderr_tail,
            invalid_lines: self.invalid.take(),
            invalid_lines_dropped: self.invalid.dropped(),
        }));
    }
}
