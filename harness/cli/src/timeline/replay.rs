//! A replay as it happened, as a section of a page (`pi-harness report --html`), drawn beside
//! the cassette's own run: each start of fake-pi the caller made (its bar, what the call sent,
//! the signals it received and how it ended: `FAKE_PI_TIMELINE`), what fake-pi said of its own
//! (its mismatch lines: `FAKE_PI_REPORT`), where the replay departed from the recording (it
//! ended otherwise than the recording ends), the processes the test's world found left over,
//! and the test's failure. Pure: the parsed files in, the section out.

use std::io::{self, Write};

use serde::Deserialize;

use super::model::{Arrow, Lane, Proc};
use super::page::{tenth, Page, SectionEnd};
use super::procs::End;

/// One start of fake-pi, as `FAKE_PI_TIMELINE` has it.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default)]
pub struct Start {
    /// Its pid.
    pub pid: u32,
    /// When it started (ms since the epoch).
    pub started_unix_ms: f64,
    /// The cassette it replayed.
    pub cassette: Option<String>,
    /// What the call sent (masked); `None` when fake-pi never read the cassette's header.
    pub argv: Option<Vec<String>>,
    /// The signals it received.
    pub signals: Vec<Received>,
    /// How it ended.
    pub ended: Ended,
}

/// A signal a start received.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default)]
pub struct Received {
    /// Its name.
    pub signal: String,
    /// When, after the start (ms).
    pub t_ms: f64,
    /// The cassette's answer to it.
    pub answer: String,
}

/// How a start ended.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default)]
pub struct Ended {
    /// When, after the start (ms).
    pub t_ms: f64,
    /// Its exit status.
    pub exit: Option<i32>,
    /// The signal it died by.
    pub signal: Option<String>,
}

/// One entry of `FAKE_PI_REPORT`: the lines a start said of its own.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default)]
pub struct Said {
    /// The start's pid.
    pub pid: u32,
    /// Its exit status.
    pub exit: Option<i32>,
    /// Its lines (`fake-pi: expectation mismatch: ...`).
    pub lines: Vec<String>,
}

/// What the test's world says of the replay.
#[derive(Debug, Clone, Default)]
pub struct Replay {
    /// The starts, in the order they were written.
    pub starts: Vec<Start>,
    /// What fake-pi said.
    pub said: Vec<Said>,
    /// The processes left over at the test's end (as the world describes them).
    pub leftovers: Vec<String>,
    /// The test's failure message.
    pub failure: Option<String>,
}

