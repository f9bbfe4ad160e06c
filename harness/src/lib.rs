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

pub mod cassette;
pub mod framing;
pub mod import;
pub mod lint;
pub mod mapper;
pub mod message;
pub mod pi_cli;
