//! The `pi-harness` command line.

use clap::{Parser, Subcommand};

/// Record/replay test harness and conformance suite for programs that drive `pi --mode json`.
#[derive(Parser)]
#[command(name = "pi-harness", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Work with cassette files (recorded pi runs).
    #[command(subcommand)]
    Cassette(CassetteCommand),
}

#[derive(Subcommand)]
enum CassetteCommand {
    /// Turn a captured `pi --mode json` stdout into a cassette.
    Import(Box<pi_harness::import::ImportArgs>),
    /// Check cassettes: format, schema points, timing, secrets left in. Exit 1 on any problem.
    #[command(
        after_help = "Example:\n  pi-harness cassette lint cassettes/*.cassette.jsonl cassettes/faults/*\n\nEach problem is printed as FILE:LINE: WHAT (without LINE: about the whole file)."
    )]
    Lint {
        /// Cassette files (`.cassette.jsonl`, or `.gz`).
        #[arg(required = true, value_name = "FILE")]
        files: Vec<std::path::PathBuf>,
    },
}

fn main() {
    let cli = Cli::parse();
    let code = match cli.command {
        Command::Cassette(CassetteCommand::Import(args)) => pi_harness::import::run_import(*args),
        Command::Cassette(CassetteCommand::Lint { files }) => pi_harness::lint::run_lint(&files),
    };
    std::process::exit(code);
}
