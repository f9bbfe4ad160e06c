//! Baselines the mapper is measured against, and the inputs of the benchmarks.
//!
//! Everything here is pure (no clock, no I/O) except [`inputs`], which loads the recorded
//! cassettes from `cassettes/recorded/`. The contenders run over the same bytes:
//!
//! - [`map_input`]: the real mapper ([`pi_wire::mapper::Mapper`]), lines in, normalized
//!   messages out;
//! - [`validate_lines`]: the floor of any JSON-validating design: split lines with `memchr`
//!   and validate each with `serde_json::from_slice::<IgnoredAny>`;
//! - [`naive_map`]: a straightforward mapper that parses each line into a
//!   `serde_json::Value` and then extracts the same information the mapper emits (session,
//!   text deltas, tool calls/updates/results, usage, terminal); it lives in the `naive`
//!   module;
//! - [`simd`]: SIMD JSON crates as contenders (sonic-rs and simd-json validating each line,
//!   sonic-rs validating and extracting what the mapper's one-pass path reads).
//!
//! ```
//! let inputs = benches::inputs().unwrap();
//! let pi87 = inputs.iter().find(|i| i.name == "long_answer_pi87").unwrap();
//! // The three contenders agree on what they read.
//! let v = benches::validate_input(pi87);
//! assert_eq!(v.invalid, 0);
//! assert!(benches::map_input(pi87) > 0 && benches::naive_input(pi87) > 0);
//! ```

use std::path::{Path, PathBuf};

use pi_cassette::Cassette;
use pi_wire::mapper::{Mapper, MapperOptions, StreamEnd};
use pi_wire::message::{ExitInfo, Message};
use serde::de::IgnoredAny;

mod naive;
pub mod simd;

pub use naive::naive_map;

/// One benchmark input: the stdout of a recorded pi run, mapped `repeat` times with fresh
/// state each time (so a small conversation can be made big enough to time without the
/// mapper seeing repeated tool ids).
#[derive(Debug, Clone)]
pub struct Input {
    /// Short name for tables and criterion ids.
    pub name: &'static str,
    /// What the input is, for the README and the ratio table.
    pub description: String,
    /// pi's stdout for one run.
    pub stdout: Vec<u8>,
    /// How many runs one iteration maps.
    pub repeat: usize,
    /// Non-empty lines (pi events) in one run.
    pub events_per_run: u64,
}

impl Input {
    /// Bytes one iteration goes through.
    pub fn total_bytes(&self) -> u64 {
        self.stdout.len() as u64 * self.repeat as u64
    }

    /// Events (non-empty lines) one iteration goes through.
    pub fn total_events(&self) -> u64 {
        self.events_per_run * self.repeat as u64
    }
}

/// How many times the tool-heavy conversation is repeated (each run mapped with fresh state).
pub const TOOL_HEAVY_REPEAT: usize = 50;

/// `cassettes/recorded/` of this workspace.
pub fn cassette_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("cassettes")
        .join("recorded")
}

/// Load one recorded cassette's stdout; the error names the file.
pub fn load_stdout(file: &str) -> Result<Vec<u8>, String> {
    let path = cassette_dir().join(file);
    Cassette::load(&path)
        .map(|c| c.stdout_bytes())
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// Non-empty lines of a byte buffer.
pub fn count_events(stdout: &[u8]) -> u64 {
    split_lines(stdout)
        .filter(|l| !l.iter().all(u8::is_ascii_whitespace))
        .count() as u64
}

/// The three benchmark inputs: the long answer of pi 0.73.1 (2001 text deltas, each line
/// carrying two full copies of the growing answer), the same answer from pi 0.87.1 (deltas
/// only), and a tool-heavy conversation (`tool_loop`, pi 0.87.1) repeated
/// [`TOOL_HEAVY_REPEAT`] times.
pub fn inputs() -> Result<Vec<Input>, String> {
    let make = |name, description: &str, file: &str, repeat| -> Result<Input, String> {
        let stdout = load_stdout(file)?;
        let events_per_run = count_events(&stdout);
        Ok(Input {
            name,
            description: format!("{description} ({file}, x{repeat})"),
            stdout,
            repeat,
            events_per_run,
        })
    };
    Ok(vec![
        make(
            "long_answer_pi73",
            "long answer, pi 0.73.1",
            "long_answer.pi73.cassette.jsonl.zst",
            1,
        )?,
        make(
            "long_answer_pi87",
            "long answer, pi 0.87.1",
            "long_answer.pi87.cassette.jsonl",
            1,
        )?,
        make(
            "tool_heavy_pi87",
            "tool loop, pi 0.87.1",
            "tool_loop.pi87.cassette.jsonl",
            TOOL_HEAVY_REPEAT,
        )?,
    ])
}

/// Lines of `bytes` split at `\n` with `memchr` (a final line without `\n` included, one
/// trailing `\r` stripped as the mapper's framing does).
pub fn split_lines(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut rest = bytes;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let (line, next) = match memchr::memchr(b'\n', rest) {
            Some(i) => (&rest[..i], &rest[i + 1..]),
            None => (rest, &rest[rest.len()..]),
        };
        rest = next;
        Some(line.strip_suffix(b"\r").unwrap_or(line))
    })
}

