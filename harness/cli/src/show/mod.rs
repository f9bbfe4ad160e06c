//! `pi-harness cassette show FILE`: what a cassette expects, in words, and how to replay it.
//!
//! Nobody should have to read a JSON header to learn what a recorded run needs from its
//! caller. What the cassette means and how it is printed are apart:
//!
//! - `model`: [`Facts`], the data model: the scenario, pi's version and wire dialect, what
//!   the caller must send *by meaning* (the effective values of
//!   `pi_cassette::matching::expected`, the same rule fake-pi applies), the prompts, the
//!   session, the environment rules, how the run ends and how each signal is answered, the
//!   processes it starts, the placeholders, and the replay. `--json` prints it serialized
//!   ([`render_json`]);
//! - `read`: [`Recording`], what `show` keeps of a cassette read one record at a time
//!   (bounded: the first processes and client actions are listed, the rest counted);
//! - `gather`: [`facts`], reading that model off a [`Recording`];
//! - `replay`: [`Replay`], a command line that replays the cassette with fake-pi, checked
//!   against the matching contract before it is printed; `codex`: a Codex cassette's
//!   (`codex exec ...` and the `CODEX_HOME/config.toml` it needs);
//! - `setup`: [`setup::Setup`], what a test world sets up for the call (a dummy key, the
//!   agent's home with the config that gives the recorded values), for the test helpers;
//! - `text`: [`render_text`], the model as text for a person.
//!
//! This module is the command itself: its arguments, reading the cassette, printing.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::exit::{EXIT_FAILED, EXIT_OK};
use crate::{use_color, CliError};

mod codex;
mod gather;
mod gemini;
pub mod html;
mod model;
mod read;
mod replay;
pub mod setup;
#[cfg(test)]
mod tests;
mod text;

pub use gather::facts;
pub use model::{
    Ending, Expects, Facts, Grandchild, Output, Process, Program, Scenario, SignalAnswer, Signals,
    Word,
};
pub use read::{Client, Listed, Recording, MAX_LISTED, MAX_LISTED_BYTES};
pub use replay::{meaning_flags, prompts, sh_quote, Prompts, Replay, SESSION_FILE};
pub use text::{action_text, render_text};

/// Command-line arguments of `pi-harness cassette show`.
#[derive(Debug, Clone, clap::Args)]
#[command(after_help = SHOW_HELP)]
pub struct ShowArgs {
    /// The cassette (`.cassette.jsonl`, or compressed: `.zst`, `.gz`), or a name in the
    /// bundled corpus (`codex/codex_text.cx0169`, or as `corpus list` prints it); `-` reads
    /// it from stdin.
    #[arg(value_name = "FILE|-")]
    pub file: PathBuf,
    /// Print the same facts as one JSON object (its fields are listed below).
    #[arg(long, conflicts_with = "html")]
    pub json: bool,
    /// Write the run as one self-contained HTML page with one time axis (records by kind,
    /// processes, signals, what the caller must send) to this file, instead of printing.
    #[arg(long, value_name = "OUT.html")]
    pub html: Option<PathBuf>,
}

const SHOW_HELP: &str = "Examples:
  pi-harness cassette show cassettes/recorded/text_only.pi87.cassette.jsonl
  pi-harness cassette show codex/codex_text.cx0169     # a name in the bundled corpus
  pi-harness cassette show --json cassettes/recorded/session_resume.pi152.cassette.jsonl | jq .replay.command
  zcat x.cassette.jsonl.gz | pi-harness cassette show -
  pi-harness cassette show cassettes/recorded/tool_bash.pi87.cassette.jsonl --html tool_bash.html

What the caller must send is compared by meaning (cassettes/FORMAT.md, the matching
contract): flag order, aliases and whether the prompt comes on stdin or in argv do not matter,
unless the cassette says `syntax: true`. The replay command runs fake-pi (on PATH as
`fake-pi`) with an empty agent dir, so that no settings.json changes what the call means.

