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
    Import(pi_harness::import::ImportArgs),
}

fn main() {
    let cli = Cli::parse();
    let code = match cli.command {
        Command::Cassette(CassetteCommand::Import(args)) => pi_harness::import::run_import(args),
    };
    std::process::exit(code);
}
