//! Turning a captured pi stdout (raw JSONL bytes) into a cassette.
//!
//! This module owns `pi-harness cassette import`: the pure conversion
//! ([`import`]: raw bytes + [`ImportOptions`] -> [`Cassette`]), the parsing of the
//! small option syntaxes the command line uses (`--flag NAME=VALUE`, `--on-sigterm
//! cleanup-exit:143`, ...), and [`import_file`], which writes the result and proves by
//! reading it back that replaying it gives the captured bytes exactly.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use crate::{
    Action, Cassette, Dialect, Expect, FlagRule, Grandchild, Header, Origin, OriginKind, PiSource,
    ProcessBehaviour, Record, Scenario, Secret, SignalAction, Spawn, TimingKind, FORMAT_NAME,
    FORMAT_VERSION, SIGNAL_NAMES,
};

/// Default delay between two imported records when no timing is known.
pub const DEFAULT_SPACING_MS: f64 = 5.0;

/// How the imported process ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    Exit(i32),
    Signal(String),
    Hang,
}

/// Where and how to spawn a child, like pi's bash tool, during an imported stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpawnAtTool {
    /// Child's id; the `toolCallId` of the `tool_execution_start` line when `None`.
    pub id: Option<String>,
    pub own_session: bool,
    pub ignore_sigterm: bool,
    pub hold_stdout: bool,
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
    pub scenario: String,
    pub description: String,
    pub tags: Vec<String>,
    pub expect: Expect,
    pub process: ProcessBehaviour,
    pub redactions: BTreeMap<String, String>,
    /// Delay given to every record (even spacing), in milliseconds.
    pub spacing_ms: f64,
    /// What the process wrote to stderr (one chunk, written before the ending).
    pub stderr: Option<Vec<u8>>,
    /// The file `stderr` was read from, if any (an input the output must not overwrite).
    pub stderr_path: Option<PathBuf>,
    pub ending: Ending,
    pub spawn_at_tool: Option<SpawnAtTool>,
    /// Where the raw data came from (stored as `origin.source`).
    pub source: Option<String>,
    pub notes: Option<String>,
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
        }
    }
}

/// Why an import failed. [`ImportError::exit_code`] gives the CLI's status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImportError {
    /// A bad option value (usage error).
    Usage(String),
    /// The input cannot be read or does not fit the options (`line` 0: whole file).
    Input {
        file: PathBuf,
        line: usize,
        message: String,
    },
    /// Writing or verifying the output failed.
    Output { file: PathBuf, message: String },
}

impl ImportError {
    /// 2 for usage and input errors, 1 for output failures.
    pub fn exit_code(&self) -> i32 {
        match self {
            ImportError::Usage(_) | ImportError::Input { .. } => 2,
            ImportError::Output { .. } => 1,
        }
    }
}

impl fmt::Display for ImportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ImportError::Usage(m) => f.write_str(m),
            ImportError::Input {
                file,
                line: 0,
                message,
            } => write!(f, "{}: {message}", file.display()),
            ImportError::Input {
                file,
                line,
                message,
            } => write!(f, "{}:{line}: {message}", file.display()),
            ImportError::Output { file, message } => write!(f, "{}: {message}", file.display()),
        }
    }
}

impl std::error::Error for ImportError {}

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
    let spacing = opts.spacing_ms;
    let mut records = Vec::new();
    let mut spawn_pending = opts.spawn_at_tool.as_ref();
    for (idx, (line, newline)) in split_lines(raw).into_iter().enumerate() {
        records.push(Record::stdout_line(spacing, line, newline));
        if let Some(spawn) = spawn_pending {
            if let Some((call_id, command)) = tool_execution_start(line) {
                let id = spawn
                    .id
                    .clone()
                    .or(call_id)
                    .unwrap_or_else(|| format!("tool-line-{}", idx + 1));
                records.push(Record::new(
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
                ));
                spawn_pending = None;
            }
        }
    }
    if spawn_pending.is_some() {
        return Err(ImportError::Input {
            file: input.to_path_buf(),
            line: 0,
            message:
                "--spawn-at-tool: no line with \"type\":\"tool_execution_start\" in the stream"
                    .into(),
        });
    }
    if let Some(stderr) = &opts.stderr {
        if !stderr.is_empty() {
            records.push(Record::stderr_chunk(spacing, stderr));
        }
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
    records.push(Record::new(spacing, ending));
    Ok(Cassette {
        header: Header {
            format: FORMAT_NAME.to_string(),
            version: FORMAT_VERSION,
            mode: None,
            pi: PiSource {
                version: opts.pi_version.clone(),
                dialect,
            },
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
        },
        records,
    })
}

