//! The command tree (clap) and the dispatch from each command to the library crates: one
//! function per command group, each returning its exit status (the table is [`crate::exit`]).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use pi_grammar::Agent;
use pi_recorder::{corpus, drift, recorder};

use crate::exit::{exit_code, ok_or_failed, EXIT_FAILED, EXIT_OK, EXIT_USAGE};

/// Record/replay test harness and conformance suite for programs that drive agent CLIs.
#[derive(Parser)]
#[command(name = "pi-harness", version, about = crate::agents::about())]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// `record --signal-to`: who gets the signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum SignalTo {
    /// The CLI's process alone.
    Process,
    /// The CLI's process group (the CLI is then started as the leader of a group of its
    /// own), as a supervisor that kills a job's group does. Codex and Gemini CLI only.
    Group,
}

#[derive(Subcommand)]
enum Command {
    /// Work with cassette files (recorded agent runs).
    #[command(subcommand)]
    Cassette(CassetteCommand),
    /// Run the reference provider against an agent CLI and print the normalized stream.
    #[command(about = crate::agents::run_about())]
    Run(Box<crate::run::RunArgs>),
    /// Run a command and report (and kill) every process it left running; or find the live
    /// processes that carry a test's marker.
    Leftovers(crate::leftovers::LeftoversArgs),
    /// Draw a replay as it happened beside its cassette's run: one HTML page (a failing
    /// test's world writes one with PI_HARNESS_HTML=DIR).
    Report(crate::report_cmd::ReportArgs),
    /// Map a captured pi stdout or a cassette to the normalized stream.
    Map(crate::map::MapArgs),
    /// Serve a scripted LLM (OpenAI chat completions, OpenAI Responses, Anthropic messages and Gemini streaming) on 127.0.0.1.
    ///
    /// Prints its base URL on the first stdout line, then serves until SIGINT/SIGTERM (exit 0).
    /// Use `http://127.0.0.1:PORT/v1` as an `openai-completions` or `openai-responses` baseUrl
    /// (Codex: a `[model_providers.X]` `base_url` with `wire_api = "responses"`), or without
    /// `/v1` for `anthropic-messages` and for Gemini's API (Gemini CLI:
    /// `GOOGLE_GEMINI_BASE_URL`, with `security.auth.selectedType: "gemini-api-key"` in its
    /// settings).
    ///
    /// A script that cannot be read or is invalid, a port that cannot be bound or a log that
    /// cannot be opened is one line `error: ...` and exit 2. When stdout is closed before the
    /// URL line is written (`| head -0`), it exits 0 at once, quietly: nobody can learn the URL.
    #[command(
        after_help = "Example:\n  pi-harness serve-llm --script cassettes/scripts/tool_bash.json --log /tmp/requests.jsonl"
    )]
    ServeLlm {
        /// The script (see cassettes/scripts/README.md).
        #[arg(long)]
        script: PathBuf,
        /// Port on 127.0.0.1; 0 picks a free one.
        #[arg(long, default_value_t = 0)]
        port: u16,
        /// Append one JSON line per request here.
        #[arg(long)]
        log: Option<PathBuf>,
    },
    /// Record a real agent CLI against a scripted LLM into a cassette.
    ///
    /// The scripted server stands in for the provider and model your program uses: name them
    /// in pi's arguments (`--provider anthropic --model claude-sonnet-4-5`) or, for a program
    /// that passes no model flags and relies on settings.json, with --provider/--model here.
    /// The cassette then expects your names, and your program replays unchanged. The server
    /// speaks Anthropic messages, OpenAI chat completions and the OpenAI Responses API: a
    /// built-in provider of pi whose models speak one of these (anthropic, groq, cerebras,
    /// deepseek, openai, ...) keeps its own wire; a provider pi does not know (your
    /// models.json's, or the fake names `--provider fake --model fake-model`) speaks --api. A
    /// provider of another wire (google, amazon-bedrock, mistral) is refused, exit 1.
    ///
    /// A recording in which pi never called the model fails (exit 1, nothing written),
    /// unless the script has no turns (`"turns": []`: a run that never reaches the model).
    ///
    /// With --record-mode (none, once, all) it records only when the mode says so: how a
    /// test's `pi` records on first use (see docs/first-cassette.md).
    #[command(about = crate::agents::record_about(), after_help = RECORD_HELP)]
    Record(Box<RecordArgs>),
    /// Re-record the whole corpus (every scenario of the manifest, on each pi given).
    #[command(
        after_help = "Example:\n  pi-harness record-corpus --pi \"$(pi-harness install pi 0.87.1 --print-path)\" \\\n      --pi \"$(pi-harness install pi 1.5.2 --print-path)\" --out cassettes/recorded\n\nThe manifest's format: cassettes/scripts/README.md (`pi-harness corpus export DIR` writes it)."
    )]
    RecordCorpus {
        /// The manifest listing the scenarios.
        #[arg(long, default_value = "cassettes/scripts/corpus.json")]
        manifest: PathBuf,
        /// A pi executable to record on (repeatable; its version is read from its package).
        #[arg(long = "pi", value_name = "PATH", required = true)]
        pis: Vec<PathBuf>,
        /// Output directory.
        #[arg(long, default_value = "cassettes/recorded")]
        out: PathBuf,
        /// Only these scenarios (repeatable).
        #[arg(long)]
        only: Vec<String>,
        /// A variable whose value is a secret (repeatable): given to pi, written nowhere
        /// (`<NAME>` in the cassettes), marked never_in_argv.
        #[arg(long = "secret-env", value_name = "NAME", value_parser = crate::values::parse_secret_env)]
        secret_env: Vec<(String, String)>,
    },
    /// Run the conformance suite against an implementation (default: the bundled reference provider).
    #[command(
        after_help = "Examples:\n  pi-harness conform\n  pi-harness conform --impl 'node conformance/examples/node-impl/impl.js'\n  pi-harness conform --impl 'node conformance/examples/node-impl/impl.js' --case recorded/text_only.pi87\n  pi-harness conform --partition 2/4 --junit conform-2.xml   # one CI machine of four\n\nSee conformance/README.md for the request document and the capability handshake."
    )]
    Conform(ConformArgs),
    /// The suite this binary carries (cassettes and expected streams): list or export it.
    #[command(subcommand)]
    Corpus(CorpusCommand),
    /// Read a request document (file or stdin), run the reference provider, print normalized JSONL.
    ProviderRun {
        /// The request document; stdin when absent.
        file: Option<PathBuf>,
        /// Print the capability handshake answer and exit.
        #[arg(long)]
        capabilities: bool,
    },
    /// Write the report of what changed between the pinned pi versions (from the recordings).
    #[command(
        after_help = "Example:\n  pi-harness pi-versions --recorded cassettes/recorded --out docs/pi-versions.md"
    )]
    PiVersions {
        /// The recorded corpus.
        #[arg(long, default_value = "cassettes/recorded")]
        recorded: PathBuf,
        /// Where to write the report (Markdown); stdout when absent.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Install a real agent CLI (from npm) into the cache, for recording; print its path.
    #[command(about = crate::agents::install_about())]
    Install(crate::install::InstallArgs),
    /// The agent CLIs pi-harness knows (the registry): names, variables, pinned releases.
    #[command(after_help = crate::agents::AGENTS_HELP)]
    Agents {
        /// One JSON array, an object per agent (the test helpers read it).
        #[arg(long)]
        json: bool,
    },
    /// Compare fresh recordings with committed ones; non-zero exit and a diff when they differ.
    #[command(
        after_help = "Example:\n  pi-harness drift --committed cassettes/recorded --fresh /tmp/fresh"
    )]
    Drift {
        #[arg(long)]
        committed: PathBuf,
        #[arg(long)]
        fresh: PathBuf,
    },
}

