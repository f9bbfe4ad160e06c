//! Turning a two-way transcript (what a client logged while it drove `pi --mode rpc`)
//! into a version 2 cassette: `pi-harness cassette import --mode rpc`.
//!
//! A transcript has one JSON object per line, one entry each, in the order the client saw
//! them, with an optional `t_ms` (milliseconds since pi was started):
//!
//! | entry | meaning |
//! |---|---|
//! | `{"stdin": COMMAND}` | the client wrote this JSON line |
//! | `{"stdin_text": "..."}` (or `stdin_raw`) | the client wrote this line as is (not JSON, or not one value) |
//! | `{"stdin_close": true}` | the client closed stdin |
//! | `{"send_signal": "SIGTERM"}` | the client sent pi this signal |
//! | `{"stdout": RECORD}` | pi wrote this JSON line |
//! | `{"stdout_text": "..."}` (or `stdout_raw`) | pi wrote this line, not JSON |
//! | `{"stderr": "..."}` | pi wrote this on stderr |
//! | `{"exit": N}` / `{"signal": "SIGINT"}` | pi exited / died by a signal |
//! | `{"note"}`, `{"host"}`, `{"ps"}`, `{"final"}`, `{"stdout_eof"}` | annotations a client may log: skipped |
//!
//! A response (`"type":"response"`) is tied to the client line it answers (`reply`): the
//! latest line with the same `id`, or, for a response without `id`, the first unanswered
//! line without `id` whose `type` is the response's `command`. A client's SIGKILL is not
//! something pi answers: the cassette then ends with `hang`, and the replaying client's
//! own SIGKILL ends it.

mod claude_tools;
mod inputs;
mod replies;
#[cfg(test)]
mod tests;
mod transcript;

pub use inputs::{FileInputs, TwoWayInputs, ANNOTATIONS};

use std::path::Path;

use serde_json::Value;

use crate::import::{split_lines, ImportError, ImportOptions};
use crate::two_way::Protocol;
use crate::{
    Cassette, Dialect, Expect, FlagRule, Header, Origin, OriginKind, PiSource, Scenario,
    SignalAction, TimingKind, FORMAT_NAME, FORMAT_VERSION_TWO_WAY,
};
use inputs::input_err;
use transcript::Walk;

/// What a two-way import may read in all (its transcript, `--raw-stdout` and `--requests`
/// together, after decompression): it holds them whole, and the cassette it builds, ten to
/// forty times their size in memory (the more lines, the more). 1 MiB by default, so that
/// it stays under 64 MiB (a recorded session's transcript is tens of kilobytes); raised with
/// [`MAX_TWO_WAY_ENV`].
pub const DEFAULT_MAX_TWO_WAY_BYTES: u64 = 1 << 20;
/// Raises [`DEFAULT_MAX_TWO_WAY_BYTES`] (bytes).
pub const MAX_TWO_WAY_ENV: &str = "PI_HARNESS_MAX_TWO_WAY_BYTES";

/// The bytes a two-way import may still read ([`DEFAULT_MAX_TWO_WAY_BYTES`] in all).
#[derive(Debug, Clone, Copy)]
pub struct TwoWayBudget {
    /// The budget in all.
    pub max: u64,
    /// What is left of it.
    pub left: u64,
}

impl TwoWayBudget {
    /// The default budget, or [`MAX_TWO_WAY_ENV`] when set to a positive integer.
    pub fn from_env() -> TwoWayBudget {
        let max = std::env::var(MAX_TWO_WAY_ENV)
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .filter(|n| *n > 0)
            .unwrap_or(DEFAULT_MAX_TWO_WAY_BYTES);
        TwoWayBudget { max, left: max }
    }

    /// Spend `n` bytes; past the budget, the message that says so.
    pub fn take(&mut self, n: u64) -> Result<(), String> {
        if n > self.left {
            return Err(format!(
                "cannot read: more than {} bytes in all: a two-way import holds its inputs whole (the limit; raise it with {MAX_TWO_WAY_ENV}=BYTES)",
                self.max
            ));
        }
        self.left -= n;
        Ok(())
    }
}