impl Replay {
    /// Draw the replay as the open section of `page`; `recorded` is how the cassette's run
    /// ends (when, and how), against which a start's end is compared. The section's end.
    pub fn draw<W: Write>(
        &self,
        page: &mut Page<W>,
        agent: &str,
        recorded: Option<(f64, &End)>,
    ) -> io::Result<SectionEnd> {
        let origin = self
            .starts
            .iter()
            .map(|s| s.started_unix_ms)
            .fold(f64::INFINITY, f64::min);
        let origin = if origin.is_finite() { origin } else { 0.0 };
        let mut procs = Vec::new();
        let mut arrows = Vec::new();
        let mut line = 0;
        let mut last = 0.0f64;
        let mut item = |page: &mut Page<W>, t: f64, lane: Lane, kind: &str, text: &str| {
            line += 1;
            page.item(t, lane, kind, line, text.as_bytes())
        };
        for (n, s) in self.starts.iter().enumerate() {
            let t0 = tenth(s.started_unix_ms - origin);
            let end = tenth(t0 + s.ended.t_ms);
            last = last.max(end);
            let call = match &s.argv {
                Some(argv) => {
                    let words: Vec<String> =
                        argv.iter().map(|a| crate::show::sh_quote(a)).collect();
                    format!("{agent} {}", words.join(" "))
                }
                None => {
                    format!("{agent} ... (not known: fake-pi never read the cassette's header)")
                }
            };
            item(page, t0, Lane::Call, "the call", &call)?;
            let index = procs.len();
            for r in &s.signals {
                let t = tenth(t0 + r.t_ms);
                let what = format!(
                    "{} received at {t:.1} ms; the cassette's answer: {}",
                    r.signal, r.answer
                );
                item(
                    page,
                    t,
                    Lane::Signal,
                    &format!("{} received", r.signal),
                    &what,
                )?;
                arrows.push(Arrow {
                    t,
                    signal: r.signal.clone(),
                    from: "received",
                    line: None,
                    what,
                    hits: vec![(index, format!("answers: {}", r.answer))],
                });
            }
            for said in self.said.iter().filter(|x| x.pid == s.pid) {
                for l in &said.lines {
                    item(page, end, Lane::Mismatch, "fake-pi said", l)?;
                }
            }
            let (how, state, ending) = match (&s.ended.signal, s.ended.exit) {
                (Some(sig), _) => (
                    format!("dies by {sig} at {end:.1} ms"),
                    "died",
                    End::Signal(sig.clone()),
                ),
                (None, Some(code)) => (
                    format!("exits {code} at {end:.1} ms"),
                    "exited",
                    End::Exit(code),
                ),
                (None, None) => (format!("ends at {end:.1} ms"), "exited", End::Hang),
            };
            let kind = match &ending {
                End::Signal(sig) => format!("died by {sig}"),
                End::Exit(code) => format!("exit {code}"),
                End::Hang => "ended".to_string(),
            };
            item(page, end, Lane::Ending, &kind, &how)?;
            if let Some(d) = departure(&ending, end - t0, !s.signals.is_empty(), recorded) {
                item(page, end, Lane::Mismatch, "departed from the recording", &d)?;
            }
            procs.push(Proc {
                name: format!("{agent} (start {}, pid {})", n + 1, s.pid),
                parent: None,
                argv: s.argv.clone(),
                start: t0,
                end: Some(end),
                how,
                state,
                attrs: s.cassette.iter().map(|c| format!("cassette {c}")).collect(),
                lines: Vec::new(),
            });
        }
        // What fake-pi said in a start this file has no line for (no FAKE_PI_TIMELINE).
        for said in &self.said {
            if self.starts.iter().any(|s| s.pid == said.pid) {
                continue;
            }
            for l in &said.lines {
                item(page, 0.0, Lane::Mismatch, "fake-pi said", l)?;
            }
        }
        for left in &self.leftovers {
            item(page, last, Lane::Note, "left over", left)?;
            procs.push(Proc {
                name: format!("left over: {}", first_word(left)),
                parent: None,
                argv: None,
                start: last,
                end: None,
                how: format!("still running at the test's end (the world killed it): {left}"),
                state: "orphaned",
                attrs: Vec::new(),
                lines: Vec::new(),
            });
        }
        if let Some(f) = &self.failure {
            item(page, last, Lane::Note, "the test failed", f)?;
        }
        let summary = format!(
            "{} start(s) of fake-pi, {} line(s) fake-pi said, {} process(es) left over",
            self.starts.len(),
            self.said.iter().map(|s| s.lines.len()).sum::<usize>(),
            self.leftovers.len()
        );
        Ok(SectionEnd {
            duration: last,
            procs,
            arrows,
            summary,
            // Drawn above the recording it is compared with.
            order: -1,
        })
    }
}

/// Where a start that ended as `ended`, `took` ms after it began (having received a signal
/// or not), departed from a recording that ends as `recorded`: `None` when it ended the same
/// way (a recording that hangs ends by whatever signal the caller sends).
fn departure(
    ended: &End,
    took: f64,
    signalled: bool,
    recorded: Option<(f64, &End)>,
) -> Option<String> {
    let (at, rec) = recorded?;
    let rec_text = match rec {
        End::Exit(c) => format!("exits {c} at {at:.1} ms"),
        End::Signal(s) => format!("dies by {s} at {at:.1} ms"),
        End::Hang => format!("hangs from {at:.1} ms until a signal ends it"),
    };
    let same = match (ended, rec) {
        (End::Exit(a), End::Exit(b)) => a == b,
        (End::Signal(a), End::Signal(b)) => a == b,
        // A hang ends by the caller's signal, whatever it is.
        (_, End::Hang) => signalled,
        _ => false,
    };
    if same {
        return None;
    }
    let this = match ended {
        End::Exit(c) => format!("exited {c}"),
        End::Signal(s) => format!("died by {s}"),
        End::Hang => "ended".to_string(),
    };
    Some(format!(
        "this start {this} {took:.1} ms after it began; the recording {rec_text}"
    ))
}

/// The command's name in a leftover's description (`123 sleep 300 (session ...)`).
fn first_word(left: &str) -> String {
    left.split_whitespace()
        .find(|w| !w.chars().all(|c| c.is_ascii_digit()))
        .unwrap_or(left)
        .chars()
        .take(40)
        .collect()
}
