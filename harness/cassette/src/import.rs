//! Turning a captured pi stdout (raw JSONL bytes) into a cassette.
//!
//! This module owns `pi-harness cassette import`: the pure conversion
//! ([`import`]: raw bytes + [`ImportOptions`] -> [`Cassette`]), [`import_file`], which
//! writes the result and proves by reading it back that replaying it gives the captured
//! bytes exactly, and what both imports share (reading an input, writing a verified
//! output). The small option syntaxes the command line uses (`--flag NAME=VALUE`,
//! `--on-sigterm cleanup-exit:143`, ...) are parsed in `syntax`, re-exported here.

mod dialect;
mod error;
mod file;
mod syntax;

pub use error::ImportError;
pub use file::{import_file, read_stderr_file, Imported};

pub use syntax::{
    build_expect, parse_absent_flag, parse_argv_messages, parse_dialect, parse_flag_rule,
    parse_redaction, parse_signal_action, parse_signal_name,
};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::{
    Action, Cassette, Dialect, Expect, Grandchild, Header, Origin, OriginKind, PiSource,
    ProcessBehaviour, Record, Scenario, Spawn, TimingKind, FORMAT_NAME, FORMAT_VERSION,
};

/// Default delay between two imported records when no timing is known.
pub const DEFAULT_SPACING_MS: f64 = 5.0;

/// How the imported process ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    /// It exits with this status.
    Exit(i32),
    /// It dies by this signal (a name a cassette may use).
    Signal(String),
    /// It hangs until a signal ends it.
    Hang,
}

/// Where and how to spawn a child, like pi's bash tool, during an imported stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpawnAtTool {
    /// Child's id; the `toolCallId` of the `tool_execution_start` line when `None`.
    pub id: Option<String>,
    /// The child starts its own session (`setsid`), as pi's bash tool does.
    pub own_session: bool,
    /// The child ignores SIGTERM.
    pub ignore_sigterm: bool,
    /// The child keeps the inherited stdout open.
    pub hold_stdout: bool,
    /// A process the child forks, if any.
    pub grandchild: Option<Grandchild>,
}

impl Default for SpawnAtTool {
    fn default() -> Self {
        SpawnAtTool {
            id: None,
            own_session: true,
            ignore_sigterm: false,
            hold_stdout: false,
            grandchild: None,
        }
    }
}

/// Everything the raw stdout does not say by itself.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportOptions {
    /// pi's version as `pi --version` prints it.
    pub pi_version: String,
    /// The wire dialect; derived from `pi_version` when `None`.
    pub dialect: Option<Dialect>,
    /// The scenario's name (`header.scenario.name`).
    pub scenario: String,
    /// One sentence on what the run shows.
    pub description: String,
    /// The scenario's tags.
    pub tags: Vec<String>,
    /// What the caller must send for the cassette to replay.
    pub expect: Expect,
    /// How the replaying process answers signals.
    pub process: ProcessBehaviour,
    /// Placeholder -> what it replaced, as the header lists them.
    pub redactions: BTreeMap<String, String>,
    /// Delay given to every record (even spacing), in milliseconds.
    pub spacing_ms: f64,
    /// What the process wrote to stderr (one chunk, written before the ending).
    pub stderr: Option<Vec<u8>>,
    /// The file `stderr` was read from, if any (an input the output must not overwrite).
    pub stderr_path: Option<PathBuf>,
    /// How the process ends when the input does not say.
    pub ending: Ending,
    /// A child to spawn at the first tool start (`--spawn-at-tool`).
    pub spawn_at_tool: Option<SpawnAtTool>,
    /// Where the raw data came from (stored as `origin.source`).
    pub source: Option<String>,
    /// Stored as `origin.notes`.
    pub notes: Option<String>,
    /// Secrets by name and value (`--secret-env NAME` with the variable's value where it is
    /// set): an import whose cassette would hold one is refused, naming the secret and line.
    pub secret_values: Vec<(String, String)>,
}

