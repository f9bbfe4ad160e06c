//! The normalized message stream, v1 (see `docs/normalized-stream.md`).
//!
//! This module owns the serde types every implementation targets: one JSON object
//! per message, tagged by `type`. It holds no logic beyond small helpers.

use serde::{Deserialize, Serialize};

pub use crate::json::Json;

/// Version of the normalized stream described here.
pub const STREAM_VERSION: u32 = 1;

/// One message of the normalized stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", deny_unknown_fields)]
pub enum Message {
    /// A new session began (pi's `session` header line).
    #[serde(rename = "session.started")]
    SessionStarted {
        /// pi's id of the session.
        session_id: String,
    },
    /// An existing session was continued.
    #[serde(rename = "session.resumed")]
    SessionResumed {
        /// pi's id of the session.
        session_id: String,
    },
    /// A piece of the assistant's answer text. Concatenated per assistant message,
    /// the pieces equal that message's final text.
    #[serde(rename = "assistant")]
    Assistant {
        /// The new text, never empty.
        text: String,
    },
    /// One whole thinking block, emitted after the answer it belongs to.
    #[serde(rename = "assistant.thought")]
    AssistantThought {
        /// The block's whole thinking text.
        text: String,
    },
    /// The model asked for a tool, with complete arguments.
    #[serde(rename = "tool.call")]
    ToolCall {
        /// The call's id, unique in the run; the later tool messages name it.
        id: String,
        /// The tool's name (`bash`, `read`, ...).
        name: String,
        /// The arguments as the model gave them.
        arguments: Json,
    },
    /// A tool's partial result (only when it changed).
    #[serde(rename = "tool.update")]
    ToolUpdate {
        /// The call's id.
        id: String,
        /// The partial result as the tool reported it.
        partial: Json,
    },
    /// A tool ended with a result.
    #[serde(rename = "tool.completed")]
    ToolCompleted {
        /// The call's id.
        id: String,
        /// The result as the tool returned it.
        result: Json,
    },
    /// A tool ended with an error.
    #[serde(rename = "tool.failed")]
    ToolFailed {
        /// The call's id.
        id: String,
        /// The error as the tool returned it.
        error: Json,
    },
    /// A retry is coming: pi's own (`source: pi`) or the caller's retry layer (`source: caller`).
    #[serde(rename = "retry.scheduled")]
    RetryScheduled {
        /// Who retries.
        source: RetrySource,
        /// The attempt that is coming (1 for the first retry).
        attempt: u32,
        /// The most attempts that will be made.
        max_attempts: u32,
        /// How long before the attempt starts, in milliseconds.
        delay_ms: u64,
        /// The error of the attempt that failed.
        error: String,
    },
    /// Token usage of one assistant message.
    #[serde(rename = "usage")]
    Usage(Usage),
    /// The run ended normally (last in the stream).
    #[serde(rename = "terminal.completed")]
    TerminalCompleted {
        /// The last assistant message's stop reason (`stop`, `length`, ...; `none` when
        /// there was none).
        stop_reason: String,
        /// Sum over every assistant message of the run.
        usage: Usage,
    },
    /// The run failed (last in the stream).
    #[serde(rename = "terminal.failed")]
    TerminalFailed(Failure),
    /// The caller cancelled the run (last in the stream).
    #[serde(rename = "terminal.cancelled")]
    TerminalCancelled {
        /// How the process ended after the cancel, when it was started at all.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit: Option<ExitInfo>,
    },
}

impl Message {
    /// True for the three terminal messages.
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            Message::TerminalCompleted { .. }
                | Message::TerminalFailed(_)
                | Message::TerminalCancelled { .. }
        )
    }

    /// The `type` tag as it appears on the wire.
    pub fn kind(&self) -> &'static str {
        match self {
            Message::SessionStarted { .. } => "session.started",
            Message::SessionResumed { .. } => "session.resumed",
            Message::Assistant { .. } => "assistant",
            Message::AssistantThought { .. } => "assistant.thought",
            Message::ToolCall { .. } => "tool.call",
            Message::ToolUpdate { .. } => "tool.update",
            Message::ToolCompleted { .. } => "tool.completed",
            Message::ToolFailed { .. } => "tool.failed",
            Message::RetryScheduled { .. } => "retry.scheduled",
            Message::Usage(_) => "usage",
            Message::TerminalCompleted { .. } => "terminal.completed",
            Message::TerminalFailed(_) => "terminal.failed",
            Message::TerminalCancelled { .. } => "terminal.cancelled",
        }
    }
}

/// Who retries a failed model call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RetrySource {
    /// pi retried on its own (`auto_retry_start`).
    Pi,
    /// The caller's retry layer (`pi_provider::retry`) starts a new attempt.
    Caller,
}

/// Token counts and cost, summed where a message covers several model calls.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Usage {
    /// Input tokens not read from the cache.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Input tokens read from the provider's prompt cache.
    pub cache_read_tokens: u64,
    /// Input tokens written to the provider's prompt cache.
    pub cache_write_tokens: u64,
    /// All tokens, as the agent counts them.
    pub total_tokens: u64,
    /// Cost in US dollars, as the agent reports it (0 when it does not).
    pub cost_usd: f64,
}

impl Usage {
    /// Adds `other`'s counts and cost to these.
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_read_tokens += other.cache_read_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
        self.total_tokens += other.total_tokens;
        self.cost_usd += other.cost_usd;
    }
}

/// Why a run failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureReason {
    /// The last assistant message ended with `stopReason: "error"` (pi still exits 0).
    ModelError,
    /// The last assistant message ended with `stopReason: "aborted"`.
    Aborted,
    /// stdout ended without the event that ends a run (`agent_end` not followed by a retry, or `agent_settled`).
    MissingTerminalEvent,
    /// pi exited with a non-zero code (CLI usage errors: unknown option, model not found, ...).
    ProcessExit,
    /// pi died by a signal.
    ProcessSignal,
    /// The child could not be started (missing binary, no permission, ...).
    SpawnFailed,
    /// The request could not be turned into a valid pi command line for this pi version.
    InvalidRequest,
    /// The optional total-output cap was reached.
    OutputLimit,
    /// The caller's timeout expired.
    Timeout,
}

/// How the process ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExitInfo {
    /// Exit code, when the process exited (not when it died by a signal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<i32>,
    /// Signal name (`SIGKILL`) when the process died by a signal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<String>,
}

/// A stdout line that was not a usable event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InvalidLine {
    /// 1-based line number in pi's stdout.
    pub line: u64,
    /// Length of the whole line in bytes.
    pub bytes: u64,
    /// What was wrong (`not JSON: ...`, `not an object`, `no "type"`, `over the line cap`, ...).
    pub problem: String,
    /// The start of the line, lossily decoded, at most a few hundred bytes.
    pub excerpt: String,
}

/// The payload of `terminal.failed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Failure {
    /// Why the run failed.
    pub reason: FailureReason,
    /// A one-line explanation for people.
    pub message: String,
    /// How the process ended, when it ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit: Option<ExitInfo>,
    /// The end of pi's stderr (bounded, secrets redacted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stderr_tail: Option<String>,
    /// Bad stdout lines, bounded in count and bytes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub invalid_lines: Vec<InvalidLine>,
    /// How many bad lines were not kept because the bound was reached.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub invalid_lines_dropped: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}
