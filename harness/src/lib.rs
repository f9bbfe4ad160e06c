//! pi-harness: record/replay test harness, reference provider and conformance suite
//! for programs that drive the pi coding agent CLI headless (`pi --mode json`).
//!
//! Modules, one concept each:
//! - [`cassette`]: the recorded-run format (v1), read and written.
//! - [`message`]: the normalized message stream every provider emits.
//! - [`import`]: captured pi stdout -> cassette (`pi-harness cassette import`).
//! - [`lint`]: cassette checks reported as `file:line: what` (`pi-harness cassette lint`).
//! - [`pi_cli`]: real pi's command-line grammar per version (flags, errors, stdin join).
//! - [`framing`]: pi's stdout bytes to lines (any chunking, line cap).
//! - [`mapper`]: pi's JSONL events to the normalized stream (pure, synchronous).
//! - [`llm_script`]: what the scripted LLM answers, rendered to SSE bytes.
//! - [`llm_server`]: the scripted LLM server on loopback, with its request log.
//! - [`redact`]: turning run-specific values into stable placeholders.
//! - [`procs`]: child subreaper and `/proc` process-tree snapshots.
//! - [`recorder`]: recording real pi into a cassette.
//! - [`corpus`]: the corpus manifest and re-recording it.
//! - [`drift`]: comparing fresh and committed recordings.

pub mod cassette;
pub mod corpus;
pub mod drift;
pub mod framing;
pub mod import;
pub mod lint;
pub mod llm_script;
pub mod llm_server;
pub mod mapper;
pub mod message;
pub mod pi_cli;
pub mod procs;
pub mod recorder;
pub mod redact;