/// `record --help`'s examples and the LLM script format.
const RECORD_HELP: &str = r##"Examples:
  pi-harness record --script my.llm.json --out tests/cassettes/hello.cassette.jsonl \
      --bin "$(pi-harness install pi 1.5.2 --print-path)" \
      -- --mode json --provider anthropic --model claude-sonnet-4-5 --no-session 'Say hello.'
  pi-harness record --provider anthropic --model claude-sonnet-4-5 --script my.llm.json \
      --out hello.cassette.jsonl -- --mode json --no-session 'Say hello.'   # settings.json's default
  pi-harness record --script cassettes/scripts/tool_bash.json --out /tmp/tool_bash.cassette.jsonl \
      --bin "$(pi-harness install pi 1.5.2 --print-path)" -- --mode json --provider fake --model fake-model --no-session 'List the files.'
  pi-harness record --record-mode once --script tests/hello.llm.json --out tests/hello.cassette.jsonl \
      --bin "$(pi-harness install pi 1.5.2 --print-path)" -- --mode json --provider fake --model fake-model 'Say hello.'
  pi-harness record --script cassettes/scripts/sleep_in_tool.json --out /tmp/sigint.cassette.jsonl \
      --signal SIGINT --at tool_execution_start+300 -- --mode json --provider fake --model fake-model --no-session go
  pi-harness record --agent codex --bin "$(pi-harness install codex 0.169.0 --print-path)" \
      --provider openai --model gpt-5.5 --script cassettes/scripts/codex/codex_text.llm.json \
      --out /tmp/codex_text.cassette.jsonl -- exec --json --skip-git-repo-check 'Say hello.'
  pi-harness record --agent gemini --bin "$(pi-harness install gemini 0.61.0 --print-path)" \
      --script cassettes/scripts/gemini/gemini_text.llm.json --out /tmp/gemini_text.cassette.jsonl \
      -- --output-format stream-json -m gemini-2.5-flash -y -p 'Say hello.'

