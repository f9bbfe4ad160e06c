//! `pi-harness cassette import|lint`: command-line glue over `pi_cassette`'s import and lint.

use std::path::{Path, PathBuf};

use pi_cassette::import::{
    build_expect, import_file, parse_dialect, parse_redaction, parse_signal_action,
    read_stderr_file, Ending, ImportError, ImportOptions, Imported, SpawnAtTool,
    DEFAULT_SPACING_MS,
};
use pi_cassette::import_rpc;
use pi_cassette::{Dialect, Grandchild, ProcessBehaviour, SignalAction};

use crate::exit::{EXIT_FAILED, EXIT_OK, EXIT_USAGE};

/// Command-line arguments of `pi-harness cassette import` (parsed by clap in `main.rs`).
#[derive(Debug, clap::Args)]
#[command(after_help = IMPORT_EXAMPLE)]
pub struct ImportArgs {
    /// Captured stdout of one `pi --mode json` run (JSONL, exactly as pi wrote it); with
    /// `--mode rpc`, a client's transcript (`{"stdin":…}` / `{"stdout":…}` lines, see
    /// cassettes/FORMAT.md). The agents import takes: pi (json, rpc) and Claude Code
    /// (stream-json); a capture of Codex CLI or Gemini CLI is refused, naming it (record
    /// those with `pi-harness record --agent codex|gemini`).
    #[arg(value_name = "RAW.jsonl")]
    pub raw: PathBuf,
    /// What RAW holds: `json` (pi's stdout), `rpc` (a two-way transcript of `pi --mode rpc`:
    /// a version 2 cassette) or `stream-json` (a two-way transcript of Claude Code's
    /// stream-json; `--pi-version` is then Claude Code's version, 2.1.330).
    #[arg(long, value_name = "MODE", default_value = "json", value_parser = ["json", "rpc", "stream-json"])]
    pub mode: String,
    /// --mode rpc or stream-json: the CLI's stdout byte for byte; every stdout entry of the transcript must be its next line, and the cassette keeps the exact bytes.
    #[arg(long, value_name = "FILE")]
    pub raw_stdout: Option<PathBuf>,
    /// --mode rpc or stream-json: the scripted server's request log (one JSON object per model request), stored as `request` records.
    #[arg(long, value_name = "FILE")]
    pub requests: Option<PathBuf>,
    /// --mode rpc or stream-json: model the bash tool's processes: pi's spawned at each bash `tool_execution_start`, Claude Code's at the host's allow of a Bash call; gone at their end (or when the CLI's exit kills them).
    #[arg(long)]
    pub spawn_tools: bool,
    /// Cassette to write (`.cassette.jsonl`; `.cassette.jsonl.zst` for zstd, `.gz` for gzip).
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// pi's version as `pi --version` prints it (0.73.1, 0.87.1).
    #[arg(long, value_name = "VERSION")]
    pub pi_version: String,
    /// Wire dialect (snapshot+delta, delta-only, snapshot-only); derived from --pi-version when known.
    #[arg(long, value_name = "DIALECT", value_parser = parse_dialect)]
    pub dialect: Option<Dialect>,
    /// Scenario name (usually the file stem without the version: `tool_bash`).
    #[arg(long, value_name = "NAME")]
    pub scenario: String,
    /// What happens in this run, for a person.
    #[arg(long, value_name = "TEXT")]
    pub description: String,
    /// Feature tag (repeatable).
    #[arg(long = "tag", value_name = "TAG")]
    pub tags: Vec<String>,
    /// A flag the caller must pass: NAME=VALUE, or NAME for a switch (repeatable).
    #[arg(long = "flag", value_name = "NAME[=VALUE]")]
    pub flags: Vec<String>,
    /// A flag the caller must NOT pass (repeatable).
    #[arg(long = "no-flag", value_name = "NAME")]
    pub absent_flags: Vec<String>,
    /// The effective prompt (stdin and argv messages joined as pi joins them).
    #[arg(long, value_name = "TEXT")]
    pub prompt: Option<String>,
    /// The positional messages exactly, as a JSON array (`[]`: prompt only on stdin).
    #[arg(long, value_name = "JSON")]
    pub argv_messages: Option<String>,
    /// An environment variable that must be set (repeatable).
    #[arg(long = "env", value_name = "NAME")]
    pub env: Vec<String>,
    /// An environment variable that must be set and whose value must never appear in argv (repeatable).
    #[arg(long = "secret-env", value_name = "NAME")]
    pub secret_env: Vec<String>,
    /// A redaction placeholder used in the data: PLACEHOLDER=MEANING (repeatable).
    #[arg(long = "redaction", value_name = "PLACEHOLDER=MEANING")]
    pub redactions: Vec<String>,
    /// What the process wrote to stderr (written as one chunk before the ending).
    #[arg(long, value_name = "FILE")]
    pub stderr: Option<PathBuf>,
    /// The process exited with this code.
    #[arg(long, value_name = "CODE", group = "ending")]
    pub exit: Option<i32>,
    /// The process died by this signal (SIGKILL, KILL or 9).
    #[arg(long, value_name = "SIG", group = "ending")]
    pub signal: Option<String>,
    /// The process stays alive and silent until a signal ends it.
    #[arg(long, group = "ending")]
    pub hang: bool,
    /// Answer to SIGTERM: die, ignore, cleanup-exit:CODE, exit:CODE [pi: cleanup-exit:143].
    #[arg(long, value_name = "ACTION", value_parser = parse_signal_action)]
    pub on_sigterm: Option<SignalAction>,
    /// Answer to SIGINT [pi: die].
    #[arg(long, value_name = "ACTION", value_parser = parse_signal_action)]
    pub on_sigint: Option<SignalAction>,
    /// Answer to SIGHUP [pi: cleanup-exit:129].
    #[arg(long, value_name = "ACTION", value_parser = parse_signal_action)]
    pub on_sighup: Option<SignalAction>,
    /// Spawn a child, like pi's bash tool, right after the first `tool_execution_start` line.
    #[arg(long)]
    pub spawn_at_tool: bool,
    /// The spawned child's id [default: the line's toolCallId].
    #[arg(long, value_name = "ID", requires = "spawn_at_tool")]
    pub spawn_id: Option<String>,
    /// Start the child in the caller's session instead of its own (pi's bash tool uses setsid).
    #[arg(long, requires = "spawn_at_tool")]
    pub spawn_same_session: bool,
    /// The child ignores SIGTERM.
    #[arg(long, requires = "spawn_at_tool")]
    pub spawn_ignore_sigterm: bool,
    /// The child inherits and keeps our stdout open.
    #[arg(long, requires = "spawn_at_tool")]
    pub spawn_hold_stdout: bool,
    /// The child forks a grandchild that stays in the child's process group (like `bash -c 'sleep 300'` -> `sleep`).
    #[arg(long, requires = "spawn_at_tool")]
    pub spawn_grandchild: bool,
    /// The grandchild escapes into its own session.
    #[arg(long, requires = "spawn_grandchild")]
    pub grandchild_own_session: bool,
    /// The grandchild ignores SIGTERM.
    #[arg(long, requires = "spawn_grandchild")]
    pub grandchild_ignore_sigterm: bool,
    /// Delay between records in milliseconds (even spacing; timing is marked synthetic).
    #[arg(long, value_name = "MS", default_value_t = DEFAULT_SPACING_MS)]
    pub spacing_ms: f64,
    /// Where the data came from [default: the RAW path as given].
    #[arg(long, value_name = "TEXT")]
    pub source: Option<String>,
    /// Free text for a person (what was done to the process, what survived).
    #[arg(long, value_name = "TEXT")]
    pub notes: Option<String>,
}