impl ImportOptions {
    /// Options with every optional part empty.
    pub fn new(pi_version: &str, scenario: &str, description: &str, ending: Ending) -> Self {
        ImportOptions {
            pi_version: pi_version.to_string(),
            dialect: None,
            scenario: scenario.to_string(),
            description: description.to_string(),
            tags: Vec::new(),
            expect: Expect::default(),
            process: ProcessBehaviour::default(),
            redactions: BTreeMap::new(),
            spacing_ms: DEFAULT_SPACING_MS,
            stderr: None,
            stderr_path: None,
            ending,
            spawn_at_tool: None,
            source: None,
            notes: None,
            secret_values: Vec::new(),
        }
    }
}

/// Split raw stdout into lines on `\n` only (U+2028/2029 and `\r` stay inside lines).
/// Each item is the line without its `\n` and whether a `\n` followed it; a final
/// line without newline is kept, an empty remainder after the last `\n` is not a line.
pub fn split_lines(raw: &[u8]) -> Vec<(&[u8], bool)> {
    let mut out = Vec::new();
    let mut start = 0;
    for nl in memchr::memchr_iter(b'\n', raw) {
        out.push((&raw[start..nl], true));
        start = nl + 1;
    }
    if start < raw.len() {
        out.push((&raw[start..], false));
    }
    out
}

/// Convert captured stdout into a cassette. `input` only names the source in errors.
pub fn import(input: &Path, raw: &[u8], opts: &ImportOptions) -> Result<Cassette, ImportError> {
    let (mut builder, header) = Builder::new(input, opts)?;
    let mut records = Vec::new();
    let mut keep = |r: Record| {
        records.push(r);
        Ok(())
    };
    for (i, (line, newline)) in split_lines(raw).into_iter().enumerate() {
        if i < dialect::LINES_LOOKED_AT {
            if let Some(what) = dialect::foreign(line) {
                return Err(ImportError::Input {
                    file: input.to_path_buf(),
                    line: i + 1,
                    message: dialect::refusal(what),
                });
            }
        }
        builder.line(line, newline, &mut keep)?;
    }
    builder.finish(&mut keep)?;
    Ok(Cassette { header, records })
}

/// Where a [`Builder`] puts each record as it is made.
pub(crate) type Sink<'s> = dyn FnMut(Record) -> Result<(), ImportError> + 's;

/// A captured stdout turned into records one line at a time, the options checked first:
/// what [`import`] (bytes in memory) and [`import_file`] (a stream) share.
pub(crate) struct Builder<'a> {
    input: &'a Path,
    spacing: f64,
    spawn_pending: Option<&'a SpawnAtTool>,
    stderr: Option<&'a [u8]>,
    ending: Action,
    /// Lines taken so far.
    lines: usize,
}

impl<'a> Builder<'a> {
    /// Check the options (a usage error names the one that is wrong) and give the header.
    pub(crate) fn new(
        input: &'a Path,
        opts: &'a ImportOptions,
    ) -> Result<(Builder<'a>, Header), ImportError> {
        let dialect = dialect_of(opts)?;
        if opts.pi_version.is_empty() {
            return Err(ImportError::Usage("--pi-version is empty".into()));
        }
        if opts.scenario.is_empty() {
            return Err(ImportError::Usage("--scenario is empty".into()));
        }
        if !opts.spacing_ms.is_finite() || opts.spacing_ms < 0.0 {
            return Err(ImportError::Usage(format!(
                "--spacing-ms must be a non-negative number, found {}",
                opts.spacing_ms
            )));
        }
        let ending = match &opts.ending {
            Ending::Exit(code) => {
                if !(0..=255).contains(code) {
                    return Err(ImportError::Usage(format!(
                        "--exit: exit codes are 0..=255, found {code}"
                    )));
                }
                Action::Exit(*code)
            }
            Ending::Signal(name) => Action::Signal(parse_signal_name(name)?),
            Ending::Hang => Action::Hang,
        };
        let builder = Builder {
            input,
            spacing: opts.spacing_ms,
            spawn_pending: opts.spawn_at_tool.as_ref(),
            stderr: opts.stderr.as_deref().filter(|s| !s.is_empty()),
            ending,
            lines: 0,
        };
        Ok((builder, header(opts, dialect)))
    }

