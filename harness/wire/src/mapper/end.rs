//! How a run ended, as the caller saw it: [`StreamEnd`] and its [`EndCause`], what
//! [`Mapper::finish`](super::Mapper::finish) turns into the one terminal message.

use crate::message::{ExitInfo, FailureReason};

/// How the run ended, as the caller (the provider) saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamEnd {
    /// How the process ended, when it ended (and was reaped).
    pub exit: Option<ExitInfo>,
    /// The end of its stderr; a failure message quotes the last line.
    pub stderr_tail: Option<String>,
    /// Why the stream ended.
    pub cause: EndCause,
}

impl StreamEnd {
    /// stdout closed and the process ended this way.
    pub fn eof(exit: Option<ExitInfo>) -> Self {
        StreamEnd {
            exit,
            stderr_tail: None,
            cause: EndCause::Eof,
        }
    }

    /// The end a replay of a recording reaches: after EOF, pi's exit code (`Some(code)`)
    /// or death by a signal (`signal`); neither is a process that hung and that a caller
    /// ends by cancelling. `stderr` is what the process wrote there (none when empty).
    pub fn recorded(code: Option<i32>, signal: Option<&str>, stderr: &[u8]) -> Self {
        let stderr_tail =
            (!stderr.is_empty()).then(|| String::from_utf8_lossy(stderr).into_owned());
        let (exit, cause) = match (code, signal) {
            (None, None) => (None, EndCause::Cancelled),
            (code, signal) => (
                Some(ExitInfo {
                    code,
                    signal: signal.map(str::to_string),
                }),
                EndCause::Eof,
            ),
        };
        StreamEnd {
            exit,
            stderr_tail,
            cause,
        }
    }
}

/// Why the stream ended.
#[derive(Debug, Clone, PartialEq)]
pub enum EndCause {
    /// stdout closed, the process ended.
    Eof,
    /// The caller cancelled the run.
    Cancelled,
    /// Provider-side failure: spawn failed, timeout, output limit.
    Failed {
        /// The reason `terminal.failed` gives.
        reason: FailureReason,
        /// Its message.
        message: String,
    },
}