The LLM script (--script): what the model answers, one turn per request, in order:
  {"files": {"README.md": "# demo\n"},
   "turns": [{"text": ["I'll ", "look."], "tools": [{"id": "call_1", "name": "bash", "args": {"command": "ls"}}]},
             {"status": 500, "msg": "upstream boom"},
             {"text": ["Done."]}]}
  A turn streams `reasoning`, `text`, `tools`, or is an HTTP error (`status`, `msg`); `"turns": []` says
  the run never reaches the model. Every field: cassettes/scripts/README.md in the repository, also
  written by `pi-harness corpus export DIR` (DIR/cassettes/scripts/README.md, with the scripts and the
  manifest of the bundled corpus)."##;

/// `pi-harness record`'s options (the command's help is the variant's doc comment).
#[derive(clap::Args)]
struct RecordArgs {
    /// The LLM script: the model's answers, one turn per request (format below).
    #[arg(long)]
    script: PathBuf,
    /// The cassette to write (`.zst` is appended when it is over 1 MiB: zstd; a name ending in
    /// `.zst` or `.gz` is compressed so, whatever the size).
    #[arg(long)]
    out: PathBuf,
    /// The agent's executable [default: its name on PATH: the --agent].
    #[arg(long = "bin", visible_alias = "pi", value_name = "PATH")]
    bin: Option<PathBuf>,
    /// The agent's version, when it cannot be read from --bin (pi's package.json, the
    /// others' `--version`).
    #[arg(
        long = "agent-version",
        visible_alias = "pi-version",
        value_name = "VERSION"
    )]
    agent_version: Option<String>,
    /// Text to write to pi's stdin (then closed); stdin is /dev/null otherwise.
    #[arg(long)]
    stdin: Option<String>,
    /// Signal to send (SIGINT, SIGTERM, SIGHUP); needs --at.
    #[arg(long, requires = "at")]
    signal: Option<String>,
    /// When: EVENT[+MS], counted from the first stdout line of that type (pi:
    /// tool_execution_start+300; Codex: item.started+200; Gemini CLI: tool_use+500).
    #[arg(long, requires = "signal")]
    at: Option<String>,
    /// Who gets --signal: the CLI's process, or its process group (Codex and Gemini CLI only).
    #[arg(long, value_enum, requires = "signal", default_value_t = SignalTo::Process)]
    signal_to: SignalTo,
    /// With --agent codex: the model request and stream retries its config.toml allows
    /// (both); Codex's defaults otherwise (30 requests over about 25 s on a 5xx).
    #[arg(long, value_name = "N")]
    retries: Option<u32>,
    /// With --agent gemini: a setting of the scenario's own, written into the run's
    /// ~/.gemini/settings.json and expected of a replay (a dotted key and a JSON value:
    /// general.maxAttempts=2; several --setting).
    #[arg(long, value_name = "KEY=VALUE", value_parser = recorder::parse_gemini_setting)]
    setting: Vec<(String, serde_json::Value)>,
    /// With --agent gemini: an environment variable of the scenario's own, given to the CLI
    /// and expected of a replay (expect.env: GEMINI_CLI_NO_RELAUNCH=1; several --env).
    #[arg(long, value_name = "KEY=VALUE", value_parser = crate::values::parse_env_pair)]
    env: Vec<(String, String)>,
    /// A variable whose value is a secret (repeatable; any agent): its value here is given to
    /// the CLI, written nowhere (`<NAME>` in the cassette, `--secret-env NAME` in its
    /// origin), and the header marks it never_in_argv. An --env value whose name is a
    /// secret (this, or the CLI's key: GEMINI_API_KEY) is written masked too.
    #[arg(long = "secret-env", value_name = "NAME", value_parser = crate::values::parse_secret_env)]
    secret_env: Vec<(String, String)>,
    /// An unrecorded run of the CLI first, in the same sandbox (one argument per --before;
    /// `{TMP}`/`{CWD}` as for the recorded run): the session an `exec resume --last` or a
    /// `--continue` then continues.
    #[arg(long, value_name = "ARG", allow_hyphen_values = true)]
    before: Vec<String>,
    /// Write settings.json with retry.baseDelayMs = this (short retry delays).
    #[arg(long)]
    retry_delay_ms: Option<u64>,
    /// Scenario name for the header (default: the file name's stem).
    #[arg(long)]
    scenario: Option<String>,
    #[arg(long)]
    description: Option<String>,
    /// Also write the LLM server's request log here.
    #[arg(long)]
    request_log: Option<PathBuf>,
    /// Give up after this many seconds.
    #[arg(long, default_value_t = 180)]
    timeout: u64,
    /// Wire protocol pi speaks to the server for a provider pi does not know (the fake names,
    /// your models.json's): openai (chat completions), anthropic (messages) or
    /// openai-responses (the Responses API). A built-in provider speaks its own.
    #[arg(long, default_value = "openai")]
    api: String,
    /// The provider your program uses when it passes no --provider/--model to pi (it relies
    /// on settings.json): the recording's settings.json names it as defaultProvider.
    #[arg(long, requires = "model", value_name = "PROVIDER")]
    provider: Option<String>,
    /// The model of --provider (settings.json's defaultModel).
    #[arg(long, requires = "provider", value_name = "MODEL")]
    model: Option<String>,
    /// Fields a replay does not compare (written to the header's expect.irrelevant; several
    /// after one --ignore): provider, model, thinking, tools, prompt, session, env, ...
    #[arg(long, num_args = 1.., value_name = "FIELD", value_parser = crate::relax::ignorable)]
    ignore: Vec<String>,
    /// Write the cassette even when pi asked the script for more answers than it has
    /// (those requests got HTTP 500); by default that fails and writes nothing.
    #[arg(long)]
    allow_exhausted: bool,
    /// Record an RPC session: pi's stdin is driven by this client script (steps: when,
    /// then send a command, a raw line, close stdin or a signal; see cassettes/FORMAT.md).
    /// pi's arguments must include `--mode rpc`. Writes a version 2 (two-way) cassette.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["stdin", "signal"])]
    client_script: Option<PathBuf>,
    /// The agent CLI --bin is, as registered: `pi`; `claude` (Claude Code in stream-json
    /// mode, driven by --client-script, against the script as an Anthropic API; writes a
    /// `stream-json` cassette); `codex` (`codex exec --json`, its arguments after `--`,
    /// against the script as a Responses API provider of a throwaway CODEX_HOME/config.toml;
    /// writes an `exec-json` cassette; --provider/--model name the provider and model it
    /// expects); `gemini` (Gemini CLI, its arguments after `--`, against the script as
    /// Google's Gemini API with a throwaway HOME/.gemini/settings.json; writes a
    /// `gemini-stream-json` cassette).
    #[arg(long, value_name = "AGENT", default_value = "pi", value_parser = crate::agents::agent_parser())]
    agent: Agent,
    /// With --agent claude: give the CLI a terminal on stdin (a pseudo-terminal, kept open
    /// and never written), as a bridge run from a terminal does; the CLI then answers the
    /// prompt in its argv at once. A client script may only send signals (none is needed).
    #[arg(long)]
    stdin_terminal: bool,
    /// none: never record (a missing --out is an error, nothing is created); once: record
    /// only when --out is missing; all: record again, and when the result differs from --out
    /// (timings and ids aside) leave it beside it as OUT.new for `pi-harness cassette
    /// review`. `CI` set makes every mode none. Without it: record and write --out.
    #[arg(long, value_enum, value_name = "MODE")]
    record_mode: Option<crate::record_mode::RecordMode>,
    /// With --record-mode: then replay the cassette with this fake-pi, as pi with the same
    /// arguments and stdin (how a test's `pi` records on first use).
    #[arg(long, value_name = "FAKE_PI", requires = "record_mode")]
    replay_with: Option<PathBuf>,
    /// pi's arguments; `{TMP}`/`{CWD}` name the run's temp and working dirs.
    #[arg(last = true, required = true)]
    pi_args: Vec<String>,
}