const IMPORT_EXAMPLE: &str = "Example:
  pi-harness cassette import samples/tool_bash.pi73.jsonl \\
      --out cassettes/tool_bash.pi73.cassette.jsonl \\
      --pi-version 0.73.1 --scenario tool_bash \\
      --description 'thinking, text, one bash tool call, text answer' \\
      --tag tool --flag mode=json --flag provider=fake --flag model=fake-model \\
      --prompt 'list files' --exit 0

After writing, the cassette is read back and must replay the input byte for byte;
otherwise nothing is written. Exit status: 0 written, 2 usage or input error, 1 output error.";

impl ImportArgs {
    /// Turn the parsed command line into [`ImportOptions`] (reads the `--stderr` file).
    pub fn into_options(self) -> Result<ImportOptions, ImportError> {
        let ending = match (self.exit, self.signal, self.hang) {
            (Some(code), None, false) => Ending::Exit(code),
            (None, Some(sig), false) => Ending::Signal(sig),
            (None, None, true) => Ending::Hang,
            // A transcript says how pi ended; [`run_import`] takes the option only if given.
            (None, None, false) if self.mode != "json" => Ending::Hang,
            _ => {
                return Err(ImportError::Usage(
                    "say how the process ended: one of --exit CODE, --signal SIG, --hang".into(),
                ))
            }
        };
        let mut o = ImportOptions::new(&self.pi_version, &self.scenario, &self.description, ending);
        // The values the capture must not carry: each --secret-env variable that is set here.
        o.secret_values = self
            .secret_env
            .iter()
            .filter_map(|n| Some((n.clone(), std::env::var(n).ok()?)))
            .collect();
        o.dialect = self.dialect;
        o.tags = self.tags;
        o.expect = build_expect(
            &self.flags,
            &self.absent_flags,
            self.prompt,
            self.argv_messages.as_deref(),
            self.env,
            self.secret_env,
        )?;
        let mut process = ProcessBehaviour::default();
        if let Some(a) = self.on_sigterm {
            process.on_sigterm = a;
        }
        if let Some(a) = self.on_sigint {
            process.on_sigint = a;
        }
        if let Some(a) = self.on_sighup {
            process.on_sighup = a;
        }
        o.process = process;
        for r in &self.redactions {
            let (p, what) = parse_redaction(r)?;
            o.redactions.insert(p, what);
        }
        o.spacing_ms = self.spacing_ms;
        if let Some(path) = &self.stderr {
            o.stderr = Some(read_stderr_file(path)?);
            o.stderr_path = Some(path.clone());
        }
        if self.spawn_at_tool {
            o.spawn_at_tool = Some(SpawnAtTool {
                id: self.spawn_id,
                own_session: !self.spawn_same_session,
                ignore_sigterm: self.spawn_ignore_sigterm,
                hold_stdout: self.spawn_hold_stdout,
                grandchild: self.spawn_grandchild.then_some(Grandchild {
                    own_session: self.grandchild_own_session,
                    ignore_sigterm: self.grandchild_ignore_sigterm,
                    hold_stdout: false,
                    argv: None,
                }),
            });
        }
        o.source = Some(
            self.source
                .unwrap_or_else(|| self.raw.display().to_string()),
        );
        o.notes = self.notes;
        Ok(o)
    }
}