/// Convert a transcript into a two-way cassette. `input` only names the source in errors.
pub fn import_transcript(
    input: &Path,
    transcript: &[u8],
    opts: &ImportOptions,
    more: &TwoWayInputs<'_>,
) -> Result<Cassette, ImportError> {
    let claude = more.protocol == Protocol::StreamJson;
    let dialect = dialect(opts, claude)?;
    if opts.scenario.is_empty() {
        return Err(ImportError::Usage("--scenario is empty".into()));
    }
    let expect = expectations(opts, claude)?;
    let requests = match more.requests {
        Some((path, raw)) => read_requests(path, raw)?,
        None => Vec::new(),
    };
    let mut walk = Walk::new(input, opts, more, requests);
    for (idx, (line, _)) in split_lines(transcript).into_iter().enumerate() {
        walk.entry(idx + 1, line)?;
    }
    let (records, timed) = walk.finish()?;
    Ok(Cassette {
        header: header(opts, dialect, expect, claude, timed),
        records,
    })
}

/// The dialect: Claude Code's stream-json for a Claude Code version pi-harness knows, else
/// the one the options give or their pi version speaks.
fn dialect(opts: &ImportOptions, claude: bool) -> Result<Dialect, ImportError> {
    if !claude {
        return crate::import::dialect_of(opts);
    }
    if pi_grammar::claude::Claude::measured_or_newer(&opts.pi_version).is_none() {
        return Err(ImportError::Usage(format!(
            "--pi-version: pi-harness knows Claude Code {}, not {:?}",
            pi_grammar::claude::known_versions().join(", "),
            opts.pi_version
        )));
    }
    Ok(Dialect::StreamJson)
}

/// What the caller must send: the options' expectations, checked, with what the protocol
/// implies (`--mode rpc` for pi; the API key's variable for Claude Code, whose options must
/// be given by their long names).
fn expectations(opts: &ImportOptions, claude: bool) -> Result<Expect, ImportError> {
    let mut expect = opts.expect.clone();
    if claude {
        // fake-pi compares the call's options with these: a cassette without them refuses
        // every call, so say so now.
        if expect.flags.is_empty() {
            return Err(ImportError::Usage(
                "--mode stream-json: give the Claude Code options the transcript's host ran with, as --flag (long names: --flag print --flag input-format=stream-json --flag output-format=stream-json --flag verbose ...); fake-pi refuses a call whose options differ".into(),
            ));
        }
        if let Some(bad) = expect.flags.keys().find(|k| !pi_grammar::claude::knows(k)) {
            return Err(ImportError::Usage(format!(
                "--flag {bad}: Claude Code has no option --{bad} (give long names without dashes: print, not p)"
            )));
        }
        if !expect.env.iter().any(|v| v == "ANTHROPIC_API_KEY") {
            expect.env.push("ANTHROPIC_API_KEY".into());
        }
    }
    match expect.flags.get("mode") {
        _ if claude => {}
        None => {
            expect
                .flags
                .insert("mode".into(), FlagRule::Value("rpc".into()));
        }
        Some(FlagRule::Value(m)) if m == "rpc" => {}
        Some(other) => {
            return Err(ImportError::Usage(format!(
                "--mode rpc imports an RPC session, but --flag mode says {other:?}"
            )))
        }
    }
    Ok(expect)
}

/// The scripted server's request log: one JSON object per line, blank lines skipped.
fn read_requests(path: &Path, raw: &[u8]) -> Result<Vec<String>, ImportError> {
    let mut requests = Vec::new();
    for (i, (line, _)) in split_lines(raw).into_iter().enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let text =
            std::str::from_utf8(line).map_err(|_| input_err(path, i + 1, "not UTF-8".into()))?;
        match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(_)) => requests.push(text.trim().to_string()),
            _ => {
                return Err(input_err(
                    path,
                    i + 1,
                    "not a JSON object (a request log has one object per line)".into(),
                ))
            }
        }
    }
    Ok(requests)
}

