//! pi-harness: record/replay test harness, reference provider and conformance suite
//! for programs that drive the pi coding agent CLI headless (`pi --mode json`).
//!
//! Modules, one concept each:
//! - [`cassette`]: the recorded-run format (v1), read and written.
//! - [`message`]: the normalized message stream every provider emits.
//! - [`cli`]: the `run` and `map` commands of the `pi-harness` binary.
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
//! - [`mapper`]: pi's JSONL to the normalized stream (pure, no I/O).
//! - [`provider`]: one supervised run of pi as a stream of normalized messages.
//! - [`supervisor`]: the subreaper process that owns pi's process tree.
//! - [`retry`]: attempts of the provider under a policy, at the caller.
//! - [`conform`]: the conformance runner (cases, request document, handshake, comparison, report).

pub mod cassette;
pub mod cli;
pub mod conform;
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
pub mod provider;
pub mod recorder;
pub mod redact;
pub mod retry;
pub mod supervisor;
