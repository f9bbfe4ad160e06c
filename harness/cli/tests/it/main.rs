//! The integration tests of `pi-harness`, one binary: each module runs the command as a
//! user does (a real process, against fake-pi or real pi), `util` holds what they share.
//!
//! The modules share one process: nothing here changes process-wide state (environment,
//! signal dispositions, rlimits, cwd); every child process carries its world's marker, and a
//! descriptor a child must not inherit (a pty) is opened close-on-exec.

// Tests say what they skipped (real pi not installed) and what they measured.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod util;

mod ci_notice;
mod ci_run;
mod cli_agents;
mod cli_cassette;
mod cli_import_agents;
mod cli_install;
mod cli_leftovers;
mod cli_map;
mod cli_record;
mod cli_record_codex;
mod cli_record_gemini;
mod cli_record_mode;
mod cli_record_names;
mod cli_run;
mod cli_serve_llm;
mod cli_setup;
mod cli_show;
mod closed_stdout;
mod codex_run;
mod corpus_clients;
mod gemini_run;
mod lint_bounds;
mod memory;
mod memory_whole;
mod one_reader;
mod readme;
mod real_codex_record;
mod real_gemini_record;
mod real_pi_faults;
mod real_pi_record;
mod real_unverified;
mod record_secrets;
mod timeline;
mod timeline_browser;
mod unverified;