#[derive(clap::Subcommand)]
enum CorpusCommand {
    /// Write every bundled cassette and expected stream below DIR (DIR/cassettes/...,
    /// DIR/expected/...), e.g. to start your own suite from them.
    #[command(
        after_help = "Example:\n  pi-harness corpus export my-suite && ls my-suite/cassettes/recorded"
    )]
    Export {
        #[arg(value_name = "DIR")]
        dir: PathBuf,
    },
    /// List the bundled files.
    List,
}

#[derive(clap::Args)]
struct ConformArgs {
    /// The implementation's command line, run with `sh -c` (default: this binary's provider-run).
    #[arg(long = "impl", value_name = "CMD ARGS")]
    implementation: Option<String>,
    /// Run only this case (repeatable), e.g. recorded/text_only.pi87.
    #[arg(long = "case", value_name = "NAME")]
    cases: Vec<String>,
    /// Cassettes directory (default: the suite bundled in this binary). Alone, without
    /// --expected, each case's expected stream is the reference provider's.
    #[arg(long, value_name = "DIR")]
    cassettes: Option<PathBuf>,
    /// Expected streams directory (default: the bundled ones with the bundled cassettes).
    #[arg(long, value_name = "DIR")]
    expected: Option<PathBuf>,
    /// Also print one JSON result per case on stdout (the report goes to stderr).
    #[arg(long)]
    json: bool,
    /// Write the implementation's streams as expected files into DIR instead of comparing.
    #[arg(long, value_name = "DIR")]
    export: Option<PathBuf>,
    /// The fake-pi binary (default: $PI_HARNESS_FAKE_PI, else beside this executable, else on PATH).
    #[arg(long)]
    fake_pi: Option<PathBuf>,
    /// Seconds a case may take before the implementation is killed.
    #[arg(long, default_value_t = conformance::conform::DEFAULT_TIMEOUT_SECS)]
    timeout: u64,
    /// Bytes of stdout a case may produce before the implementation is killed.
    #[arg(long, value_name = "BYTES", default_value_t = conformance::collect::DEFAULT_MAX_OUTPUT_BYTES)]
    max_output: u64,
    /// Also write the results as JUnit XML to FILE (one testcase per case, the differences
    /// in each failure), for CI dashboards.
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
    /// Run shard K of N of the cases (after --case): the cases are dealt round-robin in
    /// the suite's order, so 1/N .. N/N together run each exactly once (nextest's count:K/N).
    #[arg(long, value_name = "K/N")]
    partition: Option<conformance::junit::Partition>,
}

