//! What conform keeps of one implementation run, bounded: its stdout read line by line into
//! normalized messages up to a byte and a message budget (past either the implementation's
//! process group is killed at once), at most [`MAX_PROBLEMS`] problem lines, and the last
//! [`STDERR_TAIL`] bytes of its stderr. An implementation that writes without end costs
//! conform a budget, never its memory.

use std::io::{BufRead, BufReader, Read};

use serde_json::value::RawValue;

use pi_wire::message::Message;

/// Stdout bytes one case may produce by default (`--max-output`). The largest expected
/// stream of the bundled suite is 4.2 MB (a 4 MiB line).
pub const DEFAULT_MAX_OUTPUT_BYTES: u64 = 16 << 20;
/// Messages one case may produce (the bundled suite's most is about 2,000).
pub const MAX_MESSAGES: usize = 100_000;
/// Problem lines kept per case; past it, one line counts the rest.
pub const MAX_PROBLEMS: usize = 20;
/// Bytes of stderr kept (its end).
pub const STDERR_TAIL: usize = 2000;
/// Bytes of an offending line quoted in a problem.
const QUOTED: usize = 200;

/// Problems of one case, at most [`MAX_PROBLEMS`] of them listed.
#[derive(Debug, Default)]
pub struct Problems {
    /// The first problems, one line each.
    pub listed: Vec<String>,
    /// How many more there were.
    pub unlisted: usize,
}

impl Problems {
    /// Note one problem: listed while there is room, else counted.
    pub fn push(&mut self, p: String) {
        if self.listed.len() < MAX_PROBLEMS {
            self.listed.push(p);
        } else {
            self.unlisted += 1;
        }
    }

    /// The listed problems, then one line for the rest.
    pub fn into_lines(mut self) -> Vec<String> {
        if self.unlisted > 0 {
            self.listed
                .push(format!("... and {} more problems", self.unlisted));
        }
        self.listed
    }
}

/// What the stdout reader kept.
#[derive(Debug, Default)]
pub struct Stdout {
    /// The lines that are JSON, as written.
    pub messages: Vec<Box<RawValue>>,
    /// Lines that are not normalized messages, and a read that failed.
    pub problems: Problems,
    /// The budget that ran out (the implementation was killed for it), as a problem line.
    pub over_budget: Option<String>,
}

/// A line quoted in a problem: its first [`QUOTED`] bytes, its length said when cut.
pub(crate) fn quote(line: &[u8]) -> String {
    let cut = &line[..line.len().min(QUOTED)];
    let mut s = String::from_utf8_lossy(cut).into_owned();
    if line.len() > QUOTED {
        s.push_str(&format!("... ({} bytes)", line.len()));
    }
    s
}

/// Read normalized JSONL from `input` until its end or until `max_bytes` (or
/// [`MAX_MESSAGES`]) is reached, calling `kill` once when a budget runs out; then stop
/// reading.
pub fn read_stdout(input: impl Read, max_bytes: u64, mut kill: impl FnMut()) -> Stdout {
    let mut out = Stdout::default();
    let mut reader = BufReader::with_capacity(64 << 10, input);
    let mut left = max_bytes;
    let mut line = Vec::new();
    let mut n = 0usize;
    let over = |out: &mut Stdout, what: String, kill: &mut dyn FnMut()| {
        out.over_budget = Some(format!("{what}: the implementation was killed"));
        kill();
    };
    loop {
        line.clear();
        // One more byte than is left tells a full budget from an overrun.
        match (&mut reader).take(left + 1).read_until(b'\n', &mut line) {
            Ok(0) => break,
            Ok(read) => {
                if read as u64 > left {
                    over(
                        &mut out,
                        format!("stdout over {max_bytes} bytes (--max-output)"),
                        &mut kill,
                    );
                    break;
                }
                left -= read as u64;
            }
            Err(e) => {
                out.problems.push(format!("reading stdout: {e}"));
                break;
            }
        }
        n += 1;
        let body = line.strip_suffix(b"\n").unwrap_or(&line);
        if body.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if out.messages.len() == MAX_MESSAGES {
            over(
                &mut out,
                format!("stdout over {MAX_MESSAGES} messages"),
                &mut kill,
            );
            break;
        }
        match serde_json::from_slice::<Box<RawValue>>(body) {
            Ok(v) => {
                if let Err(e) = serde_json::from_str::<Message>(v.get()) {
                    out.problems.push(format!(
                        "stdout line {n}: not a normalized message ({e}): {}",
                        quote(body)
                    ));
                }
                out.messages.push(v);
            }
            Err(e) => out
                .problems
                .push(format!("stdout line {n}: not JSON ({e}): {}", quote(body))),
        }
    }
    out
}

/// The last [`STDERR_TAIL`] bytes of `input`, read to its end in small steps.
pub fn stderr_tail(mut input: impl Read) -> Vec<u8> {
    let mut tail = Vec::with_capacity(2 * STDERR_TAIL);
    let mut buf = [0u8; 8192];
    loop {
        match input.read(&mut buf) {
            Ok(0) => break,
            Ok(k) => {
                tail.extend_from_slice(&buf[..k]);
                if tail.len() > STDERR_TAIL {
                    tail.drain(..tail.len() - STDERR_TAIL);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    tail
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_kills_once_and_keeps_what_came_before() {
        let line = br#"{"type":"assistant","text":"a"}"#;
        let mut input = Vec::new();
        for _ in 0..1000 {
            input.extend_from_slice(line);
            input.push(b'\n');
        }
        let mut kills = 0;
        let out = read_stdout(&input[..], 100 * (line.len() as u64 + 1), || kills += 1);
        assert_eq!(kills, 1);
        assert_eq!(
            out.over_budget.as_deref(),
            Some("stdout over 3200 bytes (--max-output): the implementation was killed")
        );
        assert_eq!(out.messages.len(), 100);
        assert!(out.problems.into_lines().is_empty());
        // Exactly the budget is within it.
        let out = read_stdout(
            &input[..(line.len() + 1) * 10],
            10 * (line.len() as u64 + 1),
            || panic!("within the budget"),
        );
        assert_eq!(out.over_budget, None);
        assert_eq!(out.messages.len(), 10);
    }

    #[test]
    fn problems_are_counted_past_the_listed_ones_and_lines_quoted_short() {
        let long = "x".repeat(10_000);
        let input = format!("{long}\n").repeat(50);
        let out = read_stdout(input.as_bytes(), u64::MAX - 1, || panic!("no budget hit"));
        let lines = out.problems.into_lines();
        assert_eq!(lines.len(), MAX_PROBLEMS + 1);
        assert_eq!(lines[MAX_PROBLEMS], "... and 30 more problems");
        assert!(lines[0].len() < 400, "{}", lines[0]);
        assert!(lines[0].ends_with("... (10000 bytes)"), "{}", lines[0]);
    }

    #[test]
    fn stderr_keeps_its_end() {
        let text: Vec<u8> = (0..100_000u32).flat_map(|i| i.to_le_bytes()).collect();
        let tail = stderr_tail(&text[..]);
        assert_eq!(tail, text[text.len() - STDERR_TAIL..]);
    }
}
