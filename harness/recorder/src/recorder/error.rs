//! Why a recording failed: [`RecordError`], one variant per thing a caller may want to tell
//! apart (the CLI not found or not started, a timeout, the script exhausted, a file that
//! could not be written, a cassette the recording could not become). Each message carries
//! its context; the underlying error, when there is one, is its [`source`](std::error::Error::source),
//! so a caller that prints the chain (`{:#}` of an `anyhow::Error`) prints one line.

use std::path::PathBuf;
use std::process::ExitStatus;

use crate::llm_script::ScriptError;

/// Why a recording failed; nothing was written (a refused cassette is removed).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RecordError {
    /// The LLM script cannot be read or is invalid.
    #[error(transparent)]
    Script(#[from] ScriptError),
    /// The client script cannot be read or is invalid (the message names the file and step).
    #[error("{0}")]
    ClientScript(String),
    /// A file the LLM script puts in the working directory would land outside it.
    #[error(
        "{}: files: {file:?} must be a relative path inside the working directory",
        script.display()
    )]
    ScriptFile {
        /// The LLM script.
        script: PathBuf,
        /// The path it gives.
        file: String,
    },
    /// The options do not go together (the message says which and what to give).
    #[error("{0}")]
    Options(String),
    /// The CLI to record (`--bin`) is not there.
    #[error(
        "--bin {}: no such file{}",
        path.display(),
        if *bare_name { " (not on PATH either)" } else { "" }
    )]
    CliNotFound {
        /// The path or name given.
        path: PathBuf,
        /// A bare name, looked up on `PATH` too.
        bare_name: bool,
    },
    /// The CLI's version cannot be told (the message says what to pass).
    #[error("{0}")]
    UnknownVersion(String),
    /// The CLI could not be started.
    #[error("starting {}", path.display())]
    Start {
        /// The executable.
        path: PathBuf,
        /// Why the spawn failed.
        #[source]
        source: std::io::Error,
    },
    /// A file or directory of the recording could not be created or written.
    #[error("{action} {}", path.display())]
    Io {
        /// What was being done (`creating`, `writing`).
        action: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The failure.
        #[source]
        source: std::io::Error,
    },
    /// The recording's temp dir could not be created.
    #[error("creating the recording's temp dir")]
    TempDir(#[source] std::io::Error),
    /// `PATH` for the CLI could not be built from the directories to prepend.
    #[error(transparent)]
    Path(#[from] std::env::JoinPathsError),
    /// The recorder could not become a child subreaper (it must, to account for orphans).
    #[error("cannot become a child subreaper")]
    Subreaper(#[source] nix::errno::Errno),
    /// The scripted LLM server could not start.
    #[error("starting the scripted LLM server")]
    Server(#[source] std::io::Error),
    /// Talking to the prelude run over its pipes failed (writing its prompt, reading its
    /// output).
    #[error(transparent)]
    Pipe(std::io::Error),
    /// Waiting for the CLI failed.
    #[error("waiting for pi")]
    Wait(#[source] std::io::Error),
    /// The planned signal (or a client script's) could not be sent.
    #[error("sending the signal to pi")]
    Signal(#[source] nix::errno::Errno),
    /// The CLI did not finish in time, or a client script's trigger never fired; it was
    /// killed (the message says what was waited for and how long).
    #[error("{0}")]
    Timeout(String),
    /// The unrecorded prelude run failed.
    #[error("the prelude run (before the recorded one)")]
    Prelude(#[source] Box<RecordError>),
    /// The prelude run exited unsuccessfully.
    #[error("pi exited with {status}: {stderr}")]
    PreludeExit {
        /// How it ended.
        status: ExitStatus,
        /// What it wrote on stderr.
        stderr: String,
    },
    /// The signal's point (`--at EVENT+MS`) never came.
    #[error(
        "--at {event}+{after_ms}: pi never printed a `{event}` line, or ended before the delay ran out; nothing written"
    )]
    SignalPointMissed {
        /// The event type waited for.
        event: String,
        /// The delay after it.
        after_ms: u64,
    },
    /// A client script's step could not be carried out (the trigger's event never came
    /// before the CLI ended, stdin was closed, the CLI had exited, ...).
    #[error("client script step {step}: {problem}; nothing written")]
    ClientStep {
        /// The step's index.
        step: usize,
        /// What went wrong.
        problem: String,
    },
    /// The CLI asked the scripted LLM more often than the script answers.
    #[error(
        "{}: the script answers {answers} model request(s), pi made {made} ({unanswered} got HTTP 500; pi retries, so check the script's turns or pi's retry settings); nothing written (--allow-exhausted records it anyway)",
        script.display()
    )]
    ScriptExhausted {
        /// The LLM script.
        script: PathBuf,
        /// How many requests it answers.
        answers: usize,
        /// How many the CLI made.
        made: usize,
        /// How many got HTTP 500 because the script had no answer left.
        unanswered: usize,
    },
    /// The provider the recording runs under speaks a wire the scripted server does not
    /// serve; nothing was run.
    #[error(
        "pi {version} speaks {apis} to provider `{provider}` (model `{model}`), which the scripted LLM server does not serve (it stands in for providers of Anthropic messages, OpenAI chat completions and the OpenAI Responses API: anthropic, groq, openai, ...); nothing recorded: record under one of those or the fake names (--provider fake --model fake-model) and add `--ignore provider model` so your own names replay"
    )]
    NotStoodIn {
        /// pi's version.
        version: String,
        /// The provider.
        provider: String,
        /// The model id.
        model: String,
        /// The API(s) pi speaks to it.
        apis: String,
    },
    /// The CLI never called the model, and the script does not say it expects no request.
    #[error(
        "{cli} made no model request ({said}); nothing written: name a provider and model the server stands in for (`record --help`), or, for a run that never reaches the model, give {} `\"turns\": []`",
        script.display()
    )]
    NoModelRequest {
        /// The LLM script.
        script: PathBuf,
        /// Which CLI, and what the server stood in for.
        cli: String,
        /// What the CLI said last (its error message, or its last stderr line).
        said: String,
    },
    /// The CLI's arguments cannot be read into the cassette's expectations (no grammar for
    /// the version, or the CLI rejects them).
    #[error("{0}")]
    Expect(String),
    /// The two-way recording did not make a valid cassette.
    #[error("building the cassette: {0}")]
    Import(pi_cassette::import::ImportError),
    /// The cassette was not written: it would hold the API key or a temp path, or the
    /// written bytes do not read back as recorded.
    #[error("refusing to {verb} {}: {reason}", path.display())]
    Refused {
        /// `write` (checked before writing) or `keep` (checked in the bytes to write).
        verb: &'static str,
        /// The cassette's path.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// Compressing the cassette, or reading the written file's size, failed.
    #[error(transparent)]
    CassetteIo(std::io::Error),
    /// Writing the cassette failed (the message names the path).
    #[error(transparent)]
    Output(#[from] pi_cassette::output::OutputError),
}

impl RecordError {
    /// An I/O failure doing `action` (`creating`, `writing`) on `path`.
    pub(crate) fn io(
        action: &'static str,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(std::io::Error) -> RecordError {
        let path = path.into();
        move |source| RecordError::Io {
            action,
            path,
            source,
        }
    }
}