#[derive(Subcommand)]
enum CassetteCommand {
    /// Turn a captured `pi --mode json` stdout (or a pi RPC or Claude Code stream-json
    /// transcript) into a cassette; Codex CLI and Gemini CLI captures are refused.
    Import(Box<crate::cassette_cmd::ImportArgs>),
    /// Check cassettes: format, schema points, timing, secrets left in. Exit 1 on any problem.
    #[command(
        after_help = "Example:\n  pi-harness cassette lint cassettes/*.cassette.jsonl cassettes/faults/*\n\nEach problem is printed as FILE:LINE: WHAT (without LINE: about the whole file)."
    )]
    Lint {
        /// Cassette files (`.cassette.jsonl`, or `.zst`, `.gz`); a directory stands for every
        /// `*.cassette.jsonl[.zst|.gz]` below it; `-` reads one from stdin.
        #[arg(required = true, value_name = "FILE|DIR")]
        files: Vec<std::path::PathBuf>,
        /// A variable whose value (in this environment) must appear nowhere in the cassettes
        /// (repeatable); the variables a cassette's header names as secret are looked for too.
        #[arg(long = "secret-env", value_name = "NAME")]
        secret_env: Vec<String>,
    },
    /// Print what a cassette expects from its caller, how the run ends, the processes it
    /// starts, and a command line that replays it with fake-pi.
    Show(crate::show::ShowArgs),
    /// Stop comparing fields of a cassette's expectations (provider, model, thinking, tools,
    /// prompt, session, env): they join the header's expect.irrelevant.
    Relax(crate::relax::RelaxArgs),
    /// Review re-recorded cassettes waiting beside theirs (NAME.cassette.jsonl.new): the
    /// normalized diff, then accept or reject each.
    Review(crate::review::ReviewArgs),
}