    /// The next line of the capture (without its `\n`; `newline`: one followed it): its
    /// record, and the spawn after it when it is the first tool start and one is asked for.
    pub(crate) fn line(
        &mut self,
        line: &[u8],
        newline: bool,
        out: &mut Sink<'_>,
    ) -> Result<(), ImportError> {
        self.line_owned(line.to_vec(), newline, out)
    }

    /// As [`Builder::line`], taking the line: it becomes the record's data, not copied (a line
    /// may be as long as the line limit).
    pub(crate) fn line_owned(
        &mut self,
        line: Vec<u8>,
        newline: bool,
        out: &mut Sink<'_>,
    ) -> Result<(), ImportError> {
        self.lines += 1;
        // Looked at before the line goes into its record.
        let start = self.spawn_pending.and_then(|_| tool_execution_start(&line));
        out(Record::stdout_owned(self.spacing, line, newline))?;
        let (Some(spawn), Some((call_id, command))) = (self.spawn_pending, start) else {
            return Ok(());
        };
        let id = spawn
            .id
            .clone()
            .or(call_id)
            .unwrap_or_else(|| format!("tool-line-{}", self.lines));
        self.spawn_pending = None;
        out(Record::new(
            0.0,
            Action::Spawn(Spawn {
                id,
                own_session: spawn.own_session,
                ignore_sigterm: spawn.ignore_sigterm,
                hold_stdout: spawn.hold_stdout,
                grandchild: spawn.grandchild.clone(),
                lifetime_ms: None,
                // pi's bash tool runs `/bin/bash -c COMMAND`.
                argv: command.map(|c| vec!["/bin/bash".into(), "-c".into(), c]),
            }),
        ))
    }

    /// After the last line: the stderr chunk, if any, and the ending.
    pub(crate) fn finish(self, out: &mut Sink<'_>) -> Result<(), ImportError> {
        if self.spawn_pending.is_some() {
            return Err(ImportError::Input {
                file: self.input.to_path_buf(),
                line: 0,
                message:
                    "--spawn-at-tool: no line with \"type\":\"tool_execution_start\" in the stream"
                        .into(),
            });
        }
        if let Some(stderr) = self.stderr {
            out(Record::stderr_chunk(self.spacing, stderr))?;
        }
        out(Record::new(self.spacing, self.ending))
    }
}

/// The header of an imported cassette.
fn header(opts: &ImportOptions, dialect: Dialect) -> Header {
    Header {
        format: FORMAT_NAME.to_string(),
        version: FORMAT_VERSION,
        mode: None,
        pi: PiSource::new(&opts.pi_version, dialect),
        scenario: Scenario {
            name: opts.scenario.clone(),
            description: opts.description.clone(),
            tags: opts.tags.clone(),
        },
        expect: opts.expect.clone(),
        process: opts.process.clone(),
        redactions: opts.redactions.clone(),
        origin: Origin {
            kind: OriginKind::Imported,
            source: opts.source.clone(),
            timing: TimingKind::Synthetic,
            notes: opts.notes.clone(),
        },
    }
}

/// The wire dialect the options give, or the one of their pi version.
pub(crate) fn dialect_of(opts: &ImportOptions) -> Result<Dialect, ImportError> {
    match opts.dialect {
        Some(d) => Ok(d),
        None => Dialect::for_pi_version_or_newer(&opts.pi_version).ok_or_else(|| {
            ImportError::Usage(format!(
                "pi version {:?} has no known wire dialect; give --dialect (snapshot+delta, delta-only or snapshot-only)",
                opts.pi_version
            ))
        }),
    }
}