/// What [`validate_lines`] found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Validation {
    /// Lines read.
    pub lines: u64,
    /// Lines that are not JSON.
    pub invalid: u64,
}

/// The floor of a JSON-validating design: every line is checked to be JSON with
/// `serde_json::from_slice::<IgnoredAny>` (which reads every byte, checks UTF-8 in
/// strings and escapes, and allocates nothing). Empty lines count as invalid, as they
/// do for the mapper.
pub fn validate_lines(stdout: &[u8]) -> Validation {
    let mut v = Validation::default();
    for line in split_lines(stdout) {
        v.lines += 1;
        if serde_json::from_slice::<IgnoredAny>(line).is_err() {
            v.invalid += 1;
        }
    }
    v
}

/// The mapper over one run: all of `stdout` pushed at once, finished at EOF with exit code 0.
pub fn map_run(stdout: &[u8], out: &mut Vec<Message>) {
    let mut mapper = Mapper::new(MapperOptions::default());
    mapper.push(stdout, out);
    mapper.finish(StreamEnd::eof(Some(exit0())), out);
}

/// The mapper over a whole input (each repetition with a fresh mapper). Returns the number of
/// messages emitted.
pub fn map_input(input: &Input) -> usize {
    let mut n = 0;
    for _ in 0..input.repeat {
        let mut out = Vec::new();
        map_run(&input.stdout, &mut out);
        n += out.len();
    }
    n
}

/// Validation over a whole input.
pub fn validate_input(input: &Input) -> Validation {
    let mut total = Validation::default();
    for _ in 0..input.repeat {
        let v = validate_lines(&input.stdout);
        total.lines += v.lines;
        total.invalid += v.invalid;
    }
    total
}

/// The naive mapper over a whole input (each repetition with fresh state). Returns the number
/// of messages emitted.
pub fn naive_input(input: &Input) -> usize {
    let mut n = 0;
    for _ in 0..input.repeat {
        n += naive_map(&input.stdout).len();
    }
    n
}

pub(crate) fn exit0() -> ExitInfo {
    ExitInfo {
        code: Some(0),
        signal: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_lines_handles_crlf_and_a_final_unterminated_line() {
        let lines: Vec<&[u8]> = split_lines(b"a\r\nb\n\nc").collect();
        assert_eq!(lines, vec![&b"a"[..], b"b", b"", b"c"]);
    }

    #[test]
    fn validation_counts_bad_lines() {
        let v = validate_lines(b"{\"a\":1}\nnot json\n\n[1,2]\n{\"a\":\n");
        assert_eq!(
            v,
            Validation {
                lines: 5,
                invalid: 3
            }
        );
    }

    /// The naive mapper is a fair opponent: on every input it emits the same text, tool
    /// calls, tool results and terminal kind as the real mapper.
    #[test]
    fn naive_mapper_agrees_with_the_mapper_on_every_input() {
        for input in inputs().expect("inputs load") {
            let mut real = Vec::new();
            map_run(&input.stdout, &mut real);
            let naive = naive_map(&input.stdout);
            let text = |ms: &[Message]| -> String {
                ms.iter()
                    .filter_map(|m| match m {
                        Message::Assistant { text } => Some(text.as_str()),
                        _ => None,
                    })
                    .collect()
            };
            let tools = |ms: &[Message]| -> Vec<Message> {
                ms.iter()
                    .filter(|m| {
                        matches!(
                            m,
                            Message::ToolCall { .. }
                                | Message::ToolCompleted { .. }
                                | Message::ToolFailed { .. }
                        )
                    })
                    .cloned()
                    .collect()
            };
            assert!(!text(&real).is_empty(), "{}: no text", input.name);
            assert_eq!(text(&naive), text(&real), "{}: text", input.name);
            assert_eq!(tools(&naive), tools(&real), "{}: tools", input.name);
            assert_eq!(
                naive.last().map(Message::kind),
                real.last().map(Message::kind),
                "{}: terminal",
                input.name
            );
            assert_eq!(
                validate_lines(&input.stdout).invalid,
                0,
                "{}: recorded stdout is valid JSON",
                input.name
            );
        }
    }
}
