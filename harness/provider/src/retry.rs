//! Retry at the caller: attempts of the single-attempt [`Provider`] under a policy.
//!
//! The provider never retries. This layer runs attempts with exponential backoff and jitter,
//! decides with [`classify`] whether a failed attempt is worth another, and announces each new
//! attempt on the stream as `retry.scheduled` with `source: caller`. Messages of a failed
//! attempt are forwarded as they came (a consumer that shows text should discard the partial
//! answer when it sees `retry.scheduled` from the caller); only the failed attempt's terminal
//! is replaced. pi's own retries (`source: pi`) pass through untouched.

use std::time::Duration;

use futures_core::Stream;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::StreamExt;
use tokio_util::sync::CancellationToken;

use crate::provider::Provider;
use crate::request::Request;
use pi_wire::message::{Failure, FailureReason, Message, RetrySource};

/// How many attempts and how far apart.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included (1 = no retry).
    pub max_attempts: u32,
    /// Delay before the second attempt; doubled for each further one.
    pub base_delay: Duration,
    /// Upper bound of any delay.
    pub max_delay: Duration,
    /// Fraction of each delay drawn at random (0 = none, 0.5 = "equal jitter").
    pub jitter: f64,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 3,
            base_delay: Duration::from_secs(2),
            max_delay: Duration::from_secs(30),
            jitter: 0.5,
        }
    }
}

impl RetryPolicy {
    /// The delay before attempt `next` (2 = the first retry). `unit` in `[0, 1)` is the random draw.
    pub fn delay(&self, next: u32, unit: f64) -> Duration {
        let exp = next.saturating_sub(2).min(32);
        let full = self
            .base_delay
            .saturating_mul(1u32 << exp.min(31))
            .min(self.max_delay);
        let jitter = self.jitter.clamp(0.0, 1.0);
        let fixed = full.mul_f64(1.0 - jitter);
        fixed + full.mul_f64(jitter * unit.clamp(0.0, 1.0))
    }
}

/// Whether a failed attempt deserves another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Another attempt may succeed.
    Retry,
    /// Another attempt would fail the same way (or the run was cancelled).
    GiveUp,
}

/// Decide from the failure: network trouble, 5xx, overload, rate limits, death by a signal and
/// a stream cut before its end event are worth another attempt; authentication (401/403), an
/// unknown model, command-line errors, bad requests and spawn failures are not, and neither is
/// a cancellation (it is not a failure at all).
pub fn classify(f: &Failure) -> Verdict {
    use FailureReason::*;
    match f.reason {
        ProcessSignal | MissingTerminalEvent | Timeout => Verdict::Retry,
        SpawnFailed | InvalidRequest | OutputLimit | ProcessExit | Aborted => Verdict::GiveUp,
        ModelError => classify_message(&f.message),
    }
}

/// Classify pi's `errorMessage` text.
pub fn classify_message(message: &str) -> Verdict {
    let m = message.to_ascii_lowercase();
    let permanent = [
        "401",
        "403",
        "unauthorized",
        "forbidden",
        "invalid api key",
        "invalid_api_key",
        "authentication",
        "permission",
        "model not found",
        "unknown model",
        "no api key",
        "not found",
    ];
    if permanent.iter().any(|p| m.contains(p)) {
        return Verdict::GiveUp;
    }
    let transient = [
        "overloaded",
        "rate limit",
        "rate_limit",
        "429",
        "500",
        "502",
        "503",
        "504",
        "529",
        "timeout",
        "timed out",
        "econnreset",
        "econnrefused",
        "network",
        "connection",
        "socket hang up",
        "fetch failed",
        "terminated",
        "internal server error",
        "bad gateway",
        "service unavailable",
        "upstream",
    ];
    if transient.iter().any(|p| m.contains(p)) || m.split(|c: char| !c.is_ascii_digit()).any(is_5xx)
    {
        Verdict::Retry
    } else {
        Verdict::GiveUp
    }
}

fn is_5xx(word: &str) -> bool {
    word.len() == 3 && word.starts_with('5')
}