/// The wire dialect the options give, or the one of their pi version.
pub(crate) fn dialect_of(opts: &ImportOptions) -> Result<Dialect, ImportError> {
    match opts.dialect {
        Some(d) => Ok(d),
        None => Dialect::for_pi_version(&opts.pi_version).ok_or_else(|| {
            ImportError::Usage(format!(
                "pi version {:?} has no known wire dialect; give --dialect (snapshot+delta, delta-only or snapshot-only)",
                opts.pi_version
            ))
        }),
    }
}

/// An input file (`-` is stdin; gzip recognised by its magic bytes), within the size limits.
pub(crate) fn read_input(path: &Path) -> Result<Vec<u8>, ImportError> {
    let input = |message: String| ImportError::Input {
        file: path.to_path_buf(),
        line: 0,
        message,
    };
    let mut reader = crate::input::open(path, &crate::Limits::from_env())
        .map_err(|e| input(format!("cannot read: {e}")))?;
    let mut raw = Vec::new();
    std::io::Read::read_to_end(&mut reader, &mut raw)
        .map_err(|e| input(format!("cannot read: {e}")))?;
    Ok(raw)
}

/// Encode `cassette` for `out` (gzip when it ends in `.gz`), read the bytes back (they must
/// be the cassette built, and pass `check`), then write them through the one output writer,
/// never over one of `inputs`. On any failure nothing is written.
pub(crate) fn write_verified(
    cassette: &Cassette,
    out: &Path,
    inputs: &[&Path],
    check: impl FnOnce(&Cassette) -> Result<(), String>,
) -> Result<(), ImportError> {
    let out_err = |message: String| ImportError::Output {
        file: out.to_path_buf(),
        message,
    };
    let gz = out.to_string_lossy().ends_with(".gz");
    let bytes = cassette
        .encoded(gz)
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

/// Read `raw_path` (and the stderr file, if any, already in `opts`), import it, write
/// `out` (gzip when it ends in `.gz`), then read `out` back and check it replays the
/// input byte for byte. On any failure nothing is left at `out`.
pub fn import_file(
    raw_path: &Path,
    out: &Path,
    opts: &ImportOptions,
) -> Result<Cassette, ImportError> {
    let input = |message: String| ImportError::Input {
        file: raw_path.to_path_buf(),
        line: 0,
        message,
    };
    if pi_grammar::Grammar::for_version(&opts.pi_version).is_none() {
        return Err(ImportError::Usage(format!(
            "--pi-version {}: not a pinned pi version ({}); fake-pi replays only those. A capture of another producer in pi's format (snapshot-only, for example) is imported with the nearest pinned version and --dialect",
            opts.pi_version,
            pi_grammar::KNOWN_VERSIONS.join(", ")
        )));
    }
    // `-` is stdin; gzip is recognised by its magic bytes (as `map` does).
    let raw = read_input(raw_path)?;
    if raw.is_empty() {
        return Err(input(
            "is empty: a captured `pi --mode json` stdout has at least the session line".into(),
        ));
    }
    let first = raw.split(|&b| b == b'\n').next().unwrap_or(&raw);
    if crate::is_header_line(first) || first.starts_with(b"{\"format\"") {
        return Err(input(
            "is already a cassette (its first line is a cassette header); import takes pi's raw stdout".into(),
        ));
    }
    let cassette = import(raw_path, &raw, opts)?;
    // Encode, read the bytes back and verify them before anything is written: a failed
    // import leaves no file.
    let mut inputs: Vec<&Path> = vec![raw_path];
    if let Some(p) = opts.stderr_path.as_deref() {
        inputs.push(p);
    }
    write_verified(&cassette, out, &inputs, |back| {
        verify_round_trip(back, &raw, opts.stderr.as_deref())
    })?;
    Ok(cassette)
}

/// `c` with the line numbers `read` got from the file (records built in memory have 0).
fn cassette_with_lines(c: &Cassette, read: &Cassette) -> Cassette {
    let mut c = c.clone();
    for (r, b) in c.records.iter_mut().zip(&read.records) {
        r.line = b.line;
    }
    c
}

/// Strip leading dashes from a flag name (`--mode` and `mode` name the same flag).
fn flag_name(s: &str) -> Result<String, ImportError> {
    let name = s.trim_start_matches('-');
    if name.is_empty() || name.contains(char::is_whitespace) {
        return Err(ImportError::Usage(format!("bad flag name {s:?}")));
    }
    Ok(name.to_string())
}

/// `NAME=VALUE` (present with that value) or `NAME` (a switch that must be present).
pub fn parse_flag_rule(s: &str) -> Result<(String, FlagRule), ImportError> {
    match s.split_once('=') {
        Some((name, value)) => Ok((flag_name(name)?, FlagRule::Value(value.to_string()))),
        None => Ok((flag_name(s)?, FlagRule::Present(true))),
    }
}

/// `NAME`: a flag that must be absent.
pub fn parse_absent_flag(s: &str) -> Result<(String, FlagRule), ImportError> {
    Ok((flag_name(s)?, FlagRule::Present(false)))
}

/// `PLACEHOLDER=WHAT IT REPLACED`.
pub fn parse_redaction(s: &str) -> Result<(String, String), ImportError> {
    match s.split_once('=') {
        Some((p, what)) if !p.is_empty() => Ok((p.to_string(), what.to_string())),
        _ => Err(ImportError::Usage(format!(
            "--redaction expects PLACEHOLDER=MEANING (for example '<SESSION_ID>=session uuid'), found {s:?}"
        ))),
    }
}

/// A JSON array of strings, for `--argv-messages`.
pub fn parse_argv_messages(s: &str) -> Result<Vec<String>, ImportError> {
    serde_json::from_str::<Vec<String>>(s).map_err(|e| {
        ImportError::Usage(format!(
            "--argv-messages expects a JSON array of strings (for example '[]' or '[\"list files\"]'): {e}"
        ))
    })
}

/// `SIGTERM`, `TERM` or `15` -> `SIGTERM` (only names a cassette may use).
pub fn parse_signal_name(s: &str) -> Result<String, ImportError> {
    let upper = s.to_ascii_uppercase();
    let name = if let Ok(n) = s.parse::<i32>() {
        signal_name_of_number(n).map(str::to_string)
    } else if upper.starts_with("SIG") {
        Some(upper)
    } else {
        Some(format!("SIG{upper}"))
    };
    match name {
        Some(n) if SIGNAL_NAMES.contains(&n.as_str()) => Ok(n),
        _ => Err(ImportError::Usage(format!(
            "unknown signal {s:?}; expected one of {}",
            SIGNAL_NAMES.join(", ")
        ))),
    }
}

fn signal_name_of_number(n: i32) -> Option<&'static str> {
    Some(match n {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        6 => "SIGABRT",
        7 => "SIGBUS",
        9 => "SIGKILL",
        10 => "SIGUSR1",
        11 => "SIGSEGV",
        12 => "SIGUSR2",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        _ => return None,
    })
}

