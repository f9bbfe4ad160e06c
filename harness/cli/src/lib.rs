//! The `pi-harness` command: argument parsing, rendering, exit statuses.
//!
//! `main.rs` is one line; [`main`] parses (clap) and dispatches to the library crates. Each
//! command with logic of its own lives in a module here so that it can be tested without a
//! process: [`run`] (the reference provider from a shell), [`map`] (the mapper over captured
//! stdout or a cassette), [`render`] (the human rendering of the normalized stream),
//! [`cassette_cmd`] (`cassette import` and `lint`), [`show`] (`cassette show`: what a
//! cassette expects and how to replay it), [`relax`] (`cassette relax`: fields a replay
//! stops comparing), [`leftovers`] (the leftover-process check),
//! [`serve_llm`] (the scripted LLM server), [`record_mode`] (`record --record-mode`: record
//! when missing, re-record into a pending file) and [`review`] (`cassette review`),
//! [`install`] (the real agent CLIs from npm, as the registry's rows say), [`timeline`] (a run
//! as one HTML page: `cassette show --html`) and [`html_out`] (writing it, never through a link).
//! What they share has a module each: [`exit`] (the exit-status table), [`error`] (the one
//! user error, [`CliError`], and clap's errors as one line), [`values`] (durations and `K=V`
//! pairs), [`agents`] (`--agent`'s values and the help texts that list agents, from the
//! registry) and [`stdout`] (printing through a closed pipe, colour).
//!
//! ```
//! use std::time::Duration;
//! use pi_harness::{parse_duration, parse_env_pair};
//!
//! assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
//! assert!(parse_duration("5x").unwrap_err().contains("a duration like 500ms"));
//! assert_eq!(parse_env_pair("A=b=c"), Ok(("A".into(), "b=c".into())));
//! ```

// The command-line program: printing to stdout and stderr is its job (libraries below it
// return what they have to say).
#![allow(clippy::print_stdout, clippy::print_stderr)]

pub mod agents;
mod app;
pub mod cassette_cmd;
pub mod error;
pub mod exit;
pub mod fds;
pub mod html_out;
pub mod install;
pub mod leftovers;
pub mod map;
pub mod map_html;
pub mod pinned;
pub mod record_mode;
pub mod relax;
pub mod render;
pub mod report_cmd;
pub mod review;
pub mod run;
pub mod serve_llm;
pub mod show;
pub mod stdout;
pub mod timeline;
pub mod values;

pub use app::main;
pub(crate) use error::one_line;
pub use error::{clap_one_line, exit_on_clap_error, CliError};
pub use exit::{EXIT_CANCELLED, EXIT_FAILED, EXIT_OK, EXIT_USAGE};
pub use stdout::{say, use_color};
pub use values::{parse_duration, parse_env_pair, MAX_DURATION};