/// Run `request` with retries. The stream ends with exactly one terminal: the last attempt's.
pub fn execute_with_retry(
    provider: Provider,
    request: Request,
    policy: RetryPolicy,
    cancel: CancellationToken,
) -> impl Stream<Item = Message> + Send + 'static {
    let (tx, rx) = mpsc::channel(256);
    tokio::spawn(async move {
        let mut attempt = 1;
        loop {
            let mut stream = std::pin::pin!(provider.execute(request.clone(), cancel.clone()));
            let mut terminal = None;
            while let Some(m) = stream.next().await {
                if m.is_terminal() {
                    terminal = Some(m);
                    break;
                }
                if tx.send(m).await.is_err() {
                    return; // consumer gone; dropping `stream` stops the attempt
                }
            }
            let terminal = terminal.unwrap_or(Message::TerminalCancelled { exit: None });
            let retry = match &terminal {
                Message::TerminalFailed(f)
                    if attempt < policy.max_attempts && !cancel.is_cancelled() =>
                {
                    (classify(f) == Verdict::Retry).then(|| f.message.clone())
                }
                _ => None,
            };
            let Some(error) = retry else {
                let _ = tx.send(terminal).await;
                return;
            };
            attempt += 1;
            let delay = policy.delay(attempt, fastrand::f64());
            let note = Message::RetryScheduled {
                source: RetrySource::Caller,
                attempt,
                max_attempts: policy.max_attempts,
                delay_ms: delay.as_millis() as u64,
                error,
            };
            if tx.send(note).await.is_err() {
                return;
            }
            tokio::select! {
                _ = tokio::time::sleep(delay) => {}
                _ = cancel.cancelled() => {
                    let _ = tx.send(Message::TerminalCancelled { exit: None }).await;
                    return;
                }
                _ = tx.closed() => return,
            }
        }
    });
    ReceiverStream::new(rx)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failure(reason: FailureReason, message: &str) -> Failure {
        Failure {
            reason,
            message: message.into(),
            exit: None,
            stderr_tail: None,
            invalid_lines: vec![],
            invalid_lines_dropped: 0,
        }
    }

    #[test]
    fn classifier_table() {
        use FailureReason::*;
        let cases = [
            (ModelError, "500 upstream boom", Verdict::Retry),
            (ModelError, "503 Service Unavailable", Verdict::Retry),
            (ModelError, "429 Too Many Requests", Verdict::Retry),
            (ModelError, "Overloaded", Verdict::Retry),
            (ModelError, "Connection error.", Verdict::Retry),
            (ModelError, "fetch failed", Verdict::Retry),
            (ModelError, "401 invalid api key", Verdict::GiveUp),
            (ModelError, "403 Forbidden", Verdict::GiveUp),
            (ModelError, "Model not found: gpt-9", Verdict::GiveUp),
            (ModelError, "something odd", Verdict::GiveUp),
            (ProcessSignal, "killed", Verdict::Retry),
            (MissingTerminalEvent, "stream ended", Verdict::Retry),
            (ProcessExit, "Error: Unknown option: --x", Verdict::GiveUp),
            (SpawnFailed, "No such file", Verdict::GiveUp),
            (InvalidRequest, "bad thinking level", Verdict::GiveUp),
        ];
        for (reason, msg, want) in cases {
            assert_eq!(classify(&failure(reason, msg)), want, "{reason:?} {msg:?}");
        }
    }

    #[test]
    fn backoff_doubles_and_is_capped() {
        let p = RetryPolicy {
            max_attempts: 10,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(1000),
            jitter: 0.0,
        };
        let d: Vec<u128> = (2..=7).map(|n| p.delay(n, 0.7).as_millis()).collect();
        assert_eq!(d, vec![100, 200, 400, 800, 1000, 1000]);
        let j = RetryPolicy { jitter: 0.5, ..p };
        assert_eq!(j.delay(3, 0.0).as_millis(), 100);
        assert_eq!(j.delay(3, 0.999_999).as_millis(), 199);
    }
}
