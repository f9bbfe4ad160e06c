//! pi-harness: record/replay test harness, reference provider and conformance suite
//! for programs that drive the pi coding agent CLI headless (`pi --mode json`).
//!
//! Modules, one concept each:
//! - [`cassette`]: the recorded-run format (v1), read and written.
//! - [`message`]: the normalized message stream every provider emits.
//! - [`cli`]: the `run` and `map` commands of the `pi-harness` binary.
//! - [`import`]: captured pi stdout -> cassette (`pi-harness cassette import`).

pub mod cassette;
pub mod cli;
pub mod import;
pub mod mapper;
pub mod message;
pub mod procs;
pub mod provider;
pub mod retry;
pub mod supervisor;
