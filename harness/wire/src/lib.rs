//! Turns the bytes `pi --mode json` writes into the normalized stream: pure, no I/O, no
//! clock.
//!
//! pi's stdout is a private JSONL stream whose shape changes between releases (pi 0.73.1
//! streams quadratically large snapshots beside its deltas, 0.87.1 deltas only, 1.x adds
//! nested tool calls, structured tool results and aborted runs). This crate owns the rules
//! that turn it, in any chunking, into a small stable stream of [`message::Message`]s
//! ending in exactly one terminal message:
//!
//! - [`framing`]: bytes to lines (`\n` only, a line cap that never buffers past itself);
//! - [`mapper`]: lines to messages ([`mapper::Mapper`], fed with `push` and ended with
//!   `finish` and a [`mapper::StreamEnd`] saying how the process ended);
//! - [`claude`]: Claude Code's `stream-json` stdout to messages ([`claude::ClaudeMapper`], a run per turn);
//! - [`codex`]: Codex CLI's `exec --json` stdout to messages ([`codex::CodexMapper`], a run per process);
//! - [`gemini`]: Gemini CLI's `stream-json` stdout to messages ([`gemini::GeminiMapper`], a run per process);
//! - `diagnostics`: the bad lines the mappers keep for a failed run, within bounds, and the
//!   stderr line a failure message quotes;
//! - [`message`]: the normalized messages themselves (serde, one JSON object each), the
//!   contract every implementation targets (`docs/normalized-stream.md`);
//! - [`json`]: the tool payloads those messages pass through ([`json::Json`], kept as the
//!   validated text pi wrote and parsed on demand);
//! - [`secret`]: one secret (the caller's API key) kept out of the stream, however pi
//!   echoes it.
//!
//! The process side (spawning pi, supervision, cancellation) is `pi-provider`'s; this crate
//! depends on nothing but serde and memchr.
//!
//! ```
//! use pi_wire::mapper::{map_all, MapperOptions, StreamEnd};
//! use pi_wire::message::{ExitInfo, Message};
//!
//! let stdout = br#"{"type":"session","version":3,"id":"s-1","timestamp":"T","cwd":"/w"}
//! {"type":"message_start","message":{"role":"assistant","content":[]}}
//! {"type":"message_update","assistantMessageEvent":{"type":"text_delta","contentIndex":0,"delta":"Hel"}}
//! {"type":"message_update","assistantMessageEvent":{"type":"text_delta","contentIndex":0,"delta":"lo"}}
//! {"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"Hello"}],"stopReason":"stop"}}
//! {"type":"agent_end","messages":[]}
//! "#;
//! // pi exited 0 after writing that.
//! let end = StreamEnd::eof(Some(ExitInfo { code: Some(0), signal: None }));
//! let messages = map_all(stdout, end, MapperOptions::default());
//!
//! let text: String = messages
//!     .iter()
//!     .filter_map(|m| match m {
//!         Message::Assistant { text } => Some(text.as_str()),
//!         _ => None,
//!     })
//!     .collect();
//! assert_eq!(text, "Hello");
//! assert!(matches!(messages.first(), Some(Message::SessionStarted { session_id }) if session_id == "s-1"));
//! assert!(matches!(messages.last(), Some(Message::TerminalCompleted { .. })));
//! ```

pub mod claude;
pub mod codex;
mod diagnostics;
pub mod framing;
pub mod gemini;
pub mod json;
pub mod mapper;
pub mod message;
pub mod secret;