/// `die`, `ignore`, `cleanup-exit:CODE` or `exit:CODE`.
pub fn parse_signal_action(s: &str) -> Result<SignalAction, ImportError> {
    let bad = || {
        ImportError::Usage(format!(
            "bad signal action {s:?}; expected die, ignore, cleanup-exit:CODE or exit:CODE"
        ))
    };
    let code = |c: &str| -> Result<i32, ImportError> {
        match c.parse::<i32>() {
            Ok(n) if (0..=255).contains(&n) => Ok(n),
            _ => Err(bad()),
        }
    };
    match s.split_once(':') {
        None if s == "die" => Ok(SignalAction::Die),
        None if s == "ignore" => Ok(SignalAction::Ignore),
        Some(("cleanup-exit" | "cleanup_exit", c)) => {
            Ok(SignalAction::CleanupExit { code: code(c)? })
        }
        Some(("exit", c)) => Ok(SignalAction::Exit { code: code(c)? }),
        _ => Err(bad()),
    }
}

/// `snapshot+delta`, `delta-only` or `snapshot-only`.
pub fn parse_dialect(s: &str) -> Result<Dialect, ImportError> {
    match s {
        "snapshot+delta" => Ok(Dialect::SnapshotDelta),
        "delta-only" => Ok(Dialect::DeltaOnly),
        "snapshot-only" => Ok(Dialect::SnapshotOnly),
        _ => Err(ImportError::Usage(format!(
            "unknown dialect {s:?}; expected snapshot+delta, delta-only or snapshot-only"
        ))),
    }
}