--json prints one object:
  file          the cassette's absolute path (null for stdin)
  scenario      {name, description, tags}
  pi            {version, dialect, replayable: whether fake-pi knows this pi version,
                agent: pi, claude, codex or gemini, the program the cassette imitates}
  origin        {kind, timing, source, notes}
  expects       what the caller must send: {any: true when nothing is checked,
                effective: {mode, provider, model, thinking, tools, system_prompt,
                append_system_prompt, extensions, no_extensions, skills, no_skills,
                prompt_templates, no_prompt_templates, no_context_files, no_mcp}, each the
                recorded value or null (not compared), irrelevant: [fields not compared],
                prompt, prompt_delivery (argv, stdin, stdin+argv, or null), follow_ups,
                session (new, resumed, or null), env: [variables that must be set],
                never_in_argv: [{env: NAME} or {literal_chars: N}], syntax, flags (the
                recorded flags), argv_messages}
  ending        {kind: exit|signal|hang, code (exit), signal (signal), after_ms}
  signals       {SIGTERM, SIGINT, SIGHUP}: {action: die|ignore|cleanup_exit|exit, code,
                pi_default}
  processes     [{id, at_ms, argv, own_session, ignore_sigterm, hold_stdout, lifetime_ms,
                grandchild: {argv, own_session, ignore_sigterm, hold_stdout} or null}]
  placeholders  {PLACEHOLDER: what it replaced}
  output        {stdout_lines, stdout_bytes, stderr_bytes, duration_ms}
  replay        {command: the shell command line, env: {NAME: value} (besides
                PI_CODING_AGENT_DIR, an empty directory), argv (after the program name;
                SESSION_FILE stands for the session file), stdin (piped, or null),
                session_file (its first line, when the call must continue a session;
                CWD stands for the directory the replay runs in),
                codex_config (a Codex cassette: the lines of the config.toml the
                command writes into a fresh CODEX_HOME; else null),
                gemini_settings (a Gemini CLI cassette: the settings.json the
                command writes into a fresh GEMINI_CLI_HOME's .gemini; else null),
                hangs, notes: [...]}
  setup         what a test world (pytest's pi_world, Node's piWorld, pi_testkit::World)
                sets up where the test did not: {env: {NAME: value} (a dummy key; a
                variable the CLI sets itself, as it sets it), home_var (the agent's home
                variable, pointed at a fresh directory, or null), files: [{path (below
                that home), content}] (pi's settings.json, Codex's config.toml, Gemini
                CLI's .gemini/settings.json: the recorded model and settings)}
  bundled       the name the cassette was given by, when it is the bundled corpus's
                (codex/codex_text.cx0169), else null

--html OUT.html writes one page (no network, nothing fetched: open it in any browser): a
row of marks per kind of record (session, assistant text, thinking, tool call/result,
retry, result, stderr, the client's lines, model requests, ...), each process as a bar from
its start to its end with how it ended, each signal as an arrow with what it did (at a hang:
what each would do), and what the caller must send beside it. Hover over a mark or press it
for its record's text (the first 1 KiB of each while the page's 2 MiB of previews last, then
96 bytes; past 20000 records the rest are counted in aggregates). Marks closer than a cell
are drawn as one aggregate with their count; press it to list them. The header's
never_in_argv values (a literal, or the variable's value in this environment) are masked.
OUT is replaced whole (a new file renamed into place), never written through a link.

The cassette is read one record at a time, in constant memory whatever its size: at most
1000 processes and 1000 client actions (1 MiB of their command lines or lines) are listed,
and a note says how many more there are. A FIFO or a device is refused (use `-` for a pipe).

Exit status: 0 printed (or the page written); 1 the page could not be written; 2 missing
or unreadable file, a FIFO or device, invalid cassette (FILE:LINE: what), a line or input
past the limits (PI_HARNESS_MAX_LINE_BYTES, PI_HARNESS_MAX_INPUT_BYTES), an OUT.html that
is a symbolic link, a directory or not a regular file, or the cassette itself.";

/// Run `pi-harness cassette show`; returns the exit status.
pub fn show_command(args: &ShowArgs) -> i32 {
    if let Some(out) = &args.html {
        let file = match conformance::names::resolve(&args.file) {
            Ok((file, _)) => file,
            Err(e) => return CliError::usage(e).report(),
        };
        return match html::write_page(&file, out) {
            Ok(()) => EXIT_OK,
            Err(e) => e.report(),
        };
    }
    // A file, else a name in the bundled corpus (any form of it); else "did you mean".
    let (file, bundled) = match conformance::names::resolve(&args.file) {
        Ok(x) => x,
        Err(e) => return CliError::usage(e).report(),
    };
    let (cassette, path) = match load(&file) {
        Ok(x) => x,
        Err(e) => return e.report(),
    };
    let facts = match facts(&cassette, path.as_deref()) {
        Ok(f) => Facts { bundled, ..f },
        Err(what) => {
            let name = path
                .as_deref()
                .map_or("<stdin>".to_string(), |_| args.file.display().to_string());
            return CliError::usage(format!("{name}:1: {what}")).report();
        }
    };
    let text = if args.json {
        let mut t = serde_json::to_string_pretty(&render_json(&facts)).expect("JSON prints");
        t.push('\n');
        t
    } else {
        render_text(&facts, use_color(std::io::stdout().is_terminal()))
    };
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => EXIT_OK,
        // A closed pipe (`| head`) is not an error worth a message.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => EXIT_OK,
        Err(e) => {
            eprintln!("error: cannot write to stdout: {e}");
            EXIT_FAILED
        }
    }
}

/// Read the cassette (`-`: stdin, gzip recognised by its magic bytes) one record at a time,
/// keeping what `show` tells ([`Recording`]); its absolute path. A FIFO or a device is
/// refused at once.
pub fn load(file: &Path) -> Result<(Recording, Option<PathBuf>), CliError> {
    let c = Recording::read(file).map_err(|e| CliError::usage(e.to_string()))?;
    if file == Path::new("-") {
        return Ok((c, None));
    }
    let abs = std::path::absolute(file).unwrap_or_else(|_| file.to_path_buf());
    Ok((c, Some(abs)))
}

/// The facts as one JSON object (see the command's help for the fields): the model
/// serialized through a `serde_json::Value`, whose keys come sorted.
pub fn render_json(f: &Facts) -> Value {
    serde_json::to_value(f).expect("the facts serialize")
}

/// A string as a JSON string literal, quotes and escapes included.
fn quoted(s: &str) -> String {
    serde_json::to_string(s).expect("a string serializes")
}
