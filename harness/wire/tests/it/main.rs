//! pi-wire's integration tests, one binary: each module is what used to be a test file of
//! its own (`tests/<module>.rs`). The captures they read stay in `tests/data/`; insta's
//! snapshots are in `tests/it/snapshots/`.

mod claude;
mod codex;
mod codex_corpus;
mod gemini;
mod gemini_corpus;
mod mapper;
mod mapper_props;
mod mapper_snapshots;
mod secret_props;