/// An input file read whole (`-` is stdin; gzip recognised by its magic bytes), within the
/// size limits and what is left of `budget` (the bytes a two-way import may hold, see
/// [`crate::import_rpc::TwoWayBudget`]); a FIFO or a device is refused at once.
pub(crate) fn read_input(
    path: &Path,
    budget: &mut crate::import_rpc::TwoWayBudget,
) -> Result<Vec<u8>, ImportError> {
    let input = |message: String| ImportError::Input {
        file: path.to_path_buf(),
        line: 0,
        message,
    };
    if let Some(kind) = (path.as_os_str() != "-")
        .then(|| crate::input::not_a_regular_file(path))
        .flatten()
    {
        return Err(input(format!(
            "cannot read: {kind}, not a file (give a file, or `-` to read stdin)"
        )));
    }
    let reader = crate::input::open(path, &crate::Limits::from_env())
        .map_err(|e| input(format!("cannot read: {e}")))?;
    let mut raw = Vec::new();
    std::io::Read::read_to_end(&mut std::io::Read::take(reader, budget.left + 1), &mut raw)
        .map_err(|e| input(format!("cannot read: {e}")))?;
    budget.take(raw.len() as u64).map_err(input)?;
    Ok(raw)
}

/// Encode `cassette` for `out` (compressed when it ends in `.zst` or `.gz`), read the bytes back (they must
/// be the cassette built, and pass `check`), then write them through the one output writer,
/// never over one of `inputs`. On any failure nothing is written.
pub(crate) fn write_verified(
    cassette: &Cassette,
    out: &Path,
    inputs: &[&Path],
    secrets: &[(String, String)],
    check: impl FnOnce(&Cassette) -> Result<(), String>,
) -> Result<(), ImportError> {
    let out_err = |message: String| ImportError::Output {
        file: out.to_path_buf(),
        message,
    };
    if let Some((line, name)) = crate::redact::lines_holding(cassette, secrets).first() {
        return Err(ImportError::Input {
            file: inputs.first().map_or_else(|| out.to_path_buf(), |p| p.to_path_buf()),
            line: 0,
            message: format!(
                "holds the value of ${name} (--secret-env), which would be line {line} of {}; put a placeholder in its place (with --redaction) and import again",
                out.display()
            ),
        });
    }
    let bytes = cassette
        .encoded_for(out)
        .map_err(|e| out_err(format!("cannot encode: {e}")))?;
    let back = Cassette::parse(out, &bytes)
        .map_err(|e| out_err(format!("written cassette does not read back: {e}")))?;
    if back != cassette_with_lines(cassette, &back) {
        return Err(out_err(
            "written cassette reads back different from what was written".into(),
        ));
    }
    check(&back).map_err(|e| out_err(format!("refused: {e}")))?;
    crate::output::write(out, &bytes, inputs).map_err(|e| {
        let prefix = format!("{}: ", out.display());
        let message = e.0.strip_prefix(&prefix).unwrap_or(&e.0).to_string();
        out_err(message)
    })
}

/// `Some((toolCallId, bash command))` when the line is a `tool_execution_start` event.
fn tool_execution_start(line: &[u8]) -> Option<(Option<String>, Option<String>)> {
    memchr::memmem::find(line, b"tool_execution_start")?;
    tool_start(&serde_json::from_slice(line).ok()?)
}

/// `Some((toolCallId, bash command))` for a `tool_execution_start` event.
pub(crate) fn tool_start(v: &serde_json::Value) -> Option<(Option<String>, Option<String>)> {
    if v.get("type")?.as_str()? != "tool_execution_start" {
        return None;
    }
    let id = v["toolCallId"]
        .as_str()
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    let command = (v["toolName"].as_str() == Some("bash"))
        .then(|| v["args"]["command"].as_str().map(str::to_string))
        .flatten();
    Some((id, command))
}