/// The runtime of `record` and `record-corpus`, once enough descriptors are free for it.
fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    crate::fds::ensure_spare(crate::fds::SPARE_NEEDED).map_err(anyhow::Error::msg)?;
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?)
}

/// The recorder's progress lines and warnings, printed on stderr.
fn stderr_notices() -> pi_recorder::Notices {
    pi_recorder::Notices::new(|line| eprintln!("{line}"))
}

/// The whole `pi-harness` program: parse argv, run the command, return its exit status
/// (the table is [`crate::exit`]).
pub fn main() -> ExitCode {
    let cli = Cli::try_parse().unwrap_or_else(|e| crate::exit_on_clap_error(e));
    let status = match run(cli) {
        Ok(status) => status,
        Err(e) => {
            eprintln!("error: {}", crate::one_line(&crate::error::with_causes(&e)));
            EXIT_USAGE
        }
    };
    // Output that was asked for and not written (a full disk) is not a success.
    match crate::stdout::failure() {
        Some(e) if status == EXIT_OK => {
            eprintln!("error: stdout: {}", crate::one_line(&e));
            exit_code(EXIT_FAILED)
        }
        _ => exit_code(status),
    }
}

/// Run one command; its exit status, or an error that ends it with [`EXIT_USAGE`].
fn run(cli: Cli) -> anyhow::Result<i32> {
    match cli.command {
        Command::Cassette(command) => cassette(command),
        Command::Run(args) => Ok(crate::run::run_command(*args)),
        Command::Leftovers(args) => Ok(crate::leftovers::leftovers_command(args)),
        Command::Report(args) => Ok(crate::report_cmd::report_command(&args)),
        Command::Map(args) => Ok(crate::map::map_command(args)),
        Command::ServeLlm { script, port, log } => {
            Ok(crate::serve_llm::serve_llm_command(&script, port, log))
        }
        Command::Record(mut args) => match args.record_mode.take() {
            None => record(*args).map_or_else(never_reached, |(_, summary)| {
                eprintln!("{summary}");
                Ok(EXIT_OK)
            }),
            Some(mode) => {
                let a = crate::record_mode::ModeArgs {
                    mode,
                    replay_with: args.replay_with.take(),
                    out: args.out.clone(),
                    stdin: args.stdin.take(),
                    pi_args: args.pi_args.clone(),
                };
                crate::record_mode::record_with_mode(
                    a,
                    Box::new(move |out, stdin| {
                        args.out = out;
                        args.stdin = stdin;
                        record(*args)
                    }),
                )
                .or_else(never_reached)
            }
        },
        Command::Install(args) => Ok(crate::install::install_command(&args)),
        Command::Agents { json } => {
            crate::say(crate::agents::listing(json).trim_end());
            Ok(EXIT_OK)
        }
        Command::RecordCorpus {
            manifest,
            pis,
            out,
            only,
            secret_env,
        } => {
            let ok = runtime()?.block_on(corpus::record_corpus(
                &corpus::CorpusOptions {
                    manifest,
                    pis,
                    out,
                    only,
                    secret_env,
                },
                &stderr_notices(),
            ))?;
            Ok(ok_or_failed(ok))
        }
        Command::Corpus(command) => bundled_corpus(command),
        Command::Conform(args) => conform(args),
        Command::ProviderRun { file, capabilities } => {
            if capabilities {
                crate::say(conformance::conform::reference_capabilities());
            } else {
                conformance::conform::provider_run_main(
                    file.as_deref(),
                    std::io::stdin().lock(),
                    std::io::stdout().lock(),
                )
                .map_err(anyhow::Error::msg)?;
            }
            Ok(EXIT_OK)
        }
        Command::PiVersions { recorded, out } => pi_versions(&recorded, out),
        Command::Drift { committed, fresh } => {
            let report = drift::compare_dirs(&committed, &fresh)?;
            print!("{}", report.text);
            Ok(ok_or_failed(report.clean))
        }
    }
}