/// Run `pi-harness cassette import`: returns the process exit status, having printed
/// one line (the written file, or the error) to stdout/stderr.
pub fn run_import(args: ImportArgs) -> i32 {
    let raw = args.raw.clone();
    let out = args.out.clone();
    let rpc = args.mode != "json";
    let protocol = if args.mode == "stream-json" {
        pi_cassette::two_way::Protocol::StreamJson
    } else {
        pi_cassette::two_way::Protocol::Rpc
    };
    let (raw_stdout, requests) = (args.raw_stdout.clone(), args.requests.clone());
    let spawn_tools = args.spawn_tools;
    let given_ending = args.exit.is_some() || args.signal.is_some() || args.hang;
    let result = if !rpc && (raw_stdout.is_some() || requests.is_some() || spawn_tools) {
        Err(ImportError::Usage(
            "--raw-stdout, --requests and --spawn-tools belong to --mode rpc and stream-json (a json-mode RAW is pi's stdout itself)".into(),
        ))
    } else {
        args.into_options().and_then(|o| {
            if rpc {
                let ending = given_ending.then(|| o.ending.clone());
                import_rpc::import_transcript_file(
                    &raw,
                    &out,
                    &o,
                    &import_rpc::FileInputs {
                        raw_stdout: raw_stdout.as_deref(),
                        requests: requests.as_deref(),
                        ending,
                        spawn_tools,
                        protocol,
                    },
                )
                .map(|c| Imported::of(&c))
            } else {
                import_file(&raw, &out, &o)
            }
        })
    };
    match result {
        Ok(c) => {
            // A release newer than every pinned one: imported unverified, said once.
            let header = pi_cassette::CassetteReader::open(&out).map(|r| r.header().pi.clone());
            if let Some(w) = header.ok().and_then(|pi| pi.unverified_warning()) {
                eprintln!("{w}");
            }
            crate::say(format_args!(
                "{}: {} records ({} bytes of stdout), ends with {}",
                out.display(),
                c.records,
                c.stdout_bytes,
                c.ending.key()
            ));
            EXIT_OK
        }
        Err(e) => {
            eprintln!("error: {e}");
            import_status(&e)
        }
    }
}