/// Check that `cassette` replays exactly `raw` on stdout and `stderr` on stderr.
/// The error names the first differing stdout line (1-based, in the raw input).
pub fn verify_round_trip(
    cassette: &Cassette,
    raw: &[u8],
    stderr: Option<&[u8]>,
) -> Result<(), String> {
    let replayed = cassette.stdout_bytes();
    if replayed != raw {
        let at = replayed
            .iter()
            .zip(raw)
            .position(|(a, b)| a != b)
            .unwrap_or(replayed.len().min(raw.len()));
        let line = raw[..at].iter().filter(|&&b| b == b'\n').count() + 1;
        return Err(format!(
            "replayed stdout differs from the input at byte {at} (input line {line}); input {} bytes, replay {} bytes",
            raw.len(),
            replayed.len()
        ));
    }
    let want = stderr.unwrap_or_default();
    if cassette.stderr_bytes() != want {
        return Err("replayed stderr differs from the --stderr file".into());
    }
    Ok(())
}

/// `c` with the line numbers `read` got from the file (records built in memory have 0).
fn cassette_with_lines(c: &Cassette, read: &Cassette) -> Cassette {
    let mut c = c.clone();
    for (r, b) in c.records.iter_mut().zip(&read.records) {
        r.line = b.line;
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Form;

    fn opts(ending: Ending) -> ImportOptions {
        ImportOptions::new("0.87.1", "t", "test", ending)
    }

    #[test]
    fn splits_on_newline_only_and_keeps_a_final_line() {
        let raw = "{\"a\":\"x\u{2028}y\"}\r\n\nlast".as_bytes();
        let lines = split_lines(raw);
        assert_eq!(
            lines,
            vec![
                ("{\"a\":\"x\u{2028}y\"}\r".as_bytes(), true),
                (&b""[..], true),
                (&b"last"[..], false)
            ]
        );
        assert!(split_lines(b"").is_empty());
        assert_eq!(split_lines(b"\n"), vec![(&b""[..], true)]);
    }

    #[test]
    fn import_is_byte_exact_and_evenly_spaced() {
        let raw: &[u8] = b"{\"type\":\"session\"}\nnot json\n\xff\xfe\n\n{\"type\":\"agent_end\"}";
        let mut o = opts(Ending::Exit(0));
        o.spacing_ms = 7.0;
        let c = import(Path::new("raw"), raw, &o).unwrap();
        assert_eq!(c.stdout_bytes(), raw);
        let keys: Vec<_> = c.records.iter().map(|r| r.action.key()).collect();
        assert_eq!(
            keys,
            [
                "stdout",
                "stdout_text",
                "stdout_b64",
                "stdout_text",
                "stdout",
                "exit"
            ]
        );
        assert!(c.records.iter().all(|r| r.dt_ms == 7.0));
        assert_eq!(
            c.records[4].action,
            Action::Stdout(crate::Bytes {
                data: b"{\"type\":\"agent_end\"}".to_vec(),
                form: Form::Json { newline: false }
            })
        );
        assert_eq!(c.header.pi.dialect, Dialect::DeltaOnly);
        assert_eq!(c.header.origin.kind, OriginKind::Imported);
        assert_eq!(c.header.origin.timing, TimingKind::Synthetic);
        // The text survives a write/parse cycle unchanged.
        let back = Cassette::parse(Path::new("x"), c.to_jsonl().as_bytes()).unwrap();
        assert_eq!(back.stdout_bytes(), raw);
        assert_eq!(back.to_jsonl(), c.to_jsonl());
    }

    #[test]
    fn dialect_comes_from_the_version_or_the_option() {
        let mut o = ImportOptions::new("0.73.1", "t", "d", Ending::Hang);
        let c = import(Path::new("r"), b"", &o).unwrap();
        assert_eq!(c.header.pi.dialect, Dialect::SnapshotDelta);
        assert_eq!(c.records.len(), 1);
        assert_eq!(c.ending(), &Action::Hang);
        o.pi_version = "0.50.0".into();
        let e = import(Path::new("r"), b"", &o).unwrap_err();
        assert!(e.to_string().contains("give --dialect"), "{e}");
        assert!(matches!(e, ImportError::Usage(_)), "{e:?}");
        o.dialect = Some(Dialect::SnapshotOnly);
        let c = import(Path::new("r"), b"", &o).unwrap();
        assert_eq!(c.header.pi.dialect, Dialect::SnapshotOnly);
    }

    #[test]
    fn spawn_goes_right_after_the_first_tool_start() {
        let raw = concat!(
            "{\"type\":\"message_end\"}\n",
            "{\"type\":\"tool_execution_start\",\"toolCallId\":\"call_9\",\"toolName\":\"bash\"}\n",
            "{\"type\":\"tool_execution_update\",\"toolCallId\":\"call_9\"}\n",
            "{\"type\":\"tool_execution_start\",\"toolCallId\":\"call_10\"}\n",
        );
        let mut o = opts(Ending::Hang);
        o.spawn_at_tool = Some(SpawnAtTool {
            grandchild: Some(Grandchild {
                own_session: false,
                ignore_sigterm: false,
                hold_stdout: false,
                argv: None,
            }),
            ..SpawnAtTool::default()
        });
        let c = import(Path::new("r"), raw.as_bytes(), &o).unwrap();
        let keys: Vec<_> = c.records.iter().map(|r| r.action.key()).collect();
        assert_eq!(
            keys,
            ["stdout", "stdout", "spawn", "stdout", "stdout", "hang"]
        );
        let Action::Spawn(s) = &c.records[2].action else {
            unreachable!()
        };
        assert_eq!(s.id, "call_9");
        assert!(s.own_session && s.grandchild.is_some());
        assert_eq!(c.stdout_bytes(), raw.as_bytes());

        let e = import(Path::new("raw.jsonl"), b"{\"type\":\"agent_start\"}\n", &o).unwrap_err();
        assert_eq!(
            e.to_string(),
            "raw.jsonl: --spawn-at-tool: no line with \"type\":\"tool_execution_start\" in the stream"
        );
    }

    #[test]
    fn stderr_goes_before_the_ending() {
        let mut o = ImportOptions::new("0.73.1", "t", "d", Ending::Exit(1));
        o.stderr = Some(b"Error: Unknown option: --x\n".to_vec());
        let c = import(Path::new("r"), b"", &o).unwrap();
        let keys: Vec<_> = c.records.iter().map(|r| r.action.key()).collect();
        assert_eq!(keys, ["stderr", "exit"]);
        assert_eq!(c.stderr_bytes(), b"Error: Unknown option: --x\n");
        assert!(verify_round_trip(&c, b"", o.stderr.as_deref()).is_ok());
        assert!(verify_round_trip(&c, b"", None).is_err());
    }

    #[test]
    fn verify_names_the_first_differing_line() {
        let raw = b"{\"a\":1}\n{\"b\":2}\n";
        let c = import(Path::new("r"), raw, &opts(Ending::Exit(0))).unwrap();
        assert!(verify_round_trip(&c, raw, None).is_ok());
        let e = verify_round_trip(&c, b"{\"a\":1}\n{\"b\":3}\n", None).unwrap_err();
        assert!(e.contains("at byte 13 (input line 2)"), "{e}");
        let e = verify_round_trip(&c, b"{\"a\":1}\n", None).unwrap_err();
        assert!(e.contains("input 8 bytes, replay 16 bytes"), "{e}");
    }

    #[test]
    fn bad_option_values_are_usage_errors() {
        let e = import(Path::new("r"), b"", &opts(Ending::Exit(256))).unwrap_err();
        assert_eq!(
            e,
            ImportError::Usage("--exit: exit codes are 0..=255, found 256".into())
        );
        let e = import(Path::new("r"), b"", &opts(Ending::Signal("SIGFOO".into()))).unwrap_err();
        assert!(
            e.to_string().starts_with("unknown signal \"SIGFOO\""),
            "{e}"
        );
        let mut o = opts(Ending::Hang);
        o.spacing_ms = -1.0;
        assert!(import(Path::new("r"), b"", &o).is_err());
    }
}