/// `pi-harness cassette import|lint|show|review`.
fn cassette(command: CassetteCommand) -> anyhow::Result<i32> {
    match command {
        CassetteCommand::Import(args) => Ok(crate::cassette_cmd::run_import(*args)),
        CassetteCommand::Lint { files, secret_env } => {
            Ok(crate::cassette_cmd::run_lint(&files, &secret_env))
        }
        CassetteCommand::Show(args) => Ok(crate::show::show_command(&args)),
        CassetteCommand::Relax(args) => Ok(crate::relax::run_relax(&args)),
        CassetteCommand::Review(args) => crate::review::review_command(&args),
    }
}

/// `pi-harness record`: the agent's arguments checked against the recording asked for, then
/// one recording; the path written and the summary to print.
/// A recording whose answer is no, the model never reached (pi made no model request, or
/// its provider speaks a wire the scripted server does not): its line and exit 1. Any other
/// error stays an error (exit 2).
fn never_reached(e: anyhow::Error) -> anyhow::Result<i32> {
    match e.downcast_ref::<recorder::RecordError>() {
        Some(
            r @ (recorder::RecordError::NoModelRequest { .. }
            | recorder::RecordError::NotStoodIn { .. }),
        ) => {
            eprintln!("error: {}", crate::one_line(&r.to_string()));
            Ok(EXIT_FAILED)
        }
        _ => Err(e),
    }
}

fn record(args: RecordArgs) -> anyhow::Result<(PathBuf, String)> {
    let RecordArgs {
        script,
        out,
        bin,
        agent_version,
        stdin,
        signal,
        at,
        signal_to,
        retries,
        setting,
        env,
        secret_env,
        before,
        retry_delay_ms,
        scenario,
        description,
        request_log,
        timeout,
        api,
        allow_exhausted,
        client_script,
        agent,
        stdin_terminal,
        provider,
        model,
        ignore,
        pi_args,
        ..
    } = args;
    let claude = agent == Agent::Claude;
    let codex = agent == Agent::Codex;
    let gemini = agent == Agent::Gemini;
    if codex && client_script.is_some() {
        anyhow::bail!("--agent codex records `codex exec` (one-way, the prompt in argv): --client-script drives two-way sessions only");
    }
    if gemini && (client_script.is_some() || model.is_some()) {
        anyhow::bail!("--agent gemini records `gemini -p ... --output-format stream-json` (one-way, the prompt and its -m in argv): no --client-script, --provider or --model");
    }
    if !codex && retries.is_some() {
        anyhow::bail!(
            "--retries is for --agent codex (Gemini CLI: --setting general.maxAttempts=N)"
        );
    }
    if !codex && !gemini && signal_to == SignalTo::Group {
        anyhow::bail!("--signal-to group is for --agent codex and --agent gemini");
    }
    if !gemini && (!setting.is_empty() || !env.is_empty()) {
        anyhow::bail!("--setting and --env are for --agent gemini");
    }
    let rpc_args = pi_args
        .windows(2)
        .any(|w| w[0] == "--mode" && w[1] == "rpc")
        || pi_args.iter().any(|a| a == "--mode=rpc");
    let stream_json_args = pi_args
        .windows(2)
        .any(|w| w[0] == "--input-format" && w[1] == "stream-json")
        || pi_args.iter().any(|a| a == "--input-format=stream-json");
    if claude && !stdin_terminal && (client_script.is_none() || !stream_json_args) {
        anyhow::bail!(
            "--agent claude records a stream-json session: give --client-script and Claude Code's `--input-format stream-json`, or --stdin-terminal (the prompt in argv)"
        );
    }
    if !claude && !codex && !gemini && client_script.is_some() != rpc_args {
        anyhow::bail!(
            "--client-script and pi's `--mode rpc` go together: an RPC session needs a client, and a client script drives only RPC mode"
        );
    }
    let bin = bin.unwrap_or_else(|| PathBuf::from(agent.name()));
    let mut opts = recorder::RecordOptions::new(script, out, bin, pi_args);
    opts.agent = agent;
    opts.client_script = client_script;
    opts.stdin_terminal = stdin_terminal;
    opts.model = provider
        .zip(model)
        .map(|(provider, id)| recorder::ModelName { provider, id });
    opts.ignore = ignore;
    opts.retries = retries;
    opts.agent_settings = setting;
    opts.agent_env = env;
    opts.secret_env = secret_env;
    if !before.is_empty() {
        opts.prelude = Some(recorder::Prelude {
            args: before,
            stdin: None,
        });
    }
    opts.allow_exhausted = allow_exhausted;
    opts.pi_version = agent_version;
    opts.stdin = stdin;
    opts.retry_base_delay_ms = retry_delay_ms;
    opts.scenario = scenario.unwrap_or_default();
    opts.description = description.unwrap_or_default();
    opts.request_log = request_log;
    opts.timeout = Duration::from_secs(timeout);
    opts.progress = true;
    opts.api = recorder::parse_api(&api).map_err(anyhow::Error::msg)?;
    if let (Some(sig), Some(at)) = (signal, at) {
        let signal = recorder::parse_signal(&sig).map_err(anyhow::Error::msg)?;
        let (event, after_ms) = recorder::parse_at(&at).map_err(anyhow::Error::msg)?;
        opts.signal = Some(recorder::SignalPlan {
            signal,
            event,
            after_ms,
            to_group: signal_to == SignalTo::Group,
        });
    }
    let outcome = runtime()?.block_on(recorder::record(&opts, &stderr_notices()))?;
    Ok((outcome.path.clone(), recorder::summary(&outcome)))
}