/// The exit status for an import that failed: [`EXIT_FAILED`] when the cassette could not be
/// written, [`EXIT_USAGE`] for every other error (the arguments, the input).
fn import_status(e: &ImportError) -> i32 {
    match e {
        ImportError::Output { .. } => EXIT_FAILED,
        _ => EXIT_USAGE,
    }
}

/// Every `*.cassette.jsonl` (plain, `.gz` or `.zst`) below `dir`, sorted.
fn cassettes_below(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d)? {
            let path = entry?.path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if path.is_dir() {
                todo.push(path);
            } else if pi_cassette::input::is_cassette_file_name(name) {
                out.push(path);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Lint every file; print problems (stdout) and a summary (stderr); return the exit status:
/// 0 clean, 1 problems found.
pub fn run_lint(given: &[PathBuf], secret_env: &[String]) -> i32 {
    let env = |name: &str| std::env::var(name).ok();
    let secrets = pi_cassette::lint::NamedSecrets {
        names: secret_env,
        value: &env,
    };
    let mut count = 0;
    let mut bad_files = 0;
    let mut unreadable = 0;
    let mut files = Vec::new();
    for f in given {
        if f.is_dir() {
            match cassettes_below(f) {
                Ok(found) if found.is_empty() => {
                    eprintln!("error: {}: no *.cassette.jsonl file below it", f.display());
                    unreadable += 1;
                }
                Ok(found) => files.extend(found),
                Err(e) => {
                    eprintln!("error: {}: cannot read the directory: {e}", f.display());
                    unreadable += 1;
                }
            }
        } else {
            files.push(f.clone());
        }
    }
    for f in &files {
        let problems = match pi_cassette::lint::lint_file_with(f, &secrets) {
            Ok(p) => p,
            Err(e) => {
                eprintln!("error: {e}");
                unreadable += 1;
                continue;
            }
        };
        if !problems.is_empty() {
            bad_files += 1;
        }
        for p in &problems {
            crate::say(p);
        }
        count += problems.len();
    }
    if unreadable > 0 {
        // An input error: like every command, exit 2.
        return EXIT_USAGE;
    }
    if count == 0 {
        eprintln!("{} cassette(s) ok", files.len());
        EXIT_OK
    } else {
        eprintln!(
            "{count} problem(s) in {bad_files} of {} cassette(s)",
            files.len()
        );
        EXIT_FAILED
    }
}