/// Build the `expect` section from the command line's pieces.
pub fn build_expect(
    flags: &[String],
    absent_flags: &[String],
    prompt: Option<String>,
    argv_messages: Option<&str>,
    env: Vec<String>,
    secret_env: Vec<String>,
) -> Result<Expect, ImportError> {
    let mut expect = Expect {
        prompt,
        env,
        ..Expect::default()
    };
    for s in flags {
        let (name, rule) = parse_flag_rule(s)?;
        if expect.flags.insert(name.clone(), rule).is_some() {
            return Err(ImportError::Usage(format!("flag {name:?} given twice")));
        }
    }
    for s in absent_flags {
        let (name, rule) = parse_absent_flag(s)?;
        if expect.flags.insert(name.clone(), rule).is_some() {
            return Err(ImportError::Usage(format!(
                "flag {name:?} is both required and forbidden"
            )));
        }
    }
    if let Some(a) = argv_messages {
        expect.argv_messages = Some(parse_argv_messages(a)?);
    }
    for name in secret_env {
        if name.is_empty() {
            return Err(ImportError::Usage("--secret-env NAME is empty".into()));
        }
        if !expect.env.contains(&name) {
            expect.env.push(name.clone());
        }
        expect.never_in_argv.push(Secret::Env(name));
    }
    Ok(expect)
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
        assert_eq!(e.exit_code(), 2);
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

    #[test]
    fn option_syntaxes() {
        assert_eq!(
            parse_flag_rule("--mode=json").unwrap(),
            ("mode".into(), FlagRule::Value("json".into()))
        );
        assert_eq!(
            parse_flag_rule("no-session").unwrap(),
            ("no-session".into(), FlagRule::Present(true))
        );
        assert_eq!(
            parse_absent_flag("--session-id").unwrap(),
            ("session-id".into(), FlagRule::Present(false))
        );
        assert!(parse_flag_rule("--=x").is_err());
        assert_eq!(parse_signal_name("term").unwrap(), "SIGTERM");
        assert_eq!(parse_signal_name("9").unwrap(), "SIGKILL");
        assert_eq!(parse_signal_name("SIGINT").unwrap(), "SIGINT");
        assert!(parse_signal_name("99").is_err());
        assert_eq!(
            parse_signal_action("cleanup-exit:143").unwrap(),
            SignalAction::CleanupExit { code: 143 }
        );
        assert_eq!(parse_signal_action("ignore").unwrap(), SignalAction::Ignore);
        assert!(parse_signal_action("exit:300").is_err());
        assert!(parse_signal_action("explode").is_err());
        assert_eq!(parse_argv_messages("[]").unwrap(), Vec::<String>::new());
        assert!(parse_argv_messages("list files").is_err());
        assert_eq!(
            parse_redaction("<HOME>=home directory").unwrap(),
            ("<HOME>".into(), "home directory".into())
        );
        assert!(parse_redaction("nothing").is_err());
    }

    #[test]
    fn expect_from_pieces() {
        let e = build_expect(
            &["--mode=json".into(), "print".into()],
            &["session-id".into()],
            Some("hi".into()),
            Some("[\"hi\"]"),
            vec!["HOME".into()],
            vec!["FAKE_API_KEY".into()],
        )
        .unwrap();
        assert_eq!(e.flags["mode"], FlagRule::Value("json".into()));
        assert_eq!(e.flags["print"], FlagRule::Present(true));
        assert_eq!(e.flags["session-id"], FlagRule::Present(false));
        assert_eq!(e.argv_messages.as_deref(), Some(&["hi".to_string()][..]));
        assert_eq!(e.env, ["HOME", "FAKE_API_KEY"]);
        assert_eq!(e.never_in_argv, [Secret::Env("FAKE_API_KEY".into())]);
        let dup = build_expect(
            &["mode=json".into()],
            &["mode".into()],
            None,
            None,
            vec![],
            vec![],
        );
        assert!(dup
            .unwrap_err()
            .to_string()
            .contains("both required and forbidden"));
    }
}