/// `pi-harness corpus export|list`: the suite bundled in this binary.
fn bundled_corpus(command: CorpusCommand) -> anyhow::Result<i32> {
    match command {
        CorpusCommand::Export { dir } => {
            let n = conformance::bundle::export(&dir).map_err(anyhow::Error::msg)?;
            eprintln!(
                "wrote {n} files below {} (cassettes/, expected/)",
                dir.display()
            );
        }
        CorpusCommand::List => {
            for (path, _) in conformance::bundle::files() {
                crate::say(path);
            }
        }
    }
    Ok(EXIT_OK)
}

/// `pi-harness conform`: [`EXIT_FAILED`] when a case failed.
fn conform(a: ConformArgs) -> anyhow::Result<i32> {
    // The report goes to stdout, or to stderr when stdout carries the --json lines.
    let mut report: Box<dyn std::io::Write> = if a.json {
        Box::new(std::io::stderr())
    } else {
        Box::new(crate::stdout::Stdout)
    };
    // The JUnit file is created first: a path that cannot be written stops the run at once.
    let mut junit = match &a.junit {
        Some(path) => Some(std::io::BufWriter::new(
            std::fs::File::create(path).map_err(|e| {
                anyhow::anyhow!("--junit {}: cannot create it: {e}", path.display())
            })?,
        )),
        None => None,
    };
    // With --junit FILE, each failed case's timeline goes beside it (FILE's name .pages/).
    let pages_dir = a.junit.as_deref().map(crate::report_cmd::pages_dir);
    let mut page = |r: &conformance::verdict::CaseResult, cassette: &Path| {
        crate::report_cmd::case_page(pages_dir.as_deref()?, r, cassette)
    };
    let output = conformance::conform::Output {
        report: &mut report,
        json: &mut crate::stdout::Stdout,
        notes: &mut std::io::stderr(),
        junit: junit.as_mut().map(|w| w as &mut dyn std::io::Write),
        pages: pages_dir.is_some().then_some(&mut page as _),
    };
    let ok = conformance::conform::conform(
        &conformance::conform::ConformOptions {
            implementation: a.implementation,
            cases: a.cases,
            cassettes: a.cassettes,
            expected: a.expected,
            json: a.json,
            export: a.export,
            fake_pi: a.fake_pi,
            timeout: Duration::from_secs(a.timeout),
            max_output: a.max_output,
            // `pi-harness conform` is a process of its own: orphans of a case come to it.
            subreaper: true,
            partition: a.partition,
        },
        output,
    )
    .map_err(anyhow::Error::msg)?;
    Ok(ok_or_failed(ok))
}

/// `pi-harness pi-versions`: the report written to `out`, or printed.
fn pi_versions(recorded: &Path, out: Option<PathBuf>) -> anyhow::Result<i32> {
    let text = pi_recorder::versions::report(recorded)?;
    match out {
        Some(path) => {
            let inputs: Vec<&Path> = vec![recorded];
            pi_cassette::output::write(&path, text.as_bytes(), &inputs)
                .map_err(anyhow::Error::msg)?
        }
        None => print!("{text}"),
    }
    Ok(EXIT_OK)
}