/// The header of an imported two-way cassette.
fn header(
    opts: &ImportOptions,
    dialect: Dialect,
    expect: Expect,
    claude: bool,
    timed: bool,
) -> Header {
    Header {
        format: FORMAT_NAME.to_string(),
        version: FORMAT_VERSION_TWO_WAY,
        mode: Some(
            if claude {
                Protocol::StreamJson
            } else {
                Protocol::Rpc
            }
            .mode()
            .into(),
        ),
        pi: PiSource::new(&opts.pi_version, dialect),
        scenario: Scenario {
            name: opts.scenario.clone(),
            description: opts.description.clone(),
            tags: opts.tags.clone(),
        },
        expect,
        process: {
            let mut p = opts.process.clone();
            // Claude Code answers SIGINT with an interrupt of the turn, then exit 0 (pi dies).
            if claude && p.on_sigint == SignalAction::pi_sigint() {
                p.on_sigint = SignalAction::CleanupExit { code: 0 };
            }
            p
        },
        redactions: opts.redactions.clone(),
        origin: Origin {
            kind: OriginKind::Imported,
            source: opts.source.clone(),
            timing: if timed {
                TimingKind::Measured
            } else {
                TimingKind::Synthetic
            },
            notes: opts.notes.clone(),
        },
    }
}

/// Read the transcript (and the files `raw_stdout` / `requests` name), import it, write
/// `out` (gzip when it ends in `.gz`), reading it back first: it must be the cassette
/// built, and replay `--raw-stdout` byte for byte when given. On any failure nothing is
/// written.
pub fn import_transcript_file(
    transcript_path: &Path,
    out: &Path,
    opts: &ImportOptions,
    files: &FileInputs<'_>,
) -> Result<Cassette, ImportError> {
    let FileInputs {
        raw_stdout,
        requests,
        ref ending,
        spawn_tools,
        protocol,
    } = *files;
    let ending = ending.clone();
    if protocol == Protocol::Rpc && pi_grammar::Grammar::pinned_or_newer(&opts.pi_version).is_none()
    {
        return Err(ImportError::Usage(format!(
            "--pi-version {}: not a pinned pi version ({})",
            opts.pi_version,
            pi_grammar::KNOWN_VERSIONS.join(", ")
        )));
    }
    let mut budget = TwoWayBudget::from_env();
    let mut read = |path: &Path| crate::import::read_input(path, &mut budget);
    let transcript = read(transcript_path)?;
    if transcript.is_empty() {
        return Err(input_err(transcript_path, 0, "is empty".into()));
    }
    let first = transcript
        .split(|&b| b == b'\n')
        .next()
        .unwrap_or(&transcript);
    if crate::is_header_line(first) {
        return Err(input_err(
            transcript_path,
            0,
            "is already a cassette (its first line is a cassette header); import takes a client's transcript".into(),
        ));
    }
    let raw = raw_stdout.map(&mut read).transpose()?;
    let req = requests.map(&mut read).transpose()?;
    let more = TwoWayInputs {
        raw_stdout: raw_stdout.zip(raw.as_deref()),
        requests: requests.zip(req.as_deref()),
        ending,
        spawn_tools,
        protocol,
    };
    let cassette = import_transcript(transcript_path, &transcript, opts, &more)?;
    let mut inputs: Vec<&Path> = vec![transcript_path];
    inputs.extend(raw_stdout);
    inputs.extend(requests);
    crate::import::write_verified(
        &cassette,
        out,
        &inputs,
        &opts.secret_values,
        |back| match &raw {
            Some(raw) => {
                crate::import::verify_round_trip(back, raw, Some(&cassette.stderr_bytes()))
            }
            None => Ok(()),
        },
    )?;
    Ok(cassette)
}
