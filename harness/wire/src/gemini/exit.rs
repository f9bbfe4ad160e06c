//! How a Gemini CLI process's end decides its terminal, in one place: the `result` line
//! when there is one, whatever the exit status; otherwise the exit status, read with the
//! table of Gemini's exit codes (measured on 0.61.0, and its `FatalError` classes).
//!
//! | stdout ends with | exit | terminal |
//! |---|---|---|
//! | `result` `success` | any | `terminal.completed` |
//! | `result` `error` | any: 144 (HTTP 400 & 255), 244 (HTTP 500 & 255), 1, even 0 | `terminal.failed` `model_error`, the result's message |
//! | no `result` | killed by a signal | `process_signal` |
//! | no `result` | a non-zero code | `process_exit`, the code's meaning when known |
//! | no `result` | 0: what a signal to Gemini's process group gives (measured: exit 0 about 50 ms later) | `missing_terminal_event` |
//! | no `result` | unknown | `missing_terminal_event` |

use crate::message::{ExitInfo, FailureReason};

/// How the last `result` line ended the run.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Outcome {
    /// `status: "success"`.
    Completed,
    /// Any other status, with the error's message.
    Failed(String),
}

/// What a run's end comes to, before the terminal message is made.
#[derive(Debug, PartialEq)]
pub(super) enum Verdict {
    /// The run completed.
    Completed,
    /// The run failed, with this reason and message.
    Failed(FailureReason, String),
}

/// Gemini's documented exit codes (its `FatalError` classes); any other code from 144 to
/// 255 is an HTTP status & 255 (measured: a model error exits so, not with the
/// documented 1).
const DOCUMENTED: &[(i32, &str)] = &[
    (1, "a general error"),
    (41, "an authentication error"),
    (42, "an input error"),
    (44, "a sandbox error"),
    (52, "a configuration error"),
    (53, "the session's turn limit"),
    (54, "a fatal tool error"),
    (130, "cancelled"),
];

/// What Gemini means by exit code `code`, when known.
pub(super) fn code_meaning(code: i32) -> Option<String> {
    if let Some((_, meaning)) = DOCUMENTED.iter().find(|(c, _)| *c == code) {
        return Some((*meaning).to_string());
    }
    (144..=255)
        .contains(&code)
        .then(|| format!("HTTP {} & 255, a model error", code + 256))
}

/// The end of a run: the `result`'s outcome first, whatever the exit; then the exit.
/// `detail` (the last `error` event, or the last stderr line that is not noise) is added
/// to a failure without a `result`.
pub(super) fn verdict(
    outcome: Option<&Outcome>,
    exit: Option<&ExitInfo>,
    detail: Option<&str>,
) -> Verdict {
    match outcome {
        Some(Outcome::Completed) => return Verdict::Completed,
        Some(Outcome::Failed(message)) => {
            return Verdict::Failed(FailureReason::ModelError, message.clone())
        }
        None => {}
    }
    let with_detail = |s: String| match detail {
        Some(d) => format!("{s}: {d}"),
        None => s,
    };
    let (reason, message) = match exit {
        Some(ExitInfo {
            signal: Some(sig), ..
        }) => (
            FailureReason::ProcessSignal,
            with_detail(format!("gemini was killed by {sig} before its `result`")),
        ),
        Some(ExitInfo { code: Some(c), .. }) if *c != 0 => {
            let code = match code_meaning(*c) {
                Some(meaning) => format!("gemini exited with code {c} ({meaning})"),
                None => format!("gemini exited with code {c}"),
            };
            (FailureReason::ProcessExit, with_detail(code))
        }
        Some(ExitInfo { code: Some(_), .. }) => (
            FailureReason::MissingTerminalEvent,
            with_detail(
                "gemini exited 0 without a `result` line (as it does when its process group is signalled)"
                    .to_string(),
            ),
        ),
        _ => (
            FailureReason::MissingTerminalEvent,
            with_detail("gemini's stdout ended without a `result` line".to_string()),
        ),
    };
    Verdict::Failed(reason, message)
}
