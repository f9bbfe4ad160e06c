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
    /// Run the reference provider against pi (real or fake) and print the normalized stream.
    Run(pi_harness::cli::run::RunArgs),
    /// Map a captured pi stdout or a cassette to the normalized stream.
    Map(pi_harness::cli::map::MapArgs),
}

#[derive(Subcommand)]
enum CassetteCommand {
    /// Turn a captured `pi --mode json` stdout into a cassette.
    Import(pi_harness::import::ImportArgs),
}

fn main() {
    let cli = Cli::try_parse().unwrap_or_else(|e| pi_harness::cli::exit_on_clap_error(e));
    let code = match cli.command {
        Command::Cassette(CassetteCommand::Import(args)) => pi_harness::import::run_import(args),
        Command::Run(args) => pi_harness::cli::run::run_command(args),
        Command::Map(args) => pi_harness::cli::map::map_command(args),
    };
    std::process::exit(code);
}
