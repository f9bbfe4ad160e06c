//! fake-pi's integration tests, one binary: fake-pi as a real subprocess, module by module.
//! `real_pi_parity` compares it with real pi when `PI_HARNESS_REAL_PI*` name real pi
//! binaries (`cargo test -p fake-pi --test it real_pi_parity -- --nocapture`); without them
//! it prints a skip line.

mod claude;
mod cli;
mod codex;
mod codex_corpus;
mod contract;
mod gemini;
mod gemini_corpus;
mod hints;
mod hostile_config;
mod memory;
mod process;
mod real_codex_parity;
mod real_gemini_parity;
mod real_pi_parity;
mod relax;
mod replay_corpus;
mod report;
mod rpc;
mod secrets;
mod set_up;
mod shape;
mod signal_masks;
mod streaming;
mod timeline;
mod util;
